// SPDX-License-Identifier: MIT
/*
 * Unit tests of tools/bench_bidir.c without a device: how the server learns a --mode bidir flow
 * from the client's HELLO (its specification parsed and checked against what the HELLO
 * announces), and that a refused HELLO is cleaned up with no thread left.  The QPs and the
 * workers run in tests/vm/cases/70-justbench.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../tools/bench_bidir.c"

static const char *const LAT =
    "lat:write:8:name=lat,qps=1,batch=1,window=1,poll=busy,delay=0s,duration=1s,iters=0,rate=0";

static void wire_flow(struct bench_wire_flow *wf, const char *spec, uint8_t cls, uint8_t verb,
		      uint32_t size, uint32_t qps)
{
	memset(wf, 0, sizeof(*wf));
	wf->cls = cls;
	wf->verb = verb;
	wf->size = size;
	wf->qps = qps;
	snprintf(wf->spec, sizeof(wf->spec), "%s", spec);
}

static void learn(void **state)
{
	struct bench_wire_flow wf;
	struct bench_flow f;
	char err[256];

	(void)state;
	wire_flow(&wf, LAT, BENCH_LAT, BENCH_WRITE, 8, 1);
	assert_int_equal(learn_flow(&f, &wf, 0, err, sizeof(err)), 0);
	assert_string_equal(f.name, "lat");
	assert_int_equal(f.duration_us, 1000000);
	wire_flow(&wf, "bw:read:64K:qps=2,window=2,delay=1s,duration=2s", BENCH_BW, BENCH_READ,
		  65536, 2);
	assert_int_equal(learn_flow(&f, &wf, 3, err, sizeof(err)), 0);
	assert_string_equal(f.name, "flow3");
	assert_int_equal(f.window, 2);
	assert_int_equal(f.delay_us, 1000000);
	/* what the client's command line refuses, the server refuses */
	wire_flow(&wf, "lat:write:8:windw=1", BENCH_LAT, BENCH_WRITE, 8, 1);
	assert_int_equal(learn_flow(&f, &wf, 1, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "flow 1: unknown key \"windw\"");
	wire_flow(&wf, "lat:send:2:duration=1s", BENCH_LAT, BENCH_SEND, 2, 1);
	assert_int_equal(learn_flow(&f, &wf, 0, err, sizeof(err)), -EINVAL);
	assert_true(strncmp(err, "flow 0: verb: --mode bidir takes write and read flows", 53) == 0);
	/* the specification must be the flow the HELLO announces, its duration resolved */
	wire_flow(&wf, LAT, BENCH_LAT, BENCH_WRITE, 16, 1);
	assert_int_equal(learn_flow(&f, &wf, 0, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "flow 0: the specification is not the flow announced");
	wire_flow(&wf, LAT, BENCH_LAT, BENCH_WRITE, 8, 2);
	assert_int_equal(learn_flow(&f, &wf, 0, err, sizeof(err)), -EINVAL);
	wire_flow(&wf, LAT, BENCH_TPUT, BENCH_WRITE, 8, 1);
	assert_int_equal(learn_flow(&f, &wf, 0, err, sizeof(err)), -EINVAL);
	wire_flow(&wf, LAT, BENCH_LAT, BENCH_READ, 8, 1);
	assert_int_equal(learn_flow(&f, &wf, 0, err, sizeof(err)), -EINVAL);
	wire_flow(&wf, "lat:write:8", BENCH_LAT, BENCH_WRITE, 8, 1);
	assert_int_equal(learn_flow(&f, &wf, 0, err, sizeof(err)), -EINVAL);
	wire_flow(&wf, "", BENCH_LAT, BENCH_WRITE, 8, 1);
	assert_int_equal(learn_flow(&f, &wf, 0, err, sizeof(err)), -EINVAL);
}

/* A HELLO whose second flow is refused: no QP of it, no thread, freed cleanly. */
static void refused(void **state)
{
	static struct bench_hello h;
	static struct bench_accept acc;
	struct bench_bidir *b = calloc(1, sizeof(*b));
	static struct bench_result res;
	char err[256];

	(void)state;
	assert_non_null(b);
	h.mode = BENCH_MODE_BIDIR;
	h.n_flows = 1;
	h.n_qps = 1;
	wire_flow(&h.flows[0], "lat:send:2:duration=1s", BENCH_LAT, BENCH_SEND, 2, 1);
	/* the device is not touched before every flow is learnt */
	assert_int_equal(bench_bidir_setup(b, NULL, &h, 3, false, &acc, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(b->nw, 0);
	bench_bidir_finish(b, &res, 1);
	assert_false(res.flows[0].reverse); /* no workers: nothing to report */
	bench_bidir_free(b);
	bench_bidir_free(b); /* twice: nothing left */
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(learn),
		cmocka_unit_test(refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

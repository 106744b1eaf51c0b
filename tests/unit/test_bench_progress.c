// SPDX-License-Identifier: MIT
/*
 * Unit tests of tools/bench_progress.c without a device: the messages the client and the
 * server's loaded thread exchange (encoding, strict decoding), the client's think time between
 * fetches, the buffers' layout and the client's QP settings, and the server's refusal of flows
 * the mode does not take (before any resource is taken).  The fetches themselves run in
 * tests/vm/cases/70-justbench.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../tools/bench_progress.c"

static void messages(void **state)
{
	struct bench_progress_msg m = { BENCH_PROG_REQUEST, 0x01020304, 16000000 }, g;
	uint8_t b[BENCH_PROGRESS_MSG], c[BENCH_PROGRESS_MSG];
	static const uint8_t want[BENCH_PROGRESS_MSG] = { 'J', 'P', 1, 2, 1, 2, 3, 4,
							  0, 0, 0, 0, 0, 0xf4, 0x24, 0 };

	(void)state;
	bench_progress_put(&m, b);
	assert_memory_equal(b, want, sizeof(b));
	assert_int_equal(bench_progress_get(b, sizeof(b), &g), 0);
	assert_int_equal(g.op, BENCH_PROG_REQUEST);
	assert_int_equal(g.seq, 0x01020304);
	assert_int_equal(g.delay_ns, 16000000);
	for (uint8_t op = BENCH_PROG_SET; op < BENCH_PROG_OP_MAX; op++) {
		bench_progress_put(&(struct bench_progress_msg){ op, UINT32_MAX,
								 BENCH_RESPONSE_DELAY_MAX }, b);
		assert_int_equal(bench_progress_get(b, sizeof(b), &g), 0);
		assert_int_equal(g.op, op);
		assert_int_equal(g.seq, UINT32_MAX);
		assert_int_equal(g.delay_ns, BENCH_RESPONSE_DELAY_MAX);
	}
	/* strict: the length, the magic, the version, the operation, the delay */
	bench_progress_put(&m, b);
	assert_int_equal(bench_progress_get(b, sizeof(b) - 1, &g), -EPROTO);
	assert_int_equal(bench_progress_get(b, BENCH_PROGRESS_SLOT, &g), -EPROTO);
	for (int i = 0; i < 4; i++) {
		memcpy(c, b, sizeof(c));
		c[i] = i == 3 ? 0 : c[i] ^ 0x40;
		assert_int_equal(bench_progress_get(c, sizeof(c), &g), -EPROTO);
	}
	memcpy(c, b, sizeof(c));
	c[3] = BENCH_PROG_OP_MAX;
	assert_int_equal(bench_progress_get(c, sizeof(c), &g), -EPROTO);
	bench_progress_put(&(struct bench_progress_msg){ BENCH_PROG_SET, 1,
							 BENCH_RESPONSE_DELAY_MAX + 1 }, c);
	assert_int_equal(bench_progress_get(c, sizeof(c), &g), -EPROTO);
}

/* The think time: within 0..d-1, reproducible from the seed, spread over the whole range. */
static void gaps(void **state)
{
	uint64_t a = 42, b = 42, sum = 0, lo = UINT64_MAX, hi = 0, d = 4000000;

	(void)state;
	assert_int_equal(bench_progress_gap(&a, 0), 0);
	assert_int_equal(a, 42); /* no draw */
	assert_int_equal(bench_progress_gap(&a, 1), 0);
	a = 42;
	for (int i = 0; i < 10000; i++) {
		uint64_t g = bench_progress_gap(&a, d);

		assert_int_equal(g, bench_progress_gap(&b, d));
		assert_true(g < d);
		sum += g;
		lo = g < lo ? g : lo;
		hi = g > hi ? g : hi;
	}
	/* uniform: the mean near d / 2, both ends reached within 1% */
	assert_true(sum / 10000 > d * 45 / 100 && sum / 10000 < d * 55 / 100);
	assert_true(lo < d / 100 && hi > d * 99 / 100);
}

static void layout(void **state)
{
	struct bench_flow f;
	struct bench_qp_cfg cfg = { .buf_len = 1, .event = true, .inline_size = 0 };
	char err[256];

	(void)state;
	assert_int_equal(bench_progress_client_recv_len(1), BENCH_PROGRESS_MSG);
	assert_int_equal(bench_progress_client_recv_len(16), 16);
	assert_int_equal(bench_progress_client_recv_len(1024), 1024);
	assert_int_equal(bench_progress_client_buf(8), BENCH_PROGRESS_MSG + BENCH_PROGRESS_SLOT);
	assert_int_equal(bench_progress_client_buf(1024), 1024 + BENCH_PROGRESS_SLOT);
	/* data, the ACK area, the receive slots: none overlaps another */
	assert_int_equal(bench_progress_server_buf(1024),
			 1024 + BENCH_PROGRESS_SLOT * (1 + BENCH_PROGRESS_RECVS));
	assert_true(BENCH_PROGRESS_MSG <= BENCH_PROGRESS_SLOT);
	assert_int_equal(bench_flow_parse("lat:send:1K", 0, &f, err, sizeof(err)), 0);
	bench_progress_client_cfg(&f, &cfg);
	assert_int_equal(cfg.buf_len, bench_progress_client_buf(1024));
	assert_false(cfg.event);
	assert_true(cfg.recv_depth >= 1);
	assert_true(cfg.cq_depth >= cfg.recv_depth + cfg.send_depth);
	assert_true(cfg.inline_size >= BENCH_PROGRESS_MSG);
}

static void wire_flow(struct bench_wire_flow *wf, uint8_t cls, uint8_t verb, uint32_t size)
{
	memset(wf, 0, sizeof(*wf));
	wf->cls = cls;
	wf->verb = verb;
	wf->size = size;
	wf->qps = 1;
}

/* Flows the server refuses before it takes anything (no device needed, nothing to free). */
static void refused(void **state)
{
	static struct bench_hello h;
	struct bench_progress_server s;
	struct bench_accept acc;
	char err[256];

	(void)state;
	memset(&h, 0, sizeof(h));
	h.mode = BENCH_MODE_PROGRESS;
	h.n_flows = 2;
	h.n_qps = 2;
	wire_flow(&h.flows[0], BENCH_LAT, BENCH_READ, 1024);
	wire_flow(&h.flows[1], BENCH_LAT, BENCH_WRITE, 1024);
	assert_int_equal(bench_progress_server_setup(&s, NULL, &h, 3, false, &acc, err,
						     sizeof(err)), -EINVAL);
	assert_string_equal(err, "flow 1: --mode progress takes latency read and send flows");
	assert_null(s.p);
	bench_progress_server_free(&s);
	wire_flow(&h.flows[1], BENCH_TPUT, BENCH_SEND, 64);
	assert_int_equal(bench_progress_server_setup(&s, NULL, &h, 3, false, &acc, err,
						     sizeof(err)), -EINVAL);
	assert_string_equal(err, "flow 1: --mode progress takes latency read and send flows");
	wire_flow(&h.flows[1], BENCH_LAT, BENCH_SEND, BENCH_SIZE_MAX);
	wire_flow(&h.flows[0], BENCH_LAT, BENCH_SEND, 1);
	assert_int_equal(check_flow(&h.flows[0], 0, err, sizeof(err)), 0);
	assert_int_equal(check_flow(&h.flows[1], 1, err, sizeof(err)), 0);
	bench_progress_server_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(messages),
		cmocka_unit_test(gaps),
		cmocka_unit_test(layout),
		cmocka_unit_test(refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

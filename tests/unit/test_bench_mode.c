// SPDX-License-Identifier: MIT
/*
 * Unit tests of tools/bench_mode.c: the names of justbench's named modes, their default flows
 * (valid flows that format and parse back), and what each mode refuses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../tools/bench_flow.c"
#include "../../tools/bench_mode.c"

static void names(void **state)
{
	enum bench_mode m = BENCH_MODE_MAX;

	(void)state;
	for (int i = 0; i < BENCH_MODE_MAX; i++) {
		assert_int_equal(bench_mode_parse(bench_mode_name((enum bench_mode)i), &m), 0);
		assert_int_equal(m, i);
	}
	assert_string_equal(bench_mode_name(BENCH_MODE_POLL_COST), "poll-cost");
	assert_string_equal(bench_mode_name(BENCH_MODE_BIDIR), "bidir");
	assert_string_equal(bench_mode_name(BENCH_MODE_FLOWS), "flows");
	assert_string_equal(bench_mode_name(BENCH_MODE_REUSE), "reuse");
	assert_string_equal(bench_mode_name(BENCH_MODE_OVERHEAD), "overhead");
	assert_string_equal(bench_mode_name(BENCH_MODE_OVERLAP), "overlap");
	assert_string_equal(bench_mode_name(BENCH_MODE_PROGRESS), "progress");
	assert_string_equal(bench_mode_name(BENCH_MODE_MAX), "invalid");
	assert_int_equal(bench_mode_parse("pollcost", &m), -EINVAL);
	assert_int_equal(bench_mode_parse("Bidir", &m), -EINVAL);
	assert_int_equal(bench_mode_parse("", &m), -EINVAL);
}

/* The defaults are valid flows, accepted by their own mode. */
static void defaults(void **state)
{
	struct bench_flow f[4], g;
	char spec[512], again[512], err[256];
	size_t bad;

	(void)state;
	assert_int_equal(bench_mode_defaults(BENCH_MODE_FLOWS, 1000000, f, 4), 0);
	assert_int_equal(bench_mode_defaults(BENCH_MODE_POLL_COST, 2000000, f, 4), 1);
	assert_int_equal(bench_flow_format(&f[0], spec, sizeof(spec)), 0);
	assert_string_equal(spec, "lat:write:8:name=poll,qps=1,batch=1,window=1,poll=busy,"
				  "delay=0s,duration=2s,iters=0,rate=0");
	assert_int_equal(bench_mode_check(BENCH_MODE_POLL_COST, false, &f[0], err, sizeof(err)),
			 0);
	assert_int_equal(bench_mode_defaults(BENCH_MODE_BIDIR, 1500000, f, 4), 2);
	assert_int_equal(bench_flows_check(f, 2, &bad, err, sizeof(err)), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(bench_mode_check(BENCH_MODE_BIDIR, false, &f[i], err, sizeof(err)),
				 0);
		assert_int_equal(bench_flow_format(&f[i], spec, sizeof(spec)), 0);
		assert_int_equal(bench_flow_parse(spec, 9, &g, err, sizeof(err)), 0);
		assert_int_equal(bench_flow_format(&g, again, sizeof(again)), 0);
		assert_string_equal(spec, again);
	}
	/* one after the other: the bandwidth flow starts when the latency flow ends */
	assert_int_equal(f[0].delay_us + f[0].duration_us, f[1].delay_us);
	assert_string_equal(f[1].name, "bw");
	assert_int_equal(f[1].size, 65536);
	/* no room: nothing */
	assert_int_equal(bench_mode_defaults(BENCH_MODE_BIDIR, 1000000, f, 1), 0);
	/* the sweeping modes: their own flows, busy, valid, accepted by their mode */
	assert_int_equal(bench_mode_defaults(BENCH_MODE_REUSE, 1000000, f, 4), 2);
	assert_int_equal(f[0].size, 64);
	assert_int_equal(f[1].size, 65536);
	assert_int_equal(f[1].delay_us, 1000000);
	for (int i = 0; i < 2; i++)
		assert_int_equal(bench_mode_check(BENCH_MODE_REUSE, false, &f[i], err, sizeof(err)),
				 0);
	assert_int_equal(bench_mode_defaults(BENCH_MODE_OVERHEAD, 1000000, f, 4), 2);
	assert_int_equal(bench_flows_check(f, 2, &bad, err, sizeof(err)), 0);
	assert_int_equal(f[1].size, 256u << 10);
	assert_int_equal(f[1].cls, BENCH_BW);
	assert_int_equal(f[1].poll, BENCH_POLL_BUSY);
	for (int i = 0; i < 2; i++)
		assert_int_equal(bench_mode_check(BENCH_MODE_OVERHEAD, false, &f[i], err,
						  sizeof(err)), 0);
	assert_int_equal(bench_mode_defaults(BENCH_MODE_OVERLAP, 1000000, f, 4), 1);
	assert_int_equal(bench_flow_format(&f[0], spec, sizeof(spec)), 0);
	assert_string_equal(spec, "lat:write:1K:name=overlap,qps=1,batch=1,window=1,poll=busy,"
				  "delay=0s,duration=1s,iters=0,rate=0");
	assert_int_equal(bench_mode_check(BENCH_MODE_OVERLAP, false, &f[0], err, sizeof(err)), 0);
	assert_int_equal(bench_mode_defaults(BENCH_MODE_OVERHEAD, 1000000, f, 1), 0);
	/* progress: a READ fetch, then the SEND request-response fetch of the same size */
	assert_int_equal(bench_mode_defaults(BENCH_MODE_PROGRESS, 2000000, f, 4), 2);
	assert_int_equal(bench_flows_check(f, 2, &bad, err, sizeof(err)), 0);
	assert_int_equal(bench_flow_format(&f[0], spec, sizeof(spec)), 0);
	assert_string_equal(spec, "lat:read:1K:name=read,qps=1,batch=1,window=1,poll=busy,"
				  "delay=0s,duration=2s,iters=0,rate=0");
	assert_int_equal(bench_flow_format(&f[1], spec, sizeof(spec)), 0);
	assert_string_equal(spec, "lat:send:1K:name=send,qps=1,batch=1,window=1,poll=busy,"
				  "delay=2s,duration=2s,iters=0,rate=0");
	for (int i = 0; i < 2; i++)
		assert_int_equal(bench_mode_check(BENCH_MODE_PROGRESS, false, &f[i], err,
						  sizeof(err)), 0);
	assert_int_equal(bench_mode_defaults(BENCH_MODE_PROGRESS, 1000000, f, 1), 0);
}

static void checks(void **state)
{
	struct bench_flow f;
	char err[256];

	(void)state;
	assert_int_equal(bench_flow_parse("bw", 0, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_FLOWS, true, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_POLL_COST, false, &f, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "class: --mode poll-cost takes latency flows (one message at a "
				 "time)");
	assert_int_equal(bench_mode_check(BENCH_MODE_BIDIR, true, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_flow_parse("lat:send:2:poll=event", 0, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_POLL_COST, false, &f, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "poll: --mode poll-cost times busy polling, poll must be busy");
	assert_int_equal(bench_mode_check(BENCH_MODE_BIDIR, false, &f, err, sizeof(err)), -EINVAL);
	assert_true(strncmp(err, "verb: --mode bidir takes write and read flows", 45) == 0);
	assert_int_equal(bench_flow_parse("lat:send:2", 0, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_POLL_COST, false, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_POLL_COST, true, &f, err, sizeof(err)),
			 -EINVAL);
	assert_true(strncmp(err, "rperf: ", 7) == 0);
	assert_int_equal(bench_flow_parse("tput:write_imm:64", 0, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_BIDIR, false, &f, err, sizeof(err)), -EINVAL);
	assert_int_equal(bench_flow_parse("bw:read:64K", 0, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_BIDIR, false, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_MAX, false, &f, err, sizeof(err)), -EINVAL);
	/* the sweeping modes: busy, batch 1, no rperf; overlap only latency flows */
	assert_int_equal(bench_flow_parse("bw:read:64K:poll=busy", 0, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_REUSE, false, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_OVERHEAD, false, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_OVERLAP, false, &f, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "class: --mode overlap takes latency flows (one message at a time)");
	assert_int_equal(bench_mode_check(BENCH_MODE_REUSE, true, &f, err, sizeof(err)), -EINVAL);
	assert_true(strncmp(err, "rperf: ", 7) == 0);
	assert_int_equal(bench_flow_parse("bw:write:64K", 0, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_OVERHEAD, false, &f, err, sizeof(err)),
			 -EINVAL);
	assert_true(strncmp(err, "poll: ", 6) == 0);
	assert_int_equal(bench_flow_parse("tput:write:64:batch=16,poll=busy", 0, &f, err,
					  sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_REUSE, false, &f, err, sizeof(err)), -EINVAL);
	assert_true(strncmp(err, "batch: ", 7) == 0);
	/* progress: busy latency READ or SEND flows, no rperf */
	assert_int_equal(bench_mode_check(BENCH_MODE_PROGRESS, false, &f, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "class: --mode progress takes latency flows (one fetch at a time)");
	assert_int_equal(bench_flow_parse("lat:write:1K", 0, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_PROGRESS, false, &f, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "verb: --mode progress fetches by read or by a send request");
	assert_int_equal(bench_flow_parse("lat:send:1K:poll=event", 0, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_PROGRESS, false, &f, err, sizeof(err)),
			 -EINVAL);
	assert_true(strncmp(err, "poll: ", 6) == 0);
	assert_int_equal(bench_flow_parse("lat:read:4", 0, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_PROGRESS, false, &f, err, sizeof(err)), 0);
	assert_int_equal(bench_mode_check(BENCH_MODE_PROGRESS, true, &f, err, sizeof(err)),
			 -EINVAL);
	assert_true(strncmp(err, "rperf: ", 7) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names),
		cmocka_unit_test(defaults),
		cmocka_unit_test(checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * Unit tests of tools/bench_flow.c: the compact flow syntax (good specifications, the exact
 * message of each bad one), class defaults, the canonical form's round trip, sizes and times.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../tools/bench_flow.c"

static void assert_flow_equal(const struct bench_flow *a, const struct bench_flow *b)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->cls, b->cls);
	assert_int_equal(a->verb, b->verb);
	assert_int_equal(a->poll, b->poll);
	assert_int_equal(a->size, b->size);
	assert_int_equal(a->qps, b->qps);
	assert_int_equal(a->batch, b->batch);
	assert_int_equal(a->window, b->window);
	assert_int_equal(a->delay_us, b->delay_us);
	assert_int_equal(a->duration_us, b->duration_us);
	assert_int_equal(a->iters, b->iters);
	assert_int_equal(a->rate_bps, b->rate_bps);
}

static void parse_ok(const char *spec, unsigned index, struct bench_flow *f)
{
	char err[256] = "";
	int rc = bench_flow_parse(spec, index, f, err, sizeof(err));

	if (rc)
		fail_msg("%s: %s", spec, err);
}

/* Parsing the canonical form gives the same flow. */
static void assert_round_trip(const struct bench_flow *f)
{
	struct bench_flow g;
	char spec[512];

	assert_int_equal(bench_flow_format(f, spec, sizeof(spec)), 0);
	parse_ok(spec, 99, &g);
	assert_flow_equal(f, &g);
}

static void class_defaults(void **state)
{
	struct bench_flow f;

	(void)state;
	parse_ok("lat", 0, &f);
	assert_string_equal(f.name, "flow0");
	assert_int_equal(f.cls, BENCH_LAT);
	assert_int_equal(f.verb, BENCH_SEND);
	assert_int_equal(f.size, 2);
	assert_int_equal(f.batch, 1);
	assert_int_equal(f.window, 1);
	assert_int_equal(f.poll, BENCH_POLL_BUSY);
	assert_int_equal(f.qps, 1);
	assert_int_equal(f.duration_us, 0); /* the run's -t */
	parse_ok("throughput", 3, &f);
	assert_string_equal(f.name, "flow3");
	assert_int_equal(f.cls, BENCH_TPUT);
	assert_int_equal(f.verb, BENCH_WRITE);
	assert_int_equal(f.size, 64);
	assert_int_equal(f.batch, 16);
	assert_int_equal(f.window, 4);
	assert_int_equal(f.poll, BENCH_POLL_BUSY);
	parse_ok("BW", 1, &f);
	assert_int_equal(f.cls, BENCH_BW);
	assert_int_equal(f.verb, BENCH_WRITE);
	assert_int_equal(f.size, 1 << 20);
	assert_int_equal(f.batch, 1);
	assert_int_equal(f.window, 4);
	assert_int_equal(f.poll, BENCH_POLL_EVENT);
	/* the justitia_set_qp_class() numbers */
	assert_int_equal(BENCH_LAT, 0);
	assert_int_equal(BENCH_TPUT, 1);
	assert_int_equal(BENCH_BW, 2);
}

static void good_specs(void **state)
{
	struct bench_flow f;

	(void)state;
	parse_ok("lat:send:2", 0, &f);
	assert_int_equal(f.verb, BENCH_SEND);
	assert_int_equal(f.size, 2);
	assert_round_trip(&f);
	parse_ok("tput:write:64:batch=16", 1, &f);
	assert_int_equal(f.batch, 16);
	assert_int_equal(f.size, 64);
	assert_round_trip(&f);
	parse_ok("bw:write:1M:window=4", 2, &f);
	assert_int_equal(f.size, 1048576);
	assert_int_equal(f.window, 4);
	assert_round_trip(&f);
	parse_ok("bw:read:64K:qps=2,poll=busy,delay=3s,duration=1.5,iters=1000,name=elephant.1",
		 0, &f);
	assert_int_equal(f.verb, BENCH_READ);
	assert_int_equal(f.size, 65536);
	assert_int_equal(f.qps, 2);
	assert_int_equal(f.poll, BENCH_POLL_BUSY);
	assert_int_equal(f.delay_us, 3000000);
	assert_int_equal(f.duration_us, 1500000);
	assert_int_equal(f.iters, 1000);
	assert_string_equal(f.name, "elephant.1");
	assert_round_trip(&f);
	/* ':' and ',' both separate options; options may come right after the class */
	parse_ok("tput:qps=3:batch=8,window=2:verb=write_imm", 0, &f);
	assert_int_equal(f.qps, 3);
	assert_int_equal(f.batch, 8);
	assert_int_equal(f.window, 2);
	assert_int_equal(f.verb, BENCH_WRITE_IMM);
	assert_round_trip(&f);
	parse_ok("latency:WRITE:1:delay=250ms,duration=20ms", 0, &f);
	assert_int_equal(f.verb, BENCH_WRITE);
	assert_int_equal(f.delay_us, 250000);
	assert_int_equal(f.duration_us, 20000);
	parse_ok("lat:read", 0, &f);
	assert_int_equal(f.size, 2);
	parse_ok("bw:write:1G:iters=0", 0, &f);
	assert_int_equal(f.size, 1u << 30);
	parse_ok("tput:send:4096:batch=1024,window=4,iters=2048", 0, &f);
	assert_round_trip(&f);
	parse_ok("bw:write:3000:delay=3600s,duration=0.001", 0, &f);
	assert_int_equal(f.duration_us, 1000);
	assert_round_trip(&f);
	/* a rate, decimal units, payload bits per second per QP */
	parse_ok("bw:write:8K:window=4,rate=80M", 0, &f);
	assert_int_equal(f.rate_bps, 80000000);
	assert_int_equal(bench_post_ns(&f), 819200); /* 8192 B x 8 / 80 Mbit/s */
	assert_round_trip(&f);
	parse_ok("tput:write:64:batch=16,rate=1000", 0, &f);
	assert_int_equal(bench_post_ns(&f), 8192000000ull); /* 16 x 64 B x 8 / 1 kbit/s */
	parse_ok("bw:rate=2G", 0, &f);
	assert_int_equal(f.rate_bps, 2000000000ull);
	parse_ok("bw:rate=10000G", 0, &f);
	assert_round_trip(&f);
	parse_ok("bw:rate=0", 0, &f);
	assert_int_equal(bench_post_ns(&f), 0);
}

static const struct {
	const char *spec;
	const char *msg;
} bad_specs[] = {
	{ "", "empty field (write CLASS[:VERB[:SIZE]][:KEY=VALUE,...])" },
	{ "lat::2", "empty field (write CLASS[:VERB[:SIZE]][:KEY=VALUE,...])" },
	{ "lat:send:", "empty field (write CLASS[:VERB[:SIZE]][:KEY=VALUE,...])" },
	{ "bw:write:1M:window=4,", "empty field (write CLASS[:VERB[:SIZE]][:KEY=VALUE,...])" },
	{ "mouse", "unknown class \"mouse\" (lat, tput or bw; latency, throughput, bandwidth)" },
	{ "lat:sned", "verb: unknown verb \"sned\" (write, write_imm, read or send)" },
	{ "lat:send:2x", "size: invalid size \"2x\" (write e.g. 64, 4K, 1M)" },
	{ "lat:send:0", "size: 0 is out of range (1..1G)" },
	{ "bw:write:2G", "size: 2G is out of range (1..1G)" },
	{ "bw:write:99999999999999999999", "size: 99999999999999999999 is out of range (1..1G)" },
	{ "lat:send:2:4", "unexpected \"4\" (options are KEY=VALUE)" },
	{ "lat:qps=1:send", "unexpected \"send\" (options are KEY=VALUE)" },
	{ "bw:write:1M:windw=4", "unknown key \"windw\"" },
	{ "bw:write:1M:class=lat", "unknown key \"class\"" },
	{ "bw:write:1M:window=0", "window: 0 is out of range (1..1024)" },
	{ "bw:write:1M:window=-1", "window: -1 is out of range (1..1024)" },
	{ "bw:write:1M:window=4k", "window: invalid number \"4k\"" },
	{ "bw:write:1M:window=", "window: invalid number \"\"" },
	{ "bw:write:1M:qps=65", "qps: 65 is out of range (1..64)" },
	{ "tput:batch=1025", "batch: 1025 is out of range (1..1024)" },
	{ "tput:batch=1024,window=5", "window: batch 1024 x window 5 is more than 4096 messages "
				      "in flight per QP" },
	{ "lat:batch=2", "batch: a latency flow has one message outstanding, batch must be 1" },
	{ "lat:send:2:window=4", "window: a latency flow has one message outstanding, window "
				 "must be 1" },
	{ "tput:iters=100", "iters: 100 is not a multiple of batch (16)" },
	{ "tput:iters=1000000000001", "iters: 1000000000001 is out of range (0..1000000000000)" },
	{ "bw:poll=spin", "poll: unknown polling mode \"spin\" (busy or event)" },
	{ "bw:delay=3h", "delay: invalid time \"3h\" (write e.g. 3, 1.5s, 500ms, 20us)" },
	{ "bw:delay=1.0000001", "delay: invalid time \"1.0000001\" (write e.g. 3, 1.5s, 500ms, "
				"20us)" },
	{ "bw:delay=3601", "delay: 3601s is out of range (0s..3600s)" },
	{ "bw:delay=-1", "delay: -1 is out of range (0s..3600s)" },
	{ "bw:duration=0", "duration: 0s is out of range (1ms..3600s)" },
	{ "bw:duration=999us", "duration: 999us is out of range (1ms..3600s)" },
	{ "bw:name=a:b", "unexpected \"b\" (options are KEY=VALUE)" },
	{ "bw:name=a b", "name: invalid name \"a b\" (1 to 31 letters, digits, '_', '-', '.')" },
	{ "bw:name=abcdefghijabcdefghijabcdefghijab", "name: invalid name "
	  "\"abcdefghijabcdefghijabcdefghijab\" (1 to 31 letters, digits, '_', '-', '.')" },
	{ "bw:name=\x1b[31m", "name: invalid name \"\\x1b[31m\" (1 to 31 letters, digits, '_', "
			      "'-', '.')" },
	{ "bw:rate=999", "rate: 999 is out of range (0, or 1k..10000G bit/s)" },
	{ "bw:rate=10001G", "rate: 10001G is out of range (0, or 1k..10000G bit/s)" },
	{ "bw:rate=-1", "rate: -1 is out of range (0, or 1k..10000G bit/s)" },
	{ "bw:rate=80Mbit", "rate: invalid rate \"80Mbit\" (bit/s: write e.g. 0, 800k, 80M, 2G)" },
	{ "bw:rate=1m", "rate: invalid rate \"1m\" (bit/s: write e.g. 0, 800k, 80M, 2G)" },
	{ "bw:rate=5_", "rate: invalid rate \"5_\" (bit/s: write e.g. 0, 800k, 80M, 2G)" },
	{ "bw:write:5_", "size: invalid size \"5_\" (write e.g. 64, 4K, 1M)" },
	{ "lat:qps=2:qps=3", "qps: given twice" },
	{ "lat:send:verb=read", "verb: given twice" },
};

static void bad_spec_messages(void **state)
{
	int wrong = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_specs) / sizeof(bad_specs[0]); i++) {
		struct bench_flow f;
		char err[256] = "";
		int rc = bench_flow_parse(bad_specs[i].spec, 0, &f, err, sizeof(err));

		if (rc != -EINVAL || strcmp(err, bad_specs[i].msg) != 0) {
			print_error("%s:\n  got  %d %s\n  want %s\n", bad_specs[i].spec, rc, err,
				    bad_specs[i].msg);
			wrong++;
		}
	}
	assert_int_equal(wrong, 0);
}

static void too_long(void **state)
{
	char spec[600], err[128];
	struct bench_flow f;

	(void)state;
	memset(spec, 'a', sizeof(spec) - 1);
	spec[sizeof(spec) - 1] = 0;
	assert_int_equal(bench_flow_parse(spec, 0, &f, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "too long (at most 511 bytes)");
	/* no error buffer: still safe */
	assert_int_equal(bench_flow_parse("lat:x", 0, &f, NULL, 0), -EINVAL);
}

static void sizes_and_times(void **state)
{
	uint64_t v;
	char buf[32];

	(void)state;
	assert_int_equal(bench_parse_size("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(bench_parse_size("4k", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(bench_parse_size("3G", &v), 0);
	assert_int_equal(v, 3ull << 30);
	assert_int_equal(bench_parse_size("17179869184G", &v), -ERANGE);
	assert_int_equal(bench_parse_size("1KB", &v), -EINVAL);
	assert_int_equal(bench_parse_size("+1", &v), -EINVAL);
	assert_int_equal(bench_parse_size(" 1", &v), -EINVAL);
	assert_int_equal(bench_parse_time("3", &v), 0);
	assert_int_equal(v, 3000000);
	assert_int_equal(bench_parse_time("0.000001", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(bench_parse_time("1.5ms", &v), 0);
	assert_int_equal(v, 1500);
	assert_int_equal(bench_parse_time("1.5us", &v), -EINVAL);
	assert_int_equal(bench_parse_time("1.", &v), -EINVAL);
	assert_int_equal(bench_parse_time(".5", &v), -EINVAL);
	assert_int_equal(bench_parse_time("20us", &v), 0);
	assert_int_equal(v, 20);
	assert_int_equal(bench_parse_time("1000000000001", &v), -ERANGE);
	bench_format_time(1500000, buf, sizeof(buf));
	assert_string_equal(buf, "1500ms");
	bench_format_time(0, buf, sizeof(buf));
	assert_string_equal(buf, "0s");
	bench_format_time(1234567, buf, sizeof(buf));
	assert_string_equal(buf, "1234567us");
	bench_format_size(1536, buf, sizeof(buf));
	assert_string_equal(buf, "1536"); /* exact: never "1.5K" */
	bench_format_size(3072, buf, sizeof(buf));
	assert_string_equal(buf, "3K");
	bench_format_size(1537, buf, sizeof(buf));
	assert_string_equal(buf, "1537");
	bench_format_size(0, buf, sizeof(buf));
	assert_string_equal(buf, "0");
}

static void flow_sets(void **state)
{
	struct bench_flow f[BENCH_FLOWS_MAX + 1];
	char err[256];
	size_t bad;

	(void)state;
	for (unsigned i = 0; i <= BENCH_FLOWS_MAX; i++)
		bench_flow_init(&f[i], BENCH_LAT, i);
	assert_int_equal(bench_flows_check(f, 0, &bad, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "no flows");
	assert_int_equal(bench_flows_check(f, BENCH_FLOWS_MAX, &bad, err, sizeof(err)), 0);
	assert_int_equal(bench_flows_check(f, BENCH_FLOWS_MAX + 1, &bad, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "too many flows (65, at most 64)");
	strcpy(f[5].name, "flow2");
	assert_int_equal(bench_flows_check(f, 8, &bad, err, sizeof(err)), -EINVAL);
	assert_int_equal(bad, 5);
	assert_string_equal(err, "name: \"flow2\" is also the name of flows[2]");
	strcpy(f[5].name, "flow5");
	for (unsigned i = 0; i < 5; i++)
		f[i].qps = 60;
	assert_int_equal(bench_flows_check(f, 8, &bad, err, sizeof(err)), -EINVAL);
	assert_int_equal(bad, 4);
	assert_string_equal(err, "qps: 300 QPs in all, at most 256");
	for (unsigned i = 0; i < 5; i++)
		f[i].qps = 1;
	f[0].size = f[1].size = BENCH_SIZE_MAX;
	f[0].qps = 4;
	assert_int_equal(bench_flows_check(f, 8, &bad, err, sizeof(err)), -EINVAL);
	assert_int_equal(bad, 1);
	assert_string_equal(err, "size: the flows need 5120 MiB of buffers (size x qps), at most "
				 "4096");
	f[0].qps = 2; /* 3 GiB and a few bytes */
	assert_int_equal(bench_flows_check(f, 8, &bad, err, sizeof(err)), 0);
}

static void names(void **state)
{
	enum bench_class c;

	(void)state;
	assert_string_equal(bench_class_name(BENCH_TPUT), "throughput");
	assert_string_equal(bench_class_short(BENCH_BW), "bw");
	assert_string_equal(bench_class_name(BENCH_CLASS_MAX), "invalid");
	assert_string_equal(bench_verb_name(BENCH_WRITE_IMM), "write_imm");
	assert_string_equal(bench_verb_name(BENCH_VERB_MAX), "invalid");
	assert_string_equal(bench_poll_name(BENCH_POLL_EVENT), "event");
	assert_string_equal(bench_poll_name(BENCH_POLL_MAX), "invalid");
	assert_int_equal(bench_class_parse("Latency", &c), 0);
	assert_int_equal(c, BENCH_LAT);
	assert_int_equal(bench_class_parse("elephant", &c), -EINVAL);
	assert_true(bench_flow_key_known("iters"));
	assert_false(bench_flow_key_known("class"));
	assert_false(bench_flow_key_known("Qps"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(class_defaults), cmocka_unit_test(good_specs),
		cmocka_unit_test(bad_spec_messages), cmocka_unit_test(too_long),
		cmocka_unit_test(sizes_and_times), cmocka_unit_test(flow_sets),
		cmocka_unit_test(names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * Unit tests of tools/bench_sweep.c (--mode reuse, overhead, overlap, progress): the option lists, the
 * points of each mode, which buffer each message uses, the points over several QPs, and the
 * statistics (rates, computation share, overlap, the knee) with their JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../tools/bench_flow.c"
#include "../../tools/bench_mode.c"
#include "../../tools/bench_stats.c"
#include "../../tools/bench_sweep.c"

static void lists(void **state)
{
	struct bench_sweep_cfg c = { 0 };
	char err[256];

	(void)state;
	assert_int_equal(bench_sweep_parse_reuse(&c, "0,50,100", err, sizeof(err)), 0);
	assert_int_equal(c.n_reuse, 3);
	assert_int_equal(c.reuse[1], 50);
	assert_int_equal(bench_sweep_parse_reuse(&c, "101", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--reuse: \"101\" is not in 0..100");
	assert_int_equal(c.n_reuse, 0);
	assert_int_equal(bench_sweep_parse_reuse(&c, "5,,7", err, sizeof(err)), 0); /* empty skipped */
	assert_int_equal(c.n_reuse, 2);
	assert_int_equal(bench_sweep_parse_reuse(&c, "-1", err, sizeof(err)), -EINVAL);
	assert_int_equal(bench_sweep_parse_reuse(&c, "", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--reuse: no value");
	assert_int_equal(bench_sweep_parse_reuse(&c, "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
						 err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--reuse: more than 16 values");
	assert_int_equal(bench_sweep_parse_rotate(&c, "1,4096", err, sizeof(err)), 0);
	assert_int_equal(c.rotate[1], 4096);
	assert_int_equal(bench_sweep_parse_rotate(&c, "0", err, sizeof(err)), -EINVAL);
	assert_int_equal(bench_sweep_parse_rotate(&c, "4097", err, sizeof(err)), -EINVAL);
	assert_int_equal(bench_sweep_parse_buffers(&c, "8", err, sizeof(err)), 0);
	assert_int_equal(c.buffers, 8);
	assert_int_equal(bench_sweep_parse_buffers(&c, "8x", err, sizeof(err)), -EINVAL);
	assert_int_equal(bench_sweep_parse_compute(&c, "0,500ns,20us,1.5ms,2", err, sizeof(err)),
			 0);
	assert_int_equal(c.n_compute, 5);
	assert_int_equal(c.compute[0], 0);
	assert_int_equal(c.compute[1], 500);
	assert_int_equal(c.compute[2], 20000);
	assert_int_equal(c.compute[3], 1500000);
	assert_int_equal(c.compute[4], 2000000000ull);
	assert_int_equal(bench_sweep_parse_compute(&c, "5xs", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--compute: invalid time \"5xs\" (0ns..1000s)");
	assert_int_equal(bench_sweep_parse_compute(&c, "1001s", err, sizeof(err)), -EINVAL);
	assert_int_equal(bench_sweep_parse_compute(&c, "ns", err, sizeof(err)), -EINVAL);
	/* response delays: times up to 1 s */
	assert_int_equal(bench_sweep_parse_delay(&c, "0,1ms,250us,1s,1000000000ns", err,
						 sizeof(err)), 0);
	assert_int_equal(c.n_delay, 5);
	assert_int_equal(c.delay[1], 1000000);
	assert_int_equal(c.delay[2], 250000);
	assert_int_equal(c.delay[3], 1000000000ull);
	assert_int_equal(c.delay[4], 1000000000ull);
	assert_int_equal(bench_sweep_parse_delay(&c, "2s", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--response-delay: invalid time \"2s\" (0ns..1s)");
	assert_int_equal(c.n_delay, 0);
	assert_int_equal(bench_sweep_parse_delay(&c, "1000000001ns", err, sizeof(err)), -EINVAL);
	assert_int_equal(bench_sweep_parse_delay(&c, "-1ms", err, sizeof(err)), -EINVAL);
	assert_int_equal(bench_sweep_parse_delay(&c, ",", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--response-delay: no value");
	assert_int_equal(bench_sweep_parse_delay(&c, "1ms,1ms,1ms,1ms,1ms,1ms,1ms,1ms,1ms,1ms,1ms,"
						 "1ms,1ms,1ms,1ms,1ms,1ms", err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "--response-delay: more than 16 values");
}

static void points(void **state)
{
	struct bench_sweep_cfg c = { 0 };
	struct bench_point_spec p[BENCH_POINTS_MAX];
	struct bench_flow lat, bw;
	char err[256];

	(void)state;
	bench_flow_init(&lat, BENCH_LAT, 0);
	bench_flow_init(&bw, BENCH_BW, 1);
	assert_int_equal(bench_sweep_points(BENCH_MODE_FLOWS, &c, &lat, p), 0);
	assert_int_equal(bench_sweep_points(BENCH_MODE_BIDIR, &c, &lat, p), 0);
	assert_false(bench_sweep_mode(BENCH_MODE_POLL_COST));
	assert_true(bench_sweep_mode(BENCH_MODE_OVERLAP));
	/* reuse: the default percentages, then rotations; the pool covers the largest */
	assert_int_equal(bench_sweep_points(BENCH_MODE_REUSE, &c, &bw, p), 4);
	assert_int_equal(p[0].kind, BENCH_PT_REUSE);
	assert_int_equal(p[3].x, 100);
	assert_int_equal(bench_sweep_pool(BENCH_MODE_REUSE, &c, &bw), 64);
	assert_int_equal(bench_sweep_pool(BENCH_MODE_OVERHEAD, &c, &bw), 0);
	assert_int_equal(bench_sweep_parse_rotate(&c, "2,128", err, sizeof(err)), 0);
	assert_int_equal(bench_sweep_parse_reuse(&c, "30", err, sizeof(err)), 0);
	assert_int_equal(bench_sweep_points(BENCH_MODE_REUSE, &c, &lat, p), 3);
	assert_int_equal(p[0].x, 30);
	assert_int_equal(p[2].kind, BENCH_PT_ROTATE);
	assert_int_equal(p[2].x, 128);
	assert_int_equal(bench_sweep_pool(BENCH_MODE_REUSE, &c, &lat), 128);
	/* overhead: a latency flow one CPU point, a bandwidth flow C = 0 first */
	assert_int_equal(bench_sweep_points(BENCH_MODE_OVERHEAD, &c, &lat, p), 1);
	assert_int_equal(p[0].kind, BENCH_PT_CPU);
	assert_int_equal(bench_sweep_points(BENCH_MODE_OVERHEAD, &c, &bw, p), 6);
	assert_int_equal(p[0].kind, BENCH_PT_COMPUTE);
	assert_int_equal(p[0].x, 0);
	assert_int_equal(bench_sweep_parse_compute(&c, "5us,0,1ms", err, sizeof(err)), 0);
	assert_int_equal(bench_sweep_points(BENCH_MODE_OVERLAP, &c, &lat, p), 3);
	assert_int_equal(p[0].kind, BENCH_PT_OVERLAP);
	assert_int_equal(p[0].x, 0);
	assert_int_equal(p[1].x, 5000);
	assert_int_equal(p[2].x, 1000000);
	/* sixteen non-zero values: C = 0 takes a place, the last one is dropped */
	assert_int_equal(bench_sweep_parse_compute(&c, "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16",
						   err, sizeof(err)), 0);
	assert_int_equal(bench_sweep_points(BENCH_MODE_OVERLAP, &c, &lat, p), BENCH_POINTS_MAX);
	assert_int_equal(p[15].x, 15000000000ull);
	/* progress: 0, 1, 2, 4, 8, 16 ms by default; a list keeps its order and its zeros */
	assert_true(bench_sweep_mode(BENCH_MODE_PROGRESS));
	assert_int_equal(bench_sweep_pool(BENCH_MODE_PROGRESS, &c, &lat), 0);
	assert_int_equal(bench_sweep_points(BENCH_MODE_PROGRESS, &c, &lat, p), 6);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(p[i].kind, BENCH_PT_PROGRESS);
		assert_int_equal(p[i].x, i ? 1000000ull << (i - 1) : 0);
	}
	assert_int_equal(bench_sweep_parse_delay(&c, "4ms,0,0", err, sizeof(err)), 0);
	assert_int_equal(bench_sweep_points(BENCH_MODE_PROGRESS, &c, &lat, p), 3);
	assert_int_equal(p[0].x, 4000000);
	assert_int_equal(p[1].x, 0);
	assert_int_equal(p[2].x, 0);
	assert_string_equal(bench_point_kind_name(BENCH_PT_PROGRESS), "progress");
}

/* Reuse R of n messages: exactly floor(R n / 100) on buffer 0, the others cycle 1..pool-1. */
static void buffers(void **state)
{
	static const uint32_t rs[] = { 0, 1, 33, 50, 90, 99, 100 };
	struct bench_point_spec p = { BENCH_PT_REUSE, 0 };
	uint64_t st;

	(void)state;
	for (size_t k = 0; k < sizeof(rs) / sizeof(rs[0]); k++) {
		uint64_t reused = 0, next = 1;

		p.x = rs[k];
		st = 0;
		for (uint64_t i = 0; i < 1000; i++) {
			uint32_t b = bench_sweep_buffer(&p, 8, i, &st);

			if (b == 0) {
				reused++;
			} else {
				assert_int_equal(b, next); /* in turn */
				next = next % 7 + 1;
			}
			assert_int_equal(reused, rs[k] * (i + 1) / 100);
		}
	}
	/* a pool of one: always buffer 0 */
	p.x = 10;
	st = 0;
	for (uint64_t i = 0; i < 20; i++)
		assert_int_equal(bench_sweep_buffer(&p, 1, i, &st), 0);
	/* rotation */
	p = (struct bench_point_spec){ BENCH_PT_ROTATE, 3 };
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(bench_sweep_buffer(&p, 64, i, &st), i % 3);
	p = (struct bench_point_spec){ BENCH_PT_COMPUTE, 3 };
	assert_int_equal(bench_sweep_buffer(&p, 64, 5, &st), 0);
}

static void add_run(struct bench_point_run *r, uint64_t msgs, uint64_t size, uint64_t first,
		    uint64_t elapsed, uint64_t compute)
{
	bench_point_run_init(r);
	for (uint64_t i = 0; i < msgs; i++)
		assert_int_equal(bench_samples_add(&r->lat, first + i), 0);
	assert_int_equal(bench_samples_add(&r->post_cpu, 100), 0);
	assert_int_equal(bench_samples_add(&r->poll_cpu, 300), 0);
	r->msgs = msgs;
	r->bytes = msgs * size;
	r->elapsed_ns = elapsed;
	r->compute_ns = compute;
}

/* Two QPs, a compute sweep: sums, the longest time, shares, the knee. */
static void collect_and_knee(void **state)
{
	struct bench_point_spec spec[4] = { { BENCH_PT_COMPUTE, 0 }, { BENCH_PT_COMPUTE, 1000 },
					    { BENCH_PT_COMPUTE, 2000 }, { BENCH_PT_COMPUTE, 4000 } };
	struct bench_point_run a[4], b[4];
	struct bench_point_run *runs[2] = { a, b };
	struct bench_sweep_result s;
	json_t *o = json_object(), *pts;
	char *text;

	(void)state;
	/* bandwidth 1000 B/us, 980 (-2%), 900 (-10%), 990 (-1%: a later point counts again) */
	add_run(&a[0], 100, 1000, 10, 100000, 0);
	add_run(&b[0], 100, 1000, 20, 90000, 0);
	add_run(&a[1], 98, 1000, 10, 100000, 20000);
	add_run(&b[1], 98, 1000, 10, 100000, 20000);
	add_run(&a[2], 90, 1000, 10, 100000, 50000);
	add_run(&b[2], 90, 1000, 10, 100000, 50000);
	add_run(&a[3], 99, 1000, 10, 100000, 30000);
	add_run(&b[3], 99, 1000, 10, 100000, 30000);
	assert_int_equal(bench_sweep_collect(&s, spec, 4, runs, 2), 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.p[0].msgs, 200);
	assert_int_equal(s.p[0].bytes, 200000);
	assert_int_equal(s.p[0].elapsed_ns, 100000);
	assert_int_equal(s.p[0].lat.count, 200);
	assert_int_equal(s.p[0].lat.min, 10);
	assert_int_equal(s.p[0].lat.max, 119);
	assert_int_equal(s.p[0].post_cpu.count, 2);
	assert_null(a[0].lat.v); /* freed */
	assert_true(bench_point_gbps(&s.p[0]) == 16.0);
	assert_true(bench_point_share(&s.p[1], 2) == 0.2);
	assert_true(bench_point_share(&s.p[2], 2) == 0.5);
	assert_true(bench_point_share(&s.p[2], 0) == 0);
	/* 900 is more than 5% down; 990 at a share of 0.3 is the largest within 5% */
	assert_int_equal(bench_sweep_knee(&s, 2), 3);
	s.p[3].bytes = 0;
	assert_int_equal(bench_sweep_knee(&s, 2), 1);
	s.p[0].msgs = 0;
	assert_int_equal(bench_sweep_knee(&s, 2), -1);
	s.p[0].msgs = 200;
	s.p[3].bytes = 198000;
	assert_int_equal(bench_sweep_json(o, &s, 2), 0);
	assert_non_null(json_object_get(json_object_get(o, "sweep"), "knee"));
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(json_object_get(o, "sweep"), "knee"), "compute_ns")),
			 4000);
	pts = json_object_get(json_object_get(o, "sweep"), "points");
	assert_int_equal(json_array_size(pts), 4);
	assert_string_equal(json_string_value(json_object_get(json_array_get(pts, 1), "kind")),
			    "compute");
	assert_true(json_real_value(json_object_get(json_array_get(pts, 2), "relative_gbps")) <
		    0.95);
	text = json_dumps(o, 0);
	assert_non_null(text);
	free(text);
	json_decref(o);
}

static void overlap(void **state)
{
	struct bench_point b = { .msgs = 10, .lat = { .count = 10, .mean = 1000 } };
	struct bench_point p = { .msgs = 10 };

	(void)state;
	/* 1000 ns of communication; 500 of computation per message */
	p.compute_ns = 5000;
	p.lat.mean = 1000; /* all of it hidden */
	assert_true(bench_point_overlap(&p, &b) == 0.5);
	p.lat.mean = 1500; /* nothing hidden: one after the other */
	assert_true(bench_point_overlap(&p, &b) == 0);
	p.lat.mean = 1200;
	assert_true(bench_point_overlap(&p, &b) > 0.29 && bench_point_overlap(&p, &b) < 0.31);
	p.lat.mean = 2000; /* slower than serial: 0, not negative */
	assert_true(bench_point_overlap(&p, &b) == 0);
	p.compute_ns = 50000; /* 5000 per message, done at 5000: the whole message hidden */
	p.lat.mean = 5000;
	assert_true(bench_point_overlap(&p, &b) == 1);
	p.lat.mean = 4000; /* faster than the computation (cannot be): at most 1 */
	assert_true(bench_point_overlap(&p, &b) == 1);
	b.msgs = 0;
	assert_true(bench_point_overlap(&p, &b) == -1);
}

static void table(void **state)
{
	struct bench_sweep_result s = { .n = 3 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	s.p[0] = (struct bench_point){ .spec = { BENCH_PT_REUSE, 50 }, .msgs = 4, .reused = 2 };
	s.p[1] = (struct bench_point){ .spec = { BENCH_PT_ROTATE, 8 }, .msgs = 4 };
	s.p[2] = (struct bench_point){ .spec = { BENCH_PT_CPU, 0 }, .msgs = 4,
				       .post_cpu = { .count = 4, .p50 = 700 } };
	bench_sweep_table(f, &s, 1);
	fclose(f);
	assert_non_null(strstr(buf, "reuse 50%"));
	assert_non_null(strstr(buf, "8 buffers in turn"));
	assert_non_null(strstr(buf, "post 700 / poll 0 ns CPU"));
	assert_null(strstr(buf, "knee"));
	free(buf);
}

/* A progress point: its delay in the table and in the JSON, no knee. */
static void progress(void **state)
{
	struct bench_sweep_result s = { .n = 2 };
	json_t *o = json_object(), *pt;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	s.p[0] = (struct bench_point){ .spec = { BENCH_PT_PROGRESS, 0 }, .msgs = 10,
				       .lat = { .count = 10, .mean = 45000, .p50 = 44000 } };
	s.p[1] = (struct bench_point){ .spec = { BENCH_PT_PROGRESS, 4000000 }, .msgs = 3,
				       .lat = { .count = 3, .mean = 2100000, .p50 = 2000000 } };
	bench_sweep_table(f, &s, 1);
	fclose(f);
	assert_non_null(strstr(buf, "response delay 4.0 ms"));
	assert_non_null(strstr(buf, "mean 2100.0 us"));
	assert_null(strstr(buf, "knee"));
	free(buf);
	assert_int_equal(bench_sweep_json(o, &s, 1), 0);
	assert_true(json_is_null(json_object_get(json_object_get(o, "sweep"), "knee")));
	pt = json_array_get(json_object_get(json_object_get(o, "sweep"), "points"), 1);
	assert_string_equal(json_string_value(json_object_get(pt, "kind")), "progress");
	assert_int_equal(json_integer_value(json_object_get(pt, "response_delay_ns")), 4000000);
	assert_int_equal(json_integer_value(json_object_get(pt, "x")), 4000000);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(pt, "latency_ns"),
							    "p50")), 2000000);
	assert_null(json_object_get(pt, "overlap"));
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lists),	    cmocka_unit_test(points),
		cmocka_unit_test(buffers),	    cmocka_unit_test(collect_and_knee),
		cmocka_unit_test(overlap),	    cmocka_unit_test(table),
		cmocka_unit_test(progress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

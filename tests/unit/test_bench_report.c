// SPDX-License-Identifier: MIT
/*
 * Unit tests of tools/bench_report.c: a flow's numbers over its QPs (counts, time span, exact
 * percentiles of the merged samples), the rates, and the JSON document's schema
 * (docs/justbench.1, JSON OUTPUT) and table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../tools/bench_flow.c"
#include "../../tools/bench_mode.c"
#include "../../tools/bench_pollcost.c"
#include "../../tools/bench_report.c"
#include "../../tools/bench_stats.c"
#include "../../tools/bench_sweep.c"

static void fill_worker(struct bench_worker *w, uint64_t start, uint64_t end, uint64_t first,
			uint64_t n, uint32_t batch, uint32_t size)
{
	memset(w, 0, sizeof(*w));
	bench_samples_init(&w->lat);
	bench_samples_init(&w->probe);
	bench_samples_init(&w->corrected);
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(bench_samples_add(&w->lat, first + i), 0);
	w->posts = n;
	w->msgs = n * batch;
	w->bytes = n * batch * size;
	w->start_ns = start;
	w->end_ns = end;
	w->cpu_ns = (end - start) / 2;
}

static void collect(void **state)
{
	struct bench_worker w[2];
	struct bench_flow_result r;

	(void)state;
	memset(&r, 0, sizeof(r));
	bench_flow_init(&r.flow, BENCH_TPUT, 0);
	/* QP 0: samples 1..500 from t=1s to 3s; QP 1: 501..1000 from 1.5s to 3.5s */
	fill_worker(&w[0], 1000000000, 3000000000, 1, 500, 16, 64);
	fill_worker(&w[1], 1500000000, 3500000000, 501, 500, 16, 64);
	w[1].qp.classified = 1;
	w[0].qp.classified = -EINVAL;
	assert_int_equal(bench_result_collect(&r, w, 2), 0);
	assert_int_equal(r.posts, 1000);
	assert_int_equal(r.msgs, 16000);
	assert_int_equal(r.bytes, 16000 * 64);
	assert_int_equal(r.elapsed_ns, 2500000000);
	assert_int_equal(r.cpu_ns, 2000000000);
	assert_int_equal(r.classified, 1);
	assert_int_equal(r.lat.count, 1000);
	assert_int_equal(r.lat.min, 1);
	assert_int_equal(r.lat.p50, 500);
	assert_int_equal(r.lat.p99, 990);
	assert_int_equal(r.lat.p999, 999);
	assert_int_equal(r.lat.max, 1000);
	assert_false(r.rperf);
	assert_string_equal(r.error, "");
	assert_null(w[0].lat.v); /* the workers' samples are freed */
	assert_true(bench_result_mops(&r) > 0.0064 - 1e-9 && bench_result_mops(&r) < 0.0064 + 1e-9);
	assert_true(bench_result_gbps(&r) > 0.0032768 - 1e-9 &&
		    bench_result_gbps(&r) < 0.0032768 + 1e-9);
	assert_true(bench_result_cpu_pct(r.cpu_ns, &r) > 79.99 &&
		    bench_result_cpu_pct(r.cpu_ns, &r) < 80.01);

	/* an error of one QP names it; a QP that never started does not stretch the span */
	memset(&r, 0, sizeof(r));
	fill_worker(&w[0], 0, 0, 1, 0, 1, 2);
	fill_worker(&w[1], 2000, 5000, 7, 1, 1, 2);
	w[0].error = -EIO;
	strcpy(w[0].errmsg, "completion error: retry counter exceeded");
	assert_int_equal(bench_result_collect(&r, w, 2), 0);
	assert_string_equal(r.error, "QP 0: completion error: retry counter exceeded");
	assert_int_equal(r.elapsed_ns, 3000);
	assert_int_equal(r.lat.count, 1);
	assert_int_equal(r.lat.p999, 7);
	/* poll-cost: each QP's poll samples merged, summarized and freed */
	memset(&r, 0, sizeof(r));
	fill_worker(&w[0], 1000, 2000, 1, 2, 1, 8);
	fill_worker(&w[1], 1000, 3000, 1, 2, 1, 8);
	for (int i = 0; i < 2; i++) {
		w[i].pollcost = true;
		bench_pollcost_init(&w[i].pc);
		for (uint64_t k = 1; k <= 50; k++)
			assert_int_equal(bench_samples_add(&w[i].pc.hit, k + 50 * (uint64_t)i), 0);
		assert_int_equal(bench_samples_add(&w[i].pc.empty, 7), 0);
	}
	assert_int_equal(bench_result_collect(&r, w, 2), 0);
	assert_true(r.pollcost);
	assert_int_equal(r.pc.hit.count, 100);
	assert_int_equal(r.pc.hit.p50, 50);
	assert_int_equal(r.pc.hit.p99, 99);
	assert_int_equal(r.pc.empty.count, 2);
	assert_int_equal(r.pc.inflight.count, 0);
	assert_null(w[1].pc.hit.v);
	/* the sums of the two directions; one direction alone is its own sum */
	{
		struct bench_aggregate a;

		memset(&r, 0, sizeof(r));
		r.msgs = 300;
		r.bytes = 3000;
		r.elapsed_ns = 1000000000;
		bench_result_aggregate(&r, &a);
		assert_int_equal(a.msgs, 300);
		assert_true(a.gbps > 0.000023999 && a.gbps < 0.000024001);
		r.reverse = true;
		r.rev.msgs = 100;
		r.rev.bytes = 1000;
		r.rev.elapsed_ns = 0; /* never ran: no rate, no division by zero */
		bench_result_aggregate(&r, &a);
		assert_int_equal(a.msgs, 400);
		assert_int_equal(a.bytes, 4000);
		assert_true(a.mops > 0.000299 && a.mops < 0.000301);
		r.rev.elapsed_ns = 500000000;
		bench_result_aggregate(&r, &a);
		assert_true(a.mops > 0.000499 && a.mops < 0.000501);
		assert_true(a.gbps > 0.000039999 && a.gbps < 0.000040001);
	}
	{
		struct bench_results *res = calloc(1, sizeof(*res));

		assert_non_null(res);
		res->n = 1;
		res->flows[0].reverse = true;
		assert_false(bench_results_failed(res));
		strcpy(res->flows[0].rev.error, "QP 0: no completion in 10 s");
		assert_true(bench_results_failed(res));
		free(res);
	}
	/* nothing at all: zeros, no division by zero */
	memset(&r, 0, sizeof(r));
	fill_worker(&w[0], 0, 0, 1, 0, 1, 2);
	assert_int_equal(bench_result_collect(&r, w, 1), 0);
	assert_true(bench_result_mops(&r) == 0 && bench_result_gbps(&r) == 0);
	assert_true(bench_result_cpu_pct(5, &r) == 0);
}

static struct bench_results *sample_results(void)
{
	struct bench_results *res = calloc(1, sizeof(*res));
	struct bench_flow_result *r;

	assert_non_null(res);
	strcpy(res->mode, "client");
	strcpy(res->device, "rxe1");
	strcpy(res->peer, "10.233.0.1");
	res->gid_index = 1;
	res->rperf = true;
	res->n = 2;
	r = &res->flows[0];
	bench_flow_init(&r->flow, BENCH_LAT, 0);
	r->flow.duration_us = 3000000;
	r->msgs = r->posts = 1000;
	r->bytes = 2000;
	r->elapsed_ns = 1000000000;
	r->cpu_ns = 990000000;
	r->lat = (struct bench_summary){ 1000, 20000, 25000, 24000, 60000, 90000, 100000 };
	r->rperf = true;
	r->probe = (struct bench_summary){ 1000, 10000, 11000, 11000, 12000, 13000, 14000 };
	r->corrected = (struct bench_summary){ 1000, 9000, 14000, 13000, 48000, 77000, 86000 };
	r->pollcost = true;
	r->pc.empty = (struct bench_summary){ 1000, 40, 60, 50, 90, 200, 300 };
	r->pc.inflight = (struct bench_summary){ 990, 45, 65, 55, 95, 210, 310 };
	r->pc.hit = (struct bench_summary){ 1000, 80, 110, 100, 150, 400, 500 };
	r->pc.clock = (struct bench_summary){ 10000, 20, 25, 24, 30, 90, 1000 };
	r->reverse = true;
	r->rev = (struct bench_wire_reverse){ .msgs = 500, .posts = 500, .bytes = 1000,
					      .elapsed_ns = 500000000, .cpu_ns = 250000000,
					      .lat = { 500, 21000, 26000, 25000, 61000, 91000,
						       101000 } };
	r->server = true;
	r->server_msgs = 1000;
	r->server_bytes = 2000;
	r->server_cpu_ns = 100000000;
	r = &res->flows[1];
	bench_flow_init(&r->flow, BENCH_BW, 1);
	strcpy(r->flow.name, "elephant");
	r->flow.duration_us = 3000000;
	strcpy(r->error, "QP 0: completion error: retry counter exceeded");
	/* a sweep of every kind of point (the modes never mix them; the schema does) */
	r->swept = true;
	r->sweep.n = 5;
	r->sweep.p[0] = (struct bench_point){ .spec = { BENCH_PT_COMPUTE, 0 }, .msgs = 10,
					      .bytes = 10000, .elapsed_ns = 1000000,
					      .lat = { 10, 1, 2, 2, 3, 3, 3 } };
	r->sweep.p[1] = (struct bench_point){ .spec = { BENCH_PT_REUSE, 50 }, .msgs = 10 };
	r->sweep.p[2] = (struct bench_point){ .spec = { BENCH_PT_ROTATE, 8 }, .msgs = 10 };
	r->sweep.p[3] = (struct bench_point){ .spec = { BENCH_PT_CPU, 0 }, .msgs = 10 };
	r->sweep.p[4] = (struct bench_point){ .spec = { BENCH_PT_OVERLAP, 1000 }, .msgs = 10,
					      .compute_ns = 10000 };
	return res;
}

static void json_schema(void **state)
{
	struct bench_results *res = sample_results();
	json_t *doc = bench_report_json(res), *f, *l;
	json_error_t je;
	const char *spec, *err;
	json_int_t p99, msgs, samples, corrected_p99, server_msgs;
	double mops, cpu;
	int ok;

	(void)state;
	assert_non_null(doc);
	assert_int_equal(json_integer_value(json_object_get(doc, "version")), 1);
	assert_string_equal(json_string_value(json_object_get(doc, "tool")), "justbench");
	assert_string_equal(json_string_value(json_object_get(doc, "mode")), "client");
	assert_string_equal(json_string_value(json_object_get(doc, "peer")), "10.233.0.1");
	assert_true(json_is_false(json_object_get(doc, "shim")));
	assert_true(json_is_true(json_object_get(doc, "rperf")));
	assert_null(json_object_get(doc, "description"));
	assert_string_equal(json_string_value(json_object_get(doc, "bench_mode")), "flows");
	assert_int_equal(json_array_size(json_object_get(doc, "flows")), 2);
	f = json_array_get(json_object_get(doc, "flows"), 0);
	assert_int_equal(json_unpack_ex(f, &je, 0,
					"{s:s, s:b, s:I, s:F, s:F, s:{s:I, s:I}, "
					"s:{s:{s:I}}, s:{s:I}}",
					"spec", &spec, "ok", &ok, "msgs", &msgs, "mops", &mops,
					"cpu_pct", &cpu, "latency_ns", "samples", &samples, "p99",
					&p99, "rperf", "corrected_ns", "p99", &corrected_p99,
					"server", "msgs", &server_msgs),
			 0);
	assert_string_equal(spec, "lat:send:2:name=flow0,qps=1,batch=1,window=1,poll=busy,"
				  "delay=0s,duration=3s,iters=0,rate=0");
	assert_true(ok);
	assert_int_equal(msgs, 1000);
	assert_true(mops > 0.000999 && mops < 0.001001);
	assert_true(cpu > 98.99 && cpu < 99.01);
	assert_int_equal(samples, 1000);
	assert_int_equal(p99, 60000);
	assert_int_equal(corrected_p99, 48000);
	assert_int_equal(server_msgs, 1000);
	assert_true(json_is_null(json_object_get(f, "error")));
	l = json_object_get(f, "latency_ns");
	assert_int_equal(json_object_size(l), 7);
	/* bidir: the reverse direction and the sums of both */
	l = json_object_get(f, "reverse");
	assert_true(json_is_true(json_object_get(l, "ok")));
	assert_true(json_is_null(json_object_get(l, "error")));
	assert_int_equal(json_integer_value(json_object_get(l, "msgs")), 500);
	assert_int_equal(json_integer_value(json_object_get(l, "elapsed_ns")), 500000000);
	assert_true(json_real_value(json_object_get(l, "mops")) > 0.000999 &&
		    json_real_value(json_object_get(l, "mops")) < 0.001001);
	assert_true(json_real_value(json_object_get(l, "cpu_pct")) > 49.99 &&
		    json_real_value(json_object_get(l, "cpu_pct")) < 50.01);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(l, "latency_ns"), "p99")),
			 61000);
	l = json_object_get(f, "aggregate");
	assert_int_equal(json_object_size(l), 4);
	assert_int_equal(json_integer_value(json_object_get(l, "msgs")), 1500);
	assert_int_equal(json_integer_value(json_object_get(l, "bytes")), 3000);
	assert_true(json_real_value(json_object_get(l, "mops")) > 0.001999 &&
		    json_real_value(json_object_get(l, "mops")) < 0.002001);
	assert_true(json_real_value(json_object_get(l, "gbps")) > 0.000031999 &&
		    json_real_value(json_object_get(l, "gbps")) < 0.000032001);
	l = json_object_get(f, "poll_cost");
	assert_int_equal(json_object_size(l), 4);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(l, "hit_ns"), "p99")),
			 150);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(l,
									     "inflight_empty_ns"),
							     "samples")),
			 990);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(l, "empty_ns"),
							     "p50")),
			 50);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(l, "clock_ns"),
							     "max")),
			 1000);
	f = json_array_get(json_object_get(doc, "flows"), 1);
	assert_int_equal(json_unpack_ex(f, &je, 0, "{s:b, s:s}", "ok", &ok, "error", &err), 0);
	assert_false(ok);
	assert_string_equal(err, "QP 0: completion error: retry counter exceeded");
	assert_null(json_object_get(f, "server"));
	assert_null(json_object_get(f, "rperf"));
	assert_null(json_object_get(f, "poll_cost"));
	assert_null(json_object_get(f, "reverse"));
	assert_null(json_object_get(f, "aggregate"));
	assert_string_equal(json_string_value(json_object_get(f, "class")), "bandwidth");
	assert_int_equal(json_integer_value(json_object_get(f, "size")), 1048576);
	assert_true(bench_results_failed(res));
	json_decref(doc);
	strcpy(res->description, "core");
	doc = bench_report_json(res);
	assert_string_equal(json_string_value(json_object_get(doc, "description")), "core");
	json_decref(doc);
	free(res);
}

static void table(void **state)
{
	struct bench_results *res = sample_results();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	bench_report_table(f, res);
	assert_int_equal(bench_report_print_json(f, res), 0);
	fclose(f);
	assert_non_null(strstr(text, "justbench client: rxe1 -> 10.233.0.1, GID index 1, "
				     "libjustitia classes: no, rperf\n"));
	assert_non_null(strstr(text,
			       "\nflow0        lat  send          2   1       1000   0.0010   "
			       "0.0000     20.0     24.0     60.0     90.0    100.0  99.0\n"));
	assert_non_null(strstr(text, "  rperf corrected latency:   min 9.0  p50 13.0  p99 48.0  "
				     "p99.9 77.0  max 86.0 us (1000)\n"));
	assert_non_null(strstr(text, "  poll returning 1:          min 80  p50 100  p99 150  max 500 "
				     "ns per call (1000)\n"));
	assert_non_null(strstr(text, "  reverse (server -> client): 500 msgs  0.0010 Mops/s  0.0000 "
				     "Gbit/s  p50 25.0  p99 61.0 us\n"));
	assert_non_null(strstr(text, "  both directions:            1500 msgs  0.0020 Mops/s"));
	assert_non_null(strstr(text, "  FAILED: QP 0: completion error: retry counter exceeded\n"));
	assert_non_null(strstr(text, "\n{\n  \"version\": 1,\n"));
	free(text);
	free(res);
}

/* Every key of the JSON document appears in the manual's example, as "key":. */
static void assert_keys_documented(json_t *obj, const char *man)
{
	const char *key;
	char quoted[64];
	json_t *v;

	json_object_foreach(obj, key, v) {
		snprintf(quoted, sizeof(quoted), "\"%s\":", key);
		if (!strstr(man, quoted))
			fail_msg("JSON key %s is not in docs/justbench.1", key);
		if (json_is_object(v))
			assert_keys_documented(v, man);
		if (json_is_array(v))
			for (size_t i = 0; i < json_array_size(v); i++)
				assert_keys_documented(json_array_get(v, i), man);
	}
}

static void manual_page(void **state)
{
	struct bench_results *res = sample_results();
	FILE *f = fopen("docs/justbench.1", "r");
	char *man = calloc(1, 65536);
	json_t *doc;

	(void)state;
	assert_non_null(f);
	assert_non_null(man);
	assert_true(fread(man, 1, 65535, f) > 1000);
	fclose(f);
	strcpy(res->description, "core");
	doc = bench_report_json(res);
	assert_non_null(doc);
	assert_keys_documented(doc, man);
	json_decref(doc);
	free(man);
	free(res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(collect),
		cmocka_unit_test(json_schema),
		cmocka_unit_test(table),
		cmocka_unit_test(manual_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

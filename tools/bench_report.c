// SPDX-License-Identifier: MIT
/* justbench results: aggregation over a flow's QPs, the table and the JSON document.
 * May call: bench_run (the results), bench_stats, bench_flow, bench_sweep, jansson and libc. */
#include "bench_report.h"

#include <errno.h>
#include <string.h>

/* The sweep's points over the workers' sweepers (every worker of a flow has the same points). */
static int collect_sweep(struct bench_flow_result *r, struct bench_worker *w, size_t n)
{
	struct bench_point_run *runs[BENCH_QPS_MAX] = { 0 };
	struct bench_samples clock;
	int rc = 0;

	bench_samples_init(&clock);
	for (size_t i = 0; i < n && i < BENCH_QPS_MAX; i++) {
		runs[i] = w[i].sweep ? w[i].sweep->run : NULL;
		if (w[i].sweep && bench_samples_merge(&clock, &w[i].sweep->cpu_clock))
			rc = -ENOMEM;
	}
	r->swept = true;
	if (bench_sweep_collect(&r->sweep, w[0].sweep->spec, w[0].sweep->n, runs, n))
		rc = -ENOMEM;
	bench_samples_summarize(&clock, &r->sweep.cpu_clock);
	bench_samples_free(&clock);
	return rc;
}

int bench_result_collect(struct bench_flow_result *r, struct bench_worker *w, size_t n)
{
	struct bench_samples lat, probe, corrected;
	struct bench_pollcost pc;
	uint64_t start = UINT64_MAX, end = 0;
	int rc = 0;

	bench_samples_init(&lat);
	bench_samples_init(&probe);
	bench_samples_init(&corrected);
	bench_pollcost_init(&pc);
	for (size_t i = 0; i < n; i++) {
		r->msgs += w[i].msgs;
		r->posts += w[i].posts;
		r->bytes += w[i].bytes;
		r->cpu_ns += w[i].cpu_ns;
		r->classified += w[i].qp.classified == 1;
		r->rperf |= w[i].rperf;
		r->pollcost |= w[i].pollcost;
		if (w[i].start_ns && w[i].start_ns < start)
			start = w[i].start_ns;
		if (w[i].end_ns > end)
			end = w[i].end_ns;
		if (w[i].error && !r->error[0])
			snprintf(r->error, sizeof(r->error), "QP %zu: %s", i, w[i].errmsg);
		if (bench_samples_merge(&lat, &w[i].lat) ||
		    bench_samples_merge(&probe, &w[i].probe) ||
		    bench_samples_merge(&corrected, &w[i].corrected) ||
		    bench_pollcost_merge(&pc, &w[i].pc))
			rc = -ENOMEM;
		bench_pollcost_free(&w[i].pc);
		bench_samples_free(&w[i].lat);
		bench_samples_free(&w[i].probe);
		bench_samples_free(&w[i].corrected);
	}
	r->elapsed_ns = end > start ? end - start : 0;
	if (n && w[0].sweep && collect_sweep(r, w, n))
		rc = -ENOMEM;
	bench_samples_summarize(&lat, &r->lat);
	bench_samples_summarize(&probe, &r->probe);
	bench_samples_summarize(&corrected, &r->corrected);
	bench_pollcost_summarize(&pc, &r->pc);
	bench_pollcost_free(&pc);
	bench_samples_free(&lat);
	bench_samples_free(&probe);
	bench_samples_free(&corrected);
	if (rc && !r->error[0])
		snprintf(r->error, sizeof(r->error), "out of memory for the latency samples");
	return rc;
}

static double per_ns(uint64_t n, double scale, uint64_t ns)
{
	return ns ? (double)n * scale / (double)ns : 0;
}

double bench_result_mops(const struct bench_flow_result *r)
{
	return per_ns(r->msgs, 1e3, r->elapsed_ns);
}

double bench_result_gbps(const struct bench_flow_result *r)
{
	return per_ns(r->bytes, 8, r->elapsed_ns);
}

void bench_result_aggregate(const struct bench_flow_result *r, struct bench_aggregate *out)
{
	out->msgs = r->msgs;
	out->bytes = r->bytes;
	out->mops = bench_result_mops(r);
	out->gbps = bench_result_gbps(r);
	if (!r->reverse)
		return;
	out->msgs += r->rev.msgs;
	out->bytes += r->rev.bytes;
	out->mops += per_ns(r->rev.msgs, 1e3, r->rev.elapsed_ns);
	out->gbps += per_ns(r->rev.bytes, 8, r->rev.elapsed_ns);
}

double bench_result_cpu_pct(uint64_t cpu_ns, const struct bench_flow_result *r)
{
	return r->elapsed_ns ? (double)cpu_ns * 100 / (double)r->elapsed_ns : 0;
}

bool bench_results_failed(const struct bench_results *res)
{
	for (size_t i = 0; i < res->n; i++)
		if (res->flows[i].error[0] || (res->flows[i].reverse && res->flows[i].rev.error[0]))
			return true;
	return false;
}

/* ---------------------------------------------------------------- table */

static double us(uint64_t ns)
{
	return (double)ns / 1000;
}

static void summary_line(FILE *out, const char *what, const struct bench_summary *s)
{
	fprintf(out, "  %-26s min %.1f  p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us (%llu)\n",
		what, us(s->min), us(s->p50), us(s->p99), us(s->p999), us(s->max),
		(unsigned long long)s->count);
}

static void summary_ns(FILE *out, const char *what, const struct bench_summary *s)
{
	fprintf(out, "  %-26s min %llu  p50 %llu  p99 %llu  max %llu ns per call (%llu)\n", what,
		(unsigned long long)s->min, (unsigned long long)s->p50,
		(unsigned long long)s->p99, (unsigned long long)s->max,
		(unsigned long long)s->count);
}

void bench_report_table(FILE *out, const struct bench_results *res)
{
	unsigned qps = 0, classified = 0;
	char shim[48] = "no";

	for (size_t i = 0; i < res->n; i++) {
		qps += res->flows[i].flow.qps;
		classified += res->flows[i].classified;
	}
	if (res->shim)
		snprintf(shim, sizeof(shim), "%u of %u QPs", classified, qps);
	fprintf(out, "justbench %s: %s -> %s, GID index %d, libjustitia classes: %s%s%s%s\n",
		res->mode, res->device, res->peer, res->gid_index, shim,
		res->rperf ? ", rperf" : "", res->bench_mode ? ", mode " : "",
		res->bench_mode ? bench_mode_name(res->bench_mode) : "");
	if (res->description[0])
		fprintf(out, "scenario: %s\n", res->description);
	fprintf(out, "%-12s %-4s %-9s %5s %3s %10s %8s %8s %8s %8s %8s %8s %8s %5s\n", "flow",
		"cls", "verb", "size", "qps", "msgs", "Mops/s", "Gbit/s", "min", "p50", "p99",
		"p99.9", "max", "CPU%");
	for (size_t i = 0; i < res->n; i++) {
		const struct bench_flow_result *r = &res->flows[i];
		char size[16];

		bench_format_size(r->flow.size, size, sizeof(size));
		fprintf(out, "%-12s %-4s %-9s %5s %3u %10llu %8.4f %8.4f %8.1f %8.1f %8.1f %8.1f "
			     "%8.1f %5.1f\n",
			r->flow.name, bench_class_short(r->flow.cls), bench_verb_name(r->flow.verb),
			size, r->flow.qps, (unsigned long long)r->msgs, bench_result_mops(r),
			bench_result_gbps(r), us(r->lat.min), us(r->lat.p50), us(r->lat.p99),
			us(r->lat.p999), us(r->lat.max), bench_result_cpu_pct(r->cpu_ns, r));
		if (r->rperf) {
			summary_line(out, "rperf loopback probe:", &r->probe);
			summary_line(out, "rperf corrected latency:", &r->corrected);
		}
		if (r->reverse) {
			const struct bench_wire_reverse *v = &r->rev;
			struct bench_aggregate a;

			bench_result_aggregate(r, &a);
			fprintf(out, "  reverse (server -> client): %llu msgs  %.4f Mops/s  %.4f "
				     "Gbit/s  p50 %.1f  p99 %.1f us\n",
				(unsigned long long)v->msgs, per_ns(v->msgs, 1e3, v->elapsed_ns),
				per_ns(v->bytes, 8, v->elapsed_ns), us(v->lat.p50), us(v->lat.p99));
			fprintf(out, "  both directions:            %llu msgs  %.4f Mops/s  %.4f "
				     "Gbit/s\n",
				(unsigned long long)a.msgs, a.mops, a.gbps);
			if (v->error[0])
				fprintf(out, "  REVERSE FAILED: %s\n", v->error);
		}
		if (r->pollcost) {
			summary_ns(out, "poll, empty CQ:", &r->pc.empty);
			summary_ns(out, "poll, empty, in flight:", &r->pc.inflight);
			summary_ns(out, "poll returning 1:", &r->pc.hit);
			summary_ns(out, "clock (two reads):", &r->pc.clock);
		}
		if (r->swept)
			bench_sweep_table(out, &r->sweep, r->flow.qps);
		if (r->error[0])
			fprintf(out, "  FAILED: %s\n", r->error);
	}
	fprintf(out, "latency: post to completion of each post, in us; CPU%%: the flow's threads "
		     "over its active time\n");
}

/* ---------------------------------------------------------------- JSON */

static int set(json_t *obj, const char *key, json_t *v)
{
	return v ? json_object_set_new(obj, key, v) : -1;
}

static json_t *summary_json(const struct bench_summary *s)
{
	return json_pack("{sI sI sI sI sI sI sI}", "samples", (json_int_t)s->count, "min",
			 (json_int_t)s->min, "mean", (json_int_t)s->mean, "p50", (json_int_t)s->p50,
			 "p99", (json_int_t)s->p99, "p999", (json_int_t)s->p999, "max",
			 (json_int_t)s->max);
}

static json_t *reverse_json(const struct bench_flow_result *r)
{
	const struct bench_wire_reverse *v = &r->rev;
	struct bench_aggregate a;
	json_t *o;

	bench_result_aggregate(r, &a);
	o = json_pack("{sb sI sI sI sI sf sf sf so}", "ok", !v->error[0], "msgs",
		      (json_int_t)v->msgs, "posts", (json_int_t)v->posts, "bytes",
		      (json_int_t)v->bytes, "elapsed_ns", (json_int_t)v->elapsed_ns, "mops",
		      per_ns(v->msgs, 1e3, v->elapsed_ns), "gbps", per_ns(v->bytes, 8, v->elapsed_ns),
		      "cpu_pct", per_ns(v->cpu_ns, 100, v->elapsed_ns), "latency_ns",
		      summary_json(&v->lat));
	if (o && set(o, "error", v->error[0] ? json_string(v->error) : json_null())) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *flow_json(const struct bench_flow_result *r)
{
	const struct bench_flow *f = &r->flow;
	json_t *o;
	char spec[512];
	int bad = 0;

	if (bench_flow_format(f, spec, sizeof(spec)))
		spec[0] = 0;
	o = json_pack("{ss ss ss sI sI sI sI ss sI sI sI sI ss sb}", "name", f->name, "class",
		      bench_class_name(f->cls), "verb", bench_verb_name(f->verb), "size",
		      (json_int_t)f->size, "qps", (json_int_t)f->qps, "batch", (json_int_t)f->batch,
		      "window", (json_int_t)f->window, "poll", bench_poll_name(f->poll), "delay_us",
		      (json_int_t)f->delay_us, "duration_us", (json_int_t)f->duration_us, "iters",
		      (json_int_t)f->iters, "rate_bps", (json_int_t)f->rate_bps, "spec", spec, "ok",
		      !r->error[0]);
	if (!o)
		return NULL;
	bad |= set(o, "error", r->error[0] ? json_string(r->error) : json_null());
	bad |= set(o, "msgs", json_integer((json_int_t)r->msgs));
	bad |= set(o, "posts", json_integer((json_int_t)r->posts));
	bad |= set(o, "bytes", json_integer((json_int_t)r->bytes));
	bad |= set(o, "elapsed_ns", json_integer((json_int_t)r->elapsed_ns));
	bad |= set(o, "mops", json_real(bench_result_mops(r)));
	bad |= set(o, "gbps", json_real(bench_result_gbps(r)));
	bad |= set(o, "cpu_pct", json_real(bench_result_cpu_pct(r->cpu_ns, r)));
	bad |= set(o, "classified_qps", json_integer(r->classified));
	bad |= set(o, "latency_ns", summary_json(&r->lat));
	if (r->rperf)
		bad |= set(o, "rperf", json_pack("{so so}", "probe_ns", summary_json(&r->probe),
						 "corrected_ns", summary_json(&r->corrected)));
	if (r->reverse) {
		struct bench_aggregate a;

		bench_result_aggregate(r, &a);
		bad |= set(o, "reverse", reverse_json(r));
		bad |= set(o, "aggregate",
			   json_pack("{sI sI sf sf}", "msgs", (json_int_t)a.msgs, "bytes",
				     (json_int_t)a.bytes, "mops", a.mops, "gbps", a.gbps));
	}
	if (r->pollcost)
		bad |= set(o, "poll_cost",
			   json_pack("{so so so so}", "empty_ns", summary_json(&r->pc.empty),
				     "inflight_empty_ns", summary_json(&r->pc.inflight), "hit_ns",
				     summary_json(&r->pc.hit), "clock_ns",
				     summary_json(&r->pc.clock)));
	if (r->swept)
		bad |= bench_sweep_json(o, &r->sweep, r->flow.qps);
	if (r->server)
		bad |= set(o, "server",
			   json_pack("{sI sI sf}", "msgs", (json_int_t)r->server_msgs, "bytes",
				     (json_int_t)r->server_bytes, "cpu_pct",
				     bench_result_cpu_pct(r->server_cpu_ns, r)));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *bench_report_json(const struct bench_results *res)
{
	json_t *flows = json_array(), *doc;

	if (!flows)
		return NULL;
	for (size_t i = 0; i < res->n; i++) {
		if (json_array_append_new(flows, flow_json(&res->flows[i]))) {
			json_decref(flows);
			return NULL;
		}
	}
	doc = json_pack("{si ss ss ss ss ss si sb sb so}", "version", BENCH_REPORT_VERSION, "tool",
			"justbench", "mode", res->mode, "bench_mode",
			bench_mode_name(res->bench_mode), "device", res->device, "peer", res->peer,
			"gid_index", res->gid_index, "shim", res->shim, "rperf", res->rperf,
			"flows", flows);
	if (doc && res->description[0] &&
	    json_object_set_new(doc, "description", json_string(res->description))) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

int bench_report_print_json(FILE *out, const struct bench_results *res)
{
	json_t *doc = bench_report_json(res);
	int rc;

	if (!doc)
		return -ENOMEM;
	rc = json_dumpf(doc, out, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
	json_decref(doc);
	if (rc == 0)
		fputc('\n', out);
	return rc ? -EIO : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * justbench results: per flow, what its QPs did together, and the two ways to print them: a
 * table for people and JSON for programs (the schema is in docs/justbench.1, JSON OUTPUT).
 */
#ifndef JUSTITIA_BENCH_REPORT_H
#define JUSTITIA_BENCH_REPORT_H

#include "bench_flow.h"
#include "bench_mode.h"
#include "bench_run.h"
#include "bench_stats.h"
#include "bench_sweep.h"

#include <jansson.h>
#include <stdio.h>

#define BENCH_REPORT_VERSION 1

struct bench_flow_result {
	struct bench_flow flow;
	uint64_t msgs, posts, bytes;
	uint64_t elapsed_ns; /* first post to last completion, over its QPs */
	uint64_t cpu_ns;     /* its threads */
	struct bench_summary lat;
	bool rperf;
	struct bench_summary probe, corrected;
	bool pollcost; /* --mode poll-cost */
	struct bench_pollcost_summary pc;
	bool swept; /* --mode reuse, overhead, overlap: its points */
	struct bench_sweep_result sweep;
	bool reverse; /* --mode bidir: what the server's flow towards the client did */
	struct bench_wire_reverse rev;
	bool server; /* the server's counts are known */
	uint64_t server_msgs, server_bytes, server_cpu_ns;
	unsigned classified; /* QPs justitia_set_qp_class() accepted */
	char error[BENCH_ERRMSG_MAX + 16];
};

struct bench_results {
	char mode[16];	   /* "client" or "local" */
	char device[64];   /* this end */
	char peer[256];	   /* server address, or the other device */
	int gid_index;
	bool rperf;
	enum bench_mode bench_mode; /* --mode */
	bool shim;	   /* justitia_set_qp_class() present */
	char description[256];
	size_t n;
	struct bench_flow_result flows[BENCH_FLOWS_MAX];
};

/*
 * Adds the workers' numbers w[0..n) of one flow (and its samples, which it sorts and frees) to
 * r.  0 or -ENOMEM.
 */
int bench_result_collect(struct bench_flow_result *r, struct bench_worker *w, size_t n);

/* --mode bidir: both directions of a flow together, each direction's rate over its own time. */
struct bench_aggregate {
	uint64_t msgs, bytes;
	double mops, gbps;
};

double bench_result_mops(const struct bench_flow_result *r);
double bench_result_gbps(const struct bench_flow_result *r);
double bench_result_cpu_pct(uint64_t cpu_ns, const struct bench_flow_result *r);
/* The sums of r's two directions (only the forward one without a reverse). */
void bench_result_aggregate(const struct bench_flow_result *r, struct bench_aggregate *out);
/* Whether any flow (or its reverse) failed. */
bool bench_results_failed(const struct bench_results *res);

void bench_report_table(FILE *out, const struct bench_results *res);
/* The JSON document, NULL when out of memory. */
json_t *bench_report_json(const struct bench_results *res);
int bench_report_print_json(FILE *out, const struct bench_results *res);

#endif

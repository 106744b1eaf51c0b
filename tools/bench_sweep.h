/* SPDX-License-Identifier: MIT */
/*
 * justbench sweeps: the modes that run each flow as a series of points, one setting after the
 * other, and report every point (docs/justbench.1, MODES):
 *
 *	reuse		a point per reuse percentage R (--reuse): R% of the messages use one
 *			buffer, the others the distinct buffers of a pre-registered pool in turn
 *			(--buffers); then, with --rotate, a point per n: every message uses the
 *			next of n buffers in rotation
 *	overhead	a latency flow: one point, the thread CPU time of each post and of the
 *			polls until its completion; a bandwidth (or throughput) flow: a point per
 *			computation time C (--compute), C ns of busy computation before each post,
 *			and the largest share of time that computation takes before the bandwidth
 *			drops by more than 5% (the knee)
 *	overlap		a latency flow, a point per C: post, compute C ns, then wait for the
 *			completion; the overlap is the share of the communication time (the post
 *			to completion time at C = 0) the computation hid
 *	progress	a latency READ or SEND flow, a point per response delay D
 *			(--response-delay): the server process computes in slices of D and
 *			looks at its CQ only between them (bench_progress.h)
 *
 * This module is the settings, the points' layout, the buffer choice and the statistics; what
 * runs them on a QP is bench_sweeprun.c.
 */
#ifndef JUSTITIA_BENCH_SWEEP_H
#define JUSTITIA_BENCH_SWEEP_H

#include "bench_flow.h"
#include "bench_mode.h"
#include "bench_stats.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#define BENCH_POINTS_MAX  16
#define BENCH_POOL_MAX	  4096 /* buffers per QP */
#define BENCH_COMPUTE_MAX (1000ull * 1000000000) /* ns: 1000 s */
#define BENCH_KNEE_DROP	  5 /* percent */
#define BENCH_RESPONSE_DELAY_MAX 1000000000ull /* ns: 1 s */

/* The sweep options of the command line (0 entries: the mode's default). */
struct bench_sweep_cfg {
	unsigned n_reuse, n_rotate, n_compute, n_delay;
	uint32_t reuse[BENCH_POINTS_MAX];   /* percent, 0..100 */
	uint32_t rotate[BENCH_POINTS_MAX];  /* buffers, 1..BENCH_POOL_MAX */
	uint64_t compute[BENCH_POINTS_MAX]; /* ns */
	uint64_t delay[BENCH_POINTS_MAX];   /* ns, the server's response delay (progress) */
	uint32_t buffers;		    /* the reuse pool; 0: the default (64) */
};

/* reuse R%, n buffers in rotation, CPU per message, compute before posts, compute overlapped,
 * the server's response delay */
enum bench_point_kind {
	BENCH_PT_REUSE,
	BENCH_PT_ROTATE,
	BENCH_PT_CPU,
	BENCH_PT_COMPUTE,
	BENCH_PT_OVERLAP,
	BENCH_PT_PROGRESS
};

struct bench_point_spec {
	enum bench_point_kind kind;
	uint64_t x; /* reuse: percent; rotate: buffers; compute, overlap, progress: ns */
};

/*
 * Parses a comma-separated list of at most BENCH_POINTS_MAX values: percents (0..100),
 * buffer counts (1..BENCH_POOL_MAX), or times (bench_parse_time's syntax and "500ns";
 * 0..BENCH_COMPUTE_MAX ns; response delays 0..BENCH_RESPONSE_DELAY_MAX ns).  0, or -EINVAL
 * with the message in err.
 */
int bench_sweep_parse_reuse(struct bench_sweep_cfg *c, const char *s, char *err, size_t errlen);
int bench_sweep_parse_rotate(struct bench_sweep_cfg *c, const char *s, char *err, size_t errlen);
int bench_sweep_parse_compute(struct bench_sweep_cfg *c, const char *s, char *err,
			      size_t errlen);
int bench_sweep_parse_delay(struct bench_sweep_cfg *c, const char *s, char *err, size_t errlen);
int bench_sweep_parse_buffers(struct bench_sweep_cfg *c, const char *s, char *err,
			      size_t errlen);

/* Whether mode m sweeps. */
bool bench_sweep_mode(enum bench_mode m);

/*
 * The points of flow f in mode m with c, in order, at most BENCH_POINTS_MAX; returns how many
 * (0: m does not sweep).  A compute sweep always starts with C = 0 (the baseline), added when
 * the list has none; other values keep the list's order (progress: the --response-delay list
 * or 0, 1, 2, 4, 8, 16 ms).
 */
unsigned bench_sweep_points(enum bench_mode m, const struct bench_sweep_cfg *c,
			    const struct bench_flow *f, struct bench_point_spec *out);
/* The buffers flow f's QPs register for m with c (the pool): 0 when none. */
uint32_t bench_sweep_pool(enum bench_mode m, const struct bench_sweep_cfg *c,
			  const struct bench_flow *f);

/*
 * Which buffer message i (from 0) of a point uses: 0 is the reused buffer, 1..pool-1 the
 * distinct ones.  Reuse R: a running count decides, so that exactly floor(R * (i + 1) / 100)
 * of the first i + 1 messages use buffer 0 and the others cycle through 1..pool-1 (with a
 * pool of 1, buffer 0).  Rotate n: buffer i mod n.  *state is the point's counter, 0 at its
 * start.
 */
uint32_t bench_sweep_buffer(const struct bench_point_spec *p, uint32_t pool, uint64_t i,
			    uint64_t *state);

/* What one QP measured at one point. */
struct bench_point_run {
	uint64_t msgs, bytes, elapsed_ns, compute_ns;
	uint64_t reused;		       /* messages on buffer 0 */
	struct bench_samples lat, post_cpu, poll_cpu; /* ns per message */
};

/* A point over a flow's QPs, summarised. */
struct bench_point {
	struct bench_point_spec spec;
	uint64_t msgs, bytes, elapsed_ns, compute_ns, reused;
	struct bench_summary lat, post_cpu, poll_cpu;
};

struct bench_sweep_result {
	unsigned n;
	struct bench_point p[BENCH_POINTS_MAX];
	struct bench_summary cpu_clock; /* two back-to-back thread CPU clock reads (overhead) */
};

void bench_point_run_init(struct bench_point_run *r);
void bench_point_run_free(struct bench_point_run *r);

/*
 * Sums the QPs' runs[q][0..n) (each QP's array of n points) into out, summarises the samples
 * and frees them.  elapsed_ns is the longest QP's.  0 or -ENOMEM.
 */
int bench_sweep_collect(struct bench_sweep_result *out, const struct bench_point_spec *spec,
			unsigned n, struct bench_point_run *const *runs, size_t qps);

double bench_point_gbps(const struct bench_point *p);
/* compute_ns over elapsed_ns times the QPs, 0..1 (what share of the time went to computing). */
double bench_point_share(const struct bench_point *p, uint32_t qps);
/*
 * The overlap of point p against the baseline b (C = 0): with T the mean post-to-completion
 * time of b, c the mean computation per message of p and t p's mean time, (T + c - t) / T,
 * kept within 0..1.  -1 when b has no messages.
 */
double bench_point_overlap(const struct bench_point *p, const struct bench_point *b);
/*
 * The knee of a compute sweep: the index of the point with the largest share whose bandwidth
 * is at least (100 - BENCH_KNEE_DROP)% of point 0's; -1 when no point (point 0 neither).
 */
int bench_sweep_knee(const struct bench_sweep_result *s, uint32_t qps);

const char *bench_point_kind_name(enum bench_point_kind k); /* "reuse", ... */

/* The table lines of s (under the flow's row) and its JSON array ("points") with the knee. */
void bench_sweep_table(FILE *out, const struct bench_sweep_result *s, uint32_t qps);
/* Sets "sweep" on the flow's object o; 0 or -1 when out of memory. */
int bench_sweep_json(json_t *o, const struct bench_sweep_result *s, uint32_t qps);

#endif

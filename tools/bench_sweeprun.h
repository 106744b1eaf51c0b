/* SPDX-License-Identifier: MIT */
/*
 * justbench sweeps on one QP (--mode reuse, overhead, overlap; bench_sweep.h): the worker's
 * loop while a sweep runs.  The flow's duration is shared equally among the points (with iters,
 * each point sends iters messages); each point keeps `window` messages in flight (batch 1),
 * busy-polls, and waits for all of them before the next point starts, so that points never mix.
 *
 *	reuse, rotate	each message's local buffer is chosen by bench_sweep_buffer() among a
 *			pool of buffers, each registered alone (its own MR) and a page apart;
 *			never inline, so that the device reads (or writes) the buffer itself
 *	cpu		window 1: CLOCK_THREAD_CPUTIME_ID around the ibv_post_send call, and from
 *			after it until the poll that returns its completion
 *	compute		C ns of busy computation (a spin on CLOCK_MONOTONIC) before each post
 *	overlap		window 1: the post, C ns of busy computation, then the polls
 */
#ifndef JUSTITIA_BENCH_SWEEPRUN_H
#define JUSTITIA_BENCH_SWEEPRUN_H

#include "bench_sweep.h"

#include <infiniband/verbs.h>
#include <stdatomic.h>

#define BENCH_CPU_CLOCK_SAMPLES 1000

struct bench_sweeper {
	unsigned n;
	struct bench_point_spec spec[BENCH_POINTS_MAX];
	struct bench_point_run run[BENCH_POINTS_MAX];
	struct bench_samples cpu_clock; /* ns, two thread CPU clock reads (cpu points) */
	uint32_t pool_n;		/* buffers (reuse), 0: none */
	size_t stride;
	void *pool_mem;
	struct ibv_mr **pool;
};

/* What a sweeper posts on: a connected QP with its own CQ, and the peer's buffer. */
struct bench_sweep_qp {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	void *buf; /* the QP's own buffer (not reuse) */
	uint32_t lkey, max_inline;
	uint64_t remote_addr;
	uint32_t rkey;
};

/*
 * Lays out flow f's points in mode m with c and registers its pool in pd.  0, or -errno with a
 * message in err (-ENOMEM: the pool would exceed BENCH_BUFFERS_MAX; -EIO: registration).
 */
int bench_sweeper_setup(struct bench_sweeper *s, enum bench_mode m,
			const struct bench_sweep_cfg *c, const struct bench_flow *f,
			struct ibv_pd *pd, char *err, size_t errlen);
void bench_sweeper_free(struct bench_sweeper *s);

/*
 * Runs every point of f on q from now on, until stop.  0, or -errno with a message in err
 * (the points done so far keep their numbers).
 */
int bench_sweeper_run(struct bench_sweeper *s, const struct bench_flow *f,
		      const struct bench_sweep_qp *q, const atomic_bool *stop, char *err,
		      size_t errlen);

#endif

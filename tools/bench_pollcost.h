/* SPDX-License-Identifier: MIT */
/*
 * justbench --mode poll-cost: the cost of checking for completion (Liu et al.'s "completion
 * checking" microbenchmark), one message at a time on a busy-polled CQ.
 *
 * Per message: one ibv_poll_cq on the CQ with nothing in flight (empty), the post, then
 * ibv_poll_cq until the completion comes; the call that returns it is a hit, the last empty
 * call before it the in-flight empty poll.  Each call is timed alone between two reads of
 * CLOCK_MONOTONIC; what two back-to-back reads cost (the clock) is measured apart so that a
 * reader can tell the floor.  Under libjustitia.so every call goes through the shim's
 * interposed poll, so plain and preloaded runs show what the interposition costs.
 */
#ifndef JUSTITIA_BENCH_POLLCOST_H
#define JUSTITIA_BENCH_POLLCOST_H

#include "bench_stats.h"

#include <infiniband/verbs.h>
#include <stdbool.h>

#define BENCH_POLLCOST_CLOCK_SAMPLES 10000

struct bench_pollcost {
	struct bench_samples clock, empty, inflight, hit; /* ns per call */
};

struct bench_pollcost_summary {
	struct bench_summary clock, empty, inflight, hit;
};

void bench_pollcost_init(struct bench_pollcost *pc);
void bench_pollcost_free(struct bench_pollcost *pc);
/* Appends src's samples to dst; 0 or -ENOMEM. */
int bench_pollcost_merge(struct bench_pollcost *dst, const struct bench_pollcost *src);
/* Sorts the samples and fills out. */
void bench_pollcost_summarize(struct bench_pollcost *pc, struct bench_pollcost_summary *out);

/* n samples of two back-to-back clock reads; 0 or -ENOMEM. */
int bench_pollcost_clock(struct bench_pollcost *pc, unsigned n);

/*
 * One message: an empty poll of cq, wr posted on qp (signaled, its completion on cq), polls
 * until it completes (at most timeout_ns).  Adds the samples to pc and the post-to-completion
 * time to *lat_ns.  0, or -errno with a message in err: -EIO a post, poll or completion error,
 * -EPROTO a completion with nothing in flight, -ETIMEDOUT, -ENOMEM.
 */
int bench_pollcost_message(struct bench_pollcost *pc, struct ibv_qp *qp, struct ibv_cq *cq,
			   struct ibv_send_wr *wr, uint64_t timeout_ns, uint64_t *lat_ns,
			   char *err, size_t errlen);

#endif

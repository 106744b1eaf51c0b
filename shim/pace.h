/* SPDX-License-Identifier: MIT */
/* Pacing of throughput and bandwidth QPs by the daemon's tokens: the post
 * path.
 *
 * A QP is "direct" when the shim only counts (latency class, unmanaged, or
 * unpaced): its posts go straight to the provider.  Otherwise a post takes
 * tokens from the flow's virtual-time bucket (common/bucket.h) against the
 * rate the daemon granted; what cannot go now is copied into the QP's
 * backlog, in order, and the post call returns at once.  A progress thread
 * (pacectl.h; asleep on a timerfd/eventfd, never spinning) posts the
 * backlog as tokens arrive (drain.h).  Work requests posted behind a
 * backlog wait behind it, so the provider sees them in the application's
 * order. */
#ifndef JUSTITIA_SHIM_PACE_H
#define JUSTITIA_SHIM_PACE_H

#include <infiniband/verbs.h>

#include "backlogs.h"
#include "registry.h"
#include "wrpost.h"

/* A WR went to the provider on @q's own QP outside the pacer (direct
 * posts, ibv_wr_* batches passed through): split chunks posted later must
 * not overtake it (order.h). */
static inline void shim_pace_posted_direct(struct shim_qp *q)
{
	if (q->split.qp)
		atomic_store_explicit(&q->ord_dirty, 1, memory_order_relaxed);
}
/* From the application's ibv_poll_cq: a send completion of @q, whose send
 * queue is counted (sq.h): an entry is free again, and when nothing is left
 * the flow's work is no longer queued. */
void shim_pace_send_done(struct shim_qp *q, int success);
/* From the application's ibv_poll_cq: @wc (on @q's send queue) is the
 * completion of the shim's ordering barrier: it is not the application's,
 * drop it.  Returns 1 when it was. */
int shim_pace_barrier_done(struct shim_qp *q, const struct ibv_wc *wc);
/* From the application's poll: @wc is one of @q's window tags.  Gives it
 * the application's wr_id back; 1 when the application must not see it. */
int shim_pace_window_done(struct shim_qp *q, struct ibv_wc *wc);
/* Whether posts on @q must go through the paced path: not direct, or a
 * backlog anywhere in the process still drains (shim_pace_queued,
 * backlogs.h). */
static inline int shim_pace_needed(struct shim_qp *q)
{
	return !atomic_load_explicit(&q->direct, memory_order_relaxed) ||
	       __builtin_expect(atomic_load_explicit(&shim_pace_queued, memory_order_acquire), 0);
}
/* The paced post path: called by the post_send wrapper when !q->direct. */
int shim_pace_post(struct shim_qp *q, struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad);
/* The same for a batch the ibv_wr_* wrappers buffered: its WRs count as
 * wr_api_wrs, and a batch the backlog has no room for fails whole (ENOMEM,
 * nothing posted), as natively. */
int shim_pace_post_wr_api(struct shim_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
/* Call @fn(@arg) under @q's lock as soon as nothing is queued on @q, so that
 * what @fn posts goes behind everything posted before; returns what @fn
 * returned.  Until then it helps drain the backlog and sleeps, for at most
 * SHIM_IDLE_WAIT_NS: then it returns ENOMEM without calling @fn, as a full
 * send queue would refuse the post (libjustitia.7). */
#define SHIM_IDLE_WAIT_NS 10000000ull
int shim_pace_when_idle(struct shim_qp *q, int (*fn)(void *), void *arg);
/* ibv_wr_* batches that reach the provider before the shim can hold them
 * (direct QPs, batches replayed by shim_pace_when_idle): charge what was
 * posted to the bucket afterwards, so the next posts wait for it. */
void shim_pace_charge(struct shim_qp *q, uint64_t wrs, uint64_t bytes);

#endif

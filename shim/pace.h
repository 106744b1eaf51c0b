/* SPDX-License-Identifier: MIT */
/* Pacing of throughput and bandwidth QPs by the daemon's tokens.
 *
 * A QP is "direct" when the shim only counts (latency class, unmanaged, or
 * unpaced): its posts go straight to the provider.  Otherwise a post takes
 * tokens from the flow's virtual-time bucket (common/bucket.h) against the
 * rate the daemon granted; what cannot go now is copied into the QP's
 * backlog, in order, and the post call returns at once.  A progress thread
 * (asleep on a timerfd/eventfd, never spinning) posts the backlog as tokens
 * arrive.  Work requests posted behind a backlog wait behind it, so the
 * provider sees them in the application's order. */
#ifndef JUSTITIA_SHIM_PACE_H
#define JUSTITIA_SHIM_PACE_H

#include <infiniband/verbs.h>

#include "registry.h"
#include "splitmsg.h"

/* A copy of one send WR (and of its inline data) waiting for tokens; for a
 * message being split, also its progress. */
struct pend_wr {
	struct pend_wr *next;
	uint64_t cost_bytes;
	uint32_t chunk;        /* 0: goes whole; else the split size */
	uint32_t n_chunks;
	uint32_t next_chunk;   /* next chunk to post */
	uint32_t inflight;     /* chunks posted on the split QP, not completed */
	int failed;            /* 0, or 1 + the enum ibv_wc_status of a failed chunk */
	/* two-sided splits (splitmsg.h) */
	uint8_t kind;          /* enum splitmsg_kind */
	uint8_t phase;         /* enum splitmsg_phase */
	uint8_t nseg;
	uint8_t went_whole;    /* the receiver said WHOLE: never split it again */
	uint8_t paid;          /* its next post's tokens are taken (the provider
				* had no room for it: pace.c no_room()) */
	uint8_t window;        /* its split window so far: it never shrinks
				* (pace.c, "split window") */
	uint64_t seq;          /* which of the peer's receives it consumes */
	uint64_t deadline_ns;  /* READY due by then */
	struct splitmsg_seg seg[SPLITMSG_MAX_SEG];
	int wr_api;            /* built with ibv_wr_* (wrbuf.h): counted as such */
	struct ibv_send_wr wr;
	struct ibv_sge sge[];
};

/* Decide whether @q is direct from its class and the daemon's slot. */
void shim_pace_update(struct shim_qp *q);
/* A WR went to the provider on @q's own QP outside the pacer (direct
 * posts, ibv_wr_* batches passed through): split chunks posted later must
 * not overtake it (pace.c, "Order"). */
static inline void shim_pace_posted_direct(struct shim_qp *q)
{
	if (q->split.qp)
		atomic_store_explicit(&q->ord_dirty, 1, memory_order_relaxed);
}
/* Split chunks wait for a barrier behind the application QP's earlier WRs
 * (pace.c, "Order"); JUSTITIA_ORDER=none turns it off. */
extern int shim_order_barrier;
/* From the application's ibv_poll_cq: @wc (on @q's send queue) is the
 * completion of the shim's ordering barrier: it is not the application's,
 * drop it.  Returns 1 when it was. */
int shim_pace_barrier_done(struct shim_qp *q, const struct ibv_wc *wc);
/* The wr_id of @q's window tags (window.h): odd, and no other QP's. */
static inline uint64_t shim_pace_window_tag(const struct shim_qp *q)
{
	return (uintptr_t)q | 3u;
}
/* From the application's poll: @wc is one of @q's window tags.  Gives it
 * the application's wr_id back; 1 when the application must not see it. */
int shim_pace_window_done(struct shim_qp *q, struct ibv_wc *wc);
/* The application QP went to RESET: its backlog and the chunks in flight
 * are gone, as the provider's WRs are (no completions). */
void shim_pace_qp_reset(struct shim_qp *q);
/* The daemon changed its pace mode since @q last looked (jst_shm_global
 * mode_gen): re-decide whether @q is direct.  Returns 1 when it did.  Costs
 * two loads when nothing changed: the direct post paths call it. */
int shim_pace_recheck(struct shim_qp *q);
/* Whether posts on @q must go through the paced path: not direct, or a
 * backlog anywhere in the process still drains. */
extern _Atomic unsigned shim_pace_queued;
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
/* (shim_pace_queued: QPs with a backlog; ibv_poll_cq looks at this one
 * counter.) */
/* From the application's ibv_poll_cq on @cq: progress the backlogs of the
 * QPs that complete there (split completions, due tokens) without waiting
 * for the progress thread to be scheduled.  Never blocks.  Returns 1 when a
 * QP completing on @cq still holds work back (a token or its split chunks
 * are outstanding), else 0. */
int shim_pace_progress(struct ibv_cq *cq);
/* Whether an empty poll of a CQ whose QP is held back yields the CPU
 * (JUSTITIA_POLL_YIELD, default 1). */
extern int shim_poll_yield;
/* ibv_wr_* batches that reach the provider before the shim can hold them
 * (direct QPs, batches replayed by shim_pace_when_idle): charge what was
 * posted to the bucket afterwards, so the next posts wait for it. */
void shim_pace_charge(struct shim_qp *q, uint64_t wrs, uint64_t bytes);
/* Drop the backlog of a QP that is being destroyed. */
void shim_pace_qp_gone(struct shim_qp *q);
/* The daemon went away: post every backlog unpaced, make every QP direct. */
void shim_pace_fail_open(void);
/* Watch / stop watching the completion channel of @q's split QP. */
int shim_pace_watch(struct shim_qp *q);
void shim_pace_unwatch(struct shim_qp *q);
/* Start the progress thread if it does not run yet (once per process):
 * it also reconnects to a daemon that was not there (client.c). */
int shim_pace_start_thread(void);
/* Where the pacer's work ran so far (JUSTITIA_STATS). */
void shim_pace_counters(struct stats_pacer *out);
/* fork(): the progress thread does not exist in the child. */
void shim_pace_atfork_child(void);

#endif

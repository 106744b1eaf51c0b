/* SPDX-License-Identifier: MIT */
/* What the provider's send queue of an application QP holds, as the shim
 * counts it: so that a paced QP fails a post with ENOMEM exactly where the
 * provider would have failed it without the shim (the WRs the provider
 * holds plus those the shim holds back in its backlog reach the
 * application's max_send_wr), and so that the shim's own WRs on that queue
 * (the ordering barrier) never make the application's posts fail.
 *
 * A provider frees send-queue entries when a completion is polled: that of
 * the WR itself or of a later signaled one (send completions come in
 * order).  So the counter keeps the position of every signaled WR it was
 * told about, and each successful send completion of the QP frees
 * everything up to the oldest one.  It is exact only while every post on
 * the QP is counted (shim_sq_posted()) and every send completion seen
 * (shim_sq_completed()): a post that bypasses the count (the latency fast
 * path, a batch the provider's own ibv_wr_* took) or an error completion
 * (the flushes that follow it include unsignaled WRs) makes it unknown
 * until the QP is reset.  Callers hold the QP's lock.
 *
 * (This is the verbs specification's rule, and mlx5's: an entry is the
 * application's until the completion that frees it is polled.  Soft-RoCE
 * frees an entry as soon as the WR completes, polled or not, so there an
 * application that posts before polling may see ENOMEM a little earlier
 * under the shim than without it.) */
#ifndef JUSTITIA_SHIM_SQ_H
#define JUSTITIA_SHIM_SQ_H

#include <stdatomic.h>
#include <stdint.h>

enum shim_sq_state {
	SHIM_SQ_LOST = 0,      /* a post or completion went uncounted */
	SHIM_SQ_KNOWN = 1,     /* every post and completion since RESET was counted */
	SHIM_SQ_EMPTY = 2,     /* nothing posted since RESET: known once the first
				* post is counted (and then watched) */
};

struct shim_sq {
	_Atomic int known;     /* enum shim_sq_state */
	uint32_t cap;          /* the application's max_send_wr */
	uint64_t posted;       /* WRs the provider took */
	uint64_t done;         /* ... of which completed: their entries are free */
	uint64_t *sig;         /* ring: the value of posted at each signaled WR */
	uint32_t sig_size, sig_head, sig_n;
	/* how long it held work, or its caller's backlog did (the flow was
	 * backlogged: shim_sq_queued()) */
	uint64_t queued_since;  /* since then (0: idle, or not known) */
	uint64_t queued_ns;     /* summed over the QP's life */
	uint64_t queued_pub_us; /* ... of which published (drain_queued_locked()) */
};

/* @cap: the application's max_send_wr (0: unknown, never known).  Returns
 * 0 or -ENOMEM (then never known either). */
int shim_sq_init(struct shim_sq *sq, uint32_t cap);
void shim_sq_fini(struct shim_sq *sq);
/* The QP went to RESET: its send queue is empty and counted again. */
void shim_sq_reset(struct shim_sq *sq);
/* QPs whose send queue is known: their completions must all be seen, so
 * the poll wrappers look at every completion while this is not 0.  (A QP
 * that never posts through the pacer, an unmanaged one, is never watched.) */
extern _Atomic unsigned shim_sq_watched;
/* A post or completion was not counted: unknown until the next RESET.
 * Lock free (the direct post paths call it). */
static inline void shim_sq_lost(struct shim_sq *sq)
{
	if (atomic_load_explicit(&sq->known, memory_order_relaxed) != SHIM_SQ_LOST &&
	    atomic_exchange_explicit(&sq->known, SHIM_SQ_LOST, memory_order_relaxed) ==
		    SHIM_SQ_KNOWN)
		atomic_fetch_sub_explicit(&shim_sq_watched, 1, memory_order_relaxed);
}
static inline int shim_sq_known(const struct shim_sq *sq)
{
	return atomic_load_explicit(&sq->known, memory_order_relaxed) != SHIM_SQ_LOST;
}
/* The provider took one WR; @signaled: it will complete with a CQE. */
void shim_sq_posted(struct shim_sq *sq, int signaled);
/* A send completion of the QP was polled (@success: IBV_WC_SUCCESS). */
void shim_sq_completed(struct shim_sq *sq, int success);
/* At @now the queue holds work or the caller's backlog does (@backlog), or
 * neither: adds the time since the last call during which one did to
 * queued_ns.  Counted only while known (a period during which the count got
 * lost is dropped). */
void shim_sq_queued(struct shim_sq *sq, uint64_t now, int backlog);
/* Entries the provider holds (valid while known). */
static inline uint64_t shim_sq_held(const struct shim_sq *sq)
{
	return sq->posted - sq->done;
}

#endif

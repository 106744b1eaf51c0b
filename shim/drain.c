// SPDX-License-Identifier: MIT
/* Draining a QP's backlog (see drain.h): what the tokens, the order barrier
 * and the split window allow goes to the provider, in the application's
 * order; a refused or failed message fails with what follows it.  Pacer
 * layer; may call: wrpost, order, backlogs, the splitter (splitjob,
 * splitmsg), the daemon link's view (client.h), the per-QP state (registry,
 * inject, sq), log. */
#include "drain.h"

#include <errno.h>
#include <stdlib.h>

#include "backlogs.h"
#include "bucket.h"
#include "vclock.h"
#include "inject.h"
#include "log.h"
#include "order.h"
#include "splitjob.h"
#include "splitmsg.h"
#include "vops.h"
#include "wrpost.h"

#define WINDOW_CARRY_NS 8000000ull /* a window's hold banked at most (backlog_take()) */

/* A backlogged WR the provider refused (QP in error, ...): the application
 * was told "posted", so it gets the completion a flushed WR gets, and so
 * does everything queued behind it. */
static void fail_backlog(struct shim_qp *q, int rc)
{
	struct pend_wr *p;

	shim_log("QP %u: provider refused a paced WR (%d): flushing %zu queued WRs",
		 q->qp->qp_num, rc, q->bl_len);
	while ((p = q->bl_head)) {
		struct ibv_wc wc = { .wr_id = p->wr.wr_id, .status = IBV_WC_WR_FLUSH_ERR,
				     .opcode = shim_wc_opcode(p->wr.opcode), .qp_num = q->qp->qp_num };

		shim_inject_wc(q->qp->send_cq, &wc);
		q->bl_head = p->next;
		free(p);
	}
	q->bl_tail = NULL;
	q->bl_len = 0;
}

/* A chunk of the message at the head failed: the application's WR fails
 * with that status, as the QP would natively go to the error state and
 * flush what follows. */
static void fail_split(struct shim_qp *q, struct pend_wr *p)
{
	struct ibv_wc wc = { .wr_id = p->wr.wr_id, .status = (enum ibv_wc_status)(p->failed - 1),
			     .opcode = shim_wc_opcode(p->wr.opcode), .qp_num = q->qp->qp_num };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int saved = shim_busy;

	shim_log("QP %u: a split chunk failed (%s): failing the message", q->qp->qp_num,
		 ibv_wc_status_str(wc.status));
	q->bl_head = p->next;
	q->bl_len--;
	free(p);
	/* flushes what the provider holds; our own call, made with q->lock
	 * held (maybe from the application's ibv_poll_cq): not intercepted,
	 * or jst_modify_qp -> shim_pace_update would take q->lock again */
	shim_sq_lost(&q->sq);
	shim_busy = 1;
	shim_vops()->modify_qp(q->qp, &a, IBV_QP_STATE);
	shim_busy = saved;
	/* after the error state: its completion comes behind the flushes of
	 * the WRs posted before it (inject.h) */
	shim_inject_wc(q->qp->send_cq, &wc);
	fail_backlog(q, EIO);
}

/* @p (at the head, not started) may not be split after all: whole. */
static void unsplit(struct shim_qp *q, struct pend_wr *p)
{
	if (p->kind != SPLITMSG_ONE_SIDED) {
		splitmsg_make_whole(q, p);
		return;
	}
	p->chunk = 0;
	p->n_chunks = 1;
	p->zfin = 0;
	p->went_whole = 1;
}

/* @q's backlog stopped at @now for a token due in @wait ns: the wait is
 * the grant's, counted in token_wait_ns (drain_locked()).  It spent what
 * a window hold had banked (backlog_take()). */
static uint64_t token_due(struct shim_qp *q, uint64_t now, uint64_t wait)
{
	q->held_since = 0;
	/* (the clock again: @now was read before the drain's posts, and a
	 * software NIC's post does its packet work in the call) */
	q->tw_start = shim_now_ns();
	q->tw_due = now + wait;
	return now + wait;
}

/* Take a token of @cost for @q's backlog at @now: 0, or the ns until it is
 * due.  A take banks at most wrpost_burst(): when the drain comes later
 * than that after the bucket ran dry (the poster was not scheduled, or
 * the split window held the chunks while their completions were late),
 * the rest of the grant is lost.  That time, counted from when the
 * backlog began, is the QP's tokens_lost_ns (JUSTITIA_STATS): what keeps
 * a backlogged flow below its grant other than its tokens.
 *
 * Except a window's hold: a backlog whose last drains stopped because its
 * chunks' completions had not come (held_since, up to WINDOW_CARRY_NS of
 * it) banks that time on top, so the chunks that go when they come catch
 * up with the grant.  The flow did not leave its grant unused: its NIC
 * was late (on Soft-RoCE, the guest's CPU not scheduled for 6 ms, which
 * the 4 ms bank lost 3-6% of the grant to).  What goes at once stays
 * bounded by the split window; the first drain stopped by a token again
 * ends the carry (token_due()).  A wake-up late for a token carries
 * nothing: that is the poster's delay, which the bank already covers. */
static uint64_t backlog_take(struct shim_qp *q, struct jst_flow_stats *st, int cls,
			     uint64_t now, uint64_t cost)
{
	uint64_t burst = wrpost_burst(cls, cost), bank;
	uint64_t from = atomic_load_explicit(&st->bucket_vtime_ns, memory_order_relaxed);

	if (q->held_since && now > q->held_since)
		burst += now - q->held_since < WINDOW_CARRY_NS ? now - q->held_since
							       : WINDOW_CARRY_NS;
	bank = bucket_bank_ns(cost, burst);
	if (from < q->busy_since)
		from = q->busy_since;
	/* (a take of nothing, a split message's final, leaves the bucket as
	 * it is: the next take counts that span) */
	if (cost && q->busy && now > bank && now - bank > from)
		atomic_fetch_add_explicit(&q->st.tokens_lost_ns, now - bank - from,
					  memory_order_relaxed);
	return bucket_take(&st->bucket_vtime_ns, now, cost, burst);
}

/* The split window of @p (at least what it had so far, and @ahead's: a
 * window never shrinks, splitjob.c) for a chunk of its size. */
static uint32_t data_window(struct shim_qp *q, const struct jst_flow_ctl *slot,
			    struct pend_wr *p, const struct pend_wr *ahead, int direct)
{
	uint32_t window = splitjob_window(q, slot, p->chunk, direct);

	if (window < p->window)
		window = p->window;
	if (ahead && window < ahead->window)
		window = ahead->window;
	p->window = (uint8_t)window;
	return window;
}

/* Post @p's data chunks, each paid for, while fewer than @window are in
 * flight on the split QP (with those of the message @ahead of it, if any).
 * Returns the time a token is due, else 0 (the window is full, or every
 * data chunk went, or one failed: p->failed). */
static uint64_t post_data(struct shim_qp *q, struct pend_wr *p, const struct pend_wr *ahead,
			  uint32_t window, uint64_t now)
{
	const struct jst_flow_ctl *slot = atomic_load_explicit(&q->slot, memory_order_acquire);
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	int cls = atomic_load_explicit(&q->cls, memory_order_relaxed);
	int direct = atomic_load_explicit(&q->direct, memory_order_relaxed);
	uint32_t before = ahead ? ahead->inflight : 0;

	while (!p->failed && p->next_chunk + 1 < p->n_chunks && before + p->inflight < window) {
		int rc;

		if (!direct && slot && st && !p->paid) {
			uint64_t wait = backlog_take(q, st, cls, now,
						     wrpost_cost_ns(cls, slot, p->chunk));

			if (wait)
				return token_due(q, now, wait);
		}
		p->paid = 1;
		rc = splitjob_post_chunk(q, p, splitjob_data_chunk(p, p->next_chunk), window);
		if (rc && shim_no_room(rc) && before + p->inflight && !q->split.c_since_sig)
			break; /* its (signaled) completions make room */
		if (rc) {
			p->failed = 1 + IBV_WC_LOC_QP_OP_ERR;
			break;
		}
		p->paid = 0;
		p->next_chunk++;
	}
	return 0;
}

/* Following message.
 *
 * The message at the head has posted its every data chunk and waits for
 * their completions, a round trip, before its final WR goes on the
 * application's QP (split.h): at line rate a chunk round trip per message
 * left idle.  The next message's data chunks may go in that time, on the
 * same split QP, behind the head's (RC executes them in that order at the
 * responder), when nothing the peer or the application can observe
 * changes:
 *
 * - the head's final moves no bytes (p->zfin: an RDMA WRITE without
 *   immediate or an RDMA READ): it has no effect on remote memory that the
 *   next message's data could overtake.  A WRITE_WITH_IMM's final (its
 *   immediate tells the receiver the data is there) or a SEND's would let
 *   the receiver see the next message's data land before the notification
 *   of this one: those keep waiting;
 * - the next one is split the same way (one-sided, zero-length final) and
 *   of the same opcode, so the responder sees the WRITEs (or the READs) of
 *   the unsplit order, in that order, on one QP.  A READ then a WRITE
 *   could take the WRITE's local bytes before the READ's response landed
 *   there, a WRITE then a READ needs none of this: both wait;
 * - it does not carry IBV_SEND_FENCE: a fenced WR starts only when the WRs
 *   before it completed, and so do its chunks;
 * - nothing went on the application's QP since (no barrier owed: order.h);
 * - the application's completions do not move: each final still goes on
 *   its QP only when all of its message's chunks completed, in order, and
 *   no WR more is posted there (max_send_wr is untouched).
 *
 * And only when the round trip would be lost: a flow its tokens hold back
 * makes up for it from its bucket (the credit it banked meanwhile goes
 * back to back), so it gains nothing by following and goes as before; one
 * that has banked half of all it may (wrpost_burst()) runs below its
 * grant, held by its window and these round trips (or unpaced: direct).
 *
 * A chunk of the head that fails puts the split QP in error: the next
 * message's chunks behind it are flushed without executing, and the
 * backlog (that message with it) fails as before (fail_split()).
 * Returns the time a token is due, else 0. */
static uint64_t follow_locked(struct shim_qp *q, struct pend_wr *p, uint64_t now)
{
	const struct jst_flow_ctl *slot = atomic_load_explicit(&q->slot, memory_order_acquire);
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	int cls = atomic_load_explicit(&q->cls, memory_order_relaxed);
	int direct = atomic_load_explicit(&q->direct, memory_order_relaxed);
	struct pend_wr *n = p->next;

	if (!n || !p->zfin || !n->zfin || p->failed || p->next_chunk + 1 < p->n_chunks ||
	    n->failed || n->phase != SPLITMSG_DATA || n->wr.opcode != p->wr.opcode ||
	    (n->wr.send_flags & IBV_SEND_FENCE) || q->ord_barrier ||
	    atomic_load_explicit(&q->ord_dirty, memory_order_relaxed))
		return 0;
	if (!direct && slot && st) {
		uint64_t v = atomic_load_explicit(&st->bucket_vtime_ns, memory_order_relaxed);

		if (v + wrpost_burst(cls, wrpost_cost_ns(cls, slot, n->chunk)) / 2 > now)
			return 0; /* held by its tokens */
	}
	return post_data(q, n, p, data_window(q, slot, n, p, direct), now);
}

/* Post what the tokens allow (drain_locked()). */
static uint64_t drain_backlog_locked(struct shim_qp *q, uint64_t now)
{
	const struct jst_flow_ctl *slot = atomic_load_explicit(&q->slot, memory_order_acquire);
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	int cls = atomic_load_explicit(&q->cls, memory_order_relaxed);
	int direct = atomic_load_explicit(&q->direct, memory_order_relaxed);
	struct pend_wr *p;
	uint64_t due;

	while ((p = q->bl_head)) {
		int rc;

		if (!p->chunk && !direct && !p->went_whole) {
			/* queued whole while the chunk was larger (before a
			 * latency flow registered, say): a backlog of
			 * max_send_wr big messages would otherwise go whole,
			 * head-of-line blocking the latency flow for seconds */
			int kind = SPLITMSG_ONE_SIDED;
			uint32_t chunk = wrpost_split_size(q, slot, &p->wr, &kind);

			if (chunk)
				splitjob_prepare(p, chunk, kind);
		}
		if (p->chunk && !p->next_chunk && !p->inflight &&
		    (p->phase == SPLITMSG_HDR ||
		     (p->kind == SPLITMSG_ONE_SIDED && p->phase == SPLITMSG_DATA))) {
			/* not before what the application's QP took earlier */
			int64_t w = order_wait_locked(q, p, now);

			if (w > 0)
				return (uint64_t)w; /* the barrier's completion wakes us */
			if (w < 0)
				unsplit(q, p);
		}
		if (p->chunk && p->phase == SPLITMSG_HDR) {
			/* two-sided: the peer's shim must say where first */
			if (q->split.msg.tx_off || splitmsg_send_hdr(q, p, now))
				splitmsg_make_whole(q, p);
		}
		if (p->chunk && p->phase == SPLITMSG_WAIT) {
			if (now < p->deadline_ns)
				return p->deadline_ns; /* its READY wakes us before */
			shim_log("QP %u: the peer's shim did not answer a split request: "
				 "SENDs go whole", q->qp->qp_num);
			q->split.msg.tx_off = 1;
			splitmsg_make_whole(q, p);
		}
		if (p->chunk) {
			uint32_t window = data_window(q, slot, p, 0, direct);

			due = post_data(q, p, 0, window, now);

			if (due)
				return due;
			if (p->inflight) {
				due = follow_locked(q, p, now);
				if (!due && !q->held_since)
					q->held_since = now; /* its completions wake us */
				return due;
			}
			if (p->failed) {
				fail_split(q, p);
				break;
			}
		}
		if (!direct && slot && st && !p->paid) {
			uint64_t last = !p->chunk ? p->cost_bytes
				      : p->kind == SPLITMSG_SEND ? p->chunk
				      : p->zfin ? 0
				      : p->cost_bytes - (uint64_t)(p->n_chunks - 1) * p->chunk;
			uint64_t wait = backlog_take(q, st, cls, now, wrpost_cost_ns(cls, slot, last));

			if (wait)
				return token_due(q, now, wait);
		}
		p->paid = 1;
		if (!p->chunk && wrpost_windowed_qp(q)) {
			due = 0;
			rc = wrpost_windowed(q, &p->wr, p->wr_api, now, &due);
			if (rc == -EAGAIN)
				return due; /* a tag's completion drains it before */
		} else {
			rc = p->chunk ? splitjob_post_chunk(q, p, splitjob_final_chunk(p), 0)
				      : wrpost_one(q, &p->wr, p->wr_api);
		}
		if (shim_no_room(rc))
			return 0; /* (paid for: the next drain posts it first) */
		p->paid = 0;
		if (rc) {
			fail_backlog(q, rc);
			break;
		}
		q->bl_head = p->next;
		if (!q->bl_head)
			q->bl_tail = NULL;
		q->bl_len--;
		free(p);
	}
	if (!q->bl_head) {
		q->held_since = 0;
		backlogs_remove(q);
		drain_set_fast_locked(q);
		/* off the thread's list: only an event brings it back for
		 * the peer's split requests */
		splitjob_arm_locked(q);
	}
	return 0;
}

/* Post what the tokens allow.  Called with q->lock held; returns the time
 * the next token is due (0 = nothing due: empty, or waiting for split
 * completions, which wake the thread themselves).  The time its backlog
 * waited for a token since the last drain, up to when the token was due,
 * is the flow's token_wait_ns: how much the grant held it back (the
 * daemon's SHARE mode, daemon/share.h).  A drain that comes later than the
 * token (the thread was not scheduled, or was busy in a provider's post
 * doing a software NIC's work) is not the grant's doing. */
uint64_t drain_locked(struct shim_qp *q, uint64_t now)
{
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	uint64_t due, until;

	if (q->tw_since) {
		until = now < q->tw_due ? now : q->tw_due;
		if (st && until > q->tw_since)
			atomic_fetch_add_explicit(&st->token_wait_ns, until - q->tw_since,
						  memory_order_relaxed);
	}
	q->tw_start = 0;
	due = drain_backlog_locked(q, now);
	q->tw_since = q->tw_start < q->tw_due ? q->tw_start : 0;
	drain_queued_locked(q, now);
	return due;
}

void drain_queued_locked(struct shim_qp *q, uint64_t now)
{
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	uint64_t us;

	shim_sq_queued(&q->sq, now, q->bl_head != NULL);
	us = q->sq.queued_ns / 1000;
	if (st && us != q->sq.queued_pub_us)
		atomic_fetch_add_explicit(&st->queued_us, (uint32_t)(us - q->sq.queued_pub_us),
					  memory_order_relaxed);
	q->sq.queued_pub_us = us;
}

/* Reap, post what the tokens allow, and say when the next token is due (as
 * drain_locked).  A QP whose next step is a token due within LAZY_NS does
 * not need the split CQ's events: the thread wakes for the token anyway and
 * reaps then, which saves it a wake-up per chunk.  Any other wait (for
 * completions, for the peer's answer, for a distant token) arms the CQ.
 * Called with q->lock held. */
uint64_t drain_service_locked(struct shim_qp *q, uint64_t now)
{
	uint64_t due;

	splitjob_reap_locked(q);
	due = q->bl_head ? drain_locked(q, now) : 0;
	if (!q->split.ch || q->split.armed || (due && due - now <= LAZY_NS) ||
	    (q->bl_head && shim_app_polling(q, now)))
		return due;
	splitjob_arm_locked(q);
	/* what that reaped may have opened the window */
	return q->bl_head ? drain_locked(q, now) : 0;
}

/* Latency class, uncounted: the one-branch post path.  Never while a
 * backlog drains: a WR taking the fast path would overtake it.  A QP with
 * a split QP is never fast: two-sided splits count the SENDs it posts
 * (splitmsg.c).  Called with q->lock held. */
void drain_set_fast_locked(struct shim_qp *q)
{
	int fast = !q->bl_head &&
		   atomic_load_explicit(&q->cls, memory_order_relaxed) == JST_CLASS_LATENCY &&
		   !shim_count_all && !q->split.qp &&
		   !atomic_load_explicit(&q->classify.on, memory_order_relaxed);

	if (fast)
		shim_sq_lost(&q->sq); /* its posts are not counted (sq.h) */
	atomic_store_explicit(&q->fast, fast, memory_order_relaxed);
}

// SPDX-License-Identifier: MIT
/* Pacing of throughput and bandwidth QPs (see pace.h).
 *
 * Threads: application threads post; one progress thread per process posts
 * backlogs when tokens are due and re-reads the daemon's grants every
 * TICK_NS.  It sleeps in epoll on a timerfd (next token due or next tick)
 * and an eventfd (a backlog appeared): no core spins.
 * Locks: registry lock -> q->lock -> busy-list lock, never the other way. */
#include "pace.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "bucket.h"
#include "clock.h"
#include "classify.h"
#include "client.h"
#include "inject.h"
#include "log.h"
#include "shim.h"
#include "slot.h"
#include "split.h"
#include "window.h"

#define TICK_NS 10000000ull          /* re-read grants, check the daemon */
#define BURST_NS 200000ull           /* tokens a quiet flow may bank */
#define LATE_NS 4000000ull           /* ... plus this much for a late wake-up */
#define APP_POLL_NS 1000000ull       /* the app polled this recently: it paces */
#define ORDER_WAIT_NS 100000000ull   /* an ordering barrier's completion, at most */
#define BACKLOG_MAX 65536            /* when max_send_wr is unknown */
#define LAZY_NS 2000000ull            /* a token due sooner: no split CQ event */
#define EV_WAKE 1                    /* epoll tags; anything larger is a QP */
#define EV_TIMER 2

static struct {
	pthread_mutex_t lock;            /* busy list */
	struct shim_qp *busy;
	pid_t pid;                       /* process whose thread runs */
	int efd, tfd, ep;
	pthread_t th;
	_Atomic pid_t started;           /* pid once its thread runs */
} pg = { .lock = PTHREAD_MUTEX_INITIALIZER, .efd = -1, .tfd = -1, .ep = -1 };

_Atomic unsigned shim_pace_queued;

/* JUSTITIA_STATS "pacer" (stats.h) */
static _Atomic uint64_t n_wakeups, n_thread_drains, n_poll_drains;

static size_t wr_count(const struct ibv_send_wr *wr)
{
	size_t n = 0;

	for (; wr; wr = wr->next)
		n++;
	return n;
}

static uint64_t wr_bytes(const struct ibv_send_wr *wr)
{
	uint64_t b = 0;

	for (int i = 0; i < wr->num_sge; i++)
		b += wr->sg_list[i].length;
	return b;
}

/* What one WR costs in the flow's bucket, in ns at its granted rate. */
static uint64_t wr_cost_ns(int cls, const struct jst_flow_ctl *slot, uint64_t bytes)
{
	if (cls == JST_CLASS_THROUGHPUT) {
		uint64_t ops = atomic_load_explicit(&slot->ops_per_s, memory_order_relaxed);

		return ops ? 1000000000ull / ops : 0;
	}
	return bucket_cost_ns(bytes, atomic_load_explicit(&slot->rate_bps, memory_order_relaxed));
}

static int daemon_alive(const struct jst_flow_ctl *slot)
{
	const struct jst_shm_global *g = shim_client_global();
	uint64_t hb;

	if (!g || !slot)
		return 0;
	if (!(atomic_load_explicit(&g->flags, memory_order_acquire) & JST_G_RUNNING))
		return 0;
	hb = atomic_load_explicit(&g->heartbeat_ns, memory_order_relaxed);
	/* the same age as client.c's: between 1 and 2 s of a busy daemon's
	 * silence the QPs went direct (unpaced) while the client still
	 * called it alive */
	return hb + JST_HEARTBEAT_STALE_NS > clock_now_ns();
}

/* @q's slot if the daemon manages it as a flow the shim may hold back: an
 * RC QP, not latency, the daemon alive and the slot still @q's flow's (not
 * freed or recycled for another flow, shim/slot.h); else NULL. */
static const struct jst_flow_ctl *managed_slot(struct shim_qp *q)
{
	const struct jst_flow_ctl *slot = atomic_load_explicit(&q->slot, memory_order_acquire);
	struct shim_slot_view v;

	if (!slot || atomic_load_explicit(&q->cls, memory_order_relaxed) == JST_CLASS_LATENCY ||
	    q->type != IBV_QPT_RC || !daemon_alive(slot) ||
	    shim_slot_read(slot, q->flow_id, &v) == -ESTALE)
		return NULL;
	return slot;
}

/* Paced means: managed (@slot, managed_slot()) and the daemon grants a
 * finite rate. */
static int wants_pacing(struct shim_qp *q, const struct jst_flow_ctl *slot)
{
	int cls = atomic_load_explicit(&q->cls, memory_order_relaxed);

	if (!slot)
		return 0;
	if (atomic_load_explicit(&q->split.state, memory_order_relaxed) == SPLIT_READY &&
	    (atomic_load_explicit(&slot->flags, memory_order_relaxed) & JST_F_SPLIT))
		return 1;
	if (!(atomic_load_explicit(&slot->flags, memory_order_relaxed) & JST_F_PACE))
		return 0;
	if (cls == JST_CLASS_THROUGHPUT)
		return atomic_load_explicit(&slot->ops_per_s, memory_order_relaxed) != 0;
	return atomic_load_explicit(&slot->rate_bps, memory_order_relaxed) != 0;
}

/* The split size for @wr, or 0 when it goes whole: RDMA WRITE, READ,
 * SEND and WRITE_WITH_IMM larger than the chunk, not inline, on a QP whose
 * split QP is connected and whose flow the daemon says to split.  *kind:
 * enum splitmsg_kind. */
static uint32_t split_size(struct shim_qp *q, const struct jst_flow_ctl *slot,
			   const struct ibv_send_wr *wr, int *kind)
{
	uint32_t chunk;

	if (!slot || atomic_load_explicit(&q->split.state, memory_order_relaxed) != SPLIT_READY ||
	    !(atomic_load_explicit(&slot->flags, memory_order_relaxed) & JST_F_SPLIT))
		return 0;
	*kind = splitmsg_kind_of(q, wr);
	if (*kind < 0 || (wr->send_flags & IBV_SEND_INLINE) || wr->num_sge > SPLIT_MAX_SGE)
		return 0;
	chunk = atomic_load_explicit(&slot->chunk_bytes, memory_order_relaxed);
	return chunk && wr_bytes(wr) > chunk ? chunk : 0;
}

/* The credit a backlog may bank for a take of @cost: a wake-up up to
 * LATE_NS late (a scheduler tick) loses no tokens, so the flow fills its
 * grant; the window of chunks in flight still bounds what goes at once.
 * With no latency flow to protect (pace mode share: large tokens), a
 * whole token more: a late wake-up or a slow post is made up by the next
 * two going back to back, and no grant is lost to the host's scheduler.
 * (A post that finds no backlog gets BURST_NS: it is not late.) */
static uint64_t burst_for(uint64_t cost)
{
	const struct jst_shm_global *g = shim_client_global();
	uint64_t late = LATE_NS;

	if (g && atomic_load_explicit(&g->pace_mode, memory_order_relaxed) == JST_PACE_SHARE &&
	    cost > late)
		late = cost;
	return cost + late > BURST_NS ? cost + late : BURST_NS;
}

/* Whether the application advanced @q's backlog from its own
 * ibv_poll_cq within APP_POLL_NS: while it keeps doing so, the progress
 * thread neither arms @q's split CQ, nor wakes for its tokens, nor is woken
 * when its backlog starts again (paper Appendix D: enforcement where the
 * app already runs); it only looks a little after each token is due, in
 * case the application stopped polling. */
static int app_polling(const struct shim_qp *q, uint64_t now)
{
	uint64_t t = atomic_load_explicit(&q->app_poll_ns, memory_order_relaxed);

	return t && now - t < APP_POLL_NS;
}

/* ------------------------------------------------------------ backlog */

static void busy_add(struct shim_qp *q, uint64_t now)
{
	uint64_t one = 1;

	if (q->busy)
		return;
	q->busy = 1;
	pthread_mutex_lock(&pg.lock);
	q->busy_next = pg.busy;
	pg.busy = q;
	atomic_fetch_add_explicit(&shim_pace_queued, 1, memory_order_release);
	pthread_mutex_unlock(&pg.lock);
	/* (an application that polls drains it itself; the thread looks
	 * within TICK_NS anyway) */
	if (!app_polling(q, now) && pg.efd >= 0 && write(pg.efd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the thread is awake anyway */
	}
}

static void busy_remove(struct shim_qp *q)
{
	struct shim_qp **pp;

	if (!q->busy)
		return;
	pthread_mutex_lock(&pg.lock);
	for (pp = &pg.busy; *pp; pp = &(*pp)->busy_next)
		if (*pp == q) {
			*pp = q->busy_next;
			atomic_fetch_sub_explicit(&shim_pace_queued, 1, memory_order_release);
			break;
		}
	pthread_mutex_unlock(&pg.lock);
	q->busy = 0;
	q->busy_next = NULL;
}

/* Copy a WR (and its inline payload, which the application may reuse as
 * soon as the post returns). */
static struct pend_wr *pend_copy(const struct ibv_send_wr *wr)
{
	size_t n = wr->num_sge > 0 ? (size_t)wr->num_sge : 0, inl = 0, off;
	struct pend_wr *p;

	if (wr->send_flags & IBV_SEND_INLINE)
		inl = wr_bytes(wr);
	p = malloc(sizeof(*p) + n * sizeof(struct ibv_sge) + inl);
	if (!p)
		return NULL;
	p->next = NULL;
	p->chunk = 0;
	p->n_chunks = 1;
	p->next_chunk = 0;
	p->inflight = 0;
	p->failed = 0;
	p->kind = SPLITMSG_ONE_SIDED;
	p->phase = SPLITMSG_DATA;
	p->nseg = 0;
	p->went_whole = 0;
	p->paid = 0;
	p->window = 0;
	p->seq = 0;
	p->deadline_ns = 0;
	p->wr_api = 0;
	p->wr = *wr;
	p->wr.next = NULL;
	p->wr.sg_list = p->sge;
	memcpy(p->sge, wr->sg_list, n * sizeof(struct ibv_sge));
	p->cost_bytes = wr_bytes(wr);
	if (inl) {
		char *data = (char *)&p->sge[n];

		off = 0;
		for (size_t i = 0; i < n; i++) {
			memcpy(data + off, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			p->sge[i].addr = (uintptr_t)(data + off);
			off += wr->sg_list[i].length;
		}
	}
	return p;
}

/* @p goes in chunks of @chunk bytes; a two-sided one asks the peer first. */
static void pend_split(struct pend_wr *p, uint32_t chunk, int kind)
{
	p->chunk = chunk;
	p->n_chunks = (uint32_t)((p->cost_bytes + chunk - 1) / chunk);
	p->kind = (uint8_t)kind;
	p->phase = kind == SPLITMSG_ONE_SIDED ? SPLITMSG_DATA : SPLITMSG_HDR;
}

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
	case IBV_WR_LOCAL_INV: return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW: return IBV_WC_BIND_MW;
	case IBV_WR_TSO: return IBV_WC_TSO;
	case IBV_WR_ATOMIC_WRITE: return IBV_WC_ATOMIC_WRITE;
	default: return IBV_WC_SEND;
	}
}

/* Whether the provider completes @wr on @q with a CQE. */
static int signaled(const struct shim_qp *q, const struct ibv_send_wr *wr)
{
	return q->classify.sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
}

/* Post @wr alone on the application's QP, counted in its send queue. */
static int post_app_qp(struct shim_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	int rc = q->sctx->post_send(q->qp, wr, bad);

	if (!rc)
		shim_sq_posted(&q->sq, signaled(q, wr));
	return rc;
}

/* The provider has no room on the application's QP now (its send queue
 * holds the shim's barrier as well, or the application's count is not
 * known): the WR waits in the backlog for a completion to free an entry,
 * and nothing queued on a healthy QP is flushed. */
static int no_room(int rc)
{
	return rc == ENOMEM || rc == -ENOMEM;
}

/* How many more WRs the application may post on @q: its max_send_wr less
 * what the provider holds of its WRs (sq.h; when that is not known, only
 * the backlog is bounded) and what the backlog holds.  The shim's own
 * barrier in the send queue is not the application's. */
static size_t app_room(const struct shim_qp *q)
{
	size_t cap = q->max_send_wr ? q->max_send_wr : BACKLOG_MAX;
	uint64_t used = q->bl_len;

	if (shim_sq_known(&q->sq)) {
		uint64_t held = shim_sq_held(&q->sq);

		used += q->ord_barrier && held ? held - 1 : held;
	}
	return used < cap ? cap - (size_t)used : 0;
}

/* Post one WR for the application (counts it like the direct path). */
static int post_one(struct shim_qp *q, struct ibv_send_wr *wr, int wr_api)
{
	struct ibv_send_wr *bad = NULL;
	uint64_t bytes = 0, n = 0;
	int rc;

	rc = post_app_qp(q, wr, &bad);
	if (!rc || bad != wr)
		atomic_store_explicit(&q->ord_dirty, 1, memory_order_relaxed);
	if (!wr_api) /* (the application's call is counted once: pace_post) */
		n = stats_account_classic(&q->st, wr, rc ? bad : NULL, rc, &bytes);
	else if (!rc)
		n = stats_account_wr_api(&q->st, wr, NULL, &bytes);
	shim_ops_publish(q, n, bytes);
	return rc;
}

/* ------------------------------------------------------------ window
 *
 * A direct QP of a managed flow (pace mode off) keeps at most
 * shim_window_bytes in flight (window.h): its WRs are posted one at a time,
 * every so often one as a tag, and what does not fit waits in the backlog
 * until a tag's completion comes back through the application's poll. */

static int window_on(const struct shim_qp *q)
{
	return atomic_load_explicit(&q->win.on, memory_order_relaxed) &&
	       atomic_load_explicit(&q->direct, memory_order_relaxed);
}

/* Post @wr (alone) on a windowed QP if it fits: 0 posted, -EAGAIN it must
 * wait (*due: when to give up waiting), else the provider's error. */
static int post_windowed(struct shim_qp *q, const struct ibv_send_wr *wr, int wr_api, uint64_t now,
			 uint64_t *due)
{
	struct ibv_send_wr one = *wr;
	uint64_t bytes = wr_bytes(wr);
	int tag, rc, app_signaled;

	if (!shim_window_admit(&q->win, bytes, now)) {
		*due = q->win.wait_since + SHIM_WINDOW_BLIND_NS;
		return -EAGAIN;
	}
	if (q->win.blind)
		shim_log_once("a QP's window tags did not come back through ibv_poll_cq within "
			      "2 s: its direct posts are not windowed any more");
	one.next = NULL;
	tag = shim_window_want_tag(&q->win, bytes);
	app_signaled = q->classify.sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	shim_window_post(&q->win, bytes, tag, wr->wr_id, app_signaled);
	if (tag) {
		one.wr_id = shim_pace_window_tag(q);
		one.send_flags |= IBV_SEND_SIGNALED;
	}
	rc = post_one(q, &one, wr_api);
	if (rc)
		shim_window_unpost(&q->win, bytes, tag);
	return rc;
}

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
				     .opcode = wc_opcode(p->wr.opcode), .qp_num = q->qp->qp_num };

		shim_inject_wc(q->qp->send_cq, &wc);
		q->bl_head = p->next;
		free(p);
	}
	q->bl_tail = NULL;
	q->bl_len = 0;
}

/* Chunk @k of a split message goes last, on the application's QP, as the
 * application's own WR: chunk 0 of a SEND (its data lands at the start of
 * the peer's receive buffer), the last chunk of anything else. */
static uint32_t final_chunk(const struct pend_wr *p)
{
	return p->kind == SPLITMSG_SEND ? 0 : p->n_chunks - 1;
}

/* The @i-th chunk that goes to the split QP. */
static uint32_t data_chunk(const struct pend_wr *p, uint32_t i)
{
	return p->kind == SPLITMSG_SEND ? i + 1 : i;
}

/* ------------------------------------------------------------ split window
 *
 * Data chunks in flight on the split QP: what the granted rate moves in a
 * chunk's completion time (post to reaped completion, averaged), plus two,
 * within [SPLIT_WINDOW, SPLIT_WINDOW_MAX]; the most while the QP is direct
 * (a message that started split drains unpaced).  A rate-limited flow never
 * has more in flight than that anyway (Little's law): the window only caps
 * what a delay estimate lagging behind could let go at once.  Chunks are
 * signaled every half window, when the window fills and at the message's
 * last; each completion says every chunk up to it is done (RC completes in
 * order), so the pacer reaps a few completions per window, not one per
 * chunk.  A message's window never shrinks: posting stops only at a full
 * window, whose last chunk is signaled, or at a token, after which more
 * chunks go; a smaller window could stop it behind unsignaled chunks,
 * whose completions nobody would ever see. */

static uint32_t split_window(const struct shim_qp *q, const struct jst_flow_ctl *slot,
			     uint32_t chunk, int direct)
{
	uint64_t rate = slot && !direct ? atomic_load_explicit(&slot->rate_bps, memory_order_relaxed)
					: 0;
	double w;

	if (direct)
		return SPLIT_WINDOW_MAX;
	if (!rate || !chunk)
		return SPLIT_WINDOW;
	w = (double)rate / 8.0 * (double)q->split.c_delay_ns / 1e9 / (double)chunk + 2;
	return w < SPLIT_WINDOW ? SPLIT_WINDOW : w > SPLIT_WINDOW_MAX ? SPLIT_WINDOW_MAX
								 : (uint32_t)w;
}

/* Post @w on the split QP as the next data chunk of @p (the message's last
 * when @last) in a window of @window. */
static int post_split(struct shim_qp *q, struct pend_wr *p, struct ibv_send_wr *w, int last,
		      uint32_t window)
{
	struct shim_split *sp = &q->split;
	struct ibv_send_wr *bad = NULL;
	uint64_t seq = sp->c_posted + 1;
	uint32_t every = window / 2 ? window / 2 : 1;
	int sig = last || sp->c_since_sig + 1 >= every || p->inflight + 1 >= window, rc;

	w->wr_id = seq << 3; /* (its low bits clear: not a control message) */
	w->send_flags = sig ? IBV_SEND_SIGNALED : 0;
	rc = q->sctx->post_send(sp->qp, w, &bad);
	if (rc)
		return rc;
	sp->c_posted = seq;
	sp->c_since_sig = sig ? 0 : sp->c_since_sig + 1;
	sp->c_post_ns[seq % SPLIT_WINDOW_MAX] = clock_now_ns();
	p->inflight++;
	return 0;
}

/* The split chunk @wc completed (a signaled one, or any on error): every
 * chunk up to it is done.  Called with q->lock held. */
static void split_chunk_done(struct shim_qp *q, const struct ibv_wc *wc, uint64_t now)
{
	struct shim_split *sp = &q->split;
	struct pend_wr *p = q->bl_head;
	uint64_t seq = wc->wr_id >> 3, n;

	/* chunks complete in order, for the job at the head; one from before
	 * a RESET is not */
	if (!p || seq <= sp->c_done || seq > sp->c_posted)
		return;
	n = seq - sp->c_done;
	sp->c_done = seq;
	p->inflight = p->inflight > n ? p->inflight - (uint32_t)n : 0;
	if (wc->status == IBV_WC_SUCCESS) {
		uint64_t t = sp->c_post_ns[seq % SPLIT_WINDOW_MAX], d = now > t ? now - t : 0;

		sp->c_delay_ns = sp->c_delay_ns ? (7 * sp->c_delay_ns + d) / 8 : d;
	} else if (!p->failed) {
		p->failed = 1 + wc->status;
	}
}

/* Post @w (SGEs @sg/@n) on the split QP as RDMA WRITEs into the peer's
 * receive buffer segments, for message bytes [@off, @off + @len); @last:
 * the message's last data chunk. */
static int post_to_segments(struct shim_qp *q, struct pend_wr *p, struct ibv_send_wr *w,
			    uint64_t off, uint64_t len, int last, uint32_t window)
{
	uint64_t at = off - p->chunk, seg0 = 0; /* segments cover [chunk, length) */
	struct ibv_sge sg[SPLIT_MAX_SGE];
	int posted = 0;

	for (unsigned i = 0; i < p->nseg && len; i++) {
		uint64_t s_end = seg0 + p->seg[i].len, take;
		int n, rc;

		if (at >= s_end) {
			seg0 = s_end;
			continue;
		}
		take = s_end - at < len ? s_end - at : len;
		n = shim_split_sges(p->sge, p->wr.num_sge, off, take, sg, SPLIT_MAX_SGE);
		if (n < 0)
			return EINVAL;
		w->sg_list = sg;
		w->num_sge = n;
		w->opcode = IBV_WR_RDMA_WRITE;
		w->wr.rdma.remote_addr = p->seg[i].addr + (at - seg0);
		w->wr.rdma.rkey = p->seg[i].rkey;
		rc = post_split(q, p, w, last && take == len, window);
		if (rc)
			return posted ? EIO : rc; /* (a part went: no retry) */
		posted = 1;
		off += take;
		at += take;
		len -= take;
		seg0 = s_end;
	}
	return len ? EINVAL : 0;
}

/* Chunk @k of a split message: on the split QP (in a window of @window),
 * or (the final one, see final_chunk()) as the application's own WR on its
 * QP. */
static int post_chunk(struct shim_qp *q, struct pend_wr *p, uint32_t k, uint32_t window)
{
	int last = k == data_chunk(p, p->n_chunks - 2);
	uint64_t off = (uint64_t)k * p->chunk, len = p->cost_bytes - off;
	struct ibv_sge sg[SPLIT_MAX_SGE];
	struct ibv_send_wr w = p->wr, *bad = NULL;
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	int n, rc;

	if (len > p->chunk)
		len = p->chunk;
	w.next = NULL;
	if (k != final_chunk(p)) {
		if (p->kind == SPLITMSG_SEND) {
			rc = post_to_segments(q, p, &w, off, len, last, window);
			goto out;
		}
		if (p->kind == SPLITMSG_WRITE_IMM)
			w.opcode = IBV_WR_RDMA_WRITE;
	}
	n = shim_split_sges(p->sge, p->wr.num_sge, off, len, sg, SPLIT_MAX_SGE);
	if (n < 0)
		return EINVAL;
	w.sg_list = sg;
	w.num_sge = n;
	if (p->kind != SPLITMSG_SEND)
		w.wr.rdma.remote_addr = p->wr.wr.rdma.remote_addr + off;
	if (k != final_chunk(p)) {
		rc = post_split(q, p, &w, last, window);
	} else {
		/* known before it can complete: the app may be polling.  An
		 * unsignaled final never completes successfully: nothing to
		 * remember, nothing a later WR could be mistaken for */
		int fin = signaled(q, &w);

		if (fin)
			splitmsg_tx_final(q, p->wr.wr_id, wc_opcode(p->wr.opcode), (uint32_t)len,
					  p->cost_bytes);
		rc = post_app_qp(q, &w, &bad);
		if (!rc) {
			atomic_store_explicit(&q->ord_dirty, 1, memory_order_relaxed);
			/* the application posted one WR of the whole length */
			uint64_t bytes, cnt = p->wr_api ? stats_account_wr_api(&q->st, &p->wr, NULL, &bytes)
						      : stats_account_classic(&q->st, &p->wr, NULL, 0, &bytes);

			atomic_fetch_add_explicit(&q->st.split[p->kind], 1, memory_order_relaxed);
			shim_ops_publish(q, cnt, bytes);
		} else if (fin) {
			splitmsg_tx_unfinal(q);
		}
	}
out:
	if (!rc && st)
		atomic_fetch_add_explicit(&st->chunks, 1, memory_order_relaxed);
	return rc;
}

/* A chunk of the message at the head failed: the application's WR fails
 * with that status, as the QP would natively go to the error state and
 * flush what follows. */
static void fail_split(struct shim_qp *q, struct pend_wr *p)
{
	struct ibv_wc wc = { .wr_id = p->wr.wr_id, .status = (enum ibv_wc_status)(p->failed - 1),
			     .opcode = wc_opcode(p->wr.opcode), .qp_num = q->qp->qp_num };
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
	ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
	shim_busy = saved;
	/* after the error state: its completion comes behind the flushes of
	 * the WRs posted before it (inject.h) */
	shim_inject_wc(q->qp->send_cq, &wc);
	fail_backlog(q, EIO);
}

static void reap_split_locked(struct shim_qp *q);
static void set_fast_locked(struct shim_qp *q);

/* Ask for the split CQ's next completion event, then reap what completed
 * before that (it raises none).  Called with q->lock held. */
static void arm_split_locked(struct shim_qp *q)
{
	struct shim_split *sp = &q->split;

	if (!sp->cq || !sp->ch || sp->armed)
		return;
	if (ibv_req_notify_cq(sp->cq, 0))
		shim_log_once("cannot arm a split CQ: split completions are seen at the next tick");
	sp->armed = true;
	reap_split_locked(q);
}

/* ------------------------------------------------------------ order
 *
 * Split chunks travel on the split QP, which RC orders with nothing on the
 * application's QP.  So before the first chunk of a message leaves, every
 * WR the application's QP took earlier (the application's direct posts, the
 * previous message's final chunk, ...) must have completed, or a chunk could
 * land first: a small WRITE followed by a large READ of the same bytes
 * would read stale data, a later large WRITE be overwritten by an earlier
 * small one, and a chunk's error flush WRs that had succeeded.
 *
 * The shim learns that from a barrier: a signaled zero-length RDMA
 * operation on the application's QP (no memory is accessed), whose
 * completion comes after every earlier WR's: a READ for a READ message and
 * a WRITE for a WRITE (with immediate), each with the message's own rkey
 * and address, which grant that access (Soft-RoCE checks the rkey's rights
 * even for zero bytes: a WRITE with a READ's rkey put the QP in error); a
 * WRITE with no rkey for a SEND (IBTA C9-88: a zero-length RDMA WRITE's
 * rkey is not checked).  It
 * completes on the application's send CQ, where the shim's ibv_poll_cq
 * drops it (shim_pace_barrier_done) and posts the chunks at once.  A QP
 * whose barrier does not come back within ORDER_WAIT_NS (its CQ is polled
 * through the extended API, or not while it waits) sends such messages
 * whole from then on: in order, unsplit.  IBV_SEND_FENCE is kept a fortiori:
 * nothing earlier is outstanding when the chunks start. */

int shim_order_barrier = 1;

static uint64_t barrier_tag(const struct shim_qp *q)
{
	return (uintptr_t)q | 1u;
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
	p->went_whole = 1;
}

/* Before @p's first chunk: 0 when it may go, else the time to look again
 * (a barrier is on its way); -1 when @p must go whole. */
static int64_t order_wait_locked(struct shim_qp *q, struct pend_wr *p, uint64_t now)
{
	struct ibv_send_wr b = { .wr_id = barrier_tag(q), .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED }, *bad = NULL;
	int rc;

	if (!shim_order_barrier ||
	    (!q->ord_barrier && !atomic_load_explicit(&q->ord_dirty, memory_order_relaxed)))
		return 0;
	if (q->ord_blind)
		return -1;
	if (q->ord_barrier) {
		if (now < q->ord_deadline_ns)
			return (int64_t)q->ord_deadline_ns;
		/* still behind what the QP took before it (4 MiB of a window
		 * take 200 ms on Soft-RoCE) while the application polled that
		 * CQ in the meantime: it comes */
		if (atomic_load_explicit(&q->app_poll_ns, memory_order_relaxed) + ORDER_WAIT_NS >
		    now) {
			q->ord_deadline_ns = now + ORDER_WAIT_NS;
			return (int64_t)q->ord_deadline_ns;
		}
		shim_log("QP %u: its ordering barrier did not come back through ibv_poll_cq "
			 "within %llu ms while the application did not poll: large messages go "
			 "whole on it", q->qp->qp_num, ORDER_WAIT_NS / 1000000);
		q->ord_blind = 1;
		return -1;
	}
	if (p->kind != SPLITMSG_SEND)
		b.wr.rdma = p->wr.wr.rdma;
	if (p->wr.opcode == IBV_WR_RDMA_READ)
		b.opcode = IBV_WR_RDMA_READ;
	rc = post_app_qp(q, &b, &bad);
	if (no_room(rc))
		return (int64_t)(now + LAZY_NS); /* a completion frees an entry */
	if (rc)
		return -1; /* whole, in order */
	atomic_store_explicit(&q->ord_dirty, 0, memory_order_relaxed);
	q->ord_barrier = 1;
	q->ord_deadline_ns = now + ORDER_WAIT_NS;
	return (int64_t)q->ord_deadline_ns;
}

/* @q's backlog stopped at @now for a token due in @wait ns: the wait is
 * the grant's, counted in token_wait_ns (drain_locked()). */
static uint64_t token_due(struct shim_qp *q, uint64_t now, uint64_t wait)
{
	/* (the clock again: @now was read before the drain's posts, and a
	 * software NIC's post does its packet work in the call) */
	q->tw_start = clock_now_ns();
	q->tw_due = now + wait;
	return now + wait;
}

/* Post what the tokens allow (drain_locked()). */
static uint64_t drain_backlog_locked(struct shim_qp *q, uint64_t now)
{
	const struct jst_flow_ctl *slot = atomic_load_explicit(&q->slot, memory_order_acquire);
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	int cls = atomic_load_explicit(&q->cls, memory_order_relaxed);
	int direct = atomic_load_explicit(&q->direct, memory_order_relaxed);
	struct pend_wr *p;

	while ((p = q->bl_head)) {
		int rc;

		if (!p->chunk && !direct && !p->went_whole) {
			/* queued whole while the chunk was larger (before a
			 * latency flow registered, say): a backlog of
			 * max_send_wr big messages would otherwise go whole,
			 * head-of-line blocking the latency flow for seconds */
			int kind = SPLITMSG_ONE_SIDED;
			uint32_t chunk = split_size(q, slot, &p->wr, &kind);

			if (chunk)
				pend_split(p, chunk, kind);
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
			uint32_t window = split_window(q, slot, p->chunk, direct);

			if (window < p->window)
				window = p->window;
			p->window = (uint8_t)window;

			/* split chunks, a window at a time, each paid for */
			while (!p->failed && p->next_chunk + 1 < p->n_chunks &&
			       p->inflight < window) {
				if (!direct && slot && st && !p->paid) {
					uint64_t cost = wr_cost_ns(cls, slot, p->chunk);
					uint64_t wait = bucket_take(&st->bucket_vtime_ns, now,
								    cost, burst_for(cost));

					if (wait)
						return token_due(q, now, wait);
				}
				p->paid = 1;
				rc = post_chunk(q, p, data_chunk(p, p->next_chunk), window);
				if (rc && no_room(rc) && p->inflight && !q->split.c_since_sig)
					break; /* its (signaled) completions make room */
				if (rc) {
					p->failed = 1 + IBV_WC_LOC_QP_OP_ERR;
					break;
				}
				p->paid = 0;
				p->next_chunk++;
			}
			if (p->inflight)
				return 0;
			if (p->failed) {
				fail_split(q, p);
				break;
			}
		}
		if (!direct && slot && st && !p->paid) {
			uint64_t last = !p->chunk ? p->cost_bytes
				      : p->kind == SPLITMSG_SEND ? p->chunk
				      : p->cost_bytes - (uint64_t)(p->n_chunks - 1) * p->chunk;
			uint64_t cost = wr_cost_ns(cls, slot, last);
			uint64_t wait = bucket_take(&st->bucket_vtime_ns, now, cost,
						    burst_for(cost));

			if (wait)
				return token_due(q, now, wait);
		}
		p->paid = 1;
		if (!p->chunk && window_on(q)) {
			uint64_t due = 0;

			rc = post_windowed(q, &p->wr, p->wr_api, now, &due);
			if (rc == -EAGAIN)
				return due; /* a tag's completion drains it before */
		} else {
			rc = p->chunk ? post_chunk(q, p, final_chunk(p), 0)
				      : post_one(q, &p->wr, p->wr_api);
		}
		if (no_room(rc))
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
		busy_remove(q);
		set_fast_locked(q);
		/* off the thread's list: only an event brings it back for
		 * the peer's split requests */
		arm_split_locked(q);
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
static uint64_t drain_locked(struct shim_qp *q, uint64_t now)
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
	return due;
}

/* Reap split-chunk completions.  Called with q->lock held. */
static void reap_split_locked(struct shim_qp *q)
{
	struct shim_split *sp = &q->split;
	struct ibv_wc wc[16];
	uint64_t now = 0;
	int n;

	if (!sp->cq)
		return;
	while ((n = q->sctx->poll_cq(sp->cq, 16, wc)) > 0) {
		if (!now)
			now = clock_now_ns();
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id & SPLITMSG_TAG_MASK)
				splitmsg_on_wc(q, &wc[i]);
			else
				split_chunk_done(q, &wc[i], now);
		}
	}
}

/* Reap, post what the tokens allow, and say when the next token is due (as
 * drain_locked).  A QP whose next step is a token due within LAZY_NS does
 * not need the split CQ's events: the thread wakes for the token anyway and
 * reaps then, which saves it a wake-up per chunk.  Any other wait (for
 * completions, for the peer's answer, for a distant token) arms the CQ.
 * Called with q->lock held. */
static uint64_t service_locked(struct shim_qp *q, uint64_t now)
{
	uint64_t due;

	reap_split_locked(q);
	due = q->bl_head ? drain_locked(q, now) : 0;
	if (!q->split.ch || q->split.armed || (due && due - now <= LAZY_NS) ||
	    (q->bl_head && app_polling(q, now)))
		return due;
	arm_split_locked(q);
	/* what that reaped may have opened the window */
	return q->bl_head ? drain_locked(q, now) : 0;
}

/* Completions of split chunks: the thread sleeps on the channel's fd. */
static void split_events(struct shim_qp *q, uint64_t now, uint64_t *next)
{
	struct shim_split *sp = &q->split;
	struct ibv_cq *cq;
	void *ctx;

	pthread_mutex_lock(&q->lock);
	if (!sp->ch) {
		pthread_mutex_unlock(&q->lock);
		return;
	}
	while (ibv_get_cq_event(sp->ch, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		sp->armed = false; /* re-armed when needed (service_locked) */
	}
	{
		uint64_t due = service_locked(q, now);

		if (due && due < *next)
			*next = due;
	}
	pthread_mutex_unlock(&q->lock);
}

/* ------------------------------------------------------------ post path */

static int pace_post(struct shim_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad,
		     int wr_api)
{
	const struct jst_flow_ctl *slot = atomic_load_explicit(&q->slot, memory_order_acquire);
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	int cls = atomic_load_explicit(&q->cls, memory_order_relaxed);
	uint64_t now = clock_now_ns();
	struct ibv_send_wr *first;
	int rc = 0;

	*bad = NULL;
	pthread_mutex_lock(&q->lock);
	first = wr;
	if (wr_api && app_room(q) < wr_count(wr)) {
		/* an ibv_wr_* batch is all or nothing */
		rc = ENOMEM;
		*bad = wr;
		wr = NULL;
	}
	for (; wr; wr = wr->next) {
		struct pend_wr *p;

		int kind = SPLITMSG_ONE_SIDED, paid = 0;
		uint32_t chunk = split_size(q, slot, wr, &kind);

		/* The application may have max_send_wr WRs outstanding; the
		 * provider holds some, the backlog the others.  More than its
		 * send queue could take fails as it would natively. */
		if (!app_room(q)) {
			rc = ENOMEM;
			*bad = wr;
			break;
		}
		/* nothing queued ahead, not split, and a token now: straight to
		 * the provider */
		if (!q->bl_head && !chunk && (atomic_load_explicit(&q->direct, memory_order_relaxed) ||
				    !slot || !st ||
				    !bucket_take(&st->bucket_vtime_ns, now,
						 wr_cost_ns(cls, slot, wr_bytes(wr)), BURST_NS))) {
			struct ibv_send_wr one = *wr;
			uint64_t due;

			one.next = NULL;
			rc = window_on(q) ? post_windowed(q, &one, wr_api, now, &due)
					  : post_one(q, &one, wr_api);
			if (rc == -EAGAIN) {
				rc = 0; /* it waits in the backlog, below */
			} else if (no_room(rc)) {
				rc = 0; /* the same, already paid for */
				paid = 1;
			} else if (rc) {
				*bad = wr;
				break;
			} else {
				continue;
			}
		}
		p = pend_copy(wr);
		if (!p) {
			rc = ENOMEM;
			*bad = wr;
			break;
		}
		p->wr_api = wr_api;
		p->paid = (uint8_t)paid;
		/* (a windowed QP's waits for the NIC, not for a token) */
		atomic_fetch_add_explicit(window_on(q) ? &q->st.window_held : &q->st.held, 1,
					  memory_order_relaxed);
		if (chunk)
			pend_split(p, chunk, kind);
		if (q->bl_tail)
			q->bl_tail->next = p;
		else
			q->bl_head = p;
		q->bl_tail = p;
		q->bl_len++;
		busy_add(q, now);
	}
	if (atomic_load_explicit(&q->classify.on, memory_order_relaxed))
		shim_classify_post(q, first, *bad);
	/* post at once what is due now (the first chunks of a split message);
	 * the rest follows from the progress thread or the app's polling */
	if (q->bl_head)
		drain_locked(q, now);
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int shim_pace_post(struct shim_qp *q, struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad)
{
	int rc = pace_post(q, wr, bad, 0);

	/* one call, however many WRs and whenever they reach the provider */
	stats_account_call(&q->st, rc);
	return rc;
}

int shim_pace_post_wr_api(struct shim_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return pace_post(q, wr, bad, 1);
}

int shim_pace_when_idle(struct shim_qp *q, int (*fn)(void *), void *arg)
{
	uint64_t nap = 20000, start = clock_now_ns();
	int rc;

	pthread_mutex_lock(&q->lock);
	while (q->bl_head) {
		uint64_t now = clock_now_ns(), due, left;
		struct timespec ts = { 0, 0 };

		due = service_locked(q, now);
		if (!q->bl_head)
			break;
		if (now - start >= SHIM_IDLE_WAIT_NS) {
			pthread_mutex_unlock(&q->lock);
			return ENOMEM; /* as a full send queue: nothing posted */
		}
		pthread_mutex_unlock(&q->lock);
		left = start + SHIM_IDLE_WAIT_NS - now;
		if (nap > left)
			nap = left;
		ts.tv_nsec = (long)(due > now && due - now < nap ? due - now : nap);
		nanosleep(&ts, NULL);
		if (nap < 1000000)
			nap *= 2;
		pthread_mutex_lock(&q->lock);
	}
	rc = fn(arg);
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int shim_poll_yield = 1;

int shim_pace_progress(struct ibv_cq *cq)
{
	struct shim_qp *list[8];
	size_t n = 0;
	uint64_t now;
	int held = 0;

	if (pthread_mutex_trylock(&pg.lock))
		return 0;
	for (struct shim_qp *q = pg.busy; q && n < 8; q = q->busy_next)
		if (q->qp->send_cq == cq)
			list[n++] = q;
	pthread_mutex_unlock(&pg.lock);
	if (!n)
		return 0;
	now = clock_now_ns();
	for (size_t i = 0; i < n; i++) {
		atomic_store_explicit(&list[i]->app_poll_ns, now, memory_order_relaxed);
		/* never wait for a lock in the application's poll */
		if (pthread_mutex_trylock(&list[i]->lock))
			continue;
		if (list[i]->busy) {
			service_locked(list[i], now);
			atomic_fetch_add_explicit(&n_poll_drains, 1, memory_order_relaxed);
		}
		held |= list[i]->busy;
		pthread_mutex_unlock(&list[i]->lock);
	}
	return held;
}

void shim_pace_charge(struct shim_qp *q, uint64_t wrs, uint64_t bytes)
{
	const struct jst_flow_ctl *slot = atomic_load_explicit(&q->slot, memory_order_acquire);
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	int cls = atomic_load_explicit(&q->cls, memory_order_relaxed);
	uint64_t now = clock_now_ns(), cost, v, nv, floor;

	if (!slot || !st || atomic_load_explicit(&q->direct, memory_order_relaxed) || !wrs)
		return;
	cost = cls == JST_CLASS_THROUGHPUT ? wrs * wr_cost_ns(cls, slot, 0)
					   : wr_cost_ns(cls, slot, bytes);
	floor = now > BURST_NS ? now - BURST_NS : 0;
	v = atomic_load_explicit(&st->bucket_vtime_ns, memory_order_relaxed);
	do {
		nv = (v < floor ? floor : v) + cost;
	} while (!atomic_compare_exchange_weak_explicit(&st->bucket_vtime_ns, &v, nv,
							memory_order_acq_rel, memory_order_relaxed));
}

/* ------------------------------------------------------------ progress thread */

/* QPs with a class verdict to report (classify.c): reported after the
 * registry walk, as reporting takes the client's lock (lock order). */
static struct {
	struct shim_qp *q[16];
	unsigned gen[16];
	size_t n;
} verdicts;

static int reevaluate(struct shim_qp *q)
{
	if (atomic_load_explicit(&q->classify.verdict, memory_order_acquire) >= 0 &&
	    verdicts.n < 16) {
		verdicts.q[verdicts.n] = q;
		verdicts.gen[verdicts.n++] = atomic_load(&q->gen);
	}
	shim_pace_update(q);
	return 0;
}

static void report_verdicts(void)
{
	for (size_t i = 0; i < verdicts.n; i++)
		if (atomic_load(&verdicts.q[i]->gen) == verdicts.gen[i])
			shim_classify_tick(verdicts.q[i]);
	verdicts.n = 0;
}

static void arm(uint64_t at)
{
	struct itimerspec its = { 0 };

	its.it_value.tv_sec = (time_t)(at / 1000000000ull);
	its.it_value.tv_nsec = (long)(at % 1000000000ull);
	timerfd_settime(pg.tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void *progress_main(void *arg)
{
	uint64_t next_tick = 0;

	shim_busy = 1; /* this thread's verbs calls are the shim's own */
	for (;;) {
		struct epoll_event ev[16];
		uint64_t now, next, buf;
		struct shim_qp *list[64];
		size_t n = 0;
		int nev;

		nev = epoll_wait(pg.ep, ev, 16, -1);
		if (nev < 0 && errno != EINTR)
			break;
		atomic_fetch_add_explicit(&n_wakeups, 1, memory_order_relaxed);
		if (read(pg.efd, &buf, sizeof(buf)) < 0 && errno != EAGAIN) {
			/* nothing to drain */
		}
		if (read(pg.tfd, &buf, sizeof(buf)) < 0 && errno != EAGAIN) {
			/* not expired yet */
		}
		now = clock_now_ns();
		if (now >= next_tick) {
			shim_client_poll();
			shim_registry_foreach(reevaluate);
			report_verdicts();
			next_tick = now + TICK_NS;
		}
		next = next_tick;
		for (int i = 0; i < nev; i++)
			if (ev[i].data.u64 > EV_TIMER)
				split_events((struct shim_qp *)(uintptr_t)ev[i].data.u64, now, &next);
		/* take the busy QPs a handful at a time; each under its lock */
		pthread_mutex_lock(&pg.lock);
		for (struct shim_qp *q = pg.busy; q && n < 64; q = q->busy_next)
			list[n++] = q;
		pthread_mutex_unlock(&pg.lock);
		for (size_t i = 0; i < n; i++) {
			uint64_t due;
			int busy;

			pthread_mutex_lock(&list[i]->lock);
			due = list[i]->busy ? service_locked(list[i], now) : 0;
			busy = list[i]->busy;
			atomic_fetch_add_explicit(&n_thread_drains, 1, memory_order_relaxed);
			pthread_mutex_unlock(&list[i]->lock);
			if (busy && app_polling(list[i], now)) {
				/* the application's polls post what is due and
				 * reap the chunks: look again only in case it
				 * stopped polling, a little after the next
				 * token is due (not every APP_POLL_NS: a 1 MiB
				 * token at tens of MB/s is due every few tens
				 * of ms), or after APP_POLL_NS when it waits
				 * for completions */
				due = (due > now ? due : now) + APP_POLL_NS;
			}
			if (due && due < next)
				next = due;
		}
		if (n == 64)
			next = now; /* more waiting: come straight back */
		arm(next);
	}
	return NULL;
}

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

static int progress_start_locked(void);

/* Start the progress thread once per process (two QPs created at once by
 * two threads must not start two). */
static int progress_start(void)
{
	int rc;

	if (atomic_load_explicit(&pg.started, memory_order_acquire) == getpid())
		return 0;
	pthread_mutex_lock(&start_lock);
	rc = progress_start_locked();
	pthread_mutex_unlock(&start_lock);
	return rc;
}

int shim_pace_start_thread(void)
{
	return progress_start();
}

static int progress_start_locked(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t all, old;
	int rc;

	if (pg.ep >= 0 && pg.pid == getpid())
		return 0;
	pg.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pg.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	pg.ep = epoll_create1(EPOLL_CLOEXEC);
	if (pg.efd < 0 || pg.tfd < 0 || pg.ep < 0)
		goto out_close;
	ev.data.u64 = EV_WAKE;
	if (epoll_ctl(pg.ep, EPOLL_CTL_ADD, pg.efd, &ev))
		goto out_close;
	ev.data.u64 = EV_TIMER;
	if (epoll_ctl(pg.ep, EPOLL_CTL_ADD, pg.tfd, &ev))
		goto out_close;
	/* the application's signals are not ours to take */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&pg.th, NULL, progress_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto out_close;
	pthread_setname_np(pg.th, "justitia-pace");
	pthread_detach(pg.th);
	pg.pid = getpid();
	arm(clock_now_ns() + TICK_NS);
	atomic_store_explicit(&pg.started, pg.pid, memory_order_release);
	return 0;
out_close:
	shim_log_once("cannot start the pacing thread: QPs stay unpaced");
	if (pg.efd >= 0)
		close(pg.efd);
	if (pg.tfd >= 0)
		close(pg.tfd);
	if (pg.ep >= 0)
		close(pg.ep);
	pg.efd = pg.tfd = pg.ep = -1;
	return -1;
}

/* ------------------------------------------------------------ state changes */

/* Latency class, uncounted: the one-branch post path.  Never while a
 * backlog drains: a WR taking the fast path would overtake it.  A QP with
 * a split QP is never fast: two-sided splits count the SENDs it posts
 * (splitmsg.c).  Called with q->lock held. */
static void set_fast_locked(struct shim_qp *q)
{
	int fast = !q->bl_head &&
		   atomic_load_explicit(&q->cls, memory_order_relaxed) == JST_CLASS_LATENCY &&
		   !shim_count_all && !q->split.qp &&
		   !atomic_load_explicit(&q->classify.on, memory_order_relaxed);

	if (fast)
		shim_sq_lost(&q->sq); /* its posts are not counted (sq.h) */
	atomic_store_explicit(&q->fast, fast, memory_order_relaxed);
}

void shim_pace_update(struct shim_qp *q)
{
	const struct jst_flow_ctl *slot = managed_slot(q);
	int want = wants_pacing(q, slot);
	/* direct, but the daemon manages the flow (pace mode off): windowed */
	int win = !want && slot && shim_window_bytes;

	/* (the window's give-up timer is the progress thread's too) */
	if ((want || win) && progress_start())
		want = win = 0;
	pthread_mutex_lock(&q->lock);
	if (atomic_load_explicit(&q->win.on, memory_order_relaxed) != win)
		q->win.wait_since = 0; /* (a wait from before paced mode is not one) */
	atomic_store_explicit(&q->win.on, win, memory_order_relaxed);
	atomic_store_explicit(&q->fast, 0, memory_order_relaxed);
	if (!want && !atomic_load_explicit(&q->direct, memory_order_relaxed)) {
		/* back to direct: what is queued goes first, unpaced */
		atomic_store_explicit(&q->direct, 1, memory_order_relaxed);
		drain_locked(q, clock_now_ns());
	} else if (want) {
		atomic_store_explicit(&q->direct, 0, memory_order_relaxed);
	}
	set_fast_locked(q);
	pthread_mutex_unlock(&q->lock);
}

int shim_pace_recheck(struct shim_qp *q)
{
	const struct jst_shm_global *g = shim_client_global();
	uint32_t gen;

	if (!g || !atomic_load_explicit(&q->slot, memory_order_relaxed))
		return 0;
	gen = atomic_load_explicit(&g->mode_gen, memory_order_acquire);
	if (gen == atomic_load_explicit(&q->mode_gen, memory_order_relaxed))
		return 0;
	atomic_store_explicit(&q->mode_gen, gen, memory_order_relaxed);
	shim_pace_update(q);
	return 1;
}

int shim_pace_watch(struct shim_qp *q)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uintptr_t)q };

	if (progress_start())
		return -EAGAIN;
	return epoll_ctl(pg.ep, EPOLL_CTL_ADD, q->split.ch->fd, &ev) ? -errno : 0;
}

void shim_pace_unwatch(struct shim_qp *q)
{
	if (q->split.ch && pg.ep >= 0 && pg.pid == getpid())
		epoll_ctl(pg.ep, EPOLL_CTL_DEL, q->split.ch->fd, NULL);
}

int shim_pace_barrier_done(struct shim_qp *q, const struct ibv_wc *wc)
{
	if (wc->wr_id != barrier_tag(q))
		return 0;
	pthread_mutex_lock(&q->lock);
	q->ord_barrier = 0;
	if (q->ord_blind) {
		/* late, but it came: the order holds again (a daemon restart,
		 * a stalled poller), so later messages may split again */
		q->ord_blind = 0;
		shim_log("QP %u: its ordering barrier came back late: large messages split again",
			 q->qp->qp_num);
	}
	/* what waited for it goes now, from this poll */
	if (q->busy)
		service_locked(q, clock_now_ns());
	pthread_mutex_unlock(&q->lock);
	return 1;
}

int shim_pace_window_done(struct shim_qp *q, struct ibv_wc *wc)
{
	int hide;

	pthread_mutex_lock(&q->lock);
	hide = shim_window_complete(&q->win, wc);
	/* what waited for it goes now, from this poll */
	if (q->busy)
		service_locked(q, clock_now_ns());
	pthread_mutex_unlock(&q->lock);
	return hide;
}

/* Forget @q's backlog without completions.  Called with q->lock held. */
static void drop_backlog_locked(struct shim_qp *q)
{
	struct pend_wr *p;

	busy_remove(q);
	while ((p = q->bl_head)) {
		q->bl_head = p->next;
		free(p);
	}
	q->bl_tail = NULL;
	q->bl_len = 0;
	q->tw_since = 0;
}

void shim_pace_qp_reset(struct shim_qp *q)
{
	struct ibv_wc wc[16];

	pthread_mutex_lock(&q->lock);
	drop_backlog_locked(q);
	/* the split QP was reset with it: what its CQ still holds refers to
	 * the WRs just dropped */
	if (q->split.cq)
		while (q->sctx->poll_cq(q->split.cq, 16, wc) > 0) {
		}
	q->split.c_done = q->split.c_posted;
	q->split.c_since_sig = 0;
	atomic_store_explicit(&q->ord_dirty, 0, memory_order_relaxed);
	q->ord_barrier = 0;
	shim_window_reset(&q->win);
	shim_sq_reset(&q->sq);
	set_fast_locked(q);
	pthread_mutex_unlock(&q->lock);
}

void shim_pace_qp_gone(struct shim_qp *q)
{
	pthread_mutex_lock(&q->lock);
	drop_backlog_locked(q);
	shim_window_reset(&q->win);
	shim_sq_fini(&q->sq);
	atomic_store_explicit(&q->win.on, 0, memory_order_relaxed);
	atomic_store_explicit(&q->direct, 1, memory_order_relaxed);
	pthread_mutex_unlock(&q->lock);
}

static int fail_open_one(struct shim_qp *q)
{
	pthread_mutex_lock(&q->lock);
	atomic_store_explicit(&q->direct, 1, memory_order_relaxed);
	atomic_store_explicit(&q->win.on, 0, memory_order_relaxed);
	if (q->bl_head)
		drain_locked(q, clock_now_ns());
	/* the daemon's memory is no longer ours to read or write */
	atomic_store_explicit(&q->slot, NULL, memory_order_release);
	atomic_store_explicit(&q->shm_stats, NULL, memory_order_release);
	q->flow_id = 0;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

void shim_pace_fail_open(void)
{
	shim_registry_foreach(fail_open_one);
}

void shim_pace_atfork_child(void)
{
	pthread_mutex_init(&pg.lock, NULL);
	pg.busy = NULL;
	atomic_store(&shim_pace_queued, 0);
	pg.ep = pg.efd = pg.tfd = -1; /* the parent's, shared: leave them */
	pg.pid = 0;
	atomic_store(&pg.started, 0);
	pthread_mutex_init(&start_lock, NULL);
}

void shim_pace_counters(struct stats_pacer *out)
{
	clockid_t cid;
	struct timespec ts;

	out->wakeups = atomic_load_explicit(&n_wakeups, memory_order_relaxed);
	out->thread_drains = atomic_load_explicit(&n_thread_drains, memory_order_relaxed);
	out->poll_drains = atomic_load_explicit(&n_poll_drains, memory_order_relaxed);
	out->thread_cpu_ns = 0;
	if (atomic_load_explicit(&pg.started, memory_order_acquire) == getpid() &&
	    !pthread_getcpuclockid(pg.th, &cid) && !clock_gettime(cid, &ts))
		out->thread_cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

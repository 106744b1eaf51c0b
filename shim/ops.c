// SPDX-License-Identifier: MIT
/* Per-context interception.  ibv_post_send, ibv_post_recv and ibv_poll_cq are
 * static inlines that call ctx->ops.<fn>, and ibv_create_qp_ex calls the
 * verbs_context's create_qp_ex pointer: the shim replaces those pointers in
 * every context it sees and keeps the provider's originals in the context's
 * record.  post_send: a latency QP takes a one-branch fast path straight to
 * the provider; a direct QP's WRs are counted (and sampled for
 * JUSTITIA_CLASS=auto) on their way to it; a paced QP's go to the pacer
 * (pace.c: backlog, tokens, splitting).  poll_cq returns the completions the shim
 * owes first (inject.c), yields once in an empty poll of a CQ whose QP the
 * shim holds back, and gives split messages' completions their full length
 * (splitmsg.c).  post_recv counts receives and tracks those of QPs with a
 * split QP (splitmsg.c).
 * Interposition layer; may call: the pacer (pace, pacectl), the splitter
 * (splitmsg completions), the daemon link (client.h), the per-QP state, log. */
#include "shim.h"
#include "backlogs.h"
#include "client.h"
#include "inject.h"
#include "log.h"
#include "pace.h"
#include "pacectl.h"
#include "split.h"
#include "splitmsg.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>

/* Which QP record?  A one-entry per-thread cache, valid while no QP was
 * destroyed since (shim_qp_epoch), keeps the hash lookup off the hot path. */
static __thread struct {
	const struct ibv_qp *qp;
	struct shim_qp *q;
	unsigned epoch;
} post_cache __attribute__((tls_model("initial-exec")));

static inline struct shim_qp *qp_record(struct ibv_qp *qp)
{
	unsigned e = atomic_load_explicit(&shim_qp_epoch, memory_order_acquire);

	if (__builtin_expect(post_cache.qp == qp && post_cache.epoch == e, 1))
		return post_cache.q;
	post_cache.q = shim_qp_find(qp->context, qp->qp_num);
	post_cache.qp = qp;
	post_cache.epoch = e;
	return post_cache.q;
}

/* Everything but the latency fast path, out of line so that the fast path
 * needs no stack frame. */
__attribute__((noinline)) static int post_send_slow(struct ibv_qp *qp, struct ibv_send_wr *wr,
						    struct ibv_send_wr **bad)
{
	struct shim_qp *q = qp_record(qp);
	struct shim_ctx *c;
	uint64_t bytes, n;
	int rc;

	if (q) {
		if (atomic_load_explicit(&q->fast, memory_order_relaxed))
			return q->sctx->post_send(qp, wr, bad);
		/* (from here on, a post that does not go through the pacer is
		 * not counted in the QP's send queue: sq.h) */
		/* Paced; or direct again (fail-open, daemon stale, class
		 * change) while a backlog -- a split message waiting for its
		 * chunks -- still drains: the WRs must queue behind it, never
		 * overtake it.  shim_pace_queued counts the QPs with one.
		 * First: did the daemon's pace mode change? */
		shim_pace_recheck(q);
		if (shim_pace_needed(q) || atomic_load_explicit(&q->win.on, memory_order_relaxed))
			return shim_pace_post(q, qp, wr, bad); /* paced, or windowed */
		/* nobody reads its counters (no daemon, no JUSTITIA_STATS, no
		 * split QP, no classifier): pass it through */
		shim_sq_lost(&q->sq);
		if (!shim_count_all && !atomic_load_explicit(&q->shm_stats, memory_order_relaxed) &&
		    !q->split.qp && !atomic_load_explicit(&q->classify.on, memory_order_relaxed))
			return q->sctx->post_send(qp, wr, bad);
		*bad = NULL;
		rc = q->sctx->post_send(qp, wr, bad);
		shim_pace_posted_direct(q);
		n = stats_account_send(&q->st, wr, rc ? *bad : NULL, rc, &bytes);
		shim_client_publish(q, n, bytes);
		/* JUSTITIA_CLASS=auto: a sample (never wait for the lock) */
		if (atomic_load_explicit(&q->classify.on, memory_order_relaxed) &&
		    !pthread_mutex_trylock(&q->lock)) {
			shim_qp_classify_post(q, wr, rc ? *bad : NULL);
			pthread_mutex_unlock(&q->lock);
		}
		return rc;
	}
	c = shim_ctx_find(qp->context);
	if (!c) {
		/* Cannot happen for a context we patched; refuse rather than crash. */
		shim_log_once("post_send on an unknown context");
		*bad = wr;
		return EINVAL;
	}
	return c->post_send(qp, wr, bad);
}

/* Latency QPs: the cached record, one flag, then the provider (a tail
 * call).  Everything else goes the slow way. */
static int shim_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct shim_qp *q = post_cache.q;

	if (__builtin_expect(post_cache.qp == qp &&
			     post_cache.epoch == atomic_load_explicit(&shim_qp_epoch,
								      memory_order_acquire) &&
			     q && atomic_load_explicit(&q->fast, memory_order_relaxed), 1))
		return q->sctx->post_send(qp, wr, bad);
	return post_send_slow(qp, wr, bad);
}

static int shim_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct shim_ctx *c = shim_ctx_find(qp->context);
	struct shim_qp *q;
	int rc;

	if (!c) {
		shim_log_once("post_recv on an unknown context");
		*bad = wr;
		return EINVAL;
	}
	*bad = NULL;
	/* (never a miss: two-sided splits count every receive) */
	q = shim_qp_find_sure(qp->context, qp->qp_num);
	if (q && q->split.qp) {
		pthread_mutex_lock(&q->lock);
		rc = c->post_recv(qp, wr, bad);
		if (!rc || *bad)
			splitmsg_rx_posted(q, wr, rc ? *bad : NULL);
		pthread_mutex_unlock(&q->lock);
	} else {
		rc = c->post_recv(qp, wr, bad);
	}
	if (q) {
		if (rc && !*bad)
			return rc; /* nothing known to be posted */
		stats_account_recv(&q->st, wr, rc ? *bad : NULL);
	}
	return rc;
}

static int shim_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct shim_ctx *c = shim_ctx_find(cq->context);
	int got, held = 0;

	if (!c) {
		shim_log_once("poll_cq on an unknown context");
		return -1;
	}
	if (!shim_busy)
		backlogs_cq_polled(cq); /* (does it spin on @cq?) */
	if (__builtin_expect(atomic_load_explicit(&shim_pace_queued, memory_order_relaxed), 0))
		held = shim_pace_progress(cq);
	got = c->poll_cq(cq, n, wc);
	if (__builtin_expect(atomic_load_explicit(&shim_inject_pending, memory_order_acquire), 0)) {
		/* owed completions, where the provider flushed their markers
		 * (in order), or after what it returned (inject.h) */
		int more = shim_inject_fix(cq, wc, got < 0 ? 0 : got, n);

		if (got >= 0 || more)
			got = more;
	}
	if (got < 0)
		return got;
	if (__builtin_expect(held, 0) && !got && shim_poll_yield) {
		/* The application spins on a CQ whose QP the shim holds back:
		 * what it waits for comes when a token does.  Let whatever
		 * else is runnable on this CPU (its neighbours' latency flows,
		 * the NIC's work under Soft-RoCE) have the CPU meanwhile; with
		 * nothing else runnable this returns at once. */
		sched_yield();
	}
	/* completions matter to split QPs' messages, the classifier and the
	 * JUSTITIA_STATS report only */
	if (shim_count_all || shim_classify_auto ||
	    atomic_load_explicit(&shim_split_qps, memory_order_relaxed) ||
	    atomic_load_explicit(&shim_window_tags, memory_order_relaxed) ||
	    atomic_load_explicit(&shim_sq_watched, memory_order_relaxed))
		for (int i = 0; i < got; i++)
			if (shim_ops_wc(cq->context, &wc[i])) {
				/* the shim's ordering barrier (order.h): not the app's */
				memmove(&wc[i], &wc[i + 1], (size_t)(got - i - 1) * sizeof(*wc));
				got--;
				i--;
			}
	return got;
}

int shim_ops_wc(struct ibv_context *ctx, struct ibv_wc *wc)
{
	int rx = wc->status == IBV_WC_SUCCESS && (wc->opcode & IBV_WC_RECV);
	struct shim_qp *q = rx ? shim_qp_find_sure(ctx, wc->qp_num) : shim_qp_find(ctx, wc->qp_num);

	if (!q)
		return 0;
	if (!rx && shim_sq_known(&q->sq))
		/* an entry of its send queue is free again (sq.h) */
		shim_pace_send_done(q, wc->status == IBV_WC_SUCCESS);
	if (!rx && (wc->wr_id & 1) && q->split.qp && shim_pace_barrier_done(q, wc))
		return 1;
	if (!rx && wc->wr_id == shim_pace_window_tag(q) && shim_pace_window_done(q, wc))
		return 1; /* a window tag the application did not ask for */
	if (rx && q->split.qp) {
		/* a split SEND / WRITE_WITH_IMM shows its full length */
		pthread_mutex_lock(&q->lock);
		splitmsg_rx_done(q, wc);
		pthread_mutex_unlock(&q->lock);
	} else if (wc->status == IBV_WC_SUCCESS &&
		   atomic_load_explicit(&q->split.msg.fin_len, memory_order_relaxed)) {
		/* and so does the sender's (an RDMA READ's bytes read) */
		pthread_mutex_lock(&q->lock);
		splitmsg_tx_done(q, wc);
		pthread_mutex_unlock(&q->lock);
	}
	stats_account_wc(&q->st, wc);
	return 0;
}

static struct ibv_qp *shim_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct shim_ctx *c = shim_ctx_find(ctx);
	struct ibv_qp *qp;

	if (!c || !c->create_qp_ex) {
		shim_log_once("create_qp_ex on an unknown context");
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = c->create_qp_ex(ctx, attr);
	if (qp && !shim_busy) {
		struct shim_qp *q = shim_ops_track_qp(qp, "ibv_create_qp_ex", attr->cap.max_send_wr);

		if (q)
			q->classify.sq_sig_all = attr->sq_sig_all;
		/* its ibv_wr_* batches may be buffered if the shim knows every
		 * operation the QP was created for (qpex.c) */
		if (q)
			wrbuf_allow(&q->wrb, attr);
	}
	return qp;
}

/* Extended CQs: their pollers are wrapped (cqex.c).  The shim needs the
 * QP number and length of every completion to deliver its own and to show
 * split messages whole, whatever the application asked for. */
static struct ibv_cq_ex *shim_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	struct shim_ctx *c = shim_ctx_find(ctx);
	struct ibv_cq_ex *cq;

	if (!c || !c->create_cq_ex) {
		shim_log_once("create_cq_ex on an unknown context");
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (shim_busy)
		return c->create_cq_ex(ctx, attr);
	attr->wc_flags |= IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_BYTE_LEN;
	cq = c->create_cq_ex(ctx, attr);
	if (cq)
		shim_cqex_wrap(cq);
	return cq;
}

struct shim_ctx *shim_ops_attach(struct ibv_context *ctx)
{
	struct verbs_context *vctx;
	struct shim_ctx *c;
	int created;

	c = shim_ctx_find(ctx);
	if (c)
		return c;
	c = shim_ctx_get(ctx, &created);
	if (!c) {
		shim_log_once("out of memory: device context left unmanaged");
		return NULL;
	}
	if (!created)
		return c;
	vctx = verbs_get_ctx_op(ctx, create_qp_ex);
	if (vctx) {
		c->create_qp_ex = vctx->create_qp_ex;
		vctx->create_qp_ex = shim_create_qp_ex;
	}
	vctx = verbs_get_ctx_op(ctx, create_cq_ex);
	if (vctx) {
		c->create_cq_ex = vctx->create_cq_ex;
		vctx->create_cq_ex = shim_create_cq_ex;
	}
	ctx->ops.post_send = shim_post_send;
	ctx->ops.post_recv = shim_post_recv;
	ctx->ops.poll_cq = shim_poll_cq;
	shim_log("attached to %s", c->device);
	return c;
}

struct shim_qp *shim_ops_track_qp(struct ibv_qp *qp, const char *created_via,
				  uint32_t max_send_wr)
{
	struct shim_ctx *c = shim_ops_attach(qp->context);
	struct shim_qp *q;

	if (!c)
		return NULL;
	q = shim_qp_add(c, qp, created_via);
	if (!q) {
		shim_log_once("out of memory: QP left untracked");
		return NULL;
	}
	q->max_send_wr = max_send_wr;
	/* (only an RC QP is ever paced or split) */
	if (qp->qp_type != IBV_QPT_RC || shim_sq_init(&q->sq, max_send_wr))
		shim_sq_lost(&q->sq);
	shim_client_qp_created(q, qp);
	return q;
}

// SPDX-License-Identifier: MIT
/* The extended post API (ibv_wr_*).  Its inline functions call per-QP
 * pointers in struct ibv_qp_ex, which the application obtains from the
 * exported ibv_qp_to_qp_ex(): the shim wraps those pointers there.
 *
 * ibv_wr_start decides how the batch goes, and the batch keeps that way to
 * its ibv_wr_complete or ibv_wr_abort:
 *
 *   passed through - on a direct QP (latency class, unmanaged, no daemon), or
 *     one created with operations the shim does not know: the provider's
 *     own functions build the batch in its send queue, zero copy.  A WR's
 *     length is known only when its SGEs or inline data are set, so the
 *     wrappers count the batch as it is built, and account it (and charge
 *     it to the token bucket) once the provider accepted it.
 *
 *   buffered - on a paced or windowed QP: nothing reaches the provider before
 *     ibv_wr_complete.  The WRs are kept as classic work requests (wrbuf.h)
 *     and ibv_wr_complete hands them to the paced post path, which splits,
 *     paces and queues them behind the QP's backlog exactly as it does what
 *     ibv_post_send posts.  A batch holding a WR that has no classic form
 *     (ATOMIC_WRITE, TSO) waits instead until nothing is queued ahead of it
 *     and then goes through the provider's own functions, unsplit, charged
 *     afterwards; if the backlog needs longer than SHIM_IDLE_WAIT_NS it
 *     fails whole with ENOMEM, as a full send queue would.
 *
 * The shim holds a critical region of its own from ibv_wr_start to
 * ibv_wr_complete/abort (wrbuf_enter), since a buffered batch never enters
 * the provider's.
 * Interposition layer; may call: the pacer (pace, pacectl), the daemon
 * link (client.h), the per-QP state (registry, wrbuf, stats), log. */
#include "client.h"
#include "pace.h"
#include "pacectl.h"
#include "shim.h"
#include "wrbuf.h"

#include <errno.h>
#include <stddef.h>

/* Every wrapped qpx has a record (wrapping needs one) that holds the
 * provider's originals, so the lookup must not miss: shim_qp_find_sure().  A
 * wrapper without a record means the application posts on a destroyed QP;
 * it then gets the error that a post on a dead QP deserves, not a crash. */
static struct shim_qp *rec(struct ibv_qp_ex *qpx)
{
	return shim_qp_find_sure(qpx->qp_base.context, qpx->qp_base.qp_num);
}

#define ORIG(q, fn) ((q)->orig.fn)

static void w_start(struct ibv_qp_ex *qpx)
{
	struct shim_qp *q = rec(qpx);

	if (!q)
		return;
	wrbuf_enter(&q->wrb);
	shim_pace_recheck(q);
	/* a direct QP whose backlog (a split message) still drains buffers
	 * too: the batch must queue behind it, not overtake it; and so does
	 * a windowed one (window.h): its WRs go one by one, some tagged */
	q->wrb.on = q->wrb.allowed &&
		    (shim_pace_needed(q) || atomic_load_explicit(&q->win.on, memory_order_relaxed));
	if (q->wrb.on)
		return;
	/* (the provider's own ibv_wr_* take it: not counted, sq.h) */
	shim_sq_lost(&q->sq);
	stats_batch_reset(&q->batch);
	ORIG(q, wr_start)(qpx);
}

struct replay_arg {
	struct shim_qp *q;
	struct ibv_qp_ex *qpx;
};

/* With nothing queued ahead (shim_pace_when_idle): the batch through the
 * provider's own functions, accounted and charged as a passed-through one. */
static int replay(void *arg)
{
	struct replay_arg *r = arg;
	struct shim_qp *q = r->q;
	uint64_t n, bytes;
	int rc;

	rc = wrbuf_replay(&q->wrb, r->qpx, &q->orig);
	shim_pace_posted_direct(q);
	shim_sq_lost(&q->sq);
	if (rc)
		return rc;
	n = stats_account_wr_api(&q->st, wrbuf_list(&q->wrb), NULL, &bytes);
	shim_client_publish(q, n, bytes);
	shim_pace_charge(q, n, bytes);
	return 0;
}

/* ibv_wr_complete of a buffered batch.  A batch that failed while it was
 * built posts nothing, as natively; so does one the backlog has no room for,
 * and a special one the backlog keeps waiting too long (ENOMEM).
 * If the provider refuses a WR, those before it are posted (they complete as
 * usual) and it and those after it are not, as with ibv_post_send. */
static int complete_buffered(struct shim_qp *q, struct ibv_qp_ex *qpx)
{
	struct replay_arg r = { q, qpx };
	struct ibv_send_wr *list, *bad;
	int rc = q->wrb.err;

	if (!rc && q->wrb.special)
		rc = shim_pace_when_idle(q, replay, &r);
	else if (!rc && (list = wrbuf_list(&q->wrb)))
		rc = shim_pace_post_wr_api(q, list, &bad);
	stats_account_call(&q->st, rc);
	return rc;
}

static int w_complete(struct ibv_qp_ex *qpx)
{
	struct shim_qp *q = rec(qpx);
	uint64_t n, bytes;
	int rc;

	if (!q)
		return EINVAL;
	if (q->wrb.on) {
		rc = complete_buffered(q, qpx);
	} else {
		rc = ORIG(q, wr_complete)(qpx);
		shim_pace_posted_direct(q);
		n = stats_batch_commit(&q->st, &q->batch, rc, &bytes);
		shim_client_publish(q, n, bytes);
		shim_pace_charge(q, n, bytes);
	}
	wrbuf_leave(&q->wrb);
	return rc;
}

static void w_abort(struct ibv_qp_ex *qpx)
{
	struct shim_qp *q = rec(qpx);

	if (!q)
		return;
	if (!q->wrb.on) {
		stats_batch_reset(&q->batch);
		ORIG(q, wr_abort)(qpx);
	}
	wrbuf_leave(&q->wrb);
}

/* A builder: passed through, count it and call the provider; buffered,
 * record it as a classic WR of @opcode and @fill in its fields. */
#define BUILDER(name, stat, opcode, params, args, fill)                                   \
	static void w_##name params                                                        \
	{                                                                                  \
		struct shim_qp *q = rec(qpx);                                              \
		struct ibv_send_wr *w;                                                     \
                                                                                           \
		if (!q)                                                                    \
			return;                                                            \
		if (!q->wrb.on) {                                                          \
			stats_batch_wr(&q->batch, stat);                                   \
			ORIG(q, wr_##name) args;                                           \
		} else if ((w = wrbuf_add(&q->wrb, opcode, qpx->wr_id, qpx->wr_flags))) { \
			fill;                                                              \
		}                                                                          \
	}

BUILDER(rdma_write, STATS_OP_RDMA_WRITE, IBV_WR_RDMA_WRITE,
	(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr), (qpx, rkey, raddr),
	(w->wr.rdma.rkey = rkey, w->wr.rdma.remote_addr = raddr))
BUILDER(rdma_write_imm, STATS_OP_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM,
	(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, __be32 imm), (qpx, rkey, raddr, imm),
	(w->wr.rdma.rkey = rkey, w->wr.rdma.remote_addr = raddr, w->imm_data = imm))
BUILDER(rdma_read, STATS_OP_RDMA_READ, IBV_WR_RDMA_READ,
	(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr), (qpx, rkey, raddr),
	(w->wr.rdma.rkey = rkey, w->wr.rdma.remote_addr = raddr))
BUILDER(send, STATS_OP_SEND, IBV_WR_SEND, (struct ibv_qp_ex *qpx), (qpx), (void)w)
BUILDER(send_imm, STATS_OP_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM,
	(struct ibv_qp_ex *qpx, __be32 imm), (qpx, imm), w->imm_data = imm)
BUILDER(send_inv, STATS_OP_SEND_WITH_INV, IBV_WR_SEND_WITH_INV,
	(struct ibv_qp_ex *qpx, uint32_t rkey), (qpx, rkey), w->invalidate_rkey = rkey)
BUILDER(local_inv, STATS_OP_LOCAL_INV, IBV_WR_LOCAL_INV,
	(struct ibv_qp_ex *qpx, uint32_t rkey), (qpx, rkey), w->invalidate_rkey = rkey)
BUILDER(bind_mw, STATS_OP_BIND_MW, IBV_WR_BIND_MW,
	(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
	 const struct ibv_mw_bind_info *info), (qpx, mw, rkey, info),
	(w->bind_mw.mw = mw, w->bind_mw.rkey = rkey, w->bind_mw.bind_info = *info))
/* Atomics carry 8 bytes and set no SGE length of their own before the SGE. */
BUILDER(atomic_cmp_swp, STATS_OP_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP,
	(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, uint64_t cmp, uint64_t swap),
	(qpx, rkey, raddr, cmp, swap),
	(w->wr.atomic.rkey = rkey, w->wr.atomic.remote_addr = raddr,
	 w->wr.atomic.compare_add = cmp, w->wr.atomic.swap = swap))
BUILDER(atomic_fetch_add, STATS_OP_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD,
	(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, uint64_t add),
	(qpx, rkey, raddr, add),
	(w->wr.atomic.rkey = rkey, w->wr.atomic.remote_addr = raddr,
	 w->wr.atomic.compare_add = add))

/* The two without a classic form: buffered whole, the batch replayed. */
static void w_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	struct shim_qp *q = rec(qpx);

	if (!q)
		return;
	if (!q->wrb.on) {
		stats_batch_wr(&q->batch, STATS_OP_TSO);
		ORIG(q, wr_send_tso)(qpx, hdr, hdr_sz, mss);
	} else {
		wrbuf_send_tso(&q->wrb, qpx->wr_id, qpx->wr_flags, hdr, hdr_sz, mss);
	}
}

static void w_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, const void *val)
{
	struct shim_qp *q = rec(qpx);

	if (!q)
		return;
	if (!q->wrb.on) {
		stats_batch_wr(&q->batch, STATS_OP_ATOMIC_WRITE);
		ORIG(q, wr_atomic_write)(qpx, rkey, raddr, val);
	} else {
		wrbuf_atomic_write(&q->wrb, qpx->wr_id, qpx->wr_flags, rkey, raddr, val);
	}
}

static void w_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct shim_qp *q = rec(qpx);

	if (!q)
		return;
	if (q->wrb.on) {
		wrbuf_set_sge(&q->wrb, lkey, addr, length);
		return;
	}
	stats_batch_bytes(&q->batch, length);
	ORIG(q, wr_set_sge)(qpx, lkey, addr, length);
}

static void w_set_sge_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_sge *sg)
{
	struct shim_qp *q = rec(qpx);
	uint64_t sum = 0;

	if (!q)
		return;
	if (q->wrb.on) {
		/* in classic form, which also sidesteps rxe's wr_set_sge_list
		 * (rdma-core 44 sums the first SGE's length n times) */
		wrbuf_set_sge_list(&q->wrb, n, sg);
		return;
	}
	for (size_t i = 0; i < n; i++)
		sum += sg[i].length;
	stats_batch_bytes(&q->batch, sum);
	ORIG(q, wr_set_sge_list)(qpx, n, sg);
}

static void w_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct shim_qp *q = rec(qpx);

	if (!q)
		return;
	if (q->wrb.on) {
		struct ibv_data_buf one = { addr, length };

		wrbuf_set_inline(&q->wrb, 1, &one, 0);
		return;
	}
	stats_batch_bytes(&q->batch, length);
	ORIG(q, wr_set_inline_data)(qpx, addr, length);
}

static void w_set_inline_data_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_data_buf *bufs)
{
	struct shim_qp *q = rec(qpx);
	uint64_t sum = 0;

	if (!q)
		return;
	if (q->wrb.on) {
		wrbuf_set_inline(&q->wrb, n, bufs, 1);
		return;
	}
	for (size_t i = 0; i < n; i++)
		sum += bufs[i].length;
	stats_batch_bytes(&q->batch, sum);
	ORIG(q, wr_set_inline_data_list)(qpx, n, bufs);
}

/* Addressing setters (UD, XRC QPs, which are never paced): wrapped so that
 * they could never reach a provider whose batch was not started. */
static void w_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct shim_qp *q = rec(qpx);

	if (!q)
		return;
	if (q->wrb.on)
		wrbuf_set_ud_addr(&q->wrb, ah, qpn, qkey);
	else
		ORIG(q, wr_set_ud_addr)(qpx, ah, qpn, qkey);
}

static void w_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	struct shim_qp *q = rec(qpx);

	if (!q)
		return;
	if (q->wrb.on)
		wrbuf_set_xrc_srqn(&q->wrb, srqn);
	else
		ORIG(q, wr_set_xrc_srqn)(qpx, srqn);
}

/* Swap one pointer, remembering the original; a pointer the provider left
 * NULL (operation unsupported) stays NULL. */
#define WRAP(q, qpx, fn)                                                       \
	do {                                                                   \
		(q)->orig.fn = (qpx)->fn;                                      \
		if ((qpx)->fn)                                                 \
			(qpx)->fn = w_##fn##_impl;                             \
	} while (0)

#define w_wr_start_impl w_start
#define w_wr_complete_impl w_complete
#define w_wr_abort_impl w_abort
#define w_wr_rdma_write_impl w_rdma_write
#define w_wr_rdma_write_imm_impl w_rdma_write_imm
#define w_wr_rdma_read_impl w_rdma_read
#define w_wr_send_impl w_send
#define w_wr_send_imm_impl w_send_imm
#define w_wr_send_inv_impl w_send_inv
#define w_wr_send_tso_impl w_send_tso
#define w_wr_local_inv_impl w_local_inv
#define w_wr_bind_mw_impl w_bind_mw
#define w_wr_atomic_cmp_swp_impl w_atomic_cmp_swp
#define w_wr_atomic_fetch_add_impl w_atomic_fetch_add
#define w_wr_atomic_write_impl w_atomic_write
#define w_wr_set_sge_impl w_set_sge
#define w_wr_set_sge_list_impl w_set_sge_list
#define w_wr_set_inline_data_impl w_set_inline_data
#define w_wr_set_inline_data_list_impl w_set_inline_data_list
#define w_wr_set_ud_addr_impl w_set_ud_addr
#define w_wr_set_xrc_srqn_impl w_set_xrc_srqn

void shim_qpex_wrap(struct shim_qp *q, struct ibv_qp_ex *qpx)
{
	/* Idempotent: applications call ibv_qp_to_qp_ex as often as they like. */
	if (qpx->wr_complete == w_complete)
		return;
	stats_batch_reset(&q->batch);
	WRAP(q, qpx, wr_start);
	WRAP(q, qpx, wr_complete);
	WRAP(q, qpx, wr_abort);
	WRAP(q, qpx, wr_rdma_write);
	WRAP(q, qpx, wr_rdma_write_imm);
	WRAP(q, qpx, wr_rdma_read);
	WRAP(q, qpx, wr_send);
	WRAP(q, qpx, wr_send_imm);
	WRAP(q, qpx, wr_send_inv);
	WRAP(q, qpx, wr_send_tso);
	WRAP(q, qpx, wr_local_inv);
	WRAP(q, qpx, wr_bind_mw);
	WRAP(q, qpx, wr_atomic_cmp_swp);
	WRAP(q, qpx, wr_atomic_fetch_add);
	WRAP(q, qpx, wr_atomic_write);
	WRAP(q, qpx, wr_set_sge);
	WRAP(q, qpx, wr_set_sge_list);
	WRAP(q, qpx, wr_set_inline_data);
	WRAP(q, qpx, wr_set_inline_data_list);
	WRAP(q, qpx, wr_set_ud_addr);
	WRAP(q, qpx, wr_set_xrc_srqn);
	atomic_store_explicit(&q->qpx, qpx, memory_order_release);
}

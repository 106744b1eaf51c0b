// SPDX-License-Identifier: MIT
/* The extended post API (ibv_wr_*).  Its inline functions call per-QP
 * pointers in struct ibv_qp_ex, which the application obtains from the
 * exported ibv_qp_to_qp_ex(): the shim wraps those pointers there.  A WR's
 * length is known only when its SGEs or inline data are set, so the wrappers
 * collect the batch between ibv_wr_start and ibv_wr_complete and account it
 * when the provider accepted it. */
#include "pace.h"
#include "shim.h"

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
	stats_batch_reset(&q->batch);
	ORIG(q, wr_start)(qpx);
}

static int w_complete(struct ibv_qp_ex *qpx)
{
	struct shim_qp *q = rec(qpx);
	int rc;

	if (!q)
		return EINVAL;
	rc = ORIG(q, wr_complete)(qpx);
	{
		uint64_t bytes, n = stats_batch_commit(&q->st, &q->batch, rc, &bytes);

		shim_ops_publish(q, n, bytes);
		shim_pace_charge(q, n, bytes);
	}
	return rc;
}

static void w_abort(struct ibv_qp_ex *qpx)
{
	struct shim_qp *q = rec(qpx);

	if (!q)
		return;
	stats_batch_reset(&q->batch);
	ORIG(q, wr_abort)(qpx);
}

#define OP_WRAPPER(name, op, params, args)                                     \
	static void w_##name params                                            \
	{                                                                      \
		struct shim_qp *q = rec(qpx);                                  \
		if (!q)                                                        \
			return;                                                \
		stats_batch_wr(&q->batch, op);                                 \
		ORIG(q, wr_##name) args;                                       \
	}

OP_WRAPPER(rdma_write, STATS_OP_RDMA_WRITE,
	   (struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr), (qpx, rkey, raddr))
OP_WRAPPER(rdma_write_imm, STATS_OP_RDMA_WRITE_WITH_IMM,
	   (struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, __be32 imm),
	   (qpx, rkey, raddr, imm))
OP_WRAPPER(rdma_read, STATS_OP_RDMA_READ,
	   (struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr), (qpx, rkey, raddr))
OP_WRAPPER(send, STATS_OP_SEND, (struct ibv_qp_ex *qpx), (qpx))
OP_WRAPPER(send_imm, STATS_OP_SEND_WITH_IMM, (struct ibv_qp_ex *qpx, __be32 imm), (qpx, imm))
OP_WRAPPER(send_inv, STATS_OP_SEND_WITH_INV, (struct ibv_qp_ex *qpx, uint32_t rkey),
	   (qpx, rkey))
OP_WRAPPER(send_tso, STATS_OP_TSO,
	   (struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss),
	   (qpx, hdr, hdr_sz, mss))
OP_WRAPPER(local_inv, STATS_OP_LOCAL_INV, (struct ibv_qp_ex *qpx, uint32_t rkey), (qpx, rkey))
OP_WRAPPER(bind_mw, STATS_OP_BIND_MW,
	   (struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
	    const struct ibv_mw_bind_info *info), (qpx, mw, rkey, info))

/* Atomics carry 8 bytes and set no SGE length of their own before the SGE. */
OP_WRAPPER(atomic_cmp_swp, STATS_OP_ATOMIC_CMP_AND_SWP,
	   (struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, uint64_t cmp, uint64_t swap),
	   (qpx, rkey, raddr, cmp, swap))
OP_WRAPPER(atomic_fetch_add, STATS_OP_ATOMIC_FETCH_AND_ADD,
	   (struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, uint64_t add),
	   (qpx, rkey, raddr, add))
OP_WRAPPER(atomic_write, STATS_OP_ATOMIC_WRITE,
	   (struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, const void *val),
	   (qpx, rkey, raddr, val))

static void w_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct shim_qp *q = rec(qpx);

	if (!q)
		return;
	stats_batch_bytes(&q->batch, length);
	ORIG(q, wr_set_sge)(qpx, lkey, addr, length);
}

static void w_set_sge_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_sge *sg)
{
	struct shim_qp *q = rec(qpx);
	uint64_t sum = 0;

	if (!q)
		return;
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
	stats_batch_bytes(&q->batch, length);
	ORIG(q, wr_set_inline_data)(qpx, addr, length);
}

static void w_set_inline_data_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_data_buf *bufs)
{
	struct shim_qp *q = rec(qpx);
	uint64_t sum = 0;

	if (!q)
		return;
	for (size_t i = 0; i < n; i++)
		sum += bufs[i].length;
	stats_batch_bytes(&q->batch, sum);
	ORIG(q, wr_set_inline_data_list)(qpx, n, bufs);
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
	atomic_store_explicit(&q->qpx, qpx, memory_order_release);
}

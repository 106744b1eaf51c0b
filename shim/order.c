// SPDX-License-Identifier: MIT
/* Order between a split message's chunks and the application QP's earlier
 * WRs (see order.h): the barrier the pacer posts before a message's first
 * chunk, and what happens when it comes back (or does not).  Pacer layer;
 * may call: the per-QP record (registry.h), log. */
#include "order.h"

#include "log.h"

int shim_order_barrier = 1;

/* Before @p's first chunk: 0 when it may go, else the time to look again
 * (a barrier is on its way); -1 when @p must go whole. */
int64_t order_wait_locked(struct shim_qp *q, struct pend_wr *p, uint64_t now)
{
	struct ibv_send_wr b = { .wr_id = order_barrier_tag(q), .opcode = IBV_WR_RDMA_WRITE,
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
	rc = shim_qp_post_app(q, &b, &bad);
	if (shim_no_room(rc))
		return (int64_t)(now + LAZY_NS); /* a completion frees an entry */
	if (rc)
		return -1; /* whole, in order */
	atomic_store_explicit(&q->ord_dirty, 0, memory_order_relaxed);
	q->ord_barrier = 1;
	q->ord_deadline_ns = now + ORDER_WAIT_NS;
	return (int64_t)q->ord_deadline_ns;
}

void order_barrier_back(struct shim_qp *q)
{
	q->ord_barrier = 0;
	if (q->ord_blind) {
		/* late, but it came: the order holds again (a daemon restart,
		 * a stalled poller), so later messages may split again */
		q->ord_blind = 0;
		shim_log("QP %u: its ordering barrier came back late: large messages split again",
			 q->qp->qp_num);
	}
}

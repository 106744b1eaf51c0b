/* SPDX-License-Identifier: MIT */
/* Order between split chunks and the application QP's own WRs.
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
 * rkey is not checked).  It completes on the application's send CQ, where the shim's ibv_poll_cq
 * drops it (shim_pace_barrier_done) and posts the chunks at once.  A QP
 * whose barrier does not come back within ORDER_WAIT_NS (its CQ is polled
 * through the extended API, or not while it waits) sends such messages
 * whole from then on: in order, unsplit.  IBV_SEND_FENCE is kept a fortiori:
 * nothing earlier is outstanding when the chunks start. */

#ifndef JUSTITIA_SHIM_ORDER_H
#define JUSTITIA_SHIM_ORDER_H

#include <stdint.h>

#include "backlogs.h"
#include "registry.h"

#define ORDER_WAIT_NS 100000000ull   /* an ordering barrier's completion, at most */

/* Split chunks wait for a barrier behind the application QP's earlier WRs;
 * JUSTITIA_ORDER=none turns it off. */
extern int shim_order_barrier;

/* The wr_id of @q's barrier: odd, and no other QP's. */
static inline uint64_t order_barrier_tag(const struct shim_qp *q)
{
	return (uintptr_t)q | 1u;
}

/* Before @p's first chunk: 0 when it may go, else the time to look again
 * (a barrier is on its way); -1 when @p must go whole.  q->lock held. */
int64_t order_wait_locked(struct shim_qp *q, struct pend_wr *p, uint64_t now);
/* @q's barrier completed (the application polled it): later messages may
 * split again if it came late.  q->lock held. */
void order_barrier_back(struct shim_qp *q);

#endif

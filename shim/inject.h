/* SPDX-License-Identifier: MIT */
/* Completions the shim owes the application for work requests the provider
 * never saw (a paced WR the provider refused, and those queued behind it;
 * a split message whose chunk failed).
 *
 * Delivered in order and visible to every way of waiting: on a QP in the
 * error state (move it there first) the shim posts a marker WR that the
 * provider flushes behind every WR posted before it; that real completion
 * wakes a completion channel armed on the CQ, and ibv_poll_cq and the
 * extended poll API (cqex.c) return the owed completion in its place.  On a
 * QP in any other state the completion is returned by the next poll, after
 * what the provider returns in that poll. */
#ifndef JUSTITIA_SHIM_INJECT_H
#define JUSTITIA_SHIM_INJECT_H

#include <infiniband/verbs.h>
#include <stdatomic.h>

extern _Atomic unsigned shim_inject_pending;

/* Deliver @wc to the application on @cq, after everything the provider
 * already owes on @cq for WRs posted earlier on @wc->qp_num. */
void shim_inject_wc(struct ibv_cq *cq, const struct ibv_wc *wc);
/* The poll wrapper's part: replace the markers among the @got completions
 * in @wc by what they stand for, then append owed completions that wait for
 * no marker, up to @n in all.  Returns the new count. */
int shim_inject_fix(struct ibv_cq *cq, struct ibv_wc *wc, int got, int n);
/* A completion (@wr_id, @qp_num) polled from @cq: if it is a marker, copy
 * the owed completion to @out, forget it and return 1; else 0. */
int shim_inject_is_marker(struct ibv_cq *cq, uint64_t wr_id, uint32_t qp_num, struct ibv_wc *out);
/* Take one owed completion of @cq that waits for no marker; 1 if any. */
int shim_inject_take_ready(struct ibv_cq *cq, struct ibv_wc *out);
/* The opcode of the completion a WR of opcode @op gets. */
static inline enum ibv_wc_opcode shim_wc_opcode(enum ibv_wr_opcode op)
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

/* fork(): the child owes nothing (the parent's CQs are not its own). */
void shim_inject_atfork_child(void);

#endif

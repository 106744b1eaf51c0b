// SPDX-License-Identifier: MIT
/* Managing QPs without the daemon's socket (see attach.h).
 * Interposition layer (it stands where registration's up-calls land,
 * wiring.c); may call: the pacer (pacectl), the splitter (split), the
 * per-QP state (registry). */
#include "attach.h"

#include <errno.h>

#include "pacectl.h"
#include "registry.h"
#include "split.h"

int shim_attach_flow(struct ibv_qp *qp, uint32_t flow_id, int cls,
		     const struct jst_flow_ctl *slot, struct jst_flow_stats *st)
{
	struct shim_qp *q = shim_qp_find_sure(qp->context, qp->qp_num);

	if (!q)
		return -ENOENT;
	atomic_store_explicit(&q->cls, cls, memory_order_relaxed);
	atomic_store_explicit(&q->flow_id, flow_id, memory_order_relaxed);
	atomic_store_explicit(&q->shm_stats, st, memory_order_release);
	atomic_store_explicit(&q->slot, slot, memory_order_release);
	shim_pace_update(q);
	return 0;
}

int shim_attach_split(struct ibv_qp *qp)
{
	struct shim_qp *q = shim_qp_find_sure(qp->context, qp->qp_num);

	return q ? shim_split_create(q) : -ENOENT;
}

int shim_attach_peer_split(struct ibv_qp *qp, const struct ibv_qp_attr *rtr, int rtr_mask,
			   uint32_t peer_split)
{
	struct shim_qp *q = shim_qp_find_sure(qp->context, qp->qp_num);
	struct ibv_qp_attr r = *rtr, a = { .qp_state = IBV_QPS_INIT,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ,
				 .port_num = 1 };

	if (!q || !q->split.qp)
		return -ENOENT;
	if (peer_split > 0xffffff)
		return -EINVAL;
	shim_split_follow(q, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT, -1);
	r.qp_state = IBV_QPS_RTR;
	shim_split_follow(q, &r, rtr_mask | IBV_QP_STATE, (int)peer_split);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS };
	shim_split_follow(q, &a, IBV_QP_STATE, (int)peer_split);
	if (atomic_load(&q->split.state) != SPLIT_READY)
		return -EIO;
	shim_pace_update(q);
	return 0;
}

// SPDX-License-Identifier: MIT
/* The verbs the shim calls for its own objects (see vops.h).  Base layer;
 * may call: libibverbs only. */
#include "vops.h"

/* (static inlines and macros in verbs.h: wrapped to have an address) */
static int d_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return ibv_req_notify_cq(cq, solicited_only);
}

static struct ibv_mr *d_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return ibv_reg_mr(pd, addr, len, access);
}

static int d_dereg_mr(struct ibv_mr *mr)
{
	return ibv_dereg_mr(mr);
}

static int d_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	return ibv_query_device(ctx, attr);
}

static struct ibv_qp *d_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return ibv_create_qp(pd, attr);
}

const struct shim_verbs_ops shim_vops_default = {
	.create_comp_channel = ibv_create_comp_channel,
	.destroy_comp_channel = ibv_destroy_comp_channel,
	.create_cq = ibv_create_cq,
	.destroy_cq = ibv_destroy_cq,
	.req_notify_cq = d_req_notify_cq,
	.get_cq_event = ibv_get_cq_event,
	.ack_cq_events = ibv_ack_cq_events,
	.create_qp = d_create_qp,
	.modify_qp = ibv_modify_qp,
	.destroy_qp = ibv_destroy_qp,
	.query_device = d_query_device,
	.reg_mr = d_reg_mr,
	.dereg_mr = d_dereg_mr,
};

const struct shim_verbs_ops *_Atomic shim_vops_cur = &shim_vops_default;

void shim_vops_set(const struct shim_verbs_ops *ops)
{
	atomic_store_explicit(&shim_vops_cur, ops ? ops : &shim_vops_default,
			      memory_order_release);
}

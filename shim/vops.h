/* SPDX-License-Identifier: MIT */
/* The verbs the shim calls for its own objects: the split QP, its CQ and
 * completion channel, the device's limits, the memory the two-sided split
 * protocol registers, and the error transition of an application QP whose
 * split chunk failed.  libibverbs dispatches these through the provider's
 * private ops (or a kernel file descriptor), not through the ibv_context
 * ops a program can fill, so a provider that is not a real driver - the
 * RNIC model of justsim (docs/rnic-model.md) - hands in its own table.
 * The default is libibverbs' functions.  Post, receive and poll on the
 * split QP go through the context's ops, as the application's do
 * (registry.h, struct shim_ctx).
 * Base layer; may call: libibverbs only. */
#ifndef JUSTITIA_SHIM_VOPS_H
#define JUSTITIA_SHIM_VOPS_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stddef.h>

struct shim_verbs_ops {
	/* NULL: no completion channel (external progress, pacectl.h): the
	 * split CQ is polled, never armed */
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
	int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context,
				    struct ibv_comp_channel *ch, int comp_vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context);
	void (*ack_cq_events)(struct ibv_cq *cq, unsigned int n);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
};

/* libibverbs' functions. */
extern const struct shim_verbs_ops shim_vops_default;
/* The table in use: never NULL. */
extern const struct shim_verbs_ops *_Atomic shim_vops_cur;

static inline const struct shim_verbs_ops *shim_vops(void)
{
	return atomic_load_explicit(&shim_vops_cur, memory_order_acquire);
}

/* Use @ops (every member set but create_comp_channel/destroy_comp_channel,
 * get_cq_event, ack_cq_events, which may be NULL together) for the shim's
 * own objects from now on; NULL: libibverbs' again.  Set it before the
 * first split QP: objects are destroyed through the table in use then. */
void shim_vops_set(const struct shim_verbs_ops *ops);

#endif

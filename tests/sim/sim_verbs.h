/* SPDX-License-Identifier: MIT */
/* The model as a verbs provider: an ibv_context (inside a verbs_context,
 * like a real provider's) whose ops.post_send / post_recv / poll_cq and
 * create_qp_ex go to the RNIC model, so an application - and, once its
 * clock can be swapped, the shim (docs/rnic-model.md) - posts and polls
 * through the ordinary inline verbs: ibv_post_send(), ibv_poll_cq(),
 * ibv_create_qp_ex().
 *
 * What a real provider does through the kernel (opening a device, PDs,
 * memory registration, QP state transitions) the model skips: QPs are
 * connected with sim_verbs_connect().  A CQ's completion channel is a
 * callback (sim_verbs_cq_notify) that the model calls, in virtual time,
 * when a completion becomes visible. */
#ifndef JUSTITIA_SIM_VERBS_H
#define JUSTITIA_SIM_VERBS_H

#include <infiniband/verbs.h>

#include "sim_rnic.h"

/* A context for host @host of @net. */
struct ibv_context *sim_verbs_open(struct sim_net *net, unsigned host);
void sim_verbs_close(struct ibv_context *ctx);
struct ibv_cq *sim_verbs_create_cq(struct ibv_context *ctx, int cqe);
void sim_verbs_destroy_cq(struct ibv_cq *cq);
/* @fn(@arg) runs each time a completion is added to @cq. */
void sim_verbs_cq_notify(struct ibv_cq *cq, void (*fn)(void *arg), void *arg);
/* Connect two RC QPs created with ibv_create_qp_ex() on model contexts. */
void sim_verbs_connect(struct ibv_qp *a, struct ibv_qp *b);
void sim_verbs_destroy_qp(struct ibv_qp *qp);
/* The context's PD (QPs created with it find their context). */
struct ibv_pd *sim_verbs_pd(struct ibv_context *ctx);
/* ibv_create_qp() on the model: the model's own create_qp_ex, never a
 * wrapper installed in the context (the shim's split QPs, sim_shim.c). */
struct ibv_qp *sim_verbs_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a);
/* Virtual time of the context's model. */
uint64_t sim_verbs_now(struct ibv_context *ctx);
struct sim_evq *sim_verbs_evq(struct ibv_context *ctx);

#endif

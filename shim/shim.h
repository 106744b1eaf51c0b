/* SPDX-License-Identifier: MIT */
/* Internal interfaces between the shim's modules. */
#ifndef JUSTITIA_SHIM_H
#define JUSTITIA_SHIM_H

#include <infiniband/verbs.h>

#include "registry.h"

/* Take over the ops of a context (idempotent).  Returns its record or NULL
 * when it cannot be tracked (the context then stays untouched). */
struct shim_ctx *shim_ops_attach(struct ibv_context *ctx);
/* Record a QP the application created; attaches its context if needed.
 * @max_send_wr: the send queue size the provider granted (0: unknown). */
struct shim_qp *shim_ops_track_qp(struct ibv_qp *qp, const char *created_via,
				  uint32_t max_send_wr);

/* A completion polled from a CQ of @ctx: show a split message's full
 * length, count it.  Returns 1 when it is the shim's own ordering barrier
 * (order.h), which the application must not see: drop it. */
int shim_ops_wc(struct ibv_context *ctx, struct ibv_wc *wc);
/* Wrap the pollers of an extended CQ (cqex.c; idempotent). */
void shim_cqex_wrap(struct ibv_cq_ex *cq);

/* Wrap the wr_* pointers of @qpx (idempotent). */
void shim_qpex_wrap(struct shim_qp *q, struct ibv_qp_ex *qpx);

#endif

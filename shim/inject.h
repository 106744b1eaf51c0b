/* SPDX-License-Identifier: MIT */
/* Completions the shim owes the application for work requests the provider
 * never saw (a paced WR the provider refused, and those queued behind it).
 * ibv_poll_cq returns them before the provider's own. */
#ifndef JUSTITIA_SHIM_INJECT_H
#define JUSTITIA_SHIM_INJECT_H

#include <infiniband/verbs.h>
#include <stdatomic.h>

extern _Atomic unsigned shim_inject_pending;

void shim_inject_wc(struct ibv_cq *cq, const struct ibv_wc *wc);
/* Move up to @n completions owed on @cq into @wc; returns how many. */
int shim_inject_take(struct ibv_cq *cq, int n, struct ibv_wc *wc);
/* fork(): the child owes nothing (the parent's CQs are not its own). */
void shim_inject_atfork_child(void);

#endif

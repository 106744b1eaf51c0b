/* SPDX-License-Identifier: MIT */
/* Splitting of large RDMA WRITE and READ messages (paper §5.2).
 *
 * Each bandwidth RC QP gets one split QP in the same PD, with its own CQ and
 * completion channel.  The split QP mirrors the application QP's state
 * transitions and connects to the split QP that the PEER's shim created in
 * the peer application's PD (a remote WRITE/READ is checked against the
 * responder QP's PD), whose number the daemons tell us: never guessed.
 * All chunks of a message but the last go to the split QP; the last goes to
 * the application's QP, with the application's wr_id and flags, once the
 * others completed, so the application's own completion means the whole
 * message is done. */
#ifndef JUSTITIA_SHIM_SPLIT_H
#define JUSTITIA_SHIM_SPLIT_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "splitstate.h"

struct shim_qp;

/* The progress thread sleeps on split QPs' completion channels: the
 * splitter tells it when one comes and goes (wiring.c fills this in). */
struct shim_split_hooks {
	int (*watch)(struct shim_qp *q);     /* 0 or -errno */
	void (*unwatch)(struct shim_qp *q);
};
extern const struct shim_split_hooks shim_split_hooks;

/* Create the split QP of @q (a bandwidth RC QP).  Its number, or -errno. */
int shim_split_create(struct shim_qp *q);
/* The application QP moved as @attr/@mask say: mirror it on the split QP.
 * @peer_split: the peer's split QP (-1: none, so pace only). */
void shim_split_follow(struct shim_qp *q, const struct ibv_qp_attr *attr, int mask, int peer_split);
void shim_split_destroy(struct shim_qp *q);
/* How many split QPs exist: while none does, completions need no look at
 * (ops.c). */
extern _Atomic unsigned shim_split_qps;
/* fork(): the parent's split QPs are not the child's. */
void shim_split_atfork_child(void);

#endif

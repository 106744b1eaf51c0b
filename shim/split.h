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

#include "splitmsg.h"

#define SPLIT_MAX_SGE 8    /* messages with more SGEs are not split */
/* Split chunks in flight per QP: what the granted rate moves in a chunk's
 * completion time, in these bounds (pace.c, split_window()). */
#define SPLIT_WINDOW 4
#define SPLIT_WINDOW_MAX 32

enum split_state {
	SPLIT_NONE,        /* no split QP */
	SPLIT_CREATED,     /* split QP exists, not connected yet */
	SPLIT_READY,       /* connected to the peer's split QP: split */
	SPLIT_PACE_ONLY,   /* the peer has none: pace whole messages */
};

struct shim_split {
	_Atomic int state;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int peer_split_qpn;    /* -1 until known */
	bool armed;            /* cq raises its next completion event (q->lock) */
	/* the application's QP grants no REMOTE_WRITE, so neither does the
	 * split QP: the peer's SENDs to it go whole (splitmsg.c) */
	bool no_remote_write;
	uint8_t rd_atom, init_rd_atom; /* READ chunks in flight: as responder, requester */
	/* data chunks (pace.c): each has a sequence number, its wr_id << 3;
	 * only some are signaled, and a completion (or an error's) says every
	 * chunk up to it is done */
	uint64_t c_posted, c_done;
	uint64_t c_post_ns[SPLIT_WINDOW_MAX];
	uint32_t c_since_sig;      /* chunks posted since the last signaled one */
	uint64_t c_delay_ns;       /* a chunk's post-to-completion time, averaged */
	struct splitmsg_state msg; /* SEND / WRITE_WITH_IMM (splitmsg.c) */
};

struct shim_qp;

/* Create the split QP of @q (a bandwidth RC QP).  Its number, or -errno. */
int shim_split_create(struct shim_qp *q);
/* The application QP moved as @attr/@mask say: mirror it on the split QP.
 * @peer_split: the peer's split QP (-1: none, so pace only). */
void shim_split_follow(struct shim_qp *q, const struct ibv_qp_attr *attr, int mask, int peer_split);
void shim_split_destroy(struct shim_qp *q);
/* How many split QPs exist: while none does, completions need no look at
 * (ops.c). */
extern _Atomic unsigned shim_split_qps;

/* The SGEs covering bytes [@off, @off + @len) of the message @sg/@nsge,
 * into @out (at most @max).  Returns their number, or -1 if they do not
 * fit. */
int shim_split_sges(const struct ibv_sge *sg, int nsge, uint64_t off, uint64_t len,
		    struct ibv_sge *out, int max);

#endif

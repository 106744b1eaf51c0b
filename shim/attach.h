/* SPDX-License-Identifier: MIT */
/* Managing QPs without the daemon's socket: what registration and the
 * peer channel give a QP (its flow slot and counters, the peer's split QP
 * number), handed in by a program that plays the daemon itself - justsim,
 * which runs the shim on the RNIC model in virtual time
 * (docs/rnic-model.md), and tests.  With shim_client_attach() (client.h)
 * for the global segment, vclock.h for the clock, vops.h for the split
 * QP's verbs and shim_pace_set_external() (pacectl.h) for the progress
 * thread, nothing of the shim needs a daemon, a kernel device or a wall
 * clock. */
#ifndef JUSTITIA_SHIM_ATTACH_H
#define JUSTITIA_SHIM_ATTACH_H

#include <infiniband/verbs.h>
#include <stdint.h>

#include "shm_abi.h"

/* @qp (tracked by the shim: created through a context it attached to) is
 * flow @flow_id of class @cls (enum jst_flow_class), steered by the
 * daemon's @slot and counted in @st, as registration would make it; then
 * its mode is decided (pacectl.h).  0, or -ENOENT for an untracked QP. */
int shim_attach_flow(struct ibv_qp *qp, uint32_t flow_id, int cls,
		     const struct jst_flow_ctl *slot, struct jst_flow_stats *st);
/* Create @qp's split QP (split.h; through the verbs table of vops.h).  Its
 * number, or -errno. */
int shim_attach_split(struct ibv_qp *qp);
/* The peer's split QP is @peer_split: take @qp's split QP through INIT,
 * RTR (with @rtr's address, path MTU, ...) and RTS, as the application's
 * ibv_modify_qp calls and the daemons' answer would.  0 or -errno (the
 * split QP then stays unsplit: messages go whole). */
int shim_attach_peer_split(struct ibv_qp *qp, const struct ibv_qp_attr *rtr, int rtr_mask,
			   uint32_t peer_split);

#endif

/* SPDX-License-Identifier: MIT */
/* The real shim (libjustitia's post/poll/split/pace code, shim/) on the
 * model: the model's contexts are attached as a provider's are (their
 * post_send, post_recv, poll_cq and create_qp_ex go through the shim), the
 * shim reads the model's virtual clock (shim/vclock.h), creates its split
 * QPs through the model's verbs (shim/vops.h), runs no progress thread:
 * its wake-ups are model events at the deadlines shim_pace_step() returns
 * and whenever a split CQ gets a completion (shim/pacectl.h), and it
 * reads the grants the model's daemons write into each flow's slot of a
 * global segment that no socket brought (shim/attach.h).
 *
 * The shim is one per process: one run at a time. */
#ifndef JUSTITIA_SIM_SHIM_H
#define JUSTITIA_SIM_SHIM_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "shm_abi.h"

struct sim_shim;

/* Put the shim on @ctxs (@hosts of them, of one model). */
struct sim_shim *sim_shim_new(struct ibv_context **ctxs, unsigned hosts);
/* Forget every QP and context (before the model frees them). */
void sim_shim_free(struct sim_shim *s);
/* Manage @qp (host side) as flow @flow_id of class @cls with @slot and
 * @st; @peer_qp: its peer (already connected in the model), which gets a
 * split QP too when @split.  0 or -errno. */
int sim_shim_flow(struct sim_shim *s, struct ibv_qp *qp, struct ibv_qp *peer_qp,
		  uint32_t flow_id, int cls, bool split, const struct jst_flow_ctl *slot,
		  struct jst_flow_stats *st);
/* The application posted or polled: the shim's next wake-up may be now. */
void sim_shim_kick(struct sim_shim *s);
/* A daemon step: its heartbeat; @mode_changed: a flow's flags changed
 * (the daemon bumps mode_gen then, common/shm_abi.h). */
void sim_shim_daemon_step(struct sim_shim *s, bool mode_changed);

#endif

/* SPDX-License-Identifier: MIT */
/* Pacer control: each QP's mode (direct, paced, or direct through the
 * window) from its class and the daemon's slot, the progress thread that
 * re-decides it and drains the backlogs, and what the control path tells
 * the pacer (a QP reset or destroyed, the daemon gone, fork). */
#ifndef JUSTITIA_SHIM_PACECTL_H
#define JUSTITIA_SHIM_PACECTL_H

#include <infiniband/verbs.h>

#include "registry.h"
#include "stats.h"

/* Decide whether @q is direct from its class and the daemon's slot. */
void shim_pace_update(struct shim_qp *q);
/* The daemon changed its pace mode since @q last looked (jst_shm_global
 * mode_gen): re-decide whether @q is direct.  Returns 1 when it did.  Costs
 * two loads when nothing changed: the direct post paths call it. */
int shim_pace_recheck(struct shim_qp *q);
/* The application QP went to RESET: its backlog and the chunks in flight
 * are gone, as the provider's WRs are (no completions). */
void shim_pace_qp_reset(struct shim_qp *q);
/* Drop the backlog of a QP that is being destroyed. */
void shim_pace_qp_gone(struct shim_qp *q);
/* The daemon went away: post every backlog unpaced, make every QP direct. */
void shim_pace_fail_open(void);
/* From the application's ibv_poll_cq on @cq: progress the backlogs of the
 * QPs that complete there (split completions, due tokens) without waiting
 * for the progress thread to be scheduled.  Never blocks.  Returns 1 when a
 * QP completing on @cq still holds work back (a token or its split chunks
 * are outstanding), else 0. */
int shim_pace_progress(struct ibv_cq *cq);
/* Whether an empty poll of a CQ whose QP is held back yields the CPU
 * (JUSTITIA_POLL_YIELD, default 1). */
extern int shim_poll_yield;
/* Watch / stop watching the completion channel of @q's split QP. */
int shim_pace_watch(struct shim_qp *q);
void shim_pace_unwatch(struct shim_qp *q);
/* Start the progress thread if it does not run yet (once per process):
 * it also reconnects to a daemon that was not there (client.c). */
int shim_pace_start_thread(void);
/* External progress, for a program that runs the shim in virtual time
 * (justsim, docs/rnic-model.md): from now on no progress thread, timerfd,
 * epoll or eventfd is created; the caller does the thread's work by
 * calling shim_pace_step() at the time it returns, and whenever a split
 * CQ got a completion (split QPs then have no completion channel: the
 * shim's own verbs table, vops.h, has none).  Call it before the first QP.
 * It is for good: the thread's descriptors are never made. */
void shim_pace_set_external(void);
/* One wake-up of the progress thread at @now (the clock of vclock.h):
 * the periodic work when due (re-decide each QP's mode, the daemon link's
 * poll), reap and drain every QP with a backlog, and reap @split_cq (a
 * split QP's CQ with new completions: its cq_context is the QP's record,
 * as split.c creates it; NULL: none).  Returns when to call it next, as
 * the thread arms its timer: the next token, or the next tick (a backlog
 * waiting for split completions only comes back with @split_cq). */
uint64_t shim_pace_step(uint64_t now, struct ibv_cq *split_cq);
/* Where the pacer's work ran so far (JUSTITIA_STATS). */
void shim_pace_counters(struct stats_pacer *out);
/* fork(): the progress thread does not exist in the child. */
void shim_pace_atfork_child(void);

#endif

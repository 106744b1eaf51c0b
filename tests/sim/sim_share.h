/* SPDX-License-Identifier: MIT */
/* The daemon's pace modes in the model (common/shm_abi.h, enum
 * jst_pace_mode): PROTECT while a latency flow is registered (SafeUtil,
 * small chunks); else SHARE while two or more resource-hungry flows are
 * active - the token stream's rate is C, adapted every SHARE_WINDOW_NS by
 * the daemon's daemon/share.c from what the flows really moved, each flow
 * granted its max-min fair fraction - and OFF otherwise (nothing paced or
 * split).  This is the model's counterpart of the glue in
 * daemon/ctrlshare.c (set_pace_mode, measure_window, share_rates); the
 * algorithm is share.c's own. */
#ifndef JUSTITIA_SIM_SHARE_H
#define JUSTITIA_SIM_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/shm_abi.h"
#include "daemon/share.h"
#include "daemon/tokens.h"
#include "sim_flow.h"

struct sim_share {
	int mode;                   /* enum jst_pace_mode */
	int min_mode;               /* the lowest mode allowed (controller.pace_mode) */
	struct share_state st;
	struct share_flow *sf;
	uint64_t win_t0;
	uint64_t *b0, *o0, *w0, *meas_bps, *meas_ops;
	double *meas_bound;         /* share of the window spent waiting for tokens */
	uint32_t *q0;               /* the shim's queued_us at the window's start */
	double *meas_queued;        /* ... with its work queued */
	bool *sat;                     /* share_flow.satisfied, kept per flow */
	double *fill;                  /* share_flow.fill, the same */
	double *sat_bps;               /* share_flow.sat_bps, the same */
	uint32_t *no_lend;             /* share_flow.no_lend, the same */
	struct share_boost *boost;     /* share_flow.boost, the same */
	double ops_per_bit;         /* TokenOps / (8 TokenBytes) */
	uint64_t max_rate_bps;
	uint32_t mode_changes;
};

void sim_share_init(struct sim_share *s, uint32_t n, int min_mode, uint64_t max_rate_bps,
		    uint64_t token_bytes, uint64_t token_ops);
void sim_share_fini(struct sim_share *s);
/* After tokens_distribute(): choose the mode and, in OFF and SHARE, replace
 * the bandwidth and throughput flows' rates in @tf.  @tf[n..n+n_remote)
 * are the remote READ flows this host serves (sim_view.h): they compete
 * too, and in SHARE get their weight's part of MaxRate (ctrlshare.c's
 * remote_share_rates).  @n_lat: the latency flows, local and incoming.
 * Returns the mode. */
int sim_share_step(struct sim_share *s, struct sim_flow **fl, const uint8_t *cls,
		   struct tokens_flow *tf, uint32_t n, uint32_t n_remote, uint32_t n_lat,
		   uint64_t now);

#endif

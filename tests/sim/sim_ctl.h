/* SPDX-License-Identifier: MIT */
/* The daemon's control loop in the model: one per sending host (with the
 * peer views, also per host that only serves READs or receives), stepping
 * every RefPeriod in virtual time and running the daemon's own modules -
 * daemon/quantile.c (the reference flow's window and Current99),
 * daemon/aimd.c (Pseudocode 1, SafeUtil) and daemon/tokens.c (each flow's
 * share) - on the model's flows.  They are pure functions of their inputs
 * and take the time as an argument, so nothing in them changes.
 *
 * The reference flow is a model flow: a 10-byte RDMA WRITE on a QP of its
 * own from this host to ref_peer, posted every RefPeriod (while a latency
 * flow exists, as the daemon does), its post-to-completion time added to
 * the quantile window.  This file is the model's counterpart of
 * daemon/controller.c's glue (which needs libev, shared memory and a
 * device) and chooses the chunk size the same way: chunk_latency while a
 * latency flow is registered, chunk_default otherwise.
 *
 * With the peer views (sim_ctl_set_view, sim_view.h) it also counts, as
 * controller.c does, the READ flows other hosts registered here (this NIC
 * sends their data: in L'/B'/T' and the tokens) and the flows registered
 * as arriving here (an incoming latency flow is protected as a local one;
 * the incoming bandwidth flows get the receiver-side shares), sends their
 * requesters the shares, and publishes each local flow's rate and chunk
 * with its remote grant applied. */
#ifndef JUSTITIA_SIM_CTL_H
#define JUSTITIA_SIM_CTL_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "daemon/aimd.h"
#include "daemon/quantile.h"
#include "daemon/tokens.h"
#include "sim_flow.h"
#include "sim_share.h"
#include "sim_view.h"

#define SIM_PACE_PAPER (-1)

struct sim_ctl_cfg {
	uint64_t max_rate_bps;
	uint64_t max_ops;              /* devices[].max_ops (0: unknown) */
	uint64_t period_ns;          /* RefPeriod */
	uint32_t window;             /* RefCount */
	uint64_t target99_ns;
	uint64_t step_bps;           /* 0 = auto */
	uint64_t delta_ns, stale_ns;
	uint64_t token_bytes;
	uint32_t chunk_latency, chunk_default;
	uint32_t alpha_permille;
	bool one_per_app;
	int min_pace_mode;           /* enum jst_pace_mode: controller.pace_mode;
	                              * SIM_PACE_PAPER: no pace modes, tokens at
	                              * SafeUtil also without latency flows (the
	                              * paper; the daemon before share.c) */
	unsigned host, ref_peer;
};

/* The daemon's defaults (justitiad.json(5)) with the given MaxRate. */
void sim_ctl_cfg_default(struct sim_ctl_cfg *c, uint64_t max_rate_bps);

struct sim_ctl_point {
	uint64_t t_ns, safe_util_bps, current99_ns;
	uint64_t stream_bps;         /* the tokens' rate: SafeUtil, C (SHARE), 0 (OFF) */
	uint8_t action;              /* enum aimd_action */
	uint8_t mode;                /* enum jst_pace_mode */
};

struct sim_ctl {
	struct sim_ctl_cfg c;
	struct aimd_config ac;
	struct aimd a;
	struct quantile win;
	uint64_t last_total;
	struct sim_flow **flows;     /* the managed flows of this host */
	uint32_t n_flows;
	struct aimd_flow *af;
	struct tokens_flow *tf;
	uint8_t *cls;
	struct sim_share share;
	int mode;
	/* the peer views: NULL without */
	struct sim_view *view;
	uint32_t n_remote, n_recv;   /* served READ flows, incoming flows, last step */
	/* the reference flow */
	struct ibv_context *ctx;
	struct ibv_cq *cq, *peer_cq;
	struct ibv_qp *qp, *peer_qp;
	bool ref_busy;
	uint64_t ref_post_ns;
	/* results */
	struct sim_ctl_point *trace;
	uint32_t n_trace, cap_trace;
	uint64_t steps, cpu_ns, cpu_max_ns;
	uint64_t grant_sum_bps, grant_n;  /* SafeUtil averaged over measured steps */
	uint64_t stream_sum_bps;          /* the tokens' rate (OFF: MaxRate), the same */
	uint64_t meas_start;
};

/* @ctxs: one context per host. 0 or -errno. */
int sim_ctl_init(struct sim_ctl *k, struct ibv_context **ctxs, const struct sim_ctl_cfg *c,
		 struct sim_flow **flows, uint32_t n_flows);
void sim_ctl_fini(struct sim_ctl *k);
/* Count the flows registered with this host in @v (at most @max of them)
 * from the next step on. */
void sim_ctl_set_view(struct sim_ctl *k, struct sim_view *v, uint32_t max);
void sim_ctl_measure(struct sim_ctl *k, uint64_t now);

#endif

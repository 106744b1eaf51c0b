/* SPDX-License-Identifier: MIT */
/* The isolation controller, driven by the daemon's loop: every RefPeriod
 * (its own ev_timer) it reads the flows' activity, counts L/B/T, runs the
 * AIMD step (aimd.c) on the reference flow's Current99 (refflow.c,
 * quantile.c), distributes the token stream (tokens.c) and publishes the
 * result in the shared memory.  It controls one RDMA port: devices[0] of
 * the configuration, or the first active port when none is configured;
 * flows on other ports are registered but not paced (their warning says
 * so).  With no flow registered and no reference flow wanted it steps every
 * 100 ms instead. */
#ifndef JUSTITIAD_CONTROLLER_H
#define JUSTITIAD_CONTROLLER_H

#include <ev.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "aimd.h"
#include "calib.h"
#include "quantile.h"
#include "refflow.h"
#include "share.h"
#include "tokens.h"

#define CTRL_TRACE 200                 /* SafeUtil trace entries */
#define CTRL_TRACE_NS 25000000ull      /* one entry per 25 ms: 5 s of history */
#define CTRL_IDLE_S 0.1                /* step interval with nothing to control */
/* ... with no latency flow (shares only: SafeUtil is MaxRate, the shares
 * move once a share window, activity is seen at the counters' pace).  A
 * wake-up costs where the host's CPUs are the NIC: at 10 ms, a daemon with
 * one flow registered took 9% of a vCPU on Soft-RoCE under TCG, mostly in
 * the scheduler (session 25) */
#define CTRL_RELAXED_S 0.05
#define CTRL_ACTIVE_PERIODS 20         /* active: counters grew within 20 periods */
#define CTRL_ACTIVE_MIN_NS 100000000ull /* ... and at least 100 ms */
#define CTRL_POLL_PERIODS 4            /* read the shims' counters every 4 periods
                                        * (every step when relaxed or idle) */
#define CTRL_BASE_EPOCH_NS 5000000000ull /* base latency: least sample of 5-10 s */

/* What the controller publishes (filled by the isolation controller; until
 * a reference flow runs, "measured" stays false = no measurement). */
struct ctrl_view {
	int mode;                     /* enum jst_ctrl_mode */
	/* the window's quantiles; 0 is a measurement too (the loopback
	 * correction's difference, clamped, when the twin was as slow) */
	bool measured;
	uint64_t current99_ns, p50_ns, p999_ns;
	uint64_t safe_util_bps;
	uint64_t samples;
	const char *ref_state;        /* "off", "connecting", "up", "down" */
	char ref_peer[96];
	char ref_error[160];
};

struct daemon;
struct flow;
struct config_device;

struct ctrl_trace {
	uint64_t t_ns;                  /* end of the interval, since the daemon started */
	uint64_t safe_util_bps;         /* at the end */
	uint64_t min_bps, max_bps;      /* over the interval */
	uint64_t floor_bps;             /* the lowest floor of the interval */
	uint64_t current99_ns;
	uint8_t mode;
};

struct ctrl {
	struct daemon *d;
	ev_timer step_w;
	bool idle;
	struct quantile win;
	struct quantile raw_win;        /* the uncorrected samples (loopback correction) */
	struct aimd aimd;
	struct aimd_config acfg;
	struct refflow ref;
	bool ref_ok;
	bool wanted;                    /* the reference flow is wanted */
	struct calib cal;
	/* the controlled port */
	char dev[64];
	unsigned port;
	int gid;
	uint32_t dev_gen;               /* bumped when the port changes (flow caches) */
	uint64_t link_bps, calib_bps;
	time_t calib_at;
	unsigned calib_qps;             /* QPs of the stored calibration (0: not recorded) */
	uint64_t max_rate_bps;
	const char *max_rate_src;       /* "config", "calibrated", "link", "unknown" */
	/* per step */
	struct tokens_flow *tf;
	struct aimd_flow *af;
	struct flow **fp;
	size_t cap;
	uint64_t last_total;            /* window samples at the last step */
	uint64_t target99_ns;           /* Target99 in force (over the base, if so configured) */
	uint64_t base_ns;               /* the reference flow's base latency, 0: none yet */
	uint64_t base_cur_ns, base_prev_ns, base_epoch_ns; /* its two epochs' minima */
	bool have99;
	uint64_t current99_ns, p50_ns, p999_ns;
	uint64_t raw99_ns;              /* loopback correction: the p99 before it, 0: none */
	struct aimd_counts n;           /* logical counts of the last step */
	uint32_t n_latency_all;         /* latency flows on every port (chunk rule) */
	/* pace modes (common/shm_abi.h, share.h) */
	int pace_mode;                  /* enum jst_pace_mode */
	uint32_t mode_gen;
	struct share_state share;       /* SHARE: the capacity shared */
	uint64_t win_t0_ns;             /* the measurement window's start */
	uint64_t competed_ns;           /* two or more flows last competed */
	struct share_flow *sf;
	size_t n_remote;                /* remote READ flows (rread.h): tf[n..n+n_remote) */
	size_t n_recv;                  /* incoming flows (rread.h): af[n+n_remote..+n_recv) */
	uint32_t chunk_bytes;
	uint64_t token_ops, tau_ns;
	uint64_t steps, decreases;      /* decreases: halving steps (violation or stale) */
	uint64_t measured_ns;           /* the latency the last AIMD step used */
	uint64_t violated_ns;           /* when a measurement last missed the target */
	uint64_t violated_by_ns;        /* ... and that measurement */
	uint64_t last_link_ns, last_debug_ns;
	/* trace */
	struct ctrl_trace trace[CTRL_TRACE];
	size_t trace_head, trace_n;
	struct ctrl_trace acc;
	bool acc_open;
};

/* After the control socket and the peer channel (d->peer): open the window,
 * the reference flow, load the calibration, start the step timer. */
int ctrl_init(struct ctrl *c, struct daemon *d);
void ctrl_fini(struct ctrl *c);
/* After a reload (d->cfg replaced). */
void ctrl_reconfigure(struct ctrl *c);
/* One period, at @now_ns (exposed for the benchmark). */
void ctrl_step(struct ctrl *c, uint64_t now_ns);

/* A flow was registered: soft admission control (a latency flow that
 * registers while Current99 > Target99 gets a warning), a warning for a flow
 * on a port the controller does not control, and an immediate step. */
void ctrl_flow_registered(struct ctrl *c, struct flow *f);
/* Add the controller's members to the "controller" object of status. */
void ctrl_status(struct ctrl *c, json_t *controller);
/* Target99 as the configuration says now: target99_us, above the base
 * latency with target99_over_base (what the next step uses). */
uint64_t ctrl_target99_ns(const struct ctrl *c);
/* "off", "share", "protect" (enum jst_pace_mode). */
const char *ctrl_pace_mode_name(int mode);
/* The MaxRate status shows for a configured device (0: unknown). */
uint64_t ctrl_device_max_rate(struct ctrl *c, const struct config_device *dv);
/* "calibrate" (root only, checked by the caller): the reply. */
json_t *ctrl_calibrate(struct ctrl *c, json_t *req);

#endif

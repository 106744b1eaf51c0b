/* SPDX-License-Identifier: MIT */
/* One run of the model: hosts, flows, and (with Justitia) one daemon
 * control loop per sending host - with the peer views (sim_view.h) per
 * host that sends, serves READs or receives; results per flow class. */
#ifndef JUSTITIA_SIM_RUN_H
#define JUSTITIA_SIM_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "sim_ctl.h"
#include "sim_flow.h"
#include "sim_rnic.h"

#define SIM_MAX_HOSTS 64

struct sim_params {
	struct sim_nic_params nic;
	struct sim_ctl_cfg ctl;     /* host and ref_peer are set per host */
	unsigned hosts;
	uint64_t warmup_ns, duration_ns;  /* measured: [warmup, warmup + duration) */
	uint64_t start_ns;          /* applications start then (the daemon at 0) */
	uint64_t seed;
	uint64_t trace_every_ns;    /* SafeUtil samples kept for the report */
	/* the peer views (sim_view.h), with Justitia: the run's warmup is
	 * longer by sync_ns (the requesters register at their first sync
	 * after the flows started) */
	bool views;
	uint64_t channel_ns;        /* one way (SIM_VIEW_DELAY_NS) */
	uint64_t sync_ns;           /* the requesters' sync (RREAD_SYNC_NS) */
	unsigned view_kinds;        /* SIM_VIEW_*: which views (0: both) */
};

void sim_params_default(struct sim_params *p);

struct sim_lat_stats {
	uint64_t n, p50, p99, p999, max;
};

struct sim_result {
	bool justitia;
	bool shim;                  /* Justitia was the real shim */
	/* latency flows, all samples together */
	struct sim_lat_stats lat;
	/* bandwidth flows */
	uint32_t n_bw;
	uint64_t bw_sum_bps, bw_min_bps, bw_max_bps;
	double jain;
	uint64_t *bw_bps;           /* per bandwidth flow, in flow order */
	/* throughput flows */
	uint32_t n_tput;
	double tput_mops;
	/* controller (host 0's) */
	uint64_t safe_util_avg_bps;
	uint64_t stream_avg_bps;    /* the tokens' rate: SafeUtil, C (SHARE), MaxRate (OFF) */
	uint32_t mode_changes;
	uint64_t steps;
	double cpu_ns_per_step, cpu_max_ns;
	struct sim_ctl_point *trace;
	uint32_t n_trace;
	/* the peer views, at the end of the run */
	bool views;
	uint32_t served_read, served_recv;  /* flows registered, all hosts */
	uint64_t view_grants;               /* remote_grants messages */
	struct sim_grant *bw_grant;         /* per bandwidth flow: as published */
	struct sim_remote *bw_remote;       /* ... and its registration, remote grant */
	/* the model */
	uint64_t events, errors;
	uint64_t wire_bps;          /* host 0's transmit wire rate */
};

/* Run flows @f[0..n) with or without Justitia.  0 or -errno. */
int sim_run(const struct sim_params *p, const struct sim_flow_cfg *f, uint32_t n,
	    bool justitia, struct sim_result *out);
void sim_result_free(struct sim_result *r);
/* Nearest-rank percentiles of @v (sorted in place). */
void sim_lat_stats(uint64_t *v, uint64_t n, struct sim_lat_stats *out);
double sim_jain(const uint64_t *x, uint32_t n);

#endif

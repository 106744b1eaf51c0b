/* SPDX-License-Identifier: MIT */
/* Applications in the model: each flow is one application QP (RC) from
 * host src to host dst, driven in virtual time, posting and polling through
 * the verbs ops of the model's provider (sim_verbs.h).
 *
 *   SIM_FLOW_LAT   ping-pong: one msg_bytes message outstanding; the next
 *                  is posted when the previous one's completion is polled;
 *                  each post-to-completion time is a latency sample
 *   SIM_FLOW_BW    a stream: depth messages of msg_bytes outstanding
 *   SIM_FLOW_TPUT  batches: batch messages of msg_bytes posted together, the
 *                  next batch when the whole batch completed
 *
 * With Justitia the bandwidth and throughput flows post through the real
 * shim (sim_shim.h, f->shim), which splits and paces them as the daemon's
 * grant in their slot says; latency flows post directly (the shim's
 * latency class is its direct path). */
#ifndef JUSTITIA_SIM_FLOW_H
#define JUSTITIA_SIM_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

enum sim_flow_kind { SIM_FLOW_LAT, SIM_FLOW_BW, SIM_FLOW_TPUT };

struct sim_flow_cfg {
	enum sim_flow_kind kind;
	unsigned src, dst;          /* hosts */
	uint32_t msg_bytes;
	uint32_t depth;             /* BW: messages outstanding */
	uint32_t batch;             /* TPUT: messages per batch */
	uint32_t weight;
	enum ibv_wr_opcode opcode;  /* IBV_WR_RDMA_WRITE (default) or _READ, _SEND */
	uint64_t start_ns;
};

struct sim_grant {                  /* the daemon's last grant to the flow */
	uint64_t rate_bps;          /* bandwidth flows; 0 = unpaced */
	uint64_t ops_per_s;         /* throughput flows */
	uint32_t chunk;             /* split size; 0 = pace mode OFF */
};

/* The requester's side of a flow's registration with the daemon at its
 * other end (sim_view.h; daemon/flows.h, struct flow's remote). */
struct sim_remote {
	bool registered;            /* the other end accepted remote_open */
	bool busy;                  /* a remote_open in flight */
	uint8_t kind;               /* enum rread_kind, as registered */
	uint32_t weight;            /* ... and with what it said */
	bool active;
	uint64_t grant_bps;         /* the other end's share, 0: it does not limit */
	uint32_t chunk;             /* its chunk in force, 0: no say */
};

struct sim_shim;
struct jst_flow_ctl;
struct jst_flow_stats;

struct sim_flow {
	struct sim_flow_cfg c;
	/* Justitia by the real shim (sim_shim.h): the daemon's slot and the
	 * flow's counters; NULL: no Justitia (or a latency flow) */
	struct sim_shim *shim;
	struct jst_flow_ctl *slot;
	struct jst_flow_stats *st;
	uint32_t id;
	struct ibv_context *ctx;
	struct ibv_cq *cq, *rcq;
	struct ibv_qp *qp, *peer_qp;
	struct sim_grant grant;     /* as published (sim_view_apply included) */
	struct sim_remote remote;   /* the peer views (sim_view.h) */
	bool poll_pending;
	bool started;
	/* message state */
	uint32_t outstanding;       /* application messages posted, not completed */
	uint64_t post_ns;           /* LAT: post time of the message in flight */
	uint64_t next_id;
	/* results (from the measurement start) */
	uint64_t tot_bytes, tot_msgs;  /* since the start (the daemon's window counters) */
	uint64_t meas_start, bytes, msgs;
	uint64_t *lat;
	uint32_t n_lat, cap_lat;
	uint64_t errors;
};

/* Create the flow's QPs (and the peer's) on the model and start it at
 * c->start_ns.  @ctxs: one context per host. */
struct sim_flow *sim_flow_new(struct ibv_context **ctxs, const struct sim_flow_cfg *c,
			      uint32_t id, struct sim_shim *shim);
void sim_flow_free(struct sim_flow *f);
/* The daemon's grant: written into the flow's slot for the shim (as
 * daemon/flows.c publishes it); returns whether its flags changed. */
bool sim_flow_grant(struct sim_flow *f, uint64_t rate_bps, uint64_t ops_per_s, uint32_t chunk);
/* Has work queued or in flight (the daemon's "active"). */
bool sim_flow_active(const struct sim_flow *f);
/* ns it waited for tokens until @now (the shim's token_wait_ns). */
uint64_t sim_flow_token_wait(const struct sim_flow *f, uint64_t now);
/* us its work was queued (the shim's queued_us, modulo 2^32). */
uint32_t sim_flow_queued_us(const struct sim_flow *f);
/* Forget results so far; measure from now. */
void sim_flow_measure(struct sim_flow *f, uint64_t now);


#endif

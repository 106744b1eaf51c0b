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
 * With Justitia the flows post through the real shim (sim_shim.h, f->shim).
 * Above SIM_SHIM_MAX_FLOWS flows (sim_run.h), a MODEL-SIDE STAND-IN FOR THE
 * SHIM (docs/rnic-model.md) instead: a managed bandwidth flow's messages are split into
 * the daemon's chunk size - all chunks but the last on a second "split" QP,
 * at most split_window in flight, the last on the application's QP once the
 * others completed - and every chunk (every message of a managed throughput
 * flow) is paid for from a common/bucket.h virtual-time bucket at the rate
 * the daemon's token distributor granted.  This is the shim's documented
 * behaviour (libjustitia(7)), re-expressed here; none of shim/ runs. */
#ifndef JUSTITIA_SIM_FLOW_H
#define JUSTITIA_SIM_FLOW_H

#include <stdatomic.h>
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

struct sim_pacer {                  /* the model-side stand-in, see above */
	bool managed;               /* Justitia on for this flow */
	uint64_t rate_bps;          /* granted (bandwidth flows); 0 = unpaced */
	uint64_t ops_per_s;         /* granted (throughput flows) */
	uint32_t chunk;             /* split size; 0 = no split */
	uint32_t window;            /* split chunks in flight */
	uint64_t burst_ns;
	_Atomic uint64_t vtime;     /* common/bucket.h state */
	bool wake_pending;
	uint64_t wait_since;        /* waits for a token since (0: does not) */
	uint64_t wait_ns;           /* waited for tokens, in all (the shim's
				     * jst_flow_stats.token_wait_ns) */
};

struct sim_shim;
struct jst_flow_ctl;
struct jst_flow_stats;

struct sim_flow {
	struct sim_flow_cfg c;
	/* Justitia by the real shim (sim_shim.h): the daemon's slot and the
	 * flow's counters; NULL: the stand-in (pace) or no Justitia */
	struct sim_shim *shim;
	struct jst_flow_ctl *slot;
	struct jst_flow_stats *st;
	uint32_t id;
	struct ibv_context *ctx;
	struct ibv_cq *cq, *rcq;
	struct ibv_qp *qp, *split_qp;
	struct ibv_qp *peer_qp, *peer_split_qp;
	struct sim_pacer pace;
	bool poll_pending;
	bool started;
	/* message state */
	uint32_t outstanding;       /* application messages posted, not completed */
	uint64_t post_ns;           /* LAT: post time of the message in flight */
	uint64_t next_id;
	/* split state (managed BW): the message being chunked */
	bool msg_open;
	uint64_t msg_off;           /* bytes posted as split chunks */
	uint32_t chunks_inflight;
	uint32_t backlog;           /* application messages waiting to be split */
	uint32_t tput_left;         /* TPUT: messages of this batch not posted yet */
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
			      uint32_t id, bool managed, struct sim_shim *shim);
void sim_flow_free(struct sim_flow *f);
/* The daemon's grant: written into the flow's slot for the shim (as
 * daemon/flows.c publishes it), or handed to the stand-in. */
bool sim_flow_grant(struct sim_flow *f, uint64_t rate_bps, uint64_t ops_per_s, uint32_t chunk);
/* Has work queued or in flight (the daemon's "active"). */
bool sim_flow_active(const struct sim_flow *f);
/* ns it waited for tokens until @now (the shim's token_wait_ns). */
uint64_t sim_flow_token_wait(const struct sim_flow *f, uint64_t now);
/* Forget results so far; measure from now. */
void sim_flow_measure(struct sim_flow *f, uint64_t now);

#define SIM_SPLIT_WINDOW 4          /* as shim/split.h's SPLIT_WINDOW */
#define SIM_PACE_BURST_NS 200000ull /* as the shim's bucket burst */

#endif

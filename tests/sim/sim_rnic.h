/* SPDX-License-Identifier: MIT */
/* A discrete-event model of RDMA NICs in virtual time (docs/rnic-model.md).
 *
 * Hosts have one NIC with one port each, joined by a non-blocking switch.
 * Per NIC:
 *   - a transmit pipeline at line rate that sends one MTU packet at a time,
 *     chosen by an arbiter over the NIC's active transmit queues (each RC QP
 *     has one for its own WQEs and one for READ responses it serves);
 *     SIM_ARB_WQE: round robin per WQE (a QP keeps the pipeline until its
 *     current WQE's last packet; the behaviour the paper's §2 measures),
 *     SIM_ARB_BURST: round robin per burst of burst_pkts packets;
 *   - a WQE becomes visible to the arbiter fetch_ns (+ jitter) after its
 *     post (doorbell, WQE and payload DMA), and costs wqe_ns of pipeline time
 *     when it starts (per-WQE processing);
 *   - every packet carries hdr_bytes of headers on the wire;
 *   - a receive pipeline of finite rate rx_bps, FIFO over all senders (so
 *     incast queues there: the switch's egress queue); lossless: while the
 *     destination of a NIC's next packet has more than pfc_ns of work
 *     queued, that NIC's whole transmit port pauses (PFC on one priority,
 *     so a paused port blocks all its QPs); no drops, no ECN/DCQCN;
 *   - the responder acknowledges a message's last packet resp_ns after
 *     receiving it; ACKs take prop_ns and bypass both pipelines (tiny);
 *   - READ: the request (one header-only packet) goes through the
 *     requester's arbiter; resp_ns after it arrives the responder's NIC
 *     queues the response on the QP's response queue, served by the
 *     responder's arbiter like any other transmit queue;
 *   - a completion is written cqe_ns after the ACK / the last READ response
 *     packet arrives (signaled WQEs only; completions in WQE order).
 * Verbs-agnostic: sim_verbs.c puts an ibv_context on top. */
#ifndef JUSTITIA_SIM_RNIC_H
#define JUSTITIA_SIM_RNIC_H

#include <stdbool.h>
#include <stdint.h>

#include "sim_evq.h"

enum sim_arb { SIM_ARB_WQE, SIM_ARB_BURST };

struct sim_nic_params {
	uint64_t line_bps;          /* transmit line rate */
	uint64_t rx_bps;            /* receive pipeline rate */
	uint32_t mtu;               /* payload bytes per packet */
	uint32_t hdr_bytes;         /* wire bytes added per packet */
	uint64_t prop_ns;           /* one way, NIC to NIC (cables + switch) */
	uint64_t fetch_ns;          /* post to visible at the arbiter */
	uint64_t fetch_jitter_ns;   /* + uniform [0, this) */
	uint64_t wqe_ns;            /* pipeline time per WQE */
	uint64_t resp_ns;           /* responder: last packet in -> ACK / READ response queued */
	uint64_t cqe_ns;            /* ACK in -> completion visible */
	enum sim_arb arb;
	uint32_t burst_pkts;        /* SIM_ARB_BURST */
	uint64_t pfc_ns;            /* pause threshold; 0 = no backpressure */
};

/* The defaults (docs/rnic-model.md): 100 Gbit/s, MTU 4096, ... */
void sim_nic_params_default(struct sim_nic_params *p);

enum sim_op { SIM_OP_WRITE, SIM_OP_WRITE_IMM, SIM_OP_SEND, SIM_OP_READ };

struct sim_cqe {
	uint64_t wr_id;
	uint32_t qpn;
	uint32_t byte_len;
	enum sim_op op;
	bool recv;                  /* a receive completion */
	bool error;                 /* SEND without a posted receive */
	uint64_t post_ns;           /* when the WQE was posted (model-side bookkeeping) */
};

struct sim_qp;
struct sim_net;
/* Called when a completion becomes visible. */
typedef void (*sim_cqe_fn)(void *cq, const struct sim_cqe *e);

struct sim_net *sim_net_new(struct sim_evq *q, const struct sim_nic_params *p, unsigned hosts,
			    uint64_t seed);
void sim_net_free(struct sim_net *n);
const struct sim_nic_params *sim_net_params(const struct sim_net *n);
struct sim_evq *sim_net_evq(struct sim_net *n);

/* An RC QP on @host with room for @sq_depth outstanding WQEs; completions
 * go to @scq / @rcq through @fn. */
struct sim_qp *sim_qp_new(struct sim_net *n, unsigned host, uint32_t sq_depth, sim_cqe_fn fn,
			  void *scq, void *rcq);
void sim_qp_connect(struct sim_qp *a, struct sim_qp *b);
uint32_t sim_qp_num(const struct sim_qp *q);
/* Outstanding (posted, not completed) WQEs. */
uint32_t sim_qp_outstanding(const struct sim_qp *q);

struct sim_wr {
	uint64_t wr_id;
	enum sim_op op;
	uint32_t len;
	bool signaled;
};

/* 0, -ENOMEM (send queue full), -ENOTCONN. */
int sim_qp_post_send(struct sim_qp *q, const struct sim_wr *wr);
void sim_qp_post_recv(struct sim_qp *q, uint64_t wr_id);

/* Per-NIC counters. */
struct sim_nic_stats {
	uint64_t tx_payload, tx_wire, tx_pkts, rx_payload, busy_ns;
	uint64_t rx_queue_max_ns;   /* longest wait in the receive pipeline */
	uint64_t pause_ns;          /* transmit paused by backpressure */
};
void sim_nic_stats(const struct sim_net *n, unsigned host, struct sim_nic_stats *out);

#endif

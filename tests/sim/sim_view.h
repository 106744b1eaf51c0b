/* SPDX-License-Identifier: MIT */
/* The daemons' peer channel in the model: remote READ control's
 * responder-side view and incast's receiver-side view
 * (docs/peer-protocol.md sections 5.4, 5.5; daemon/rread.c).
 *
 * Each host keeps the daemon's own table of what other hosts registered
 * with it (daemon/rreadtab.c, a struct rread_tab): its controller counts
 * those flows with its own (sim_ctl.c, as daemon/controller.c does) and
 * after its step sends each requester the shares of its flows, by
 * rreadtab's rules (a share changed by more than 1/RREAD_CHANGE, none in
 * flight, at most every max(RefPeriod, RREAD_GRANT_MIN_NS) per
 * connection).  The requester's side is daemon/rread.c's sync_flow and
 * serve_grants, redone here on the model's flows: every sync_ns (the
 * daemon's RREAD_SYNC_NS) a flow that READs registers with its responder
 * as kind "read", a WRITE/SEND bandwidth flow that moved data and every
 * latency flow with their target as kind "recv"; a flow publishes the
 * lower of its own and the remote grant and splits at the smaller chunk.
 *
 * Every message (remote_open, remote_grants and their replies) takes
 * delay_ns of virtual time one way; the channel is a TCP connection
 * between the daemons, outside the model's NICs, so it costs the model's
 * links nothing.  Every host runs a daemon and every channel is up. */
#ifndef JUSTITIA_SIM_VIEW_H
#define JUSTITIA_SIM_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/rreadtab.h"
#include "sim_evq.h"
#include "sim_flow.h"

#define SIM_VIEW_DELAY_NS 10000ull   /* one way: a small-message TCP hop, ~10 us */

/* Which views run (an ablation; the daemon runs both): the requesters
 * register only flows of these kinds. */
#define SIM_VIEW_READ (1u << RREAD_READ)   /* responder-side (section 5.4) */
#define SIM_VIEW_RECV (1u << RREAD_RECV)   /* receiver-side (section 5.5) */
#define SIM_VIEW_BOTH (SIM_VIEW_READ | SIM_VIEW_RECV)

struct sim_view_msg;

struct sim_view {
	struct sim_evq *q;
	uint64_t delay_ns, sync_ns;
	unsigned kinds;              /* SIM_VIEW_* */
	unsigned hosts;
	struct rread_tab *tab;       /* per host: what others registered there */
	uint64_t *last_sync;         /* per host: the requester's last sync */
	bool *kick;                  /* per host: a remote limit came or went */
	struct sim_flow **fl;        /* every flow, by id (rread_open.flow = id + 1) */
	uint32_t n;
	struct sim_view_msg *msgs;   /* every message sent, freed with the view */
	uint64_t opens, grants, applied, ignored;
};

struct sim_view *sim_view_new(struct sim_evq *q, unsigned hosts, struct sim_flow **fl,
			      uint32_t n, uint64_t delay_ns, uint64_t sync_ns, unsigned kinds);
void sim_view_free(struct sim_view *v);
/* Requester @host, at its controller's step: register and update its flows
 * (every sync_ns).  True when one of its flows' remote limits came or went
 * since the last call (the shims look at their slots again). */
bool sim_view_sync(struct sim_view *v, unsigned host, uint64_t now);
/* Responder/receiver @host, after its step: the shares of its remote READ
 * flows (@tf, @n_read of them, as rreadtab_fill gave them), and its
 * receiver-side shares and chunk already set in v->tab[host]; send each
 * connection what is due. */
void sim_view_after_step(struct sim_view *v, unsigned host, const struct tokens_flow *tf,
			 size_t n_read, uint64_t now, uint64_t period_ns);
/* What a flow publishes: @local_bps (0 = unpaced) and @chunk (0 = pace
 * mode OFF) with the remote grant applied (daemon/rread.c rread_cap,
 * daemon/flows.c flows_publish_counted). */
void sim_view_apply(const struct sim_flow *f, uint64_t *rate_bps, uint32_t *chunk,
		    uint32_t chunk_default);

#endif

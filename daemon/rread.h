/* SPDX-License-Identifier: MIT */
/* Remote READ control (paper §4.4, §6.6; docs/peer-protocol.md section 5.4).
 * When host B reads from host A, A's NIC sends the data, but A's shims see
 * no post for it.  So:
 *
 *  - requester (B): a bandwidth or throughput flow whose shim saw it post
 *    RDMA READs (JST_FS_READ) and whose peer GID belongs to a configured
 *    peer daemon is registered with that daemon over the channel
 *    (remote_open), updated when its weight or activity changes, closed
 *    when it goes away; its rate is the lower of its own grant and the
 *    responder's (rread_cap; a throughput flow's ops/s, rread_cap_ops),
 *    and it is paced even when nothing here would pace it.  No responder
 *    daemon, or no channel to it: unconstrained on that side, with the
 *    reason in the flow's "remote" (justctl flows);
 *  - responder (A): the remote flows (rreadtab.h) count in the controller's
 *    L'/B'/T' and token distribution with its own flows (rread_fill), and
 *    after a step their shares go back to each requester, one message per
 *    connection at most every max(RefPeriod, RREAD_GRANT_MIN_NS), only
 *    when one changed (rread_after_step).  A connection that closes takes
 *    its flows with it; a requester that reconnects registers them again.
 *
 * Service layer: the channel (peer.h), the flows, the peer lookup of the
 * split-QP lookups (splitq.h). */
#ifndef JUSTITIAD_RREAD_H
#define JUSTITIAD_RREAD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aimd.h"
#include "rreadtab.h"
#include "tokens.h"

#define RREAD_SYNC_NS 50000000ull        /* requester: registrations every 50 ms */
#define RREAD_GRANT_MIN_NS 5000000ull    /* responder: grants at most every 5 ms */
#define RREAD_RETRY_NS 5000000000ull     /* a refused registration, again after 5 s */
#define RREAD_OLD_PEER_NS 60000000000ull /* ... a daemon without it, after 60 s */
#define RREAD_TIMEOUT_MS 2000

struct daemon;
struct flow;

struct rread {
	struct daemon *d;
	struct rread_tab tab;         /* responder: the flows other hosts registered */
	uint64_t last_sync_ns;
	bool kick;                    /* a flow's remote limit came or went */
	struct {
		uint64_t open, close, grants;      /* requests sent, by operation */
	} tx;
	struct {
		uint64_t open, close, grants;      /* requests received */
		uint64_t grants_applied, grants_ignored; /* entries of remote_grants */
	} rx;
};

/* Serve the operations, listen to the channel's connections, watch flows
 * go away.  0 or -ENOMEM (then remote READ control is off). */
int rread_init(struct rread *rr, struct daemon *d);
void rread_fini(struct rread *rr);

/* Responder: how many remote flows; append them to the step's arrays. */
size_t rread_count(const struct rread *rr);
size_t rread_fill(struct rread *rr, struct tokens_flow *tf, struct aimd_flow *af, uint32_t app0);
/* Receiver (incast): one aimd entry per incoming flow (see
 * rreadtab_fill_recv); how many. */
size_t rread_fill_recv(struct rread *rr, struct aimd_flow *af, uint32_t app0);
/* Receiver: after the controller's step, the incoming bandwidth flows'
 * shares (rreadtab_recv_shares); rread_after_step sends them. */
void rread_set_recv(struct rread *rr, uint64_t safe_util_bps, uint64_t max_rate_bps);
/* Responder and receiver: this host's chunk in force, told with the
 * grants (a requester splits its flow's messages at most that large). */
void rread_set_chunk(struct rread *rr, uint32_t chunk);
/* Responder: the step's shares of the remote flows (@tf, @n of them, as
 * filled); send the requesters what changed. */
void rread_after_step(struct rread *rr, const struct tokens_flow *tf, size_t n, uint64_t now,
		      uint64_t period_ns);
/* Requester: register and update READ flows (every RREAD_SYNC_NS).  True
 * when a flow's remote limit came or went since the last call: the
 * controller then tells the shims to look at their slots again. */
bool rread_sync(struct rread *rr, uint64_t now);
/* Requester: the rate to publish for @f given its local grant (0 =
 * unpaced): the lower of the two, 0 only if neither side limits it. */
uint64_t rread_cap(const struct flow *f, uint64_t local_bps);
/* ... a throughput READ flow's ops/s, likewise (its responder's grant in ops/s). */
uint64_t rread_cap_ops(const struct flow *f, uint64_t local_ops);
/* status: {"served": {...rreadtab_json}, "requested": {...}, "messages": {...}} */
json_t *rread_status(struct rread *rr, uint64_t now);

#endif

/* SPDX-License-Identifier: MIT */
/* The responder's side of remote READ control and the receiver's side of
 * incast: the flows other hosts' daemons registered here (kind "read": they
 * READ from here; kind "recv": they WRITE/SEND here; docs/peer-protocol.md
 * sections 5.4, 5.5), grouped by
 * the channel connection that registered them, each with the share this
 * daemon's controller grants it.  The controller counts them with its own
 * flows (L'/B'/T', tokens.c, aimd.c); a connection that goes away takes its
 * flows with it (no stale reservations).  Bounded: RREAD_MAX_PER_CONN flows
 * per connection, RREAD_MAX_CONNS connections, RREAD_MAX_TOTAL in all.
 * Pure: no channel, no I/O (rread.c wires it to the channel). */
#ifndef JUSTITIAD_RREADTAB_H
#define JUSTITIAD_RREADTAB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aimd.h"
#include "rreadmsg.h"
#include "tokens.h"

#define RREAD_MAX_PER_CONN 256
#define RREAD_MAX_CONNS 16
#define RREAD_MAX_TOTAL 1024
/* A share that moved less than 1/RREAD_CHANGE of itself is not news. */
#define RREAD_CHANGE 32

struct rread_entry {
	struct rread_open o;
	uint64_t rate_bps;            /* its share after the last step, 0: not limited;
				       * bit/s, a throughput flow's ops/s (its class) */
	uint64_t sent_bps;            /* what its requester was told last (same unit) */
	uint32_t chunk, sent_chunk;   /* this host's chunk in force (rreadtab_set_chunk), told */
	bool sent;                    /* told anything yet */
	uint64_t since_ns;            /* registered */
};

struct rread_conn {
	uint64_t serial;              /* the channel connection's */
	void *peer;                   /* that connection (struct peer *), opaque here */
	char name[96];                /* "address:port", for status and logs */
	uint64_t last_sent_ns;        /* its last remote_grants */
	unsigned inflight;            /* remote_grants not answered yet */
	size_t n;
	struct rread_entry e[RREAD_MAX_PER_CONN];
};

struct rread_tab {
	struct rread_conn *conns[RREAD_MAX_CONNS];
	size_t n_conns, total;
	uint64_t opened, closed, dropped; /* flows registered, closed, dropped with their conn */
	uint64_t refused;             /* remote_open turned away (limits) */
	uint64_t grants_sent;         /* remote_grants messages */
	char last_refusal[160];
};

/* Register or update (same connection, same flow) @o.  0 new, 1 updated,
 * -ENOSPC over a limit (why in @why), -ENOMEM. */
int rreadtab_open(struct rread_tab *t, uint64_t serial, void *peer, const char *name,
		  const struct rread_open *o, uint64_t now, char *why, size_t whylen);
/* 0, or -ENOENT: no such flow of that kind of that connection. */
int rreadtab_close(struct rread_tab *t, uint64_t serial, uint8_t kind, uint32_t flow);
/* The connection went away: forget its flows.  How many there were. */
size_t rreadtab_drop(struct rread_tab *t, uint64_t serial);
void rreadtab_fini(struct rread_tab *t);

/* This host's chunk in force (the controller's: small while it protects a
 * latency flow), told to every remote flow's requester with its grant. */
void rreadtab_set_chunk(struct rread_tab *t, uint32_t chunk);

/* Append one tokens and one aimd entry per remote READ flow (each its own
 * application, numbered from @app0) to @tf and @af; how many (at most
 * t->total, which the caller has room for). */
size_t rreadtab_fill(const struct rread_tab *t, struct tokens_flow *tf, struct aimd_flow *af,
		     uint32_t app0);
/* The shares the controller computed for those entries (same order): a
 * bandwidth flow's rate_bps, a throughput flow's ops_per_s. */
void rreadtab_set_rates(struct rread_tab *t, const struct tokens_flow *tf, size_t n);
/* Append one aimd entry per incoming (kind recv) flow to @af, numbered
 * from @app0: an incoming latency flow makes the controller protect
 * latency (L' > 0: the reference flow runs, SafeUtil adapts) and the
 * incoming bandwidth flows count in the floor's B'.  How many. */
size_t rreadtab_fill_recv(const struct rread_tab *t, struct aimd_flow *af, uint32_t app0);
/* The receiver-side shares of the incoming bandwidth flows: with an
 * incoming latency flow registered, SafeUtil * w / W; without, MaxRate * w
 * / W (a fair split of the link), W the weights of the active incoming
 * bandwidth flows (an idle flow counts itself in).  This host's own
 * flows are not counted: they send, these receive.  0 (not limited) if
 * MaxRate is unknown, or with no incoming latency flow and at most one
 * active incoming bandwidth flow (nothing competes); never below
 * AIMD_MIN_BPS otherwise.  Incoming latency flows get 0.  (The controller
 * passes MaxRate 0 while the host has no latency flow at all: nothing to
 * protect, nothing limited.) */
void rreadtab_recv_shares(struct rread_tab *t, uint64_t safe_util_bps, uint64_t max_rate_bps);
/* The incoming flows: latency, bandwidth. */
void rreadtab_recv_count(const struct rread_tab *t, size_t *lat, size_t *bw);
/* Is a remote_grants due on @c at @now: a share changed (RREAD_CHANGE) or
 * was never sent, none in flight, and @min_ns since the last one. */
bool rreadtab_due(const struct rread_conn *c, uint64_t now, uint64_t min_ns);
/* Up to RREAD_GRANTS_MAX shares of @c's flows of @kind from index *@from
 * into @g; how many; *@from moves past the last one taken. */
size_t rreadtab_grants(const struct rread_conn *c, uint8_t kind, size_t *from,
		       struct rread_grant *g);
/* Everything of @c was sent at @now. */
void rreadtab_sent(struct rread_conn *c, uint64_t now);
struct rread_conn *rreadtab_conn(struct rread_tab *t, uint64_t serial);

/* The requests of a peer daemon on connection @serial: RREAD_OP_OPEN and
 * RREAD_OP_CLOSE.  0 and *@result (an object) on success; else an error
 * @code ("bad_request", "limit", "not_found", "internal") and @msg. */
int rreadtab_serve(struct rread_tab *t, uint64_t serial, void *peer, const char *name,
		   const char *op, json_t *args, uint64_t now, json_t **result, const char **code,
		   char *msg, size_t msglen);

/* status: {"flows": N, "refused": N, ..., "entries": [...]} */
json_t *rreadtab_json(const struct rread_tab *t, uint64_t now);

#endif

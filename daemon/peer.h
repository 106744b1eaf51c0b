/* SPDX-License-Identifier: MIT */
/* The channel between justitiad daemons (docs/peer-protocol.md): TCP,
 * newline-delimited JSON, versioned, bounded lines, strict parsing; each
 * connection is checked against the configured peers by source address and,
 * with reference.secret_file, authenticated by a challenge/response and a
 * per-message MAC (SipHash-2-4 keyed by the shared secret).
 *
 * Generic request/response: a module registers handlers for named
 * operations (peer_handle()) and sends requests with peer_request(); the
 * reference flow's "ref_open" is one, the shim's split-QP lookup will be
 * another.  The daemon dials every reference.peers[] entry (an "outgoing"
 * peer, reconnected with exponential backoff) and accepts connections from
 * them; requests may travel both ways on any connection that is up. */
#ifndef JUSTITIAD_PEER_H
#define JUSTITIAD_PEER_H

#include <ev.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "peertypes.h"

/* What the daemon found for an unset reference.listen_address: the
 * reference device's IP address, or why there is none (wiring.c). */
struct peer_listen_auto {
	char address[CONFIG_NAME_MAX]; /* "" = none */
	char why[160];
};

/* Listen on reference.listen_address:listen_port (unset: @auto's address;
 * no listener without one, or without peers), read the secret, start
 * dialling the configured peers.  0 or -errno; on failure the reason is in
 * pc->error and the context is still valid (no listener, nothing dialled).
 * @auto may be NULL. */
int peer_ctx_init(struct peer_ctx *pc, struct ev_loop *loop, const struct config *cfg,
		  uint64_t node, const struct peer_listen_auto *auto_listen);
void peer_ctx_fini(struct peer_ctx *pc);
/* After a reload: new peers and secret (the listener stays).  Connections
 * are rebuilt when either changed. */
void peer_ctx_reconfigure(struct peer_ctx *pc, const struct config *cfg);

int peer_handle(struct peer_ctx *pc, const char *op, peer_handler_fn fn, void *arg);
int peer_listen_events(struct peer_ctx *pc, peer_event_fn fn, void *arg);

/* Send request @op with @args (stolen; NULL = {}) on @p; @cb is called
 * exactly once.  timeout_ms <= 0: PEER_TIMEOUT_MS.  0, -ENOTCONN (not up),
 * -EBUSY (PEER_MAX_PENDING in flight), -ENOMEM. */
int peer_request(struct peer *p, const char *op, json_t *args, peer_reply_fn cb, void *arg,
		 int timeout_ms);
void peer_reply(struct peer_ctx *pc, const struct peer_req *rq, json_t *result);
void peer_reply_error(struct peer_ctx *pc, const struct peer_req *rq, const char *code,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The outgoing peer for reference.peers[i], or NULL. */
struct peer *peer_outgoing(struct peer_ctx *pc, size_t i);
/* The remote address of a connection, for split-QP lookups and logs. */
int peer_remote_addr(const struct peer *p, struct sockaddr_storage *ss, socklen_t *len);

#endif

/* SPDX-License-Identifier: MIT */
/* The peer channel's message layer (peermsg.c): building our messages and
 * checking each received line, which it returns decoded for the connection
 * layer (peer.c) to act on.  It calls nothing of peer.c or peerconn.c. */
#ifndef JUSTITIAD_PEERMSG_H
#define JUSTITIAD_PEERMSG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "peertypes.h"

/* What a received line asks of the connection. */
enum peermsg_kind {
	PEERMSG_FAIL,                 /* fail the connection (why) */
	PEERMSG_REFUSE,               /* tell the peer why, then fail */
	PEERMSG_HELLO,                /* its hello checked: send reply (our auth), or
				       * without a secret (reply NULL) the session is up */
	PEERMSG_AUTH,                 /* its proof checked, the session keys set: up */
	PEERMSG_REQUEST,              /* id, op, args (NULL: none) */
	PEERMSG_REPLY,                /* id, ok: result; else code, msg */
};

/* A received line, decoded; json holds what the pointers point into. */
struct peermsg {
	json_t *json;
	char why[160];
	json_t *reply;                /* PEERMSG_HELLO: our auth message, or NULL */
	json_int_t id;
	const char *op;
	json_t *args;
	int ok;
	json_t *result;
	const char *code, *msg;
};

/* {"v":1,"type":@type} */
json_t *peermsg_new(const char *type);
/* Our hello on @p. */
json_t *peermsg_hello(const struct peer *p);
/* {"type":"rep","id":@id,"ok":@ok} */
json_t *peermsg_rep(json_int_t id, bool ok);
/* Check one received line (NUL-terminated, may be changed): its MAC (with
 * MACs on), JSON, version, the message the state of @p expects, strictly.
 * Updates @p's handshake and MAC state; release @m with peermsg_done(). */
enum peermsg_kind peermsg_decode(struct peer *p, char *line, size_t len, struct peermsg *m);
void peermsg_done(struct peermsg *m);

#endif

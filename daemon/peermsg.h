/* SPDX-License-Identifier: MIT */
/* Internal to the peer channel: what its connection layer (peer.c) and its
 * message layer (peermsg.c) call of each other.  Users of the channel need
 * only peer.h. */
#ifndef JUSTITIAD_PEERMSG_H
#define JUSTITIAD_PEERMSG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "peer.h"

#define PEER_MAGIC 0x50454552u /* "PEER": a live struct peer */

/* peer.c: fail the connection (an outgoing one is retried after a backoff,
 * an incoming one is freed later); tell the peer why first (refuse). */
void peer_conn_fail(struct peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void peer_conn_refuse(struct peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Queue one message (consumed), with its MAC when the session has keys.
 * 0, or -errno after failing the connection. */
int peer_send(struct peer *p, json_t *msg);
/* {"v":1,"type":@type} */
json_t *peer_msg(const char *type);
void peer_notify(struct peer *p, bool up);
void peer_arm_timer(struct peer *p);

/* peermsg.c: our hello; one received line (NUL-terminated, may be changed). */
void peermsg_hello(struct peer *p);
void peermsg_line(struct peer *p, char *line, size_t len);

#endif

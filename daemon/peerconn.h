/* SPDX-License-Identifier: MIT */
/* The peer channel's connections (peerconn.c), for peer.c. */
#ifndef JUSTITIAD_PEERCONN_H
#define JUSTITIAD_PEERCONN_H

#include <ev.h>
#include <jansson.h>
#include <stdbool.h>

#include "config.h"
#include "peertypes.h"

/* Queue one message (consumed), with its MAC when the session has keys.
 * 0, or -errno after failing the connection. */
int peerconn_send(struct peer *p, json_t *msg);
/* Tell the channel's listeners that @p came up or went away. */
void peerconn_notify(struct peer *p, bool up);
/* Close the socket and everything of the connection; listeners and
 * pending requests learn about it first (@why). */
void peerconn_close(struct peer *p, const char *why);
/* Unlink and free an incoming connection (closed). */
void peerconn_free_incoming(struct peer *p);
/* Drop the connection's sealing keys (if any); lines go unsealed again. */
void peerconn_unseal(struct peer *p);
/* Fail the connection (an outgoing one is retried after a backoff, an
 * incoming one is freed later); tell the peer why first (refuse). */
void peerconn_fail(struct peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void peerconn_refuse(struct peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Arm the connection's timer for the next deadline. */
void peerconn_arm_timer(struct peer *p);
/* The connection's timer (p->tw): deadlines, re-dial, freeing. */
void peerconn_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);
/* Set up a connected (or connecting) socket on @p: 0, or -EIO. */
int peerconn_setup(struct peer *p, int fd);
/* Dial the outgoing peer @p (resolving its host name off the loop). */
void peerconn_dial(struct peer *p);
/* Close every connection and free the outgoing peers. */
void peerconn_close_all(struct peer_ctx *pc);
/* (Re)build the outgoing peers from the configuration and dial them. */
int peerconn_start_outgoing(struct peer_ctx *pc, const struct config *cfg);

#endif

/* SPDX-License-Identifier: MIT */
/* The control socket's accepted connections (ctlconn.c): replies, closing,
 * late replies, rate-limited warnings.  Used by ctl.c and ctlcmd.c. */
#ifndef JUSTITIAD_CTLCONN_H
#define JUSTITIAD_CTLCONN_H

#include <ev.h>
#include <jansson.h>
#include <stdint.h>

#include "ctl.h"

#define CTLCONN_MAGIC 0x4354434cu /* "CTCL": a client not yet closed */

/* kinds of ctlconn_warn(), rate-limited each on its own */
enum { CTLCONN_W_REFUSED, CTLCONN_W_UNREAD, CTLCONN_W_TOO_LARGE, CTLCONN_W_TIMEOUT };

/* A warning that clients can cause over and over: logged at once, then at
 * most once per 10 s with the number of those not logged meanwhile. */
void ctlconn_warn(struct ctl *c, int kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Send what is queued; watch for writability while some is left. */
void ctlconn_flush(struct ctl_client *cl);
/* Queue a reply (consumes @msg).  Descriptors, if any, travel with its
 * first byte, which needs an empty output queue.  May close @cl. */
void ctlconn_reply(struct ctl_client *cl, json_t *msg, const int *fds, int nfds);
/* Close @cl (its shim's flows freed) and move it to the graveyard. */
void ctlconn_close(struct ctl_client *cl);
/* Free the graveyard (from c->reap_w, or at ctl_close). */
void ctlconn_reap(struct ctl *c);
void ctlconn_reap_cb(struct ev_loop *loop, ev_timer *w, int revents);
/* The open client with @serial, or NULL once it is gone. */
struct ctl_client *ctlconn_by_serial(struct ctl *c, uint64_t serial);

#endif

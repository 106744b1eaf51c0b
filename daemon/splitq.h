/* SPDX-License-Identifier: MIT */
/* Split-QP lookups for the shims (docs/protocol.md "split_peer").
 *
 * A shim about to connect its split QP needs the number of the split QP the
 * PEER's shim created for the peer QP.  This daemon answers from its own
 * registry when the peer QP is on one of its devices (one host, loopback);
 * otherwise it asks the daemon of the host that owns the peer's GID over
 * the daemon channel (peer.c, operation "split_lookup"): the peer daemon is
 * the one whose connection's remote address is the GID's address (IPv4
 * for ::ffff:a.b.c.d, else IPv6), whether it was configured by address or
 * by host name, or a configured peer with that address literal. */
#ifndef JUSTITIAD_SPLITQ_H
#define JUSTITIAD_SPLITQ_H

#include <stddef.h>
#include <stdint.h>

struct daemon;

/* @split_qpn: the peer's split QP, or -1 with @why. */
typedef void (*splitq_cb)(struct daemon *d, void *arg, int64_t split_qpn, const char *why);

/* Serve "split_lookup" for the other daemons (when the channel exists). */
void splitq_init(struct daemon *d);
/* Calls @cb exactly once, now or later. */
void splitq_lookup(struct daemon *d, const char *gid, uint32_t qpn, splitq_cb cb, void *arg);

#endif

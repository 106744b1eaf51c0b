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

#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct daemon;
struct peer;

/* @split_qpn: the peer's split QP, or -1 with @why. */
typedef void (*splitq_cb)(void *arg, int64_t split_qpn, const char *why);

/* The arguments of a peer daemon's "split_lookup" ({"gid", "qpn"}, strict):
 * 0, or -EINVAL with why in @err.  *gid points into @args.  (Here, alone,
 * so that tests/fuzz/fuzz_endpoint.c fuzzes it without the daemon.) */
static inline int splitq_parse_lookup(json_t *args, const char **gid, uint32_t *qpn, char *err,
				      size_t errlen)
{
	json_error_t je;
	json_int_t n;

	if (json_unpack_ex(args, &je, JSON_STRICT, "{s:s, s:I}", "gid", gid, "qpn", &n)) {
		snprintf(err, errlen, "%s", je.text);
		return -EINVAL;
	}
	if (n < 0 || n > 0xffffff) {
		snprintf(err, errlen, "qpn %lld is not a QP number", (long long)n);
		return -EINVAL;
	}
	*qpn = (uint32_t)n;
	return 0;
}
/* Serve "split_lookup" for the other daemons (when the channel exists). */
void splitq_init(struct daemon *d);
/* The connection to the daemon of the host that owns @gid (a RoCE GID in
 * IPv6 notation), up or not, or NULL: no configured peer has its address. */
struct peer *splitq_peer_for_gid(struct daemon *d, const char *gid);
/* Calls @cb exactly once, now or later. */
void splitq_lookup(struct daemon *d, const char *gid, uint32_t qpn, splitq_cb cb, void *arg);

#endif

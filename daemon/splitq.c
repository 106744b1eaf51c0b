// SPDX-License-Identifier: MIT
/* Split-QP lookups for the shims (see splitq.h): from this daemon's
 * registry, or from the peer daemon that owns the peer's GID.
 * May call: peer (requests, handlers), flows, log. */
#include "splitq.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "justitiad.h"
#include "log.h"
#include "peer.h"

struct pending_lookup {
	splitq_cb cb;
	void *arg;
};

/* An address literal (IPv4 or IPv6) as a sockaddr; -EINVAL for a name. */
static int gid_addr_literal(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			struct in_addr a;

			memcpy(&a, &s6->sin6_addr.s6_addr[12], 4);
			memset(ss, 0, sizeof(*ss));
			s4->sin_family = AF_INET;
			s4->sin_addr = a;
		}
		return 0;
	}
	return -EINVAL;
}

/* The serving side: a peer daemon asks for one of our QPs' split QP. */
static void serve_lookup(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq,
			 json_t *args, void *arg)
{
	struct daemon *d = arg;
	const char *gid;
	uint32_t qpn;
	char err[160];
	int64_t split;

	if (splitq_parse_lookup(args, &gid, &qpn, err, sizeof(err))) {
		peer_reply_error(pc, rq, "bad_request", "split_lookup: %s", err);
		return;
	}
	split = flows_split_of(&d->flows, gid, qpn);
	log_debug(LOG_SS_FLOW, "peer %s asks for the split QP of %s/%lld: %lld", p->name, gid,
		  (long long)qpn, (long long)split);
	peer_reply(pc, rq, json_pack("{s:o}", "split_qpn",
				     split >= 0 ? json_integer(split) : json_null()));
}

void splitq_init(struct daemon *d)
{
	if (d->peer)
		peer_handle(d->peer, "split_lookup", serve_lookup, d);
}

static void got_reply(struct peer_ctx *pc, struct peer *p, json_t *result, const char *code,
		      const char *msg, void *arg)
{
	struct pending_lookup *pl = arg;
	json_t *v = json_object_get(result, "split_qpn");

	if (result && json_is_integer(v) && json_integer_value(v) >= 0 &&
	    json_integer_value(v) <= 0xffffff)
		pl->cb(pl->arg, json_integer_value(v), NULL);
	else
		pl->cb(pl->arg, -1, result ? "the peer has no split QP for it"
						  : msg ? msg : code ? code : "no reply");
	free(pl);
}

/* The GID as the address a RoCE v2 GID is: IPv4 for ::ffff:a.b.c.d,
 * IPv6 otherwise (normalised as peer.c does). */
static int gid_addr(const char *gid, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct in6_addr a;

	if (inet_pton(AF_INET6, gid, &a) != 1)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (IN6_IS_ADDR_V4MAPPED(&a)) {
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, &a.s6_addr[12], 4);
	} else {
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = a;
	}
	return 0;
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return a->ss_family == AF_INET6 &&
	       !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

/* The connection to the daemon of the host that owns @gid: a configured
 * peer whose address literal is the GID's address (IPv4 or IPv6), or one
 * whose connection's remote address is (a peer configured by host name, an
 * incoming connection).  Connections that are up first. */
struct peer *splitq_peer_for_gid(struct daemon *d, const char *gid)
{
	struct sockaddr_storage want, ss;
	struct peer *literal = NULL;
	socklen_t len;

	if (!d->peer || gid_addr(gid, &want))
		return NULL;
	for (size_t i = 0; i < d->cfg.n_peers; i++) {
		struct peer *p = peer_outgoing(d->peer, i);
		struct sockaddr_storage lit;

		if (!p)
			continue;
		if (p->state == PEER_UP && !peer_remote_addr(p, &ss, &len) && same_addr(&ss, &want))
			return p;
		if (!literal && !gid_addr_literal(d->cfg.peers[i].address, &lit) &&
		    same_addr(&lit, &want))
			literal = p;
	}
	for (struct peer *p = d->peer->in; p; p = p->next)
		if (p->state == PEER_UP && !peer_remote_addr(p, &ss, &len) && same_addr(&ss, &want))
			return p;
	return literal; /* not up: the request says so */
}

void splitq_lookup(struct daemon *d, const char *gid, uint32_t qpn, splitq_cb cb, void *arg)
{
	struct pending_lookup *pl;
	int64_t split = flows_split_of(&d->flows, gid, qpn);
	struct sockaddr_storage ss;
	struct peer *p;

	if (split >= 0) {
		cb(arg, split, NULL);
		return;
	}
	if (!d->peer || gid_addr(gid, &ss)) {
		cb(arg, -1, "no Justitia peer known for this GID");
		return;
	}
	p = splitq_peer_for_gid(d, gid);
	if (!p) {
		cb(arg, -1, "the peer's host is not a configured Justitia peer");
		return;
	}
	pl = malloc(sizeof(*pl));
	if (!pl) {
		cb(arg, -1, "out of memory");
		return;
	}
	pl->cb = cb;
	pl->arg = arg;
	if (peer_request(p, "split_lookup", json_pack("{s:s, s:I}", "gid", gid, "qpn",
						      (json_int_t)qpn),
			 got_reply, pl, PROTO_PEER_LOOKUP_MS)) {
		free(pl);
		cb(arg, -1, "the peer daemon is not reachable");
	}
}

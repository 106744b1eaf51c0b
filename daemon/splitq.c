// SPDX-License-Identifier: MIT
#include "splitq.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "justitiad.h"
#include "log.h"
#include "peer.h"

struct pending_lookup {
	struct daemon *d;
	splitq_cb cb;
	void *arg;
};

int splitq_gid_ipv4(const char *gid, char *out, size_t len)
{
	unsigned g[8];
	struct in_addr a;

	if (sscanf(gid, "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x", &g[0], &g[1], &g[2], &g[3], &g[4],
		   &g[5], &g[6], &g[7]) != 8)
		return -EINVAL;
	/* RoCEv2 over IPv4: the IPv4-mapped IPv6 address ::ffff:a.b.c.d */
	if (g[0] || g[1] || g[2] || g[3] || g[4] || g[5] != 0xffff)
		return -EINVAL;
	a.s_addr = htonl((uint32_t)g[6] << 16 | g[7]);
	return inet_ntop(AF_INET, &a, out, (socklen_t)len) ? 0 : -EINVAL;
}

/* The serving side: a peer daemon asks for one of our QPs' split QP. */
static void serve_lookup(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq,
			 json_t *args, void *arg)
{
	struct daemon *d = arg;
	const char *gid;
	json_int_t qpn;
	json_error_t err;
	int64_t split;

	if (json_unpack_ex(args, &err, JSON_STRICT, "{s:s, s:I}", "gid", &gid, "qpn", &qpn) ||
	    qpn < 0 || qpn > 0xffffff) {
		peer_reply_error(pc, rq, "bad_request", "split_lookup: %s", err.text);
		return;
	}
	split = flows_split_of(&d->flows, gid, (uint32_t)qpn);
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
		pl->cb(pl->d, pl->arg, json_integer_value(v), NULL);
	else
		pl->cb(pl->d, pl->arg, -1, result ? "the peer has no split QP for it"
						  : msg ? msg : code ? code : "no reply");
	free(pl);
}

void splitq_lookup(struct daemon *d, const char *gid, uint32_t qpn, splitq_cb cb, void *arg)
{
	struct pending_lookup *pl;
	int64_t split = flows_split_of(&d->flows, gid, qpn);
	char ip[INET_ADDRSTRLEN];
	struct peer *p = NULL;

	if (split >= 0) {
		cb(d, arg, split, NULL);
		return;
	}
	if (!d->peer || splitq_gid_ipv4(gid, ip, sizeof(ip))) {
		cb(d, arg, -1, "no Justitia peer known for this GID");
		return;
	}
	for (size_t i = 0; i < d->cfg.n_peers && !p; i++)
		if (!strcmp(d->cfg.peers[i].address, ip))
			p = peer_outgoing(d->peer, i);
	if (!p) {
		cb(d, arg, -1, "the peer's host is not a configured Justitia peer");
		return;
	}
	pl = malloc(sizeof(*pl));
	if (!pl) {
		cb(d, arg, -1, "out of memory");
		return;
	}
	pl->d = d;
	pl->cb = cb;
	pl->arg = arg;
	if (peer_request(p, "split_lookup", json_pack("{s:s, s:I}", "gid", gid, "qpn",
						      (json_int_t)qpn),
			 got_reply, pl, PROTO_PEER_LOOKUP_MS)) {
		free(pl);
		cb(d, arg, -1, "the peer daemon is not reachable");
	}
}

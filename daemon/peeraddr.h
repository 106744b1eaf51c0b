/* SPDX-License-Identifier: MIT */
/* The peer channel's addresses and its resolver threads (peeraddr.c), for
 * peer.c and peerconn.c. */
#ifndef JUSTITIAD_PEERADDR_H
#define JUSTITIAD_PEERADDR_H

#include <ev.h>
#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "peertypes.h"

/* An IPv4-mapped IPv6 address as IPv4. */
void peeraddr_normalize(struct sockaddr_storage *ss, socklen_t *len);
/* The same host (any port)? */
bool peeraddr_same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
/* The host part of @ss as text ("?" if neither IPv4 nor IPv6). */
void peeraddr_text(const struct sockaddr_storage *ss, char *buf, size_t len);
/* Resolve the configured peers' addresses into pc->allow (host names block
 * here, once per start and reload). */
void peeraddr_resolve_allow(struct peer_ctx *pc, const struct config *cfg);
/* Is @ss one of the configured peers' hosts? */
bool peeraddr_allowed(const struct peer_ctx *pc, const struct sockaddr_storage *ss);

/* A host name being resolved for the outgoing peer pc->out[idx]. */
struct peeraddr_job {
	size_t idx;                   /* in pc->out */
	uint64_t token;
	char host[CONFIG_NAME_MAX];
	char port[8];
	int fd;                       /* the thread's copy of the write end */
	int rc;
	struct addrinfo *res;
};

/* Resolve @p's address on a thread; its job comes back through pc->res_fd,
 * @resolved_cb is the loop's watcher of it.  0 (p->resolve_token set) or
 * -errno. */
int peeraddr_resolve_start(struct peer *p, const char *port,
			   void (*resolved_cb)(struct ev_loop *, ev_io *, int));
struct peeraddr_job *peeraddr_resolved(struct peer_ctx *pc);
void peeraddr_job_free(struct peeraddr_job *j);
/* Stop: drop finished jobs; threads still resolving fail to send theirs. */
void peeraddr_resolve_fini(struct peer_ctx *pc);

#endif

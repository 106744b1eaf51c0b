// SPDX-License-Identifier: MIT
/* The peer channel's addresses: the configured peers' (which incoming
 * connections must come from), comparing and printing them, and resolving
 * a peer's host name on a thread of its own, off the event loop.
 * May call: log, libc's resolver; nothing of peer.c, peerconn.c or peermsg.c. */
#include "peeraddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

void peeraddr_normalize(struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = s6->sin6_port };

		memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
		memset(ss, 0, sizeof(*ss));
		memcpy(ss, &s4, sizeof(s4));
		*len = sizeof(s4);
	}
}

bool peeraddr_same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return false;
}

void peeraddr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof(host));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host,
			  sizeof(host));
	snprintf(buf, len, "%s", host);
}

/* Resolve the configured peers' addresses (host names block here, once
 * per start and reload). */
void peeraddr_resolve_allow(struct peer_ctx *pc, const struct config *cfg)
{
	free(pc->allow);
	pc->allow = NULL;
	pc->n_allow = 0;
	for (size_t i = 0; i < cfg->n_peers; i++) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
		int rc = getaddrinfo(cfg->peers[i].address, NULL, &hints, &res);

		if (rc) {
			log_warnx("reference peer %s: %s", cfg->peers[i].address, gai_strerror(rc));
			continue;
		}
		for (ai = res; ai; ai = ai->ai_next) {
			struct peer_addr *na = realloc(pc->allow, (pc->n_allow + 1) * sizeof(*na));

			if (!na)
				break;
			pc->allow = na;
			memset(&na[pc->n_allow], 0, sizeof(*na));
			memcpy(&na[pc->n_allow].ss, ai->ai_addr, ai->ai_addrlen);
			na[pc->n_allow].len = ai->ai_addrlen;
			peeraddr_normalize(&na[pc->n_allow].ss, &na[pc->n_allow].len);
			pc->n_allow++;
		}
		freeaddrinfo(res);
	}
}

bool peeraddr_allowed(const struct peer_ctx *pc, const struct sockaddr_storage *ss)
{
	for (size_t i = 0; i < pc->n_allow; i++)
		if (peeraddr_same_host(&pc->allow[i].ss, ss))
			return true;
	return false;
}

/* A peer configured by host name is resolved on a thread of its own, never
 * in the event loop (getaddrinfo() may wait for DNS for seconds, on every
 * redial).  The thread gets a job and its own copy of the write end of a
 * datagram socket pair, and sends the finished job's address back through
 * it; the loop matches it to the peer by index and token (the peers may
 * have been rebuilt meanwhile: then it is dropped).  Address literals are
 * resolved at once (AI_NUMERICHOST never blocks). */

void peeraddr_job_free(struct peeraddr_job *j)
{
	if (j->res)
		freeaddrinfo(j->res);
	free(j);
}

static void *resolve_thread(void *arg)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct peeraddr_job *j = arg;
	int fd = j->fd;

	j->rc = getaddrinfo(j->host, j->port, &hints, &j->res);
	if (send(fd, &j, sizeof(j), MSG_NOSIGNAL) != sizeof(j))
		peeraddr_job_free(j); /* the context is gone */
	close(fd);
	return NULL;
}

int peeraddr_resolve_start(struct peer *p, const char *port,
			   void (*resolved_cb)(struct ev_loop *, ev_io *, int))
{
	struct peer_ctx *pc = p->pc;
	struct peeraddr_job *j;
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	if (pc->res_fd[0] < 0) {
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pc->res_fd))
			return -errno;
		ev_io_init(&pc->res_w, resolved_cb, pc->res_fd[0], EV_READ);
		pc->res_w.data = pc;
		ev_io_start(pc->loop, &pc->res_w);
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->idx = (size_t)(p - pc->out);
	j->token = ++pc->next_serial;
	snprintf(j->host, sizeof(j->host), "%s", p->address);
	snprintf(j->port, sizeof(j->port), "%s", port);
	j->fd = fcntl(pc->res_fd[1], F_DUPFD_CLOEXEC, 0);
	if (j->fd < 0) {
		rc = -errno;
		free(j);
		return rc;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = -pthread_create(&th, &attr, resolve_thread, j);
	pthread_attr_destroy(&attr);
	if (rc) {
		close(j->fd);
		free(j);
		return rc;
	}
	p->resolve_token = j->token;
	return 0;
}

/* The next finished job from the resolver threads, or NULL. */
struct peeraddr_job *peeraddr_resolved(struct peer_ctx *pc)
{
	struct peeraddr_job *j;

	return recv(pc->res_fd[0], &j, sizeof(j), MSG_DONTWAIT) == sizeof(j) ? j : NULL;
}

void peeraddr_resolve_fini(struct peer_ctx *pc)
{
	struct peeraddr_job *j;

	if (pc->res_fd[0] < 0)
		return;
	ev_io_stop(pc->loop, &pc->res_w);
	while (recv(pc->res_fd[0], &j, sizeof(j), MSG_DONTWAIT) == sizeof(j))
		peeraddr_job_free(j);
	close(pc->res_fd[0]);
	close(pc->res_fd[1]);
	pc->res_fd[0] = pc->res_fd[1] = -1; /* threads still resolving fail to send, free */
}

// SPDX-License-Identifier: MIT
/* The justitiad peer channel (see peer.h and docs/peer-protocol.md).
 *
 * One struct peer per TCP connection.  Outgoing peers (one per configured
 * reference.peers[] entry) live in an array and are re-dialled after a
 * failure with exponential backoff; incoming connections live in a list
 * and are freed when they close.  Everything a peer sends is checked
 * before use: bounded lines, strict JSON members, MACs, sequence numbers. */
#include "peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "peerauth.h"
#include "peermsg.h"

#define OUT_MAX (1u << 20)
#define MAX_INCOMING (2 * CONFIG_MAX_PEERS)
#define MAX_INCOMING_PER_HOST 8 /* a few daemons on one peer host, each dials once */
#define REFUSE_LOG_NS 10000000000ull

static void dial(struct peer *p);

/* ------------------------------------------------------------ addresses */

static void normalize(struct sockaddr_storage *ss, socklen_t *len)
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

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
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

static void addr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
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
static void resolve_allow(struct peer_ctx *pc, const struct config *cfg)
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
			normalize(&na[pc->n_allow].ss, &na[pc->n_allow].len);
			pc->n_allow++;
		}
		freeaddrinfo(res);
	}
}

static bool allowed(const struct peer_ctx *pc, const struct sockaddr_storage *ss)
{
	for (size_t i = 0; i < pc->n_allow; i++)
		if (same_host(&pc->allow[i].ss, ss))
			return true;
	return false;
}

/* ------------------------------------------------------------ output */

static void flush_out(struct peer *p)
{
	int rc = proto_out_flush(p->fd, p->out, &p->out_len);

	if (rc < 0) {
		peer_conn_fail(p, "send: %s", strerror(-rc));
		return;
	}
	if (p->out_len)
		ev_io_start(p->pc->loop, &p->ww);
	else
		ev_io_stop(p->pc->loop, &p->ww);
}

/* Queue one message (consumed); with MACs on, the line is
 * "<json> <16 hex MAC over seq and json>".  0 or -errno (the connection
 * has failed then). */
int peer_send(struct peer *p, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT), mac[18];
	size_t len;
	int rc;

	json_decref(msg);
	if (!s) {
		peer_conn_fail(p, "cannot encode a message");
		return -ENOMEM;
	}
	len = strlen(s);
	/* the line and its " MAC" go together or not at all */
	mac[0] = ' ';
	if (p->mac)
		peerauth_u64_hex(mac + 1, peerauth_line_mac(&p->k_tx, p->seq_tx, s, len));
	rc = proto_out_append(&p->out, &p->out_len, &p->out_cap, s, len,
			      OUT_MAX - 1 - (p->mac ? 17 : 0));
	if (!rc && p->mac)
		rc = proto_out_append(&p->out, &p->out_len, &p->out_cap, mac, 17, OUT_MAX - 1);
	if (!rc)
		rc = proto_out_append(&p->out, &p->out_len, &p->out_cap, "\n", 1, OUT_MAX);
	free(s);
	if (rc) {
		if (rc == -ENOBUFS)
			peer_conn_fail(p, "peer does not read (%u bytes queued)", OUT_MAX);
		else
			peer_conn_fail(p, "out of memory");
		return rc;
	}
	if (p->mac)
		p->seq_tx++;
	flush_out(p);
	return 0;
}

json_t *peer_msg(const char *type)
{
	return json_pack("{s:i, s:s}", "v", PEER_PROTO_VERSION, "type", type);
}

/* ------------------------------------------------------------ lifecycle */

void peer_notify(struct peer *p, bool up)
{
	struct peer_ctx *pc = p->pc;

	for (size_t i = 0; i < pc->n_listeners; i++)
		pc->listeners[i].fn(pc, p, up, pc->listeners[i].arg);
}

/* Close the socket and everything of the connection; listeners and
 * pending requests learn about it first. */
static void conn_close(struct peer *p, const char *why)
{
	struct peer_pending *q;
	bool was_up = p->state == PEER_UP;

	ev_io_stop(p->pc->loop, &p->rw);
	ev_io_stop(p->pc->loop, &p->ww);
	ev_timer_stop(p->pc->loop, &p->tw);
	p->state = PEER_DOWN;
	if (was_up)
		peer_notify(p, false);
	while ((q = p->pending)) {
		p->pending = q->next;
		q->cb(p->pc, p, NULL, "closed", why, q->arg);
		free(q);
	}
	p->n_pending = 0;
	p->n_serving = 0;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	proto_linebuf_free(&p->in);
	free(p->out);
	p->out = NULL;
	p->out_len = p->out_cap = 0;
	p->mac = false;
	p->got_hello = p->got_auth = false;
	p->seq_tx = p->seq_rx = 0;
	p->serial = 0;
}

static void free_incoming(struct peer *p)
{
	struct peer_ctx *pc = p->pc;
	struct peer **pp;

	for (pp = &pc->in; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	pc->n_in--;
	p->magic = 0;
	free(p);
}

void peer_conn_fail(struct peer *p, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	if (p->magic != PEER_MAGIC || p->state == PEER_DOWN)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(p->error, sizeof(p->error), "%s", msg);
	if (p->outgoing && !p->logged) {
		log_warnx("reference peer %s: %s (retrying with backoff)", p->name, msg);
		p->logged = true;
	} else {
		log_debug(LOG_SS_REF, "peer %s: %s", p->name, msg);
	}
	conn_close(p, msg);
	if (!p->outgoing) {
		/* freed from the timer, once whoever called us is done with it */
		ev_timer_set(&p->tw, 0, 0);
		ev_timer_start(p->pc->loop, &p->tw);
		return;
	}
	p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : PEER_BACKOFF_MIN_MS;
	if (p->backoff_ms > PEER_BACKOFF_MAX_MS)
		p->backoff_ms = PEER_BACKOFF_MAX_MS;
	p->deadline_ns = clock_now_ns() + p->backoff_ms * 1000000ull;
	peer_arm_timer(p);
}

/* Tell the peer why we hang up (best effort), then fail. */
void peer_conn_refuse(struct peer *p, const char *fmt, ...)
{
	char msg[160];
	json_t *m = peer_msg("error");
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_set_new(m, "message", json_string(msg));
	if (peer_send(p, m) == 0 && p->magic == PEER_MAGIC && p->state != PEER_DOWN)
		peer_conn_fail(p, "%s", msg);
}

/* The next thing the connection's timer must do: the handshake or connect
 * deadline, the reconnect, or the earliest request deadline. */
void peer_arm_timer(struct peer *p)
{
	uint64_t at = 0, now = clock_now_ns();

	ev_timer_stop(p->pc->loop, &p->tw);
	if (p->state == PEER_UP) {
		for (struct peer_pending *q = p->pending; q; q = q->next)
			if (!at || q->deadline_ns < at)
				at = q->deadline_ns;
	} else if (p->state != PEER_IDLE) {
		at = p->deadline_ns;
	}
	if (!at)
		return;
	ev_timer_set(&p->tw, at > now ? (double)(at - now) / 1e9 : 0, 0);
	ev_timer_start(p->pc->loop, &p->tw);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct peer *p = w->data;
	uint64_t now = clock_now_ns();
	struct peer_pending **pp, *q;

	if (p->magic != PEER_MAGIC)
		return;
	switch (p->state) {
	case PEER_DOWN:
		if (p->outgoing)
			dial(p);
		else
			free_incoming(p);
		return;
	case PEER_CONNECTING:
	case PEER_HANDSHAKE:
		peer_conn_fail(p, "%s timed out", p->state == PEER_CONNECTING ? "connect" : "handshake");
		return;
	case PEER_UP:
		for (pp = &p->pending; (q = *pp);) {
			if (q->deadline_ns > now) {
				pp = &q->next;
				continue;
			}
			*pp = q->next;
			p->n_pending--;
			q->cb(p->pc, p, NULL, "timeout", "no reply in time", q->arg);
			free(q);
			if (p->magic != PEER_MAGIC || p->state != PEER_UP)
				return;
		}
		peer_arm_timer(p);
		return;
	default:
		return;
	}
}

static void read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer *p = w->data;
	uint64_t serial = p->serial;
	char buf[16384], *line;
	size_t len;
	ssize_t n;
	int rc;

	if (p->magic != PEER_MAGIC)
		return;
	n = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		peer_conn_fail(p, "%s", n ? strerror(errno) : "connection closed by the peer");
		return;
	}
	rc = proto_linebuf_feed(&p->in, buf, (size_t)n);
	/* each line may close the connection (an incoming one is freed then):
	 * re-check before taking the next */
	while (p->magic == PEER_MAGIC && p->serial == serial && p->state != PEER_DOWN &&
	       proto_linebuf_next(&p->in, &line, &len) == 1) {
		peermsg_line(p, line, len);
		free(line);
	}
	if (rc && p->magic == PEER_MAGIC && p->serial == serial && p->state != PEER_DOWN)
		peer_conn_fail(p, "line longer than %d bytes", PEER_MAX_LINE);
}

static void write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer *p = w->data;

	if (p->magic != PEER_MAGIC)
		return;
	if (p->state == PEER_CONNECTING) {
		int e = 0;
		socklen_t l = sizeof(e);

		if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &e, &l) || e) {
			peer_conn_fail(p, "connect: %s", strerror(e ? e : errno));
			return;
		}
		ev_io_stop(loop, &p->ww);
		p->state = PEER_HANDSHAKE;
		ev_io_start(loop, &p->rw);
		peermsg_hello(p);
		return;
	}
	flush_out(p);
}

/* TCP keepalive, so that a peer that vanished is noticed within ~15 s even
 * when nothing is sent. */
static void tune_socket(int fd)
{
	int one = 1, idle = 5, intvl = 2, cnt = 3;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Common setup of a connected (or connecting) socket. */
static int conn_setup(struct peer *p, int fd)
{
	if (getrandom(p->nonce, sizeof(p->nonce), 0) != sizeof(p->nonce))
		return -EIO;
	p->fd = fd;
	p->serial = ++p->pc->next_serial;
	p->next_id = 1;
	p->got_hello = p->got_auth = p->mac = false;
	p->seq_tx = p->seq_rx = 0;
	proto_linebuf_init(&p->in, PEER_MAX_LINE);
	ev_io_init(&p->rw, read_cb, fd, EV_READ);
	ev_io_init(&p->ww, write_cb, fd, EV_WRITE);
	p->rw.data = p;
	p->ww.data = p;
	p->deadline_ns = clock_now_ns() + PEER_TIMEOUT_MS * 1000000ull;
	tune_socket(fd);
	return 0;
}

/* ------------------------------------------------------------ resolving
 *
 * A peer configured by host name is resolved on a thread of its own, never
 * in the event loop (getaddrinfo() may wait for DNS for seconds, on every
 * redial).  The thread gets a job and its own copy of the write end of a
 * datagram socket pair, and sends the finished job's address back through
 * it; the loop matches it to the peer by index and token (the peers may
 * have been rebuilt meanwhile: then it is dropped).  Address literals are
 * resolved at once (AI_NUMERICHOST never blocks). */
struct resolve_job {
	size_t idx;                   /* in pc->out */
	uint64_t token;
	char host[CONFIG_NAME_MAX];
	char port[8];
	int fd;                       /* the thread's copy of the write end */
	int rc;
	struct addrinfo *res;
};

static void job_free(struct resolve_job *j)
{
	if (j->res)
		freeaddrinfo(j->res);
	free(j);
}

static void *resolve_thread(void *arg)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct resolve_job *j = arg;
	int fd = j->fd;

	j->rc = getaddrinfo(j->host, j->port, &hints, &j->res);
	if (send(fd, &j, sizeof(j), MSG_NOSIGNAL) != sizeof(j))
		job_free(j); /* the context is gone */
	close(fd);
	return NULL;
}

static void connect_to(struct peer *p, struct addrinfo *res);

static void resolved_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer_ctx *pc = w->data;
	struct resolve_job *j;

	while (recv(pc->res_fd[0], &j, sizeof(j), MSG_DONTWAIT) == sizeof(j)) {
		struct peer *p = j->idx < pc->n_out ? &pc->out[j->idx] : NULL;

		if (p && p->resolve_token == j->token) {
			p->resolve_token = 0;
			if (p->state == PEER_CONNECTING && j->rc)
				peer_conn_fail(p, "%s", gai_strerror(j->rc));
			else if (p->state == PEER_CONNECTING)
				connect_to(p, j->res);
			/* else: failed meanwhile (timeout); the backoff redials */
		}
		job_free(j);
	}
}

static int resolve_start(struct peer *p, const char *port)
{
	struct peer_ctx *pc = p->pc;
	struct resolve_job *j;
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

static void resolve_fini(struct peer_ctx *pc)
{
	struct resolve_job *j;

	if (pc->res_fd[0] < 0)
		return;
	ev_io_stop(pc->loop, &pc->res_w);
	while (recv(pc->res_fd[0], &j, sizeof(j), MSG_DONTWAIT) == sizeof(j))
		job_free(j);
	close(pc->res_fd[0]);
	close(pc->res_fd[1]);
	pc->res_fd[0] = pc->res_fd[1] = -1; /* threads still resolving fail to send, free */
}

static void dial(struct peer *p)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | AI_NUMERICHOST },
			*res;
	char port[8];
	int rc;

	snprintf(port, sizeof(port), "%u", p->port);
	p->state = PEER_CONNECTING;
	p->deadline_ns = clock_now_ns() + PEER_TIMEOUT_MS * 1000000ull;
	if (p->resolve_token) { /* still resolving from an earlier attempt */
		peer_arm_timer(p);
		return;
	}
	rc = getaddrinfo(p->address, port, &hints, &res);
	if (rc == EAI_NONAME) { /* a host name */
		rc = resolve_start(p, port);
		if (rc) {
			peer_conn_fail(p, "cannot resolve: %s", strerror(-rc));
			return;
		}
		peer_arm_timer(p);
		return;
	}
	if (rc) {
		peer_conn_fail(p, "%s", gai_strerror(rc));
		return;
	}
	connect_to(p, res);
	freeaddrinfo(res);
}

/* Connect to the first address of @res (not freed here). */
static void connect_to(struct peer *p, struct addrinfo *res)
{
	struct peer_ctx *pc = p->pc;
	int fd, rc;

	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		peer_conn_fail(p, "socket: %s", strerror(errno));
		return;
	}
	/* leave from our listening address, which is what the peer expects */
	{
		struct addrinfo lh = { .ai_family = res->ai_family, .ai_socktype = SOCK_STREAM,
				       .ai_flags = AI_NUMERICHOST | AI_PASSIVE },
				*la;

		if (strcmp(pc->listen_address, "0.0.0.0") && strcmp(pc->listen_address, "::") &&
		    !getaddrinfo(pc->listen_address, NULL, &lh, &la)) {
			if (bind(fd, la->ai_addr, la->ai_addrlen))
				log_debug(LOG_SS_REF, "peer %s: bind %s: %s", p->name,
					  pc->listen_address, strerror(errno));
			freeaddrinfo(la);
		}
	}
	if (conn_setup(p, fd)) {
		close(fd);
		peer_conn_fail(p, "no randomness");
		return;
	}
	rc = connect(fd, res->ai_addr, res->ai_addrlen);
	if (rc && errno != EINPROGRESS) {
		peer_conn_fail(p, "connect: %s", strerror(errno));
		return;
	}
	ev_io_start(pc->loop, &p->ww); /* writable = connected (or failed) */
	peer_arm_timer(p);
}

/* Incoming connections from @ss's host (any port). */
static size_t incoming_from(const struct peer_ctx *pc, const struct sockaddr_storage *ss)
{
	struct sockaddr_storage o;
	socklen_t len;
	size_t n = 0;

	for (const struct peer *p = pc->in; p; p = p->next)
		n += !peer_remote_addr(p, &o, &len) && same_host(&o, ss);
	return n;
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer_ctx *pc = w->data;
	static uint64_t last_refusal;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[INET6_ADDRSTRLEN];
	struct peer *p;
	int fd;

	fd = accept4(pc->lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR)
			log_warn("peer accept");
		return;
	}
	normalize(&ss, &len);
	addr_text(&ss, host, sizeof(host));
	if (!allowed(pc, &ss) || pc->n_in >= MAX_INCOMING ||
	    incoming_from(pc, &ss) >= MAX_INCOMING_PER_HOST) {
		uint64_t now = clock_now_ns();

		if (now - last_refusal > REFUSE_LOG_NS) {
			log_warnx("peer connection from %s refused: %s", host,
				  !allowed(pc, &ss)	     ? "not a configured reference peer"
				  : pc->n_in >= MAX_INCOMING ? "too many connections"
							     : "too many connections from that host");
			last_refusal = now;
		}
		close(fd);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(fd);
		return;
	}
	p->magic = PEER_MAGIC;
	p->pc = pc;
	p->fd = -1;
	ev_init(&p->tw, timer_cb);
	p->tw.data = p;
	snprintf(p->name, sizeof(p->name), "%s:%u", host,
		 ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
					 : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	if (conn_setup(p, fd)) {
		close(fd);
		free(p);
		return;
	}
	p->state = PEER_HANDSHAKE;
	p->next = pc->in;
	pc->in = p;
	pc->n_in++;
	ev_io_start(loop, &p->rw);
	peer_arm_timer(p);
	peermsg_hello(p);
}

/* ------------------------------------------------------------ setup */

static int open_listener(struct peer_ctx *pc, const struct config *cfg)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE },
			*res;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char port[8];
	int one = 1, rc;

	snprintf(port, sizeof(port), "%u", cfg->reference.listen_port);
	rc = getaddrinfo(cfg->reference.listen_address, port, &hints, &res);
	if (rc) {
		snprintf(pc->error, sizeof(pc->error), "listen_address: %s", gai_strerror(rc));
		return -EINVAL;
	}
	pc->lfd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (pc->lfd < 0) {
		rc = -errno;
		goto out_free;
	}
	setsockopt(pc->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(pc->lfd, res->ai_addr, res->ai_addrlen) || listen(pc->lfd, 16) ||
	    getsockname(pc->lfd, (struct sockaddr *)&ss, &len)) {
		rc = -errno;
		goto out_close;
	}
	pc->listen_port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
							: ((struct sockaddr_in6 *)&ss)->sin6_port);
	ev_io_init(&pc->lw, accept_cb, pc->lfd, EV_READ);
	pc->lw.data = pc;
	ev_io_start(pc->loop, &pc->lw);
	freeaddrinfo(res);
	return 0;
out_close:
	close(pc->lfd);
	pc->lfd = -1;
out_free:
	snprintf(pc->error, sizeof(pc->error), "listen on %s port %s: %s",
		 cfg->reference.listen_address, port, strerror(-rc));
	freeaddrinfo(res);
	return rc;
}

static void close_all(struct peer_ctx *pc)
{
	while (pc->in) {
		struct peer *p = pc->in;

		conn_close(p, "shutting down");
		free_incoming(p);
	}
	for (size_t i = 0; i < pc->n_out; i++) {
		conn_close(&pc->out[i], "shutting down");
		pc->out[i].magic = 0;
	}
	free(pc->out);
	pc->out = NULL;
	pc->n_out = 0;
}

/* (Re)build the outgoing peers from the configuration and dial them. */
static int start_outgoing(struct peer_ctx *pc, const struct config *cfg)
{
	if (!cfg->n_peers)
		return 0;
	pc->out = calloc(cfg->n_peers, sizeof(*pc->out));
	if (!pc->out)
		return -ENOMEM;
	pc->n_out = cfg->n_peers;
	for (size_t i = 0; i < pc->n_out; i++) {
		struct peer *p = &pc->out[i];

		p->magic = PEER_MAGIC;
		p->pc = pc;
		p->fd = -1;
		p->outgoing = true;
		snprintf(p->address, sizeof(p->address), "%s", cfg->peers[i].address);
		p->port = cfg->peers[i].port;
		snprintf(p->name, sizeof(p->name), "%s%s%s:%u",
			 strchr(p->address, ':') ? "[" : "", p->address,
			 strchr(p->address, ':') ? "]" : "", p->port);
		ev_init(&p->tw, timer_cb);
		p->tw.data = p;
		if (!pc->usable) {
			p->state = PEER_DOWN;
			snprintf(p->error, sizeof(p->error), "%s", pc->error);
			continue;
		}
		dial(p);
	}
	return 0;
}

/* A secret that cannot be read disables the whole channel: without it the
 * peers cannot be authenticated. */
static int load_secret(struct peer_ctx *pc, const struct config *cfg)
{
	pc->have_secret = false;
	pc->usable = true;
	memset(&pc->key, 0, sizeof(pc->key));
	if (!cfg->reference.secret_file[0])
		return 0;
	if (peerauth_read_secret(cfg->reference.secret_file, &pc->key, pc->error,
				 sizeof(pc->error))) {
		pc->usable = false;
		return -EINVAL;
	}
	pc->have_secret = true;
	return 0;
}

int peer_ctx_init(struct peer_ctx *pc, struct ev_loop *loop, const struct config *cfg,
		  uint64_t node)
{
	int rc;

	memset(pc, 0, sizeof(*pc));
	pc->loop = loop;
	pc->node = node;
	pc->lfd = -1;
	pc->res_fd[0] = pc->res_fd[1] = -1;
	snprintf(pc->listen_address, sizeof(pc->listen_address), "%s",
		 cfg->reference.listen_address);
	rc = load_secret(pc, cfg);
	if (rc) {
		log_warnx("peer channel disabled: %s", pc->error);
	} else {
		rc = open_listener(pc, cfg);
		if (rc)
			log_warnx("peer channel: not answering peers: %s", pc->error);
	}
	resolve_allow(pc, cfg);
	if (start_outgoing(pc, cfg))
		return -ENOMEM;
	if (!rc)
		log_info("peer channel on %s port %u (%zu peers, %s)", pc->listen_address,
			 pc->listen_port, pc->n_out,
			 pc->have_secret ? "shared secret"
					 : "no secret: source address check only");
	return rc;
}

void peer_ctx_reconfigure(struct peer_ctx *pc, const struct config *cfg)
{
	struct siphash_key old = pc->key;
	bool had = pc->have_secret, same = cfg->n_peers == pc->n_out;
	char olderr[sizeof(pc->error)];

	for (size_t i = 0; same && i < pc->n_out; i++)
		same = !strcmp(pc->out[i].address, cfg->peers[i].address) &&
		       pc->out[i].port == cfg->peers[i].port;
	if (strcmp(cfg->reference.listen_address, pc->listen_address) ||
	    (cfg->reference.listen_port != pc->listen_port && pc->lfd >= 0))
		log_warnx("reference.listen_address and listen_port change only on restart");
	snprintf(olderr, sizeof(olderr), "%s", pc->error);
	if (pc->lfd >= 0 || !pc->usable)
		pc->error[0] = 0;
	if (load_secret(pc, cfg))
		log_warnx("peer channel: %s", pc->error);
	resolve_allow(pc, cfg);
	if (same && had == pc->have_secret && !memcmp(&old, &pc->key, sizeof(old)) &&
	    !strcmp(olderr, pc->error))
		return;
	log_info("peer channel: peers or secret changed, reconnecting");
	close_all(pc);
	start_outgoing(pc, cfg);
}

void peer_ctx_fini(struct peer_ctx *pc)
{
	close_all(pc);
	resolve_fini(pc);
	if (pc->lfd >= 0) {
		ev_io_stop(pc->loop, &pc->lw);
		close(pc->lfd);
		pc->lfd = -1;
	}
	free(pc->allow);
	pc->allow = NULL;
	pc->n_allow = 0;
	memset(&pc->key, 0, sizeof(pc->key));
}

int peer_handle(struct peer_ctx *pc, const char *op, peer_handler_fn fn, void *arg)
{
	if (pc->n_handlers == PEER_MAX_HANDLERS || strlen(op) >= sizeof(pc->handlers[0].op))
		return -ENOSPC;
	snprintf(pc->handlers[pc->n_handlers].op, sizeof(pc->handlers[0].op), "%s", op);
	pc->handlers[pc->n_handlers].fn = fn;
	pc->handlers[pc->n_handlers].arg = arg;
	pc->n_handlers++;
	return 0;
}

int peer_listen_events(struct peer_ctx *pc, peer_event_fn fn, void *arg)
{
	if (pc->n_listeners == PEER_MAX_LISTENERS)
		return -ENOSPC;
	pc->listeners[pc->n_listeners].fn = fn;
	pc->listeners[pc->n_listeners].arg = arg;
	pc->n_listeners++;
	return 0;
}

int peer_request(struct peer *p, const char *op, json_t *args, peer_reply_fn cb, void *arg,
		 int timeout_ms)
{
	struct peer_pending *q;
	json_t *m;

	if (!p || p->magic != PEER_MAGIC || p->state != PEER_UP) {
		json_decref(args);
		return -ENOTCONN;
	}
	if (p->n_pending >= PEER_MAX_PENDING) {
		json_decref(args);
		return -EBUSY;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		json_decref(args);
		return -ENOMEM;
	}
	q->id = p->next_id++;
	q->cb = cb;
	q->arg = arg;
	q->deadline_ns = clock_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : PEER_TIMEOUT_MS) *
					    1000000ull;
	q->next = p->pending;
	p->pending = q;
	p->n_pending++;
	m = peer_msg("req");
	json_object_set_new(m, "id", json_integer(q->id));
	json_object_set_new(m, "op", json_string(op));
	json_object_set_new(m, "args", args ? args : json_object());
	if (peer_send(p, m))
		return 0; /* the connection failed: cb has been called with "closed" */
	peer_arm_timer(p);
	return 0;
}

int peer_remote_addr(const struct peer *p, struct sockaddr_storage *ss, socklen_t *len)
{
	*len = sizeof(*ss);
	if (p->fd < 0 || getpeername(p->fd, (struct sockaddr *)ss, len))
		return -ENOTCONN;
	normalize(ss, len);
	return 0;
}

struct peer *peer_outgoing(struct peer_ctx *pc, size_t i)
{
	return i < pc->n_out ? &pc->out[i] : NULL;
}

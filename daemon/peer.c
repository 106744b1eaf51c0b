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

static void dial(struct peer *p)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *res;
	struct peer_ctx *pc = p->pc;
	char port[8];
	int fd, rc;

	snprintf(port, sizeof(port), "%u", p->port);
	p->state = PEER_CONNECTING;
	rc = getaddrinfo(p->address, port, &hints, &res);
	if (rc) {
		peer_conn_fail(p, "%s", gai_strerror(rc));
		return;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		freeaddrinfo(res);
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
		freeaddrinfo(res);
		peer_conn_fail(p, "no randomness");
		return;
	}
	rc = connect(fd, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (rc && errno != EINPROGRESS) {
		peer_conn_fail(p, "connect: %s", strerror(errno));
		return;
	}
	ev_io_start(pc->loop, &p->ww); /* writable = connected (or failed) */
	peer_arm_timer(p);
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
	if (!allowed(pc, &ss) || pc->n_in >= MAX_INCOMING) {
		uint64_t now = clock_now_ns();

		if (now - last_refusal > REFUSE_LOG_NS) {
			log_warnx("peer connection from %s refused: %s", host,
				  pc->n_in >= MAX_INCOMING ? "too many connections"
							   : "not a configured reference peer");
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

struct peer *peer_outgoing(struct peer_ctx *pc, size_t i)
{
	return i < pc->n_out ? &pc->out[i] : NULL;
}

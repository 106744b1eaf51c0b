// SPDX-License-Identifier: MIT
/* The peer channel's connections: one struct peer per TCP connection, its
 * state machine, output queue, timers and request deadlines, dialling with
 * backoff and closing; received lines go to pc->on_line (peer.c).
 * May call: peermsg (our hello), peeraddr, peerauth and kcrypto (sealed
 * lines), proto, log. */
#include "peerconn.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "peeraddr.h"
#include "peerauth.h"
#include "peermsg.h"

/* Outgoing peers (one per configured reference.peers[] entry) live in an
 * array and are re-dialled after a failure with exponential backoff;
 * incoming connections live in a list and are freed when they close. */

#define OUT_MAX (1u << 20)

static void connect_to(struct peer *p, struct addrinfo *res);

static void flush_out(struct peer *p)
{
	int rc = proto_out_flush(p->fd, p->out, &p->out_len);

	if (rc < 0) {
		peerconn_fail(p, "send: %s", strerror(-rc));
		return;
	}
	if (p->out_len)
		ev_io_start(p->pc->loop, &p->ww);
	else
		ev_io_stop(p->pc->loop, &p->ww);
}

/* A sealed line: the JSON encrypted and authenticated with AES-256-GCM
 * under this direction's key and the line's sequence number, in hex.
 * Returns the malloc'd line (without newline) or NULL with *rc set. */
static char *seal_line(struct peer *p, const char *s, size_t len, size_t *outlen, int *rc)
{
	uint8_t nonce[KCRYPTO_NONCE], *ct;
	char *hex;

	if (len > PEER_MAX_PLAIN) {
		*rc = -EMSGSIZE;
		return NULL;
	}
	ct = malloc(len + KCRYPTO_TAG);
	hex = malloc(2 * (len + KCRYPTO_TAG) + 1);
	*rc = ct && hex ? 0 : -ENOMEM;
	if (!*rc) {
		peerauth_nonce(p->seq_tx, nonce);
		*rc = kcrypto_aead_seal(&p->tx, nonce, s, len, ct);
	}
	if (!*rc) {
		peerauth_hex(hex, ct, len + KCRYPTO_TAG);
		*outlen = 2 * (len + KCRYPTO_TAG);
	}
	free(ct);
	if (*rc) {
		free(hex);
		return NULL;
	}
	return hex;
}

/* Queue one message (consumed); once the handshake has set up the keys
 * the line is sealed (seal_line).  0 or -errno (the connection has failed
 * then). */
int peerconn_send(struct peer *p, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	size_t len;
	int rc = 0;

	json_decref(msg);
	if (!s) {
		peerconn_fail(p, "cannot encode a message");
		return -ENOMEM;
	}
	len = strlen(s);
	if (p->sealed) {
		char *line = seal_line(p, s, len, &len, &rc);

		free(s);
		if (!line) {
			peerconn_fail(p, "cannot seal a message of %zu bytes: %s", len,
				      strerror(-rc));
			return rc;
		}
		s = line;
	}
	/* the line and its newline go together or not at all */
	rc = proto_out_append(&p->out, &p->out_len, &p->out_cap, s, len, OUT_MAX - 1);
	if (!rc)
		rc = proto_out_append(&p->out, &p->out_len, &p->out_cap, "\n", 1, OUT_MAX);
	free(s);
	if (rc) {
		if (rc == -ENOBUFS)
			peerconn_fail(p, "peer does not read (%u bytes queued)", OUT_MAX);
		else
			peerconn_fail(p, "out of memory");
		return rc;
	}
	if (p->sealed)
		p->seq_tx++;
	flush_out(p);
	return 0;
}

void peerconn_notify(struct peer *p, bool up)
{
	struct peer_ctx *pc = p->pc;

	for (size_t i = 0; i < pc->n_listeners; i++)
		pc->listeners[i].fn(pc, p, up, pc->listeners[i].arg);
}

/* Close the socket and everything of the connection; listeners and
 * pending requests learn about it first. */
void peerconn_close(struct peer *p, const char *why)
{
	struct peer_pending *q;
	bool was_up = p->state == PEER_UP;

	ev_io_stop(p->pc->loop, &p->rw);
	ev_io_stop(p->pc->loop, &p->ww);
	ev_timer_stop(p->pc->loop, &p->tw);
	p->state = PEER_DOWN;
	if (was_up)
		peerconn_notify(p, false);
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
	peerconn_unseal(p);
	p->got_hello = p->got_auth = false;
	p->seq_tx = p->seq_rx = 0;
	p->serial = 0;
}

void peerconn_unseal(struct peer *p)
{
	if (p->sealed) {
		kcrypto_aead_free(&p->tx);
		kcrypto_aead_free(&p->rx);
	}
	p->sealed = false;
}

void peerconn_free_incoming(struct peer *p)
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

void peerconn_fail(struct peer *p, const char *fmt, ...)
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
	peerconn_close(p, msg);
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
	peerconn_arm_timer(p);
}

/* Tell the peer why we hang up (best effort), then fail. */
void peerconn_refuse(struct peer *p, const char *fmt, ...)
{
	char msg[160];
	json_t *m = peermsg_new("error");
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_set_new(m, "message", json_string(msg));
	if (peerconn_send(p, m) == 0 && p->magic == PEER_MAGIC && p->state != PEER_DOWN)
		peerconn_fail(p, "%s", msg);
}

/* The next thing the connection's timer must do: the handshake or connect
 * deadline, the reconnect, or the earliest request deadline. */
void peerconn_arm_timer(struct peer *p)
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

void peerconn_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct peer *p = w->data;
	uint64_t now = clock_now_ns();
	struct peer_pending **pp, *q;

	if (p->magic != PEER_MAGIC)
		return;
	switch (p->state) {
	case PEER_DOWN:
		if (p->outgoing)
			peerconn_dial(p);
		else
			peerconn_free_incoming(p);
		return;
	case PEER_CONNECTING:
	case PEER_HANDSHAKE:
		p->pc->refused.protocol += !p->outgoing && p->state == PEER_HANDSHAKE;
		peerconn_fail(p, "%s timed out",
			      p->state == PEER_CONNECTING ? "connect" : "handshake");
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
		peerconn_arm_timer(p);
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
		peerconn_fail(p, "%s", n ? strerror(errno) : "connection closed by the peer");
		return;
	}
	rc = proto_linebuf_feed(&p->in, buf, (size_t)n);
	/* each line may close the connection (an incoming one is freed then):
	 * re-check before taking the next */
	while (p->magic == PEER_MAGIC && p->serial == serial && p->state != PEER_DOWN &&
	       proto_linebuf_next(&p->in, &line, &len) == 1) {
		p->pc->on_line(p, line, len);
		free(line);
	}
	if (rc && p->magic == PEER_MAGIC && p->serial == serial && p->state != PEER_DOWN) {
		p->pc->refused.protocol += !p->outgoing;
		peerconn_fail(p, "line longer than %d bytes", PEER_MAX_LINE);
	}
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
			peerconn_fail(p, "connect: %s", strerror(e ? e : errno));
			return;
		}
		ev_io_stop(loop, &p->ww);
		p->state = PEER_HANDSHAKE;
		ev_io_start(loop, &p->rw);
		peerconn_send(p, peermsg_hello(p));
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
int peerconn_setup(struct peer *p, int fd)
{
	if (getrandom(p->nonce, sizeof(p->nonce), 0) != sizeof(p->nonce))
		return -EIO;
	p->fd = fd;
	p->serial = ++p->pc->next_serial;
	p->next_id = 1;
	p->got_hello = p->got_auth = p->sealed = false;
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

static void resolved_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer_ctx *pc = w->data;
	struct peeraddr_job *j;

	while ((j = peeraddr_resolved(pc))) {
		struct peer *p = j->idx < pc->n_out ? &pc->out[j->idx] : NULL;

		if (p && p->resolve_token == j->token) {
			p->resolve_token = 0;
			if (p->state == PEER_CONNECTING && j->rc)
				peerconn_fail(p, "%s", gai_strerror(j->rc));
			else if (p->state == PEER_CONNECTING)
				connect_to(p, j->res);
			/* else: failed meanwhile (timeout); the backoff redials */
		}
		peeraddr_job_free(j);
	}
}

void peerconn_dial(struct peer *p)
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
		peerconn_arm_timer(p);
		return;
	}
	rc = getaddrinfo(p->address, port, &hints, &res);
	if (rc == EAI_NONAME) { /* a host name */
		rc = peeraddr_resolve_start(p, port, resolved_cb);
		if (rc) {
			peerconn_fail(p, "cannot resolve: %s", strerror(-rc));
			return;
		}
		peerconn_arm_timer(p);
		return;
	}
	if (rc) {
		peerconn_fail(p, "%s", gai_strerror(rc));
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
		peerconn_fail(p, "socket: %s", strerror(errno));
		return;
	}
	/* leave from our listening address, which is what the peer expects */
	{
		struct addrinfo lh = { .ai_family = res->ai_family, .ai_socktype = SOCK_STREAM,
				       .ai_flags = AI_NUMERICHOST | AI_PASSIVE },
				*la;

		if (pc->listen_address[0] && strcmp(pc->listen_address, "0.0.0.0") &&
		    strcmp(pc->listen_address, "::") &&
		    !getaddrinfo(pc->listen_address, NULL, &lh, &la)) {
			if (bind(fd, la->ai_addr, la->ai_addrlen))
				log_debug(LOG_SS_REF, "peer %s: bind %s: %s", p->name,
					  pc->listen_address, strerror(errno));
			freeaddrinfo(la);
		}
	}
	if (peerconn_setup(p, fd)) {
		close(fd);
		peerconn_fail(p, "no randomness");
		return;
	}
	rc = connect(fd, res->ai_addr, res->ai_addrlen);
	if (rc && errno != EINPROGRESS) {
		peerconn_fail(p, "connect: %s", strerror(errno));
		return;
	}
	ev_io_start(pc->loop, &p->ww); /* writable = connected (or failed) */
	peerconn_arm_timer(p);
}

void peerconn_close_all(struct peer_ctx *pc)
{
	while (pc->in) {
		struct peer *p = pc->in;

		peerconn_close(p, "shutting down");
		peerconn_free_incoming(p);
	}
	for (size_t i = 0; i < pc->n_out; i++) {
		peerconn_close(&pc->out[i], "shutting down");
		pc->out[i].magic = 0;
	}
	free(pc->out);
	pc->out = NULL;
	pc->n_out = 0;
}

/* (Re)build the outgoing peers from the configuration and dial them. */
int peerconn_start_outgoing(struct peer_ctx *pc, const struct config *cfg)
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
		ev_init(&p->tw, peerconn_timer_cb);
		p->tw.data = p;
		if (!pc->usable) {
			p->state = PEER_DOWN;
			snprintf(p->error, sizeof(p->error), "%s", pc->error);
			continue;
		}
		peerconn_dial(p);
	}
	return 0;
}

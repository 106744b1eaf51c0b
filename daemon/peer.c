// SPDX-License-Identifier: MIT
/* The justitiad peer channel (see peer.h, docs/peer-protocol.md): its
 * context, the listener and the connections it admits, and acting on what
 * peers send once peermsg.c has checked it (up, requests, replies).
 * May call: peerconn (connections), peermsg, peeraddr, peerauth, log. */
#include "peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "peeraddr.h"
#include "peerauth.h"
#include "peerconn.h"
#include "peermsg.h"

/* Everything a peer sends is checked before use (peermsg.c): bounded
 * lines, strict JSON members, MACs, sequence numbers.  Here it is acted on:
 * the session going up, requests to the registered handlers, replies to
 * the requests in flight. */

#define MAX_INCOMING (2 * CONFIG_MAX_PEERS)
#define MAX_INCOMING_PER_HOST 8 /* a few daemons on one peer host, each dials once */
#define REFUSE_LOG_NS 10000000000ull

static void go_up(struct peer *p)
{
	p->state = PEER_UP;
	p->backoff_ms = 0;
	p->error[0] = 0;
	if (p->outgoing) {
		if (p->logged)
			log_info("reference peer %s: connected%s", p->name,
				 p->sealed ? " (authenticated, encrypted)" : "");
		else
			log_debug(LOG_SS_REF, "peer %s up%s", p->name,
				  p->sealed ? " (authenticated, encrypted)" : "");
	} else {
		log_debug(LOG_SS_REF, "peer %s connected to us%s", p->name,
			  p->sealed ? " (authenticated, encrypted)" : "");
	}
	p->logged = false;
	peerconn_arm_timer(p);
	peerconn_notify(p, true);
}

static struct peer *find_conn(struct peer_ctx *pc, uint64_t serial)
{
	for (size_t i = 0; i < pc->n_out; i++)
		if (pc->out[i].serial == serial && pc->out[i].state == PEER_UP)
			return &pc->out[i];
	for (struct peer *p = pc->in; p; p = p->next)
		if (p->serial == serial && p->state == PEER_UP)
			return p;
	return NULL;
}

void peer_reply(struct peer_ctx *pc, const struct peer_req *rq, json_t *result)
{
	struct peer *p = find_conn(pc, rq->conn);
	json_t *m;

	if (!p) {
		json_decref(result);
		return;
	}
	p->n_serving--;
	m = peermsg_rep(rq->id, true);
	json_object_set_new(m, "result", result ? result : json_object());
	peerconn_send(p, m);
}

void peer_reply_error(struct peer_ctx *pc, const struct peer_req *rq, const char *code,
		      const char *fmt, ...)
{
	struct peer *p = find_conn(pc, rq->conn);
	char msg[256];
	va_list ap;
	json_t *m;

	if (!p)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->n_serving--;
	m = peermsg_rep(rq->id, false);
	json_object_set_new(m, "error", json_pack("{s:s, s:s}", "code", code, "message", msg));
	peerconn_send(p, m);
}

/* A request: its handler, or an error reply. */
static void on_request(struct peer *p, const struct peermsg *m)
{
	struct peer_ctx *pc = p->pc;
	struct peer_req rq = { .conn = p->serial, .id = m->id };
	json_t *args = m->args;

	p->n_serving++;
	if (p->n_serving > PEER_MAX_PENDING) {
		peer_reply_error(pc, &rq, "busy", "more than %d requests in flight",
				 PEER_MAX_PENDING);
		return;
	}
	for (size_t i = 0; i < pc->n_handlers; i++) {
		if (strcmp(pc->handlers[i].op, m->op))
			continue;
		if (!args)
			args = json_object();
		else
			json_incref(args);
		pc->handlers[i].fn(pc, p, &rq, args, pc->handlers[i].arg);
		json_decref(args);
		return;
	}
	peer_reply_error(pc, &rq, "unknown_op", "unknown operation \"%.32s\"", m->op);
}

/* A reply: to the request of ours in flight with its id. */
static void on_reply(struct peer *p, const struct peermsg *m)
{
	struct peer_pending **pp, *q;

	for (pp = &p->pending; (q = *pp); pp = &q->next)
		if (q->id == m->id)
			break;
	if (!q) {
		peerconn_refuse(p, "reply to unknown request %lld", (long long)m->id);
		return;
	}
	*pp = q->next;
	p->n_pending--;
	q->cb(p->pc, p, m->ok ? m->result : NULL, m->code, m->msg, q->arg);
	free(q);
	if (p->magic == PEER_MAGIC && p->state == PEER_UP)
		peerconn_arm_timer(p);
}

/* One line from the peer (pc->on_line): checked by peermsg.c, acted on here. */
static void handle_line(struct peer *p, char *line, size_t len)
{
	struct peermsg m;

	switch (peermsg_decode(p, line, len, &m)) {
	case PEERMSG_FAIL:
		p->pc->refused.protocol += !p->outgoing;
		peerconn_fail(p, "%s", m.why);
		break;
	case PEERMSG_REFUSE:
		p->pc->refused.protocol += !p->outgoing;
		peerconn_refuse(p, "%s", m.why);
		break;
	case PEERMSG_HELLO:
		if (m.reply) {
			peerconn_send(p, m.reply);
			m.reply = NULL;
		} else {
			go_up(p);
		}
		break;
	case PEERMSG_AUTH:
		go_up(p);
		break;
	case PEERMSG_REQUEST:
		on_request(p, &m);
		break;
	case PEERMSG_REPLY:
		on_reply(p, &m);
		break;
	}
	peermsg_done(&m);
}

/* Incoming connections from @ss's host (any port). */
static size_t incoming_from(const struct peer_ctx *pc, const struct sockaddr_storage *ss)
{
	struct sockaddr_storage o;
	socklen_t len;
	size_t n = 0;

	for (const struct peer *p = pc->in; p; p = p->next)
		n += !peer_remote_addr(p, &o, &len) && peeraddr_same_host(&o, ss);
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
	int fd, allowed;

	fd = accept4(pc->lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR)
			log_warn("peer accept");
		return;
	}
	peeraddr_normalize(&ss, &len);
	peeraddr_text(&ss, host, sizeof(host));
	allowed = peeraddr_allowed(pc, &ss);
	if (!allowed || pc->n_in >= MAX_INCOMING ||
	    incoming_from(pc, &ss) >= MAX_INCOMING_PER_HOST) {
		uint64_t now = clock_now_ns();

		if (!allowed)
			pc->refused.address++;
		else
			pc->refused.limit++;

		if (now - last_refusal > REFUSE_LOG_NS) {
			log_warnx("peer connection from %s refused: %s", host,
				  !allowed ? "not a configured reference peer"
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
	ev_init(&p->tw, peerconn_timer_cb);
	p->tw.data = p;
	snprintf(p->name, sizeof(p->name), "%s:%u", host,
		 ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
					 : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	if (peerconn_setup(p, fd)) {
		close(fd);
		free(p);
		return;
	}
	p->state = PEER_HANDSHAKE;
	p->next = pc->in;
	pc->in = p;
	pc->n_in++;
	ev_io_start(loop, &p->rw);
	peerconn_arm_timer(p);
	peerconn_send(p, peermsg_hello(p));
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
	rc = getaddrinfo(pc->listen_address, port, &hints, &res);
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
	snprintf(pc->error, sizeof(pc->error), "listen on %s port %s: %s", pc->listen_address,
		 port, strerror(-rc));
	freeaddrinfo(res);
	return rc;
}

/* A secret that cannot be read disables the whole channel: without it the
 * peers cannot be authenticated. */
static int load_secret(struct peer_ctx *pc, const struct config *cfg)
{
	pc->have_secret = false;
	pc->usable = true;
	memset(pc->key, 0, sizeof(pc->key));
	if (!cfg->reference.secret_file[0])
		return 0;
	if (peerauth_read_secret(cfg->reference.secret_file, pc->key, pc->error,
				 sizeof(pc->error))) {
		pc->usable = false;
		return -EINVAL;
	}
	pc->have_secret = true;
	return 0;
}

/* Where to listen: as configured, else the reference device's address.
 * Without either, nowhere: an error if peers are configured.  0, or
 * -EADDRNOTAVAIL with the reason in pc->error. */
static int pick_listen_address(struct peer_ctx *pc, const struct config *cfg,
			       const struct peer_listen_auto *auto_listen)
{
	const char *a = cfg->reference.listen_address;

	snprintf(pc->listen_cfg, sizeof(pc->listen_cfg), "%s", a);
	pc->listen_address[0] = 0;
	if (!a[0] && auto_listen && auto_listen->address[0])
		a = auto_listen->address;
	if (!a[0] && !cfg->n_peers)
		return 0;
	if (!a[0]) {
		snprintf(pc->error, sizeof(pc->error),
			 "not answering peers: reference.listen_address is not set and %.96s",
			 auto_listen && auto_listen->why[0] ? auto_listen->why
							    : "the reference device's address is unknown");
		return -EADDRNOTAVAIL;
	}
	if (!strcmp(a, "0.0.0.0") || !strcmp(a, "::"))
		log_warnx("peer channel: listening on every address (%s), as configured; only "
			  "the reference address is needed",
			  a);
	snprintf(pc->listen_address, sizeof(pc->listen_address), "%s", a);
	return 0;
}

int peer_ctx_init(struct peer_ctx *pc, struct ev_loop *loop, const struct config *cfg,
		  uint64_t node, const struct peer_listen_auto *auto_listen)
{
	int rc;

	memset(pc, 0, sizeof(*pc));
	pc->loop = loop;
	pc->node = node;
	pc->lfd = -1;
	pc->res_fd[0] = pc->res_fd[1] = -1;
	pc->on_line = handle_line;
	rc = load_secret(pc, cfg);
	if (rc) {
		log_warnx("peer channel disabled: %s", pc->error);
	} else if ((rc = pick_listen_address(pc, cfg, auto_listen))) {
		log_warnx("peer channel: %s", pc->error);
	} else if (pc->listen_address[0]) {
		rc = open_listener(pc, cfg);
		if (rc)
			log_warnx("peer channel: not answering peers: %s", pc->error);
	}
	peeraddr_resolve_allow(pc, cfg);
	if (peerconn_start_outgoing(pc, cfg))
		return -ENOMEM;
	if (!rc && pc->n_out)
		log_info("peer channel on %s port %u (%zu peers, %s)", pc->listen_address,
			 pc->listen_port, pc->n_out,
			 pc->have_secret ? "shared secret: authenticated, AES-256-GCM"
					 : "no secret: in the clear, source address check only");
	return rc;
}

void peer_ctx_reconfigure(struct peer_ctx *pc, const struct config *cfg)
{
	uint8_t old[sizeof(pc->key)];
	bool had = pc->have_secret, same = cfg->n_peers == pc->n_out;
	char olderr[sizeof(pc->error)];

	memcpy(old, pc->key, sizeof(old));
	for (size_t i = 0; same && i < pc->n_out; i++)
		same = !strcmp(pc->out[i].address, cfg->peers[i].address) &&
		       pc->out[i].port == cfg->peers[i].port;
	if (strcmp(cfg->reference.listen_address, pc->listen_cfg) ||
	    (cfg->reference.listen_port != pc->listen_port && pc->lfd >= 0))
		log_warnx("reference.listen_address and listen_port change only on restart");
	snprintf(olderr, sizeof(olderr), "%s", pc->error);
	if (pc->lfd >= 0 || !pc->usable)
		pc->error[0] = 0;
	if (load_secret(pc, cfg))
		log_warnx("peer channel: %s", pc->error);
	peeraddr_resolve_allow(pc, cfg);
	if (same && had == pc->have_secret && !memcmp(old, pc->key, sizeof(old)) &&
	    !strcmp(olderr, pc->error))
		return;
	log_info("peer channel: peers or secret changed, reconnecting");
	peerconn_close_all(pc);
	peerconn_start_outgoing(pc, cfg);
}

void peer_ctx_fini(struct peer_ctx *pc)
{
	peerconn_close_all(pc);
	peeraddr_resolve_fini(pc);
	if (pc->lfd >= 0) {
		ev_io_stop(pc->loop, &pc->lw);
		close(pc->lfd);
		pc->lfd = -1;
	}
	free(pc->allow);
	pc->allow = NULL;
	pc->n_allow = 0;
	memset(pc->key, 0, sizeof(pc->key));
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
	m = peermsg_new("req");
	json_object_set_new(m, "id", json_integer(q->id));
	json_object_set_new(m, "op", json_string(op));
	json_object_set_new(m, "args", args ? args : json_object());
	if (peerconn_send(p, m))
		return 0; /* the connection failed: cb has been called with "closed" */
	peerconn_arm_timer(p);
	return 0;
}

int peer_remote_addr(const struct peer *p, struct sockaddr_storage *ss, socklen_t *len)
{
	*len = sizeof(*ss);
	if (p->fd < 0 || getpeername(p->fd, (struct sockaddr *)ss, len))
		return -ENOTCONN;
	peeraddr_normalize(ss, len);
	return 0;
}

struct peer *peer_outgoing(struct peer_ctx *pc, size_t i)
{
	return i < pc->n_out ? &pc->out[i] : NULL;
}

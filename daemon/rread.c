// SPDX-License-Identifier: MIT
/* Remote READ control (see rread.h): the channel's operations, the
 * requester's registrations and grants, the responder's shares.
 * May call: peer (requests, handlers, events), splitq (the daemon of a
 * GID), rreadtab, rreadmsg, flows, log. */
#include "rread.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "justitiad.h"
#include "log.h"
#include "peer.h"
#include "splitq.h"

/* A request of ours in flight: what it was about. */
struct rread_call {
	struct rread *rr;
	uint64_t serial;              /* the connection it went on */
	uint32_t flow;                /* remote_open: the flow */
	struct rread_open o;          /* remote_open: what it said */
};

static struct peer *peer_by_serial(struct rread *rr, uint64_t serial)
{
	struct peer_ctx *pc = rr->d->peer;

	if (!pc || !serial)
		return NULL;
	for (size_t i = 0; i < pc->n_out; i++) {
		struct peer *p = peer_outgoing(pc, i);

		if (p && p->serial == serial && p->state == PEER_UP)
			return p;
	}
	for (struct peer *p = pc->in; p; p = p->next)
		if (p->serial == serial && p->state == PEER_UP)
			return p;
	return NULL;
}

/* ------------------------------------------------------------ responder */

static void serve_table(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq,
			json_t *args, void *arg, const char *op)
{
	struct rread *rr = arg;
	const char *code;
	json_t *result;
	char msg[200];

	if (!strcmp(op, RREAD_OP_OPEN))
		rr->rx.open++;
	else
		rr->rx.close++;
	if (rreadtab_serve(&rr->tab, p->serial, p, p->name, op, args, clock_now_ns(), &result,
			   &code, msg, sizeof(msg))) {
		if (!strcmp(code, "limit"))
			log_warnx("remote READ flow of %s refused: %s", p->name, msg);
		else
			log_info("remote READ request of %s refused: %s", p->name, msg);
		peer_reply_error(pc, rq, code, "%s", msg);
		return;
	}
	peer_reply(pc, rq, result);
}

static void serve_open(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq,
		       json_t *args, void *arg)
{
	serve_table(pc, p, rq, args, arg, RREAD_OP_OPEN);
}

static void serve_close(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq,
			json_t *args, void *arg)
{
	serve_table(pc, p, rq, args, arg, RREAD_OP_CLOSE);
}

size_t rread_count(const struct rread *rr)
{
	return rr ? rr->tab.total : 0;
}

size_t rread_fill(struct rread *rr, struct tokens_flow *tf, struct aimd_flow *af, uint32_t app0)
{
	return rr ? rreadtab_fill(&rr->tab, tf, af, app0) : 0;
}

size_t rread_fill_recv(struct rread *rr, struct aimd_flow *af, uint32_t app0)
{
	return rr ? rreadtab_fill_recv(&rr->tab, af, app0) : 0;
}

void rread_set_recv(struct rread *rr, uint64_t safe_util_bps, uint64_t max_rate_bps)
{
	if (rr)
		rreadtab_recv_shares(&rr->tab, safe_util_bps, max_rate_bps);
}

static void grants_replied(struct peer_ctx *pc, struct peer *p, json_t *result,
			   const char *code, const char *msg, void *arg)
{
	struct rread_call *call = arg;
	struct rread_conn *c = rreadtab_conn(&call->rr->tab, call->serial);

	if (c && c->inflight)
		c->inflight--;
	if (!result && c)
		log_debug(LOG_SS_FLOW, "remote_grants to %s: %s", c->name, msg ? msg : code);
	free(call);
}

/* One kind's grants of @c, batched; false if @c went away or is busy. */
static bool send_kind(struct rread *rr, struct rread_conn *c, uint8_t kind)
{
	struct rread_grant g[RREAD_GRANTS_MAX];
	uint64_t serial = c->serial;
	size_t from = 0;

	while (from < c->n) {
		size_t k = rreadtab_grants(c, kind, &from, g);
		struct rread_call *call;
		int rc;

		if (!k)
			break;
		call = calloc(1, sizeof(*call));
		if (!call)
			return false;
		call->rr = rr;
		call->serial = serial;
		c->inflight++; /* (a connection that fails at once answers now) */
		rc = peer_request(c->peer, RREAD_OP_GRANTS, rreadmsg_grants(kind, g, k),
				  grants_replied, call, RREAD_TIMEOUT_MS);
		/* ... and may have taken its flows with it */
		c = rreadtab_conn(&rr->tab, serial);
		if (rc) {
			free(call);
			if (c && c->inflight)
				c->inflight--;
			return false; /* busy: the next step tries again */
		}
		rr->tx.grants++;
		rr->tab.grants_sent++;
		if (!c)
			return false;
	}
	return true;
}

static void send_grants(struct rread *rr, struct rread_conn *c, uint64_t now)
{
	uint64_t serial = c->serial;

	if (!send_kind(rr, c, RREAD_READ))
		return;
	c = rreadtab_conn(&rr->tab, serial);
	if (c && send_kind(rr, c, RREAD_RECV) && (c = rreadtab_conn(&rr->tab, serial)))
		rreadtab_sent(c, now);
}

void rread_set_chunk(struct rread *rr, uint32_t chunk)
{
	if (rr)
		rreadtab_set_chunk(&rr->tab, chunk);
}

void rread_after_step(struct rread *rr, const struct tokens_flow *tf, size_t n, uint64_t now,
		      uint64_t period_ns)
{
	uint64_t min_ns = period_ns > RREAD_GRANT_MIN_NS ? period_ns : RREAD_GRANT_MIN_NS;

	if (!rr || !rr->tab.total)
		return;
	rreadtab_set_rates(&rr->tab, tf, n);
	for (size_t i = 0; i < rr->tab.n_conns; i++)
		if (rreadtab_due(rr->tab.conns[i], now, min_ns))
			send_grants(rr, rr->tab.conns[i], now);
}

/* ------------------------------------------------------------ requester */

static void set_state(struct rread *rr, struct flow *f, int state, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set_state(struct rread *rr, struct flow *f, int state, const char *fmt, ...)
{
	int was = f->remote.state;
	va_list ap;

	if (state != FLOW_REMOTE_REGISTERED) {
		if (f->remote.grant_bps || f->remote.grant_ops || f->remote.chunk) {
			f->remote.grant_bps = f->remote.grant_ops = 0;
			f->remote.chunk = 0;
			flows_publish(&rr->d->flows, f);
			rr->kick = true;
		}
		f->remote.serial = 0;
	}
	f->remote.state = state;
	f->remote.why[0] = 0;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(f->remote.why, sizeof(f->remote.why), fmt, ap);
		va_end(ap);
		/* (it may quote a peer's error message: untrusted text) */
		for (char *c = f->remote.why; *c; c++)
			if (*c < 0x20 || *c > 0x7e)
				*c = '?';
	}
	if (state == was)
		return;
	if (state == FLOW_REMOTE_REGISTERED)
		log_info("flow %u (pid %d): %s registered with %s", f->id, (int)f->proc->pid,
			 f->remote.sent.kind == RREAD_RECV ? "receiver-side view" : "remote READ",
			 f->remote.peer);
	else if (state == FLOW_REMOTE_UNMANAGED)
		log_info("flow %u (pid %d): %s", f->id, (int)f->proc->pid, f->remote.why);
}

static void ignore_reply(struct peer_ctx *pc, struct peer *p, json_t *result, const char *code,
			 const char *msg, void *arg)
{
}

static void open_replied(struct peer_ctx *pc, struct peer *p, json_t *result, const char *code,
			 const char *msg, void *arg)
{
	struct rread_call *call = arg;
	struct rread *rr = call->rr;
	struct flow *f = flows_find(&rr->d->flows, call->flow);
	uint64_t now = clock_now_ns();

	if (!f || !f->remote.busy) {
		/* gone meanwhile: the responder must not keep it */
		struct peer *up = peer_by_serial(rr, call->serial);

		if (result && up && !peer_request(up, RREAD_OP_CLOSE,
						  rreadmsg_close(call->o.kind, call->flow),
						  ignore_reply, NULL, RREAD_TIMEOUT_MS))
			rr->tx.close++;
		free(call);
		return;
	}
	f->remote.busy = false;
	if (result) {
		/* a class that changed: the other unit's grant says nothing now */
		if (call->o.cls != FLOW_CLASS_BANDWIDTH)
			f->remote.grant_bps = 0;
		if (call->o.cls != FLOW_CLASS_THROUGHPUT)
			f->remote.grant_ops = 0;
		f->remote.serial = call->serial;
		f->remote.sent = call->o;
		if (f->remote.state != FLOW_REMOTE_REGISTERED)
			set_state(rr, f, FLOW_REMOTE_REGISTERED, NULL);
	} else if (code && (!strcmp(code, "unknown_op") ||
			    (call->o.kind == RREAD_RECV && !strcmp(code, "bad_request") && msg &&
			     strstr(msg, "kind")) ||
			    (call->o.cls == FLOW_CLASS_THROUGHPUT && !strcmp(code, "bad_request") &&
			     msg && strstr(msg, "class")))) {
		/* (a daemon of item 2 knows the operations, not the kind; one
		 * before throughput READs, not the class) */
		f->remote.retry_ns = now + RREAD_OLD_PEER_NS;
		bool recv = call->o.kind == RREAD_RECV;

		set_state(rr, f, FLOW_REMOTE_UNMANAGED,
			  "remote: %s not managed (its justitiad has no %s)",
			  recv ? "receiver" : "responder",
			  recv ? "receiver-side views"
			  : !strcmp(code, "unknown_op") ? "remote READ control"
			  : "throughput READ control");
	} else if (code && (!strcmp(code, "closed") || !strcmp(code, "timeout"))) {
		set_state(rr, f, FLOW_REMOTE_UNMANAGED, "remote: responder not managed (%s)", code);
	} else {
		f->remote.retry_ns = now + RREAD_RETRY_NS;
		set_state(rr, f, FLOW_REMOTE_REFUSED, "remote: the responder's justitiad refused: %.80s",
			  msg ? msg : code ? code : "?");
		log_warnx("flow %u (pid %d): %s", f->id, (int)f->proc->pid, f->remote.why);
	}
	free(call);
}

static void close_remote(struct rread *rr, struct flow *f)
{
	struct peer *p = f->remote.state == FLOW_REMOTE_REGISTERED
				 ? peer_by_serial(rr, f->remote.serial) : NULL;

	if (p && !peer_request(p, RREAD_OP_CLOSE, rreadmsg_close(f->remote.sent.kind, f->id),
			       ignore_reply, NULL, RREAD_TIMEOUT_MS))
		rr->tx.close++;
}

static void flow_gone(void *arg, struct flow *f)
{
	struct rread *rr = arg;

	if (f->remote.state == FLOW_REMOTE_REGISTERED || f->remote.busy)
		close_remote(rr, f);
	/* (a registration in flight finds no flow and closes it: open_replied) */
}

static bool same_open(const struct rread_open *a, const struct rread_open *b)
{
	return a->kind == b->kind && a->flow == b->flow && a->cls == b->cls && a->qpn == b->qpn &&
	       a->peer_qpn == b->peer_qpn && a->weight == b->weight && a->active == b->active;
}

static void send_open(struct rread *rr, struct flow *f, struct peer *p,
		      const struct rread_open *o)
{
	struct rread_call *call = calloc(1, sizeof(*call));
	bool was_busy = f->remote.busy;
	uint32_t id = f->id;

	if (!call)
		return;
	*call = (struct rread_call){ .rr = rr, .serial = p->serial, .flow = f->id, .o = *o };
	snprintf(f->remote.peer, sizeof(f->remote.peer), "%s", p->name);
	snprintf(f->remote.gid, sizeof(f->remote.gid), "%s", f->peer_gid);
	if (f->remote.state != FLOW_REMOTE_REGISTERED)
		set_state(rr, f, FLOW_REMOTE_PENDING, NULL);
	/* busy first: a connection that fails at once answers "closed" now */
	f->remote.busy = true;
	if (peer_request(p, RREAD_OP_OPEN, rreadmsg_open(o), open_replied, call,
			 RREAD_TIMEOUT_MS)) {
		free(call);
		if (flows_find(&rr->d->flows, id) == f)
			f->remote.busy = was_busy;
		return;
	}
	rr->tx.open++;
}

/* Which kind of remote flow @f is: a bandwidth or throughput flow that
 * READs is served by its peer's NIC (read); a bandwidth flow that
 * WRITEs/SENDs, and any latency flow, arrive at its peer (recv); -1:
 * neither. */
static int flow_kind(const struct flow *f)
{
	if (f->peer_qpn < 0 || f->peer_qpn > 0xffffff || !f->peer_gid[0])
		return -1;
	if (f->cls == FLOW_CLASS_BANDWIDTH)
		return f->reads ? RREAD_READ : RREAD_RECV;
	/* a throughput flow that READs costs its peer's NIC ops; its small
	 * WRITEs/SENDs, little of the receiver's bandwidth (not registered) */
	if (f->cls == FLOW_CLASS_THROUGHPUT)
		return f->reads ? RREAD_READ : -1;
	return f->cls == FLOW_CLASS_LATENCY ? RREAD_RECV : -1;
}

static void sync_flow(struct rread *rr, struct flow *f, uint64_t now)
{
	int kind = flow_kind(f);
	struct rread_open o;
	struct peer *p;

	if (kind < 0) {
		if (f->remote.state != FLOW_REMOTE_NONE && !f->remote.busy) {
			close_remote(rr, f);
			set_state(rr, f, FLOW_REMOTE_NONE, NULL);
		}
		return;
	}
	if (f->remote.busy)
		return;
	if (f->remote.state != FLOW_REMOTE_REGISTERED)
		f->remote.sent.kind = (uint8_t)kind; /* (what status shows meanwhile) */
	o = (struct rread_open){ .kind = (uint8_t)kind, .flow = f->id, .cls = (uint8_t)f->cls,
				 .qpn = f->qpn,
				 .peer_qpn = (uint32_t)f->peer_qpn,
				 .weight = f->weight ? f->weight : 1, .active = f->active };
	if (f->remote.state == FLOW_REMOTE_REGISTERED) {
		p = peer_by_serial(rr, f->remote.serial);
		if (p && strcmp(f->peer_gid, f->remote.gid)) {
			/* connected to another host now: register there instead */
			close_remote(rr, f);
			set_state(rr, f, FLOW_REMOTE_NONE, NULL);
			return;
		}
		if (!p)
			set_state(rr, f, FLOW_REMOTE_UNMANAGED,
				  "remote: responder not managed (connection closed)");
		else if (!same_open(&o, &f->remote.sent))
			send_open(rr, f, p, &o); /* an update: weight, activity */
		return;
	}
	if (now < f->remote.retry_ns)
		return;
	/* a bandwidth flow says it READs after its first READ: registered
	 * once it has moved data, it registers as what it is */
	if (kind == RREAD_RECV && f->cls == FLOW_CLASS_BANDWIDTH && !f->active &&
	    f->remote.state == FLOW_REMOTE_NONE)
		return;
	p = rr->d->peer ? splitq_peer_for_gid(rr->d, f->peer_gid) : NULL;
	if (!p && kind == RREAD_RECV) {
		/* most WRITE/SEND flows go to hosts without a daemon we peer
		 * with: nothing to say about them */
		if (f->remote.state != FLOW_REMOTE_NONE)
			set_state(rr, f, FLOW_REMOTE_NONE, NULL);
	} else if (!p)
		set_state(rr, f, FLOW_REMOTE_UNMANAGED,
			  "remote: responder not managed (no Justitia peer for %.48s)", f->peer_gid);
	else if (p->state != PEER_UP)
		set_state(rr, f, FLOW_REMOTE_UNMANAGED,
			  "remote: responder not managed (its justitiad %.40s is not reachable)",
			  p->name);
	else
		send_open(rr, f, p, &o);
}

bool rread_sync(struct rread *rr, uint64_t now)
{
	bool kick;

	if (!rr)
		return false;
	if (!rr->last_sync_ns || now - rr->last_sync_ns >= RREAD_SYNC_NS) {
		rr->last_sync_ns = now;
		for (struct proc *p = rr->d->flows.procs; p; p = p->next)
			for (struct flow *f = p->flows; f; f = f->next)
				sync_flow(rr, f, now);
	}
	kick = rr->kick;
	rr->kick = false;
	return kick;
}

static uint64_t lower(uint64_t local, uint64_t remote)
{
	if (!remote)
		return local;
	return local && local < remote ? local : remote;
}

uint64_t rread_cap(const struct flow *f, uint64_t local_bps)
{
	return lower(local_bps, f->remote.state == FLOW_REMOTE_REGISTERED &&
					f->cls == FLOW_CLASS_BANDWIDTH ? f->remote.grant_bps : 0);
}

uint64_t rread_cap_ops(const struct flow *f, uint64_t local_ops)
{
	return lower(local_ops, f->remote.state == FLOW_REMOTE_REGISTERED &&
					f->cls == FLOW_CLASS_THROUGHPUT ? f->remote.grant_ops : 0);
}

/* The responder's shares of our flows registered on this connection. */
static void serve_grants(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq,
			 json_t *args, void *arg)
{
	struct rread *rr = arg;
	struct rread_grant g[RREAD_GRANTS_MAX];
	size_t n, ignored = 0;
	uint64_t *have;
	uint8_t kind;
	char err[160];
	bool ops;

	rr->rx.grants++;
	if (rreadmsg_parse_grants(args, &kind, g, &n, err, sizeof(err))) {
		peer_reply_error(pc, rq, "bad_request", "%s: %s", RREAD_OP_GRANTS, err);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct flow *f = flows_find(&rr->d->flows, g[i].flow);

		/* only flows we registered on this very connection, as that
		 * kind: a peer limits nothing else */
		if (!f || f->remote.state != FLOW_REMOTE_REGISTERED ||
		    f->remote.serial != p->serial || f->remote.sent.kind != kind) {
			ignored++;
			continue;
		}
		/* ... in the unit of the class registered (ops/s: throughput) */
		ops = f->remote.sent.cls == FLOW_CLASS_THROUGHPUT;
		if (g[i].ops != ops) {
			ignored++;
			continue;
		}
		have = ops ? &f->remote.grant_ops : &f->remote.grant_bps;
		if (!*have != !g[i].rate_bps || f->remote.chunk != g[i].chunk) {
			*have = g[i].rate_bps;
			f->remote.chunk = g[i].chunk;
			/* paced (or not) whatever the mode, split at the
			 * smaller chunk */
			flows_publish(&rr->d->flows, f);
			rr->kick = true;
		}
		*have = g[i].rate_bps;
	}
	rr->rx.grants_applied += n - ignored;
	rr->rx.grants_ignored += ignored;
	peer_reply(pc, rq, json_pack("{s:I}", "ignored", (json_int_t)ignored));
}

/* ------------------------------------------------------------ both */

static void on_conn(struct peer_ctx *pc, struct peer *p, bool up, void *arg)
{
	struct rread *rr = arg;
	size_t n;

	if (up) {
		/* a daemon that is back: register with it at the next sync */
		for (struct proc *q = rr->d->flows.procs; q; q = q->next)
			for (struct flow *f = q->flows; f; f = f->next)
				if (f->remote.state == FLOW_REMOTE_UNMANAGED)
					f->remote.retry_ns = 0;
		rr->last_sync_ns = 0;
		return;
	}
	n = rreadtab_drop(&rr->tab, p->serial);
	if (n)
		log_info("%zu remote READ flows of %s dropped: the connection closed", n, p->name);
	for (struct proc *q = rr->d->flows.procs; q; q = q->next)
		for (struct flow *f = q->flows; f; f = f->next)
			if (f->remote.state == FLOW_REMOTE_REGISTERED && f->remote.serial == p->serial)
				set_state(rr, f, FLOW_REMOTE_UNMANAGED,
					  "remote: responder not managed (connection to %.40s closed)",
					  p->name);
}

int rread_init(struct rread *rr, struct daemon *d)
{
	memset(rr, 0, sizeof(*rr));
	rr->d = d;
	d->flows.on_free = flow_gone;
	d->flows.on_free_arg = rr;
	if (!d->peer)
		return 0;
	if (peer_handle(d->peer, RREAD_OP_OPEN, serve_open, rr) ||
	    peer_handle(d->peer, RREAD_OP_CLOSE, serve_close, rr) ||
	    peer_handle(d->peer, RREAD_OP_GRANTS, serve_grants, rr) ||
	    peer_listen_events(d->peer, on_conn, rr)) {
		log_warnx("remote READ control: the channel has no room for its operations");
		return -ENOSPC;
	}
	return 0;
}

void rread_fini(struct rread *rr)
{
	if (rr->d && rr->d->flows.on_free == flow_gone) {
		rr->d->flows.on_free = NULL;
		rr->d->flows.on_free_arg = NULL;
	}
	rreadtab_fini(&rr->tab);
}

json_t *rread_status(struct rread *rr, uint64_t now)
{
	size_t reg = 0, unm = 0, pend = 0, ref = 0;

	for (struct proc *p = rr->d->flows.procs; p; p = p->next)
		for (struct flow *f = p->flows; f; f = f->next)
			switch (f->remote.state) {
			case FLOW_REMOTE_REGISTERED: reg++; break;
			case FLOW_REMOTE_UNMANAGED: unm++; break;
			case FLOW_REMOTE_PENDING: pend++; break;
			case FLOW_REMOTE_REFUSED: ref++; break;
			default: break;
			}
	return json_pack("{s:o, s:{s:I, s:I, s:I, s:I}, s:{s:{s:I, s:I, s:I}, s:{s:I, s:I, s:I, "
			 "s:I, s:I}}}",
			 "served", rreadtab_json(&rr->tab, now),
			 "requested", "registered", (json_int_t)reg, "pending", (json_int_t)pend,
			 "unmanaged", (json_int_t)unm, "refused", (json_int_t)ref,
			 "messages", "sent", "open", (json_int_t)rr->tx.open, "close",
			 (json_int_t)rr->tx.close, "grants", (json_int_t)rr->tx.grants,
			 "received", "open", (json_int_t)rr->rx.open, "close", (json_int_t)rr->rx.close,
			 "grants", (json_int_t)rr->rx.grants, "grants_applied",
			 (json_int_t)rr->rx.grants_applied, "grants_ignored",
			 (json_int_t)rr->rx.grants_ignored);
}

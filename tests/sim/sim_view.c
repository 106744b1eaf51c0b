// SPDX-License-Identifier: MIT
/* The daemons' peer channel in the model (see sim_view.h). */
#include "sim_view.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/config.h"
#include "daemon/rread.h"
#include "sim_util.h"

enum msg_type { MSG_OPEN, MSG_OPEN_REPLY, MSG_GRANTS, MSG_GRANTS_REPLY };

struct sim_view_msg {
	struct sim_view_msg *next;   /* every message, for sim_view_free */
	struct sim_view *v;
	enum msg_type type;
	unsigned from, to;           /* hosts */
	int rc;                      /* MSG_OPEN_REPLY: rreadtab_open's */
	struct rread_open o;         /* MSG_OPEN(_REPLY) */
	uint8_t kind;                /* MSG_GRANTS */
	size_t n;
	struct rread_grant g[RREAD_GRANTS_MAX];
};

struct sim_view *sim_view_new(struct sim_evq *q, unsigned hosts, struct sim_flow **fl,
			      uint32_t n, uint64_t delay_ns, uint64_t sync_ns, unsigned kinds)
{
	struct sim_view *v = sim_zalloc(sizeof(*v));

	v->q = q;
	v->hosts = hosts;
	v->fl = fl;
	v->n = n;
	v->delay_ns = delay_ns;
	v->kinds = kinds ? kinds : SIM_VIEW_BOTH;
	v->sync_ns = sync_ns ? sync_ns : RREAD_SYNC_NS;
	v->tab = sim_zalloc(hosts * sizeof(*v->tab));
	v->last_sync = sim_zalloc(hosts * sizeof(*v->last_sync));
	v->kick = sim_zalloc(hosts * sizeof(*v->kick));
	return v;
}

void sim_view_free(struct sim_view *v)
{
	if (!v)
		return;
	while (v->msgs) {
		struct sim_view_msg *m = v->msgs;

		v->msgs = m->next;
		free(m);
	}
	for (unsigned h = 0; h < v->hosts; h++)
		rreadtab_fini(&v->tab[h]);
	free(v->tab);
	free(v->last_sync);
	free(v->kick);
	free(v);
}

static void deliver(void *arg, uint64_t u);

/* Send @m from m->from to m->to: it arrives delay_ns later. */
static void send_msg(struct sim_view *v, struct sim_view_msg *m)
{
	m->v = v;
	m->next = v->msgs;
	v->msgs = m;
	sim_evq_after(v->q, v->delay_ns, deliver, m, 0);
}

static struct sim_view_msg *reply_to(const struct sim_view_msg *rq, enum msg_type type)
{
	struct sim_view_msg *m = sim_zalloc(sizeof(*m));

	m->type = type;
	m->from = rq->to;
	m->to = rq->from;
	return m;
}

/* Responder: a requester's registration (rread.c serve_open). */
static void on_open(struct sim_view *v, struct sim_view_msg *m)
{
	struct sim_view_msg *r = reply_to(m, MSG_OPEN_REPLY);
	char name[32], why[160];

	snprintf(name, sizeof(name), "host%u", m->from);
	r->rc = rreadtab_open(&v->tab[m->to], m->from + 1, NULL, name, &m->o, v->q->now, why,
			      sizeof(why));
	r->o = m->o;
	send_msg(v, r);
}

/* Requester: the answer to remote_open (rread.c open_replied). */
static void on_open_reply(struct sim_view *v, struct sim_view_msg *m)
{
	struct sim_flow *f = v->fl[m->o.flow - 1];

	f->remote.busy = false;
	if (m->rc < 0)
		return; /* refused: asked again at the next sync */
	f->remote.registered = true;
	f->remote.kind = m->o.kind;
	f->remote.weight = m->o.weight;
	f->remote.active = m->o.active;
}

/* Requester: a responder's shares of our flows (rread.c serve_grants):
 * only flows registered with that host, as that kind. */
static void on_grants(struct sim_view *v, struct sim_view_msg *m)
{
	for (size_t i = 0; i < m->n; i++) {
		uint32_t id = m->g[i].flow;
		struct sim_flow *f = id && id <= v->n ? v->fl[id - 1] : NULL;

		if (!f || !f->remote.registered || f->c.src != m->to || f->c.dst != m->from ||
		    f->remote.kind != m->kind) {
			v->ignored++;
			continue;
		}
		if (!f->remote.grant_bps != !m->g[i].rate_bps || f->remote.chunk != m->g[i].chunk)
			v->kick[m->to] = true;
		f->remote.grant_bps = m->g[i].rate_bps;
		f->remote.chunk = m->g[i].chunk;
		v->applied++;
	}
	send_msg(v, reply_to(m, MSG_GRANTS_REPLY));
}

static void deliver(void *arg, uint64_t u)
{
	struct sim_view_msg *m = arg;
	struct sim_view *v = m->v;
	struct rread_conn *c;

	(void)u;
	switch (m->type) {
	case MSG_OPEN:
		on_open(v, m);
		break;
	case MSG_OPEN_REPLY:
		on_open_reply(v, m);
		break;
	case MSG_GRANTS:
		on_grants(v, m);
		break;
	case MSG_GRANTS_REPLY:
		/* rread.c grants_replied */
		c = rreadtab_conn(&v->tab[m->from], m->to + 1);
		if (c && c->inflight)
			c->inflight--;
		break;
	}
}

/* ------------------------------------------------- requester */

/* rread.c flow_kind: a bandwidth flow that posted READs is "read", other
 * bandwidth flows and latency flows "recv"; throughput flows none. */
static int flow_kind(const struct sim_flow *f)
{
	if (f->c.kind == SIM_FLOW_BW)
		return f->c.opcode == IBV_WR_RDMA_READ && f->started ? RREAD_READ : RREAD_RECV;
	return f->c.kind == SIM_FLOW_LAT ? RREAD_RECV : -1;
}

static uint8_t flow_cls(const struct sim_flow *f)
{
	return f->c.kind == SIM_FLOW_LAT ? FLOW_CLASS_LATENCY : FLOW_CLASS_BANDWIDTH;
}

/* rread.c sync_flow, every host running a daemon with the channel up. */
static void sync_flow(struct sim_view *v, struct sim_flow *f)
{
	int kind = flow_kind(f);
	bool active = sim_flow_active(f);
	uint32_t w = f->c.weight ? f->c.weight : 1;
	struct sim_view_msg *m;

	if (kind < 0 || f->remote.busy || !(v->kinds & (1u << kind)))
		return;
	if (f->remote.registered && f->remote.kind == kind && f->remote.weight == w &&
	    f->remote.active == active)
		return;
	/* a bandwidth flow registers once it moved data, as what it is */
	if (!f->remote.registered && kind == RREAD_RECV && f->c.kind == SIM_FLOW_BW && !active)
		return;
	m = sim_zalloc(sizeof(*m));
	m->type = MSG_OPEN;
	m->from = f->c.src;
	m->to = f->c.dst;
	m->o = (struct rread_open){ .kind = (uint8_t)kind, .flow = f->id + 1, .cls = flow_cls(f),
				    .qpn = f->qp->qp_num & 0xffffff,
				    .peer_qpn = f->peer_qp->qp_num & 0xffffff, .weight = w,
				    .active = active };
	f->remote.busy = true;
	v->opens++;
	send_msg(v, m);
}

bool sim_view_sync(struct sim_view *v, unsigned host, uint64_t now)
{
	bool kick;

	if (!v->last_sync[host] || now - v->last_sync[host] >= v->sync_ns) {
		v->last_sync[host] = now ? now : 1;
		for (uint32_t i = 0; i < v->n; i++)
			if (v->fl[i]->c.src == host)
				sync_flow(v, v->fl[i]);
	}
	kick = v->kick[host];
	v->kick[host] = false;
	return kick;
}

void sim_view_apply(const struct sim_flow *f, uint64_t *rate_bps, uint32_t *chunk,
		    uint32_t chunk_default)
{
	uint64_t r = f->remote.registered && f->c.kind == SIM_FLOW_BW ? f->remote.grant_bps : 0;

	if (r) {
		*rate_bps = *rate_bps && *rate_bps < r ? *rate_bps : r;
		/* paced whatever the mode here, at this side's chunk */
		if (!*chunk)
			*chunk = chunk_default;
	}
	if (*chunk && f->remote.registered && f->remote.chunk && f->remote.chunk < *chunk)
		*chunk = f->remote.chunk;
}

/* ------------------------------------------------- responder, receiver */

/* One kind's grants of @c, batched (rread.c send_kind). */
static void send_kind(struct sim_view *v, unsigned host, struct rread_conn *c, uint8_t kind)
{
	size_t from = 0;

	while (from < c->n) {
		struct sim_view_msg *m = sim_zalloc(sizeof(*m));

		m->n = rreadtab_grants(c, kind, &from, m->g);
		if (!m->n) {
			free(m);
			break;
		}
		m->type = MSG_GRANTS;
		m->kind = kind;
		m->from = host;
		m->to = (unsigned)(c->serial - 1);
		c->inflight++;
		v->grants++;
		v->tab[host].grants_sent++;
		send_msg(v, m);
	}
}

void sim_view_after_step(struct sim_view *v, unsigned host, const struct tokens_flow *tf,
			 size_t n_read, uint64_t now, uint64_t period_ns)
{
	struct rread_tab *t = &v->tab[host];
	uint64_t min_ns = period_ns > RREAD_GRANT_MIN_NS ? period_ns : RREAD_GRANT_MIN_NS;

	if (!t->total)
		return;
	rreadtab_set_rates(t, tf, n_read);
	for (size_t i = 0; i < t->n_conns; i++) {
		struct rread_conn *c = t->conns[i];

		if (!rreadtab_due(c, now, min_ns))
			continue;
		send_kind(v, host, c, RREAD_READ);
		send_kind(v, host, c, RREAD_RECV);
		rreadtab_sent(c, now);
	}
}

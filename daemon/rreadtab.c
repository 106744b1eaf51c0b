// SPDX-License-Identifier: MIT
/* The responder's remote READ flows (see rreadtab.h).
 * May call: rreadmsg, log (config.h for its enum only). */
#include "rreadtab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"

struct rread_conn *rreadtab_conn(struct rread_tab *t, uint64_t serial)
{
	for (size_t i = 0; i < t->n_conns; i++)
		if (t->conns[i]->serial == serial)
			return t->conns[i];
	return NULL;
}

static struct rread_entry *find(struct rread_conn *c, uint32_t flow)
{
	for (size_t i = 0; c && i < c->n; i++)
		if (c->e[i].o.flow == flow)
			return &c->e[i];
	return NULL;
}

/* @why says which limit: remember it, count the refusal. */
static int refused(struct rread_tab *t, const char *why)
{
	snprintf(t->last_refusal, sizeof(t->last_refusal), "%s", why);
	t->refused++;
	return -ENOSPC;
}

int rreadtab_open(struct rread_tab *t, uint64_t serial, void *peer, const char *name,
		  const struct rread_open *o, uint64_t now, char *why, size_t whylen)
{
	struct rread_conn *c = rreadtab_conn(t, serial);
	struct rread_entry *e = find(c, o->flow);

	if (e) {
		e->o = *o;
		return 1;
	}
	if (t->total >= RREAD_MAX_TOTAL)
		return snprintf(why, whylen, "at most %u remote flows in all", RREAD_MAX_TOTAL),
		       refused(t, why);
	if (c && c->n >= RREAD_MAX_PER_CONN)
		return snprintf(why, whylen, "at most %u remote flows per connection",
				RREAD_MAX_PER_CONN), refused(t, why);
	if (!c) {
		if (t->n_conns >= RREAD_MAX_CONNS)
			return snprintf(why, whylen, "remote flows from at most %u connections",
					RREAD_MAX_CONNS), refused(t, why);
		c = calloc(1, sizeof(*c));
		if (!c) {
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		c->serial = serial;
		c->peer = peer;
		snprintf(c->name, sizeof(c->name), "%s", name ? name : "?");
		t->conns[t->n_conns++] = c;
	}
	c->e[c->n++] = (struct rread_entry){ .o = *o, .since_ns = now };
	t->total++;
	t->opened++;
	return 0;
}

static void free_conn(struct rread_tab *t, size_t i)
{
	free(t->conns[i]);
	t->conns[i] = t->conns[--t->n_conns];
	t->conns[t->n_conns] = NULL;
}

int rreadtab_close(struct rread_tab *t, uint64_t serial, uint8_t kind, uint32_t flow)
{
	struct rread_conn *c = rreadtab_conn(t, serial);
	struct rread_entry *e = find(c, flow);

	if (!e || e->o.kind != kind)
		return -ENOENT;
	*e = c->e[--c->n];
	t->total--;
	t->closed++;
	if (!c->n)
		for (size_t i = 0; i < t->n_conns; i++)
			if (t->conns[i] == c) {
				free_conn(t, i);
				break;
			}
	return 0;
}

size_t rreadtab_drop(struct rread_tab *t, uint64_t serial)
{
	for (size_t i = 0; i < t->n_conns; i++) {
		size_t n = t->conns[i]->n;

		if (t->conns[i]->serial != serial)
			continue;
		t->total -= n;
		t->dropped += n;
		free_conn(t, i);
		return n;
	}
	return 0;
}

void rreadtab_fini(struct rread_tab *t)
{
	while (t->n_conns)
		free_conn(t, 0);
	t->total = 0;
}

size_t rreadtab_fill(const struct rread_tab *t, struct tokens_flow *tf, struct aimd_flow *af,
		     uint32_t app0)
{
	size_t k = 0;

	for (size_t i = 0; i < t->n_conns; i++)
		for (size_t j = 0; j < t->conns[i]->n; j++) {
			const struct rread_open *o = &t->conns[i]->e[j].o;

			if (o->kind != RREAD_READ)
				continue;
			tf[k] = (struct tokens_flow){ .weight = o->weight, .app = app0 + (uint32_t)k,
						      .cls = o->cls, .active = o->active };
			af[k] = (struct aimd_flow){ .app = app0 + (uint32_t)k, .cls = o->cls,
						    .active = o->active };
			k++;
		}
	return k;
}

void rreadtab_set_rates(struct rread_tab *t, const struct tokens_flow *tf, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < t->n_conns; i++)
		for (size_t j = 0; j < t->conns[i]->n && k < n; j++) {
			struct rread_entry *e = &t->conns[i]->e[j];

			if (e->o.kind != RREAD_READ)
				continue;
			/* a throughput flow's share is ops/s, as a local one's */
			e->rate_bps = e->o.cls == FLOW_CLASS_THROUGHPUT ? tf[k].ops_per_s
									: tf[k].rate_bps;
			k++;
		}
}

void rreadtab_set_chunk(struct rread_tab *t, uint32_t chunk)
{
	for (size_t i = 0; i < t->n_conns; i++)
		for (size_t j = 0; j < t->conns[i]->n; j++)
			/* (a throughput flow is not split: no say) */
			t->conns[i]->e[j].chunk =
				t->conns[i]->e[j].o.cls == FLOW_CLASS_THROUGHPUT ? 0 : chunk;
}

size_t rreadtab_fill_recv(const struct rread_tab *t, struct aimd_flow *af, uint32_t app0)
{
	size_t k = 0;

	for (size_t i = 0; i < t->n_conns; i++)
		for (size_t j = 0; j < t->conns[i]->n; j++) {
			const struct rread_open *o = &t->conns[i]->e[j].o;

			if (o->kind != RREAD_RECV)
				continue;
			af[k] = (struct aimd_flow){ .app = app0 + (uint32_t)k, .cls = o->cls,
						    .active = o->active };
			k++;
		}
	return k;
}

void rreadtab_recv_count(const struct rread_tab *t, size_t *lat, size_t *bw)
{
	*lat = *bw = 0;
	for (size_t i = 0; i < t->n_conns; i++)
		for (size_t j = 0; j < t->conns[i]->n; j++) {
			const struct rread_open *o = &t->conns[i]->e[j].o;

			if (o->kind == RREAD_RECV && o->cls == FLOW_CLASS_LATENCY)
				(*lat)++;
			else if (o->kind == RREAD_RECV)
				(*bw)++;
		}
}

void rreadtab_recv_shares(struct rread_tab *t, uint64_t safe_util_bps, uint64_t max_rate_bps)
{
	uint64_t cap, w_active = 0;
	size_t lat, bw, n_active = 0;

	rreadtab_recv_count(t, &lat, &bw);
	cap = lat ? safe_util_bps : max_rate_bps;
	if (cap > max_rate_bps)
		cap = max_rate_bps;
	for (size_t i = 0; i < t->n_conns; i++)
		for (size_t j = 0; j < t->conns[i]->n; j++) {
			const struct rread_open *o = &t->conns[i]->e[j].o;

			if (o->kind == RREAD_RECV && o->cls == FLOW_CLASS_BANDWIDTH && o->active) {
				w_active += o->weight;
				n_active++;
			}
		}
	/* no latency flow arrives and at most one flow is receiving: nothing
	 * competes on this side, which then limits nothing */
	if (!lat && n_active <= 1)
		max_rate_bps = 0;
	for (size_t i = 0; i < t->n_conns; i++)
		for (size_t j = 0; j < t->conns[i]->n; j++) {
			struct rread_entry *e = &t->conns[i]->e[j];
			uint64_t w = e->o.weight, W = w_active + (e->o.active ? 0 : w), r;

			if (e->o.kind != RREAD_RECV)
				continue;
			if (e->o.cls != FLOW_CLASS_BANDWIDTH || !max_rate_bps || !W) {
				e->rate_bps = 0;
				continue;
			}
			r = cap / W * w + cap % W * w / W; /* (no overflow: w <= 1000) */
			e->rate_bps = r < AIMD_MIN_BPS ? AIMD_MIN_BPS : r;
		}
}

static bool changed(const struct rread_entry *e)
{
	uint64_t a = e->rate_bps, b = e->sent_bps, d = a > b ? a - b : b - a;

	if (!e->sent || e->chunk != e->sent_chunk)
		return true;
	if (!a != !b)
		return true;
	return d > b / RREAD_CHANGE;
}

bool rreadtab_due(const struct rread_conn *c, uint64_t now, uint64_t min_ns)
{
	if (c->inflight || (c->last_sent_ns && now - c->last_sent_ns < min_ns))
		return false;
	for (size_t j = 0; j < c->n; j++)
		if (changed(&c->e[j]))
			return true;
	return false;
}

size_t rreadtab_grants(const struct rread_conn *c, uint8_t kind, size_t *from,
		       struct rread_grant *g)
{
	size_t k = 0, j;

	for (j = *from; j < c->n && k < RREAD_GRANTS_MAX; j++) {
		const struct rread_entry *e = &c->e[j];

		if (e->o.kind == kind)
			g[k++] = (struct rread_grant){ .flow = e->o.flow, .rate_bps = e->rate_bps,
						       .chunk = e->chunk,
						       .ops = e->o.cls == FLOW_CLASS_THROUGHPUT };
	}
	*from = j;
	return k;
}

void rreadtab_sent(struct rread_conn *c, uint64_t now)
{
	for (size_t j = 0; j < c->n; j++) {
		c->e[j].sent_bps = c->e[j].rate_bps;
		c->e[j].sent_chunk = c->e[j].chunk;
		c->e[j].sent = true;
	}
	c->last_sent_ns = now;
}

int rreadtab_serve(struct rread_tab *t, uint64_t serial, void *peer, const char *name,
		   const char *op, json_t *args, uint64_t now, json_t **result, const char **code,
		   char *msg, size_t msglen)
{
	char err[160];
	int rc;

	*result = NULL;
	*code = "bad_request";
	if (!strcmp(op, RREAD_OP_OPEN)) {
		struct rread_open o;

		if (rreadmsg_parse_open(args, &o, err, sizeof(err))) {
			snprintf(msg, msglen, "%s: %s", op, err);
			return -EINVAL;
		}
		rc = rreadtab_open(t, serial, peer, name, &o, now, err, sizeof(err));
		if (rc < 0) {
			*code = rc == -ENOSPC ? "limit" : "internal";
			snprintf(msg, msglen, "%s: %s", op, err);
			return rc;
		}
		if (!rc && o.kind == RREAD_READ)
			log_info("remote READ flow %u (%s) from %s registered "
				 "(QP %u -> our QP %u, weight %u)", o.flow,
				 rreadmsg_class_name(o.cls), name, o.qpn, o.peer_qpn, o.weight);
		else if (!rc)
			log_info("incoming %s flow %u from %s registered "
				 "(QP %u -> our QP %u, weight %u)", rreadmsg_class_name(o.cls),
				 o.flow, name, o.qpn, o.peer_qpn, o.weight);
	} else if (!strcmp(op, RREAD_OP_CLOSE)) {
		uint32_t flow;
		uint8_t kind;

		if (rreadmsg_parse_close(args, &kind, &flow, err, sizeof(err))) {
			snprintf(msg, msglen, "%s: %s", op, err);
			return -EINVAL;
		}
		if (rreadtab_close(t, serial, kind, flow)) {
			*code = "not_found";
			snprintf(msg, msglen, "%s: no remote %s flow %u of this connection", op,
				 rreadmsg_kind_name(kind), flow);
			return -ENOENT;
		}
		log_info("%s flow %u from %s closed",
			 kind == RREAD_READ ? "remote READ" : "incoming", flow, name);
	} else {
		snprintf(msg, msglen, "%s: not an operation of remote flow control", op);
		return -EINVAL;
	}
	*result = json_object();
	if (!*result) {
		*code = "internal";
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

json_t *rreadtab_json(const struct rread_tab *t, uint64_t now)
{
	json_t *arr = json_array();
	size_t lat, bw;

	for (size_t i = 0; i < t->n_conns; i++) {
		const struct rread_conn *c = t->conns[i];

		for (size_t j = 0; j < c->n; j++) {
			const struct rread_entry *e = &c->e[j];
			bool ops = e->o.cls == FLOW_CLASS_THROUGHPUT;

			json_array_append_new(arr, json_pack(
				"{s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:b, s:o, s:o, s:I}", "kind",
				rreadmsg_kind_name(e->o.kind), "peer", c->name,
				"flow", (json_int_t)e->o.flow,
				"class", rreadmsg_class_name(e->o.cls),
				"qpn", (json_int_t)e->o.qpn, "local_qpn", (json_int_t)e->o.peer_qpn,
				"weight", (json_int_t)e->o.weight, "active", e->o.active,
				"share_bps", !ops && e->rate_bps && e->rate_bps <= INT64_MAX
						     ? json_integer((json_int_t)e->rate_bps)
						     : json_null(),
				"share_ops_per_s", ops && e->rate_bps && e->rate_bps <= INT64_MAX
						     ? json_integer((json_int_t)e->rate_bps)
						     : json_null(),
				"age_ms", (json_int_t)((now - e->since_ns) / 1000000)));
		}
	}
	rreadtab_recv_count(t, &lat, &bw);
	return json_pack("{s:I, s:{s:I, s:I}, s:I, s:I, s:I, s:I, s:I, s:o, s:o}", "flows",
			 (json_int_t)t->total, "incoming", "latency", (json_int_t)lat, "bandwidth",
			 (json_int_t)bw,
			 "opened", (json_int_t)t->opened, "closed", (json_int_t)t->closed,
			 "dropped", (json_int_t)t->dropped, "refused", (json_int_t)t->refused,
			 "grants_sent", (json_int_t)t->grants_sent, "last_refusal",
			 t->last_refusal[0] ? json_string(t->last_refusal) : json_null(),
			 "entries", arr);
}

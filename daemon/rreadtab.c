// SPDX-License-Identifier: MIT
/* The responder's remote READ flows (see rreadtab.h).
 * May call: rreadmsg, log (config.h for its enum only). */
#include "rreadtab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int rreadtab_close(struct rread_tab *t, uint64_t serial, uint32_t flow)
{
	struct rread_conn *c = rreadtab_conn(t, serial);
	struct rread_entry *e = find(c, flow);

	if (!e)
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
		for (size_t j = 0; j < t->conns[i]->n; j++, k++) {
			const struct rread_open *o = &t->conns[i]->e[j].o;

			tf[k] = (struct tokens_flow){ .weight = o->weight, .app = app0 + (uint32_t)k,
						      .cls = o->cls, .active = o->active };
			af[k] = (struct aimd_flow){ .app = app0 + (uint32_t)k, .cls = o->cls,
						    .active = o->active };
		}
	return k;
}

void rreadtab_set_rates(struct rread_tab *t, const struct tokens_flow *tf, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < t->n_conns; i++)
		for (size_t j = 0; j < t->conns[i]->n && k < n; j++, k++)
			t->conns[i]->e[j].rate_bps = tf[k].rate_bps;
}

static bool changed(const struct rread_entry *e)
{
	uint64_t a = e->rate_bps, b = e->sent_bps, d = a > b ? a - b : b - a;

	if (!e->sent)
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

size_t rreadtab_grants(const struct rread_conn *c, size_t from, struct rread_grant *g)
{
	size_t k = 0;

	for (size_t j = from; j < c->n && k < RREAD_GRANTS_MAX; j++, k++)
		g[k] = (struct rread_grant){ .flow = c->e[j].o.flow, .rate_bps = c->e[j].rate_bps };
	return k;
}

void rreadtab_sent(struct rread_conn *c, uint64_t now)
{
	for (size_t j = 0; j < c->n; j++) {
		c->e[j].sent_bps = c->e[j].rate_bps;
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
		if (!rc)
			log_info("remote READ flow %u from %s registered (QP %u -> our QP %u, weight %u)",
				 o.flow, name, o.qpn, o.peer_qpn, o.weight);
	} else if (!strcmp(op, RREAD_OP_CLOSE)) {
		uint32_t flow;

		if (rreadmsg_parse_close(args, &flow, err, sizeof(err))) {
			snprintf(msg, msglen, "%s: %s", op, err);
			return -EINVAL;
		}
		if (rreadtab_close(t, serial, flow)) {
			*code = "not_found";
			snprintf(msg, msglen, "%s: no remote flow %u of this connection", op, flow);
			return -ENOENT;
		}
		log_info("remote READ flow %u from %s closed", flow, name);
	} else {
		snprintf(msg, msglen, "%s: not an operation of remote READ control", op);
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

	for (size_t i = 0; i < t->n_conns; i++) {
		const struct rread_conn *c = t->conns[i];

		for (size_t j = 0; j < c->n; j++) {
			const struct rread_entry *e = &c->e[j];

			json_array_append_new(arr, json_pack(
				"{s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:b, s:o, s:I}", "kind",
				RREAD_KIND_READ, "peer", c->name, "flow", (json_int_t)e->o.flow,
				"class", rreadmsg_class_name(e->o.cls),
				"qpn", (json_int_t)e->o.qpn, "local_qpn", (json_int_t)e->o.peer_qpn,
				"weight", (json_int_t)e->o.weight, "active", e->o.active,
				"share_bps", e->rate_bps && e->rate_bps <= INT64_MAX
						     ? json_integer((json_int_t)e->rate_bps)
						     : json_null(),
				"age_ms", (json_int_t)((now - e->since_ns) / 1000000)));
		}
	}
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o}", "flows", (json_int_t)t->total,
			 "opened", (json_int_t)t->opened, "closed", (json_int_t)t->closed,
			 "dropped", (json_int_t)t->dropped, "refused", (json_int_t)t->refused,
			 "grants_sent", (json_int_t)t->grants_sent, "last_refusal",
			 t->last_refusal[0] ? json_string(t->last_refusal) : json_null(),
			 "entries", arr);
}

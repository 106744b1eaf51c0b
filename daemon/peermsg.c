// SPDX-License-Identifier: MIT
/* The peer channel's messages (docs/peer-protocol.md sections 3 and 4):
 * hello, auth, requests and replies, each line checked strictly (and its MAC
 * verified) before use.  The connections themselves are peer.c's. */
#include "peermsg.h"

#include <limits.h>
#include <string.h>

#include "log.h"
#include "peerauth.h"

void peermsg_hello(struct peer *p)
{
	char nonce[33], node[17];
	json_t *m = peer_msg("hello");

	peerauth_hex(nonce, p->nonce, 16);
	peerauth_u64_hex(node, p->pc->node);
	json_object_set_new(m, "role", json_string(p->outgoing ? "client" : "server"));
	json_object_set_new(m, "node", json_string(node));
	json_object_set_new(m, "nonce", json_string(nonce));
	json_object_set_new(m, "auth", json_boolean(p->pc->have_secret));
	peer_send(p, m);
}

static void go_up(struct peer *p)
{
	p->state = PEER_UP;
	p->backoff_ms = 0;
	p->error[0] = 0;
	if (p->outgoing) {
		if (p->logged)
			log_info("reference peer %s: connected%s", p->name,
				 p->mac ? " (authenticated)" : "");
		else
			log_debug(LOG_SS_REF, "peer %s up%s", p->name,
				  p->mac ? " (authenticated)" : "");
	} else {
		log_debug(LOG_SS_REF, "peer %s connected to us%s", p->name,
			  p->mac ? " (authenticated)" : "");
	}
	p->logged = false;
	peer_arm_timer(p);
	peer_notify(p, true);
}

/* Session keys: one per direction, bound to both nonces. */
static void session_keys(struct peer *p)
{
	const uint8_t *nc = p->outgoing ? p->nonce : p->peer_nonce;
	const uint8_t *ns = p->outgoing ? p->peer_nonce : p->nonce;
	struct siphash_key c2s, s2c;

	peerauth_session_keys(&p->pc->key, nc, ns, &c2s, &s2c);
	p->k_tx = p->outgoing ? c2s : s2c;
	p->k_rx = p->outgoing ? s2c : c2s;
}

/* The proof one side sends (mine) or must receive (!mine). */
static uint64_t proof(const struct peer *p, bool mine)
{
	bool client = mine ? p->outgoing : !p->outgoing;

	return peerauth_proof(&p->pc->key, client, mine ? p->nonce : p->peer_nonce,
			      mine ? p->peer_nonce : p->nonce);
}

static void on_hello(struct peer *p, json_t *m)
{
	const char *role, *node, *nonce, *type;
	json_error_t err;
	int v, auth;
	char mac[17];

	if (json_unpack_ex(m, &err, JSON_STRICT, "{s:i, s:s, s:s, s:s, s:s, s:b}", "v", &v, "type",
			   &type, "role", &role, "node", &node, "nonce", &nonce, "auth", &auth)) {
		peer_conn_refuse(p, "bad hello: %s", err.text);
		return;
	}
	if (strcmp(role, p->outgoing ? "server" : "client")) {
		peer_conn_refuse(p, "bad hello: role \"%.16s\"", role);
		return;
	}
	if (peerauth_hex_u64(node, &p->peer_node) || peerauth_unhex(p->peer_nonce, 16, nonce)) {
		peer_conn_refuse(p, "bad hello: node or nonce");
		return;
	}
	if (p->peer_node == p->pc->node) {
		peer_conn_refuse(p, "connected to itself");
		return;
	}
	if (!!auth != p->pc->have_secret) {
		peer_conn_refuse(p, auth ? "peer requires a shared secret (reference.secret_file)"
				    : "peer has no shared secret but we require one");
		return;
	}
	p->got_hello = true;
	if (!p->pc->have_secret) {
		go_up(p);
		return;
	}
	peerauth_u64_hex(mac, proof(p, true));
	m = peer_msg("auth");
	json_object_set_new(m, "mac", json_string(mac));
	peer_send(p, m);
}

static void on_auth(struct peer *p, json_t *m)
{
	const char *mac, *type;
	json_error_t err;
	uint64_t got;
	int v;

	if (json_unpack_ex(m, &err, JSON_STRICT, "{s:i, s:s, s:s}", "v", &v, "type", &type, "mac",
			   &mac) ||
	    peerauth_hex_u64(mac, &got)) {
		peer_conn_refuse(p, "bad auth message");
		return;
	}
	if (got != proof(p, false)) {
		if (!p->outgoing)
			log_warnx("peer %s: authentication failed (wrong shared secret?)", p->name);
		peer_conn_refuse(p, "authentication failed");
		return;
	}
	p->got_auth = true;
	session_keys(p);
	p->mac = true;
	go_up(p);
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

static json_t *rep_new(json_int_t id, bool ok)
{
	json_t *m = peer_msg("rep");

	json_object_set_new(m, "id", json_integer(id));
	json_object_set_new(m, "ok", json_boolean(ok));
	return m;
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
	m = rep_new(rq->id, true);
	json_object_set_new(m, "result", result ? result : json_object());
	peer_send(p, m);
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
	m = rep_new(rq->id, false);
	json_object_set_new(m, "error", json_pack("{s:s, s:s}", "code", code, "message", msg));
	peer_send(p, m);
}

static void on_request(struct peer *p, json_t *m)
{
	struct peer_ctx *pc = p->pc;
	struct peer_req rq = { .conn = p->serial };
	const char *type, *op;
	json_t *args = NULL;
	json_error_t err;
	int v;

	if (json_unpack_ex(m, &err, JSON_STRICT, "{s:i, s:s, s:I, s:s, s?o}", "v", &v, "type",
			   &type, "id", &rq.id, "op", &op, "args", &args) ||
	    (args && !json_is_object(args))) {
		peer_conn_refuse(p, "bad request: %s", args ? "args must be an object" : err.text);
		return;
	}
	p->n_serving++;
	if (p->n_serving > PEER_MAX_PENDING) {
		peer_reply_error(pc, &rq, "busy", "more than %d requests in flight",
				 PEER_MAX_PENDING);
		return;
	}
	for (size_t i = 0; i < pc->n_handlers; i++) {
		if (strcmp(pc->handlers[i].op, op))
			continue;
		if (!args)
			args = json_object();
		else
			json_incref(args);
		pc->handlers[i].fn(pc, p, &rq, args, pc->handlers[i].arg);
		json_decref(args);
		return;
	}
	peer_reply_error(pc, &rq, "unknown_op", "unknown operation \"%.32s\"", op);
}

static void on_reply(struct peer *p, json_t *m)
{
	struct peer_pending **pp, *q;
	const char *type, *code = NULL, *msg = NULL;
	json_t *result = NULL, *error = NULL;
	json_error_t err;
	json_int_t id;
	int v, ok;

	if (json_unpack_ex(m, &err, JSON_STRICT, "{s:i, s:s, s:I, s:b, s?o, s?o}", "v", &v, "type",
			   &type, "id", &id, "ok", &ok, "result", &result, "error", &error) ||
	    (ok && (!json_is_object(result) || error)) ||
	    (!ok && (result || json_unpack_ex(error, &err, JSON_STRICT, "{s:s, s:s}", "code",
					      &code, "message", &msg)))) {
		peer_conn_refuse(p, "bad reply");
		return;
	}
	for (pp = &p->pending; (q = *pp); pp = &q->next)
		if (q->id == id)
			break;
	if (!q) {
		peer_conn_refuse(p, "reply to unknown request %lld", (long long)id);
		return;
	}
	*pp = q->next;
	p->n_pending--;
	q->cb(p->pc, p, ok ? result : NULL, code, msg, q->arg);
	free(q);
	if (p->magic == PEER_MAGIC && p->state == PEER_UP)
		peer_arm_timer(p);
}

/* One line from the peer.  With MACs on, verify and strip the MAC first. */
void peermsg_line(struct peer *p, char *line, size_t len)
{
	json_error_t err;
	const char *type;
	json_t *m, *jt;
	int v;

	if (p->mac) {
		uint64_t got;

		if (len < 18 || line[len - 17] != ' ' || peerauth_hex_u64(line + len - 16, &got) ||
		    got != peerauth_line_mac(&p->k_rx, p->seq_rx, line, len - 17)) {
			peer_conn_fail(p, "message %llu: bad MAC", (unsigned long long)p->seq_rx);
			return;
		}
		p->seq_rx++;
		len -= 17;
		line[len] = 0;
	}
	m = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
	if (!m || !json_is_object(m)) {
		json_decref(m);
		peer_conn_refuse(p, "invalid JSON");
		return;
	}
	jt = json_object_get(m, "v");
	/* compared as json_int_t: (int) would turn 4294967297 into 1 */
	v = !json_is_integer(jt) ? -1
	    : json_integer_value(jt) < INT_MIN || json_integer_value(jt) > INT_MAX
		? INT_MIN
		: (int)json_integer_value(jt);
	type = json_string_value(json_object_get(m, "type"));
	if (v != PEER_PROTO_VERSION) {
		peer_conn_refuse(p, "peer protocol version %d not supported (we speak %d)", v,
			    PEER_PROTO_VERSION);
	} else if (!type) {
		peer_conn_refuse(p, "message without a type");
	} else if (!strcmp(type, "error")) {
		const char *msg = json_string_value(json_object_get(m, "message"));
		char safe[120];
		size_t i;

		snprintf(safe, sizeof(safe), "%s", msg ? msg : "?");
		for (i = 0; safe[i]; i++)
			if ((unsigned char)safe[i] < 0x20 || safe[i] == 0x7f)
				safe[i] = '?';
		peer_conn_fail(p, "peer says: %s", safe);
	} else if (!p->got_hello) {
		if (!strcmp(type, "hello"))
			on_hello(p, m);
		else
			peer_conn_refuse(p, "expected hello, got \"%.16s\"", type);
	} else if (p->state == PEER_HANDSHAKE) {
		if (!strcmp(type, "auth"))
			on_auth(p, m);
		else
			peer_conn_refuse(p, "expected auth, got \"%.16s\"", type);
	} else if (!strcmp(type, "req")) {
		on_request(p, m);
	} else if (!strcmp(type, "rep")) {
		on_reply(p, m);
	} else {
		peer_conn_refuse(p, "unknown message type \"%.16s\"", type);
	}
	json_decref(m);
}


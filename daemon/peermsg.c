// SPDX-License-Identifier: MIT
/* The peer channel's messages (docs/peer-protocol.md sections 3, 4): hello,
 * auth, requests, replies; each line checked strictly (sealing included) and
 * returned decoded for peer.c to act on.
 * May call: peerauth, kcrypto, log; nothing of peer.c or peerconn.c. */
#include "peermsg.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "peerauth.h"

json_t *peermsg_new(const char *type)
{
	return json_pack("{s:i, s:s}", "v", PEER_PROTO_VERSION, "type", type);
}

/* Refuse: say why (PEERMSG_REFUSE). */
static enum peermsg_kind refuse(struct peermsg *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static enum peermsg_kind refuse(struct peermsg *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out->why, sizeof(out->why), fmt, ap);
	va_end(ap);
	return PEERMSG_REFUSE;
}

json_t *peermsg_hello(const struct peer *p)
{
	char nonce[33], node[17];
	json_t *m = peermsg_new("hello");

	peerauth_hex(nonce, p->nonce, 16);
	peerauth_u64_hex(node, p->pc->node);
	json_object_set_new(m, "role", json_string(p->outgoing ? "client" : "server"));
	json_object_set_new(m, "node", json_string(node));
	json_object_set_new(m, "nonce", json_string(nonce));
	json_object_set_new(m, "auth", json_boolean(p->pc->have_secret));
	return m;
}

/* Session keys: one per direction, bound to both nonces; from here on
 * every line is sealed.  0 or -errno. */
static int session_keys(struct peer *p)
{
	const uint8_t *nc = p->outgoing ? p->nonce : p->peer_nonce;
	const uint8_t *ns = p->outgoing ? p->peer_nonce : p->nonce;
	uint8_t c2s[PEERAUTH_KEY], s2c[PEERAUTH_KEY];
	int rc;

	rc = peerauth_session_keys(p->pc->key, nc, ns, c2s, s2c);
	if (!rc)
		rc = kcrypto_aead_init(&p->tx, p->outgoing ? c2s : s2c);
	if (!rc) {
		rc = kcrypto_aead_init(&p->rx, p->outgoing ? s2c : c2s);
		if (rc)
			kcrypto_aead_free(&p->tx);
	}
	memset(c2s, 0, sizeof(c2s));
	memset(s2c, 0, sizeof(s2c));
	p->sealed = !rc;
	return rc;
}

/* The proof one side sends (mine) or must receive (!mine). */
static int proof(const struct peer *p, bool mine, uint8_t out[PEERAUTH_PROOF])
{
	bool client = mine ? p->outgoing : !p->outgoing;

	return peerauth_proof(p->pc->key, client, mine ? p->nonce : p->peer_nonce,
			      mine ? p->peer_nonce : p->nonce, out);
}

static enum peermsg_kind decode_hello(struct peer *p, json_t *m, struct peermsg *out)
{
	const char *role, *node, *nonce, *type;
	json_error_t err;
	uint8_t mine[PEERAUTH_PROOF];
	char mac[2 * PEERAUTH_PROOF + 1];
	int v, auth;

	if (json_unpack_ex(m, &err, JSON_STRICT, "{s:i, s:s, s:s, s:s, s:s, s:b}", "v", &v, "type",
			   &type, "role", &role, "node", &node, "nonce", &nonce, "auth", &auth))
		return refuse(out, "bad hello: %s", err.text);
	if (strcmp(role, p->outgoing ? "server" : "client"))
		return refuse(out, "bad hello: role \"%.16s\"", role);
	if (peerauth_hex_u64(node, &p->peer_node) || peerauth_unhex(p->peer_nonce, 16, nonce))
		return refuse(out, "bad hello: node or nonce");
	if (p->peer_node == p->pc->node)
		return refuse(out, "connected to itself");
	if (!!auth != p->pc->have_secret)
		return refuse(out, "%s",
			      auth ? "peer requires a shared secret (reference.secret_file)"
				   : "peer has no shared secret but we require one");
	p->got_hello = true;
	if (!p->pc->have_secret)
		return PEERMSG_HELLO;
	if (proof(p, true, mine)) {
		snprintf(out->why, sizeof(out->why), "key derivation failed");
		return PEERMSG_FAIL;
	}
	peerauth_hex(mac, mine, sizeof(mine));
	out->reply = peermsg_new("auth");
	json_object_set_new(out->reply, "mac", json_string(mac));
	return PEERMSG_HELLO;
}

static enum peermsg_kind decode_auth(struct peer *p, json_t *m, struct peermsg *out)
{
	uint8_t got[PEERAUTH_PROOF], want[PEERAUTH_PROOF];
	const char *mac, *type;
	json_error_t err;
	int v;

	if (json_unpack_ex(m, &err, JSON_STRICT, "{s:i, s:s, s:s}", "v", &v, "type", &type, "mac",
			   &mac) ||
	    peerauth_unhex(got, sizeof(got), mac))
		return refuse(out, "bad auth message");
	if (proof(p, false, want)) {
		snprintf(out->why, sizeof(out->why), "key derivation failed");
		return PEERMSG_FAIL;
	}
	if (!peerauth_equal(got, want, sizeof(got))) {
		if (!p->outgoing)
			log_warnx("peer %s: authentication failed (wrong shared secret?)", p->name);
		return refuse(out, "authentication failed");
	}
	p->got_auth = true;
	if (session_keys(p)) {
		snprintf(out->why, sizeof(out->why), "cannot set up the session keys");
		return PEERMSG_FAIL;
	}
	return PEERMSG_AUTH;
}

json_t *peermsg_rep(json_int_t id, bool ok)
{
	json_t *m = peermsg_new("rep");

	json_object_set_new(m, "id", json_integer(id));
	json_object_set_new(m, "ok", json_boolean(ok));
	return m;
}

static enum peermsg_kind decode_request(json_t *m, struct peermsg *out)
{
	const char *type;
	json_error_t err;
	int v;

	if (json_unpack_ex(m, &err, JSON_STRICT, "{s:i, s:s, s:I, s:s, s?o}", "v", &v, "type",
			   &type, "id", &out->id, "op", &out->op, "args", &out->args) ||
	    (out->args && !json_is_object(out->args)))
		return refuse(out, "bad request: %s",
			      out->args ? "args must be an object" : err.text);
	return PEERMSG_REQUEST;
}

static enum peermsg_kind decode_reply(json_t *m, struct peermsg *out)
{
	json_t *error = NULL;
	const char *type;
	json_error_t err;
	int v;

	if (json_unpack_ex(m, &err, JSON_STRICT, "{s:i, s:s, s:I, s:b, s?o, s?o}", "v", &v, "type",
			   &type, "id", &out->id, "ok", &out->ok, "result", &out->result, "error",
			   &error) ||
	    (out->ok && (!json_is_object(out->result) || error)) ||
	    (!out->ok && (out->result || json_unpack_ex(error, &err, JSON_STRICT, "{s:s, s:s}",
							"code", &out->code, "message", &out->msg))))
		return refuse(out, "bad reply");
	if (!out->ok)
		out->result = NULL;
	return PEERMSG_REPLY;
}

/* A sealed line, in place: hex -> ciphertext and tag -> checked JSON text
 * (NUL-terminated, *len updated).  -EINVAL for what is not hex of the right
 * size, -EBADMSG for what does not authenticate under this line's nonce. */
static int open_line(struct peer *p, char *line, size_t *len)
{
	uint8_t nonce[KCRYPTO_NONCE], *bin = (uint8_t *)line;
	size_t n = *len / 2;
	int rc;

	if (*len % 2 || n <= KCRYPTO_TAG || n - KCRYPTO_TAG > PEER_MAX_PLAIN)
		return -EINVAL;
	line[*len] = 0;
	/* unhexing in place is safe: byte i comes from digits 2i and 2i+1 */
	if (peerauth_unhex(bin, n, line))
		return -EINVAL;
	peerauth_nonce(p->seq_rx, nonce);
	rc = kcrypto_aead_open(&p->rx, nonce, bin, n, bin);
	if (rc)
		return rc;
	p->seq_rx++;
	*len = n - KCRYPTO_TAG;
	line[*len] = 0;
	return 0;
}

/* One line from the peer.  On a sealed channel, check and decrypt it first. */
enum peermsg_kind peermsg_decode(struct peer *p, char *line, size_t len, struct peermsg *out)
{
	enum peermsg_kind k;
	json_error_t err;
	const char *type;
	json_t *m, *jt;
	int v;

	memset(out, 0, sizeof(*out));

	if (p->sealed) {
		int rc = open_line(p, line, &len);

		if (rc) {
			snprintf(out->why, sizeof(out->why), "message %llu: %s",
				 (unsigned long long)p->seq_rx,
				 rc == -EBADMSG ? "does not authenticate (bad key, replayed, reordered or altered)"
				 : rc == -EINVAL ? "not a sealed line"
						 : strerror(-rc));
			return PEERMSG_FAIL;
		}
	}
	m = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
	if (!m || !json_is_object(m)) {
		json_decref(m);
		return refuse(out, "invalid JSON");
	}
	jt = json_object_get(m, "v");
	/* compared as json_int_t: (int) would turn 4294967297 into 1 */
	v = !json_is_integer(jt) ? -1
	    : json_integer_value(jt) < INT_MIN || json_integer_value(jt) > INT_MAX
		? INT_MIN
		: (int)json_integer_value(jt);
	type = json_string_value(json_object_get(m, "type"));
	out->json = m;
	if (v != PEER_PROTO_VERSION) {
		k = refuse(out, "peer protocol version %d not supported (we speak %d)", v,
			   PEER_PROTO_VERSION);
	} else if (!type) {
		k = refuse(out, "message without a type");
	} else if (!strcmp(type, "error")) {
		const char *msg = json_string_value(json_object_get(m, "message"));
		char safe[120];
		size_t i;

		snprintf(safe, sizeof(safe), "%s", msg ? msg : "?");
		for (i = 0; safe[i]; i++)
			if ((unsigned char)safe[i] < 0x20 || safe[i] == 0x7f)
				safe[i] = '?';
		snprintf(out->why, sizeof(out->why), "peer says: %s", safe);
		k = PEERMSG_FAIL;
	} else if (!p->got_hello) {
		if (!strcmp(type, "hello"))
			k = decode_hello(p, m, out);
		else
			k = refuse(out, "expected hello, got \"%.16s\"", type);
	} else if (p->state == PEER_HANDSHAKE) {
		if (!strcmp(type, "auth"))
			k = decode_auth(p, m, out);
		else
			k = refuse(out, "expected auth, got \"%.16s\"", type);
	} else if (!strcmp(type, "req")) {
		k = decode_request(m, out);
	} else if (!strcmp(type, "rep")) {
		k = decode_reply(m, out);
	} else {
		k = refuse(out, "unknown message type \"%.16s\"", type);
	}
	return k;
}

void peermsg_done(struct peermsg *m)
{
	json_decref(m->reply);
	json_decref(m->json);
	m->reply = m->json = NULL;
}

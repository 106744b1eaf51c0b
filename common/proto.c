// SPDX-License-Identifier: MIT
/* The justitiad control protocol (docs/protocol.md): line framing, request
 * validation, reply builders, and the non-blocking send of a line
 * connection (descriptor passing, the output queue of an event loop).
 * The blocking client side (connect, call) is proto_client.c.
 * May call: common/clock.h, jansson and libc only.
 *
 * Linked into the daemon, justctl and the LD_PRELOAD shim, so: no global
 * state, no exit(), no output, close-on-exec everywhere, MSG_NOSIGNAL on
 * every send, and every byte that comes off a socket is treated as hostile. */
#include "proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ------------------------------------------------------------ line buffer */

void proto_linebuf_init(struct proto_linebuf *lb, size_t max_line)
{
	memset(lb, 0, sizeof(*lb));
	lb->max = max_line ? max_line : PROTO_MAX_LINE_DEFAULT;
}

void proto_linebuf_free(struct proto_linebuf *lb)
{
	size_t max = lb->max;

	free(lb->buf);
	memset(lb, 0, sizeof(*lb));
	lb->max = max;
}

/* Make room for @n more bytes after dropping what next() already returned. */
static int linebuf_reserve(struct proto_linebuf *lb, size_t n)
{
	size_t need, cap;
	char *p;

	if (lb->head) {
		memmove(lb->buf, lb->buf + lb->head, lb->len - lb->head);
		lb->len -= lb->head;
		lb->tail -= lb->head;
		lb->head = 0;
	}
	if (n > SIZE_MAX - lb->len)
		return -ENOMEM;
	need = lb->len + n;
	if (need <= lb->cap)
		return 0;
	cap = lb->cap ? lb->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(lb->buf, cap);
	if (!p)
		return -ENOMEM;
	lb->buf = p;
	lb->cap = cap;
	return 0;
}

int proto_linebuf_feed(struct proto_linebuf *lb, const char *data, size_t n)
{
	size_t cur = lb->len - lb->tail; /* bytes of the incomplete line, <= max */
	size_t off = 0, keep = n, last_end = 0;
	bool overflow = false;
	const char *nl;
	int r;

	if (lb->overflow)
		return -EMSGSIZE;
	/* Check every line in @data against the limit, before buffering. */
	while (off < n) {
		size_t seg;

		nl = memchr(data + off, '\n', n - off);
		seg = (nl ? (size_t)(nl - data) : n) - off;
		if (seg > lb->max - cur) {
			overflow = true;
			keep = off; /* only the complete lines before it */
			break;
		}
		if (!nl)
			break;
		off = (size_t)(nl - data) + 1;
		last_end = off;
		cur = 0;
	}
	if (overflow && keep == 0)
		lb->len = lb->tail; /* the buffered start of the overlong line */
	r = linebuf_reserve(lb, keep);
	if (r)
		return r;
	if (keep)
		memcpy(lb->buf + lb->len, data, keep);
	if (last_end)
		lb->tail = lb->len + last_end;
	lb->len += keep;
	if (overflow) {
		lb->overflow = true;
		return -EMSGSIZE;
	}
	return 0;
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

int proto_linebuf_next(struct proto_linebuf *lb, char **line, size_t *len)
{
	while (lb->head < lb->tail) {
		const char *s = lb->buf + lb->head;
		const char *nl = memchr(s, '\n', lb->tail - lb->head);
		size_t n = (size_t)(nl - s); /* tail follows a '\n': nl != NULL */
		char *copy;

		if (blank(s, n)) {
			lb->head += n + 1;
			continue;
		}
		copy = malloc(n + 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, s, n);
		copy[n] = '\0';
		lb->head += n + 1;
		if (lb->head == lb->len)
			lb->head = lb->tail = lb->len = 0;
		*line = copy;
		if (len)
			*len = n;
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------ requests */

static bool is_scalar(const json_t *j)
{
	return j && !json_is_object(j) && !json_is_array(j);
}

__attribute__((format(printf, 5, 6))) static json_t *
reject(const char **code, const char *c, char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;

	if (code)
		*code = c;
	if (msg && msglen) {
		va_start(ap, fmt);
		vsnprintf(msg, msglen, fmt, ap);
		va_end(ap);
	}
	return NULL;
}

json_t *proto_parse_request(const char *line, size_t len, const char **cmd,
			    const char **code, char *msg, size_t msglen)
{
	json_error_t jerr;
	json_t *req, *v, *c, *id;
	json_int_t ver;

	if (cmd)
		*cmd = NULL;
	req = json_loadb(line ? line : "", line ? len : 0, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
			 &jerr);
	if (!req)
		return reject(code, PROTO_E_BAD_JSON, msg, msglen, "invalid JSON at byte %d: %s",
			      jerr.position, jerr.text);
	if (!json_is_object(req)) {
		reject(code, PROTO_E_BAD_REQUEST, msg, msglen, "a request must be a JSON object");
		goto out_put;
	}
	v = json_object_get(req, "v");
	if (!v) {
		reject(code, PROTO_E_BAD_REQUEST, msg, msglen, "missing protocol version \"v\"");
		goto out_put;
	}
	if (!json_is_integer(v)) {
		reject(code, PROTO_E_BAD_REQUEST, msg, msglen, "\"v\" must be an integer");
		goto out_put;
	}
	ver = json_integer_value(v);
	if (ver != PROTO_VERSION) {
		reject(code, PROTO_E_BAD_VERSION, msg, msglen,
		       "protocol version %" JSON_INTEGER_FORMAT " not supported (daemon speaks %d)",
		       ver, PROTO_VERSION);
		goto out_put;
	}
	c = json_object_get(req, "cmd");
	if (!c) {
		reject(code, PROTO_E_BAD_REQUEST, msg, msglen, "missing \"cmd\"");
		goto out_put;
	}
	if (!json_is_string(c) || !json_string_length(c)) {
		reject(code, PROTO_E_BAD_REQUEST, msg, msglen,
		       "\"cmd\" must be a non-empty string");
		goto out_put;
	}
	id = json_object_get(req, "id");
	if (id && !is_scalar(id)) {
		reject(code, PROTO_E_BAD_REQUEST, msg, msglen,
		       "\"id\" must be a string, number, boolean or null");
		goto out_put;
	}
	if (cmd)
		*cmd = json_string_value(c);
	return req;
out_put:
	json_decref(req);
	return NULL;
}

/* ------------------------------------------------------------ replies */

/* A JSON string from text that may not be valid UTF-8 (it can quote what a
 * peer sent): invalid input has its non-ASCII bytes replaced by '?'. */
static json_t *string_lossy(const char *s)
{
	json_t *j = json_string(s);
	char *t;

	if (j)
		return j;
	t = strdup(s);
	if (!t)
		return NULL;
	for (char *p = t; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(t);
	free(t);
	return j;
}

static json_t *reply_new(const json_t *req, bool ok)
{
	json_t *r = json_object(), *id;

	if (!r)
		return NULL;
	if (json_object_set_new(r, "v", json_integer(PROTO_VERSION)) ||
	    json_object_set_new(r, "ok", json_boolean(ok)))
		goto out_put;
	id = json_is_object(req) ? json_object_get(req, "id") : NULL;
	if (is_scalar(id) && json_object_set(r, "id", id))
		goto out_put;
	return r;
out_put:
	json_decref(r);
	return NULL;
}

json_t *proto_reply_ok(const json_t *req)
{
	return reply_new(req, true);
}

static json_t *reply_error_str(const json_t *req, const char *code, const char *text)
{
	json_t *r, *e;

	r = reply_new(req, false);
	if (!r)
		return NULL;
	e = json_object();
	if (!e)
		goto out_put;
	if (json_object_set_new(r, "error", e) ||
	    json_object_set_new(e, "code", json_string(code ? code : PROTO_E_INTERNAL)) ||
	    json_object_set_new(e, "message", string_lossy(text ? text : "")))
		goto out_put;
	return r;
out_put:
	json_decref(r);
	return NULL;
}

json_t *proto_reply_error(const json_t *req, const char *code, const char *fmt, ...)
{
	va_list ap;
	char *text;
	json_t *r;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	r = reply_error_str(req, code, text);
	free(text);
	return r;
}

json_t *proto_reply_invalid(const char *line, size_t len, const char *code, const char *msg)
{
	json_t *req = NULL, *r;

	if (line)
		req = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
	r = reply_error_str(req, code, msg);
	json_decref(req);
	return r;
}

char *proto_encode(const json_t *msg, size_t *len)
{
	const size_t flags = JSON_COMPACT;
	size_t n, m;
	char *buf;

	if (!msg)
		return NULL;
	n = json_dumpb(msg, NULL, 0, flags);
	if (!n || n == SIZE_MAX)
		return NULL;
	buf = malloc(n + 2);
	if (!buf)
		return NULL;
	m = json_dumpb(msg, buf, n, flags);
	if (m != n) {
		free(buf);
		return NULL;
	}
	buf[n] = '\n';
	buf[n + 1] = '\0';
	if (len)
		*len = n + 1;
	return buf;
}

/* ------------------------------------------------------------ sending */

ssize_t proto_sendmsg(int sock, const char *buf, size_t len, const int *fds, int nfds,
		     int flags)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * PROTO_MAX_FDS)];
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;

	if (nfds < 0 || nfds > PROTO_MAX_FDS || (nfds && (!fds || !len)))
		return -EINVAL;
	if (nfds) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = sendmsg(sock, &mh, flags | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

ssize_t proto_send_once(int sock, const char *buf, size_t len, const int *fds, int nfds)
{
	return proto_sendmsg(sock, buf, len, fds, nfds, 0);
}

int proto_out_append(char **buf, size_t *len, size_t *cap, const char *data, size_t n,
		     size_t max)
{
	if (*len + n > max)
		return -ENOBUFS;
	if (*len + n > *cap) {
		size_t c = *len + n + 4096;
		char *p = realloc(*buf, c);

		if (!p)
			return -ENOMEM;
		*buf = p;
		*cap = c;
	}
	if (n) /* (*buf may still be NULL) */
		memcpy(*buf + *len, data, n);
	*len += n;
	return 0;
}

int proto_out_flush(int sock, char *buf, size_t *len)
{
	while (*len) {
		ssize_t n = proto_sendmsg(sock, buf, *len, NULL, 0, MSG_DONTWAIT);

		if (n == -EAGAIN || n == -EWOULDBLOCK)
			return 1;
		if (n < 0)
			return (int)n;
		memmove(buf, buf + n, *len - (size_t)n);
		*len -= (size_t)n;
	}
	return 0;
}

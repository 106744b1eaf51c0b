// SPDX-License-Identifier: MIT
/* The justitiad control protocol (docs/protocol.md): framing, request
 * validation, reply builders, descriptor passing and a client call.
 *
 * Linked into the daemon, justctl and the LD_PRELOAD shim, so: no global
 * state, no exit(), no output, close-on-exec everywhere, MSG_NOSIGNAL on
 * every send, and every byte that comes off a socket is treated as hostile. */
#include "proto.h"

#include "clock.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The kernel's limit on descriptors in one SCM_RIGHTS message (SCM_MAX_FD):
 * the receive control buffer holds that many so that surplus descriptors
 * arrive in our table, where we close them, instead of being truncated. */
#define RECV_FDS_MAX 253
#define CALL_CHUNK 65536

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

/* ------------------------------------------------------------ sockets */

/* Monotonic milliseconds; a deadline of -1 means none. */
static int64_t now_ms(void)
{
	return (int64_t)(clock_now_ns() / 1000000);
}

static int64_t deadline_after(int timeout_ms)
{
	return timeout_ms > 0 ? now_ms() + timeout_ms : -1;
}

/* Milliseconds left for poll(): -1 without deadline, 0 when passed. */
static int remaining_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - now_ms();
	if (left <= 0)
		return 0;
	return left > INT_MAX ? INT_MAX : (int)left;
}

/* Wait until @sock is ready for @events: 0 (also on POLLERR/POLLHUP: the
 * next send or recv reports what happened), -ETIMEDOUT, -errno. */
static int wait_fd(int sock, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = sock, .events = events };
	int n, left;

	for (;;) {
		left = remaining_ms(deadline);
		if (left == 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, left);
		if (n > 0)
			return (pfd.revents & POLLNVAL) ? -EBADF : 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static ssize_t send_some(int sock, const char *buf, size_t len, const int *fds, int nfds,
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
	return send_some(sock, buf, len, fds, nfds, 0);
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
		ssize_t n = send_some(sock, buf, *len, NULL, 0, MSG_DONTWAIT);

		if (n == -EAGAIN || n == -EWOULDBLOCK)
			return 1;
		if (n < 0)
			return (int)n;
		memmove(buf, buf + n, *len - (size_t)n);
		*len -= (size_t)n;
	}
	return 0;
}

static int send_all(int sock, const char *buf, size_t len, const int *fds, int nfds,
		    int64_t deadline)
{
	/* With a deadline never block in sendmsg(): wait in poll() instead. */
	int flags = deadline < 0 ? 0 : MSG_DONTWAIT;
	size_t off = 0;
	ssize_t n;
	int r;

	if (nfds && !len)
		return -EINVAL;
	while (off < len) {
		n = send_some(sock, buf + off, len - off, off ? NULL : fds, off ? 0 : nfds, flags);
		if (n == -EAGAIN || n == -EWOULDBLOCK) {
			r = wait_fd(sock, POLLOUT, deadline);
			if (r)
				return r;
			continue;
		}
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EIO;
		off += (size_t)n;
	}
	return 0;
}

int proto_send(int sock, const char *buf, size_t len, const int *fds, int nfds)
{
	return send_all(sock, buf, len, fds, nfds, -1);
}

static ssize_t recv_some(int sock, char *buf, size_t len, int *fds, int *nfds, int maxfds,
			 int flags)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * RECV_FDS_MAX)];
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;

	mh.msg_control = u.b;
	mh.msg_controllen = sizeof(u.b);
	do
		n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (fds && nfds && *nfds >= 0 && *nfds < maxfds)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

ssize_t proto_recv(int sock, char *buf, size_t len, int *fds, int *nfds, int maxfds)
{
	return recv_some(sock, buf, len, fds, nfds, maxfds, 0);
}

const char *proto_socket_path(void)
{
	const char *p = secure_getenv(PROTO_SOCKET_ENV);

	return p && *p ? p : PROTO_DEFAULT_SOCKET;
}

static int set_sndtimeo(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ? -errno : 0;
}

int proto_connect(const char *path, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = deadline_after(timeout_ms);
	size_t n;
	int fd, r, left;

	if (!path)
		path = proto_socket_path();
	n = strlen(path);
	if (!n)
		return -EINVAL;
	if (n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, n + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A blocking connect() on a UNIX socket waits for room in the
	 * listener's backlog, bounded by SO_SNDTIMEO (then EAGAIN). */
	for (;;) {
		if (deadline >= 0) {
			left = remaining_ms(deadline);
			if (!left) {
				r = -ETIMEDOUT;
				goto out_close;
			}
			r = set_sndtimeo(fd, left);
			if (r)
				goto out_close;
		}
		if (!connect(fd, (const struct sockaddr *)&sa, sizeof(sa)))
			break;
		r = -errno;
		if (r == -EINTR)
			continue;
		if (r == -EAGAIN || r == -EINPROGRESS)
			r = -ETIMEDOUT;
		goto out_close;
	}
	if (deadline >= 0) {
		r = set_sndtimeo(fd, 0);
		if (r)
			goto out_close;
	}
	return fd;
out_close:
	close(fd);
	return r;
}

static void close_fds(int *fds, int from, int to)
{
	for (int i = from; i < to; i++)
		close(fds[i]);
}

/* Read until one complete line is buffered in @lb. */
static int read_line(int sock, struct proto_linebuf *lb, char **line, size_t *len, int *fds,
		     int *nfds, int maxfds, int64_t deadline)
{
	char *chunk = NULL;
	ssize_t n;
	int r;

	for (;;) {
		r = proto_linebuf_next(lb, line, len);
		if (r)
			break;
		if (!chunk) {
			chunk = malloc(CALL_CHUNK);
			if (!chunk) {
				r = -ENOMEM;
				break;
			}
		}
		r = wait_fd(sock, POLLIN, deadline);
		if (r)
			break;
		n = recv_some(sock, chunk, CALL_CHUNK, fds, nfds, maxfds, MSG_DONTWAIT);
		if (n == -EAGAIN || n == -EWOULDBLOCK)
			continue;
		if (n < 0) {
			r = (int)n;
			break;
		}
		if (n == 0) {
			r = -ECONNRESET;
			break;
		}
		r = proto_linebuf_feed(lb, chunk, (size_t)n);
		if (r)
			break;
	}
	free(chunk);
	return r < 0 ? r : 0;
}

json_t *proto_call(int sock, const json_t *req, int timeout_ms, int *fds, int *nfds,
		   int maxfds, int *err)
{
	int64_t deadline = deadline_after(timeout_ms);
	struct proto_linebuf lb;
	json_t *reply = NULL, *rid, *qid;
	char *out, *line = NULL;
	int got = 0, r, rr;
	size_t len;

	if (!fds || !nfds || maxfds < 0)
		maxfds = 0;
	proto_linebuf_init(&lb, PROTO_MAX_REPLY_LINE);
	out = proto_encode(req, &len);
	if (!out) {
		r = json_is_object(req) ? -ENOMEM : -EINVAL;
		goto out_fail;
	}
	r = send_all(sock, out, len, NULL, 0, deadline);
	free(out);
	/* A daemon that refuses a connection (limit) answers and closes
	 * without reading: its reply may be waiting even though sending
	 * failed.  Report the send error only if there is none. */
	if (r && r != -EPIPE && r != -ECONNRESET)
		goto out_fail;
	rr = read_line(sock, &lb, &line, &len, fds, &got, maxfds, deadline);
	if (rr && !r)
		r = rr;
	if (rr)
		goto out_fail;
	r = 0;
	reply = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(reply)) {
		r = -EPROTO;
		goto out_fail;
	}
	qid = json_is_object(req) ? json_object_get(req, "id") : NULL;
	rid = json_object_get(reply, "id");
	if (qid && rid && !json_equal(qid, rid)) {
		r = -EPROTO;
		goto out_fail;
	}
	free(line);
	proto_linebuf_free(&lb);
	if (nfds)
		*nfds = got;
	if (err)
		*err = 0;
	return reply;
out_fail:
	json_decref(reply);
	free(line);
	proto_linebuf_free(&lb);
	if (fds)
		close_fds(fds, 0, got);
	if (nfds)
		*nfds = 0;
	if (err)
		*err = r;
	return NULL;
}

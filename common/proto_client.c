// SPDX-License-Identifier: MIT
/* The blocking client side of the control protocol (see proto_client.h):
 * deadlines, send and receive with descriptors, connect and call.  Used by
 * justctl, the shim and the test programs.
 * May call: common/proto.c (framing, encoding, proto_sendmsg), common/clock.h,
 * jansson and libc only; the same rules as proto.c (no global state, no
 * exit(), no output, close-on-exec, MSG_NOSIGNAL, hostile bytes). */
#include "proto_client.h"

#include "clock.h"
#include "proto.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
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
		n = proto_sendmsg(sock, buf + off, len - off, off ? NULL : fds, off ? 0 : nfds, flags);
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

// SPDX-License-Identifier: MIT
/* Unit tests of common/proto_client.c: descriptor passing, connect and
 * call with timeouts; no descriptor may leak (proto.c, which it sends
 * and frames with, is included too). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../common/proto.c"
#include "../../common/proto_client.c"
#include "fdleak.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define UNUSED __attribute__((unused))

/* ------------------------------------------------------------ helpers */

static bool fd_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);

	assert_true(fl >= 0);
	return fl & FD_CLOEXEC;
}

/* 1 when every write end of the pipe is closed (read gives EOF). */
static int pipe_at_eof(int rfd)
{
	char c;
	ssize_t n = read(rfd, &c, 1);

	if (n == 0)
		return 1;
	assert_true(n < 0 && errno == EAGAIN);
	return 0;
}

static int memfd_with(const char *text)
{
	int fd = memfd_create("proto-test", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	return fd;
}

static void expect_memfd(int fd, const char *text)
{
	char buf[64] = "";

	assert_int_equal(pread(fd, buf, sizeof(buf) - 1, 0), (ssize_t)strlen(text));
	assert_string_equal(buf, text);
}
/* ------------------------------------------------------------ fd passing */

static void send_recv_fds(void **state UNUSED)
{
	int sv[2], p[2], fds[2], got[PROTO_MAX_FDS] = { -1, -1, -1, -1 }, ngot = 0;
	char buf[16] = "", c;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	fds[0] = memfd_with("shared memory");
	fds[1] = p[1];
	assert_int_equal(proto_send(sv[0], "hi\n", 3, fds, 2), 0);
	assert_int_equal(proto_recv(sv[1], buf, sizeof(buf), got, &ngot, PROTO_MAX_FDS), 3);
	assert_memory_equal(buf, "hi\n", 3);
	assert_int_equal(ngot, 2);
	assert_true(fd_cloexec(got[0]) && fd_cloexec(got[1]));
	expect_memfd(got[0], "shared memory");
	/* the received write end is the same pipe */
	assert_int_equal(write(got[1], "z", 1), 1);
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_int_equal(c, 'z');
	close(got[0]);
	close(got[1]);
	close(fds[0]);
	close(p[1]);
	assert_int_equal(pipe_at_eof(p[0]), 1);
	close(p[0]);

	/* bad descriptor counts */
	assert_int_equal(proto_send(sv[0], "x", 1, fds, PROTO_MAX_FDS + 1), -EINVAL);
	assert_int_equal(proto_send(sv[0], "x", 1, fds, -1), -EINVAL);
	assert_int_equal(proto_send(sv[0], "", 0, fds, 1), -EINVAL);
	assert_int_equal(proto_send(sv[0], "", 0, NULL, 0), 0);
	close(sv[0]);
	close(sv[1]);
}

static void recv_closes_surplus_fds(void **state UNUSED)
{
	int sv[2], p[2], fds[3], got[1] = { -1 }, ngot = 0;
	char buf[4];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	for (int i = 0; i < 3; i++)
		fds[i] = fcntl(p[1], F_DUPFD_CLOEXEC, 0);
	assert_int_equal(proto_send(sv[0], "abc", 3, fds, 3), 0);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(p[1]);
	assert_int_equal(proto_recv(sv[1], buf, sizeof(buf), got, &ngot, 1), 3);
	assert_int_equal(ngot, 1);
	assert_int_equal(pipe_at_eof(p[0]), 0); /* got[0] still open */
	close(got[0]);
	assert_int_equal(pipe_at_eof(p[0]), 1); /* the other two were closed */

	/* no room at all: fds == NULL */
	assert_int_equal(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(proto_send(sv[0], "d", 1, &fds[1], 1), 0);
	close(fds[1]);
	assert_int_equal(proto_recv(sv[1], buf, sizeof(buf), NULL, NULL, 0), 1);
	assert_int_equal(pipe_at_eof(fds[0]), 1);
	close(fds[0]);
	close(p[0]);
	close(sv[0]);
	close(sv[1]);
}

static void send_no_sigpipe(void **state UNUSED)
{
	int sv[2];
	char big[4096];
	ssize_t n;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	close(sv[1]);
	/* SIGPIPE is at its default (terminate): surviving this is the test */
	assert_int_equal(proto_send(sv[0], "x\n", 2, NULL, 0), -EPIPE);
	close(sv[0]);

	/* a full non-blocking socket: proto_send_once says EAGAIN */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv),
			 0);
	memset(big, 'a', sizeof(big));
	do
		n = proto_send_once(sv[0], big, sizeof(big), NULL, 0);
	while (n > 0);
	assert_int_equal(n, -EAGAIN);
	close(sv[0]);
	close(sv[1]);
}

/* cmocka's assertions must not run off the main thread: threads record
 * the first failing line and the test asserts it after joining. */
#define CHECK(failed, cond)                                                                        \
	do {                                                                                       \
		if (!(cond) && !(failed))                                                          \
			(failed) = __LINE__;                                                       \
	} while (0)

struct drain {
	int sock;
	size_t total;
	int failed;
};

static void *drain_thread(void *arg)
{
	struct drain *d = arg;
	char buf[8192];
	ssize_t n;

	while ((n = proto_recv(d->sock, buf, sizeof(buf), NULL, NULL, 0)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			CHECK(d->failed, buf[i] == (char)('a' + (d->total + (size_t)i) % 26));
		d->total += (size_t)n;
	}
	return NULL;
}

static void send_large(void **state UNUSED)
{
	const size_t len = 4u << 20;
	struct drain d = { .total = 0 };
	int sv[2];
	pthread_t th;
	char *big = malloc(len);

	assert_non_null(big);
	for (size_t i = 0; i < len; i++)
		big[i] = (char)('a' + i % 26);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	d.sock = sv[1];
	assert_int_equal(pthread_create(&th, NULL, drain_thread, &d), 0);
	assert_int_equal(proto_send(sv[0], big, len, NULL, 0), 0);
	close(sv[0]);
	pthread_join(th, NULL);
	assert_int_equal(d.failed, 0);
	assert_int_equal(d.total, len);
	close(sv[1]);
	free(big);
}

/* ------------------------------------------------------------ call */

enum srv_mode { SRV_REPLY, SRV_SILENT, SRV_CLOSE, SRV_GARBAGE, SRV_WRONG_ID, SRV_TRICKLE,
		SRV_FDS_THEN_CLOSE };

struct server {
	int sock;
	enum srv_mode mode;
	int nfds;
	int fds[PROTO_MAX_FDS];
	char request[256]; /* the line the server received */
	int failed;
};

static void *server_thread(void *arg)
{
	struct server *s = arg;
	struct proto_linebuf lb;
	const char *cmd, *code;
	char buf[512], msg[128], *line = NULL, *out;
	size_t len;
	json_t *req, *r;
	ssize_t n;

	proto_linebuf_init(&lb, 0);
	while (proto_linebuf_next(&lb, &line, &len) != 1) {
		n = proto_recv(s->sock, buf, sizeof(buf), NULL, NULL, 0);
		if (n <= 0)
			goto out;
		CHECK(s->failed, proto_linebuf_feed(&lb, buf, (size_t)n) == 0);
	}
	snprintf(s->request, sizeof(s->request), "%s", line);
	req = proto_parse_request(line, len, &cmd, &code, msg, sizeof(msg));
	CHECK(s->failed, req != NULL);
	if (!req)
		goto out_line;
	r = proto_reply_ok(req);
	json_object_set_new(r, "echo", json_string(cmd));
	if (s->mode == SRV_WRONG_ID)
		json_object_set_new(r, "id", json_integer(12345));
	out = proto_encode(r, &len);
	switch (s->mode) {
	case SRV_REPLY:
	case SRV_WRONG_ID:
		CHECK(s->failed, proto_send(s->sock, out, len, s->fds, s->nfds) == 0);
		break;
	case SRV_TRICKLE:
		CHECK(s->failed, proto_send(s->sock, out, 1, s->fds, s->nfds) == 0);
		for (size_t i = 1; i < len; i++) {
			usleep(200);
			CHECK(s->failed, proto_send(s->sock, out + i, 1, NULL, 0) == 0);
		}
		break;
	case SRV_GARBAGE:
		CHECK(s->failed, proto_send(s->sock, "hello\n", 6, NULL, 0) == 0);
		break;
	case SRV_FDS_THEN_CLOSE:
		CHECK(s->failed, proto_send(s->sock, out, 4, s->fds, s->nfds) == 0);
		break;
	case SRV_SILENT:
	case SRV_CLOSE:
		break;
	}
	free(out);
	json_decref(r);
	json_decref(req);
out_line:
	free(line);
out:
	proto_linebuf_free(&lb);
	if (s->mode == SRV_SILENT) {
		/* hold the connection open until the client gives up */
		while (proto_recv(s->sock, buf, sizeof(buf), NULL, NULL, 0) > 0)
			;
	}
	shutdown(s->sock, SHUT_RDWR);
	return NULL;
}

static json_t *call_with(struct server *s, int timeout_ms, int *fds, int *nfds, int maxfds,
			 int *err)
{
	int sv[2];
	pthread_t th;
	json_t *req, *r;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	s->sock = sv[1];
	assert_int_equal(pthread_create(&th, NULL, server_thread, s), 0);
	req = json_pack("{s:i, s:s, s:i}", "v", 1, "cmd", "hello", "id", 3);
	r = proto_call(sv[0], req, timeout_ms, fds, nfds, maxfds, err);
	json_decref(req);
	close(sv[0]);
	pthread_join(th, NULL);
	close(sv[1]);
	assert_int_equal(s->failed, 0);
	return r;
}

static void call_reply_with_fds(void **state UNUSED)
{
	struct server s = { .mode = SRV_REPLY, .nfds = 2 };
	int fds[PROTO_MAX_FDS], nfds = 99, err = 1;
	json_t *r;

	s.fds[0] = memfd_with("global");
	s.fds[1] = memfd_with("client");
	r = call_with(&s, 2000, fds, &nfds, PROTO_MAX_FDS, &err);
	assert_non_null(r);
	assert_int_equal(err, 0);
	assert_string_equal(s.request, "{\"v\":1,\"cmd\":\"hello\",\"id\":3}");
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 3);
	assert_string_equal(json_string_value(json_object_get(r, "echo")), "hello");
	assert_int_equal(nfds, 2);
	expect_memfd(fds[0], "global");
	expect_memfd(fds[1], "client");
	assert_true(fd_cloexec(fds[0]) && fd_cloexec(fds[1]));
	close(fds[0]);
	close(fds[1]);
	close(s.fds[0]);
	close(s.fds[1]);
	json_decref(r);
}

static void call_trickle(void **state UNUSED)
{
	struct server s = { .mode = SRV_TRICKLE, .nfds = 1 };
	int fds[1], nfds = 0, err;
	json_t *r;

	s.fds[0] = memfd_with("x");
	r = call_with(&s, 5000, fds, &nfds, 1, &err);
	assert_non_null(r);
	assert_int_equal(nfds, 1);
	expect_memfd(fds[0], "x");
	close(fds[0]);
	close(s.fds[0]);
	json_decref(r);
}

static void call_unexpected_fds_closed(void **state UNUSED)
{
	struct server s = { .mode = SRV_REPLY, .nfds = 1 };
	int p[2], err;
	json_t *r;

	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	s.fds[0] = p[1];
	r = call_with(&s, 2000, NULL, NULL, 0, &err);
	assert_non_null(r);
	close(p[1]);
	assert_int_equal(pipe_at_eof(p[0]), 1);
	close(p[0]);
	json_decref(r);
}

static void call_timeout(void **state UNUSED)
{
	struct server s = { .mode = SRV_SILENT };
	int fds[2], nfds = 5, err = 0;
	int64_t t0 = now_ms(), dt;

	assert_null(call_with(&s, 150, fds, &nfds, 2, &err));
	dt = now_ms() - t0;
	assert_int_equal(err, -ETIMEDOUT);
	assert_int_equal(nfds, 0);
	assert_true(dt >= 140 && dt < 3000);
}

static void call_failures(void **state UNUSED)
{
	struct server s = { .mode = SRV_CLOSE };
	int p[2], fds[1], nfds = 0, err = 0;

	assert_null(call_with(&s, 2000, NULL, NULL, 0, &err));
	assert_int_equal(err, -ECONNRESET);

	s.mode = SRV_GARBAGE;
	assert_null(call_with(&s, 2000, NULL, NULL, 0, &err));
	assert_int_equal(err, -EPROTO);

	s.mode = SRV_WRONG_ID;
	assert_null(call_with(&s, 2000, NULL, NULL, 0, &err));
	assert_int_equal(err, -EPROTO);

	/* descriptors received before the failure are closed */
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	s.mode = SRV_FDS_THEN_CLOSE;
	s.nfds = 1;
	s.fds[0] = p[1];
	assert_null(call_with(&s, 2000, fds, &nfds, 1, &err));
	assert_int_equal(err, -ECONNRESET);
	assert_int_equal(nfds, 0);
	close(p[1]);
	assert_int_equal(pipe_at_eof(p[0]), 1);
	close(p[0]);

	/* a dead socket */
	{
		json_t *req = json_pack("{s:i, s:s}", "v", 1, "cmd", "status");

		assert_null(proto_call(-1, req, 100, NULL, NULL, 0, &err));
		assert_int_equal(err, -EBADF);
		json_decref(req);
	}
}

/* A server that answers before reading and closes (the daemon over its
 * connection limit): the reply is still read although the send fails. */
static void call_reply_after_close(void **state UNUSED)
{
	const char *line = "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"limit\","
			   "\"message\":\"too many clients\"}}\n";
	json_t *req, *r;
	int sv[2], err = 0;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(proto_send(sv[1], line, strlen(line), NULL, 0), 0);
	close(sv[1]);
	req = json_pack("{s:i, s:s, s:i}", "v", 1, "cmd", "status", "id", 1);
	r = proto_call(sv[0], req, 1000, NULL, NULL, 0, &err);
	assert_non_null(r);
	assert_int_equal(err, 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
			    "limit");
	json_decref(r);
	/* nothing more to read: the send error is what is reported */
	assert_null(proto_call(sv[0], req, 1000, NULL, NULL, 0, &err));
	assert_int_equal(err, -EPIPE);
	json_decref(req);
	close(sv[0]);
}

/* ------------------------------------------------------------ connect */

static char tmpdir[64];

static int setup_tmpdir(void **state UNUSED)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_proto.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmpdir(void **state UNUSED)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static int listen_at(const char *path, int backlog)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, backlog), 0);
	return fd;
}

static void connect_cases(void **state UNUSED)
{
	char path[128], longpath[200];
	int lfd, fd, a;

	snprintf(path, sizeof(path), "%s/missing.sock", tmpdir);
	assert_int_equal(proto_connect(path, 500), -ENOENT);
	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(proto_connect(longpath, 500), -ENAMETOOLONG);
	assert_int_equal(proto_connect("", 500), -EINVAL);

	snprintf(path, sizeof(path), "%s/d.sock", tmpdir);
	lfd = listen_at(path, 8);
	fd = proto_connect(path, 500);
	assert_true(fd >= 0);
	assert_true(fd_cloexec(fd));
	a = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(a >= 0);
	/* SO_SNDTIMEO was reset */
	{
		struct timeval tv;
		socklen_t sl = sizeof(tv);

		assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &sl), 0);
		assert_true(tv.tv_sec == 0 && tv.tv_usec == 0);
	}
	close(a);
	close(fd);

	/* $JUSTITIA_SOCKET */
	setenv(PROTO_SOCKET_ENV, path, 1);
	assert_string_equal(proto_socket_path(), path);
	fd = proto_connect(NULL, 0);
	assert_true(fd >= 0);
	close(fd);
	setenv(PROTO_SOCKET_ENV, "", 1);
	assert_string_equal(proto_socket_path(), PROTO_DEFAULT_SOCKET);
	unsetenv(PROTO_SOCKET_ENV);
	assert_string_equal(proto_socket_path(), PROTO_DEFAULT_SOCKET);

	/* a stale socket: the file exists, nobody listens */
	close(lfd);
	assert_int_equal(proto_connect(path, 500), -ECONNREFUSED);
}

static void connect_backlog_timeout(void **state UNUSED)
{
	char path[128];
	int lfd, fds[8], n = 0, r = 0;
	int64_t t0;

	snprintf(path, sizeof(path), "%s/full.sock", tmpdir);
	lfd = listen_at(path, 0);
	/* nobody accepts: the backlog fills up and connect() has to wait */
	t0 = now_ms();
	while (n < 8) {
		r = proto_connect(path, 100);
		if (r < 0)
			break;
		fds[n++] = r;
	}
	assert_int_equal(r, -ETIMEDOUT);
	assert_true(now_ms() - t0 >= 90);
	while (n > 0)
		close(fds[--n]);
	close(lfd);
}

static void call_over_connect(void **state UNUSED)
{
	struct server s = { .mode = SRV_REPLY };
	char path[128];
	pthread_t th;
	int lfd, fd, err;
	json_t *req, *r;

	snprintf(path, sizeof(path), "%s/call.sock", tmpdir);
	lfd = listen_at(path, 8);
	fd = proto_connect(path, 1000);
	assert_true(fd >= 0);
	s.sock = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(s.sock >= 0);
	assert_int_equal(pthread_create(&th, NULL, server_thread, &s), 0);
	req = json_pack("{s:i, s:s}", "v", 1, "cmd", "version");
	r = proto_call(fd, req, 1000, NULL, NULL, 0, &err);
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(r, "echo")), "version");
	assert_null(json_object_get(r, "id"));
	json_decref(r);
	json_decref(req);
	pthread_join(th, NULL);
	assert_int_equal(s.failed, 0);
	close(s.sock);
	close(fd);
	close(lfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(send_recv_fds),
		cmocka_unit_test(recv_closes_surplus_fds),
		cmocka_unit_test(send_no_sigpipe),
		cmocka_unit_test(send_large),
		cmocka_unit_test(call_reply_with_fds),
		cmocka_unit_test(call_trickle),
		cmocka_unit_test(call_unexpected_fds_closed),
		cmocka_unit_test(call_timeout),
		cmocka_unit_test(call_failures),
		cmocka_unit_test(call_reply_after_close),
		cmocka_unit_test_setup_teardown(connect_cases, setup_tmpdir, teardown_tmpdir),
		cmocka_unit_test_setup_teardown(connect_backlog_timeout, setup_tmpdir,
						teardown_tmpdir),
		cmocka_unit_test_setup_teardown(call_over_connect, setup_tmpdir, teardown_tmpdir),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

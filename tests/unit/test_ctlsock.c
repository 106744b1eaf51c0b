// SPDX-License-Identifier: MIT
/* Unit tests of daemon/ctl*.c, the daemon side of the control socket,
 * linked with the daemon's objects (not main.o) and driven through a real
 * socket in a temporary runtime directory, with the event loop turned by
 * hand: requests are answered in order however the bytes arrive, every
 * invalid line gets its error reply, an overlong request is answered
 * too_large and the connection closed, "hello" hands over the two memory
 * segments (the global one read-only) with SCM_RIGHTS, once, and a shim's
 * flows go away with its connection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../../daemon/controller.h"
#include "../../daemon/ctl.h"
#include "../../daemon/justitiad.h"
#include "../../daemon/wiring.h"
#include "clock.h"
#include "log.h"
#include "proto.h"

uint64_t daemon_now_ns(void)
{
	return clock_now_ns();
}

static struct daemon d;
static struct ctl c;

/* ctl_open with the daemon's view of @d, as main.c does */
static int open_ctl(void)
{
	struct ctl_env env = wiring_ctl_env(&d);

	return ctl_open(&c, &env);
}
static char dir[] = "/tmp/test_ctl.XXXXXX";

static int setup(void **state)
{
	memset(&d, 0, sizeof(d));
	config_init_defaults(&d.cfg);
	assert_non_null(mkdtemp(dir));
	snprintf(d.cfg.runtime_dir, sizeof(d.cfg.runtime_dir), "%s/run", dir);
	snprintf(d.cfg.socket, sizeof(d.cfg.socket), "%s/run/j.sock", dir);
	d.cfg.limits.max_flows = 16;
	d.cfg.limits.max_flows_per_client = 4;
	d.cfg.devices = calloc(1, sizeof(*d.cfg.devices));
	d.cfg.n_devices = 1;
	d.cfg.devices[0] = (struct config_device){ .name = "tst0", .port = 1, .gid_index = -1,
						   .max_rate_bps = 1000000000, .chunk_latency = 4096,
						   .chunk_default = 1 << 20 };
	d.loop = ev_loop_new(EVFLAG_AUTO);
	d.start_ns = daemon_now_ns();
	d.instance = 0x2468;
	assert_int_equal(flows_init(&d.flows, &d.cfg, 7), 0);
	assert_int_equal(open_ctl(), 0);
	return 0;
}

static int teardown(void **state)
{
	ctl_close(&c);
	flows_fini(&d.flows);
	config_free(&d.cfg);
	ev_loop_destroy(d.loop);
	rmdir(d.cfg.runtime_dir);
	rmdir(dir);
	strcpy(dir, "/tmp/test_ctl.XXXXXX");
	return 0;
}

static int client(void)
{
	int fd = proto_connect(d.cfg.socket, 1000);

	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0); /* the loop is ours to turn */
	ev_run(d.loop, EVRUN_NOWAIT); /* accept */
	return fd;
}

static void say(int fd, const char *s)
{
	assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

/* The next reply line on @fd, as JSON (NULL: the daemon closed the
 * connection); descriptors that came with it into @fds. */
static char pending[1 << 16];
static size_t n_pending;

static json_t *reply(int fd, int *fds, int *nfds)
{
	int got_fds = 0;

	for (int i = 0; i < 1000; i++) {
		char *nl = memchr(pending, '\n', n_pending);
		ssize_t n;

		if (nl) {
			json_t *j = json_loadb(pending, (size_t)(nl - pending), 0, NULL);

			n_pending -= (size_t)(nl + 1 - pending);
			memmove(pending, nl + 1, n_pending);
			assert_non_null(j);
			if (nfds)
				*nfds = got_fds;
			return j;
		}
		ev_run(d.loop, EVRUN_NOWAIT);
		{
			int more = 0;

			n = proto_recv(fd, pending + n_pending, sizeof(pending) - n_pending,
				       fds ? fds + got_fds : NULL, &more, fds ? 4 - got_fds : 0);
			if (n == 0)
				return NULL;
			if (n > 0)
				n_pending += (size_t)n;
			got_fds += more;
		}
	}
	fail_msg("no reply");
	return NULL;
}

static const char *err_code(json_t *r)
{
	return json_string_value(json_object_get(json_object_get(r, "error"), "code"));
}

static void answers_in_order_however_the_bytes_come(void **state)
{
	int fd = client();
	json_t *r;

	n_pending = 0;
	/* two requests in one write, a third cut in two */
	say(fd, "{\"v\":1,\"cmd\":\"version\",\"id\":1}\n{\"v\":1,\"cmd\":\"status\",\"id\":2}\n"
		"{\"v\":1,\"cmd\":\"ver");
	r = reply(fd, NULL, NULL);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 1);
	json_decref(r);
	r = reply(fd, NULL, NULL);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 2);
	json_decref(r);
	say(fd, "sion\",\"id\":\"three\"}\n\n  \r\n"); /* blank lines get no reply */
	r = reply(fd, NULL, NULL);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_string_equal(json_string_value(json_object_get(r, "id")), "three");
	json_decref(r);
	say(fd, "{\"v\":1,\"cmd\":\"version\",\"id\":4}\n");
	r = reply(fd, NULL, NULL);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 4);
	json_decref(r);
	close(fd);
	ev_run(d.loop, EVRUN_NOWAIT);
	assert_int_equal(c.n_clients, 0);
}

static void invalid_lines_get_their_error(void **state)
{
	static const struct {
		const char *line, *code;
	} cases[] = {
		{ "not json\n", PROTO_E_BAD_JSON },
		{ "[1,2]\n", PROTO_E_BAD_REQUEST },
		{ "{\"v\":2,\"cmd\":\"version\",\"id\":5}\n", PROTO_E_BAD_VERSION },
		{ "{\"v\":1,\"cmd\":\"nope\"}\n", PROTO_E_UNKNOWN_COMMAND },
		{ "{\"v\":1,\"cmd\":\"version\",\"extra\":1}\n", PROTO_E_BAD_REQUEST },
		{ "{\"v\":1,\"cmd\":\"register_qp\",\"device\":\"tst0\",\"qpn\":1,"
		  "\"qp_type\":\"RC\"}\n", PROTO_E_BAD_REQUEST }, /* hello first */
		{ "{\"v\":1,\"cmd\":\"unregister_qp\",\"flow\":1}\n", NULL },
	};
	int fd = client();

	n_pending = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *r;

		say(fd, cases[i].line);
		r = reply(fd, NULL, NULL);
		assert_non_null(r);
		assert_true(json_is_false(json_object_get(r, "ok")));
		if (cases[i].code)
			assert_string_equal(err_code(r), cases[i].code);
		json_decref(r);
	}
	/* the connection still serves */
	say(fd, "{\"v\":1,\"cmd\":\"version\",\"id\":5}\n");
	{
		json_t *r = reply(fd, NULL, NULL);

		assert_true(json_is_true(json_object_get(r, "ok")));
		json_decref(r);
	}
	close(fd);
}

static void overlong_request_closes(void **state)
{
	size_t big = PROTO_MAX_LINE_DEFAULT + 100;
	char *line = malloc(big + 1);
	int fd = client();
	json_t *r;

	n_pending = 0;
	say(fd, "{\"v\":1,\"cmd\":\"version\",\"id\":1}\n"); /* answered first */
	memset(line, ' ', big);
	line[big] = 0;
	for (size_t off = 0; off < big;) {
		ssize_t n = send(fd, line + off, big - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0)
			off += (size_t)n;
		ev_run(d.loop, EVRUN_NOWAIT);
		if (n < 0 && c.n_clients == 0)
			break;
	}
	free(line);
	r = reply(fd, NULL, NULL);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 1);
	json_decref(r);
	r = reply(fd, NULL, NULL);
	assert_non_null(r);
	assert_string_equal(err_code(r), PROTO_E_TOO_LARGE);
	json_decref(r);
	assert_null(reply(fd, NULL, NULL)); /* and closed */
	assert_int_equal(c.n_clients, 0);
	close(fd);
}

static void hello_hands_over_the_segments(void **state)
{
	int fd = client(), fds[4], nfds = 0;
	json_t *r;
	struct stat st;
	void *p;

	n_pending = 0;
	say(fd, "{\"v\":1,\"cmd\":\"hello\",\"id\":1,\"pid\":1,\"comm\":\"t\",\"role\":\"shim\"}\n");
	r = reply(fd, fds, &nfds);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(json_integer_value(json_object_get(r, "instance")), 0x2468 >> 1);
	assert_int_equal(nfds, 2);
	/* the global segment: read-only, as big as the reply says */
	assert_int_equal(fcntl(fds[0], F_GETFL) & O_ACCMODE, O_RDONLY);
	assert_int_equal(fstat(fds[0], &st), 0);
	assert_int_equal(st.st_size, json_integer_value(json_object_get(
					     json_object_get(r, "shm"), "global_size")));
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	assert_ptr_equal(p, MAP_FAILED);
	/* the client's own */
	assert_int_equal(fstat(fds[1], &st), 0);
	assert_int_equal(st.st_size, json_integer_value(json_object_get(
					     json_object_get(r, "shm"), "client_size")));
	close(fds[0]);
	close(fds[1]);
	json_decref(r);
	/* once */
	say(fd, "{\"v\":1,\"cmd\":\"hello\",\"id\":2,\"pid\":1,\"comm\":\"t\",\"role\":\"shim\"}\n");
	r = reply(fd, fds, &nfds);
	assert_string_equal(err_code(r), PROTO_E_BAD_REQUEST);
	assert_int_equal(nfds, 0);
	json_decref(r);
	/* a flow, which goes with the connection */
	say(fd, "{\"v\":1,\"cmd\":\"register_qp\",\"id\":3,\"device\":\"tst0\",\"qpn\":17,"
		"\"qp_type\":\"RC\",\"class\":\"bw\"}\n");
	r = reply(fd, NULL, NULL);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_true(json_integer_value(json_object_get(r, "flow")) > 0);
	json_decref(r);
	assert_non_null(d.flows.procs);
	assert_int_equal(d.flows.procs->n_flows, 1);
	close(fd);
	ev_run(d.loop, EVRUN_NOWAIT);
	assert_int_equal(c.n_clients, 0);
	assert_null(d.flows.procs);
}

/* The socket is the owner's only (no socket_group): 0660 in a private
 * directory. */
static void socket_is_private(void **state)
{
	struct stat st;

	assert_int_equal(stat(d.cfg.socket, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0660);
	assert_int_equal(stat(d.cfg.runtime_dir, &st), 0);
	assert_int_equal(st.st_mode & 0007, 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(answers_in_order_however_the_bytes_come),
		T(invalid_lines_get_their_error),
		T(overlong_request_closes),
		T(hello_hands_over_the_segments),
		T(socket_is_private),
	};

	log_init("test_ctl", LOG_LVL_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

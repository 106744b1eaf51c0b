// SPDX-License-Identifier: MIT
/* Unit tests of daemon/ctl*.c, the control socket, end to end over a real
 * UNIX socket in a temporary directory: the daemon's loop and the test's
 * non-blocking clients run in one thread.  A client closing in the middle
 * of dispatch, flows replies in pages whatever max_flows is, integers that
 * jansson's "i" would wrap, the socket directory's mode.  #includes ctl.c
 * and links the daemon's other objects (not main.o). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <time.h>

#include "../../daemon/ctl.c"
#include "../../daemon/ctlview.h"
#include "../../daemon/justitiad.h"
#include "../../daemon/wiring.h"

uint64_t daemon_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct daemon d;
static struct ctl c;

/* ctl_open with the daemon's view of @d, as main.c does */
static int open_ctl(void)
{
	struct ctl_env env = wiring_ctl_env(&d);

	return ctl_open(&c, &env);
}
static char dir[64];

static void pump(int ms)
{
	for (int i = 0; i < ms; i++) {
		ev_run(d.loop, EVRUN_NOWAIT);
		usleep(1000);
	}
	ev_run(d.loop, EVRUN_NOWAIT);
}

static int start(uint32_t max_flows)
{
	memset(&d, 0, sizeof(d));
	memset(&c, 0, sizeof(c));
	config_init_defaults(&d.cfg);
	snprintf(dir, sizeof(dir), "/tmp/jctl-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(d.cfg.runtime_dir, sizeof(d.cfg.runtime_dir), "%s", dir);
	snprintf(d.cfg.socket, sizeof(d.cfg.socket), "%s/s.sock", dir);
	d.cfg.limits.max_flows = max_flows;
	d.cfg.limits.max_flows_per_client = max_flows;
	d.cfg.devices = calloc(1, sizeof(*d.cfg.devices));
	d.cfg.n_devices = 1;
	d.cfg.devices[0] = (struct config_device){ .name = "tst0", .port = 1, .gid_index = -1,
						   .max_rate_bps = 10000000000ull,
						   .chunk_latency = 4096, .chunk_default = 1 << 20 };
	d.loop = ev_loop_new(EVFLAG_AUTO);
	d.start_ns = daemon_now_ns();
	d.config_path = "test";
	d.ctl = &c;
	assert_int_equal(flows_init(&d.flows, &d.cfg, 7), 0);
	assert_int_equal(open_ctl(), 0);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	return start(64);
}

static int teardown(void **state)
{
	char path[128];

	(void)state;
	ctl_close(&c);
	flows_fini(&d.flows);
	config_free(&d.cfg);
	ev_loop_destroy(d.loop);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
	return 0;
}

static int cli(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d.cfg.socket);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	pump(2);
	return fd;
}

static void say(int fd, const char *s)
{
	assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

/* The next reply line (pumping the daemon meanwhile), or NULL if the
 * daemon closed or nothing came within 5 s. */
static json_t *reply(int fd)
{
	static char buf[4 << 20];
	static size_t have;
	static int owner = -1;
	char *nl;

	if (owner != fd)
		have = 0;
	owner = fd;
	for (int i = 0; i < 5000; i++) {
		ssize_t n;

		nl = memchr(buf, '\n', have);
		if (nl) {
			json_t *j = json_loadb(buf, (size_t)(nl - buf), 0, NULL);

			have -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, have);
			assert_non_null(j);
			return j;
		}
		n = recv(fd, buf + have, sizeof(buf) - have, MSG_DONTWAIT);
		if (n == 0)
			return NULL;
		if (n > 0) {
			have += (size_t)n;
			continue;
		}
		pump(1);
	}
	return NULL;
}

static bool ok(const json_t *r)
{
	return r && json_is_true(json_object_get(r, "ok"));
}

static const char *code(const json_t *r)
{
	return json_string_value(json_object_get(json_object_get(r, "error"), "code"));
}

/* ------------------------------------------------------------ tests */

/* Two requests in one write, then close: the first reply fails (EPIPE),
 * which closes the client inside client_read_cb's loop, which then looked
 * at the freed client (ASan: heap-use-after-free). */
static void close_mid_dispatch(void **state)
{
	json_t *r;
	int fd;

	(void)state;
	for (int round = 0; round < 20; round++) {
		fd = cli();
		say(fd, "{\"v\":1,\"cmd\":\"status\"}\n{\"v\":1,\"cmd\":\"version\"}\n"
			"{\"v\":1,\"cmd\":\"status\"}\n");
		close(fd);
		pump(2);
	}
	pump(5);
	assert_int_equal(c.n_clients, 0);
	assert_null(c.graveyard);
	/* and the daemon still answers */
	fd = cli();
	say(fd, "{\"v\":1,\"cmd\":\"version\"}\n");
	r = reply(fd);
	assert_true(ok(r));
	json_decref(r);
	close(fd);
}

/* A flows reply must fit the per-client output cap (1 MiB): at about 400
 * bytes a flow that broke near 2,700 flows, below the default max_flows. */
static void flows_in_pages(void **state)
{
	const uint32_t n = 4096;
	json_t *r, *req;
	json_int_t prev = 0;
	size_t got = 0, pages = 0;
	struct proc *p;
	int fd, rc;

	(void)state;
	teardown(NULL);
	start(n);
	p = flows_proc_new(&d.flows, 4242, 0, "elephant-with-a-long-name", &rc);
	assert_non_null(p);
	for (uint32_t i = 0; i < n; i++) {
		struct flow_req fr = { .device = "tst0", .port = 1, .qpn = 100 + i,
				       .qp_type = "RC", .cls = "bandwidth", .split_qpn = -1 };
		const char *cd;
		char msg[160];

		assert_non_null(flows_register(&d.flows, p, &fr, &cd, msg, sizeof(msg)));
	}
	fd = cli();
	req = json_pack("{s:i, s:s}", "v", 1, "cmd", "flows");
	for (;;) {
		char *line = json_dumps(req, JSON_COMPACT);
		json_t *next, *fl;
		size_t i;

		say(fd, line);
		say(fd, "\n");
		free(line);
		r = reply(fd);
		if (!ok(r))
			fail_msg("page %zu: no reply (disconnected?)", pages);
		pages++;
		json_array_foreach(json_object_get(r, "flows"), i, fl) {
			json_int_t id = json_integer_value(json_object_get(fl, "id"));

			assert_true(id > prev); /* in order of ids, none twice */
			prev = id;
			got++;
		}
		next = json_object_get(r, "next");
		if (json_is_null(next)) {
			json_decref(r);
			break;
		}
		assert_true(json_is_object(next));
		json_object_update(req, next);
		json_decref(r);
		assert_true(pages < 100);
	}
	json_decref(req);
	assert_int_equal(got, n);
	assert_true(pages >= n / FLOWS_PAGE_MAX);
	/* a page size of one's own */
	say(fd, "{\"v\":1,\"cmd\":\"flows\",\"limit\":3,\"after\":4090}\n");
	r = reply(fd);
	assert_true(ok(r));
	assert_int_equal(json_array_size(json_object_get(r, "flows")), 3);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "next"), "after")),
			 4093);
	json_decref(r);
	say(fd, "{\"v\":1,\"cmd\":\"flows\",\"limit\":100000}\n");
	r = reply(fd);
	assert_string_equal(code(r), "bad_request");
	json_decref(r);
	close(fd);
}

/* jansson's "i" converts to int: 4294967297 became 1 and passed the
 * range check.  Values beyond int are out of range, not wrapped. */
static void no_wrapping_integers(void **state)
{
	static const char *const bad[] = {
		"{\"v\":1,\"cmd\":\"register_qp\",\"device\":\"tst0\",\"port\":4294967297,"
		"\"qpn\":1,\"qp_type\":\"RC\"}\n",
		"{\"v\":1,\"cmd\":\"register_qp\",\"device\":\"tst0\",\"weight\":4294967297,"
		"\"qpn\":2,\"qp_type\":\"RC\"}\n",
		"{\"v\":1,\"cmd\":\"register_qp\",\"device\":\"tst0\",\"weight\":-4294967295,"
		"\"qpn\":3,\"qp_type\":\"RC\"}\n",
	};
	json_t *r;
	int fd;

	(void)state;
	fd = cli();
	say(fd, "{\"v\":1,\"cmd\":\"hello\",\"pid\":4294967297,\"comm\":\"t\",\"role\":\"shim\"}\n");
	r = reply(fd);
	assert_true(ok(r));
	json_decref(r);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		say(fd, bad[i]);
		r = reply(fd);
		if (ok(r))
			fail_msg("accepted %s", bad[i]);
		assert_string_equal(code(r), "bad_request");
		json_decref(r);
	}
	/* in range: registered, with the weight asked for */
	say(fd, "{\"v\":1,\"cmd\":\"register_qp\",\"device\":\"tst0\",\"port\":1,\"weight\":7,"
		"\"qpn\":4,\"qp_type\":\"RC\"}\n");
	r = reply(fd);
	assert_true(ok(r));
	assert_int_equal(flows_find(&d.flows, (uint32_t)json_integer_value(
						      json_object_get(r, "flow")))->weight, 7);
	json_decref(r);
	close(fd);
	pump(5);
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 07777;
}

/* The daemon's own directory is tightened; one it shares with other files
 * ("/run") keeps its mode; one everybody may write to ("/tmp") is refused. */
static void socket_directory(void **state)
{
	char shared[96], other[128], world[96];

	(void)state;
	assert_int_equal(mode_of(dir), 0700);
	ctl_close(&c);

	snprintf(shared, sizeof(shared), "%s/shared", dir);
	assert_int_equal(mkdir(shared, 0755), 0);
	assert_int_equal(chmod(shared, 0755), 0);
	snprintf(other, sizeof(other), "%s/somebody-elses-file", shared);
	fclose(fopen(other, "w"));
	snprintf(d.cfg.runtime_dir, sizeof(d.cfg.runtime_dir), "%s", shared);
	snprintf(d.cfg.socket, sizeof(d.cfg.socket), "%s/s.sock", shared);
	assert_int_equal(open_ctl(), 0);
	assert_int_equal(mode_of(shared), 0755); /* was 0700 before the fix */
	assert_int_equal(mode_of(d.cfg.socket) & 0777, 0660);
	ctl_close(&c);

	/* only our (stale) socket in it: ours, tightened */
	assert_int_equal(unlink(other), 0);
	assert_int_equal(open_ctl(), 0);
	assert_int_equal(mode_of(shared), 0700);
	ctl_close(&c);

	snprintf(world, sizeof(world), "%s/world", dir);
	assert_int_equal(mkdir(world, 0700), 0);
	assert_int_equal(chmod(world, 01777), 0);
	snprintf(d.cfg.runtime_dir, sizeof(d.cfg.runtime_dir), "%s", world);
	snprintf(d.cfg.socket, sizeof(d.cfg.socket), "%s/s.sock", world);
	assert_int_equal(open_ctl(), -EPERM);
	assert_int_equal(mode_of(world), 01777);
	/* teardown closes a ctl that is not open */
	c.lfd = -1;
}

/* Administrators always get an answer: beyond max_clients, 8 reserved
 * connections (which may not register flows); when those are taken too, a
 * new one closes the reserved connection idle longest.  The test runs as
 * one uid, which is the daemon's own, so every connection is an admin's. */
static void admin_reserve(void **state)
{
	int fds[4 + ADMIN_RESERVE + 1], fd;
	json_t *r;

	(void)state;
	d.cfg.limits.max_clients = 4;
	d.cfg.limits.max_clients_per_uid = 4;
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]) - 1; i++) {
		fds[i] = cli();
		pump(2);
	}
	assert_int_equal(c.n_clients, 4 + ADMIN_RESERVE);
	assert_int_equal(c.n_reserved, ADMIN_RESERVE);
	/* a reserved connection answers status, refuses hello */
	say(fds[4], "{\"v\":1,\"cmd\":\"status\"}\n");
	r = reply(fds[4]);
	assert_true(ok(r));
	json_decref(r);
	say(fds[5], "{\"v\":1,\"cmd\":\"hello\",\"pid\":1,\"comm\":\"x\",\"role\":\"shim\"}\n");
	r = reply(fds[5]);
	assert_string_equal(code(r), "limit");
	json_decref(r);
	/* all taken: the next one evicts the reserved connection idle longest
	 * (fds[6]: fds[4] and fds[5] were active just now) and is answered */
	fds[4 + ADMIN_RESERVE] = fd = cli();
	say(fd, "{\"v\":1,\"cmd\":\"status\"}\n");
	r = reply(fd);
	assert_true(ok(r));
	json_decref(r);
	r = reply(fds[6]);
	assert_string_equal(code(r), "limit");
	json_decref(r);
	assert_null(reply(fds[6])); /* closed */
	assert_int_equal(c.n_reserved, ADMIN_RESERVE);
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		close(fds[i]);
	pump(5);
	assert_int_equal(c.n_clients, 0);
	assert_int_equal(c.n_reserved, 0);
}

/* Connections that say nothing, or half a line, are closed after
 * idle_timeout_ms with a timeout error; a shim's idle connection is not. */
static void idle_and_stalled(void **state)
{
	int quiet, half, shim;
	json_t *r;

	(void)state;
	ctl_close(&c);
	d.cfg.limits.idle_timeout_ms = 200;
	assert_int_equal(open_ctl(), 0);
	quiet = cli();
	half = cli();
	say(half, "{\"v\":1,\"cmd\":\"sta");
	shim = cli();
	say(shim, "{\"v\":1,\"cmd\":\"hello\",\"pid\":1,\"comm\":\"x\",\"role\":\"shim\"}\n");
	r = reply(shim);
	assert_true(ok(r));
	json_decref(r);
	r = reply(quiet);
	assert_string_equal(code(r), "timeout");
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(r, "error"),
								   "message")),
			       "no request"));
	json_decref(r);
	assert_null(reply(quiet));
	r = reply(half);
	assert_string_equal(code(r), "timeout");
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(r, "error"),
								   "message")),
			       "incomplete"));
	json_decref(r);
	assert_int_equal(c.n_clients, 1); /* the shim, idle as long as it likes */
	assert_non_null(c.clients->proc);
	say(shim, "{\"v\":1,\"cmd\":\"version\"}\n");
	r = reply(shim);
	assert_true(ok(r));
	json_decref(r);
	close(quiet);
	close(half);
	close(shim);
	pump(5);
}

/* A client that asks and never reads: disconnected once 1 MiB of replies
 * wait for it; the daemon's buffered output returns to zero. */
static void never_reads(void **state)
{
	struct proc *p;
	json_t *r;
	int fd, rc;

	(void)state;
	teardown(NULL);
	start(2048);
	p = flows_proc_new(&d.flows, 4343, 0, "x", &rc);
	for (uint32_t i = 0; i < 2000; i++) {
		struct flow_req fr = { .device = "tst0", .port = 1, .qpn = i, .qp_type = "RC",
				       .cls = "bw", .split_qpn = -1 };
		const char *cd;
		char msg[160];

		assert_non_null(flows_register(&d.flows, p, &fr, &cd, msg, sizeof(msg)));
	}
	fd = cli();
	for (int i = 0; i < 40; i++) { /* fails once the daemon hung up: expected */
		if (send(fd, "{\"v\":1,\"cmd\":\"flows\"}\n", 22, MSG_NOSIGNAL) < 0)
			break;
		pump(2);
	}
	pump(20);
	assert_int_equal(c.n_clients, 0);
	assert_int_equal(c.out_total, 0);
	close(fd);
	fd = cli();
	say(fd, "{\"v\":1,\"cmd\":\"version\"}\n");
	r = reply(fd);
	assert_true(ok(r));
	json_decref(r);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(close_mid_dispatch, setup, teardown),
		cmocka_unit_test_setup_teardown(flows_in_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(no_wrapping_integers, setup, teardown),
		cmocka_unit_test_setup_teardown(socket_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(admin_reserve, setup, teardown),
		cmocka_unit_test_setup_teardown(idle_and_stalled, setup, teardown),
		cmocka_unit_test_setup_teardown(never_reads, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	log_init("test_ctl", LOG_LVL_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

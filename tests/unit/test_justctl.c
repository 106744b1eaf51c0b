// SPDX-License-Identifier: MIT
/* Unit tests of justctl: tools/justctl.c and ctl_daemon.c, whole runs
 * (exit codes, and against a fake daemon on a temporary socket: paged
 * flows, metrics, watch, calibrate).  Arguments -> request are
 * test_ctl_args.c, replies as text test_ctl_show.c, numbers test_ctl_text.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* justctl.c's main() becomes justctl_main(); its modules and proto.c are
 * included too so that this test links alone (tests/unit/test_*.c are
 * single objects). */
#define main justctl_main
int justctl_main(int argc, char **argv);
#include "../../tools/justctl.c"
#undef main
#include "../../tools/ctl_args.c"
#include "../../tools/ctl_daemon.c"
#include "../../tools/ctl_show.c"
#include "../../tools/ctl_text.c"
#include "../../common/proto.c"
#include "../../common/proto_client.c"
#include "../../tools/ctl_metrics.c"
#include "ctl_test.h"

#include <pthread.h>
#include <sys/un.h>

#define UNUSED __attribute__((unused))

/* ------------------------------------------------------------ whole runs */

struct run {
	int rc;
	char *out, *err;
};

static struct run run_args(const char *args)
{
	char store[512], *argv[24];
	struct capture out, err;
	struct run r;
	int argc = split(args, argv, 24, store, sizeof(store));

	cap_open(&out);
	cap_open(&err);
	r.rc = ctl_main(argc, argv, out.f, err.f);
	r.out = strdup(cap_text(&out));
	r.err = strdup(cap_text(&err));
	cap_free(&out);
	cap_free(&err);
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static void exit_codes(void **state UNUSED)
{
	struct run r;

	r = run_args("justctl");
	assert_int_equal(r.rc, 2);
	assert_non_null(strstr(r.err, "justctl: no command given\nUsage: justctl"));
	run_free(&r);

	r = run_args("justctl -h");
	assert_int_equal(r.rc, 0);
	assert_true(!strncmp(r.out, "Usage: justctl", 14));
	assert_non_null(strstr(r.out, "set weight N flow ID"));
	assert_string_equal(r.err, "");
	run_free(&r);

	r = run_args("justctl --version");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "justctl " JUSTITIA_VERSION " (protocol 1)\n");
	run_free(&r);

	r = run_args("justctl -q status");
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "justctl: unknown option '-q'\nTry 'justctl --help'.\n");
	run_free(&r);

	r = run_args("justctl --frob status");
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "justctl: unknown option '--frob'\nTry 'justctl --help'.\n");
	run_free(&r);

	r = run_args("justctl status -t");
	assert_int_equal(r.rc, 2); /* options go before the command */
	run_free(&r);

	r = run_args("justctl -t");
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "justctl: option '-t' needs an argument\n"
				   "Try 'justctl --help'.\n");
	run_free(&r);

	r = run_args("justctl -t soon status");
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "justctl: invalid timeout 'soon' (milliseconds)\n");
	run_free(&r);

	r = run_args("justctl set weight 1 pod 2");
	assert_int_equal(r.rc, 2);
	run_free(&r);

	r = run_args("justctl -s /nonexistent/justitiad.sock status");
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err, "justctl: cannot connect to /nonexistent/justitiad.sock: No "
				   "such file or directory (is justitiad running?)\n");
	assert_string_equal(r.out, "");
	run_free(&r);

	setenv(PROTO_SOCKET_ENV, "/nonexistent/env.sock", 1);
	r = run_args("justctl -j flows");
	assert_int_equal(r.rc, 1);
	assert_non_null(strstr(r.err, "cannot connect to /nonexistent/env.sock"));
	run_free(&r);
	unsetenv(PROTO_SOCKET_ENV);
}

/* A fake justitiad: accepts one connection, records the request lines and
 * answers each with the next line of @reply (NULL: stays silent until the
 * client hangs up).  @request is the last request, @requests all of them. */
struct fake {
	char path[108];
	int lfd;
	const char *reply;
	char request[512];
	char requests[2048];
	int failed;
};

static void *fake_thread(void *arg)
{
	struct fake *f = arg;
	struct proto_linebuf lb;
	char buf[512], *line;
	const char *rp = f->reply;
	size_t len;
	ssize_t n;
	int c;

	c = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0) {
		f->failed = __LINE__;
		return NULL;
	}
	proto_linebuf_init(&lb, 0);
	do {
		size_t rl;

		while (proto_linebuf_next(&lb, &line, &len) != 1) {
			n = proto_recv(c, buf, sizeof(buf), NULL, NULL, 0);
			if (n <= 0) {
				f->failed = __LINE__;
				goto out;
			}
			proto_linebuf_feed(&lb, buf, (size_t)n);
		}
		snprintf(f->request, sizeof(f->request), "%s", line);
		snprintf(f->requests + strlen(f->requests), sizeof(f->requests) - strlen(f->requests),
			 "%s\n", line);
		free(line);
		if (!rp) {
			while (proto_recv(c, buf, sizeof(buf), NULL, NULL, 0) > 0)
				;
			break;
		}
		rl = strcspn(rp, "\n");
		if (proto_send(c, rp, rl, NULL, 0) || proto_send(c, "\n", 1, NULL, 0))
			f->failed = __LINE__;
		rp += rl;
		rp += *rp == '\n';
	} while (*rp);
out:
	proto_linebuf_free(&lb);
	close(c);
	return NULL;
}

static char fake_requests[2048];

static struct run run_fake(const char *reply, const char *opts, const char *cmd, char *request)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/test_justctl.XXXXXX", args[512];
	struct fake f = { .reply = reply };
	pthread_t th;
	struct run r;

	assert_non_null(mkdtemp(dir));
	snprintf(f.path, sizeof(f.path), "%s/j.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f.path);
	f.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f.lfd >= 0);
	assert_int_equal(bind(f.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f.lfd, 4), 0);
	assert_int_equal(pthread_create(&th, NULL, fake_thread, &f), 0);
	snprintf(args, sizeof(args), "justctl -s %s %s %s", f.path, opts, cmd);
	r = run_args(args);
	pthread_join(th, NULL);
	assert_int_equal(f.failed, 0);
	if (request)
		strcpy(request, f.request);
	strcpy(fake_requests, f.requests);
	close(f.lfd);
	unlink(f.path);
	rmdir(dir);
	return r;
}

/* flows in pages: justctl asks for the next page with the reply's "next"
 * on the same connection and lists every flow of every page. */
static void flows_pages(void **state UNUSED)
{
	struct run r;

	r = run_fake("{\"v\":1,\"ok\":true,\"id\":1,\"flows\":[{\"id\":3,\"pid\":10,"
		     "\"comm\":\"a\",\"class\":\"bandwidth\",\"device\":\"rxe0\",\"port\":1,"
		     "\"qpn\":17,\"managed\":true}],\"next\":{\"after\":3}}\n"
		     "{\"v\":1,\"ok\":true,\"id\":1,\"flows\":[],\"next\":{\"unmanaged_from\":0}}\n"
		     "{\"v\":1,\"ok\":true,\"id\":1,\"flows\":[{\"id\":null,\"pid\":11,"
		     "\"comm\":\"b\",\"class\":null,\"device\":\"rxe0\",\"port\":null,"
		     "\"qpn\":18,\"managed\":false}],\"next\":null}",
		     "", "flows --all", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(fake_requests,
			    "{\"v\":1,\"cmd\":\"flows\",\"id\":1,\"all\":true}\n"
			    "{\"v\":1,\"cmd\":\"flows\",\"id\":1,\"all\":true,\"after\":3}\n"
			    "{\"v\":1,\"cmd\":\"flows\",\"id\":1,\"all\":true,\"after\":3,"
			    "\"unmanaged_from\":0}\n");
	assert_non_null(strstr(r.out, "17"));
	assert_non_null(strstr(r.out, "18"));
	assert_non_null(strstr(r.out, "unmanaged"));
	run_free(&r);

	/* an error on a later page is shown, and fails */
	r = run_fake("{\"v\":1,\"ok\":true,\"id\":1,\"flows\":[],\"next\":{\"after\":3}}\n"
		     "{\"v\":1,\"ok\":false,\"id\":1,\"error\":{\"code\":\"bad_request\","
		     "\"message\":\"no\"}}", "", "flows", NULL);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err, "justctl: flows: bad_request: no\n");
	run_free(&r);
}

/* metrics and watch: status, then flows, on one connection each round. */
static void metrics_and_watch(void **state UNUSED)
{
	static const char replies[] =
		"{\"v\":1,\"ok\":true,\"id\":1,\"daemon\":{\"version\":\"0.1.0\",\"pid\":4,"
		"\"uptime_ms\":1000},\"controller\":{\"safe_util_bps\":1000000000},"
		"\"counts\":{\"clients\":1,\"flows\":1,\"latency\":0,\"throughput\":0,"
		"\"bandwidth\":1}}\n"
		"{\"v\":1,\"ok\":true,\"id\":1,\"flows\":[{\"id\":5,\"pid\":4,\"comm\":\"bw\","
		"\"class\":\"bandwidth\",\"device\":\"rxe0\",\"port\":1,\"qpn\":17,"
		"\"bytes\":77,\"managed\":true}],\"next\":null}";
	char dir[] = "/tmp/test_justctl_m.XXXXXX", opts[128], *text;
	struct run r;
	FILE *f;

	r = run_fake(replies, "", "metrics", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(fake_requests, "{\"v\":1,\"cmd\":\"status\",\"id\":1}\n"
					   "{\"v\":1,\"cmd\":\"flows\",\"id\":1}\n");
	assert_non_null(strstr(r.out, "\njustitia_up 1\n"));
	assert_non_null(strstr(r.out, "\njustitia_safe_util_bits_per_second 1000000000\n"));
	assert_non_null(strstr(r.out, "justitia_flow_sent_bytes_total{flow=\"5\",pid=\"4\","
				      "comm=\"bw\",class=\"bandwidth\",device=\"rxe0\",port=\"1\"} 77\n"));
	run_free(&r);

	/* -o FILE: written whole (through FILE.tmp), also when the daemon is down */
	assert_non_null(mkdtemp(dir));
	snprintf(opts, sizeof(opts), "metrics -o %s/j.prom", dir);
	r = run_fake(replies, "", opts, NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "");
	snprintf(opts, sizeof(opts), "%s/j.prom", dir);
	f = fopen(opts, "r");
	assert_non_null(f);
	text = calloc(1, 65536);
	assert_true(fread(text, 1, 65535, f) > 0);
	fclose(f);
	assert_non_null(strstr(text, "\njustitia_up 1\n"));
	free(text);
	run_free(&r);
	snprintf(opts, sizeof(opts), "justctl -s %s/none.sock metrics -o %s/j.prom", dir, dir);
	r = run_args(opts);
	assert_int_equal(r.rc, 1);
	snprintf(opts, sizeof(opts), "%s/j.prom", dir);
	f = fopen(opts, "r");
	text = calloc(1, 4096);
	assert_true(fread(text, 1, 4095, f) > 0);
	fclose(f);
	assert_non_null(strstr(text, "\njustitia_up 0\n"));
	free(text);
	unlink(opts);
	rmdir(dir);
	run_free(&r);

	/* watch, one round, not a terminal: status, then the flows table */
	r = run_fake(replies, "", "watch -c 1 -n 0.1", NULL);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "justitiad on "));
	assert_non_null(strstr(r.out, "clients:"));
	assert_non_null(strstr(r.out, "rxe0/1"));
	assert_null(strstr(r.out, "\033["));
	run_free(&r);

	/* watch -j: one line of JSON a round, with its time, the status and
	 * the flows as the daemon sent them */
	r = run_fake(replies, "-j", "watch -c 1", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(fake_requests, "{\"v\":1,\"cmd\":\"status\",\"id\":1}\n"
					   "{\"v\":1,\"cmd\":\"flows\",\"id\":1}\n");
	{
		json_error_t je;
		json_t *line = json_loads(r.out, JSON_DISABLE_EOF_CHECK, &je);
		double t = json_real_value(json_object_get(line, "time"));

		assert_non_null(line);
		assert_int_equal(strlen(r.out), je.position + 1); /* the object, then '\n' */
		assert_null(memchr(r.out, '\n', strlen(r.out) - 1)); /* on one line */
		assert_true(t > 1.7e9);
		assert_int_equal(json_integer_value(json_object_get(
					 json_object_get(json_object_get(line, "status"), "counts"),
					 "bandwidth")),
				 1);
		assert_int_equal(json_integer_value(json_object_get(
					 json_array_get(json_object_get(line, "flows"), 0), "bytes")),
				 77);
		json_decref(line);
	}
	run_free(&r);

	r = run_args("justctl watch -n 0");
	assert_int_equal(r.rc, EXIT_USAGE);
	run_free(&r);
	r = run_args("justctl metrics --bogus");
	assert_int_equal(r.rc, EXIT_USAGE);
	run_free(&r);
}

static void against_fake_daemon(void **state UNUSED)
{
	char request[512];
	struct run r;

	r = run_fake(flows_reply, "", "flows --all", request);
	assert_int_equal(r.rc, 0);
	assert_string_equal(request, "{\"v\":1,\"cmd\":\"flows\",\"id\":1,\"all\":true}");
	assert_string_equal(r.out, flows_text);
	assert_string_equal(r.err, "");
	run_free(&r);

	r = run_fake(status_reply, "-t 2000", "status", request);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, status_text);
	run_free(&r);

	r = run_fake("{\"v\":1,\"ok\":true,\"id\":1,\"version\":\"0.1.0\",\"protocol\":1}",
		     "--json", "version", request);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "{\n  \"v\": 1,\n  \"ok\": true,\n  \"id\": 1,\n"
				   "  \"version\": \"0.1.0\",\n  \"protocol\": 1\n}\n");
	run_free(&r);

	r = run_fake("{\"v\":1,\"ok\":false,\"id\":1,\"error\":{\"code\":\"permission_denied\","
		     "\"message\":\"set needs uid 0 (you are 1000)\"}}",
		     "", "set target 150", request);
	assert_int_equal(r.rc, 1);
	assert_string_equal(request, "{\"v\":1,\"cmd\":\"set\",\"id\":1,\"target99_us\":150}");
	assert_string_equal(r.out, "");
	assert_string_equal(r.err,
			    "justctl: set: permission_denied: set needs uid 0 (you are 1000)\n");
	run_free(&r);

	/* --json prints the error reply too, and still fails */
	r = run_fake("{\"v\":1,\"ok\":false,\"id\":1,\"error\":{\"code\":\"not_found\","
		     "\"message\":\"no flow 9\"}}",
		     "-j", "set weight 2 flow 9", NULL);
	assert_int_equal(r.rc, 1);
	assert_non_null(strstr(r.out, "\"code\": \"not_found\""));
	assert_string_equal(r.err, "justctl: set: not_found: no flow 9\n");
	run_free(&r);

	r = run_fake("{\"v\":1,\"ok\":true,\"id\":1,\"changed\":{\"policy\":\"keep\"}}", "",
		     "set policy keep", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "policy: keep\n");
	run_free(&r);

	r = run_fake("this is not json", "", "status", NULL);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err, "justctl: status: malformed reply from justitiad\n");
	run_free(&r);

	r = run_fake(NULL, "-t 200", "status", NULL);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err, "justctl: status: no reply from justitiad within 200 ms\n");
	run_free(&r);
}

/* calibrate: the start reply, then status polled until the measurement is
 * over, from a fake daemon that answers one connection after another. */
struct script {
	int lfd;
	const char *const *replies;
	int n, failed;
	char first[512];
};

static void *script_thread(void *arg)
{
	struct script *s = arg;
	char buf[512];
	ssize_t n;

	for (int i = 0; i < s->n; i++) {
		int c = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0) {
			s->failed = __LINE__;
			return NULL;
		}
		n = proto_recv(c, buf, sizeof(buf) - 1, NULL, NULL, 0);
		if (n <= 0) {
			s->failed = __LINE__;
			close(c);
			return NULL;
		}
		buf[n] = 0;
		if (!i)
			snprintf(s->first, sizeof(s->first), "%s", buf);
		if (proto_send(c, s->replies[i], strlen(s->replies[i]), NULL, 0) ||
		    proto_send(c, "\n", 1, NULL, 0))
			s->failed = __LINE__;
		close(c);
	}
	return NULL;
}

static struct run run_script(const char *const *replies, int n, const char *cmd, char *first)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/test_justctl.XXXXXX", args[512];
	struct script s = { .replies = replies, .n = n };
	pthread_t th;
	struct run r;

	assert_non_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/j.sock", dir);
	s.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(s.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s.lfd, 4), 0);
	assert_int_equal(pthread_create(&th, NULL, script_thread, &s), 0);
	snprintf(args, sizeof(args), "justctl -s %s %s", sa.sun_path, cmd);
	r = run_args(args);
	pthread_join(th, NULL);
	assert_int_equal(s.failed, 0);
	strcpy(first, s.first);
	close(s.lfd);
	unlink(sa.sun_path);
	rmdir(dir);
	return r;
}

static void calibrate_follows(void **state UNUSED)
{
	static const char *const ok[] = {
		"{\"v\":1,\"ok\":true,\"id\":1,\"calibration\":{\"state\":\"running\","
		"\"duration_ms\":500}}",
		"{\"v\":1,\"ok\":true,\"id\":1,\"controller\":{\"calibration\":{\"state\":"
		"\"running\"}}}",
		"{\"v\":1,\"ok\":true,\"id\":1,\"controller\":{\"calibration\":{\"state\":"
		"\"done\",\"max_rate_bps\":312000000,\"peer\":\"10.233.0.1:7471\","
		"\"error\":null}}}",
	};
	static const char *const bad[] = {
		ok[0],
		"{\"v\":1,\"ok\":true,\"id\":1,\"controller\":{\"calibration\":{\"state\":"
		"\"failed\",\"error\":\"local protection error\"}}}",
	};
	char first[512];
	struct run r;

	r = run_script(ok, 3, "calibrate 500", first);
	assert_string_equal(first,
			    "{\"v\":1,\"cmd\":\"calibrate\",\"id\":1,\"duration_ms\":500}\n");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "calibrating against the reference peer for 500 ms...\n"
				   "max rate: 312.0 Mbit/s (measured against 10.233.0.1:7471)\n");
	run_free(&r);
	r = run_script(ok, 3, "-j calibrate", first);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "\"max_rate_bps\": 312000000"));
	assert_null(strstr(r.out, "running"));
	run_free(&r);
	/* a daemon that reports its QPs */
	{
		static const char *const qps[] = {
			"{\"v\":1,\"ok\":true,\"id\":1,\"calibration\":{\"state\":\"running\","
			"\"duration_ms\":1000,\"qps\":8}}",
			"{\"v\":1,\"ok\":true,\"id\":1,\"controller\":{\"calibration\":{\"state\":"
			"\"done\",\"max_rate_bps\":312000000,\"qps\":8,\"peer\":"
			"\"10.233.0.1:7471\",\"error\":null}}}",
		};

		r = run_script(qps, 2, "calibrate --qps 8", first);
		assert_string_equal(first, "{\"v\":1,\"cmd\":\"calibrate\",\"id\":1,\"qps\":8}\n");
		assert_int_equal(r.rc, 0);
		assert_string_equal(r.out, "calibrating against the reference peer for 1000 ms "
					   "over 8 QPs...\n"
					   "max rate: 312.0 Mbit/s (measured against "
					   "10.233.0.1:7471 over 8 QPs)\n");
		run_free(&r);
	}
	r = run_script(bad, 2, "calibrate", first);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err, "justctl: calibrate: failed: local protection error\n");
	run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exit_codes),
		cmocka_unit_test(against_fake_daemon),
		cmocka_unit_test(flows_pages),
		cmocka_unit_test(metrics_and_watch),
		cmocka_unit_test(calibrate_follows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

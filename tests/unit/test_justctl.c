// SPDX-License-Identifier: MIT
/* Unit tests of justctl: tools/justctl.c and its modules ctl_args.c,
 * ctl_show.c, ctl_daemon.c and ctl_text.c: arguments -> request, reply ->
 * text, exit codes, and whole runs against a fake daemon on a temporary
 * socket. */
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

#include <pthread.h>
#include <sys/un.h>

#define UNUSED __attribute__((unused))

/* ------------------------------------------------------------ helpers */

struct capture {
	FILE *f;
	char *buf;
	size_t len;
};

static void cap_open(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
}

/* Close the stream; the text stays in c->buf (free with cap_free). */
static const char *cap_text(struct capture *c)
{
	if (c->f) {
		fclose(c->f);
		c->f = NULL;
	}
	return c->buf;
}

static void cap_free(struct capture *c)
{
	cap_text(c);
	free(c->buf);
	c->buf = NULL;
}

/* Split @line at spaces into a NULL-terminated argv (static storage). */
static int split(const char *line, char **argv, int max, char *store, size_t storelen)
{
	int argc = 0;
	char *p, *save = NULL;

	snprintf(store, storelen, "%s", line);
	for (p = strtok_r(store, " ", &save); p && argc < max - 1; p = strtok_r(NULL, " ", &save))
		argv[argc++] = p;
	argv[argc] = NULL;
	return argc;
}

static json_t *load(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);

	if (!j)
		fail_msg("bad test JSON at %d: %s", e.position, e.text);
	return j;
}

/* Run a show_* function on a reply written as JSON text. */
static char *render(void (*show)(const json_t *, FILE *), const char *reply)
{
	struct capture c;
	json_t *j = load(reply);
	char *s;

	cap_open(&c);
	show(j, c.f);
	s = strdup(cap_text(&c));
	cap_free(&c);
	json_decref(j);
	return s;
}

static void expect_render(void (*show)(const json_t *, FILE *), const char *reply,
			  const char *want)
{
	char *got = render(show, reply);

	if (strcmp(got, want))
		fail_msg("rendered:\n%s\nwanted:\n%s", got, want);
	free(got);
}

/* ------------------------------------------------------------ numbers */

static void rates(void **state UNUSED)
{
	static const struct {
		const char *in;
		int rc;
		uint64_t bps;
	} t[] = {
		{ "25Gbit", 0, 25000000000ull },
		{ "25gbit", 0, 25000000000ull },
		{ "25GBIT", 0, 25000000000ull },
		{ "400Mbit", 0, 400000000ull },
		{ "100kbit", -ERANGE, 0 }, /* below 1 Mbit/s, as the daemon says */
		{ "1000000", 0, 1000000ull },
		{ "1000000bit", 0, 1000000ull },
		{ "2.5Gbit", 0, 2500000000ull },
		{ "1.25Tbit", 0, 1250000000000ull },
		{ "0.000001Tbit", 0, 1000000ull },
		{ "1.6Tbit", 0, 1600000000000ull },
		{ "1.600000000001Tbit", -ERANGE, 0 },
		{ "999999", -ERANGE, 0 },
		{ "9223372036854775807", -ERANGE, 0 },
		{ "1", -ERANGE, 0 },
		{ "0", -ERANGE, 0 },
		{ "0Gbit", -ERANGE, 0 },
		{ "1.5bit", -EINVAL, 0 },     /* not a whole number of bit/s */
		{ "1.0001kbit", -EINVAL, 0 },
		{ "9223372036854775808", -ERANGE, 0 },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "99999999999Gbit", -ERANGE, 0 },
		{ "", -EINVAL, 0 },
		{ "Gbit", -EINVAL, 0 },
		{ "25G", -EINVAL, 0 },
		{ "25Gbps", -EINVAL, 0 },
		{ "25Gbyte", -EINVAL, 0 },
		{ "-25Gbit", -EINVAL, 0 },
		{ "+25Gbit", -EINVAL, 0 },
		{ " 25Gbit", -EINVAL, 0 },
		{ "25 Gbit", -EINVAL, 0 },
		{ "25Gbit ", -EINVAL, 0 },
		{ "1.", -EINVAL, 0 },
		{ ".5Gbit", -EINVAL, 0 },
		{ "1.0000000000001Tbit", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t bps = 0;
		int rc = ctl_parse_rate(t[i].in, &bps);

		if (rc != t[i].rc || (!rc && bps != t[i].bps))
			fail_msg("parse_rate('%s') = %d, %" PRIu64 "; want %d, %" PRIu64, t[i].in,
				 rc, bps, t[i].rc, t[i].bps);
	}
	assert_int_equal(ctl_parse_rate(NULL, NULL), -EINVAL);
}

static void expect_fmt(char *got, const char *want)
{
	assert_string_equal(got, want);
	free(got);
}

static void formats(void **state UNUSED)
{
	expect_fmt(ctl_fmt_rate(25000000000ull), "25.0 Gbit/s");
	expect_fmt(ctl_fmt_rate(400000000ull), "400.0 Mbit/s");
	expect_fmt(ctl_fmt_rate(0), "0 bit/s");
	expect_fmt(ctl_fmt_rate(999), "999 bit/s");
	expect_fmt(ctl_fmt_rate(1000), "1.0 kbit/s");
	expect_fmt(ctl_fmt_rate(999999999), "1.0 Gbit/s");
	expect_fmt(ctl_fmt_rate(UINT64_MAX), "18.4 Ebit/s");
	expect_fmt(ctl_fmt_bytes(1610612736ull), "1.5 GiB");
	expect_fmt(ctl_fmt_bytes(0), "0 B");
	expect_fmt(ctl_fmt_bytes(1023), "1023 B");
	expect_fmt(ctl_fmt_bytes(1024), "1.0 KiB");
	expect_fmt(ctl_fmt_bytes(65536), "64.0 KiB");
	expect_fmt(ctl_fmt_bytes(1048575), "1.0 MiB");
	expect_fmt(ctl_fmt_bytes(UINT64_MAX), "16.0 EiB");
	expect_fmt(ctl_fmt_ns(850), "850 ns");
	expect_fmt(ctl_fmt_ns(12345), "12.3 us");
	expect_fmt(ctl_fmt_ns(999999), "1.00 ms");
	expect_fmt(ctl_fmt_ns(1250000), "1.25 ms");
	expect_fmt(ctl_fmt_ns(2000000000ull), "2.00 s");
	expect_fmt(ctl_fmt_uptime(999), "0s");
	expect_fmt(ctl_fmt_uptime(125000), "2m 5s");
	expect_fmt(ctl_fmt_uptime(3723000), "1h 2m 3s");
	expect_fmt(ctl_fmt_uptime(90061000), "1d 1h 1m 1s");
}

static void sanitizing(void **state UNUSED)
{
	char a[] = "ok\x1b[31mred\x07\x7f", b[] = "caf\xc3\xa9 \xc2\x9b" "2J";

	assert_string_equal(ctl_sanitize(a), "ok?[31mred??");
	assert_string_equal(ctl_sanitize(b), "caf\xc3\xa9 ??2J");
}

/* ------------------------------------------------------------ requests */

static const struct build_case {
	const char *args;
	const char *json; /* NULL: a usage error */
	const char *err;  /* part of the message */
} build_cases[] = {
	{ "status", "{\"v\":1,\"cmd\":\"status\",\"id\":1}", NULL },
	{ "status now", NULL, "status: unexpected argument 'now'" },
	{ "version", "{\"v\":1,\"cmd\":\"version\",\"id\":1}", NULL },
	{ "flows", "{\"v\":1,\"cmd\":\"flows\",\"id\":1}", NULL },
	{ "flows --all", "{\"v\":1,\"cmd\":\"flows\",\"id\":1,\"all\":true}", NULL },
	{ "flows -a", "{\"v\":1,\"cmd\":\"flows\",\"id\":1,\"all\":true}", NULL },
	{ "flows --some", NULL, "flows: unexpected argument '--some'" },
	{ "set target 200", "{\"v\":1,\"cmd\":\"set\",\"id\":1,\"target99_us\":200}", NULL },
	{ "set target", NULL, "set target: expected one argument" },
	{ "set target 0", NULL, "is not a positive number of microseconds" },
	{ "set target -5", NULL, "'-5' is not a positive number" },
	{ "set target 1.5", NULL, "'1.5' is not a positive number" },
	{ "set target 9999999999999999999999", NULL, "is not a positive number" },
	{ "set target 20 30", NULL, "set target: expected one argument" },
	{ "set max-rate 25Gbit",
	  "{\"v\":1,\"cmd\":\"set\",\"id\":1,\"max_rate\":25000000000}", NULL },
	{ "set max-rate 400Mbit rxe0",
	  "{\"v\":1,\"cmd\":\"set\",\"id\":1,\"max_rate\":400000000,\"device\":\"rxe0\"}", NULL },
	{ "set max-rate 1000000", "{\"v\":1,\"cmd\":\"set\",\"id\":1,\"max_rate\":1000000}", NULL },
	{ "set max-rate", NULL, "set max-rate: expected RATE [DEVICE]" },
	{ "set max-rate 25Gbit rxe0 rxe1", NULL, "set max-rate: expected RATE [DEVICE]" },
	{ "set max-rate fast", NULL, "invalid rate 'fast' (examples: 25Gbit" },
	{ "set max-rate 0", NULL, "invalid rate '0'" },
	{ "set policy keep", "{\"v\":1,\"cmd\":\"set\",\"id\":1,\"policy\":\"keep\"}", NULL },
	{ "set policy ignore-latency",
	  "{\"v\":1,\"cmd\":\"set\",\"id\":1,\"policy\":\"ignore_latency\"}", NULL },
	{ "set policy ignore_latency",
	  "{\"v\":1,\"cmd\":\"set\",\"id\":1,\"policy\":\"ignore_latency\"}", NULL },
	{ "set policy drop", NULL, "set policy: 'drop' is not keep or ignore-latency" },
	{ "set policy", NULL, "set policy: expected keep or ignore-latency" },
	{ "set weight 4 pid 1234",
	  "{\"v\":1,\"cmd\":\"set\",\"id\":1,\"weight\":4,\"pid\":1234}", NULL },
	{ "set weight 2 flow 17", "{\"v\":1,\"cmd\":\"set\",\"id\":1,\"weight\":2,\"flow\":17}",
	  NULL },
	{ "set weight 2 flow 0", "{\"v\":1,\"cmd\":\"set\",\"id\":1,\"weight\":2,\"flow\":0}",
	  NULL },
	{ "set weight 0 pid 1", NULL, "set weight: '0' is not a positive integer" },
	{ "set weight -1 pid 1", NULL, "set weight: '-1' is not a positive integer" },
	{ "set weight 2 pid 0", NULL, "set weight: '0' is not a valid process id" },
	{ "set weight 2 pid 4294967296", NULL, "is not a valid process id" },
	{ "set weight 2 flow x", NULL, "set weight: 'x' is not a valid flow id" },
	{ "set weight 2 pod 1", NULL, "set weight: expected N pid PID, or N flow ID" },
	{ "set weight 2 pid", NULL, "set weight: expected N pid PID, or N flow ID" },
	{ "set", NULL, "set: expected target, max-rate, policy or weight" },
	{ "set speed 3", NULL, "set: unknown setting 'speed'" },
	{ "calibrate", "{\"v\":1,\"cmd\":\"calibrate\",\"id\":1}", NULL },
	{ "calibrate 2000", "{\"v\":1,\"cmd\":\"calibrate\",\"id\":1,\"duration_ms\":2000}",
	  NULL },
	{ "calibrate 50", NULL, "calibrate: '50' is not a duration of 100..10000 ms" },
	{ "calibrate 1000 2", NULL, "calibrate: expected at most one argument" },
	{ "frobnicate", NULL, "unknown command 'frobnicate'" },
	{ "hello", NULL, "unknown command 'hello'" },
};

static void build_requests(void **state UNUSED)
{
	for (size_t i = 0; i < sizeof(build_cases) / sizeof(build_cases[0]); i++) {
		const struct build_case *t = &build_cases[i];
		const struct ctl_cmd *cmd = NULL;
		char store[256], *argv[16], *enc;
		struct capture err;
		json_t *req;
		int argc, rc;

		argc = split(t->args, argv, 16, store, sizeof(store));
		cap_open(&err);
		rc = ctl_build(argc, argv, &cmd, &req, err.f);
		cap_text(&err);
		if (t->json) {
			if (rc)
				fail_msg("'%s': usage error: %s", t->args, err.buf);
			assert_string_equal(cmd->name, argv[0]);
			enc = proto_encode(req, NULL);
			enc[strlen(enc) - 1] = '\0'; /* the '\n' */
			if (strcmp(enc, t->json))
				fail_msg("'%s': got %s want %s", t->args, enc, t->json);
			assert_string_equal(err.buf, "");
			free(enc);
			json_decref(req);
		} else {
			if (rc != EXIT_USAGE)
				fail_msg("'%s': accepted", t->args);
			assert_null(req);
			if (strncmp(err.buf, "justctl: ", 9) || !strstr(err.buf, t->err))
				fail_msg("'%s': message '%s', want '%s'", t->args, err.buf, t->err);
		}
		cap_free(&err);
	}
}

/* Every request justctl builds is one the protocol accepts. */
static void requests_are_valid(void **state UNUSED)
{
	for (size_t i = 0; i < sizeof(build_cases) / sizeof(build_cases[0]); i++) {
		const struct ctl_cmd *cmd;
		char store[256], *argv[16], *enc, msg[128];
		const char *c, *code;
		json_t *req, *back;
		size_t len;
		int argc;

		if (!build_cases[i].json)
			continue;
		argc = split(build_cases[i].args, argv, 16, store, sizeof(store));
		assert_int_equal(ctl_build(argc, argv, &cmd, &req, stderr), 0);
		enc = proto_encode(req, &len);
		back = proto_parse_request(enc, len - 1, &c, &code, msg, sizeof(msg));
		assert_non_null(back);
		assert_string_equal(c, cmd->name);
		json_decref(back);
		free(enc);
		json_decref(req);
	}
}

/* ------------------------------------------------------------ replies */

static const char status_reply[] =
	"{\"v\":1,\"ok\":true,\"id\":1,"
	"\"daemon\":{\"version\":\"0.1.0\",\"pid\":4242,\"uptime_ms\":3723000,"
	"\"config\":\"/etc/justitia/justitiad.json\",\"socket\":\"/run/justitia/justitiad.sock\","
	"\"instance\":3735928559},"
	"\"controller\":{\"mode\":\"normal\",\"target99_ns\":200000,\"current99_ns\":153200,"
	"\"p50_ns\":12100,\"p999_ns\":1250000,\"safe_util_bps\":20000000000,"
	"\"max_rate_bps\":25000000000,\"reference\":{\"state\":\"up\",\"peer\":\"10.0.0.2:7471\","
	"\"error\":null,\"samples\":12345}},"
	"\"devices\":[{\"name\":\"rxe0\",\"port\":1,\"gid_index\":1,\"max_rate_bps\":25000000000,"
	"\"chunk_bytes\":65536},{\"name\":\"mlx5_10\",\"port\":2,\"gid_index\":3,"
	"\"max_rate_bps\":100000000000,\"chunk_bytes\":1048576}],"
	"\"counts\":{\"clients\":3,\"flows\":7,\"latency\":2,\"throughput\":3,\"bandwidth\":2},"
	"\"limits\":{\"max_clients\":64,\"max_flows\":1024,\"max_flows_per_client\":64},"
	"\"future_field\":[1,2,3]}";

static const char status_text[] =
	"daemon:      justitiad 0.1.0, pid 4242, up 1h 2m 3s\n"
	"config:      /etc/justitia/justitiad.json\n"
	"socket:      /run/justitia/justitiad.sock\n"
	"instance:    3735928559\n"
	"mode:        normal\n"
	"target p99:  200.0 us\n"
	"latency:     p99 153.2 us (p50 12.1 us, p99.9 1.25 ms)\n"
	"safe util:   20.0 Gbit/s of 25.0 Gbit/s\n"
	"reference:   up, peer 10.0.0.2:7471, 12345 samples\n"
	"clients:     3 (max 64)\n"
	"flows:       7 (max 1024, 64 per client)\n"
	"classes:     latency 2, throughput 3, bandwidth 2\n"
	"\n"
	"DEVICE   PORT  GID      MAX RATE     CHUNK\n"
	"rxe0        1    1   25.0 Gbit/s  64.0 KiB\n"
	"mlx5_10     2    3  100.0 Gbit/s   1.0 MiB\n";

static void status_table(void **state UNUSED)
{
	expect_render(ctl_show_status, status_reply, status_text);
}

static void status_sparse(void **state UNUSED)
{
	/* no measurement, reference down with an error, no devices */
	expect_render(ctl_show_status,
		      "{\"v\":1,\"ok\":true,\"controller\":{\"mode\":\"unattainable\","
		      "\"current99_ns\":null,\"reference\":{\"state\":\"down\",\"peer\":null,"
		      "\"error\":\"connect: No route to host\",\"samples\":0}},\"devices\":[]}",
		      "daemon:      justitiad -, pid -, up -\n"
		      "config:      -\n"
		      "socket:      -\n"
		      "instance:    -\n"
		      "mode:        unattainable\n"
		      "target p99:  -\n"
		      "latency:     no measurement yet\n"
		      "safe util:   - of -\n"
		      "reference:   down, peer -, 0 samples, error: connect: No route to host\n"
		      "clients:     - (max -)\n"
		      "flows:       - (max -, - per client)\n"
		      "classes:     latency -, throughput -, bandwidth -\n"
		      "\n"
		      "no devices\n");
	/* an instance given as a string is shown as well */
	{
		char *t = render(ctl_show_status, "{\"daemon\":{\"instance\":\"a1\"}}");

		assert_non_null(strstr(t, "\ninstance:    a1\n"));
		free(t);
	}
	/* wrong types everywhere: no crash, dashes */
	free(render(ctl_show_status,
		    "{\"daemon\":3,\"controller\":[],\"devices\":{},\"counts\":\"x\"}"));
	free(render(ctl_show_status, "{\"devices\":[1,null,{\"name\":7,\"port\":-1}]}"));
}

/* the QP watcher's line: on with its counts, off with its reason */
static void status_qpwatch(void **state UNUSED)
{
	char *t = render(ctl_show_status, "{\"counts\":{\"unmanaged\":2},\"qpwatch\":{\"state\":\"on\","
					"\"mode\":\"fentry\",\"reason\":null,\"qps\":5,\"lost\":0}}");

	assert_non_null(strstr(t, "\nqpwatch:     on (fentry), 5 user QPs, 2 unmanaged\n\n"));
	free(t);
	t = render(ctl_show_status, "{\"counts\":{\"unmanaged\":0},\"qpwatch\":{\"state\":\"on\","
				"\"mode\":\"kprobe\",\"reason\":null,\"qps\":1,\"lost\":3}}");
	assert_non_null(strstr(t, "\nqpwatch:     on (kprobe), 1 user QPs, 0 unmanaged, records lost\n"));
	free(t);
	t = render(ctl_show_status, "{\"counts\":{\"unmanaged\":null},\"qpwatch\":{\"state\":\"off\","
				"\"mode\":null,\"reason\":\"ib_core is not loaded\\u001b[2J\"}}");
	assert_non_null(strstr(t, "\nqpwatch:     off: ib_core is not loaded?[2J\n"));
	free(t);
	/* an older daemon has no watcher: no line at all */
	t = render(ctl_show_status, "{\"counts\":{}}");
	assert_null(strstr(t, "qpwatch"));
	free(t);
}

/* the isolation controller's lines: port, MaxRate source, floor, trace,
 * calibration */
static void status_controller(void **state UNUSED)
{
	char *t = render(ctl_show_status,
			 "{\"controller\":{\"mode\":\"normal\",\"reference\":{\"state\":\"up\"},"
			 "\"max_rate_source\":\"calibrated\",\"device\":{\"name\":\"rxe1\","
			 "\"port\":1},\"floor_bps\":200000000,\"action\":\"decrease\","
			 "\"unattainable\":true,\"trace\":[{\"t_ms\":1000,\"min_bps\":200000000,"
			 "\"max_bps\":400000000},{\"t_ms\":3500,\"min_bps\":300000000,"
			 "\"max_bps\":350000000}],\"calibration\":{\"state\":\"done\","
			 "\"max_rate_bps\":9500000000,\"error\":null}}}");

	assert_non_null(strstr(t, "\ncontroller:  rxe1/1, max rate from calibrated, floor "
				  "200.0 Mbit/s, last step: decrease, target unattainable\n"));
	assert_non_null(strstr(t, "\ntrace:       safe util 200.0 Mbit/s .. 400.0 Mbit/s over the "
				  "last 2.5 s\n"));
	assert_non_null(strstr(t, "\ncalibration: done, measured 9.5 Gbit/s\n"));
	free(t);
	t = render(ctl_show_status, "{\"controller\":{\"max_rate_source\":\"link\",\"trace\":[],"
				"\"calibration\":{\"state\":\"failed\",\"max_rate_bps\":null,"
				"\"error\":\"no reference peer is up\"}}}");
	assert_non_null(
		strstr(t, "\ncontroller:  -/-, max rate from link, floor -, last step: -\n"));
	assert_null(strstr(t, "trace:"));
	assert_non_null(strstr(t, "\ncalibration: failed, measured -, error: no reference peer is "
				  "up\n"));
	free(t);
	/* a throughput flow's rate is in operations */
	t = render(ctl_show_flows, "{\"flows\":[{\"id\":3,\"class\":\"throughput\","
			       "\"paced_rate_bps\":null,\"paced_ops_per_s\":2400000}]}");
	assert_non_null(strstr(t, "2.4 Mop/s"));
	free(t);
}

static const char flows_reply[] =
	"{\"v\":1,\"ok\":true,\"id\":1,\"flows\":["
	"{\"id\":1,\"pid\":4242,\"comm\":\"ib_write_lat\",\"class\":\"latency\","
	"\"device\":\"rxe0\",\"port\":1,\"qpn\":17,\"qp_type\":\"RC\",\"weight\":1,"
	"\"peer_qpn\":18,\"split\":\"none\","
	"\"bytes\":2048,\"ops\":1024,\"tokens\":0,\"paced_rate_bps\":null,\"warning\":null,"
	"\"managed\":true},"
	"{\"id\":12,\"pid\":777,\"comm\":\"ib_write_bw\",\"class\":\"bandwidth\","
	"\"device\":\"rxe0\",\"port\":1,\"qpn\":4660,\"qp_type\":\"RC\",\"weight\":2,"
	"\"peer_qpn\":null,"
	"\"split\":\"split\",\"bytes\":1610612736,\"ops\":24576,\"tokens\":96,"
	"\"paced_rate_bps\":25000000000,\"warning\":\"peer QP unknown\",\"managed\":true},"
	"{\"id\":13,\"pid\":778,\"comm\":\"evil\\u001b[2J\",\"class\":\"throughput\","
	"\"device\":\"rxe1\",\"port\":1,\"qpn\":99,\"bytes\":0,\"ops\":0,\"tokens\":0,"
	"\"paced_rate_bps\":0,\"warning\":null,\"managed\":false}]}";

static const char flows_text[] =
	"ID   PID  COMM          CLASS       DEVICE   QPN    BYTES    OPS  TOKENS         RATE  "
	"WARN\n"
	" 1  4242  ib_write_lat  latency     rxe0/1    17  2.0 KiB   1024       0            -  "
	"-\n"
	"12   777  ib_write_bw   bandwidth   rxe0/1  4660  1.5 GiB  24576      96  25.0 Gbit/s  "
	"peer QP unknown\n"
	"13   778  evil?[2J      throughput  rxe1/1    99      0 B      0       0      0 bit/s  "
	"unmanaged\n";

static void flows_table(void **state UNUSED)
{
	expect_render(ctl_show_flows, flows_reply, flows_text);
	expect_render(ctl_show_flows, "{\"v\":1,\"ok\":true,\"flows\":[]}", "no flows\n");
	expect_render(ctl_show_flows, "{\"v\":1,\"ok\":true}", "no flows\n");
}

static void set_and_version(void **state UNUSED)
{
	expect_render(ctl_show_set, "{\"v\":1,\"ok\":true,\"changed\":{\"target99_us\":200}}",
		      "target99_us: 200\n");
	expect_render(ctl_show_set,
		      "{\"v\":1,\"ok\":true,\"changed\":{\"max_rate_bps\":{\"rxe0\":400000000},"
		      "\"policy\":\"ignore_latency\"}}",
		      "max_rate_bps: {\"rxe0\":400000000}\npolicy: ignore_latency\n");
	expect_render(ctl_show_set,
		      "{\"v\":1,\"ok\":true,\"changed\":{\"max_rate_bps\":25000000000,"
		      "\"devices\":2}}",
		      "max_rate_bps: 25.0 Gbit/s\ndevices: 2\n");
	expect_render(ctl_show_set, "{\"v\":1,\"ok\":true,\"changed\":{}}", "nothing changed\n");
	expect_render(ctl_show_version, "{\"v\":1,\"ok\":true,\"version\":\"0.1.0\",\"protocol\":1}",
		      "justctl " JUSTITIA_VERSION " (protocol 1)\njustitiad 0.1.0 (protocol 1)\n");
	expect_render(ctl_show_version, "{\"v\":1,\"ok\":true}",
		      "justctl " JUSTITIA_VERSION " (protocol 1)\njustitiad -\n");
}

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
	r = run_script(bad, 2, "calibrate", first);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err, "justctl: calibrate: failed: local protection error\n");
	run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rates),
		cmocka_unit_test(formats),
		cmocka_unit_test(sanitizing),
		cmocka_unit_test(build_requests),
		cmocka_unit_test(requests_are_valid),
		cmocka_unit_test(status_table),
		cmocka_unit_test(status_sparse),
		cmocka_unit_test(status_qpwatch),
		cmocka_unit_test(status_controller),
		cmocka_unit_test(flows_table),
		cmocka_unit_test(set_and_version),
		cmocka_unit_test(exit_codes),
		cmocka_unit_test(against_fake_daemon),
		cmocka_unit_test(flows_pages),
		cmocka_unit_test(metrics_and_watch),
		cmocka_unit_test(calibrate_follows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/* Unit tests of tools/ctl_args.c: each command's words -> its request
 * object or a usage error, through justctl's command table (ctl_build() in
 * justctl.c, which is included with its modules). */
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

#define UNUSED __attribute__((unused))

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
	{ "calibrate 1000 2", NULL, "calibrate: expected at most one duration, MS" },
	{ "calibrate --qps 1", "{\"v\":1,\"cmd\":\"calibrate\",\"id\":1,\"qps\":1}", NULL },
	{ "calibrate 2000 --qps 16",
	  "{\"v\":1,\"cmd\":\"calibrate\",\"id\":1,\"duration_ms\":2000,\"qps\":16}", NULL },
	{ "calibrate --qps 8 500",
	  "{\"v\":1,\"cmd\":\"calibrate\",\"id\":1,\"qps\":8,\"duration_ms\":500}", NULL },
	{ "calibrate --qps 0", NULL, "calibrate: --qps takes 1..16 QPs, not '0'" },
	{ "calibrate --qps 17", NULL, "calibrate: --qps takes 1..16 QPs, not '17'" },
	{ "calibrate --qps x", NULL, "calibrate: --qps takes 1..16 QPs, not 'x'" },
	{ "calibrate --qps", NULL, "calibrate: --qps takes a count of QPs" },
	{ "calibrate --qps 2 --qps 4", "{\"v\":1,\"cmd\":\"calibrate\",\"id\":1,\"qps\":4}",
	  NULL },
	{ "calibrate --qp 2", NULL, "calibrate: '--qp' is not a duration of 100..10000 ms" },
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(build_requests),
		cmocka_unit_test(requests_are_valid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

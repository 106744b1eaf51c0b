// SPDX-License-Identifier: MIT
/*
 * Unit tests of daemon/config.c (with common/jsonpos.c for positions): defaults, a full file's
 * round trip through config_dump, the exact message (with line:col) of each kind of bad input,
 * rates.  common/jsonpos.c alone: test_jsonpos.c.
 * Run from the repository root: the sample files are in tests/unit/data/config/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/stat.h>

#include "../../daemon/config.c"
#include "../../daemon/configdump.c"
#include "../../daemon/configparse.c"
#include "../../common/jsonpos.c"

#define DATA_DIR "tests/unit/data/config"

/* ---------------------------------------------------------------- helpers */

static void assert_config_equal(const struct config *a, const struct config *b)
{
	assert_string_equal(a->runtime_dir, b->runtime_dir);
	assert_string_equal(a->socket, b->socket);
	assert_string_equal(a->socket_group, b->socket_group);
	assert_string_equal(a->state_dir, b->state_dir);
	assert_int_equal(a->log_level, b->log_level);
	assert_int_equal(a->debug, b->debug);
	assert_int_equal(a->qpwatch, b->qpwatch);
	assert_int_equal(a->limits.max_clients, b->limits.max_clients);
	assert_int_equal(a->limits.max_flows, b->limits.max_flows);
	assert_int_equal(a->limits.max_flows_per_client, b->limits.max_flows_per_client);
	assert_int_equal(a->limits.max_request_bytes, b->limits.max_request_bytes);
	assert_int_equal(a->limits.max_clients_per_uid, b->limits.max_clients_per_uid);
	assert_int_equal(a->limits.idle_timeout_ms, b->limits.idle_timeout_ms);
	assert_string_equal(a->reference.listen_address, b->reference.listen_address);
	assert_int_equal(a->reference.listen_port, b->reference.listen_port);
	assert_string_equal(a->reference.secret_file, b->reference.secret_file);
	assert_int_equal(a->reference.period_us, b->reference.period_us);
	assert_int_equal(a->reference.window, b->reference.window);
	assert_int_equal(a->reference.always_on, b->reference.always_on);
	assert_int_equal(a->reference.loopback_correction, b->reference.loopback_correction);
	assert_int_equal(a->controller.target99_us, b->controller.target99_us);
	assert_int_equal(a->controller.additive_step_bps, b->controller.additive_step_bps);
	assert_int_equal(a->controller.one_flow_per_app, b->controller.one_flow_per_app);
	assert_int_equal(a->controller.unattainable_policy, b->controller.unattainable_policy);
	assert_int_equal(a->controller.unattainable_delta_ms, b->controller.unattainable_delta_ms);
	assert_int_equal(a->controller.stale_ms, b->controller.stale_ms);
	assert_true(a->controller.cpu_alpha == b->controller.cpu_alpha);
	assert_int_equal(a->tokens.bytes, b->tokens.bytes);
	assert_int_equal(a->tokens.ops, b->tokens.ops);
	assert_int_equal(a->n_devices, b->n_devices);
	for (size_t i = 0; i < a->n_devices; i++) {
		const struct config_device *x = &a->devices[i], *y = &b->devices[i];

		assert_string_equal(x->name, y->name);
		assert_int_equal(x->port, y->port);
		assert_int_equal(x->gid_index, y->gid_index);
		assert_int_equal(x->max_rate_bps, y->max_rate_bps);
		assert_int_equal(x->max_ops_per_s, y->max_ops_per_s);
		assert_int_equal(x->chunk_latency, y->chunk_latency);
		assert_int_equal(x->chunk_default, y->chunk_default);
	}
	assert_int_equal(a->n_peers, b->n_peers);
	for (size_t i = 0; i < a->n_peers; i++) {
		assert_string_equal(a->peers[i].address, b->peers[i].address);
		assert_int_equal(a->peers[i].port, b->peers[i].port);
		assert_string_equal(a->peers[i].device, b->peers[i].device);
	}
	assert_int_equal(a->n_apps, b->n_apps);
	for (size_t i = 0; i < a->n_apps; i++) {
		assert_string_equal(a->apps[i].comm, b->apps[i].comm);
		assert_int_equal(a->apps[i].has_class, b->apps[i].has_class);
		if (a->apps[i].has_class)
			assert_int_equal(a->apps[i].cls, b->apps[i].cls);
		assert_int_equal(a->apps[i].weight, b->apps[i].weight);
	}
}

/* config_dump into a malloc'ed string. */
static char *dump(const struct config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(config_dump(f, c), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* Parses text as "t.json", expecting success. */
static void parse_ok(const char *text, struct config *c)
{
	char err[512] = "";
	int rc = config_parse_buffer("t.json", text, strlen(text), c, err, sizeof(err));

	if (rc)
		fail_msg("unexpected error %d: %s (input %s)", rc, err, text);
}

/* Dump, parse the dump, compare, dump again: the same text. */
static void assert_round_trip(const struct config *c)
{
	struct config again;
	char *one = dump(c), *two;

	parse_ok(one, &again);
	assert_config_equal(c, &again);
	two = dump(&again);
	assert_string_equal(one, two);
	free(one);
	free(two);
	config_free(&again);
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		fail_msg("cannot open %s (the test must run from the repository root)", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

static int check_data_dir(void **state)
{
	struct stat st;

	(void)state;
	if (stat(DATA_DIR, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "test_config: %s not found: run the test from the repository "
				"root\n", DATA_DIR);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- defaults */

static void defaults(void **state)
{
	struct config c, d;

	(void)state;

	config_init_defaults(&c);
	assert_string_equal(c.runtime_dir, "/run/justitia");
	assert_string_equal(c.socket, "/run/justitia/justitiad.sock");
	assert_string_equal(c.socket_group, "");
	assert_string_equal(c.state_dir, "/var/lib/justitia");
	assert_int_equal(c.log_level, CONFIG_LOG_INFO);
	assert_int_equal(c.debug, 0);
	assert_true(c.qpwatch);
	assert_int_equal(c.limits.max_clients, 256);
	assert_int_equal(c.limits.max_flows, 4096);
	assert_int_equal(c.limits.max_flows_per_client, 1024);
	assert_int_equal(c.limits.max_request_bytes, 65536);
	assert_string_equal(c.reference.listen_address, "0.0.0.0");
	assert_int_equal(c.reference.listen_port, 7471);
	assert_string_equal(c.reference.secret_file, "");
	assert_int_equal(c.reference.period_us, 500);
	assert_int_equal(c.reference.window, 10000);
	assert_false(c.reference.always_on);
	assert_false(c.reference.loopback_correction);
	assert_int_equal(c.controller.target99_us, 100);
	assert_int_equal(c.controller.additive_step_bps, 0);
	assert_false(c.controller.one_flow_per_app);
	assert_int_equal(c.controller.unattainable_policy, CONFIG_UNATTAINABLE_KEEP);
	assert_int_equal(c.controller.unattainable_delta_ms, 5000);
	assert_int_equal(c.controller.stale_ms, 50);
	assert_true(c.controller.cpu_alpha == 0.5);
	assert_int_equal(c.tokens.bytes, 1048576);
	assert_int_equal(c.tokens.ops, 0);
	assert_null(c.devices);
	assert_null(c.peers);
	assert_null(c.apps);
	assert_int_equal(c.n_devices + c.n_peers + c.n_apps, 0);

	parse_ok("{}", &d);
	assert_config_equal(&c, &d);
	config_free(&d);
	parse_ok(" \n{ } \n", &d);
	assert_config_equal(&c, &d);
	assert_round_trip(&c);
	config_free(&c);
	config_free(&c); /* twice is fine */
}

/* Element defaults, derived values and the lenient-but-exact number rules. */
static void derived_values(void **state)
{
	struct config c;

	(void)state;

	parse_ok("{\"devices\": [{\"name\": \"rxe0\"}], \"apps\": [{\"comm\": \"x\"}],"
		 " \"reference\": {\"peers\": [{\"address\": \"h\"}]}}",
		 &c);
	assert_int_equal(c.devices[0].port, 1);
	assert_int_equal(c.devices[0].gid_index, -1);
	assert_int_equal(c.devices[0].max_rate_bps, 0);
	assert_int_equal(c.devices[0].max_ops_per_s, 0);
	assert_int_equal(c.devices[0].chunk_latency, 5120);
	assert_int_equal(c.devices[0].chunk_default, 1048576);
	assert_int_equal(c.apps[0].weight, 1);
	assert_int_equal(c.apps[0].has_class, 0);
	assert_int_equal(c.peers[0].port, 7471);
	assert_string_equal(c.peers[0].device, "");
	config_free(&c);

	/* socket follows runtime_dir unless set; max_flows_per_client follows a small max_flows */
	parse_ok("{\"runtime_dir\": \"/tmp/j\", \"limits\": {\"max_flows\": 100}}", &c);
	assert_string_equal(c.socket, "/tmp/j/justitiad.sock");
	assert_int_equal(c.limits.max_flows_per_client, 100);
	config_free(&c);
	parse_ok("{\"socket\": \"/s\", \"runtime_dir\": \"/tmp/j\"}", &c);
	assert_string_equal(c.socket, "/s");
	config_free(&c);

	/* integral numbers in any notation; null where allowed; class short forms */
	parse_ok("{\"limits\": {\"max_clients\": 1e3},"
		 " \"devices\": [{\"name\": \"a\", \"port\": 2.0, \"max_rate\": 2.5e9,"
		 " \"max_ops\": 1e10}],"
		 " \"controller\": {\"cpu_alpha\": 1, \"additive_step\": 100000000},"
		 " \"socket_group\": null,"
		 " \"reference\": {\"secret_file\": null},"
		 " \"apps\": [{\"comm\": \"a\", \"class\": \"tput\"},"
		 " {\"comm\": \"b\", \"class\": \"bw\"},"
		 " {\"comm\": \"kworker/0:1 x\", \"class\": \"lat\"}]}",
		 &c);
	assert_int_equal(c.limits.max_clients, 1000);
	assert_int_equal(c.devices[0].port, 2);
	assert_int_equal(c.devices[0].max_rate_bps, 2500000000ULL);
	assert_int_equal(c.devices[0].max_ops_per_s, 10000000000ULL);
	assert_true(c.controller.cpu_alpha == 1.0);
	assert_int_equal(c.controller.additive_step_bps, 100000000);
	assert_int_equal(c.apps[0].cls, FLOW_CLASS_THROUGHPUT);
	assert_int_equal(c.apps[1].cls, FLOW_CLASS_BANDWIDTH);
	assert_int_equal(c.apps[2].cls, FLOW_CLASS_LATENCY);
	assert_round_trip(&c);
	config_free(&c);

	/* escaped member names are names like any other */
	parse_ok("{\"limits\": {\"max\\u005fclients\": 7},"
		 " \"debu\\u0067\": [\"bpf\", \"token\"]}",
		 &c);
	assert_int_equal(c.limits.max_clients, 7);
	assert_int_equal(c.debug, 1u << CONFIG_SUBSYS_BPF | 1u << CONFIG_SUBSYS_TOKEN);
	config_free(&c);
}

/* ---------------------------------------------------------------- files */

static void full_file_round_trip(void **state)
{
	struct config c;
	char err[512] = "";

	(void)state;

	assert_int_equal(config_load(DATA_DIR "/full.json", &c, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_string_equal(c.runtime_dir, "/run/justitia-test");
	assert_string_equal(c.socket, "/run/justitia-test/ctl.sock");
	assert_string_equal(c.socket_group, "rdma");
	assert_string_equal(c.state_dir, "/var/lib/justitia-test");
	assert_int_equal(c.log_level, CONFIG_LOG_DEBUG);
	assert_int_equal(c.debug, 1u << CONFIG_SUBSYS_CTL | 1u << CONFIG_SUBSYS_REF |
					  1u << CONFIG_SUBSYS_CONFIG);
	assert_false(c.qpwatch);
	assert_int_equal(c.limits.max_clients, 64);
	assert_int_equal(c.limits.max_flows, 2048);
	assert_int_equal(c.limits.max_flows_per_client, 512);
	assert_int_equal(c.limits.max_request_bytes, 131072);
	assert_int_equal(c.n_devices, 3);
	assert_string_equal(c.devices[0].name, "mlx5_0");
	assert_int_equal(c.devices[0].gid_index, 3);
	assert_int_equal(c.devices[0].max_rate_bps, 100000000000ULL);
	assert_int_equal(c.devices[0].max_ops_per_s, 150000000);
	assert_int_equal(c.devices[0].chunk_latency, 4096);
	assert_int_equal(c.devices[0].chunk_default, 262144);
	assert_int_equal(c.devices[1].port, 2);
	assert_int_equal(c.devices[1].max_rate_bps, 25000000000ULL);
	assert_int_equal(c.devices[2].max_rate_bps, 0);
	assert_int_equal(c.n_peers, 3);
	assert_string_equal(c.peers[1].address, "2001:db8::10");
	assert_int_equal(c.peers[1].port, 7472);
	assert_string_equal(c.peers[1].device, "mlx5_0");
	assert_string_equal(c.peers[2].address, "peer-b.example.net");
	assert_string_equal(c.reference.listen_address, "::");
	assert_int_equal(c.reference.listen_port, 7472);
	assert_string_equal(c.reference.secret_file, "/etc/justitia/secret");
	assert_int_equal(c.reference.period_us, 250);
	assert_int_equal(c.reference.window, 20000);
	assert_true(c.reference.always_on);
	assert_true(c.reference.loopback_correction);
	assert_int_equal(c.controller.target99_us, 50);
	assert_int_equal(c.controller.additive_step_bps, 1500000000);
	assert_true(c.controller.one_flow_per_app);
	assert_int_equal(c.controller.unattainable_policy, CONFIG_UNATTAINABLE_IGNORE_LATENCY);
	assert_int_equal(c.controller.unattainable_delta_ms, 10000);
	assert_int_equal(c.controller.stale_ms, 20);
	assert_true(c.controller.cpu_alpha == 0.25);
	assert_int_equal(c.tokens.bytes, 2097152);
	assert_int_equal(c.tokens.ops, 1000000);
	assert_int_equal(c.n_apps, 3);
	assert_int_equal(c.apps[0].has_class, 1);
	assert_int_equal(c.apps[0].cls, FLOW_CLASS_LATENCY);
	assert_int_equal(c.apps[0].weight, 1);
	assert_int_equal(c.apps[1].cls, FLOW_CLASS_BANDWIDTH);
	assert_int_equal(c.apps[1].weight, 4);
	assert_int_equal(c.apps[2].has_class, 0);
	assert_int_equal(c.apps[2].weight, 2);
	assert_round_trip(&c);
	config_free(&c);

	assert_int_equal(config_load(DATA_DIR "/minimal.json", &c, err, sizeof(err)), 0);
	assert_int_equal(c.n_devices, 1);
	assert_int_equal(c.n_peers, 1);
	assert_round_trip(&c);
	config_free(&c);
}

static const struct {
	const char *file;
	const char *msg;
} bad_files[] = {
	{ "bad-empty.json", "1:1: file is empty (expected a JSON object)" },
	{ "bad-toplevel.json", "1:1: top level must be an object" },
	{ "bad-syntax.json", "5:3: string or '}' expected near '}'" },
	{ "bad-unknown-key.json", "3:3: sockt: unknown key" },
	{ "bad-unknown-nested.json", "5:9: reference.peers[1].adress: unknown key" },
	{ "bad-type.json", "2:31: reference.always_on: expected true or false, got a string" },
	{ "bad-range.json", "3:20: reference.listen_port: 70000 is out of range (1..65535)" },
	{ "bad-dup-device.json", "5:5: devices[2]: duplicate of devices[0] (\"mlx5_0\" port 1)" },
	{ "bad-long-socket.json", "2:13: socket: too long (109 bytes, at most 107)" },
	{ "bad-relative.json",
	  "2:16: state_dir: must be an absolute path, got \"var/lib/justitia\"" },
	{ "bad-rate.json", "3:37: devices[0].max_rate: invalid rate \"25Gbps\" (write e.g. "
			   "\"25Gbit\", \"400Mbit\", \"1.5Gbit\" or bit/s)" },
};

static void bad_sample_files(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad_files); i++) {
		char path[256], want[512], err[512] = "";
		struct config c;

		snprintf(path, sizeof(path), DATA_DIR "/%s", bad_files[i].file);
		snprintf(want, sizeof(want), "%s:%s", path, bad_files[i].msg);
		assert_int_equal(config_load(path, &c, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, want);
		assert_null(c.devices);
		assert_int_equal(c.n_devices, 0);
	}
}

/* Every key of the schema is documented, the EXAMPLE is valid, the ERRORS are real. */
static void assert_documented(const char *doc, const struct section *sec)
{
	char key[64];

	for (size_t i = 0; i < sec->n; i++) {
		snprintf(key, sizeof(key), "`%s`", sec->fields[i].key);
		if (!strstr(doc, key))
			fail_msg("key %s is not in docs/justitiad.json.5.md", key);
		if (sec->fields[i].sub)
			assert_documented(doc, sec->fields[i].sub);
	}
}

static void manual_page(void **state)
{
	char *doc = read_text("docs/justitiad.json.5.md"), *start, *end, line[600];
	struct config c;

	(void)state;
	assert_documented(doc, &top_section);
	for (size_t i = 0; i < ARRAY_SIZE(bad_files); i++) {
		snprintf(line, sizeof(line), "\n/etc/justitia/justitiad.json:%s\n", bad_files[i].msg);
		if (!strstr(doc, line))
			fail_msg("the ERRORS section lacks %s", line + 1);
	}
	start = strstr(doc, "## EXAMPLE");
	assert_non_null(start);
	start = strstr(start, "```json\n");
	assert_non_null(start);
	start += strlen("```json\n");
	end = strstr(start, "\n```");
	assert_non_null(end);
	*end = 0;
	parse_ok(start, &c);
	assert_int_equal(c.n_devices, 2);
	assert_int_equal(c.n_peers, 2);
	assert_int_equal(c.n_apps, 2);
	assert_round_trip(&c);
	config_free(&c);
	free(doc);
}

/* The shipped example (etc/justitiad.json, installed as
 * SYSCONFDIR/justitia/justitiad.json): valid, complete (every key of the
 * schema appears in it, so an operator sees each one), and at the built-in
 * defaults, so installing it changes nothing until it is edited. */
static void assert_in_example(const char *text, const struct section *sec)
{
	char key[64];

	for (size_t i = 0; i < sec->n; i++) {
		snprintf(key, sizeof(key), "\"%s\":", sec->fields[i].key);
		if (!strstr(text, key) && strcmp(sec->fields[i].key, "socket") != 0)
			fail_msg("key %s is not in etc/justitiad.json", key);
		if (sec->fields[i].type == T_OBJ)
			assert_in_example(text, sec->fields[i].sub);
	}
}

static void shipped_example(void **state)
{
	char *text = read_text("etc/justitiad.json"), *doc = read_text("docs/justitiad.json.5.md");
	struct config c, d;

	(void)state;
	parse_ok(text, &c);
	config_init_defaults(&d);
	assert_config_equal(&c, &d);
	assert_in_example(text, &top_section);
	assert_non_null(strstr(text, "\"_comment\""));
	assert_non_null(strstr(doc, "etc/justitiad.json"));
	config_free(&c);
	config_free(&d);
	free(text);
	free(doc);
}

static void unreadable_files(void **state)
{
	char err[512];
	struct config c;

	(void)state;

	assert_int_equal(config_load(DATA_DIR "/no-such.json", &c, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, DATA_DIR "/no-such.json: cannot open: No such file or directory");
	assert_string_equal(c.socket, "/run/justitia/justitiad.sock");
	assert_int_equal(config_load(DATA_DIR, &c, err, sizeof(err)), -EISDIR);
	assert_string_equal(err, DATA_DIR ": cannot read: Is a directory");
	/* no err buffer, or a short one: still safe */
	assert_int_equal(config_load(DATA_DIR "/no-such.json", &c, NULL, 0), -ENOENT);
	assert_int_equal(config_load(DATA_DIR "/bad-range.json", &c, err, 8), -EINVAL);
	assert_string_equal(err, "tests/u");
}

/* ---------------------------------------------------------------- error messages */

#define LONG60 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static const struct {
	const char *text;
	const char *msg; /* after "t.json:" */
} bad_texts[] = {
	/* empty, top level, syntax (positions are jansson's, moved to the token's start) */
	{ "", "1:1: file is empty (expected a JSON object)" },
	{ " \n\t\r\n", "1:1: file is empty (expected a JSON object)" },
	{ "\"str\"", "1:1: top level must be an object" },
	{ "  \n  42", "2:3: top level must be an object" },
	{ "null", "1:1: top level must be an object" },
	{ "{\"a\": 1,}", "1:9: string or '}' expected near '}'" },
	{ "{\"a\": tru}", "1:7: invalid token near 'tru'" },
	{ "{\"\xc3\xa9\": tru}", "1:8: invalid token near 'tru'" }, /* columns count bytes */
	{ "{\"log_level\": \"info\"} x", "1:23: end of file expected near 'x'" },
	{ "{\"log_level\": \"info\"", "1:21: '}' expected near end of file" },
	{ "{\"debug\": [], \"debug\": []}", "1:15: duplicate object key near '\"debug\"'" },
	{ "{\n\"limits\": {\n  \"max_clients\": 01}}", "3:18: invalid token near '0'" },
	{ "{\"a\": 99999999999999999999}", "1:7: too big integer near '99999999999999999999'" },
	/* unknown keys, at the key */
	{ "{\"limits\": {\"foo\": 1}}", "1:13: limits.foo: unknown key" },
	{ "{\"\xc3\xa9\": 1}", "1:2: \xc3\xa9: unknown key" },
	{ "{\"a\\nb\": 1}", "1:2: a\\x0ab: unknown key" },
	{ "{\"tokens\": {\"bytes\": 512}, \"tokens\\u0031\": 1}", "1:28: tokens1: unknown key" },
	{ "{\"apps\": [{\"comm\": \"a\", \"prio\": 1}]}", "1:25: apps[0].prio: unknown key" },
	{ "{\"runtime_dir\": \"/\xc3\xa9\", \"zz\": 1}", "1:24: zz: unknown key" },
	{ "{\"limits\": {\"max_clients\": 10, \"max_clients_per_uid\": 20}}",
	  "1:55: limits.max_clients_per_uid: 20 is out of range (1..max_clients = 10)" },
	/* comments: "_comment..." members hold a string or an array of strings */
	{ "{\"_comment\": 1}", "1:14: _comment: a comment must be a string or an array of strings, got an integer" },
	{ "{\"limits\": {\"_comment_x\": [\"a\", {}]}}", "1:33: limits._comment_x[1]: a comment must be a string or an array of strings, got an object" },
	{ "{\"_commnet\": \"typo\"}", "1:2: _commnet: unknown key" },
	{ "{\"comment\": \"no underscore\"}", "1:2: comment: unknown key" },
	/* types */
	{ "{\"limits\": {\"max_clients\": \"10\"}}",
	  "1:28: limits.max_clients: expected an integer, got a string" },
	{ "{\"limits\": []}", "1:12: limits: expected an object, got an array" },
	{ "{\"devices\": [{\"name\": \"a\", \"port\": 1.5}]}",
	  "1:36: devices[0].port: expected an integer, got 1.5" },
	{ "{\"devices\": {}}", "1:13: devices: expected an array, got an object" },
	{ "{\"devices\": [1]}", "1:14: devices[0]: expected an object, got an integer" },
	{ "{\"debug\": \"ctl\"}", "1:11: debug: expected an array, got a string" },
	{ "{\"debug\": [true]}", "1:12: debug[0]: expected a string, got a boolean" },
	{ "{\"reference\": {\"always_on\": 1}}",
	  "1:29: reference.always_on: expected true or false, got an integer" },
	{ "{\"controller\": {\"cpu_alpha\": \"0.5\"}}",
	  "1:30: controller.cpu_alpha: expected a number, got a string" },
	{ "{\"socket_group\": 5}",
	  "1:18: socket_group: expected null or a string, got an integer" },
	{ "{\"reference\": {\"secret_file\": 1}}",
	  "1:31: reference.secret_file: expected null or a string, got an integer" },
	{ "{\"state_dir\": null}", "1:15: state_dir: expected a string, got null" },
	{ "{\"devices\": [{\"name\": \"a\", \"max_rate\": true}]}",
	  "1:40: devices[0].max_rate: expected \"auto\", a number or a rate string, "
	  "got a boolean" },
	{ "{\"controller\": {\"additive_step\": null}}",
	  "1:34: controller.additive_step: expected \"auto\", a number or a rate string, "
	  "got null" },
	/* ranges */
	{ "{\"limits\": {\"max_clients\": 0}}",
	  "1:28: limits.max_clients: 0 is out of range (1..65536)" },
	{ "{\"limits\": {\"max_request_bytes\": 1e9}}",
	  "1:34: limits.max_request_bytes: 1e+09 is out of range (256..16777216)" },
	{ "{\"limits\": {\"max_flows\": 100, \"max_flows_per_client\": 200}}",
	  "1:55: limits.max_flows_per_client: 200 is out of range (1..max_flows = 100)" },
	{ "{\"devices\": [{\"name\": \"a\", \"gid_index\": -2}]}",
	  "1:41: devices[0].gid_index: -2 is out of range (-1..255)" },
	{ "{\"devices\": [{\"name\": \"a\", \"port\": 256}]}",
	  "1:36: devices[0].port: 256 is out of range (1..255)" },
	{ "{\"devices\": [{\"name\": \"a\", \"max_ops\": 10000000001}]}",
	  "1:39: devices[0].max_ops: 10000000001 is out of range (0..10000000000)" },
	{ "{\"devices\": [{\"name\": \"a\", \"chunk_latency\": 2097152}]}",
	  "1:45: devices[0].chunk_latency: chunk_latency (2097152) must not exceed chunk_default "
	  "(1048576)" },
	{ "{\"devices\": [{\"name\": \"a\", \"chunk_latency\": 8192, \"chunk_default\": 4096}]}",
	  "1:68: devices[0].chunk_default: chunk_latency (8192) must not exceed chunk_default "
	  "(4096)" },
	{ "{\"devices\": [{\"name\": \"a\", \"max_rate\": 500}]}",
	  "1:40: devices[0].max_rate: 500 is out of range (1Mbit..1.6Tbit)" },
	{ "{\"devices\": [{\"name\": \"a\", \"max_rate\": \"2Tbit\"}]}",
	  "1:40: devices[0].max_rate: 2Tbit is out of range (1Mbit..1.6Tbit)" },
	{ "{\"devices\": [{\"name\": \"a\", \"max_rate\": 2.5e12}]}",
	  "1:40: devices[0].max_rate: 2.5e+12 is out of range (1Mbit..1.6Tbit)" },
	{ "{\"devices\": [{\"name\": \"a\", \"max_rate\": 1000000.5}]}",
	  "1:40: devices[0].max_rate: expected a whole number of bit/s, got 1e+06" },
	{ "{\"controller\": {\"additive_step\": \"auto \"}}",
	  "1:34: controller.additive_step: invalid rate \"auto \" (write e.g. \"25Gbit\", "
	  "\"400Mbit\", \"1.5Gbit\" or bit/s)" },
	{ "{\"controller\": {\"cpu_alpha\": 1.5}}",
	  "1:30: controller.cpu_alpha: 1.5 is out of range (0..1)" },
	{ "{\"controller\": {\"stale_ms\": 0}}",
	  "1:29: controller.stale_ms: 0 is out of range (1..60000)" },
	{ "{\"controller\": {\"target99_us\": -1}}",
	  "1:32: controller.target99_us: -1 is out of range (1..10000000)" },
	{ "{\"tokens\": {\"ops\": 1000000001}}",
	  "1:20: tokens.ops: 1000000001 is out of range (0..1000000000)" },
	{ "{\"apps\": [{\"comm\": \"a\", \"weight\": 0}]}",
	  "1:35: apps[0].weight: 0 is out of range (1..1000)" },
	/* strings, names, enums */
	{ "{\"log_level\": \"verbose\"}",
	  "1:15: log_level: unknown value \"verbose\" (error, warn, info, debug)" },
	{ "{\"debug\": [\"ctl\", \"flows\"]}",
	  "1:19: debug[1]: unknown subsystem \"flows\" (ctl, shm, flow, ref, ctrl, token, bpf, "
	  "config)" },
	{ "{\"debug\": [\"ctl\", \"ctl\"]}", "1:19: debug[1]: duplicate subsystem \"ctl\"" },
	{ "{\"controller\": {\"unattainable_policy\": \"drop\"}}",
	  "1:40: controller.unattainable_policy: unknown value \"drop\" (keep, ignore_latency)" },
	{ "{\"apps\": [{\"comm\": \"a\", \"class\": \"fast\"}]}",
	  "1:34: apps[0].class: unknown class \"fast\" (latency, throughput, bandwidth)" },
	{ "{\"apps\": [{\"comm\": \"0123456789abcdef\"}]}",
	  "1:20: apps[0].comm: too long (16 bytes, at most 15)" },
	{ "{\"apps\": [{\"comm\": \"a\\tb\"}]}",
	  "1:20: apps[0].comm: \"a\\x09b\" is not a process name (no control characters)" },
	{ "{\"apps\": [{\"weight\": 2}]}", "1:11: apps[0]: missing required key \"comm\"" },
	{ "{\"apps\": [{\"comm\": \"a\"}, {\"comm\": \"b\"}, {\"comm\": \"a\"}]}",
	  "1:41: apps[2]: duplicate of apps[0] (comm \"a\")" },
	{ "{\"devices\": [{\"port\": 2}]}", "1:14: devices[0]: missing required key \"name\"" },
	{ "{\"devices\": [{\"name\": \"\"}]}", "1:23: devices[0].name: must not be empty" },
	{ "{\"devices\": [{\"name\": \"" LONG60 "abcd\"}]}",
	  "1:23: devices[0].name: too long (64 bytes, at most 63)" },
	{ "{\"devices\": [{\"name\": \"mlx5 0\"}]}",
	  "1:23: devices[0].name: \"mlx5 0\" is not a device name (no spaces, '/' or control "
	  "characters)" },
	{ "{\"socket_group\": \"-x\"}", "1:18: socket_group: \"-x\" is not a group name" },
	{ "{\"socket_group\": \"\"}", "1:18: socket_group: must not be empty" },
	{ "{\"runtime_dir\": \"/" LONG60 "/" LONG60 "\"}",
	  "1:17: runtime_dir: too long for the socket path (137 bytes, at most 107); set "
	  "\"socket\"" },
	{ "{\"socket\": \"run/j.sock\"}",
	  "1:12: socket: must be an absolute path, got \"run/j.sock\"" },
	{ "{\"reference\": {\"secret_file\": \"secret\"}}",
	  "1:31: reference.secret_file: must be an absolute path, got \"secret\"" },
	{ "{\"reference\": {\"listen_address\": \"localhost\"}}",
	  "1:34: reference.listen_address: \"localhost\" is not an IP address" },
	{ "{\"reference\": {\"peers\": [{\"address\": \"bad_host\"}]}}",
	  "1:38: reference.peers[0].address: \"bad_host\" is not an IP address or host name" },
	{ "{\"reference\": {\"peers\": [{\"address\": \"10.0.0.300\"}]}}",
	  "1:38: reference.peers[0].address: \"10.0.0.300\" is not an IP address or host "
	  "name" },
	{ "{\"reference\": {\"peers\": [{\"address\": \"10.0.0.1\"},"
	  " {\"address\": \"10.0.0.1\", \"port\": 7471}]}}",
	  "1:51: reference.peers[1]: duplicate of reference.peers[0] (\"10.0.0.1\" port 7471)" },
	{ "{\"reference\": {\"peers\": [{\"address\": \"h\", \"device\": \"\"}]}}",
	  "1:53: reference.peers[0].device: must not be empty" },
	{ "{\"limits\": {\"max\\u005fclients\": 0}}",
	  "1:33: limits.max_clients: 0 is out of range (1..65536)" },
	{ "{\n\t\"a\\\"b\\\\\": {}\n}", "2:2: a\\\"b\\\\: unknown key" },
};

static void bad_inputs(void **state)
{
	int wrong = 0;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad_texts); i++) {
		char want[600], err[600] = "";
		struct config c;
		int rc;

		snprintf(want, sizeof(want), "t.json:%s", bad_texts[i].msg);
		rc = config_parse_buffer("t.json", bad_texts[i].text, strlen(bad_texts[i].text), &c,
					 err, sizeof(err));
		if (rc != -EINVAL || strcmp(err, want) != 0) {
			print_error("input %zu %s:\n  got  %d %s\n  want %s\n", i,
				    bad_texts[i].text, rc, err, want);
			wrong++;
		}
		assert_null(c.devices);
		assert_null(c.apps);
		assert_null(c.peers);
	}
	assert_int_equal(wrong, 0);
}

/* Errors after arrays were allocated leave *c freed and at the defaults. */
static void error_leaves_defaults(void **state)
{
	const char *text = "{\"log_level\": \"debug\", \"devices\": [{\"name\": \"a\"}],"
			   " \"apps\": [{\"comm\": \"b\"}], \"tokens\": {\"bytes\": 1}}";
	struct config c, d;
	char err[256];

	(void)state;

	assert_int_equal(config_parse_buffer("t.json", text, strlen(text), &c, err, sizeof(err)),
			 -EINVAL);
	config_init_defaults(&d);
	assert_config_equal(&c, &d);
	/* no error buffer at all */
	assert_int_equal(config_parse_buffer("t.json", text, strlen(text), &c, NULL, 0), -EINVAL);
	/* NUL bytes and no terminator: only len counts */
	assert_int_equal(config_parse_buffer("t.json", "{}\0{", 3, &c, err, sizeof(err)), -EINVAL);
	assert_int_equal(config_parse_buffer("t.json", "{}xyz", 2, &c, err, sizeof(err)), 0);
	assert_int_equal(config_parse_buffer("t.json", NULL, 0, &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.json:1:1: file is empty (expected a JSON object)");
}

static void too_many_entries(void **state)
{
	size_t cap = 65 * 32 + 64, o = 0;
	char *text = malloc(cap), err[256];
	struct config c;

	(void)state;

	assert_non_null(text);
	o += (size_t)snprintf(text + o, cap - o, "{\"devices\": [");
	for (int i = 0; i < 65; i++)
		o += (size_t)snprintf(text + o, cap - o, "%s{\"name\": \"d%d\"}", i ? "," : "", i);
	snprintf(text + o, cap - o, "]}");
	assert_int_equal(config_parse_buffer("t.json", text, strlen(text), &c, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "t.json:1:13: devices: too many entries (65, at most 64)");
	/* 64 are fine */
	strcpy(strstr(text, ",{\"name\": \"d64\"}"), "]}");
	assert_int_equal(config_parse_buffer("t.json", text, strlen(text), &c, err, sizeof(err)),
			 0);
	assert_int_equal(c.n_devices, 64);
	config_free(&c);
	free(text);
}

static void dump_refuses_bad_strings(void **state)
{
	struct config c;
	FILE *f = fopen("/dev/null", "w");

	(void)state;

	assert_non_null(f);
	config_init_defaults(&c);
	strcpy(c.state_dir, "/var/\xff"); /* not UTF-8: not representable in JSON */
	assert_int_equal(config_dump(f, &c), -EINVAL);
	config_free(&c);

	/* the same deep inside arrays: no leaks on the way out */
	parse_ok("{\"devices\": [{\"name\": \"a\"}, {\"name\": \"b\"}],"
		 " \"reference\": {\"peers\": [{\"address\": \"h\", \"device\": \"a\"}]},"
		 " \"apps\": [{\"comm\": \"x\", \"class\": \"bw\"}]}",
		 &c);
	c.devices[1].name[0] = (char)0xc3;
	assert_int_equal(config_dump(f, &c), -EINVAL);
	c.devices[1].name[0] = 'b';
	c.peers[0].device[0] = (char)0xff;
	assert_int_equal(config_dump(f, &c), -EINVAL);
	c.peers[0].device[0] = 'a';
	c.apps[0].comm[0] = (char)0x80;
	assert_int_equal(config_dump(f, &c), -EINVAL);
	c.apps[0].comm[0] = 'x';
	c.log_level = (enum config_log_level)9;
	assert_int_equal(config_dump(f, &c), -EINVAL);
	c.log_level = CONFIG_LOG_WARN;
	assert_int_equal(config_dump(f, &c), 0);
	config_free(&c);
	fclose(f);
}

/* ---------------------------------------------------------------- names and rates */

static void names(void **state)
{
	enum flow_class cls;
	enum config_log_level l;
	enum config_subsys s;

	(void)state;

	static const struct {
		const char *s;
		enum flow_class c;
	} classes[] = {
		{ "latency", FLOW_CLASS_LATENCY },	 { "lat", FLOW_CLASS_LATENCY },
		{ "throughput", FLOW_CLASS_THROUGHPUT }, { "tput", FLOW_CLASS_THROUGHPUT },
		{ "bandwidth", FLOW_CLASS_BANDWIDTH },	 { "bw", FLOW_CLASS_BANDWIDTH },
	};

	for (size_t i = 0; i < ARRAY_SIZE(classes); i++) {
		assert_int_equal(config_class_parse(classes[i].s, &cls), 0);
		assert_int_equal(cls, classes[i].c);
	}
	assert_int_equal(config_class_parse("Latency", &cls), -EINVAL);
	assert_int_equal(config_class_parse("", &cls), -EINVAL);
	assert_string_equal(config_class_name(FLOW_CLASS_LATENCY), "latency");
	assert_string_equal(config_class_name(FLOW_CLASS_THROUGHPUT), "throughput");
	assert_string_equal(config_class_name(FLOW_CLASS_BANDWIDTH), "bandwidth");
	assert_string_equal(config_class_name((enum flow_class)7), "invalid");

	assert_int_equal(config_log_level_parse("warn", &l), 0);
	assert_int_equal(l, CONFIG_LOG_WARN);
	assert_int_equal(config_log_level_parse("warning", &l), -EINVAL);
	assert_string_equal(config_log_level_name(CONFIG_LOG_DEBUG), "debug");
	for (int i = 0; i < CONFIG_SUBSYS_MAX; i++) {
		const char *name = config_subsys_name((enum config_subsys)i);

		assert_int_equal(config_subsys_parse(name, &s), 0);
		assert_int_equal(s, i);
	}
	assert_int_equal(config_subsys_parse("all", &s), -EINVAL);
	assert_string_equal(config_subsys_name(CONFIG_SUBSYS_TOKEN), "token");
}

static void rate_parsing(void **state)
{
	static const struct {
		const char *s;
		int rc;
		uint64_t bps;
	} t[] = {
		{ "25Gbit", 0, 25000000000ULL },
		{ "400Mbit", 0, 400000000ULL },
		{ "100kbit", 0, 100000ULL },
		{ "1.5Gbit", 0, 1500000000ULL },
		{ "1.6Tbit", 0, 1600000000000ULL },
		{ "400000000", 0, 400000000ULL },
		{ "0", 0, 0 },
		{ "7bit", 0, 7 },
		{ "25gbit", 0, 25000000000ULL },
		{ "25GBIT", 0, 25000000000ULL },
		{ "100Kbit", 0, 100000ULL },
		{ "0.5kbit", 0, 500 },
		{ "1.50Gbit", 0, 1500000000ULL },
		{ "1.0", 0, 1 },
		{ "007Mbit", 0, 7000000ULL },
		{ "1.000000000001Tbit", 0, 1000000000001ULL },
		{ "2.5000000000000000000000000Gbit", 0, 2500000000ULL },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18446744.073709551615Tbit", 0, UINT64_MAX },
		{ "", -EINVAL, 0 },
		{ "Gbit", -EINVAL, 0 },
		{ "25 Gbit", -EINVAL, 0 },
		{ " 25Gbit", -EINVAL, 0 },
		{ "25Gbit ", -EINVAL, 0 },
		{ "25Gbps", -EINVAL, 0 },
		{ "25G", -EINVAL, 0 },
		{ "25GB", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },
		{ "1e9", -EINVAL, 0 },
		{ "1.", -EINVAL, 0 },
		{ ".5Gbit", -EINVAL, 0 },
		{ "1.5", -EINVAL, 0 },
		{ "0.5bit", -EINVAL, 0 },
		{ "1.0000000000001Tbit", -EINVAL, 0 },
		{ "1.5.0Gbit", -EINVAL, 0 },
		{ "auto", -EINVAL, 0 },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "18446745Tbit", -ERANGE, 0 },
		{ "99999999999999999999999999Gbit", -ERANGE, 0 },
		{ "18446744.073709551616Tbit", -ERANGE, 0 },
	};

	(void)state;

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		uint64_t bps = 12345;
		int rc = config_parse_rate(t[i].s, &bps);

		if (rc != t[i].rc || (!rc && bps != t[i].bps))
			fail_msg("\"%s\": got %d %llu, want %d %llu", t[i].s, rc,
				 (unsigned long long)bps, t[i].rc, (unsigned long long)t[i].bps);
	}
}

static void rate_formatting(void **state)
{
	static const struct {
		uint64_t bps;
		const char *s;
	} t[] = {
		{ 25000000000ULL, "25Gbit" },	  { 1500000000ULL, "1.5Gbit" },
		{ 1050000000ULL, "1.05Gbit" },	  { 1600000000000ULL, "1.6Tbit" },
		{ 1234567ULL, "1.234567Mbit" },	  { 1000, "1kbit" },
		{ 999, "999bit" },		  { 0, "0bit" },
		{ 1000000000001ULL, "1.000000000001Tbit" },
		{ UINT64_MAX, "18446744.073709551615Tbit" },
	};
	char buf[32];
	uint64_t v = 1, back;

	(void)state;

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		assert_int_equal(config_format_rate(t[i].bps, buf, sizeof(buf)), 0);
		assert_string_equal(buf, t[i].s);
	}
	assert_int_equal(config_format_rate(25000000000ULL, buf, 6), -ENOSPC);
	assert_string_equal(buf, "25Gbi");
	/* whatever it writes reads back */
	for (int i = 0; i < 20000; i++) {
		v = v * 6364136223846793005ULL + 1442695040888963407ULL;
		for (uint64_t x = v; x; x /= 10) {
			assert_int_equal(config_format_rate(x, buf, sizeof(buf)), 0);
			assert_int_equal(config_parse_rate(buf, &back), 0);
			assert_int_equal(back, x);
			if (i % 64)
				break;
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(derived_values),
		cmocka_unit_test(full_file_round_trip),
		cmocka_unit_test(bad_sample_files),
		cmocka_unit_test(manual_page),
		cmocka_unit_test(shipped_example),
		cmocka_unit_test(unreadable_files),
		cmocka_unit_test(bad_inputs),
		cmocka_unit_test(error_leaves_defaults),
		cmocka_unit_test(too_many_entries),
		cmocka_unit_test(dump_refuses_bad_strings),
		cmocka_unit_test(names),
		cmocka_unit_test(rate_parsing),
		cmocka_unit_test(rate_formatting),
	};

	return cmocka_run_group_tests(tests, check_data_dir, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * Unit tests of daemon/config.c and daemon/configdump.c: defaults, a full file's round trip
 * through config_dump, the manual page and the shipped example against the schema, the bad
 * sample files, defaults left after an error, names.  The parser's messages for bad text,
 * unreadable files and rates: test_configparse.c.
 * Run from the repository root: the sample files are in tests/unit/data/config/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/stat.h>

#include "../../daemon/config.c"
#include "../../daemon/configtenant.c"
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
	assert_int_equal(a->reference.calibration_qps, b->reference.calibration_qps);
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
	assert_string_equal(c.reference.listen_address, ""); /* the reference device's */
	assert_false(c.reference.insecure_peers);
	assert_int_equal(c.reference.listen_port, 7471);
	assert_string_equal(c.reference.secret_file, "");
	assert_int_equal(c.reference.period_us, 500);
	assert_int_equal(c.reference.window, 10000);
	assert_false(c.reference.always_on);
	assert_false(c.reference.loopback_correction);
	assert_int_equal(c.reference.calibration_qps, 8);
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
		 " \"reference\": {\"peers\": [{\"address\": \"h\"}], \"insecure_peers\": true}}",
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
	assert_int_equal(c.reference.calibration_qps, 12);
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
		 " \"reference\": {\"peers\": [{\"address\": \"h\", \"device\": \"a\"}], \"insecure_peers\": true},"
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

/* ---------------------------------------------------------------- names */

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(derived_values),
		cmocka_unit_test(full_file_round_trip),
		cmocka_unit_test(bad_sample_files),
		cmocka_unit_test(manual_page),
		cmocka_unit_test(shipped_example),
		cmocka_unit_test(error_leaves_defaults),
		cmocka_unit_test(dump_refuses_bad_strings),
		cmocka_unit_test(names),
	};

	return cmocka_run_group_tests(tests, check_data_dir, NULL);
}

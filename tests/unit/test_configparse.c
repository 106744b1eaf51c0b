// SPDX-License-Identifier: MIT
/*
 * Unit tests of daemon/configparse.c: the exact message (with line:col, common/jsonpos.c) of each
 * kind of bad text, files that cannot be read, too many entries, rates parsed and printed.
 * Run from the repository root: the sample files are in tests/unit/data/config/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <unistd.h>

#include "../../daemon/config.c"
#include "../../daemon/configtenant.c"
#include "../../daemon/configdump.c"
#include "../../daemon/configparse.c"
#include "../../common/jsonpos.c"

#define DATA_DIR "tests/unit/data/config"

static int data_dir_here(void **state)
{
	(void)state;
	if (access(DATA_DIR, R_OK | X_OK) == 0)
		return 0;
	fprintf(stderr, "test_configparse: %s not found: run it from the repository root\n",
		DATA_DIR);
	return -1;
}

/* ---------------------------------------------------------------- files */

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
	{ "{\"reference\": {\"calibration_qps\": 0}}",
	  "1:35: reference.calibration_qps: 0 is out of range (1..16)" },
	{ "{\n  \"reference\": {\n    \"calibration_qps\": 17 } }",
	  "3:24: reference.calibration_qps: 17 is out of range (1..16)" },
	{ "{\"reference\": {\"calibration_qps\": 2.5}}",
	  "1:35: reference.calibration_qps: expected an integer, got 2.5" },
	{ "{\"reference\": {\"calibration_qps\": \"8\"}}",
	  "1:35: reference.calibration_qps: expected an integer, got a string" },
	{ "{\"reference\": {\"calibration_qps\": true}}",
	  "1:35: reference.calibration_qps: expected an integer, got a boolean" },
	{ "{\"reference\": {\"calibration_qp\": 8}}",
	  "1:16: reference.calibration_qp: unknown key" },
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
	/* secure by default: another host needs a secret, or insecure_peers */
	{ "{\"reference\": {\"peers\": [{\"address\": \"127.0.0.2\"},\n"
	  "  {\"address\": \"10.0.0.2\"}]}}",
	  "2:15: reference.peers[1].address: a peer on another host needs reference.secret_file "
	  "(the channel is then authenticated and encrypted), or \"insecure_peers\": true to "
	  "run it in the clear" },
	{ "{\"reference\": {\"peers\": [{\"address\": \"::ffff:10.0.0.2\"}],"
	  " \"insecure_peers\": false}}",
	  "1:38: reference.peers[0].address: a peer on another host needs reference.secret_file "
	  "(the channel is then authenticated and encrypted), or \"insecure_peers\": true to "
	  "run it in the clear" },
	{ "{\"reference\": {\"peers\": [{\"address\": \"peer.example.net\"}]}}",
	  "1:38: reference.peers[0].address: a peer on another host needs reference.secret_file "
	  "(the channel is then authenticated and encrypted), or \"insecure_peers\": true to "
	  "run it in the clear" },
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

/* ---------------------------------------------------------------- rates */

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
		cmocka_unit_test(unreadable_files),
		cmocka_unit_test(bad_inputs),
		cmocka_unit_test(too_many_entries),
		cmocka_unit_test(rate_parsing),
		cmocka_unit_test(rate_formatting),
	};

	return cmocka_run_group_tests(tests, data_dir_here, NULL);
}

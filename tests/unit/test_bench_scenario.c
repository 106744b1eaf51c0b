// SPDX-License-Identifier: MIT
/*
 * Unit tests of tools/bench_scenario.c: good files, the exact FILE:LINE:COL message of each kind
 * of bad input, the documentation (every key, the example, the listed errors), I/O errors.
 * Run from the repository root: the sample files are in tests/unit/data/bench/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../tools/bench_flow.c"
#include "../../tools/bench_scenario.c"
#include "../../common/jsonpos.c"

#define DATA_DIR "tests/unit/data/bench"
#define DOC	 "docs/justbench-scenario.md"

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		fail_msg("cannot open %s (run from the repository root)", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), n);
	fclose(f);
	return buf;
}

static void parse_ok(const char *text, struct bench_scenario *sc)
{
	char err[512] = "";

	if (bench_scenario_parse("t.json", text, strlen(text), sc, err, sizeof(err)))
		fail_msg("%s", err);
}

static void core_file(void **state)
{
	struct bench_scenario sc;
	char err[512] = "";

	(void)state;
	assert_int_equal(bench_scenario_load(DATA_DIR "/core.json", &sc, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_string_equal(sc.description,
			    "a latency flow alone, then next to a 1 MB WRITE bandwidth flow");
	assert_int_equal(sc.n, 3);
	assert_string_equal(sc.flows[0].name, "alone");
	assert_int_equal(sc.flows[0].cls, BENCH_LAT);
	assert_int_equal(sc.flows[0].verb, BENCH_SEND);
	assert_int_equal(sc.flows[0].size, 2);
	assert_int_equal(sc.flows[0].delay_us, 0);
	assert_int_equal(sc.flows[0].duration_us, 3000000);
	assert_string_equal(sc.flows[1].name, "elephant");
	assert_int_equal(sc.flows[1].cls, BENCH_BW);
	assert_int_equal(sc.flows[1].verb, BENCH_WRITE);
	assert_int_equal(sc.flows[1].size, 1 << 20);
	assert_int_equal(sc.flows[1].window, 4);
	assert_int_equal(sc.flows[1].poll, BENCH_POLL_EVENT);
	assert_int_equal(sc.flows[1].delay_us, 3000000);
	assert_int_equal(sc.flows[1].duration_us, 4000000);
	assert_string_equal(sc.flows[2].name, "shared");
	assert_int_equal(sc.flows[2].delay_us, 3500000);
	assert_int_equal(sc.flows[2].duration_us, 3000000);
}

static void full_file(void **state)
{
	struct bench_scenario sc;
	char err[512] = "";

	(void)state;
	assert_int_equal(bench_scenario_load(DATA_DIR "/full.json", &sc, err, sizeof(err)), 0);
	assert_int_equal(sc.n, 3);
	assert_string_equal(sc.description, "");
	assert_string_equal(sc.flows[0].name, "mice");
	assert_int_equal(sc.flows[0].cls, BENCH_TPUT);
	assert_int_equal(sc.flows[0].verb, BENCH_WRITE_IMM);
	assert_int_equal(sc.flows[0].size, 64);
	assert_int_equal(sc.flows[0].qps, 4);
	assert_int_equal(sc.flows[0].batch, 16);
	assert_int_equal(sc.flows[0].window, 8);
	assert_int_equal(sc.flows[0].poll, BENCH_POLL_EVENT);
	assert_int_equal(sc.flows[0].delay_us, 250000);
	assert_int_equal(sc.flows[0].duration_us, 1500000);
	assert_int_equal(sc.flows[0].iters, 16000);
	/* defaults by class, names by position */
	assert_string_equal(sc.flows[1].name, "flow1");
	assert_int_equal(sc.flows[1].cls, BENCH_BW);
	assert_int_equal(sc.flows[1].verb, BENCH_READ);
	assert_int_equal(sc.flows[1].size, 65536);
	assert_int_equal(sc.flows[1].qps, 2);
	assert_int_equal(sc.flows[1].window, 4);
	assert_int_equal(sc.flows[1].poll, BENCH_POLL_BUSY);
	assert_int_equal(sc.flows[1].duration_us, 0);
	assert_string_equal(sc.flows[2].name, "flow2");
	assert_int_equal(sc.flows[2].cls, BENCH_LAT);
	assert_int_equal(sc.flows[2].size, 1);
	assert_int_equal(sc.flows[2].duration_us, 2000000);
	assert_int_equal(sc.flows[2].poll, BENCH_POLL_BUSY);
}

static const struct {
	const char *text;
	const char *msg;
} bad_texts[] = {
    /* 0 */ {"", "1:1: file is empty (expected a JSON object)"},
    {" \n\t", "1:1: file is empty (expected a JSON object)"},
    {"{\n  \"version\": 1,\n  ]", "3:3: string or '}' expected near ']'"},
    {"[1]", "1:1: top level must be an object, got an array"},
    {"{\"flows\": []}", "1:1: missing key \"version\""},
    /* 5 */ {"{\"version\": 1}", "1:1: missing key \"flows\""},
    {"{\n  \"version\": 2,\n  \"flows\": []\n}",
     "2:14: version: 2 is not supported (this justbench reads version 1)"},
    {"{\"version\": \"1\", \"flows\": []}", "1:13: version: expected an integer, got a string"},
    {"{\n  \"version\": 1,\n  \"flows\": []\n}", "3:12: flows: no flows (at least one is needed)"},
    {"{\"version\": 1, \"flows\": {}}", "1:25: flows: expected an array, got an object"},
    /* 10 */ {"{\"version\": 1, \"flow\": []}", "1:16: flow: unknown key"},
    {"{\"version\": 1, \"flows\": [], \"version\": 1}",
     "1:29: duplicate object key near '\"version\"'"},
    {"{\"version\": 1, \"description\": 7, \"flows\": [{\"class\": \"lat\"}]}",
     "1:31: description: expected a string, got an integer"},
    {"{\n  \"version\": 1,\n  \"flows\": [\n    { \"class\": \"bandwidth\", \"size\": \"1M\", "
     "\"windw\": 4 }\n  ]\n}",
     "4:43: flows[0].windw: unknown key"},
    {"{\n  \"version\": 1,\n  \"flows\": [\n    { \"verb\": \"send\" }\n  ]\n}",
     "4:5: flows[0]: missing key \"class\""},
    /* 15 */
    {"{\n  \"version\": 1,\n  \"flows\": [\n    { \"class\": \"mouse\" }\n  ]\n}",
     "4:16: flows[0].class: unknown class \"mouse\" (latency, throughput or bandwidth; or "
     "lat, tput, bw)"},
    {"{\"version\": 1, \"flows\": [{\"class\": 0}]}",
     "1:36: flows[0].class: expected a string, got an integer"},
    {"{\n  \"version\": 1,\n  \"flows\": [\n    { \"class\": \"latency\" },\n    { \"class\": "
     "\"bandwidth\", \"qps\": 65 }\n  ]\n}",
     "5:36: flows[1].qps: 65 is out of range (1..64)"},
    {"{\n  \"version\": 1,\n  \"flows\": [\n    { \"class\": \"bandwidth\", \"size\": 1.5 }\n"
     "  ]\n}",
     "4:37: flows[0].size: expected an integer or a string, got a real number"},
    {"{\n  \"version\": 1,\n  \"flows\": [\n    { \"class\": \"bandwidth\", \"size\": \"1MB\" "
     "}\n  ]\n}",
     "4:37: flows[0].size: invalid size \"1MB\" (write e.g. 64, 4K, 1M)"},
    /* 20 */
    {"{\n  \"version\": 1,\n  \"flows\": [\n    { \"class\": \"latency\", \"size\": 2, "
     "\"window\": 4 }\n  ]\n}",
     "4:48: flows[0].window: a latency flow has one message outstanding, window must be 1"},
    {"{\n  \"version\": 1,\n  \"flows\": [\n    { \"class\": \"bandwidth\", \"delay\": \"3h\" "
     "}\n  ]\n}",
     "4:38: flows[0].delay: invalid time \"3h\" (write e.g. 3, 1.5s, 500ms, 20us)"},
    {"{\n  \"version\": 1,\n  \"flows\": [\n    { \"class\": \"lat\", \"name\": \"mouse\" },\n"
     "    { \"class\": \"lat\", \"name\": \"mouse\" }\n  ]\n}",
     "5:31: flows[1].name: \"mouse\" is also the name of flows[0]"},
    {"{\"version\": 1, \"flows\": [{\"class\": \"lat\"}, {\"class\": \"lat\", \"name\": "
     "\"flow0\"}]}",
     "1:69: flows[1].name: \"flow0\" is also the name of flows[0]"},
    {"{\"version\": 1, \"flows\": [{\"class\": \"bw\", \"qps\": 64}, {\"class\": \"bw\", "
     "\"qps\": 64}, {\"class\": \"bw\", \"qps\": 64}, {\"class\": \"bw\", \"qps\": 64}, "
     "{\"class\": \"bw\"}]}",
     "1:138: flows[4].qps: 257 QPs in all, at most 256"},
    /* 25 */
    {"{\"version\": 1, \"flows\": [7]}", "1:26: flows[0]: expected an object, got an integer"},
    {"{\"version\": 1, \"flows\": [{\"class\": \"tput\", \"iters\": 100}]}",
     "1:53: flows[0].iters: 100 is not a multiple of batch (16)"},
    {"{\"version\": 1, \"flows\": [{\"class\": \"bw\", \"delay\": -1}]}",
     "1:51: flows[0].delay: -1 is out of range (0s..3600s)"},
    {"{\"version\": 1, \"flows\": [{\"class\": \"bw\", \"delay\": 1e300}]}",
     "1:51: flows[0].delay: \"1000000000000000052504760255204420248704...\" is out of "
     "range (0s..3600s)"},
    {"{\"version\": 1, \"flows\": [{\"class\": \"bw\", \"duration\": 0.0001}]}",
     "1:54: flows[0].duration: 100us is out of range (1ms..3600s)"},
    /* 30 */
    {"{\"version\": 1, \"flows\": [{\"class\": \"bw\", \"qps\": -3}]}",
     "1:49: flows[0].qps: -3 is out of range (1..64)"},
    {"{\"version\": 1, \"flows\": [{\"class\": \"bw\", \"qps\": true}]}",
     "1:49: flows[0].qps: expected an integer, got a boolean"},
    {"{\"version\": 1, \"flows\": [{\"class\": \"bw\", \"poll\": null}]}",
     "1:50: flows[0].poll: expected a string, got null"},
    {"{\"version\": 1, \"flows\": [{\"class\": \"bw\", \"a\\\"b\\u0001\": 1}]}",
     "1:42: flows[0].a\\\"b\\x01: unknown key"},
    {"{\"version\": 1, \"flows\": [{\"class\": \"bw\", \"name\": \"\\u001b[31m\"}]}",
     "1:50: flows[0].name: invalid name \"\\x1b[31m\" (1 to 31 letters, digits, '_', '-', "
     "'.')"},
    /* 35 */
    {"{\"version\": 1, \"flows\": [{\"class\": \"bw\"}]} x", "1:44: end of file expected near 'x'"},
};

static void bad_inputs(void **state)
{
	int wrong = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_texts) / sizeof(bad_texts[0]); i++) {
		char want[700], err[700] = "";
		struct bench_scenario sc;
		int rc;

		snprintf(want, sizeof(want), "t.json:%s", bad_texts[i].msg);
		rc = bench_scenario_parse("t.json", bad_texts[i].text, strlen(bad_texts[i].text),
					  &sc, err, sizeof(err));
		if (rc != -EINVAL || strcmp(err, want) != 0) {
			print_error("input %zu %s:\n  got  %d %s\n  want %s\n", i,
				    bad_texts[i].text, rc, err, want);
			wrong++;
		}
		assert_int_equal(sc.n, 0);
	}
	assert_int_equal(wrong, 0);
}

static void bad_files(void **state)
{
	struct bench_scenario sc;
	char err[512];

	(void)state;
	assert_int_equal(bench_scenario_load(DATA_DIR "/bad-unknown-key.json", &sc, err,
					     sizeof(err)), -EINVAL);
	assert_string_equal(err,
			    DATA_DIR "/bad-unknown-key.json:4:43: flows[0].windw: unknown key");
	assert_int_equal(bench_scenario_load(DATA_DIR "/bad-range.json", &sc, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, DATA_DIR "/bad-range.json:5:36: flows[1].qps: 65 is out of range "
					  "(1..64)");
	assert_int_equal(bench_scenario_load(DATA_DIR "/no-such.json", &sc, err, sizeof(err)),
			 -ENOENT);
	assert_string_equal(err, DATA_DIR "/no-such.json: cannot open: No such file or directory");
	assert_int_equal(bench_scenario_load(DATA_DIR, &sc, err, sizeof(err)), -EISDIR);
	assert_string_equal(err, DATA_DIR ": cannot read: Is a directory");
	/* no error buffer, or a short one */
	assert_int_equal(bench_scenario_load(DATA_DIR "/no-such.json", &sc, NULL, 0), -ENOENT);
	assert_int_equal(bench_scenario_load(DATA_DIR "/bad-range.json", &sc, err, 8), -EINVAL);
	assert_string_equal(err, "tests/u");
	/* only len counts: no terminator needed, NUL is not whitespace */
	assert_int_equal(bench_scenario_parse("t.json", "{}\0", 3, &sc, err, sizeof(err)), -EINVAL);
	assert_int_equal(bench_scenario_parse("t.json", "\0", 1, &sc, err, sizeof(err)), -EINVAL);
	assert_int_equal(bench_scenario_parse("t.json", NULL, 0, &sc, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.json:1:1: file is empty (expected a JSON object)");
}

static void many_flows(void **state)
{
	size_t cap = 70 * 32 + 64, o = 0;
	char *text = malloc(cap), err[256];
	struct bench_scenario sc;

	(void)state;
	assert_non_null(text);
	o += (size_t)snprintf(text + o, cap - o, "{\"version\": 1, \"flows\": [");
	for (int i = 0; i < 65; i++)
		o += (size_t)snprintf(text + o, cap - o, "%s{\"class\": \"lat\"}", i ? "," : "");
	snprintf(text + o, cap - o, "]}");
	assert_int_equal(bench_scenario_parse("t.json", text, strlen(text), &sc, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "t.json:1:25: flows: too many flows (65, at most 64)");
	strcpy(strrchr(text, ','), "]}");
	parse_ok(text, &sc);
	assert_int_equal(sc.n, 64);
	assert_string_equal(sc.flows[63].name, "flow63");
	free(text);
}

/* Every flow key is documented, the keys table matches bench_flow.c, the example parses, and
 * the ERRORS section shows real messages. */
static void documentation(void **state)
{
	char *doc = read_text(DOC), *start, *end, key[64], line[700];
	struct bench_scenario sc;
	size_t listed = 0;

	(void)state;
	for (size_t i = 0; i < N_FLOW_KEYS; i++) {
		assert_true(bench_flow_key_known(flow_keys[i].key));
		snprintf(key, sizeof(key), "| `%s` |", flow_keys[i].key);
		if (!strstr(doc, key))
			fail_msg("flow key %s is not in " DOC, flow_keys[i].key);
	}
	for (size_t i = 0; i < K_MAX; i++) {
		bool found = false;

		for (size_t k = 0; k < N_FLOW_KEYS; k++)
			found |= strcmp(key_names[i], flow_keys[k].key) == 0;
		if (!found)
			fail_msg("bench_flow key %s cannot be set from a file", key_names[i]);
	}
	for (size_t i = 0; i < sizeof(top_keys) / sizeof(top_keys[0]); i++) {
		snprintf(key, sizeof(key), "| `%s` |", top_keys[i]);
		assert_non_null(strstr(doc, key));
	}
	assert_non_null(strstr(doc, "| `class` |"));
	/* every error listed in the document is one of bad_texts, position and all */
	start = strstr(doc, "## Errors");
	assert_non_null(start);
	for (char *p = strstr(start, "\nscenario.json:"); p;
	     p = strstr(p + 1, "\nscenario.json:")) {
		size_t n = strcspn(p + 1, "\n");
		bool found = false;

		snprintf(line, sizeof(line), "%.*s", (int)n, p + 1);
		for (size_t i = 0; i < sizeof(bad_texts) / sizeof(bad_texts[0]) && !found; i++)
			found = strcmp(line + strlen("scenario.json:"), bad_texts[i].msg) == 0;
		if (!found)
			fail_msg("%s in " DOC " is not one of bad_texts", line);
		listed++;
	}
	assert_true(listed >= 15);
	start = strstr(doc, "## Example");
	assert_non_null(start);
	start = strstr(start, "```json\n");
	assert_non_null(start);
	start += strlen("```json\n");
	end = strstr(start, "\n```");
	assert_non_null(end);
	*end = 0;
	parse_ok(start, &sc);
	assert_int_equal(sc.n, 3);
	assert_int_equal(sc.flows[1].size, 1 << 20);
	free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(core_file),  cmocka_unit_test(full_file),
		cmocka_unit_test(bad_inputs), cmocka_unit_test(bad_files),
		cmocka_unit_test(many_flows), cmocka_unit_test(documentation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

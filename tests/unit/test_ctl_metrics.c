// SPDX-License-Identifier: MIT
/* Unit tests of tools/ctl_metrics.c (justctl metrics): its output is read
 * back by a strict parser of the Prometheus text exposition format 0.0.4
 * (below, written from the format's specification): names and label names
 * by their grammar, label values with only the three escapes, values as
 * floats, HELP and TYPE once per family and before its samples, a family's
 * samples together, no series twice, counters named _total, the last line
 * ended.  The parser is tested on bad inputs first, so that it can fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <ctype.h>
#include <math.h>
#include <stdlib.h>

#include "../../tools/ctl_metrics.c"

/* ------------------------------------------------------------ the parser */

#define MAX_FAMILIES 256
#define MAX_SERIES 8192

struct sample {
	char name[128];
	char labels[512]; /* canonical: name="unescaped value" pairs joined by \x1f */
	double value;
};

struct expo {
	char fam[MAX_FAMILIES][128];
	char type[MAX_FAMILIES][16];
	bool help[MAX_FAMILIES], closed[MAX_FAMILIES];
	size_t nfam;
	struct sample *s;
	size_t ns;
	char err[256];
};

static bool name_ok(const char *s, size_t n, bool colon)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_' || (colon && s[0] == ':')))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || (colon && s[i] == ':')))
			return false;
	return true;
}

static int fam_find(struct expo *e, const char *name)
{
	for (size_t i = 0; i < e->nfam; i++)
		if (!strcmp(e->fam[i], name))
			return (int)i;
	return -1;
}

static int fail_at(struct expo *e, int line, const char *why)
{
	snprintf(e->err, sizeof(e->err), "line %d: %s", line, why);
	return -1;
}

/* A float as Go's ParseFloat takes it (what Prometheus uses). */
static bool value_ok(const char *s, double *v)
{
	char *end;

	if (!strcmp(s, "NaN") || !strcmp(s, "+Inf") || !strcmp(s, "-Inf")) {
		*v = strcmp(s, "NaN") ? (s[0] == '-' ? -INFINITY : INFINITY) : NAN;
		return true;
	}
	if (!*s || !(isdigit((unsigned char)*s) || *s == '-' || *s == '+' || *s == '.'))
		return false;
	*v = strtod(s, &end);
	return !*end && strcasecmp(s, "inf") && strcasecmp(s, "nan");
}

static int expo_parse(struct expo *e, const char *text)
{
	const char *p = text;
	int line = 0, cur = -1;

	memset(e, 0, sizeof(*e));
	e->s = calloc(MAX_SERIES, sizeof(*e->s));
	if (!*text)
		return fail_at(e, 0, "empty");
	if (text[strlen(text) - 1] != '\n')
		return fail_at(e, 0, "the last line is not ended");
	while (*p) {
		const char *nl = strchr(p, '\n');
		char buf[2048];
		size_t len = (size_t)(nl - p);

		line++;
		if (len >= sizeof(buf))
			return fail_at(e, line, "line too long for the checker");
		memcpy(buf, p, len);
		buf[len] = 0;
		p = nl + 1;
		if (!len)
			continue;
		if (buf[0] == '#') {
			char kw[8], name[128], rest[1024] = "";
			int f, n = sscanf(buf, "# %7s %127s %1023[^\n]", kw, name, rest);

			if (n < 2 || (strcmp(kw, "HELP") && strcmp(kw, "TYPE")))
				continue; /* a plain comment */
			if (!name_ok(name, strlen(name), true))
				return fail_at(e, line, "bad metric name in HELP/TYPE");
			f = fam_find(e, name);
			if (f < 0) {
				if (e->nfam == MAX_FAMILIES)
					return fail_at(e, line, "too many families");
				f = (int)e->nfam++;
				snprintf(e->fam[f], sizeof(e->fam[f]), "%s", name);
			} else if (e->closed[f] || (f != cur && cur >= 0 && e->s && e->ns &&
						    fam_find(e, e->s[e->ns - 1].name) == f)) {
				return fail_at(e, line, "family continued after another one");
			}
			if (!strcmp(kw, "HELP")) {
				if (e->help[f])
					return fail_at(e, line, "second HELP");
				for (const char *q = rest; *q; q++)
					if (*q == '\\' && q[1] != '\\' && q[1] != 'n')
						return fail_at(e, line, "bad escape in HELP");
					else if (*q == '\\')
						q++;
				e->help[f] = true;
			} else {
				static const char *const types[] = { "counter", "gauge", "histogram",
								     "summary", "untyped" };
				bool known = false;

				if (e->type[f][0])
					return fail_at(e, line, "second TYPE");
				for (size_t t = 0; t < 5; t++)
					known |= !strcmp(rest, types[t]);
				if (!known)
					return fail_at(e, line, "unknown TYPE");
				for (size_t i = 0; i < e->ns; i++)
					if (!strcmp(e->s[i].name, name))
						return fail_at(e, line, "TYPE after samples");
				snprintf(e->type[f], sizeof(e->type[f]), "%s", rest);
			}
			if (cur >= 0 && cur != f)
				e->closed[cur] = true;
			cur = f;
			continue;
		}
		{
			struct sample *s = &e->s[e->ns];
			char *q = buf, *vstart;
			size_t n = strcspn(q, "{ ");
			int f;

			if (e->ns == MAX_SERIES)
				return fail_at(e, line, "too many samples");
			if (!name_ok(q, n, true) || n >= sizeof(s->name))
				return fail_at(e, line, "bad metric name");
			memcpy(s->name, q, n);
			s->name[n] = 0;
			q += n;
			if (*q == '{') {
				size_t o = 0;
				char seen[16][64];
				int nseen = 0;

				q++;
				while (*q != '}') {
					size_t ln = strcspn(q, "=");

					if (!name_ok(q, ln, false) || ln >= 64 ||
					    (ln >= 2 && q[0] == '_' && q[1] == '_'))
						return fail_at(e, line, "bad label name");
					for (int k = 0; k < nseen; k++)
						if (strlen(seen[k]) == ln && !strncmp(seen[k], q, ln))
							return fail_at(e, line, "label twice");
					if (nseen < 16) {
						memcpy(seen[nseen], q, ln);
						seen[nseen++][ln] = 0;
					}
					o += (size_t)snprintf(s->labels + o, sizeof(s->labels) - o,
							      "%s%.*s=", o ? "\x1f" : "", (int)ln, q);
					q += ln;
					if (q[0] != '=' || q[1] != '"')
						return fail_at(e, line, "label value not quoted");
					q += 2;
					for (; *q != '"'; q++) {
						char c = *q;

						if (!c)
							return fail_at(e, line, "label value not ended");
						if (c == '\\') {
							q++;
							if (*q == 'n')
								c = '\n';
							else if (*q == '\\' || *q == '"')
								c = *q;
							else
								return fail_at(e, line, "bad escape in label value");
						} else if (c == '\n') {
							return fail_at(e, line, "raw newline in label value");
						}
						if (o + 2 < sizeof(s->labels))
							s->labels[o++] = c;
					}
					s->labels[o] = 0;
					q++;
					if (*q == ',')
						q++;
					else if (*q != '}')
						return fail_at(e, line, "expected , or } after a label");
				}
				q++;
			}
			if (*q != ' ')
				return fail_at(e, line, "expected a space before the value");
			while (*q == ' ')
				q++;
			vstart = q;
			q += strcspn(q, " ");
			if (*q) { /* a timestamp: an integer */
				*q++ = 0;
				for (char *t = *q == '-' ? q + 1 : q; *t; t++)
					if (!isdigit((unsigned char)*t))
						return fail_at(e, line, "bad timestamp");
			}
			if (!value_ok(vstart, &s->value))
				return fail_at(e, line, "bad value");
			f = fam_find(e, s->name);
			if (f < 0 || !e->type[f][0])
				return fail_at(e, line, "sample without a TYPE for its family");
			if (!e->help[f])
				return fail_at(e, line, "family without HELP");
			if (e->closed[f] || (cur != f))
				return fail_at(e, line, "family's samples not together");
			if (!strcmp(e->type[f], "counter") &&
			    (strlen(s->name) < 6 || strcmp(s->name + strlen(s->name) - 6, "_total")))
				return fail_at(e, line, "a counter's name must end in _total");
			if (!strcmp(e->type[f], "counter") && !(s->value >= 0))
				return fail_at(e, line, "negative counter");
			for (size_t i = 0; i < e->ns; i++)
				if (!strcmp(e->s[i].name, s->name) && !strcmp(e->s[i].labels, s->labels))
					return fail_at(e, line, "the same series twice");
			e->ns++;
		}
	}
	return 0;
}

static void expo_free(struct expo *e)
{
	free(e->s);
	e->s = NULL;
}

static const struct sample *find(const struct expo *e, const char *name, const char *labels)
{
	for (size_t i = 0; i < e->ns; i++)
		if (!strcmp(e->s[i].name, name) && (!labels || !strcmp(e->s[i].labels, labels)))
			return &e->s[i];
	return NULL;
}

/* ------------------------------------------------------------ tests */

static void checker_rejects(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "# HELP a x\n# TYPE a gauge\na 1", "not ended" },
		{ "a 1\n", "without a TYPE" },
		{ "# HELP a x\n# TYPE a gauge\na{b=\"c} 1\n", "not ended" },
		{ "# HELP a x\n# TYPE a gauge\na{b=\"\\t\"} 1\n", "bad escape" },
		{ "# HELP a x\n# TYPE a gauge\na{b=\"1\",b=\"2\"} 1\n", "label twice" },
		{ "# HELP a x\n# TYPE a gauge\na{1b=\"1\"} 1\n", "bad label name" },
		{ "# HELP a x\n# TYPE a gauge\na{__x=\"1\"} 1\n", "bad label name" },
		{ "# HELP a x\n# TYPE a gauge\na one\n", "bad value" },
		{ "# HELP a x\n# TYPE a gauge\na 1\na 2\n", "twice" },
		{ "# HELP a x\n# TYPE a gauge\n# TYPE a gauge\na 1\n", "second TYPE" },
		{ "# HELP a x\n# TYPE a gauge\na 1\n# HELP b y\n# TYPE b gauge\nb 1\na{x=\"1\"} 2\n",
		  "together" },
		{ "# HELP a x\n# TYPE a counter\na 1\n", "_total" },
		{ "# HELP a_total x\n# TYPE a_total counter\na_total -1\n", "negative" },
		{ "# TYPE a gauge\na 1\n", "without HELP" },
		{ "# HELP 9a x\n# TYPE 9a gauge\n9a 1\n", "bad metric name" },
		{ "# HELP a x\n# TYPE a gauge\na  1 x\n", "timestamp" },
		{ "# HELP a x\n# TYPE a gaug\na 1\n", "unknown TYPE" },
	};
	struct expo e;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (expo_parse(&e, bad[i].text) == 0)
			fail_msg("the checker accepted bad input %zu", i);
		if (!strstr(e.err, bad[i].why))
			fail_msg("input %zu: \"%s\", expected \"%s\"", i, e.err, bad[i].why);
		expo_free(&e);
	}
	assert_int_equal(expo_parse(&e, "# HELP a x\n# TYPE a gauge\na{b=\"\\\"\\\\\\n\",} +Inf 17\n"
					"# a comment\n\n"),
			 0);
	expo_free(&e);
}

static char *render(const json_t *status, const json_t *flows, bool per_flow)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	ctl_metrics_write(status, flows, per_flow, f);
	fclose(f);
	return buf;
}

static const char status_json[] =
	"{\"v\":1,\"ok\":true,\"daemon\":{\"version\":\"0.1.0\",\"pid\":42,\"uptime_ms\":3723004},"
	"\"controller\":{\"mode\":\"normal\",\"unattainable\":false,\"target99_ns\":200000,"
	"\"current99_ns\":153200,\"p50_ns\":12100,\"p999_ns\":null,\"safe_util_bps\":20000000000,"
	"\"max_rate_bps\":25000000000,\"floor_bps\":1000000,\"stale\":false,\"violating\":true,"
	"\"steps\":1000,\"decreases\":17,\"reference\":{\"state\":\"up\",\"samples\":12345,"
	"\"skipped\":3,\"errors\":1,\"responders\":2}},"
	"\"counts\":{\"clients\":3,\"flows\":3,\"latency\":1,\"throughput\":0,\"bandwidth\":2,"
	"\"unmanaged\":4},\"limits\":{\"max_clients\":256,\"max_flows\":4096,"
	"\"max_flows_per_client\":1024},"
	"\"qpwatch\":{\"state\":\"on\",\"qps\":9,\"unmanaged\":4,\"lost\":0},"
	"\"remote_read\":{\"served\":{\"flows\":3,\"incoming\":{\"latency\":1,\"bandwidth\":2},"
	"\"opened\":5,\"closed\":1,\"dropped\":1,\"refused\":0,\"grants_sent\":37,"
	"\"last_refusal\":null,\"entries\":[]},\"requested\":{\"registered\":2,\"pending\":0,"
	"\"unmanaged\":1,\"refused\":0},\"messages\":{\"sent\":{\"open\":19,\"close\":2,"
	"\"grants\":0},\"received\":{\"open\":0,\"close\":0,\"grants\":37,"
	"\"grants_applied\":70,\"grants_ignored\":4}}}}";

static const char flows_json[] =
	"[{\"id\":1,\"pid\":7,\"comm\":\"memcached\",\"class\":\"latency\",\"device\":\"rxe0\","
	"\"port\":1,\"weight\":1,\"bytes\":0,\"ops\":10,\"chunks\":0,\"tokens\":0,"
	"\"paced_rate_bps\":null,\"active\":false,\"managed\":true},"
	"{\"id\":2,\"pid\":8,\"comm\":\"a\\\"b\\\\c\\nd\\u0007\",\"class\":\"bandwidth\","
	"\"device\":\"rxe0\",\"port\":1,\"weight\":3,\"bytes\":1048576000,\"ops\":1000,"
	"\"chunks\":16000,\"tokens\":5,\"paced_rate_bps\":5000000000,\"active\":true,"
	"\"managed\":true},"
	"{\"id\":null,\"pid\":9,\"comm\":\"raw\",\"class\":null,\"device\":\"rxe0\",\"port\":null,"
	"\"managed\":false}]";

static void full_state(void **state)
{
	json_t *st = json_loads(status_json, 0, NULL), *fl = json_loads(flows_json, 0, NULL);
	const struct sample *s;
	char *text;
	struct expo e;

	(void)state;
	assert_non_null(st);
	assert_non_null(fl);
	text = render(st, fl, true);
	if (expo_parse(&e, text))
		fail_msg("%s in:\n%s", e.err, text);
	assert_true(find(&e, "justitia_up", "")->value == 1);
	assert_true(find(&e, "justitia_safe_util_bits_per_second", "")->value == 2e10);
	assert_true(find(&e, "justitia_max_rate_bits_per_second", "")->value == 2.5e10);
	assert_true(fabs(find(&e, "justitia_latency_p99_seconds", "")->value - 153.2e-6) < 1e-12);
	assert_true(fabs(find(&e, "justitia_latency_target_p99_seconds", "")->value - 200e-6) <
		    1e-12);
	assert_null(find(&e, "justitia_latency_p999_seconds", NULL)); /* null: left out */
	assert_true(find(&e, "justitia_controller_decreases_total", "")->value == 17);
	assert_true(find(&e, "justitia_reference_samples_total", "")->value == 12345);
	assert_true(find(&e, "justitia_reference_state", "state=up")->value == 1);
	assert_true(find(&e, "justitia_reference_state", "state=down")->value == 0);
	assert_true(find(&e, "justitia_unmanaged_qps", "")->value == 4);
	assert_true(find(&e, "justitia_flows", "class=bandwidth")->value == 2);
	assert_true(fabs(find(&e, "justitia_uptime_seconds", "")->value - 3723.004) < 1e-9);
	/* remote READ control and receiver-side views */
	assert_true(find(&e, "justitia_remote_served_flows", "")->value == 3);
	assert_true(find(&e, "justitia_remote_incoming_flows", "class=latency")->value == 1);
	assert_true(find(&e, "justitia_remote_incoming_flows", "class=bandwidth")->value == 2);
	assert_true(find(&e, "justitia_remote_grants_sent_total", "")->value == 37);
	assert_true(find(&e, "justitia_remote_served_dropped_total", "")->value == 1);
	assert_true(find(&e, "justitia_remote_requested_flows", "state=unmanaged")->value == 1);
	assert_true(find(&e, "justitia_remote_messages_sent_total", "type=open")->value == 19);
	assert_true(find(&e, "justitia_remote_messages_received_total", "type=grants")->value ==
		    37);
	assert_true(find(&e, "justitia_remote_grant_entries_applied_total", "")->value == 70);
	assert_true(find(&e, "justitia_remote_grant_entries_ignored_total", "")->value == 4);
	/* per flow: the hostile comm comes back as sent, control bytes as '?' */
	s = find(&e, "justitia_flow_sent_bytes_total",
		 "flow=2\x1fpid=8\x1f" "comm=a\"b\\c\nd?\x1f" "class=bandwidth\x1f"
		 "device=rxe0\x1fport=1");
	assert_non_null(s);
	assert_true(s->value == 1048576000);
	assert_true(find(&e, "justitia_flow_paced_rate_bits_per_second", NULL)->value == 5e9);
	assert_non_null(find(&e, "justitia_flow_chunks_total", NULL));
	assert_non_null(find(&e, "justitia_flow_active", NULL));
	/* the unmanaged QP is no flow series */
	for (size_t i = 0; i < e.ns; i++)
		assert_null(strstr(e.s[i].labels, "comm=raw"));
	expo_free(&e);
	free(text);

	/* --no-flows: no per-flow series */
	text = render(st, fl, false);
	assert_int_equal(expo_parse(&e, text), 0);
	assert_null(find(&e, "justitia_flow_sent_bytes_total", NULL));
	expo_free(&e);
	free(text);
	json_decref(st);
	json_decref(fl);
}

static void daemon_down(void **state)
{
	char *text = render(NULL, NULL, true);
	struct expo e;

	(void)state;
	assert_int_equal(expo_parse(&e, text), 0);
	assert_int_equal(e.ns, 1);
	assert_true(find(&e, "justitia_up", "")->value == 0);
	expo_free(&e);
	free(text);
}

/* A reply from another daemon version: members missing or null, odd types. */
static void sparse_status(void **state)
{
	json_t *st = json_loads("{\"ok\":true,\"controller\":{\"current99_ns\":null,"
				"\"reference\":{\"state\":7}},\"counts\":{}}",
				0, NULL);
	json_t *none = json_array();
	char *text = render(st, none, true);
	struct expo e;

	(void)state;
	if (expo_parse(&e, text))
		fail_msg("%s in:\n%s", e.err, text);
	assert_null(find(&e, "justitia_latency_p99_seconds", NULL));
	assert_null(find(&e, "justitia_remote_served_flows", NULL)); /* no remote_read */
	expo_free(&e);
	free(text);
	json_decref(st);
	json_decref(none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(checker_rejects),
		cmocka_unit_test(full_state),
		cmocka_unit_test(daemon_down),
		cmocka_unit_test(sparse_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * justbench scenario files: strict JSON through jansson (json_unpack_ex with JSON_STRICT), every
 * value set through bench_flow_set() so that the command line and the files agree, and every
 * error placed as FILE:LINE:COL by common/jsonpos.c.
 * May call: bench_flow, common/jsonpos (error positions), jansson and libc.
 */
#include "bench_scenario.h"
#include "jsonpos.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MSG_MAX	      512

struct ctx {
	const char *name;
	const char *text;
	size_t len;
	char *err;
	size_t errlen;
};

enum { T_STR = 1, T_INT = 2, T_NUM = 4 };

/* The optional keys of a flow, in the order of the json_unpack_ex() call in parse_flow(). */
static const struct {
	const char *key;
	unsigned types;
} flow_keys[] = {
	{ "name", T_STR },  { "verb", T_STR },	{ "size", T_INT | T_STR },
	{ "qps", T_INT },   { "batch", T_INT }, { "window", T_INT },
	{ "poll", T_STR },  { "delay", T_NUM | T_STR }, { "duration", T_NUM | T_STR },
	{ "iters", T_INT }, { "rate", T_INT | T_STR },
};
#define N_FLOW_KEYS 11
_Static_assert(ARRAY_SIZE(flow_keys) == N_FLOW_KEYS, "the unpack format has 11 optional keys");

static const char *const top_keys[] = { "version", "description", "flows" };

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a real number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

static const char *types_name(unsigned types)
{
	switch (types) {
	case T_STR:
		return "a string";
	case T_INT:
		return "an integer";
	case T_INT | T_STR:
		return "an integer or a string";
	default:
		return "a number or a string";
	}
}

static bool type_ok(const json_t *v, unsigned types)
{
	return ((types & T_STR) && json_is_string(v)) || ((types & T_INT) && json_is_integer(v)) ||
	       ((types & T_NUM) && json_is_number(v));
}

/* Appends s with control bytes, '"' and '\' escaped. */
static size_t append_escaped(char *buf, size_t len, size_t o, const char *s)
{
	for (; *s && o + 5 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
		else if (c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, len - o, "\\%c", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = 0;
	return o;
}

/*
 * Reports "NAME:LINE:COL: PATH: message" at the value path[0..depth) (its member name with
 * want_key), or at the nearest enclosing value that exists.  With key_in_msg the message starts
 * with the last step's key ("qps: ..."), which the printed path then leaves out.
 */
__attribute__((format(printf, 6, 7))) static int reject(struct ctx *x,
							 const struct jsonpos_seg *path,
							 size_t depth, bool want_key,
							 bool key_in_msg, const char *fmt, ...)
{
	struct jsonpos pos = { .line = 1, .col = 1 };
	size_t shown = key_in_msg && depth ? depth - 1 : depth, o = 0;
	char where[160] = "", msg[MSG_MAX];
	va_list ap;

	for (size_t d = depth + 1; d-- > 0;) {
		if (jsonpos_find(x->text, x->len, path, d, want_key && d == depth, &pos) == 0)
			break;
	}
	for (size_t i = 0; i < shown && o + 24 < sizeof(where); i++) {
		if (path[i].key) {
			if (i)
				where[o++] = '.';
			o = append_escaped(where, sizeof(where), o, path[i].key);
		} else {
			o += (size_t)snprintf(where + o, sizeof(where) - o, "[%zu]", path[i].index);
		}
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (x->err && x->errlen)
		snprintf(x->err, x->errlen, "%s:%u:%u: %s%s%s", x->name, pos.line, pos.col, where,
			 !o ? "" : key_in_msg ? "." : ": ", msg);
	return -EINVAL;
}

/* The first member of obj whose name is not in keys[]: "PATH.KEY: unknown key". */
static int check_keys(struct ctx *x, json_t *obj, struct jsonpos_seg *path, size_t depth,
		      const char *const *keys, size_t nkeys, bool (*also)(const char *))
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		bool known = also && also(key);

		for (size_t i = 0; i < nkeys && !known; i++)
			known = strcmp(key, keys[i]) == 0;
		if (!known) {
			path[depth].key = key;
			return reject(x, path, depth + 1, true, false, "unknown key");
		}
	}
	return 0;
}

/* A JSON scalar as the text bench_flow_set() reads. */
static void value_text(const json_t *v, char *buf, size_t len)
{
	if (json_is_string(v))
		snprintf(buf, len, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else
		snprintf(buf, len, "%.6f", json_real_value(v));
}

static bool class_key(const char *key)
{
	return strcmp(key, "class") == 0 || bench_flow_key_known(key);
}

static int parse_flow(struct ctx *x, json_t *obj, size_t i, struct bench_flow *f)
{
	struct jsonpos_seg path[3] = { { .key = "flows" }, { .index = i } };
	json_t *cls = NULL, *v[N_FLOW_KEYS] = { NULL };
	char text[4096], msg[MSG_MAX];
	enum bench_class c;
	const char *bad;
	json_error_t je;
	int rc;

	if (!json_is_object(obj))
		return reject(x, path, 2, false, false, "expected an object, got %s",
			      type_name(obj));
	rc = check_keys(x, obj, path, 2, NULL, 0, class_key);
	if (rc)
		return rc;
	if (json_unpack_ex(obj, &je, JSON_STRICT,
			   "{s:o, s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o}", "class", &cls,
			   flow_keys[0].key, &v[0], flow_keys[1].key, &v[1], flow_keys[2].key,
			   &v[2], flow_keys[3].key, &v[3], flow_keys[4].key, &v[4],
			   flow_keys[5].key, &v[5], flow_keys[6].key, &v[6], flow_keys[7].key,
			   &v[7], flow_keys[8].key, &v[8], flow_keys[9].key, &v[9],
			   flow_keys[10].key, &v[10])) {
		if (!json_object_get(obj, "class"))
			return reject(x, path, 2, false, false, "missing key \"class\"");
		return reject(x, path, 2, false, false, "%s", je.text);
	}
	path[2].key = "class";
	if (!json_is_string(cls))
		return reject(x, path, 3, false, false, "expected a string, got %s",
			      type_name(cls));
	if (bench_class_parse(json_string_value(cls), &c)) {
		append_escaped(text, 64, 0, json_string_value(cls));
		return reject(x, path, 3, false, false,
			      "unknown class \"%s\" (latency, throughput or bandwidth; or lat, "
			      "tput, bw)", text);
	}
	bench_flow_init(f, c, (unsigned)i);
	for (size_t k = 0; k < N_FLOW_KEYS; k++) {
		if (!v[k])
			continue;
		path[2].key = flow_keys[k].key;
		if (!type_ok(v[k], flow_keys[k].types))
			return reject(x, path, 3, false, false, "expected %s, got %s",
				      types_name(flow_keys[k].types), type_name(v[k]));
		value_text(v[k], text, sizeof(text));
		if (bench_flow_set(f, flow_keys[k].key, text, msg, sizeof(msg)))
			return reject(x, path, 3, false, true, "%s", msg);
	}
	if (bench_flow_check(f, &bad, msg, sizeof(msg))) {
		path[2].key = bad;
		return reject(x, path, 3, false, true, "%s", msg);
	}
	return 0;
}

static int parse_root(struct ctx *x, json_t *root, struct bench_scenario *sc)
{
	struct jsonpos_seg path[3] = { { .key = NULL } };
	json_t *ver = NULL, *desc = NULL, *flows = NULL;
	char msg[MSG_MAX];
	const char *key;
	json_error_t je;
	size_t bad;
	int rc;

	if (!json_is_object(root))
		return reject(x, path, 0, false, false, "top level must be an object, got %s",
			      type_name(root));
	rc = check_keys(x, root, path, 0, top_keys, ARRAY_SIZE(top_keys), NULL);
	if (rc)
		return rc;
	if (json_unpack_ex(root, &je, JSON_STRICT, "{s:o, s?o, s:o}", "version", &ver,
			   "description", &desc, "flows", &flows)) {
		for (size_t i = 0; i < ARRAY_SIZE(top_keys); i++)
			if (i != 1 && !json_object_get(root, top_keys[i]))
				return reject(x, path, 0, false, false, "missing key \"%s\"",
					      top_keys[i]);
		return reject(x, path, 0, false, false, "%s", je.text);
	}
	path[0].key = "version";
	if (!json_is_integer(ver))
		return reject(x, path, 1, false, false, "expected an integer, got %s",
			      type_name(ver));
	if (json_integer_value(ver) != BENCH_SCENARIO_VERSION)
		return reject(x, path, 1, false, false, "%lld is not supported (this justbench "
			      "reads version %d)", (long long)json_integer_value(ver),
			      BENCH_SCENARIO_VERSION);
	if (desc) {
		path[0].key = "description";
		if (!json_is_string(desc))
			return reject(x, path, 1, false, false, "expected a string, got %s",
				      type_name(desc));
		if (json_string_length(desc) >= sizeof(sc->description))
			return reject(x, path, 1, false, false, "too long (%zu bytes, at most %zu)",
				      json_string_length(desc), sizeof(sc->description) - 1);
		strcpy(sc->description, json_string_value(desc));
	}
	path[0].key = "flows";
	if (!json_is_array(flows))
		return reject(x, path, 1, false, false, "expected an array, got %s",
			      type_name(flows));
	if (json_array_size(flows) == 0)
		return reject(x, path, 1, false, false, "no flows (at least one is needed)");
	if (json_array_size(flows) > BENCH_FLOWS_MAX)
		return reject(x, path, 1, false, false, "too many flows (%zu, at most %d)",
			      json_array_size(flows), BENCH_FLOWS_MAX);
	for (size_t i = 0; i < json_array_size(flows); i++) {
		rc = parse_flow(x, json_array_get(flows, i), i, &sc->flows[i]);
		if (rc)
			return rc;
		sc->n++;
	}
	if (bench_flows_check(sc->flows, sc->n, &bad, msg, sizeof(msg))) {
		key = strncmp(msg, "qps:", 4) == 0 ? "qps" : "name";
		path[1].index = bad;
		path[2].key = key;
		return reject(x, path, 3, false, true, "%s", msg);
	}
	return 0;
}

static bool only_whitespace(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!strchr(" \t\r\n", s[i]) || !s[i])
			return false;
	return true;
}

int bench_scenario_parse(const char *name, const char *text, size_t len,
			 struct bench_scenario *sc, char *err, size_t errlen)
{
	struct ctx x = { .name = name, .text = text ? text : "", .len = text ? len : 0,
			 .err = err, .errlen = errlen };
	struct jsonpos pos;
	json_error_t je;
	json_t *root;
	int rc;

	memset(sc, 0, sizeof(*sc));
	if (err && errlen)
		*err = 0;
	if (only_whitespace(x.text, x.len)) {
		if (err && errlen)
			snprintf(err, errlen, "%s:1:1: file is empty (expected a JSON object)",
				 name);
		return -EINVAL;
	}
	root = json_loadb(x.text, x.len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (!root) {
		jsonpos_from_offset(x.text, x.len, jsonpos_syntax_offset(x.text, x.len, &je), &pos);
		if (err && errlen)
			snprintf(err, errlen, "%s:%u:%u: %s", name, pos.line, pos.col, je.text);
		return -EINVAL;
	}
	rc = parse_root(&x, root, sc);
	json_decref(root);
	if (rc)
		memset(sc, 0, sizeof(*sc));
	return rc;
}

__attribute__((format(printf, 3, 4))) static void say(char *err, size_t errlen,
						       const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int bench_scenario_load(const char *path, struct bench_scenario *sc, char *err, size_t errlen)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nbuf;
	ssize_t n;
	int fd, rc;

	memset(sc, 0, sizeof(*sc));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		say(err, errlen, "%s: cannot open: %s", path, strerror(-rc));
		return rc;
	}
	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 4096;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				rc = -ENOMEM;
				say(err, errlen, "%s: out of memory", path);
				goto out_free;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			say(err, errlen, "%s: cannot read: %s", path, strerror(-rc));
			goto out_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > BENCH_SCENARIO_FILE_MAX) {
			rc = -EFBIG;
			say(err, errlen, "%s: file too large (more than %d bytes)", path,
				 BENCH_SCENARIO_FILE_MAX);
			goto out_free;
		}
	}
	rc = bench_scenario_parse(path, buf, len, sc, err, errlen);
out_free:
	free(buf);
	close(fd);
	return rc;
}

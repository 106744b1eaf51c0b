// SPDX-License-Identifier: MIT
/* The configuration's parser: a strict JSON text walked along the schema's
 * tables (configschema.h: key, type, range, where the value goes), every
 * value checked and stored, the first error placed as FILE:LINE:COL by
 * jsonpos_find() from the path the walk keeps on a small stack.
 * May call: common/jsonpos, common/rate; not config.c or configdump.c. */
#include "configschema.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonpos.h"
#include "rate.h"

#define CONFIG_FILE_MAX (1 * MiB)

int configparse_name_index(const char *const *names, const char *s)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

size_t configparse_name_count(const char *const *names)
{
	size_t n = 0;

	while (names[n])
		n++;
	return n;
}

/* Rates as the file writes them (common/rate.h), and as the dump and the
 * messages print them. */
int config_parse_rate(const char *s, uint64_t *bps)
{
	return rate_parse(s, bps);
}

int config_format_rate(uint64_t bps, char *buf, size_t len)
{
	static const char *const units[] = { "Tbit", "Gbit", "Mbit", "kbit" };
	int n = -1;

	for (unsigned i = 0; i < ARRAY_SIZE(units) && n < 0; i++) {
		unsigned digits = 12 - 3 * i;
		uint64_t ip = bps / rate_pow10(digits), rem = bps % rate_pow10(digits);

		if (!ip)
			continue;
		while (rem && rem % 10 == 0) {
			rem /= 10;
			digits--;
		}
		if (rem)
			n = snprintf(buf, len, "%llu.%0*llu%s", (unsigned long long)ip, (int)digits,
				     (unsigned long long)rem, units[i]);
		else
			n = snprintf(buf, len, "%llu%s", (unsigned long long)ip, units[i]);
	}
	if (n < 0)
		n = snprintf(buf, len, "%llubit", (unsigned long long)bps);
	return (size_t)n < len ? 0 : -ENOSPC;
}

/* ---------------------------------------------------------------- errors */

void configparse_report(struct ctx *x, const char *fmt, ...)
{
	va_list ap;

	if (!x->err || !x->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(x->err, x->errlen, fmt, ap);
	va_end(ap);
}

/* s, quoted, control bytes escaped, cut to about 40 bytes: safe to print whatever the file held. */
const char *configparse_quote(char *buf, size_t n, const char *s)
{
	size_t o = 0;

	buf[o++] = '"';
	for (; *s && o + 8 < n; s++) {
		unsigned char ch = (unsigned char)*s;

		if (o > 42) {
			o += (size_t)snprintf(buf + o, n - o, "...");
			break;
		}
		if (ch < 0x20 || ch == 0x7f)
			o += (size_t)snprintf(buf + o, n - o, "\\x%02x", ch);
		else if (ch == '"' || ch == '\\')
			o += (size_t)snprintf(buf + o, n - o, "\\%c", ch);
		else
			buf[o++] = (char)ch;
	}
	buf[o++] = '"';
	buf[o] = 0;
	return buf;
}

void configparse_push_key(struct ctx *x, const char *key)
{
	if (x->depth < PATH_DEPTH_MAX)
		x->path[x->depth] = (struct jsonpos_seg){ .key = key };
	x->depth++;
}

void configparse_push_index(struct ctx *x, size_t i)
{
	if (x->depth < PATH_DEPTH_MAX)
		x->path[x->depth] = (struct jsonpos_seg){ .index = i };
	x->depth++;
}

/* Reports a message about the value at the current path (or its key); returns -EINVAL. */
int configparse_reject(struct ctx *x, bool at_key, const char *fmt, ...)
{
	char msg[512], where[256] = "", q[64];
	size_t depth = x->depth < PATH_DEPTH_MAX ? x->depth : PATH_DEPTH_MAX, o = 0;
	struct jsonpos pos;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < depth && o < sizeof(where); i++) {
		const struct jsonpos_seg *s = &x->path[i];

		if (!s->key) {
			o += (size_t)snprintf(where + o, sizeof(where) - o, "[%zu]", s->index);
			continue;
		}
		configparse_quote(q, sizeof(q), s->key);
		q[strlen(q) - 1] = 0;
		o += (size_t)snprintf(where + o, sizeof(where) - o, "%s%s", i ? "." : "", q + 1);
	}
	if (jsonpos_find(x->text, x->len, x->path, depth, at_key, &pos) == 0)
		configparse_report(x, "%s:%u:%u: %s%s%s", x->name, pos.line, pos.col, where,
				   *where ? ": " : "", msg);
	else
		configparse_report(x, "%s: %s%s%s", x->name, where, *where ? ": " : "", msg);
	return -EINVAL;
}

const char *configparse_type_name(const json_t *v)
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
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* ---------------------------------------------------------------- values */

/* An integer in [min, max]; a number with a fraction is not one, but 1e3 is. */
static int get_int(struct ctx *x, json_t *v, long long min, long long max, long long *out)
{
	double d;

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
	} else if (json_is_real(v)) {
		d = json_real_value(v);
		if (d < (double)min || d > (double)max)
			return configparse_reject(x, false, "%g is out of range (%lld..%lld)", d,
						  min, max);
		*out = (long long)d;
		if ((double)*out != d)
			return configparse_reject(x, false, "expected an integer, got %g", d);
	} else {
		return configparse_reject(x, false, "expected an integer, got %s",
					  configparse_type_name(v));
	}
	if (*out < min || *out > max)
		return configparse_reject(x, false, "%lld is out of range (%lld..%lld)", *out, min,
					  max);
	return 0;
}

static void store_int(void *dst, size_t size, bool is_signed, long long v)
{
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;
	int32_t i32 = (int32_t)v;
	uint64_t u64 = (uint64_t)v;

	if (size == 2)
		memcpy(dst, &u16, 2);
	else if (size == 4 && is_signed)
		memcpy(dst, &i32, 4);
	else if (size == 4)
		memcpy(dst, &u32, 4);
	else
		memcpy(dst, &u64, 8);
}

long long configparse_load_int(const void *src, size_t size, bool is_signed)
{
	uint16_t u16;
	uint32_t u32;
	int32_t i32;
	uint64_t u64;

	if (size == 2) {
		memcpy(&u16, src, 2);
		return u16;
	}
	if (size == 4 && is_signed) {
		memcpy(&i32, src, 4);
		return i32;
	}
	if (size == 4) {
		memcpy(&u32, src, 4);
		return u32;
	}
	memcpy(&u64, src, 8);
	return (long long)u64;
}

int configparse_get_string(struct ctx *x, json_t *v, bool null_ok, const char **out)
{
	if (null_ok && json_is_null(v)) {
		*out = "";
		return 0;
	}
	if (!json_is_string(v))
		return configparse_reject(x, false, "expected %sa string, got %s",
					  null_ok ? "null or " : "", configparse_type_name(v));
	*out = json_string_value(v);
	return 0;
}

/* T_STR and T_PATH */
static int get_text(struct ctx *x, const struct field *f, json_t *v, char *dst)
{
	const char *s = NULL;
	char q[64];
	int rc = configparse_get_string(x, v, f->flags & F_NULL, &s);

	if (rc)
		return rc;
	if (!*s && json_is_null(v)) {
		*dst = 0;
		return 0;
	}
	if (f->type == T_PATH && s[0] != '/')
		return configparse_reject(x, false, "must be an absolute path, got %s",
					  configparse_quote(q, sizeof(q), s));
	if (!*s)
		return configparse_reject(x, false, "must not be empty");
	if (strlen(s) >= f->size)
		return configparse_reject(x, false, "too long (%zu bytes, at most %zu)", strlen(s),
					  f->size - 1);
	if (f->valid && !f->valid(s))
		return configparse_reject(x, false, "%s is not %s",
					  configparse_quote(q, sizeof(q), s), f->what);
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

static int get_enum(struct ctx *x, const struct field *f, json_t *v, void *dst)
{
	char q[64], list[128] = "";
	const char *s = NULL;
	int rc = configparse_get_string(x, v, false, &s), i;

	if (rc)
		return rc;
	i = configparse_name_index(f->names, s);
	if (i >= 0) {
		store_int(dst, f->size, false, i);
		return 0;
	}
	for (size_t k = 0; f->names[k]; k++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", k ? ", " : "",
			 f->names[k]);
	return configparse_reject(x, false, "unknown value %s (%s)",
				  configparse_quote(q, sizeof(q), s), list);
}

static int get_rate(struct ctx *x, json_t *v, uint64_t *out)
{
	char q[64], r[32];
	long long n;
	double d;

	if (json_is_string(v)) {
		const char *s = json_string_value(v);

		if (strcmp(s, "auto") == 0) {
			*out = 0;
			return 0;
		}
		if (rate_parse(s, out))
			return configparse_reject(
			    x, false,
			    "invalid rate %s (write e.g. \"25Gbit\", \"400Mbit\", "
			    "\"1.5Gbit\" or bit/s)",
			    configparse_quote(q, sizeof(q), s));
	} else if (json_is_integer(v)) {
		n = json_integer_value(v);
		if (n < (long long)RATE_MIN || n > (long long)RATE_MAX)
			return configparse_reject(x, false, "%lld is out of range (1Mbit..1.6Tbit)",
						  n);
		*out = (uint64_t)n;
	} else if (json_is_real(v)) {
		d = json_real_value(v);
		if (d < (double)RATE_MIN || d > (double)RATE_MAX)
			return configparse_reject(x, false, "%g is out of range (1Mbit..1.6Tbit)",
						  d);
		*out = (uint64_t)d;
		if ((double)*out != d)
			return configparse_reject(x, false,
						  "expected a whole number of bit/s, got %g", d);
	} else {
		return configparse_reject(x, false,
					  "expected \"auto\", a number or a rate string, got %s",
					  configparse_type_name(v));
	}
	if (*out < RATE_MIN || *out > RATE_MAX) {
		config_format_rate(*out, r, sizeof(r));
		return configparse_reject(x, false, "%s is out of range (1Mbit..1.6Tbit)", r);
	}
	return 0;
}

static int parse_array(struct ctx *x, const struct field *f, json_t *arr);

static int parse_value(struct ctx *x, const struct field *f, json_t *v, void *dst)
{
	long long n = 0;
	int rc;

	switch (f->type) {
	case T_INT:
		rc = get_int(x, v, f->min, f->max, &n);
		if (!rc)
			store_int(dst, f->size, f->min < 0, n);
		return rc;
	case T_BOOL:
		if (!json_is_boolean(v))
			return configparse_reject(x, false, "expected true or false, got %s",
						  configparse_type_name(v));
		*(bool *)dst = json_is_true(v);
		return 0;
	case T_REAL:
		if (!json_is_number(v))
			return configparse_reject(x, false, "expected a number, got %s",
						  configparse_type_name(v));
		if (json_number_value(v) < 0 || json_number_value(v) > 1)
			return configparse_reject(x, false, "%g is out of range (0..1)",
						  json_number_value(v));
		*(double *)dst = json_number_value(v);
		return 0;
	case T_RATE:
		return get_rate(x, v, dst);
	case T_STR:
	case T_PATH:
		return get_text(x, f, v, dst);
	case T_ENUM:
		return get_enum(x, f, v, dst);
	case T_OBJ:
		return configparse_section(x, v, f->sub, dst);
	case T_ARR:
		return parse_array(x, f, v);
	case T_FN:
		return f->parse(x, v, dst);
	}
	return -EINVAL;
}

/* A comment: any member whose name starts with "_comment" ("_comment",
 * "_comment_peers"), in any object, holding a string or an array of strings.
 * It is checked for type, otherwise ignored, and not dumped. */
#define COMMENT_PREFIX "_comment"

static bool is_comment_key(const char *key)
{
	return strncmp(key, COMMENT_PREFIX, sizeof(COMMENT_PREFIX) - 1) == 0;
}

static int check_comment(struct ctx *x, json_t *v)
{
	size_t i;
	json_t *e;

	if (json_is_string(v))
		return 0;
	if (!json_is_array(v))
		return configparse_reject(
		    x, false, "a comment must be a string or an array of strings, got %s",
		    configparse_type_name(v));
	json_array_foreach(v, i, e) {
		if (!json_is_string(e)) {
			configparse_push_index(x, i);
			return configparse_reject(x, false,
						  "a comment must be a string or an array of "
						  "strings, got %s",
						  configparse_type_name(e));
		}
	}
	return 0;
}

/* Every member of obj must be a field of s (or a comment); each is stored at
 * base + its offset. */
int configparse_section(struct ctx *x, json_t *obj, const struct section *s, void *base)
{
	const char *key;
	json_t *v;
	int rc;

	if (!json_is_object(obj))
		return configparse_reject(x, false, "expected an object, got %s",
					  configparse_type_name(obj));
	json_object_foreach(obj, key, v) {
		const struct field *f = NULL;

		if (is_comment_key(key)) {
			configparse_push_key(x, key);
			rc = check_comment(x, v);
			if (rc)
				return rc;
			x->depth--;
			continue;
		}
		for (size_t i = 0; i < s->n && !f; i++)
			if (strcmp(s->fields[i].key, key) == 0)
				f = &s->fields[i];
		configparse_push_key(x, key);
		if (!f)
			return configparse_reject(x, true, "unknown key");
		rc = parse_value(x, f, v, (char *)base + f->off);
		if (rc)
			return rc;
		x->depth--;
	}
	return s->check ? s->check(x, obj, base) : 0;
}

/* The elements go to a calloc'ed array in struct config (not in the section). */
static int parse_array(struct ctx *x, const struct field *f, json_t *arr)
{
	const struct section *s = f->sub;
	size_t n, i;
	char *elems;
	json_t *v;
	int rc;

	if (!json_is_array(arr))
		return configparse_reject(x, false, "expected an array, got %s",
					  configparse_type_name(arr));
	n = json_array_size(arr);
	if (n > (size_t)f->max)
		return configparse_reject(x, false, "too many entries (%zu, at most %lld)", n,
					  f->max);
	if (!n)
		return 0;
	elems = calloc(n, s->size);
	if (!elems) {
		configparse_report(x, "%s: out of memory", x->name);
		return -ENOMEM;
	}
	memcpy((char *)x->c + f->arr_off, &elems, sizeof(elems));
	json_array_foreach(arr, i, v) {
		configparse_push_index(x, i);
		memcpy(elems + i * s->size, s->init, s->size);
		n = i + 1; /* what config_free() must free, should the element be bad */
		memcpy((char *)x->c + f->count_off, &n, sizeof(n));
		rc = configparse_section(x, v, s, elems + i * s->size);
		if (rc)
			return rc;
		x->depth--;
	}
	return 0;
}

int configparse_require(struct ctx *x, json_t *obj, const char *key)
{
	if (json_object_get(obj, key))
		return 0;
	return configparse_reject(x, false, "missing required key \"%s\"", key);
}

static bool only_whitespace(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!s[i] || !strchr(" \t\r\n", s[i]))
			return false;
	return true;
}

/* Parse @x's text against @top into @base: 0, or -errno with the message
 * in x->err (FILE:LINE:COL where the text allows). */
int configparse_text(struct ctx *x, const struct section *top, void *base)
{
	struct jsonpos pos;
	json_error_t je;
	json_t *root;
	int rc;

	if (x->err && x->errlen)
		*x->err = 0;
	if (only_whitespace(x->text, x->len)) {
		configparse_report(x, "%s:1:1: file is empty (expected a JSON object)", x->name);
		return -EINVAL;
	}
	root = json_loadb(x->text, x->len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (!root) {
		jsonpos_from_offset(x->text, x->len, jsonpos_syntax_offset(x->text, x->len, &je),
				    &pos);
		configparse_report(x, "%s:%u:%u: %s", x->name, pos.line, pos.col, je.text);
		return -EINVAL;
	}
	if (json_is_object(root))
		rc = configparse_section(x, root, top, base);
	else
		rc = configparse_reject(x, false, "top level must be an object");
	json_decref(root);
	return rc;
}

/* The whole file @x->name into *@buf (malloc'ed, also on failure), at most
 * CONFIG_FILE_MAX bytes: 0 or -errno with the message in x->err. */
int configparse_read(struct ctx *x, char **buf, size_t *len)
{
	const char *path = x->name;
	size_t cap = 0;
	char *nbuf;
	ssize_t n;
	int fd, rc;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		configparse_report(x, "%s: cannot open: %s", path, strerror(-rc));
		return rc;
	}
	for (;;) {
		if (*len == cap) {
			cap = cap ? 2 * cap : 4096;
			nbuf = realloc(*buf, cap);
			if (!nbuf) {
				rc = -ENOMEM;
				configparse_report(x, "%s: out of memory", path);
				goto out_close;
			}
			*buf = nbuf;
		}
		n = read(fd, *buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			configparse_report(x, "%s: cannot read: %s", path, strerror(-rc));
			goto out_close;
		}
		if (n == 0)
			break;
		*len += (size_t)n;
		if (*len > CONFIG_FILE_MAX) {
			rc = -EFBIG;
			configparse_report(x, "%s: file too large (more than %d bytes)", path,
					   CONFIG_FILE_MAX);
			goto out_close;
		}
	}
	rc = 0;
out_close:
	close(fd);
	return rc;
}

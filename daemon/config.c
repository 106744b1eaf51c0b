// SPDX-License-Identifier: MIT
/*
 * justitiad configuration: a strict JSON file checked against one schema.
 *
 * The schema is a table of fields per JSON object (struct section): key, type, range, where in
 * struct config the value goes.  Loading looks every member up in its section (unknown keys are
 * errors), checks type and range and stores it; the first error stops the load, its message
 * placed as FILE:LINE:COL by jsonpos_find() from the path the walk keeps on a small stack.
 * Dumping walks the same tables, so every key that can be read is also written.
 */
#include "config.h"
#include "jsonpos.h"
#include "rate.h"
#include "shm_abi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define KiB 1024
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

#define RATE_MIN	RATE_MIN_BPS
#define RATE_MAX	RATE_MAX_BPS
#define CONFIG_FILE_MAX (1 * MiB)
#define SOCKET_NAME	"/justitiad.sock"
#define PATH_DEPTH_MAX	8
#define PEER_PORT	7471

struct ctx {
	const char *name; /* file name for messages */
	const char *text;
	size_t len;
	char *err;
	size_t errlen;
	struct config *c;
	struct jsonpos_seg path[PATH_DEPTH_MAX];
	size_t depth;
};

enum ftype {
	T_INT,	/* integer in [min, max], in `size` bytes, signed if min < 0 */
	T_BOOL, /* bool */
	T_REAL, /* number in [0, 1], double */
	T_RATE, /* rate in RATE_MIN..RATE_MAX, uint64_t bit/s; "auto" = 0 */
	T_STR,	/* string of 1..size-1 bytes that valid() accepts, char[size] */
	T_PATH, /* absolute path, char[size] */
	T_ENUM, /* one of names[], an enum */
	T_OBJ,	/* object with the fields of sub */
	T_ARR,	/* up to max objects of sub; in struct config at arr_off, count_off */
	T_FN,	/* parse() and dump() */
};

#define F_NULL 1 /* T_STR, T_PATH: null is allowed, stored as "" */
#define F_OPT  2 /* T_STR: "" = absent, left out of the dump */

struct field;

struct section {
	const struct field *fields;
	size_t n;
	size_t size;	  /* of an array element */
	const void *init; /* defaults of an array element */
	int (*check)(struct ctx *x, json_t *obj, void *base); /* after all members; may be NULL */
};

struct field {
	const char *key;
	enum ftype type;
	size_t off;
	size_t size;
	long long min;
	long long max;
	unsigned flags;
	size_t arr_off, count_off;    /* T_ARR: in struct config */
	const char *const *names;     /* T_ENUM, NULL-terminated */
	bool (*valid)(const char *s); /* T_STR */
	const char *what;	      /* T_STR: what valid() accepts */
	const struct section *sub;    /* T_OBJ, T_ARR */
	int (*parse)(struct ctx *x, json_t *v, void *dst);	   /* T_FN */
	json_t *(*dump)(const void *src, bool *leave_out); /* T_FN */
};

#define AT(st, m) .off = offsetof(st, m), .size = sizeof(((st *)0)->m)

static const char *const class_names[] = { JST_CLASS_NAME_LIST, NULL };
static const char *const class_short[] = { "lat", "tput", "bw", NULL };
static const char *const level_names[] = { "error", "warn", "info", "debug", NULL };
static const char *const subsys_names[] = { "ctl",   "shm", "flow",	"ref", "ctrl",
					    "token", "bpf", "config", NULL };
static const char *const policy_names[] = { "keep", "ignore_latency", NULL };
static const char *const pace_mode_names[] = { "auto", "share", "protect", NULL };
_Static_assert(ARRAY_SIZE(class_names) == JST_CLASS_COUNT + 1, "a name per class");
_Static_assert(ARRAY_SIZE(subsys_names) == CONFIG_SUBSYS_MAX + 1, "a name per subsystem");
_Static_assert(ARRAY_SIZE(level_names) == CONFIG_LOG_DEBUG + 2, "a name per log level");

static int name_index(const char *const *names, const char *s)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

static size_t name_count(const char *const *names)
{
	size_t n = 0;

	while (names[n])
		n++;
	return n;
}

const char *config_class_name(enum flow_class c)
{
	return (unsigned)c < ARRAY_SIZE(class_names) - 1 ? class_names[c] : "invalid";
}

int config_class_parse(const char *s, enum flow_class *out)
{
	int i = name_index(class_names, s);

	if (i < 0)
		i = name_index(class_short, s);
	if (i < 0)
		return -EINVAL;
	*out = (enum flow_class)i;
	return 0;
}

const char *config_log_level_name(enum config_log_level l)
{
	return (unsigned)l < ARRAY_SIZE(level_names) - 1 ? level_names[l] : "invalid";
}

int config_log_level_parse(const char *s, enum config_log_level *out)
{
	int i = name_index(level_names, s);

	if (i < 0)
		return -EINVAL;
	*out = (enum config_log_level)i;
	return 0;
}

const char *config_subsys_name(enum config_subsys s)
{
	return (unsigned)s < CONFIG_SUBSYS_MAX ? subsys_names[s] : "invalid";
}

int config_subsys_parse(const char *s, enum config_subsys *out)
{
	int i = name_index(subsys_names, s);

	if (i < 0)
		return -EINVAL;
	*out = (enum config_subsys)i;
	return 0;
}

/* ---------------------------------------------------------------- rates */

int config_parse_rate(const char *s, uint64_t *bps)
{
	return rate_parse(s, bps);
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
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

static void report(struct ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void report(struct ctx *x, const char *fmt, ...)
{
	va_list ap;

	if (!x->err || !x->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(x->err, x->errlen, fmt, ap);
	va_end(ap);
}

/* s, quoted, control bytes escaped, cut to about 40 bytes: safe to print whatever the file held. */
static const char *quote(char *buf, size_t n, const char *s)
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

static void push_key(struct ctx *x, const char *key)
{
	if (x->depth < PATH_DEPTH_MAX)
		x->path[x->depth] = (struct jsonpos_seg){ .key = key };
	x->depth++;
}

static void push_index(struct ctx *x, size_t i)
{
	if (x->depth < PATH_DEPTH_MAX)
		x->path[x->depth] = (struct jsonpos_seg){ .index = i };
	x->depth++;
}

static int reject(struct ctx *x, bool at_key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Reports a message about the value at the current path (or its key); returns -EINVAL. */
static int reject(struct ctx *x, bool at_key, const char *fmt, ...)
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
		quote(q, sizeof(q), s->key);
		q[strlen(q) - 1] = 0;
		o += (size_t)snprintf(where + o, sizeof(where) - o, "%s%s", i ? "." : "", q + 1);
	}
	if (jsonpos_find(x->text, x->len, x->path, depth, at_key, &pos) == 0)
		report(x, "%s:%u:%u: %s%s%s", x->name, pos.line, pos.col, where, *where ? ": " : "",
		       msg);
	else
		report(x, "%s: %s%s%s", x->name, where, *where ? ": " : "", msg);
	return -EINVAL;
}

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
			return reject(x, false, "%g is out of range (%lld..%lld)", d, min, max);
		*out = (long long)d;
		if ((double)*out != d)
			return reject(x, false, "expected an integer, got %g", d);
	} else {
		return reject(x, false, "expected an integer, got %s", type_name(v));
	}
	if (*out < min || *out > max)
		return reject(x, false, "%lld is out of range (%lld..%lld)", *out, min, max);
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

static long long load_int(const void *src, size_t size, bool is_signed)
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

static int get_string(struct ctx *x, json_t *v, bool null_ok, const char **out)
{
	if (null_ok && json_is_null(v)) {
		*out = "";
		return 0;
	}
	if (!json_is_string(v))
		return reject(x, false, "expected %sa string, got %s", null_ok ? "null or " : "",
			      type_name(v));
	*out = json_string_value(v);
	return 0;
}

/* T_STR and T_PATH */
static int get_text(struct ctx *x, const struct field *f, json_t *v, char *dst)
{
	const char *s = NULL;
	char q[64];
	int rc = get_string(x, v, f->flags & F_NULL, &s);

	if (rc)
		return rc;
	if (!*s && json_is_null(v)) {
		*dst = 0;
		return 0;
	}
	if (f->type == T_PATH && s[0] != '/')
		return reject(x, false, "must be an absolute path, got %s", quote(q, sizeof(q), s));
	if (!*s)
		return reject(x, false, "must not be empty");
	if (strlen(s) >= f->size)
		return reject(x, false, "too long (%zu bytes, at most %zu)", strlen(s),
			      f->size - 1);
	if (f->valid && !f->valid(s))
		return reject(x, false, "%s is not %s", quote(q, sizeof(q), s), f->what);
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

static int get_enum(struct ctx *x, const struct field *f, json_t *v, void *dst)
{
	char q[64], list[128] = "";
	const char *s = NULL;
	int rc = get_string(x, v, false, &s), i;

	if (rc)
		return rc;
	i = name_index(f->names, s);
	if (i >= 0) {
		store_int(dst, f->size, false, i);
		return 0;
	}
	for (size_t k = 0; f->names[k]; k++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", k ? ", " : "",
			 f->names[k]);
	return reject(x, false, "unknown value %s (%s)", quote(q, sizeof(q), s), list);
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
		if (config_parse_rate(s, out))
			return reject(x, false,
				      "invalid rate %s (write e.g. \"25Gbit\", \"400Mbit\", "
				      "\"1.5Gbit\" or bit/s)",
				      quote(q, sizeof(q), s));
	} else if (json_is_integer(v)) {
		n = json_integer_value(v);
		if (n < (long long)RATE_MIN || n > (long long)RATE_MAX)
			return reject(x, false, "%lld is out of range (1Mbit..1.6Tbit)", n);
		*out = (uint64_t)n;
	} else if (json_is_real(v)) {
		d = json_real_value(v);
		if (d < (double)RATE_MIN || d > (double)RATE_MAX)
			return reject(x, false, "%g is out of range (1Mbit..1.6Tbit)", d);
		*out = (uint64_t)d;
		if ((double)*out != d)
			return reject(x, false, "expected a whole number of bit/s, got %g", d);
	} else {
		return reject(x, false, "expected \"auto\", a number or a rate string, got %s",
			      type_name(v));
	}
	if (*out < RATE_MIN || *out > RATE_MAX) {
		config_format_rate(*out, r, sizeof(r));
		return reject(x, false, "%s is out of range (1Mbit..1.6Tbit)", r);
	}
	return 0;
}

static int parse_section(struct ctx *x, json_t *obj, const struct section *s, void *base);
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
			return reject(x, false, "expected true or false, got %s", type_name(v));
		*(bool *)dst = json_is_true(v);
		return 0;
	case T_REAL:
		if (!json_is_number(v))
			return reject(x, false, "expected a number, got %s", type_name(v));
		if (json_number_value(v) < 0 || json_number_value(v) > 1)
			return reject(x, false, "%g is out of range (0..1)", json_number_value(v));
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
		return parse_section(x, v, f->sub, dst);
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
		return reject(x, false, "a comment must be a string or an array of strings, got %s",
			      type_name(v));
	json_array_foreach(v, i, e) {
		if (!json_is_string(e)) {
			push_index(x, i);
			return reject(x, false, "a comment must be a string or an array of "
				      "strings, got %s", type_name(e));
		}
	}
	return 0;
}

/* Every member of obj must be a field of s (or a comment); each is stored at
 * base + its offset. */
static int parse_section(struct ctx *x, json_t *obj, const struct section *s, void *base)
{
	const char *key;
	json_t *v;
	int rc;

	if (!json_is_object(obj))
		return reject(x, false, "expected an object, got %s", type_name(obj));
	json_object_foreach(obj, key, v) {
		const struct field *f = NULL;

		if (is_comment_key(key)) {
			push_key(x, key);
			rc = check_comment(x, v);
			if (rc)
				return rc;
			x->depth--;
			continue;
		}
		for (size_t i = 0; i < s->n && !f; i++)
			if (strcmp(s->fields[i].key, key) == 0)
				f = &s->fields[i];
		push_key(x, key);
		if (!f)
			return reject(x, true, "unknown key");
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
		return reject(x, false, "expected an array, got %s", type_name(arr));
	n = json_array_size(arr);
	if (n > (size_t)f->max)
		return reject(x, false, "too many entries (%zu, at most %lld)", n, f->max);
	if (!n)
		return 0;
	elems = calloc(n, s->size);
	if (!elems) {
		report(x, "%s: out of memory", x->name);
		return -ENOMEM;
	}
	memcpy((char *)x->c + f->arr_off, &elems, sizeof(elems));
	json_array_foreach(arr, i, v) {
		push_index(x, i);
		memcpy(elems + i * s->size, s->init, s->size);
		n = i + 1; /* what config_free() must free, should the element be bad */
		memcpy((char *)x->c + f->count_off, &n, sizeof(n));
		rc = parse_section(x, v, s, elems + i * s->size);
		if (rc)
			return rc;
		x->depth--;
	}
	return 0;
}

/* ---------------------------------------------------------------- special keys */

static int require(struct ctx *x, json_t *obj, const char *key)
{
	if (json_object_get(obj, key))
		return 0;
	return reject(x, false, "missing required key \"%s\"", key);
}

static int parse_debug(struct ctx *x, json_t *v, void *dst)
{
	unsigned *mask = dst;
	const char *name = NULL;
	char q[64];
	size_t i;
	json_t *e;
	int rc, s;

	if (!json_is_array(v))
		return reject(x, false, "expected an array, got %s", type_name(v));
	json_array_foreach(v, i, e) {
		push_index(x, i);
		rc = get_string(x, e, false, &name);
		if (rc)
			return rc;
		s = name_index(subsys_names, name);
		if (s < 0)
			return reject(x, false,
				      "unknown subsystem %s "
				      "(ctl, shm, flow, ref, ctrl, token, bpf, config)",
				      quote(q, sizeof(q), name));
		if (*mask & (1u << s))
			return reject(x, false, "duplicate subsystem %s",
				      quote(q, sizeof(q), name));
		*mask |= 1u << s;
		x->depth--;
	}
	return 0;
}

static json_t *dump_debug(const void *src, bool *leave_out)
{
	unsigned mask = *(const unsigned *)src;
	json_t *a = json_array();

	(void)leave_out;
	for (int s = 0; a && s < CONFIG_SUBSYS_MAX; s++) {
		if ((mask & (1u << s)) && json_array_append_new(a, json_string(subsys_names[s]))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static int parse_class(struct ctx *x, json_t *v, void *dst)
{
	struct config_app_rule *r = dst;
	const char *s = NULL;
	char q[64];
	int rc = get_string(x, v, false, &s);

	if (rc)
		return rc;
	if (config_class_parse(s, &r->cls))
		return reject(x, false, "unknown class %s (latency, throughput, bandwidth)",
			      quote(q, sizeof(q), s));
	r->has_class = 1;
	return 0;
}

static json_t *dump_class(const void *src, bool *leave_out)
{
	const struct config_app_rule *r = src;

	*leave_out = !r->has_class;
	return json_string(config_class_name(r->cls));
}

static bool valid_device_name(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == '/' || *s == 0x7f)
			return false;
	return true;
}

static bool valid_group(const char *s)
{
	return s[0] != '-' && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				       "0123456789._-") == strlen(s);
}

static bool valid_comm(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < ' ' || *s == 0x7f)
			return false;
	return true;
}

static bool valid_ip(const char *s)
{
	unsigned char buf[16];

	return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* An IP address, or RFC 1123 labels with the last one not all digits (a bad IPv4 address). */
static bool valid_host(const char *s)
{
	size_t label = 0;
	bool digits = true;

	if (valid_ip(s))
		return true;
	for (const char *p = s;; p++) {
		if (*p == '.' || !*p) {
			if (!label || p[-1] == '-')
				return false;
			if (!*p)
				return !digits;
			label = 0;
			digits = true;
			continue;
		}
		digits = digits && is_digit(*p);
		if (!(is_digit(*p) || ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z') || *p == '-') ||
		    (*p == '-' && !label) || ++label > 63)
			return false;
	}
}

/* ---------------------------------------------------------------- schema */

static int check_limits(struct ctx *x, json_t *obj, void *base)
{
	struct config_limits *l = base;

	if (l->max_clients_per_uid > l->max_clients) {
		if (json_object_get(obj, "max_clients_per_uid")) {
			push_key(x, "max_clients_per_uid");
			return reject(x, false, "%u is out of range (1..max_clients = %u)",
				      l->max_clients_per_uid, l->max_clients);
		}
		l->max_clients_per_uid = l->max_clients;
	}

	if (l->max_flows_per_client <= l->max_flows)
		return 0;
	if (!json_object_get(obj, "max_flows_per_client")) {
		l->max_flows_per_client = l->max_flows;
		return 0;
	}
	push_key(x, "max_flows_per_client");
	return reject(x, false, "%u is out of range (1..max_flows = %u)", l->max_flows_per_client,
		      l->max_flows);
}

static int check_device(struct ctx *x, json_t *obj, void *base)
{
	const struct config_device *d = base, *all = x->c->devices;
	size_t i = x->path[x->depth - 1].index;
	int rc = require(x, obj, "name");
	char q[64];

	if (rc)
		return rc;
	if (d->chunk_latency > d->chunk_default) {
		bool at_default = json_object_get(obj, "chunk_default") != NULL;

		push_key(x, at_default ? "chunk_default" : "chunk_latency");
		return reject(x, false, "chunk_latency (%u) must not exceed chunk_default (%u)",
			      d->chunk_latency, d->chunk_default);
	}
	for (size_t j = 0; j < i; j++)
		if (strcmp(all[j].name, d->name) == 0 && all[j].port == d->port)
			return reject(x, false, "duplicate of devices[%zu] (%s port %u)", j,
				      quote(q, sizeof(q), d->name), d->port);
	return 0;
}

static int check_peer(struct ctx *x, json_t *obj, void *base)
{
	const struct config_peer *p = base, *all = x->c->peers;
	size_t i = x->path[x->depth - 1].index;
	int rc = require(x, obj, "address");
	char q[64];

	for (size_t j = 0; j < i && !rc; j++)
		if (strcmp(all[j].address, p->address) == 0 && all[j].port == p->port)
			return reject(x, false, "duplicate of reference.peers[%zu] (%s port %u)", j,
				      quote(q, sizeof(q), p->address), p->port);
	return rc;
}

static int check_app(struct ctx *x, json_t *obj, void *base)
{
	const struct config_app_rule *a = base, *all = x->c->apps;
	size_t i = x->path[x->depth - 1].index;
	int rc = require(x, obj, "comm");
	char q[64];

	for (size_t j = 0; j < i && !rc; j++)
		if (strcmp(all[j].comm, a->comm) == 0)
			return reject(x, false, "duplicate of apps[%zu] (comm %s)", j,
				      quote(q, sizeof(q), a->comm));
	return rc;
}

/* The socket path follows runtime_dir unless it is set. */
static int check_config(struct ctx *x, json_t *obj, void *base)
{
	struct config *c = base;

	if (!json_object_get(obj, "socket")) {
		size_t r = strlen(c->runtime_dir), n = r + strlen(SOCKET_NAME);

		if (n >= sizeof(c->socket)) {
			push_key(x, "runtime_dir");
			return reject(x, false,
				      "too long for the socket path (%zu bytes, at most %zu); "
				      "set \"socket\"",
				      n, sizeof(c->socket) - 1);
		}
		memcpy(c->socket, c->runtime_dir, r);
		memcpy(c->socket + r, SOCKET_NAME, sizeof(SOCKET_NAME));
	}
	return 0;
}

#define SECTION(name, ...)                                                                         \
	static const struct section name##_section = { name##_fields, ARRAY_SIZE(name##_fields),   \
						       __VA_ARGS__ }

static const struct field limits_fields[] = {
	{ "max_clients", T_INT, AT(struct config_limits, max_clients), 1, 65536 },
	{ "max_clients_per_uid", T_INT, AT(struct config_limits, max_clients_per_uid), 1, 65536 },
	{ "max_flows", T_INT, AT(struct config_limits, max_flows), 1, 1048576 },
	{ "max_flows_per_client", T_INT, AT(struct config_limits, max_flows_per_client), 1,
	  1048576 },
	{ "max_request_bytes", T_INT, AT(struct config_limits, max_request_bytes), 256, 16 * MiB },
	{ "idle_timeout_ms", T_INT, AT(struct config_limits, idle_timeout_ms), 100, 3600000 },
};
SECTION(limits, 0, NULL, check_limits);

#define DEVICE_NAME "a device name (no spaces, '/' or control characters)"

static const struct config_device device_init = {
	.port = 1, .gid_index = -1, .chunk_latency = 5120, .chunk_default = 1 * MiB
};
static const struct field device_fields[] = {
	{ "name", T_STR, AT(struct config_device, name), .valid = valid_device_name,
	  .what = DEVICE_NAME },
	{ "port", T_INT, AT(struct config_device, port), 1, 255 },
	{ "gid_index", T_INT, AT(struct config_device, gid_index), -1, 255 },
	{ "max_rate", T_RATE, AT(struct config_device, max_rate_bps) },
	{ "max_ops", T_INT, AT(struct config_device, max_ops_per_s), 0, 10000000000LL },
	{ "chunk_latency", T_INT, AT(struct config_device, chunk_latency), 512, 16 * MiB },
	{ "chunk_default", T_INT, AT(struct config_device, chunk_default), 512, 1 * GiB },
};
SECTION(device, sizeof(device_init), &device_init, check_device);

static const struct config_peer peer_init = { .port = PEER_PORT };
static const struct field peer_fields[] = {
	{ "address", T_STR, AT(struct config_peer, address), .valid = valid_host,
	  .what = "an IP address or host name" },
	{ "port", T_INT, AT(struct config_peer, port), 1, 65535 },
	{ "device", T_STR, AT(struct config_peer, device), .flags = F_OPT,
	  .valid = valid_device_name, .what = DEVICE_NAME },
};
SECTION(peer, sizeof(peer_init), &peer_init, check_peer);

static const struct field reference_fields[] = {
	{ "peers", T_ARR, .max = CONFIG_MAX_PEERS, .sub = &peer_section,
	  .arr_off = offsetof(struct config, peers),
	  .count_off = offsetof(struct config, n_peers) },
	{ "listen_address", T_STR, AT(struct config_reference, listen_address),
	  .valid = valid_ip, .what = "an IP address" },
	{ "listen_port", T_INT, AT(struct config_reference, listen_port), 1, 65535 },
	{ "secret_file", T_PATH, AT(struct config_reference, secret_file), .flags = F_NULL },
	{ "period_us", T_INT, AT(struct config_reference, period_us), 10, 1000000 },
	{ "window", T_INT, AT(struct config_reference, window), 100, 1000000 },
	{ "always_on", T_BOOL, AT(struct config_reference, always_on) },
	{ "loopback_correction", T_BOOL, AT(struct config_reference, loopback_correction) },
};
SECTION(reference, 0, NULL, NULL);

static const struct field controller_fields[] = {
	{ "target99_us", T_INT, AT(struct config_controller, target99_us), 1, 10000000 },
	{ "additive_step", T_RATE, AT(struct config_controller, additive_step_bps) },
	{ "one_flow_per_app", T_BOOL, AT(struct config_controller, one_flow_per_app) },
	{ "unattainable_policy", T_ENUM, AT(struct config_controller, unattainable_policy),
	  .names = policy_names },
	{ "unattainable_delta_ms", T_INT, AT(struct config_controller, unattainable_delta_ms), 100,
	  3600000 },
	{ "stale_ms", T_INT, AT(struct config_controller, stale_ms), 1, 60000 },
	{ "pace_mode", T_ENUM, AT(struct config_controller, pace_mode), .names = pace_mode_names },
	{ "cpu_alpha", T_REAL, AT(struct config_controller, cpu_alpha) },
};
SECTION(controller, 0, NULL, NULL);

static const struct field tokens_fields[] = {
	{ "bytes", T_INT, AT(struct config_tokens, bytes), 512, 1 * GiB },
	{ "ops", T_INT, AT(struct config_tokens, ops), 0, 1000000000 },
};
SECTION(tokens, 0, NULL, NULL);

static const struct config_app_rule app_init = { .weight = 1 };
static const struct field app_fields[] = {
	{ "comm", T_STR, AT(struct config_app_rule, comm), .valid = valid_comm,
	  .what = "a process name (no control characters)" },
	{ "class", T_FN, 0, sizeof(struct config_app_rule), .parse = parse_class,
	  .dump = dump_class },
	{ "weight", T_INT, AT(struct config_app_rule, weight), 1, 1000 },
};
SECTION(app, sizeof(app_init), &app_init, check_app);

static const struct field top_fields[] = {
	{ "runtime_dir", T_PATH, AT(struct config, runtime_dir) },
	{ "socket", T_PATH, AT(struct config, socket) },
	{ "socket_group", T_STR, AT(struct config, socket_group), .flags = F_NULL,
	  .valid = valid_group, .what = "a group name" },
	{ "state_dir", T_PATH, AT(struct config, state_dir) },
	{ "log_level", T_ENUM, AT(struct config, log_level), .names = level_names },
	{ "debug", T_FN, AT(struct config, debug), .parse = parse_debug, .dump = dump_debug },
	{ "qpwatch", T_BOOL, AT(struct config, qpwatch) },
	{ "limits", T_OBJ, AT(struct config, limits), .sub = &limits_section },
	{ "devices", T_ARR, .max = CONFIG_MAX_DEVICES, .sub = &device_section,
	  .arr_off = offsetof(struct config, devices),
	  .count_off = offsetof(struct config, n_devices) },
	{ "reference", T_OBJ, AT(struct config, reference), .sub = &reference_section },
	{ "controller", T_OBJ, AT(struct config, controller), .sub = &controller_section },
	{ "tokens", T_OBJ, AT(struct config, tokens), .sub = &tokens_section },
	{ "apps", T_ARR, .max = CONFIG_MAX_APPS, .sub = &app_section,
	  .arr_off = offsetof(struct config, apps),
	  .count_off = offsetof(struct config, n_apps) },
};
SECTION(top, 0, NULL, check_config);

/* ---------------------------------------------------------------- load */

void config_init_defaults(struct config *c)
{
	*c = (struct config){
		.runtime_dir = "/run/justitia",
		.socket = "/run/justitia" SOCKET_NAME,
		.state_dir = "/var/lib/justitia",
		.log_level = CONFIG_LOG_INFO,
		.qpwatch = true,
		.limits = { .max_clients = 256, .max_clients_per_uid = 128, .idle_timeout_ms = 10000,
			    .max_flows = 4096, .max_flows_per_client = 1024,
			    .max_request_bytes = 64 * KiB },
		.reference = { .listen_address = "0.0.0.0", .listen_port = PEER_PORT,
			       .period_us = 500, .window = 10000 },
		.controller = { .target99_us = 100, .unattainable_delta_ms = 5000,
				.stale_ms = 50, .cpu_alpha = 0.5 },
		.tokens = { .bytes = 1 * MiB },
	};
}

void config_free(struct config *c)
{
	free(c->devices);
	free(c->peers);
	free(c->apps);
	config_init_defaults(c);
}

static bool only_whitespace(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!s[i] || !strchr(" \t\r\n", s[i]))
			return false;
	return true;
}

int config_parse_buffer(const char *name, const char *text, size_t len, struct config *c,
			char *err, size_t errlen)
{
	struct ctx x = { .name = name, .text = text ? text : "", .len = text ? len : 0,
			 .err = err, .errlen = errlen, .c = c };
	struct jsonpos pos;
	json_error_t je;
	json_t *root;
	int rc;

	config_init_defaults(c);
	if (err && errlen)
		*err = 0;
	if (only_whitespace(x.text, x.len)) {
		report(&x, "%s:1:1: file is empty (expected a JSON object)", name);
		return -EINVAL;
	}
	root = json_loadb(x.text, x.len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (!root) {
		jsonpos_from_offset(x.text, x.len, jsonpos_syntax_offset(x.text, x.len, &je), &pos);
		report(&x, "%s:%u:%u: %s", name, pos.line, pos.col, je.text);
		return -EINVAL;
	}
	if (json_is_object(root))
		rc = parse_section(&x, root, &top_section, c);
	else
		rc = reject(&x, false, "top level must be an object");
	json_decref(root);
	if (rc)
		config_free(c);
	return rc;
}

int config_load(const char *path, struct config *c, char *err, size_t errlen)
{
	struct ctx x = { .name = path, .err = err, .errlen = errlen };
	size_t len = 0, cap = 0;
	char *buf = NULL, *nbuf;
	ssize_t n;
	int fd, rc;

	config_init_defaults(c);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		report(&x, "%s: cannot open: %s", path, strerror(-rc));
		return rc;
	}
	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 4096;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				rc = -ENOMEM;
				report(&x, "%s: out of memory", path);
				goto out_free;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			report(&x, "%s: cannot read: %s", path, strerror(-rc));
			goto out_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > CONFIG_FILE_MAX) {
			rc = -EFBIG;
			report(&x, "%s: file too large (more than %d bytes)", path,
			       CONFIG_FILE_MAX);
			goto out_free;
		}
	}
	rc = config_parse_buffer(path, buf, len, c, err, errlen);
out_free:
	free(buf);
	close(fd);
	return rc;
}

/* ---------------------------------------------------------------- dump */

static json_t *dump_section(const struct section *s, const void *base, const struct config *c);

static json_t *dump_value(const struct field *f, const void *p, const struct config *c,
			  bool *leave_out)
{
	char buf[32];
	long long i;

	*leave_out = false;
	switch (f->type) {
	case T_INT:
		return json_integer(load_int(p, f->size, f->min < 0));
	case T_BOOL:
		return json_boolean(*(const bool *)p);
	case T_REAL:
		return json_real(*(const double *)p);
	case T_RATE:
		if (!*(const uint64_t *)p)
			return json_string("auto");
		config_format_rate(*(const uint64_t *)p, buf, sizeof(buf));
		return json_string(buf);
	case T_STR:
	case T_PATH:
		if (*(const char *)p || !(f->flags & (F_NULL | F_OPT)))
			return json_string(p);
		*leave_out = f->flags & F_OPT;
		return json_null();
	case T_ENUM:
		i = load_int(p, f->size, false);
		return i >= 0 && (size_t)i < name_count(f->names) ? json_string(f->names[i]) : NULL;
	case T_OBJ:
		return dump_section(f->sub, p, c);
	case T_ARR: {
		json_t *a = json_array();
		const char *elems;
		size_t n;

		memcpy(&elems, (const char *)c + f->arr_off, sizeof(elems));
		memcpy(&n, (const char *)c + f->count_off, sizeof(n));
		for (size_t k = 0; a && k < n; k++) {
			if (json_array_append_new(a, dump_section(f->sub, elems + k * f->sub->size,
								  c))) {
				json_decref(a);
				return NULL;
			}
		}
		return a;
	}
	case T_FN:
		return f->dump(p, leave_out);
	}
	return NULL;
}

/* The members of s at base, NULL on failure (out of memory, or a string that is not UTF-8). */
static json_t *dump_section(const struct section *s, const void *base, const struct config *c)
{
	json_t *o = json_object(), *v;
	bool leave_out;

	for (size_t i = 0; o && i < s->n; i++) {
		const struct field *f = &s->fields[i];

		v = dump_value(f, (const char *)base + f->off, c, &leave_out);
		if (v && leave_out) {
			json_decref(v);
			continue;
		}
		if (json_object_set_new(o, f->key, v)) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

int config_dump(FILE *f, const struct config *c)
{
	json_t *root = dump_section(&top_section, c, c);
	int rc;

	if (!root)
		return -EINVAL;
	rc = json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (rc || fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}

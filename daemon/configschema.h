/* SPDX-License-Identifier: MIT */
/* The configuration's schema as its modules share it: a table of fields per
 * JSON object (struct section), the parser's context, and what the parser
 * (configparse.c) offers the model (config.c) and the dump (configdump.c).
 * Internal to the config modules; everybody else includes config.h. */
#ifndef JUSTITIAD_CONFIGSCHEMA_H
#define JUSTITIAD_CONFIGSCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "jsonpos.h"
#include "rate.h"

/* configtenant.c: the "tenants" array's elements */
struct section;
extern const struct section configtenant_section;

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define KiB 1024
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

#define RATE_MIN	RATE_MIN_BPS
#define RATE_MAX	RATE_MAX_BPS
#define PATH_DEPTH_MAX	8

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

/* configparse.c: the walker and its messages */
void configparse_report(struct ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s, quoted, control bytes escaped, cut to about 40 bytes: safe to print whatever the file held. */
const char *configparse_quote(char *buf, size_t n, const char *s);
void configparse_push_key(struct ctx *x, const char *key);
void configparse_push_index(struct ctx *x, size_t i);
/* Reports a message about the value at the current path (or its key); returns -EINVAL. */
int configparse_reject(struct ctx *x, bool at_key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *configparse_type_name(const json_t *v);
int configparse_get_string(struct ctx *x, json_t *v, bool null_ok, const char **out);
long long configparse_load_int(const void *src, size_t size, bool is_signed);
int configparse_require(struct ctx *x, json_t *obj, const char *key);
int configparse_name_index(const char *const *names, const char *s);
size_t configparse_name_count(const char *const *names);
/* The members of @obj, per @s, into @base (then s->check). */
int configparse_section(struct ctx *x, json_t *obj, const struct section *s, void *base);
int configparse_text(struct ctx *x, const struct section *top, void *base);
int configparse_read(struct ctx *x, char **buf, size_t *len);

/* config.c: the schema's top section (struct config) */
const struct section *config_schema(void);

#endif

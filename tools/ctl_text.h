/* SPDX-License-Identifier: MIT */
/* justctl's text and number helpers: allocation that exits on out-of-memory
 * (a command-line tool has nothing to save), parsing of argument numbers,
 * formatting of rates, sizes and times, getters for reply members that show
 * "-" for what is missing, and aligned tables.  Everything printed is
 * sanitized: a reply can quote what an unprivileged process sent. */
#ifndef JUSTITIA_CTL_TEXT_H
#define JUSTITIA_CTL_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- allocation: these never return NULL (out of memory: exit 1) */
__attribute__((noreturn)) void ctl_oom(void);
void *ctl_xrealloc(void *p, size_t n);
__attribute__((format(printf, 1, 2))) char *ctl_xasprintf(const char *fmt, ...);
json_t *ctl_xjson(json_t *j);
void ctl_set_new(json_t *obj, const char *key, json_t *val);
/* C0 and C1 control characters replaced with '?' in place; returns @s. */
char *ctl_sanitize(char *s);

/* ---- numbers: 0, -EINVAL (syntax) or -ERANGE */
int ctl_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int ctl_parse_rate(const char *s, uint64_t *bps);

/* ---- formatting: malloc'ed text */
typedef char *(*ctl_fmt_fn)(uint64_t);
char *ctl_fmt_rate(uint64_t bps);  /* "25.0 Gbit/s" */
char *ctl_fmt_ops(uint64_t ops);   /* "2.4 Mop/s" */
char *ctl_fmt_bytes(uint64_t b);   /* "1.5 GiB" */
char *ctl_fmt_ns(uint64_t ns);     /* "12.3 us" */
char *ctl_fmt_uptime(uint64_t ms); /* "2d 3h 4m 5s" */
char *ctl_fmt_plain(uint64_t v);   /* "42" */

/* ---- reply access */
const char *ctl_jstr(const json_t *o, const char *key);
const char *ctl_or_dash(const char *s);
bool ctl_juint(const json_t *o, const char *key, uint64_t *v);
char *ctl_field(const json_t *o, const char *key, ctl_fmt_fn fmt);
char *ctl_field_str(const json_t *o, const char *key);
char *ctl_field_scalar(const json_t *o, const char *key);

/* ---- tables: cells are added row by row, then printed (and freed) */
struct ctl_table {
	size_t ncols, ncells;
	const char *const *head;
	const bool *right; /* right-aligned columns */
	char **cells;      /* row-major, owned */
};

void ctl_table_add(struct ctl_table *t, char *cell);
void ctl_table_print(struct ctl_table *t, FILE *out);
/* "key:" padded, then the value (sanitized); takes ownership of @val. */
void ctl_kv(FILE *out, const char *key, char *val);

#endif

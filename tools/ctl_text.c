// SPDX-License-Identifier: MIT
/* justctl's text and number helpers (see ctl_text.h): allocation that ends
 * the program on out-of-memory, argument numbers, human-readable rates and
 * sizes, tolerant getters for reply members, aligned tables.
 * May call: common/rate.h, jansson and libc; nothing else of justctl. */
#include "ctl_text.h"

#include "rate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctl_oom(void)
{
	fputs("justctl: out of memory\n", stderr);
	exit(EXIT_FAILURE);
}

void *ctl_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		ctl_oom();
	return p;
}

char *ctl_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		ctl_oom();
	return s;
}

json_t *ctl_xjson(json_t *j)
{
	if (!j)
		ctl_oom();
	return j;
}

void ctl_set_new(json_t *obj, const char *key, json_t *val)
{
	if (json_object_set_new(obj, key, ctl_xjson(val)))
		ctl_oom();
}

/* Text from the daemon can quote what an unprivileged process sent (its
 * comm, a device name): never let it drive the terminal.  Replaces C0 and
 * C1 control characters with '?' in place. */
char *ctl_sanitize(char *s)
{
	for (unsigned char *p = (unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			*p = '?';
		} else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			/* U+0080..U+009F: keep the byte count, lose the code */
			p[0] = '?';
			p[1] = '?';
			p++;
		}
	}
	return s;
}

/* ------------------------------------------------------------ numbers */

/* A decimal integer in [min, max], digits only. */
int ctl_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* A MaxRate for "set max-rate": the grammar of common/rate.h, the range
 * the daemon takes (RATE_MIN_BPS..RATE_MAX_BPS).  0, -EINVAL (syntax),
 * -ERANGE (out of range). */
int ctl_parse_rate(const char *s, uint64_t *bps)
{
	int rc = rate_parse(s, bps);

	if (!rc && (*bps < RATE_MIN_BPS || *bps > RATE_MAX_BPS))
		rc = -ERANGE;
	return rc;
}

/* "25.0 Gbit/s", "640 bit/s" */
char *ctl_fmt_rate(uint64_t bps)
{
	static const char *const unit[] = { "bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s",
					    "Pbit/s", "Ebit/s" };
	double v = (double)bps;
	size_t i = 0;

	if (bps < 1000)
		return ctl_xasprintf("%" PRIu64 " bit/s", bps);
	while (i + 1 < sizeof(unit) / sizeof(unit[0]) && v >= 999.95) {
		v /= 1000;
		i++;
	}
	return ctl_xasprintf("%.1f %s", v, unit[i]);
}

/* "2.4 Mop/s", "850 op/s" */
char *ctl_fmt_ops(uint64_t ops)
{
	if (ops < 1000)
		return ctl_xasprintf("%" PRIu64 " op/s", ops);
	if (ops < 999950)
		return ctl_xasprintf("%.1f kop/s", (double)ops / 1e3);
	if (ops < 999950000)
		return ctl_xasprintf("%.1f Mop/s", (double)ops / 1e6);
	return ctl_xasprintf("%.1f Gop/s", (double)ops / 1e9);
}

/* "1.5 GiB", "512 B" */
char *ctl_fmt_bytes(uint64_t b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)b;
	size_t i = 0;

	if (b < 1024)
		return ctl_xasprintf("%" PRIu64 " B", b);
	while (i + 1 < sizeof(unit) / sizeof(unit[0]) && v >= 1023.95) {
		v /= 1024;
		i++;
	}
	return ctl_xasprintf("%.1f %s", v, unit[i]);
}

/* "850 ns", "12.3 us", "1.25 ms", "2.00 s" */
char *ctl_fmt_ns(uint64_t ns)
{
	if (ns < 1000)
		return ctl_xasprintf("%" PRIu64 " ns", ns);
	if (ns < 999950)
		return ctl_xasprintf("%.1f us", (double)ns / 1e3);
	if (ns < 999995000)
		return ctl_xasprintf("%.2f ms", (double)ns / 1e6);
	return ctl_xasprintf("%.2f s", (double)ns / 1e9);
}

/* "2d 3h 4m 5s", "4m 5s", "0s" */
char *ctl_fmt_uptime(uint64_t ms)
{
	uint64_t s = ms / 1000, d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60;

	s %= 60;
	if (d)
		return ctl_xasprintf("%" PRIu64 "d %" PRIu64 "h %" PRIu64 "m %" PRIu64 "s", d, h, m, s);
	if (h)
		return ctl_xasprintf("%" PRIu64 "h %" PRIu64 "m %" PRIu64 "s", h, m, s);
	if (m)
		return ctl_xasprintf("%" PRIu64 "m %" PRIu64 "s", m, s);
	return ctl_xasprintf("%" PRIu64 "s", s);
}

/* ------------------------------------------------------------ reply access */

/* Tolerant getters: a reply from a newer or broken daemon may lack a field
 * or carry another type; the output then shows "-" instead of failing. */
const char *ctl_jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

const char *ctl_or_dash(const char *s)
{
	return s && *s ? s : "-";
}

bool ctl_juint(const json_t *o, const char *key, uint64_t *v)
{
	const json_t *j = json_object_get(o, key);

	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return false;
	*v = (uint64_t)json_integer_value(j);
	return true;
}

char *ctl_fmt_plain(uint64_t v)
{
	return ctl_xasprintf("%" PRIu64, v);
}

/* A formatted field, or "-" when it is absent, null or not a count. */
char *ctl_field(const json_t *o, const char *key, ctl_fmt_fn fmt)
{
	uint64_t v;

	return ctl_juint(o, key, &v) ? fmt(v) : ctl_xasprintf("-");
}

char *ctl_field_str(const json_t *o, const char *key)
{
	const char *s = ctl_jstr(o, key);

	return ctl_sanitize(ctl_xasprintf("%s", ctl_or_dash(s)));
}

/* Any scalar as text (an identifier may be a string or a number). */
char *ctl_field_scalar(const json_t *o, const char *key)
{
	const json_t *j = json_object_get(o, key);
	char *s;

	if (json_is_string(j) || !j || json_is_null(j) || json_is_object(j) || json_is_array(j))
		return ctl_field_str(o, key);
	s = json_dumps(j, JSON_ENCODE_ANY);
	if (!s)
		ctl_oom();
	return s;
}

/* ------------------------------------------------------------ tables */

void ctl_table_add(struct ctl_table *t, char *cell)
{
	t->cells = ctl_xrealloc(t->cells, (t->ncells + 1) * sizeof(*t->cells));
	t->cells[t->ncells++] = ctl_sanitize(cell);
}

void ctl_table_print(struct ctl_table *t, FILE *out)
{
	size_t *w = ctl_xrealloc(NULL, t->ncols * sizeof(*w));
	size_t nrows = t->ncells / t->ncols;

	for (size_t c = 0; c < t->ncols; c++) {
		w[c] = strlen(t->head[c]);
		for (size_t r = 0; r < nrows; r++) {
			size_t l = strlen(t->cells[r * t->ncols + c]);

			if (l > w[c])
				w[c] = l;
		}
	}
	for (size_t r = 0; r <= nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s = r ? t->cells[(r - 1) * t->ncols + c] : t->head[c];
			bool last = c + 1 == t->ncols;

			if (c)
				fputs("  ", out);
			if (t->right[c])
				fprintf(out, "%*s", (int)w[c], s);
			else if (last)
				fputs(s, out);
			else
				fprintf(out, "%-*s", (int)w[c], s);
		}
		fputc('\n', out);
	}
	for (size_t i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
	free(w);
	t->cells = NULL;
	t->ncells = 0;
}

/* "key:" padded, then the value (sanitized); takes ownership of @val. */
void ctl_kv(FILE *out, const char *key, char *val)
{
	fprintf(out, "%-13s%s\n", key, ctl_sanitize(val));
	free(val);
}

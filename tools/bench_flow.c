// SPDX-License-Identifier: MIT
/*
 * justbench flows: names, defaults, ranges and the compact command-line syntax.  Every key goes
 * through one setter (bench_flow_set) whatever the front end, so the command line and the JSON
 * scenario files accept the same values with the same messages.
 * May call: common/shm_abi.h (class names) and libc only.
 */
#include "bench_flow.h"
#include "bench_err.h"

#include "shm_abi.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SPEC_MAX      512

static const char *const class_names[] = { JST_CLASS_NAME_LIST };
static const char *const class_short[] = { "lat", "tput", "bw" };
static const char *const verb_names[] = { "write", "write_imm", "read", "send" };
static const char *const poll_names[] = { "busy", "event" };
_Static_assert(ARRAY_SIZE(class_names) == BENCH_CLASS_MAX, "a name per class");
_Static_assert((int)BENCH_LAT == (int)JST_CLASS_LATENCY &&
		       (int)BENCH_TPUT == (int)JST_CLASS_THROUGHPUT &&
		       (int)BENCH_BW == (int)JST_CLASS_BANDWIDTH,
	       "justbench's classes are Justitia's");
_Static_assert(ARRAY_SIZE(verb_names) == BENCH_VERB_MAX, "a name per verb");
_Static_assert(ARRAY_SIZE(poll_names) == BENCH_POLL_MAX, "a name per polling mode");

enum key_id { K_NAME, K_VERB, K_SIZE, K_QPS, K_BATCH, K_WINDOW, K_POLL, K_DELAY, K_DURATION,
	      K_ITERS, K_RATE, K_MAX };
static const char *const key_names[] = { "name",   "verb", "size",	"qps",	    "batch",
					 "window", "poll", "delay", "duration", "iters",
					 "rate" };
_Static_assert(ARRAY_SIZE(key_names) == K_MAX, "a name per key");

/* s for a message: quoted, at most 40 bytes, control bytes and '"' '\' escaped. */
static const char *quote(const char *s, char *buf, size_t len)
{
	size_t o = 0, n = 0;

	buf[o++] = '"';
	for (; *s && n < 40 && o + 6 < len; s++, n++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
		else if (c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, len - o, "\\%c", c);
		else
			buf[o++] = (char)c;
	}
	if (*s && o + 4 < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '"';
	buf[o] = 0;
	return buf;
}

static int name_index(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

const char *bench_class_name(enum bench_class c)
{
	return (unsigned)c < BENCH_CLASS_MAX ? class_names[c] : "invalid";
}

const char *bench_class_short(enum bench_class c)
{
	return (unsigned)c < BENCH_CLASS_MAX ? class_short[c] : "invalid";
}

const char *bench_verb_name(enum bench_verb v)
{
	return (unsigned)v < BENCH_VERB_MAX ? verb_names[v] : "invalid";
}

const char *bench_poll_name(enum bench_poll p)
{
	return (unsigned)p < BENCH_POLL_MAX ? poll_names[p] : "invalid";
}

int bench_class_parse(const char *s, enum bench_class *out)
{
	int i = name_index(class_names, BENCH_CLASS_MAX, s);

	if (i < 0)
		i = name_index(class_short, BENCH_CLASS_MAX, s);
	if (i < 0)
		return -EINVAL;
	*out = (enum bench_class)i;
	return 0;
}

void bench_flow_init(struct bench_flow *f, enum bench_class cls, unsigned index)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "flow%u", index);
	f->cls = cls;
	f->qps = 1;
	f->batch = 1;
	f->window = 1;
	switch (cls) {
	case BENCH_LAT:
		f->verb = BENCH_SEND;
		f->size = 2;
		f->poll = BENCH_POLL_BUSY;
		break;
	case BENCH_TPUT:
		f->verb = BENCH_WRITE;
		f->size = 64;
		f->batch = 16;
		f->window = 4;
		f->poll = BENCH_POLL_BUSY;
		break;
	default:
		f->verb = BENCH_WRITE;
		f->size = 1u << 20;
		f->window = 4;
		f->poll = BENCH_POLL_EVENT;
		break;
	}
}

/* ---------------------------------------------------------------- numbers */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Digits only, no sign, no overflow. */
static int parse_u64(const char *s, const char **end, uint64_t *out)
{
	uint64_t v = 0;

	if (!is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*end = s;
	*out = v;
	return 0;
}

/* A number with at most one unit letter from @units, which lists two
 * letters per power of @base (base^1, base^2, base^3); '_' fills a place
 * no letter takes. */
static int parse_scaled(const char *s, const char *units, uint64_t base, uint64_t *out)
{
	const char *end, *u;
	uint64_t v, mult = 1;
	int rc = parse_u64(s, &end, &v);

	if (rc)
		return rc;
	if (*end) {
		if (end[1] || *end == '_' || !(u = strchr(units, *end)))
			return -EINVAL;
		for (long i = 0; i <= (u - units) / 2; i++)
			mult *= base;
	}
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

int bench_parse_rate(const char *s, uint64_t *bps)
{
	return parse_scaled(s, "kKM_G_", 1000, bps); /* (no m: it would read as milli) */
}

int bench_parse_size(const char *s, uint64_t *out)
{
	return parse_scaled(s, "KkMmGg", 1024, out);
}

int bench_parse_time(const char *s, uint64_t *us)
{
	static const struct {
		const char *unit;
		uint64_t mult;
		unsigned frac_max;
	} units[] = { { "", 1000000, 6 }, { "s", 1000000, 6 }, { "ms", 1000, 3 }, { "us", 1, 0 } };
	uint64_t ip, frac = 0;
	unsigned nf = 0;
	const char *p;
	int rc = parse_u64(s, &p, &ip);

	if (rc)
		return rc;
	if (*p == '.') {
		p++;
		if (!is_digit(*p))
			return -EINVAL;
		for (; is_digit(*p); p++, nf++) {
			if (nf == 6)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(*p - '0');
		}
	}
	if (ip > 1000000000000ull)
		return -ERANGE;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		uint64_t f = frac;

		if (strcmp(p, units[i].unit) != 0)
			continue;
		if (nf > units[i].frac_max)
			return -EINVAL; /* finer than a microsecond */
		for (unsigned k = nf; k < units[i].frac_max; k++)
			f *= 10;
		*us = ip * units[i].mult + f;
		return 0;
	}
	return -EINVAL;
}

void bench_format_time(uint64_t us, char *buf, size_t len)
{
	if (us % 1000000 == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(us / 1000000));
	else if (us % 1000 == 0)
		snprintf(buf, len, "%llums", (unsigned long long)(us / 1000));
	else
		snprintf(buf, len, "%lluus", (unsigned long long)us);
}

void bench_format_size(uint64_t size, char *buf, size_t len)
{
	static const char units[] = "GMK";

	for (unsigned i = 0; i < 3; i++) {
		uint64_t m = 1ull << (10 * (3 - i));

		if (size && size % m == 0) {
			snprintf(buf, len, "%llu%c", (unsigned long long)(size / m), units[i]);
			return;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)size);
}

/* ---------------------------------------------------------------- keys */

static bool valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= BENCH_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!is_digit(*s) && !(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !strchr("_-.", *s))
			return false;
	return true;
}

/* A number as the user wrote it if it is plain and short, else quoted. */
static const char *shown(const char *val, char *buf, size_t len)
{
	size_t n = strlen(val);

	if (n && n < 32 && strspn(val, "-.0123456789") == n)
		return val;
	return quote(val, buf, len);
}

/* "-" and digits (with a fraction): a negative number, out of range rather than invalid. */
static bool negative(const char *s)
{
	size_t n = strspn(s + 1, "0123456789");

	return s[0] == '-' && n && (!s[n + 1] || (s[n + 1] == '.' && is_digit(s[n + 2]) &&
					       !s[n + 2 + strspn(s + n + 2, "0123456789")]));
}

/* An integer key in [min, max]. */
static int set_count(const char *key, const char *val, uint64_t min, uint64_t max,
		     uint64_t *out, char *err, size_t errlen)
{
	const char *end;
	uint64_t v = 0;
	char q[64];
	int rc = parse_u64(val, &end, &v);

	if (negative(val))
		return bench_seterr(err, errlen, -EINVAL, "%s: %s is out of range (%llu..%llu)",
				    key, shown(val, q, sizeof(q)), (unsigned long long)min,
				    (unsigned long long)max);
	if (rc == 0 && *end)
		rc = -EINVAL;
	if (rc == -EINVAL || (rc == -ERANGE && val[strspn(val, "0123456789")]))
		return bench_seterr(err, errlen, -EINVAL, "%s: invalid number %s", key,
				    quote(val, q, sizeof(q)));
	if (rc || v < min || v > max)
		return bench_seterr(err, errlen, -EINVAL, "%s: %s is out of range (%llu..%llu)",
				    key, shown(val, q, sizeof(q)), (unsigned long long)min,
				    (unsigned long long)max);
	*out = v;
	return 0;
}

static int set_time(const char *key, const char *val, uint64_t min, uint64_t *out, char *err,
		    size_t errlen)
{
	char q[64], lo[32], hi[32], got[32];
	uint64_t v;
	int rc = negative(val) ? -ERANGE : bench_parse_time(val, &v);

	if (rc == -EINVAL)
		return bench_seterr(err, errlen, -EINVAL,
				    "%s: invalid time %s (write e.g. 3, 1.5s, 500ms, 20us)", key,
				    quote(val, q, sizeof(q)));
	bench_format_time(min, lo, sizeof(lo));
	bench_format_time(BENCH_TIME_MAX_US, hi, sizeof(hi));
	if (rc || v < min || v > BENCH_TIME_MAX_US) {
		if (rc)
			return bench_seterr(err, errlen, -EINVAL, "%s: %s is out of range (%s..%s)",
					    key, shown(val, q, sizeof(q)), lo, hi);
		bench_format_time(v, got, sizeof(got));
		return bench_seterr(err, errlen, -EINVAL, "%s: %s is out of range (%s..%s)", key,
				    got, lo, hi);
	}
	*out = v;
	return 0;
}

static int set_key(struct bench_flow *f, enum key_id k, const char *val, char *err,
		   size_t errlen)
{
	const char *key = key_names[k];
	char q[64], got[32], hi[32];
	uint64_t v;
	int i, rc;

	switch (k) {
	case K_NAME:
		if (!valid_name(val))
			return bench_seterr(
			    err, errlen, -EINVAL,
			    "name: invalid name %s (1 to %d letters, digits, '_', '-', '.')",
			    quote(val, q, sizeof(q)), BENCH_NAME_MAX - 1);
		strcpy(f->name, val);
		return 0;
	case K_VERB:
		i = name_index(verb_names, BENCH_VERB_MAX, val);
		if (i < 0)
			return bench_seterr(
			    err, errlen, -EINVAL,
			    "verb: unknown verb %s (write, write_imm, read or send)",
			    quote(val, q, sizeof(q)));
		f->verb = (enum bench_verb)i;
		return 0;
	case K_POLL:
		i = name_index(poll_names, BENCH_POLL_MAX, val);
		if (i < 0)
			return bench_seterr(err, errlen, -EINVAL,
					    "poll: unknown polling mode %s (busy or event)",
					    quote(val, q, sizeof(q)));
		f->poll = (enum bench_poll)i;
		return 0;
	case K_SIZE:
		rc = negative(val) ? -ERANGE : bench_parse_size(val, &v);
		if (rc == -EINVAL)
			return bench_seterr(err, errlen, -EINVAL,
					    "size: invalid size %s (write e.g. 64, 4K, 1M)",
					    quote(val, q, sizeof(q)));
		if (rc || v < 1 || v > BENCH_SIZE_MAX) {
			bench_format_size(BENCH_SIZE_MAX, hi, sizeof(hi));
			if (rc)
				return bench_seterr(err, errlen, -EINVAL,
						    "size: %s is out of range (1..%s)",
						    shown(val, q, sizeof(q)), hi);
			bench_format_size(v, got, sizeof(got));
			return bench_seterr(err, errlen, -EINVAL,
					    "size: %s is out of range (1..%s)", got, hi);
		}
		f->size = (uint32_t)v;
		return 0;
	case K_QPS:
		rc = set_count(key, val, 1, BENCH_QPS_MAX, &v, err, errlen);
		f->qps = rc ? f->qps : (uint32_t)v;
		return rc;
	case K_BATCH:
		rc = set_count(key, val, 1, BENCH_BATCH_MAX, &v, err, errlen);
		f->batch = rc ? f->batch : (uint32_t)v;
		return rc;
	case K_WINDOW:
		rc = set_count(key, val, 1, BENCH_WINDOW_MAX, &v, err, errlen);
		f->window = rc ? f->window : (uint32_t)v;
		return rc;
	case K_ITERS:
		return set_count(key, val, 0, BENCH_ITERS_MAX, &f->iters, err, errlen);
	case K_DELAY:
		return set_time(key, val, 0, &f->delay_us, err, errlen);
	case K_RATE:
		rc = negative(val) ? -ERANGE : bench_parse_rate(val, &v);
		if (rc == -EINVAL)
			return bench_seterr(err, errlen, -EINVAL,
					    "rate: invalid rate %s (bit/s: write e.g. 0, "
					    "800k, 80M, 2G)",
					    quote(val, q, sizeof(q)));
		if (rc || (v && v < BENCH_RATE_MIN) || v > BENCH_RATE_MAX)
			return bench_seterr(err, errlen, -EINVAL,
					    "rate: %s is out of range (0, or 1k..10000G "
					    "bit/s)",
					    rc ? shown(val, q, sizeof(q)) : val);
		f->rate_bps = v;
		return 0;
	case K_DURATION:
		return set_time(key, val, 1000, &f->duration_us, err, errlen);
	default:
		return bench_seterr(err, errlen, -EINVAL, "%s: unknown key", key);
	}
}

static int key_id(const char *key)
{
	for (int k = 0; k < K_MAX; k++)
		if (strcmp(key_names[k], key) == 0)
			return k;
	return -1;
}

bool bench_flow_key_known(const char *key)
{
	return key_id(key) >= 0;
}

int bench_flow_set(struct bench_flow *f, const char *key, const char *val, char *err,
		   size_t errlen)
{
	char q[64];
	int k = key_id(key);

	if (k < 0)
		return bench_seterr(err, errlen, -EINVAL, "%s: unknown key",
				    quote(key, q, sizeof(q)));
	return set_key(f, (enum key_id)k, val, err, errlen);
}

int bench_flow_check(const struct bench_flow *f, const char **key, char *err, size_t errlen)
{
	if (f->cls == BENCH_LAT && f->batch != 1) {
		*key = "batch";
		return bench_seterr(err, errlen, -EINVAL,
				    "batch: a latency flow has one message outstanding, "
				    "batch must be 1");
	}
	if (f->cls == BENCH_LAT && f->window != 1) {
		*key = "window";
		return bench_seterr(err, errlen, -EINVAL,
				    "window: a latency flow has one message outstanding, "
				    "window must be 1");
	}
	if ((uint64_t)f->batch * f->window > BENCH_DEPTH_MAX) {
		*key = "window";
		return bench_seterr(err, errlen, -EINVAL,
				    "window: batch %u x window %u is more than %d messages "
				    "in flight per QP",
				    f->batch, f->window, BENCH_DEPTH_MAX);
	}
	if (f->iters % f->batch) {
		*key = "iters";
		return bench_seterr(err, errlen, -EINVAL,
				    "iters: %llu is not a multiple of batch (%u)",
				    (unsigned long long)f->iters, f->batch);
	}
	return 0;
}

/* ---------------------------------------------------------------- compact syntax */

int bench_flow_parse(const char *spec, unsigned index, struct bench_flow *f, char *err,
		     size_t errlen)
{
	char buf[SPEC_MAX], q[64], *save = NULL, *tok;
	enum bench_class cls;
	unsigned given = 0, positional = 0;
	bool options = false;
	const char *key;
	int rc;

	if (strlen(spec) >= sizeof(buf))
		return bench_seterr(err, errlen, -EINVAL, "too long (at most %d bytes)",
				    SPEC_MAX - 1);
	strcpy(buf, spec);
	if (!*buf || strchr(":,", buf[strlen(buf) - 1]) || strstr(buf, "::") || strstr(buf, ",,") ||
	    strstr(buf, ":,") || strstr(buf, ",:") || strchr(":,", *buf))
		return bench_seterr(err, errlen, -EINVAL,
				    "empty field (write CLASS[:VERB[:SIZE]][:KEY=VALUE,...])");
	tok = strtok_r(buf, ":,", &save);
	if (bench_class_parse(tok, &cls))
		return bench_seterr(
		    err, errlen, -EINVAL,
		    "unknown class %s (lat, tput or bw; latency, throughput, bandwidth)",
		    quote(tok, q, sizeof(q)));
	bench_flow_init(f, cls, index);
	while ((tok = strtok_r(NULL, ":,", &save))) {
		char *eq = strchr(tok, '=');
		int k;

		if (!eq) {
			if (options || positional == 2)
				return bench_seterr(err, errlen, -EINVAL,
						    "unexpected %s (options are KEY=VALUE)",
						    quote(tok, q, sizeof(q)));
			k = positional++ ? K_SIZE : K_VERB;
			rc = set_key(f, (enum key_id)k, tok, err, errlen);
		} else {
			*eq = 0;
			options = true;
			k = key_id(tok);
			if (k < 0)
				return bench_seterr(err, errlen, -EINVAL, "unknown key %s",
						    quote(tok, q, sizeof(q)));
			rc = set_key(f, (enum key_id)k, eq + 1, err, errlen);
		}
		if (rc)
			return rc;
		if (given & 1u << k)
			return bench_seterr(err, errlen, -EINVAL, "%s: given twice", key_names[k]);
		given |= 1u << k;
	}
	return bench_flow_check(f, &key, err, errlen);
}

int bench_flow_format(const struct bench_flow *f, char *buf, size_t len)
{
	char size[32], delay[32], dur[32] = "";
	int n;

	bench_format_size(f->size, size, sizeof(size));
	bench_format_time(f->delay_us, delay, sizeof(delay));
	if (f->duration_us) {
		strcpy(dur, ",duration=");
		bench_format_time(f->duration_us, dur + strlen(dur), sizeof(dur) - strlen(dur));
	}
	n = snprintf(buf, len, "%s:%s:%s:name=%s,qps=%u,batch=%u,window=%u,poll=%s,delay=%s%s,"
			       "iters=%llu,rate=%llu",
		     bench_class_short(f->cls), bench_verb_name(f->verb), size, f->name, f->qps,
		     f->batch, f->window, bench_poll_name(f->poll), delay, dur,
		     (unsigned long long)f->iters, (unsigned long long)f->rate_bps);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

int bench_flows_check(const struct bench_flow *flows, size_t n, size_t *bad, char *err,
		      size_t errlen)
{
	uint64_t mem = 0;
	unsigned qps = 0;

	*bad = 0;
	if (n == 0)
		return bench_seterr(err, errlen, -EINVAL, "no flows");
	if (n > BENCH_FLOWS_MAX) {
		*bad = BENCH_FLOWS_MAX;
		return bench_seterr(err, errlen, -EINVAL, "too many flows (%zu, at most %d)", n,
				    BENCH_FLOWS_MAX);
	}
	for (size_t i = 0; i < n; i++) {
		*bad = i;
		for (size_t j = 0; j < i; j++)
			if (strcmp(flows[i].name, flows[j].name) == 0)
				return bench_seterr(err, errlen, -EINVAL,
						    "name: \"%s\" is also the name of flows[%zu]",
						    flows[i].name, j);
		qps += flows[i].qps;
		if (qps > BENCH_QPS_TOTAL)
			return bench_seterr(err, errlen, -EINVAL, "qps: %u QPs in all, at most %d",
					    qps, BENCH_QPS_TOTAL);
		mem += (uint64_t)flows[i].size * flows[i].qps;
		if (mem > BENCH_BUFFERS_MAX)
			return bench_seterr(
			    err, errlen, -EINVAL,
			    "size: the flows need %llu MiB of buffers (size x qps), "
			    "at most %llu",
			    (unsigned long long)(mem >> 20), BENCH_BUFFERS_MAX >> 20);
	}
	return 0;
}

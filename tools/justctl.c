// SPDX-License-Identifier: MIT
/* justctl: query and steer justitiad over its control socket
 * (docs/protocol.md, docs/justctl.8).
 *
 * Three layers, so that tests/unit/test_justctl.c can check the first two
 * without a daemon: arguments -> request object (ctl_build), reply object ->
 * text (the show_* functions, writing to any FILE *), and the socket I/O in
 * ctl_main().  Commands are a table, as in lldpcli. */
#include "proto.h"
#include "ctl_metrics.h"
#include "rate.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef JUSTITIA_VERSION
#define JUSTITIA_VERSION "0.1.0"
#endif

#define EXIT_USAGE 2
#define DEFAULT_TIMEOUT_MS 5000
#define REQUEST_ID 1

/* ------------------------------------------------------------ utilities */

__attribute__((noreturn)) static void oom(void)
{
	fputs("justctl: out of memory\n", stderr);
	exit(EXIT_FAILURE);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

__attribute__((format(printf, 1, 2))) static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom();
	return s;
}

static json_t *xjson(json_t *j)
{
	if (!j)
		oom();
	return j;
}

static void set_new(json_t *obj, const char *key, json_t *val)
{
	if (json_object_set_new(obj, key, xjson(val)))
		oom();
}

/* Text from the daemon can quote what an unprivileged process sent (its
 * comm, a device name): never let it drive the terminal.  Replaces C0 and
 * C1 control characters with '?' in place. */
static char *sanitize(char *s)
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
static int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
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
static int parse_rate(const char *s, uint64_t *bps)
{
	int rc = rate_parse(s, bps);

	if (!rc && (*bps < RATE_MIN_BPS || *bps > RATE_MAX_BPS))
		rc = -ERANGE;
	return rc;
}

/* "25.0 Gbit/s", "640 bit/s" */
static char *fmt_rate(uint64_t bps)
{
	static const char *const unit[] = { "bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s",
					    "Pbit/s", "Ebit/s" };
	double v = (double)bps;
	size_t i = 0;

	if (bps < 1000)
		return xasprintf("%" PRIu64 " bit/s", bps);
	while (i + 1 < sizeof(unit) / sizeof(unit[0]) && v >= 999.95) {
		v /= 1000;
		i++;
	}
	return xasprintf("%.1f %s", v, unit[i]);
}

/* "2.4 Mop/s", "850 op/s" */
static char *fmt_ops(uint64_t ops)
{
	if (ops < 1000)
		return xasprintf("%" PRIu64 " op/s", ops);
	if (ops < 999950)
		return xasprintf("%.1f kop/s", (double)ops / 1e3);
	if (ops < 999950000)
		return xasprintf("%.1f Mop/s", (double)ops / 1e6);
	return xasprintf("%.1f Gop/s", (double)ops / 1e9);
}

/* "1.5 GiB", "512 B" */
static char *fmt_bytes(uint64_t b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)b;
	size_t i = 0;

	if (b < 1024)
		return xasprintf("%" PRIu64 " B", b);
	while (i + 1 < sizeof(unit) / sizeof(unit[0]) && v >= 1023.95) {
		v /= 1024;
		i++;
	}
	return xasprintf("%.1f %s", v, unit[i]);
}

/* "850 ns", "12.3 us", "1.25 ms", "2.00 s" */
static char *fmt_ns(uint64_t ns)
{
	if (ns < 1000)
		return xasprintf("%" PRIu64 " ns", ns);
	if (ns < 999950)
		return xasprintf("%.1f us", (double)ns / 1e3);
	if (ns < 999995000)
		return xasprintf("%.2f ms", (double)ns / 1e6);
	return xasprintf("%.2f s", (double)ns / 1e9);
}

/* "2d 3h 4m 5s", "4m 5s", "0s" */
static char *fmt_uptime(uint64_t ms)
{
	uint64_t s = ms / 1000, d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60;

	s %= 60;
	if (d)
		return xasprintf("%" PRIu64 "d %" PRIu64 "h %" PRIu64 "m %" PRIu64 "s", d, h, m, s);
	if (h)
		return xasprintf("%" PRIu64 "h %" PRIu64 "m %" PRIu64 "s", h, m, s);
	if (m)
		return xasprintf("%" PRIu64 "m %" PRIu64 "s", m, s);
	return xasprintf("%" PRIu64 "s", s);
}

/* ------------------------------------------------------------ reply access */

/* Tolerant getters: a reply from a newer or broken daemon may lack a field
 * or carry another type; the output then shows "-" instead of failing. */
static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

static bool juint(const json_t *o, const char *key, uint64_t *v)
{
	const json_t *j = json_object_get(o, key);

	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return false;
	*v = (uint64_t)json_integer_value(j);
	return true;
}

typedef char *(*fmt_fn)(uint64_t);

static char *fmt_plain(uint64_t v)
{
	return xasprintf("%" PRIu64, v);
}

/* A formatted field, or "-" when it is absent, null or not a count. */
static char *field(const json_t *o, const char *key, fmt_fn fmt)
{
	uint64_t v;

	return juint(o, key, &v) ? fmt(v) : xasprintf("-");
}

static char *field_str(const json_t *o, const char *key)
{
	const char *s = jstr(o, key);

	return sanitize(xasprintf("%s", or_dash(s)));
}

/* Any scalar as text (an identifier may be a string or a number). */
static char *field_scalar(const json_t *o, const char *key)
{
	const json_t *j = json_object_get(o, key);
	char *s;

	if (json_is_string(j) || !j || json_is_null(j) || json_is_object(j) || json_is_array(j))
		return field_str(o, key);
	s = json_dumps(j, JSON_ENCODE_ANY);
	if (!s)
		oom();
	return s;
}

/* ------------------------------------------------------------ tables */

struct table {
	size_t ncols, ncells;
	const char *const *head;
	const bool *right; /* right-aligned columns */
	char **cells;      /* row-major, owned */
};

static void table_add(struct table *t, char *cell)
{
	t->cells = xrealloc(t->cells, (t->ncells + 1) * sizeof(*t->cells));
	t->cells[t->ncells++] = sanitize(cell);
}

static void table_print(struct table *t, FILE *out)
{
	size_t *w = xrealloc(NULL, t->ncols * sizeof(*w));
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
static void kv(FILE *out, const char *key, char *val)
{
	fprintf(out, "%-13s%s\n", key, sanitize(val));
	free(val);
}

/* ------------------------------------------------------------ status */

/* The daemon's QP watcher (docs/qpwatch.md), when the reply has one. */
static void show_qpwatch(const json_t *qw, const json_t *cnt, FILE *out)
{
	char *a, *b, *e, *f;
	uint64_t lost;

	if (!json_is_object(qw))
		return;
	a = field_str(qw, "state");
	if (jstr(qw, "reason")) {
		kv(out, "qpwatch:", xasprintf("%s: %s", a, jstr(qw, "reason")));
		free(a);
		return;
	}
	b = field_str(qw, "mode");
	e = field(qw, "qps", fmt_plain);
	f = field(cnt, "unmanaged", fmt_plain);
	kv(out, "qpwatch:", xasprintf("%s (%s), %s user QPs, %s unmanaged%s", a, b, e, f,
				      juint(qw, "lost", &lost) && lost ? ", records lost" : ""));
	free(a);
	free(b);
	free(e);
	free(f);
}

/* The isolation controller's port, MaxRate, floor, trace and calibration,
 * when the reply has them. */
static void show_controller(const json_t *c, FILE *out)
{
	const json_t *dev = json_object_get(c, "device"), *trace = json_object_get(c, "trace");
	const json_t *cal = json_object_get(c, "calibration"), *e;
	uint64_t lo = UINT64_MAX, hi = 0, v, t0 = 0, t1 = 0;
	char *a, *b, *d;
	size_t i;

	if (!json_object_get(c, "max_rate_source"))
		return;
	a = field(dev, "port", fmt_plain);
	b = field(c, "floor_bps", fmt_rate);
	d = field_str(c, "action");
	kv(out, "controller:", xasprintf("%s/%s, max rate from %s, floor %s, last step: %s%s",
					 or_dash(jstr(dev, "name")), a,
					 or_dash(jstr(c, "max_rate_source")), b, d,
					 json_is_true(json_object_get(c, "unattainable"))
						 ? ", target unattainable"
						 : ""));
	free(a);
	free(b);
	free(d);
	json_array_foreach(trace, i, e) {
		if (juint(e, "min_bps", &v) && v < lo)
			lo = v;
		if (juint(e, "max_bps", &v) && v > hi)
			hi = v;
		if (juint(e, "t_ms", &v)) {
			t0 = i ? t0 : v;
			t1 = v;
		}
	}
	if (json_array_size(trace) && lo <= hi) {
		a = fmt_rate(lo);
		b = fmt_rate(hi);
		kv(out, "trace:", xasprintf("safe util %s .. %s over the last %.1f s", a, b,
					    (double)(t1 - t0) / 1000));
		free(a);
		free(b);
	}
	if (json_is_object(cal)) {
		a = field_str(cal, "state");
		b = field(cal, "max_rate_bps", fmt_rate);
		d = jstr(cal, "error") ? xasprintf(", error: %s", jstr(cal, "error"))
				       : xasprintf("%s", "");
		kv(out, "calibration:", xasprintf("%s, measured %s%s", a, b, d));
		free(a);
		free(b);
		free(d);
	}
}

static void show_status(const json_t *reply, FILE *out)
{
	static const char *const head[] = { "DEVICE", "PORT", "GID", "MAX RATE", "CHUNK" };
	static const bool right[] = { false, true, true, true, true };
	const json_t *d = json_object_get(reply, "daemon");
	const json_t *c = json_object_get(reply, "controller");
	const json_t *ref = json_object_get(c, "reference");
	const json_t *cnt = json_object_get(reply, "counts");
	const json_t *lim = json_object_get(reply, "limits");
	const json_t *devs = json_object_get(reply, "devices");
	struct table t = { .ncols = 5, .head = head, .right = right };
	char *a, *b, *e, *f;
	const json_t *dev;
	size_t i;
	uint64_t v;

	a = field(d, "pid", fmt_plain);
	b = field(d, "uptime_ms", fmt_uptime);
	e = field_str(d, "version");
	kv(out, "daemon:", xasprintf("justitiad %s, pid %s, up %s", e, a, b));
	free(a);
	free(b);
	free(e);
	kv(out, "config:", field_str(d, "config"));
	kv(out, "socket:", field_str(d, "socket"));
	kv(out, "instance:", field_scalar(d, "instance"));

	kv(out, "mode:", field_str(c, "mode"));
	kv(out, "target p99:", field(c, "target99_ns", fmt_ns));
	if (juint(c, "current99_ns", &v)) {
		a = fmt_ns(v);
		b = field(c, "p50_ns", fmt_ns);
		e = field(c, "p999_ns", fmt_ns);
		kv(out, "latency:", xasprintf("p99 %s (p50 %s, p99.9 %s)", a, b, e));
		free(a);
		free(b);
		free(e);
	} else {
		kv(out, "latency:", xasprintf("no measurement yet"));
	}
	a = field(c, "safe_util_bps", fmt_rate);
	b = field(c, "max_rate_bps", fmt_rate);
	kv(out, "safe util:", xasprintf("%s of %s", a, b));
	free(a);
	free(b);
	a = field_str(ref, "state");
	b = field_str(ref, "peer");
	e = field(ref, "samples", fmt_plain);
	f = jstr(ref, "error") ? xasprintf(", error: %s", jstr(ref, "error")) : xasprintf("%s", "");
	kv(out, "reference:", xasprintf("%s, peer %s, %s samples%s", a, b, e, f));
	free(a);
	free(b);
	free(e);
	free(f);
	show_controller(c, out);

	a = field(cnt, "clients", fmt_plain);
	b = field(lim, "max_clients", fmt_plain);
	kv(out, "clients:", xasprintf("%s (max %s)", a, b));
	free(a);
	free(b);
	a = field(cnt, "flows", fmt_plain);
	b = field(lim, "max_flows", fmt_plain);
	e = field(lim, "max_flows_per_client", fmt_plain);
	kv(out, "flows:", xasprintf("%s (max %s, %s per client)", a, b, e));
	free(a);
	free(b);
	free(e);
	a = field(cnt, "latency", fmt_plain);
	b = field(cnt, "throughput", fmt_plain);
	e = field(cnt, "bandwidth", fmt_plain);
	kv(out, "classes:", xasprintf("latency %s, throughput %s, bandwidth %s", a, b, e));
	free(a);
	free(b);
	free(e);
	show_qpwatch(json_object_get(reply, "qpwatch"), cnt, out);

	fputc('\n', out);
	if (!json_array_size(devs)) {
		fputs("no devices\n", out);
		return;
	}
	json_array_foreach(devs, i, dev) {
		table_add(&t, field_str(dev, "name"));
		table_add(&t, field(dev, "port", fmt_plain));
		table_add(&t, field(dev, "gid_index", fmt_plain));
		table_add(&t, field(dev, "max_rate_bps", fmt_rate));
		table_add(&t, field(dev, "chunk_bytes", fmt_bytes));
	}
	table_print(&t, out);
}

/* ------------------------------------------------------------ flows */

static void show_flows(const json_t *reply, FILE *out)
{
	static const char *const head[] = { "ID",    "PID", "COMM",   "CLASS", "DEVICE", "QPN",
					    "BYTES", "OPS", "TOKENS", "RATE",  "WARN" };
	static const bool right[] = { true, true, false, false, false, true,
				      true, true, true,  true,  false };
	const json_t *flows = json_object_get(reply, "flows"), *fl;
	struct table t = { .ncols = 11, .head = head, .right = right };
	const char *warn;
	uint64_t port, ops;
	size_t i;

	if (!json_array_size(flows)) {
		fputs("no flows\n", out);
		return;
	}
	json_array_foreach(flows, i, fl) {
		table_add(&t, field(fl, "id", fmt_plain));
		table_add(&t, field(fl, "pid", fmt_plain));
		table_add(&t, field_str(fl, "comm"));
		table_add(&t, field_str(fl, "class"));
		if (juint(fl, "port", &port))
			table_add(&t, xasprintf("%s/%" PRIu64, or_dash(jstr(fl, "device")), port));
		else
			table_add(&t, field_str(fl, "device"));
		table_add(&t, field(fl, "qpn", fmt_plain));
		table_add(&t, field(fl, "bytes", fmt_bytes));
		table_add(&t, field(fl, "ops", fmt_plain));
		table_add(&t, field(fl, "tokens", fmt_plain));
		if (juint(fl, "paced_ops_per_s", &ops) && ops)
			table_add(&t, fmt_ops(ops));
		else
			table_add(&t, field(fl, "paced_rate_bps", fmt_rate));
		warn = jstr(fl, "warning");
		if (json_is_false(json_object_get(fl, "managed")))
			table_add(&t, xasprintf("unmanaged%s%s", warn ? "; " : "",
						warn ? warn : ""));
		else
			table_add(&t, xasprintf("%s", or_dash(warn)));
	}
	table_print(&t, out);
}

/* ------------------------------------------------------------ set, version */

static void show_set(const json_t *reply, FILE *out)
{
	const json_t *changed = json_object_get(reply, "changed"), *val;
	const char *key;
	char *s, *k;

	if (!json_object_size(changed)) {
		fputs("nothing changed\n", out);
		return;
	}
	json_object_foreach((json_t *)changed, key, val) {
		size_t kl = strlen(key);
		uint64_t v;

		if (json_is_string(val))
			s = xasprintf("%s", json_string_value(val));
		else if (juint(changed, key, &v) && kl > 4 && !strcmp(key + kl - 4, "_bps"))
			s = fmt_rate(v);
		else if (!(s = json_dumps(val, JSON_COMPACT | JSON_ENCODE_ANY)))
			oom();
		k = sanitize(xasprintf("%s", key));
		fprintf(out, "%s: %s\n", k, sanitize(s));
		free(k);
		free(s);
	}
}

static void show_version(const json_t *reply, FILE *out)
{
	uint64_t proto;
	char *v = field_str(reply, "version");

	fprintf(out, "justctl %s (protocol %d)\n", JUSTITIA_VERSION, PROTO_VERSION);
	if (juint(reply, "protocol", &proto))
		fprintf(out, "justitiad %s (protocol %" PRIu64 ")\n", v, proto);
	else
		fprintf(out, "justitiad %s\n", v);
	free(v);
}

/* ------------------------------------------------------------ requests */

/* Each builder gets the command's arguments (argv[0] is the command name)
 * and the request to complete; on a usage error it says why on @err and
 * returns EXIT_USAGE. */
typedef int (*build_fn)(int argc, char **argv, json_t *req, FILE *err);

__attribute__((format(printf, 2, 3))) static int usage_error(FILE *err, const char *fmt, ...)
{
	va_list ap;

	fputs("justctl: ", err);
	va_start(ap, fmt);
	vfprintf(err, fmt, ap);
	va_end(ap);
	fputs("\n", err);
	return EXIT_USAGE;
}

static int no_args(int argc, char **argv, FILE *err)
{
	if (argc > 1)
		return usage_error(err, "%s: unexpected argument '%s'", argv[0], argv[1]);
	return 0;
}

static int build_plain(int argc, char **argv, json_t *req, FILE *err)
{
	(void)req;
	return no_args(argc, argv, err);
}

static int build_flows(int argc, char **argv, json_t *req, FILE *err)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--all") && strcmp(argv[i], "-a"))
			return usage_error(err, "flows: unexpected argument '%s'", argv[i]);
		set_new(req, "all", json_true());
	}
	return 0;
}

/* `set` sub-commands: argv[0] is "set", argv[1] the setting. */
static int set_target(int argc, char **argv, json_t *req, FILE *err)
{
	uint64_t us;

	if (argc != 3)
		return usage_error(err, "set target: expected one argument, USEC");
	if (parse_uint(argv[2], 1, INT64_MAX, &us))
		return usage_error(err, "set target: '%s' is not a positive number of microseconds",
				   argv[2]);
	set_new(req, "target99_us", json_integer((json_int_t)us));
	return 0;
}

static int set_max_rate(int argc, char **argv, json_t *req, FILE *err)
{
	uint64_t bps;

	if (argc < 3 || argc > 4)
		return usage_error(err, "set max-rate: expected RATE [DEVICE]");
	if (parse_rate(argv[2], &bps))
		return usage_error(err,
				   "set max-rate: invalid rate '%s' (examples: 25Gbit, 400Mbit, "
				   "100kbit, 1000000)",
				   argv[2]);
	set_new(req, "max_rate", json_integer((json_int_t)bps));
	if (argc == 4) {
		if (!argv[3][0])
			return usage_error(err, "set max-rate: empty device name");
		set_new(req, "device", json_string(argv[3]));
	}
	return 0;
}

static int set_policy(int argc, char **argv, json_t *req, FILE *err)
{
	if (argc != 3)
		return usage_error(err, "set policy: expected keep or ignore-latency");
	if (!strcmp(argv[2], "keep"))
		set_new(req, "policy", json_string("keep"));
	else if (!strcmp(argv[2], "ignore-latency") || !strcmp(argv[2], "ignore_latency"))
		set_new(req, "policy", json_string("ignore_latency"));
	else
		return usage_error(err, "set policy: '%s' is not keep or ignore-latency", argv[2]);
	return 0;
}

static int set_weight(int argc, char **argv, json_t *req, FILE *err)
{
	uint64_t w, id;
	bool pid;

	if (argc != 5 || (strcmp(argv[3], "pid") && strcmp(argv[3], "flow")))
		return usage_error(err, "set weight: expected N pid PID, or N flow ID");
	pid = !strcmp(argv[3], "pid");
	if (parse_uint(argv[2], 1, INT64_MAX, &w))
		return usage_error(err, "set weight: '%s' is not a positive integer", argv[2]);
	if (parse_uint(argv[4], pid ? 1 : 0, pid ? INT_MAX : INT64_MAX, &id))
		return usage_error(err, "set weight: '%s' is not a valid %s", argv[4],
				   pid ? "process id" : "flow id");
	set_new(req, "weight", json_integer((json_int_t)w));
	set_new(req, pid ? "pid" : "flow", json_integer((json_int_t)id));
	return 0;
}

static const struct ctl_setting {
	const char *name;
	const char *args;
	const char *help;
	build_fn build;
} settings[] = {
	{ "target", "USEC", "99th-percentile latency target of latency flows", set_target },
	{ "max-rate", "RATE [DEVICE]", "rate cap of one device, or of all (25Gbit, 400Mbit)",
	  set_max_rate },
	{ "policy", "keep|ignore-latency", "what to do when the target is unattainable",
	  set_policy },
	{ "weight", "N pid PID", "weight of every flow of a process", set_weight },
	{ "weight", "N flow ID", "weight of one flow", set_weight },
};

static int build_set(int argc, char **argv, json_t *req, FILE *err)
{
	if (argc < 2)
		return usage_error(err, "set: expected target, max-rate, policy or weight");
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
		if (!strcmp(argv[1], settings[i].name))
			return settings[i].build(argc, argv, req, err);
	return usage_error(err, "set: unknown setting '%s' (target, max-rate, policy, weight)",
			   argv[1]);
}

struct ctl_opts {
	const char *socket;
	bool json;
	int timeout_ms;
};

/* calibrate [MS]: the daemon starts measuring and answers at once; justctl
 * then follows the measurement in status until it is over. */
static int build_calibrate(int argc, char **argv, json_t *req, FILE *err)
{
	uint64_t ms;

	if (argc > 2)
		return usage_error(err, "calibrate: expected at most one argument, MS");
	if (argc == 2) {
		if (parse_uint(argv[1], 100, 10000, &ms))
			return usage_error(err,
					   "calibrate: '%s' is not a duration of 100..10000 ms",
					   argv[1]);
		set_new(req, "duration_ms", json_integer((json_int_t)ms));
	}
	return 0;
}

static void show_calibrate(const json_t *reply, FILE *out)
{
	char *ms = field(json_object_get(reply, "calibration"), "duration_ms", fmt_plain);

	fprintf(out, "calibrating against the reference peer for %s ms...\n", ms);
	free(ms);
	fflush(out);
}

/* Poll status until the calibration is over; print its result. */
static int follow_calibrate(const struct ctl_opts *o, const char *path, FILE *out, FILE *err)
{
	json_t *req = xjson(json_pack("{s:i, s:s, s:i}", "v", PROTO_VERSION, "cmd", "status", "id",
				      REQUEST_ID));
	int rc = EXIT_FAILURE, e;

	for (int i = 0; i < 300; i++) { /* 60 s at most */
		const json_t *cal;
		const char *state;
		json_t *reply = NULL;
		int fd = proto_connect(path, o->timeout_ms);

		if (fd >= 0) {
			reply = proto_call(fd, req, o->timeout_ms, NULL, NULL, 0, &e);
			close(fd);
		}
		if (!reply) {
			fprintf(err, "justctl: calibrate: lost the daemon while measuring\n");
			break;
		}
		cal = json_object_get(json_object_get(reply, "controller"), "calibration");
		state = jstr(cal, "state");
		if (!state || strcmp(state, "running")) {
			bool done = state && !strcmp(state, "done");

			if (o->json) {
				json_t *r = xjson(json_pack("{s:i, s:b, s:O}", "v", PROTO_VERSION,
							    "ok", done, "calibration", cal));

				json_dumpf(r, out, JSON_INDENT(2));
				fputc('\n', out);
				json_decref(r);
			} else if (done) {
				char *rate = field(cal, "max_rate_bps", fmt_rate);
				char *peer = field_str(cal, "peer");

				fprintf(out, "max rate: %s (measured against %s)\n", rate, peer);
				free(rate);
				free(peer);
			}
			if (!done) {
				char *why = field_str(cal, "error");

				fprintf(err, "justctl: calibrate: failed: %s\n", why);
				free(why);
			}
			rc = done ? EXIT_SUCCESS : EXIT_FAILURE;
			json_decref(reply);
			break;
		}
		json_decref(reply);
		usleep(200000);
	}
	json_decref(req);
	return rc;
}

/* ------------------------------------------------------------ metrics, watch */

static json_t *more_pages(int fd, json_t *req, json_t *reply, int timeout_ms, int *e);

/* status, and the flows (every page), on one connection: 0, or
 * EXIT_FAILURE after saying why on @err. */
static int fetch_state(const struct ctl_opts *o, const char *path, json_t **status,
		       json_t **flows, FILE *err)
{
	json_t *req, *fr = NULL;
	int fd, e = 0;

	*status = *flows = NULL;
	fd = proto_connect(path, o->timeout_ms);
	if (fd < 0) {
		fprintf(err, "justctl: cannot connect to %s: %s\n", path, strerror(-fd));
		return EXIT_FAILURE;
	}
	req = xjson(json_pack("{s:i, s:s, s:i}", "v", PROTO_VERSION, "cmd", "status", "id",
			      REQUEST_ID));
	*status = proto_call(fd, req, o->timeout_ms, NULL, NULL, 0, &e);
	json_object_set_new(req, "cmd", json_string("flows"));
	if (*status && json_is_true(json_object_get(*status, "ok"))) {
		fr = proto_call(fd, req, o->timeout_ms, NULL, NULL, 0, &e);
		fr = more_pages(fd, req, fr, o->timeout_ms, &e);
	}
	close(fd);
	json_decref(req);
	if (!fr || !json_is_true(json_object_get(fr, "ok"))) {
		const json_t *bad = fr ? fr : *status;
		const char *msg = json_string_value(
			json_object_get(json_object_get(bad, "error"), "message"));

		fprintf(err, "justctl: no answer from justitiad on %s: %s\n", path,
			msg ? msg : e ? strerror(-e) : "malformed reply");
		json_decref(fr);
		json_decref(*status);
		*status = NULL;
		return EXIT_FAILURE;
	}
	*flows = json_incref(json_object_get(fr, "flows"));
	json_decref(fr);
	return 0;
}

/* metrics [--no-flows] [--output FILE] */
static int build_metrics(int argc, char **argv, json_t *req, FILE *err)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-flows"))
			continue;
		if ((!strcmp(argv[i], "--output") || !strcmp(argv[i], "-o")) && i + 1 < argc &&
		    argv[i + 1][0]) {
			i++;
			continue;
		}
		return usage_error(err, "metrics: unexpected argument '%s'", argv[i]);
	}
	return 0;
}

/* Write to FILE.tmp, then rename: node_exporter never reads half a file. */
static int run_metrics(const struct ctl_opts *o, const char *path, int argc, char **argv,
		       FILE *out, FILE *err)
{
	const char *output = NULL;
	bool per_flow = true;
	json_t *status, *flows;
	char *tmp = NULL;
	FILE *f = out;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-flows"))
			per_flow = false;
		else
			output = argv[++i];
	}
	rc = fetch_state(o, path, &status, &flows, err);
	if (output) {
		tmp = xasprintf("%s.tmp", output);
		f = fopen(tmp, "we");
		if (!f) {
			fprintf(err, "justctl: metrics: %s: %s\n", tmp, strerror(errno));
			rc = EXIT_FAILURE;
			goto out;
		}
	}
	if (o->json) {
		json_t *j = xjson(json_pack("{s:O?, s:O?}", "status", status, "flows", flows));

		json_dumpf(j, f, JSON_INDENT(2));
		fputc('\n', f);
		json_decref(j);
	} else {
		ctl_metrics_write(status, flows, per_flow, f);
	}
	if (output) {
		if (fflush(f) || ferror(f) || fclose(f) || rename(tmp, output)) {
			fprintf(err, "justctl: metrics: %s: %s\n", output, strerror(errno));
			unlink(tmp);
			rc = EXIT_FAILURE;
		}
	}
out:
	free(tmp);
	json_decref(status);
	json_decref(flows);
	return rc;
}

/* watch [-n SECONDS] [-c COUNT] */
static int watch_args(int argc, char **argv, double *interval, uint64_t *count, FILE *err)
{
	*interval = 2;
	*count = 0;
	for (int i = 1; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			*interval = strtod(argv[++i], &end);
			if (*end || !(*interval >= 0.1 && *interval <= 3600))
				return usage_error(err, "watch: -n takes 0.1..3600 seconds, not '%s'",
						   argv[i]);
		} else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
			if (parse_uint(argv[++i], 1, UINT32_MAX, count))
				return usage_error(err, "watch: -c takes a positive count, not '%s'",
						   argv[i]);
		} else {
			return usage_error(err, "watch: unexpected argument '%s'", argv[i]);
		}
	}
	return 0;
}

static int build_watch(int argc, char **argv, json_t *req, FILE *err)
{
	double interval;
	uint64_t count;

	return watch_args(argc, argv, &interval, &count, err);
}

/* status and flows again every interval, like top: on a terminal the
 * screen is cleared first, otherwise each round starts with a "---" line. */
static int run_watch(const struct ctl_opts *o, const char *path, int argc, char **argv,
		     FILE *out, FILE *err)
{
	bool tty = isatty(fileno(out));
	int rc = EXIT_SUCCESS;
	double interval;
	uint64_t count;

	watch_args(argc, argv, &interval, &count, err);
	for (uint64_t round = 0; !count || round < count; round++) {
		json_t *status, *flows;
		char when[32];
		time_t now = time(NULL);

		if (round) {
			struct timespec ts = { (time_t)interval,
					       (long)((interval - (double)(time_t)interval) * 1e9) };

			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
		}
		strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
		if (tty)
			fputs("\033[H\033[2J", out);
		else if (round)
			fputs("---\n", out);
		fprintf(out, "justitiad on %s at %s (every %gs; Ctrl-C ends)\n\n", path, when,
			interval);
		rc = fetch_state(o, path, &status, &flows, out);
		if (!rc) {
			json_t *fr = xjson(json_pack("{s:O}", "flows", flows));

			show_status(status, out);
			fputc('\n', out);
			show_flows(fr, out);
			json_decref(fr);
		}
		json_decref(status);
		json_decref(flows);
		if (fflush(out) || ferror(out)) {
			fprintf(err, "justctl: write error: %s\n", strerror(errno));
			return EXIT_FAILURE;
		}
	}
	return rc;
}

static const struct ctl_cmd {
	const char *name;
	const char *args;
	const char *help;
	build_fn build;
	void (*show)(const json_t *reply, FILE *out);
	/* after a successful reply, for commands that take a while */
	int (*follow)(const struct ctl_opts *o, const char *path, FILE *out, FILE *err);
	/* commands that do their own requests (argv as for build) */
	int (*run)(const struct ctl_opts *o, const char *path, int argc, char **argv, FILE *out,
		   FILE *err);
} commands[] = {
	{ "status", "", "daemon, controller and device state", build_plain, show_status },
	{ "flows", "[--all]", "registered flows (--all: also unmanaged ones)", build_flows,
	  show_flows },
	{ "set", NULL, NULL, build_set, show_set }, /* usage from settings[] */
	{ "version", "", "justctl and justitiad versions", build_plain, show_version },
	{ "calibrate", "[MS]", "measure the max rate against the reference peer (root)",
	  build_calibrate, show_calibrate, follow_calibrate },
	{ "metrics", "[--no-flows] [-o FILE]", "state in Prometheus text format (FILE: atomically)",
	  build_metrics, NULL, NULL, run_metrics },
	{ "watch", "[-n SEC] [-c COUNT]", "status and flows, refreshed every SEC (2) seconds",
	  build_watch, NULL, NULL, run_watch },
};

static void usage(FILE *out)
{
	fputs("Usage: justctl [-s PATH] [-j] [-t MS] COMMAND [ARGS]\n"
	      "       justctl -h | -V\n\nCommands:\n",
	      out);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct ctl_cmd *c = &commands[i];
		char *s;

		if (!c->args) {
			for (size_t j = 0; j < sizeof(settings) / sizeof(settings[0]); j++) {
				s = xasprintf("%s %s %s", c->name, settings[j].name,
					      settings[j].args);
				fprintf(out, "  %-32s %s\n", s, settings[j].help);
				free(s);
			}
			continue;
		}
		s = xasprintf("%s %s", c->name, c->args);
		fprintf(out, "  %-32s %s\n", s, c->help);
		free(s);
	}
	fputs("\nOptions:\n"
	      "  -s, --socket PATH   control socket (default: $" PROTO_SOCKET_ENV ", else\n"
	      "                      " PROTO_DEFAULT_SOCKET ")\n"
	      "  -j, --json          print the daemon's reply as JSON\n"
	      "  -t, --timeout MS    give up after MS milliseconds (default 5000, 0: never)\n"
	      "  -h, --help          print this help and exit\n"
	      "  -V, --version       print justctl's version and exit\n",
	      out);
}

/* The request for `COMMAND ARGS` (argv[0] is the command): 0 with *req and
 * *cmd set, or EXIT_USAGE after saying why on @err. */
static int ctl_build(int argc, char **argv, const struct ctl_cmd **cmd, json_t **req, FILE *err)
{
	const struct ctl_cmd *c = NULL;
	json_t *r;
	int rc;

	*req = NULL;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[0], commands[i].name))
			c = &commands[i];
	if (!c) {
		usage_error(err, "unknown command '%s'", argv[0]);
		fputs("Try 'justctl --help'.\n", err);
		return EXIT_USAGE;
	}
	r = xjson(json_object());
	set_new(r, "v", json_integer(PROTO_VERSION));
	set_new(r, "cmd", json_string(c->name));
	set_new(r, "id", json_integer(REQUEST_ID));
	rc = c->build(argc, argv, r, err);
	if (rc) {
		json_decref(r);
		return rc;
	}
	*cmd = c;
	*req = r;
	return 0;
}

/* ------------------------------------------------------------ main */

/* Options: 0 with *first set to the index of the command, -1 when done
 * (help, version printed), or EXIT_USAGE. */
static int ctl_options(int argc, char **argv, struct ctl_opts *o, int *first, FILE *out,
		       FILE *err)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t ms;
	int c;

	*o = (struct ctl_opts){ .timeout_ms = DEFAULT_TIMEOUT_MS };
	optind = 0; /* full re-initialisation: ctl_main() may run more than once */
	opterr = 0; /* our messages go to @err */
	while ((c = getopt_long(argc, argv, "+:s:jt:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!optarg[0])
				return usage_error(err, "empty socket path");
			o->socket = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 't':
			if (parse_uint(optarg, 0, INT_MAX, &ms))
				return usage_error(err, "invalid timeout '%s' (milliseconds)",
						   optarg);
			o->timeout_ms = (int)ms;
			break;
		case 'h':
			usage(out);
			return -1;
		case 'V':
			fprintf(out, "justctl %s (protocol %d)\n", JUSTITIA_VERSION, PROTO_VERSION);
			return -1;
		case ':':
			usage_error(err, "option '%s' needs an argument", argv[optind - 1]);
			fputs("Try 'justctl --help'.\n", err);
			return EXIT_USAGE;
		default:
			if (optopt)
				usage_error(err, "unknown option '-%c'", optopt);
			else
				usage_error(err, "unknown option '%s'", argv[optind - 1]);
			fputs("Try 'justctl --help'.\n", err);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage_error(err, "no command given");
		usage(err);
		return EXIT_USAGE;
	}
	*first = optind;
	return 0;
}

static const char *connect_hint(int e)
{
	switch (e) {
	case ENOENT:
	case ECONNREFUSED:
		return " (is justitiad running?)";
	case EACCES:
	case EPERM:
		return " (root or the socket's group needed)";
	default:
		return "";
	}
}

/* Print an error reply ("justctl: set: permission_denied: ...") */
static void show_error(const char *cmd, const json_t *reply, FILE *err)
{
	const json_t *e = json_object_get(reply, "error");
	char *code = field_str(e, "code"), *msg = field_str(e, "message");

	fprintf(err, "justctl: %s: %s: %s\n", cmd, code, msg);
	free(code);
	free(msg);
}

/* A paged reply (flows: "next" is not null) is completed with the following
 * pages on the same connection, their "flows" appended to the first's; NULL
 * with *e set if a page fails. */
static json_t *more_pages(int fd, json_t *req, json_t *reply, int timeout_ms, int *e)
{
	const char *k;
	json_t *next, *v;

	while (reply && json_is_true(json_object_get(reply, "ok")) &&
	       json_is_object(next = json_object_get(reply, "next"))) {
		json_t *more;

		json_object_foreach(next, k, v)
			json_object_set(req, k, v);
		more = proto_call(fd, req, timeout_ms, NULL, NULL, 0, e);
		if (!more || !json_is_true(json_object_get(more, "ok")) ||
		    !json_is_array(json_object_get(more, "flows"))) {
			json_decref(reply);
			if (more && !json_is_true(json_object_get(more, "ok")))
				return more; /* its error is shown */
			json_decref(more);
			if (!*e)
				*e = -EPROTO;
			return NULL;
		}
		json_array_extend(json_object_get(reply, "flows"), json_object_get(more, "flows"));
		json_object_set(reply, "next", json_object_get(more, "next"));
		json_decref(more);
	}
	return reply;
}

static int ctl_main(int argc, char **argv, FILE *out, FILE *err)
{
	const struct ctl_cmd *cmd;
	struct ctl_opts o;
	json_t *req = NULL, *reply = NULL;
	const char *path;
	int first = 0, fd, e, rc;
	bool ok;

	rc = ctl_options(argc, argv, &o, &first, out, err);
	if (rc)
		return rc < 0 ? EXIT_SUCCESS : rc;
	rc = ctl_build(argc - first, argv + first, &cmd, &req, err);
	if (rc)
		return rc;
	rc = EXIT_FAILURE;
	path = o.socket ? o.socket : proto_socket_path();
	if (cmd->run) {
		rc = cmd->run(&o, path, argc - first, argv + first, out, err);
		goto out_req;
	}
	fd = proto_connect(path, o.timeout_ms);
	if (fd < 0) {
		fprintf(err, "justctl: cannot connect to %s: %s%s\n", path, strerror(-fd),
			connect_hint(-fd));
		goto out_req;
	}
	reply = proto_call(fd, req, o.timeout_ms, NULL, NULL, 0, &e);
	reply = more_pages(fd, req, reply, o.timeout_ms, &e);
	close(fd);
	if (!reply) {
		if (e == -ETIMEDOUT)
			fprintf(err, "justctl: %s: no reply from justitiad within %d ms\n",
				cmd->name, o.timeout_ms);
		else if (e == -ECONNRESET || e == -EPIPE)
			fprintf(err, "justctl: %s: justitiad closed the connection\n", cmd->name);
		else if (e == -EPROTO)
			fprintf(err, "justctl: %s: malformed reply from justitiad\n", cmd->name);
		else
			fprintf(err, "justctl: %s: %s\n", cmd->name, strerror(-e));
		goto out_req;
	}
	ok = json_is_true(json_object_get(reply, "ok"));
	/* a command that is followed prints its final result as JSON instead */
	if (o.json && !(ok && cmd->follow) && !json_dumpf(reply, out, JSON_INDENT(2)))
		fputc('\n', out);
	if (!ok)
		show_error(cmd->name, reply, err);
	else if (!o.json)
		cmd->show(reply, out);
	rc = ok ? EXIT_SUCCESS : EXIT_FAILURE;
	if (ok && cmd->follow)
		rc = cmd->follow(&o, path, out, err);
	if (fflush(out) || ferror(out)) {
		fprintf(err, "justctl: write error: %s\n", strerror(errno));
		rc = EXIT_FAILURE;
	}
	json_decref(reply);
out_req:
	json_decref(req);
	return rc;
}

int main(int argc, char **argv)
{
	return ctl_main(argc, argv, stdout, stderr);
}

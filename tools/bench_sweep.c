// SPDX-License-Identifier: MIT
/* justbench sweeps: settings, points, buffer choice and statistics (no verbs).
 * May call: bench_flow, bench_mode, bench_stats, jansson and libc. */
#include "bench_sweep.h"
#include "bench_err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define POOL_DEFAULT 64

static const uint32_t reuse_default[] = { 0, 50, 90, 100 };
static const uint64_t overhead_default[] = { 0, 100000, 1000000, 2000000, 5000000, 10000000 };
static const uint64_t overlap_default[] = { 0, 10000, 100000, 1000000, 10000000 };
static const uint64_t delay_default[] = { 0, 1000000, 2000000, 4000000, 8000000, 16000000 };

/* One value of a list: an integer lo..hi, or with times a duration in ns. */
static int parse_value(const char *s, bool time, uint64_t lo, uint64_t hi, uint64_t *out)
{
	size_t len = strlen(s);
	char *end;

	if (!len || s[0] == '-' || s[0] == '+')
		return -EINVAL;
	if (time && len > 2 && strcmp(s + len - 2, "ns") == 0) {
		errno = 0;
		*out = strtoull(s, &end, 10);
		if (errno || end != s + len - 2)
			return -EINVAL;
	} else if (time) {
		uint64_t us;

		if (bench_parse_time(s, &us) || us > hi / 1000)
			return -EINVAL;
		*out = us * 1000;
	} else {
		errno = 0;
		*out = strtoull(s, &end, 10);
		if (errno || *end)
			return -EINVAL;
	}
	return *out < lo || *out > hi ? -EINVAL : 0;
}

static int parse_list(const char *what, const char *s, bool time, uint64_t lo, uint64_t hi,
		      uint64_t *vals, unsigned *n, char *err, size_t errlen)
{
	char buf[512], *tok, *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return bench_seterr(err, errlen, -EINVAL, "%s: list too long", what);
	strcpy(buf, s);
	*n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (*n == BENCH_POINTS_MAX)
			return bench_seterr(err, errlen, -EINVAL, "%s: more than %d values", what,
					    BENCH_POINTS_MAX);
		if (parse_value(tok, time, lo, hi, &vals[*n]) && time)
			return bench_seterr(err, errlen, -EINVAL,
					    "%s: invalid time \"%s\" (0ns..%llus)", what, tok,
					    (unsigned long long)(hi / 1000000000));
		if (parse_value(tok, time, lo, hi, &vals[*n]))
			return bench_seterr(err, errlen, -EINVAL, "%s: \"%s\" is not in %llu..%llu",
					    what, tok, (unsigned long long)lo,
					    (unsigned long long)hi);
		(*n)++;
	}
	if (!*n)
		return bench_seterr(err, errlen, -EINVAL, "%s: no value", what);
	return 0;
}

int bench_sweep_parse_reuse(struct bench_sweep_cfg *c, const char *s, char *err, size_t errlen)
{
	uint64_t v[BENCH_POINTS_MAX];
	int rc = parse_list("--reuse", s, false, 0, 100, v, &c->n_reuse, err, errlen);

	for (unsigned i = 0; !rc && i < c->n_reuse; i++)
		c->reuse[i] = (uint32_t)v[i];
	if (rc)
		c->n_reuse = 0;
	return rc;
}

int bench_sweep_parse_rotate(struct bench_sweep_cfg *c, const char *s, char *err, size_t errlen)
{
	uint64_t v[BENCH_POINTS_MAX];
	int rc = parse_list("--rotate", s, false, 1, BENCH_POOL_MAX, v, &c->n_rotate, err, errlen);

	for (unsigned i = 0; !rc && i < c->n_rotate; i++)
		c->rotate[i] = (uint32_t)v[i];
	if (rc)
		c->n_rotate = 0;
	return rc;
}

int bench_sweep_parse_compute(struct bench_sweep_cfg *c, const char *s, char *err,
			      size_t errlen)
{
	int rc = parse_list("--compute", s, true, 0, BENCH_COMPUTE_MAX, c->compute, &c->n_compute,
			    err, errlen);

	if (rc)
		c->n_compute = 0;
	return rc;
}

int bench_sweep_parse_delay(struct bench_sweep_cfg *c, const char *s, char *err, size_t errlen)
{
	int rc = parse_list("--response-delay", s, true, 0, BENCH_RESPONSE_DELAY_MAX, c->delay,
			    &c->n_delay, err, errlen);

	if (rc)
		c->n_delay = 0;
	return rc;
}

int bench_sweep_parse_buffers(struct bench_sweep_cfg *c, const char *s, char *err,
			      size_t errlen)
{
	uint64_t v;

	if (parse_value(s, false, 1, BENCH_POOL_MAX, &v))
		return bench_seterr(err, errlen, -EINVAL, "--buffers: \"%s\" is not in 1..%d", s,
				    BENCH_POOL_MAX);
	c->buffers = (uint32_t)v;
	return 0;
}

bool bench_sweep_mode(enum bench_mode m)
{
	return m == BENCH_MODE_REUSE || m == BENCH_MODE_OVERHEAD || m == BENCH_MODE_OVERLAP ||
	       m == BENCH_MODE_PROGRESS;
}

/* A compute sweep: 0 first, then the list (or the default) without its zeros. */
static unsigned compute_points(enum bench_point_kind kind, const struct bench_sweep_cfg *c,
			       const uint64_t *def, unsigned ndef, struct bench_point_spec *out)
{
	const uint64_t *v = c->n_compute ? c->compute : def;
	unsigned nv = c->n_compute ? c->n_compute : ndef, n = 1;

	out[0] = (struct bench_point_spec){ kind, 0 };
	for (unsigned i = 0; i < nv && n < BENCH_POINTS_MAX; i++)
		if (v[i])
			out[n++] = (struct bench_point_spec){ kind, v[i] };
	return n;
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

unsigned bench_sweep_points(enum bench_mode m, const struct bench_sweep_cfg *c,
			    const struct bench_flow *f, struct bench_point_spec *out)
{
	unsigned n = 0;

	if (m == BENCH_MODE_REUSE) {
		const uint32_t *v = c->n_reuse ? c->reuse : reuse_default;
		unsigned nv = c->n_reuse ? c->n_reuse : NELEM(reuse_default);

		for (unsigned i = 0; i < nv; i++)
			out[n++] = (struct bench_point_spec){ BENCH_PT_REUSE, v[i] };
		for (unsigned i = 0; i < c->n_rotate && n < BENCH_POINTS_MAX; i++)
			out[n++] = (struct bench_point_spec){ BENCH_PT_ROTATE, c->rotate[i] };
	} else if (m == BENCH_MODE_OVERHEAD && f->cls == BENCH_LAT) {
		out[n++] = (struct bench_point_spec){ BENCH_PT_CPU, 0 };
	} else if (m == BENCH_MODE_OVERHEAD) {
		n = compute_points(BENCH_PT_COMPUTE, c, overhead_default, NELEM(overhead_default), out);
	} else if (m == BENCH_MODE_OVERLAP) {
		n = compute_points(BENCH_PT_OVERLAP, c, overlap_default, NELEM(overlap_default), out);
	} else if (m == BENCH_MODE_PROGRESS) {
		const uint64_t *v = c->n_delay ? c->delay : delay_default;
		unsigned nv = c->n_delay ? c->n_delay : NELEM(delay_default);

		for (unsigned i = 0; i < nv; i++)
			out[n++] = (struct bench_point_spec){ BENCH_PT_PROGRESS, v[i] };
	}
	return n;
}

uint32_t bench_sweep_pool(enum bench_mode m, const struct bench_sweep_cfg *c,
			  const struct bench_flow *f)
{
	uint32_t pool = c->buffers ? c->buffers : POOL_DEFAULT;

	(void)f;
	if (m != BENCH_MODE_REUSE)
		return 0;
	for (unsigned i = 0; i < c->n_rotate; i++)
		if (c->rotate[i] > pool)
			pool = c->rotate[i];
	return pool;
}

uint32_t bench_sweep_buffer(const struct bench_point_spec *p, uint32_t pool, uint64_t i,
			    uint64_t *state)
{
	uint64_t distinct;

	if (p->kind == BENCH_PT_ROTATE)
		return p->x ? (uint32_t)(i % p->x) : 0;
	if (p->kind != BENCH_PT_REUSE || pool <= 1)
		return 0;
	/* reused so far: floor(R * i / 100); message i is reused when that count grows */
	if (p->x * (i + 1) / 100 > p->x * i / 100)
		return 0;
	distinct = (*state)++;
	return 1 + (uint32_t)(distinct % (pool - 1));
}

void bench_point_run_init(struct bench_point_run *r)
{
	memset(r, 0, sizeof(*r));
	bench_samples_init(&r->lat);
	bench_samples_init(&r->post_cpu);
	bench_samples_init(&r->poll_cpu);
}

void bench_point_run_free(struct bench_point_run *r)
{
	bench_samples_free(&r->lat);
	bench_samples_free(&r->post_cpu);
	bench_samples_free(&r->poll_cpu);
}

int bench_sweep_collect(struct bench_sweep_result *out, const struct bench_point_spec *spec,
			unsigned n, struct bench_point_run *const *runs, size_t qps)
{
	int rc = 0;

	out->n = n;
	for (unsigned i = 0; i < n; i++) {
		struct bench_point *p = &out->p[i];
		struct bench_samples lat, post, poll;

		memset(p, 0, sizeof(*p));
		p->spec = spec[i];
		bench_samples_init(&lat);
		bench_samples_init(&post);
		bench_samples_init(&poll);
		for (size_t q = 0; q < qps; q++) {
			struct bench_point_run *r = runs[q] ? &runs[q][i] : NULL;

			if (!r)
				continue;
			p->msgs += r->msgs;
			p->bytes += r->bytes;
			p->compute_ns += r->compute_ns;
			p->reused += r->reused;
			if (r->elapsed_ns > p->elapsed_ns)
				p->elapsed_ns = r->elapsed_ns;
			if (bench_samples_merge(&lat, &r->lat) ||
			    bench_samples_merge(&post, &r->post_cpu) ||
			    bench_samples_merge(&poll, &r->poll_cpu))
				rc = -ENOMEM;
			bench_point_run_free(r);
		}
		bench_samples_summarize(&lat, &p->lat);
		bench_samples_summarize(&post, &p->post_cpu);
		bench_samples_summarize(&poll, &p->poll_cpu);
		bench_samples_free(&lat);
		bench_samples_free(&post);
		bench_samples_free(&poll);
	}
	return rc;
}

double bench_point_gbps(const struct bench_point *p)
{
	return p->elapsed_ns ? (double)p->bytes * 8 / (double)p->elapsed_ns : 0;
}

double bench_point_share(const struct bench_point *p, uint32_t qps)
{
	double s;

	if (!p->elapsed_ns || !qps)
		return 0;
	s = (double)p->compute_ns / ((double)p->elapsed_ns * qps);
	return s > 1 ? 1 : s;
}

double bench_point_overlap(const struct bench_point *p, const struct bench_point *b)
{
	double comm, c, t, o;

	if (!b->msgs || !b->lat.count || !b->lat.mean || !p->msgs)
		return -1;
	comm = (double)b->lat.mean;
	c = (double)p->compute_ns / (double)p->msgs;
	t = (double)p->lat.mean;
	o = (comm + c - t) / comm;
	return o < 0 ? 0 : o > 1 ? 1 : o;
}

int bench_sweep_knee(const struct bench_sweep_result *s, uint32_t qps)
{
	double base, best = -1;
	int knee = -1;

	if (!s->n || s->p[0].spec.kind != BENCH_PT_COMPUTE || !s->p[0].msgs)
		return -1;
	base = bench_point_gbps(&s->p[0]);
	for (unsigned i = 0; i < s->n; i++) {
		double share = bench_point_share(&s->p[i], qps);

		if (s->p[i].msgs && bench_point_gbps(&s->p[i]) * 100 >= base * (100 - BENCH_KNEE_DROP)
		    && share > best) {
			best = share;
			knee = (int)i;
		}
	}
	return knee;
}

const char *bench_point_kind_name(enum bench_point_kind k)
{
	static const char *const names[] = { "reuse",	"rotate",  "cpu",
					     "compute", "overlap", "progress" };

	return (unsigned)k < NELEM(names) ? names[k] : "invalid";
}

/* ---------------------------------------------------------------- output */

static double usf(uint64_t ns)
{
	return (double)ns / 1000;
}

void bench_sweep_table(FILE *out, const struct bench_sweep_result *s, uint32_t qps)
{
	int knee = bench_sweep_knee(s, qps);

	for (unsigned i = 0; i < s->n; i++) {
		const struct bench_point *p = &s->p[i];
		char what[48];

		switch (p->spec.kind) {
		case BENCH_PT_REUSE:
			snprintf(what, sizeof(what), "reuse %llu%%", (unsigned long long)p->spec.x);
			break;
		case BENCH_PT_ROTATE:
			snprintf(what, sizeof(what), "%llu buffers in turn",
				 (unsigned long long)p->spec.x);
			break;
		case BENCH_PT_CPU:
			snprintf(what, sizeof(what), "CPU per message");
			break;
		case BENCH_PT_PROGRESS:
			snprintf(what, sizeof(what), "response delay %.1f ms",
				 (double)p->spec.x / 1e6);
			break;
		default:
			snprintf(what, sizeof(what), "%s %.1f us",
				 p->spec.kind == BENCH_PT_OVERLAP ? "post, compute" : "compute, post",
				 usf(p->spec.x));
		}
		fprintf(out, "  %-20s %9llu msgs %9.4f Gbit/s  p50 %.1f  p99 %.1f us", what,
			(unsigned long long)p->msgs, bench_point_gbps(p), usf(p->lat.p50),
			usf(p->lat.p99));
		if (p->spec.kind == BENCH_PT_PROGRESS)
			fprintf(out, "  mean %.1f us", usf(p->lat.mean));
		if (p->spec.kind == BENCH_PT_CPU)
			fprintf(out, "  post %llu / poll %llu ns CPU (p50; clock %llu)",
				(unsigned long long)p->post_cpu.p50,
				(unsigned long long)p->poll_cpu.p50,
				(unsigned long long)s->cpu_clock.p50);
		if (p->spec.kind == BENCH_PT_COMPUTE)
			fprintf(out, "  computing %.1f%%", 100 * bench_point_share(p, qps));
		if (p->spec.kind == BENCH_PT_OVERLAP)
			fprintf(out, "  overlap %.2f", bench_point_overlap(p, &s->p[0]));
		fprintf(out, "%s\n", (int)i == knee && s->n > 1 ? "  <- knee" : "");
	}
}

static json_t *summary(const struct bench_summary *s)
{
	return json_pack("{sI sI sI sI sI sI sI}", "samples", (json_int_t)s->count, "min",
			 (json_int_t)s->min, "mean", (json_int_t)s->mean, "p50", (json_int_t)s->p50,
			 "p99", (json_int_t)s->p99, "p999", (json_int_t)s->p999, "max",
			 (json_int_t)s->max);
}

static json_t *point_json(const struct bench_sweep_result *s, unsigned i, uint32_t qps)
{
	const struct bench_point *p = &s->p[i];
	json_t *o = json_pack("{ss sI sI sI sI sf so}", "kind", bench_point_kind_name(p->spec.kind),
			      "x", (json_int_t)p->spec.x, "msgs", (json_int_t)p->msgs, "bytes",
			      (json_int_t)p->bytes, "elapsed_ns", (json_int_t)p->elapsed_ns, "gbps",
			      bench_point_gbps(p), "latency_ns", summary(&p->lat));
	int bad = !o;

	if (o && (p->spec.kind == BENCH_PT_REUSE || p->spec.kind == BENCH_PT_ROTATE))
		bad |= json_object_set_new(o, "reused_msgs", json_integer((json_int_t)p->reused));
	if (o && p->spec.kind == BENCH_PT_CPU)
		bad |= json_object_set_new(o, "post_cpu_ns", summary(&p->post_cpu)) ||
		       json_object_set_new(o, "poll_cpu_ns", summary(&p->poll_cpu)) ||
		       json_object_set_new(o, "cpu_per_msg_ns",
					   json_integer((json_int_t)(p->post_cpu.mean +
								     p->poll_cpu.mean)));
	if (o && (p->spec.kind == BENCH_PT_COMPUTE || p->spec.kind == BENCH_PT_OVERLAP))
		bad |= json_object_set_new(o, "compute_ns", json_integer((json_int_t)p->compute_ns)) ||
		       json_object_set_new(o, "compute_share", json_real(bench_point_share(p, qps)));
	if (o && p->spec.kind == BENCH_PT_PROGRESS)
		bad |= json_object_set_new(o, "response_delay_ns", json_integer((json_int_t)p->spec.x));
	if (o && p->spec.kind == BENCH_PT_COMPUTE)
		bad |= json_object_set_new(o, "relative_gbps",
					   json_real(bench_point_gbps(&s->p[0]) > 0
							     ? bench_point_gbps(p) /
								       bench_point_gbps(&s->p[0])
							     : 0));
	if (o && p->spec.kind == BENCH_PT_OVERLAP) {
		double ov = bench_point_overlap(p, &s->p[0]);

		bad |= json_object_set_new(o, "comm_ns", json_integer((json_int_t)s->p[0].lat.mean)) ||
		       json_object_set_new(o, "overlap", ov < 0 ? json_null() : json_real(ov));
	}
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int bench_sweep_json(json_t *o, const struct bench_sweep_result *s, uint32_t qps)
{
	json_t *points = json_array(), *sw, *knee = json_null();
	int k = bench_sweep_knee(s, qps);

	if (!points)
		return -1;
	for (unsigned i = 0; i < s->n; i++) {
		if (json_array_append_new(points, point_json(s, i, qps))) {
			json_decref(points);
			return -1;
		}
	}
	if (k >= 0)
		knee = json_pack("{sI sf sf}", "compute_ns", (json_int_t)s->p[k].spec.x,
				 "compute_share", bench_point_share(&s->p[k], qps), "gbps",
				 bench_point_gbps(&s->p[k]));
	sw = json_pack("{so so so}", "points", points, "knee", knee, "cpu_clock_ns",
		       summary(&s->cpu_clock));
	return sw ? json_object_set_new(o, "sweep", sw) : -1;
}

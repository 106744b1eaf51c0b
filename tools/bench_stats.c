// SPDX-License-Identifier: MIT
/* justbench statistics: sample storage and exact nearest-rank percentiles.
 * May call: libc only. */
#include "bench_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void bench_samples_init(struct bench_samples *s)
{
	memset(s, 0, sizeof(*s));
	s->min = UINT64_MAX;
}

void bench_samples_free(struct bench_samples *s)
{
	free(s->v);
	bench_samples_init(s);
}

int bench_samples_reserve(struct bench_samples *s, size_t n)
{
	size_t cap = s->cap ? s->cap : 1024;
	uint32_t *v;

	if (n > SIZE_MAX / sizeof(*v) - s->n)
		return -ENOMEM;
	if (s->n + n <= s->cap)
		return 0;
	while (cap < s->n + n)
		cap = cap > SIZE_MAX / sizeof(*v) / 2 ? s->n + n : 2 * cap;
	v = realloc(s->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->v = v;
	s->cap = cap;
	return 0;
}

int bench_samples_add(struct bench_samples *s, uint64_t ns)
{
	if (s->n == s->cap && bench_samples_reserve(s, 1))
		return -ENOMEM;
	s->v[s->n++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
	s->sum += ns;
	if (ns < s->min)
		s->min = ns;
	if (ns > s->max)
		s->max = ns;
	return 0;
}

int bench_samples_merge(struct bench_samples *dst, const struct bench_samples *src)
{
	if (!src->n)
		return 0;
	if (bench_samples_reserve(dst, src->n))
		return -ENOMEM;
	memcpy(dst->v + dst->n, src->v, src->n * sizeof(*src->v));
	dst->n += src->n;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

uint32_t bench_percentile(const uint32_t *sorted, size_t n, uint32_t per100k)
{
	/* rank = ceil(n * p / 100000) without overflow for any n */
	uint64_t q = n / 100000, r = n % 100000;
	uint64_t rank = q * per100k + (r * per100k + 99999) / 100000;

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

void bench_samples_summarize(struct bench_samples *s, struct bench_summary *out)
{
	memset(out, 0, sizeof(*out));
	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(*s->v), cmp_u32);
	out->count = s->n;
	out->min = s->min;
	out->max = s->max;
	out->mean = s->sum / s->n;
	out->p50 = bench_percentile(s->v, s->n, BENCH_P50);
	out->p99 = bench_percentile(s->v, s->n, BENCH_P99);
	out->p999 = bench_percentile(s->v, s->n, BENCH_P999);
}

/* SPDX-License-Identifier: MIT */
/*
 * justbench statistics: every latency sample is kept (nanoseconds, 4 bytes each) and the
 * percentiles are exact, read from the sorted samples at the end of the run.
 *
 * Percentile p of n samples is the nearest-rank value: the sample of rank ceil(p * n / 100)
 * (1-based) in ascending order, rank 1 at least.  So p50 of {1, 2} is 1, p99 of 100 samples is
 * the 99th smallest, p99.9 of fewer than 1000 samples is the maximum.  A sample longer than
 * 4.29 s (UINT32_MAX ns) is stored as 4.29 s; min, max and mean are exact regardless.
 */
#ifndef JUSTITIA_BENCH_STATS_H
#define JUSTITIA_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct bench_samples {
	uint32_t *v; /* ns, saturated */
	size_t n, cap;
	uint64_t min, max, sum; /* ns, exact */
};

struct bench_summary {
	uint64_t count;
	uint64_t min, mean, p50, p99, p999, max; /* ns */
};

/* Percentiles in parts per 100000, so that 99.9 is exact. */
#define BENCH_P50  50000u
#define BENCH_P99  99000u
#define BENCH_P999 99900u

void bench_samples_init(struct bench_samples *s);
void bench_samples_free(struct bench_samples *s);
/* Room for n more samples without allocating; 0 or -ENOMEM. */
int bench_samples_reserve(struct bench_samples *s, size_t n);
/* 0 or -ENOMEM (s unchanged). */
int bench_samples_add(struct bench_samples *s, uint64_t ns);
/* Appends every sample of src; 0 or -ENOMEM (dst unchanged). */
int bench_samples_merge(struct bench_samples *dst, const struct bench_samples *src);
/* Sorts s in place and fills out; all zeros for no samples. */
void bench_samples_summarize(struct bench_samples *s, struct bench_summary *out);
/* The nearest-rank percentile (per100k: BENCH_P99, ...) of n > 0 ascending samples. */
uint32_t bench_percentile(const uint32_t *sorted, size_t n, uint32_t per100k);

static inline uint64_t bench_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t bench_now_ns(void)
{
	return bench_clock_ns(CLOCK_MONOTONIC);
}

#endif

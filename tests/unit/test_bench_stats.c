// SPDX-License-Identifier: MIT
/*
 * Unit tests of tools/bench_stats.c: the exact nearest-rank percentiles against a sorted
 * reference, the edge cases (one sample, equal samples, two samples, saturation), merging.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../tools/bench_stats.c"

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The definition, computed the slow way: the smallest rank r with r / n >= p. */
static uint32_t reference(const uint32_t *sorted, size_t n, uint32_t per100k)
{
	size_t r = 1;

	while ((uint64_t)r * 100000 < (uint64_t)n * per100k)
		r++;
	return sorted[r - 1];
}

static int cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static void against_sorted_reference(void **state)
{
	static const size_t sizes[] = { 1, 2, 3, 7, 10, 99, 100, 101, 999, 1000, 1001, 4999, 100000,
					100001, 250003 };

	(void)state;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		uint32_t *ref = malloc(n * sizeof(*ref));
		struct bench_samples s;
		struct bench_summary sum;
		uint64_t total = 0, mn = UINT64_MAX, mx = 0;

		assert_non_null(ref);
		bench_samples_init(&s);
		for (size_t i = 0; i < n; i++) {
			/* heavy tail: mostly microseconds, some milliseconds */
			uint64_t v = rnd() % 64 ? 1000 + rnd() % 50000 : rnd() % 20000000;

			ref[i] = (uint32_t)v;
			total += v;
			mn = v < mn ? v : mn;
			mx = v > mx ? v : mx;
			assert_int_equal(bench_samples_add(&s, v), 0);
		}
		qsort(ref, n, sizeof(*ref), cmp);
		bench_samples_summarize(&s, &sum);
		assert_int_equal(sum.count, n);
		assert_int_equal(sum.min, mn);
		assert_int_equal(sum.max, mx);
		assert_int_equal(sum.mean, total / n);
		assert_int_equal(sum.p50, reference(ref, n, BENCH_P50));
		assert_int_equal(sum.p99, reference(ref, n, BENCH_P99));
		assert_int_equal(sum.p999, reference(ref, n, BENCH_P999));
		assert_memory_equal(s.v, ref, n * sizeof(*ref)); /* sorted in place */
		for (uint32_t p = 0; p <= 100000; p += 2500)
			assert_int_equal(bench_percentile(ref, n, p), reference(ref, n, p));
		bench_samples_free(&s);
		free(ref);
	}
}

static void one_sample(void **state)
{
	struct bench_samples s;
	struct bench_summary sum;

	(void)state;
	bench_samples_init(&s);
	assert_int_equal(bench_samples_add(&s, 12345), 0);
	bench_samples_summarize(&s, &sum);
	assert_int_equal(sum.count, 1);
	assert_int_equal(sum.min, 12345);
	assert_int_equal(sum.mean, 12345);
	assert_int_equal(sum.p50, 12345);
	assert_int_equal(sum.p99, 12345);
	assert_int_equal(sum.p999, 12345);
	assert_int_equal(sum.max, 12345);
	bench_samples_free(&s);
}

static void equal_samples(void **state)
{
	struct bench_samples s;
	struct bench_summary sum;

	(void)state;
	bench_samples_init(&s);
	for (int i = 0; i < 5000; i++)
		assert_int_equal(bench_samples_add(&s, 777), 0);
	bench_samples_summarize(&s, &sum);
	assert_int_equal(sum.count, 5000);
	assert_int_equal(sum.min, 777);
	assert_int_equal(sum.mean, 777);
	assert_int_equal(sum.p50, 777);
	assert_int_equal(sum.p99, 777);
	assert_int_equal(sum.p999, 777);
	assert_int_equal(sum.max, 777);
	bench_samples_free(&s);
}

static void known_ranks(void **state)
{
	struct bench_samples s;
	struct bench_summary sum;
	uint32_t two[] = { 1, 2 };

	(void)state;
	/* nearest rank: p50 of {1, 2} is the first, p99 the second */
	assert_int_equal(bench_percentile(two, 2, BENCH_P50), 1);
	assert_int_equal(bench_percentile(two, 2, BENCH_P99), 2);
	assert_int_equal(bench_percentile(two, 2, 0), 1);
	assert_int_equal(bench_percentile(two, 2, 100000), 2);
	/* 1..1000 in a shuffled order */
	bench_samples_init(&s);
	for (uint64_t i = 0; i < 1000; i++)
		assert_int_equal(bench_samples_add(&s, (i * 367) % 1000 + 1), 0);
	bench_samples_summarize(&s, &sum);
	assert_int_equal(sum.min, 1);
	assert_int_equal(sum.p50, 500);
	assert_int_equal(sum.p99, 990);
	assert_int_equal(sum.p999, 999);
	assert_int_equal(sum.max, 1000);
	assert_int_equal(sum.mean, 500); /* 500.5 rounded down */
	bench_samples_free(&s);
}

static void saturation_and_empty(void **state)
{
	struct bench_samples s;
	struct bench_summary sum;

	(void)state;
	bench_samples_init(&s);
	bench_samples_summarize(&s, &sum);
	assert_int_equal(sum.count, 0);
	assert_int_equal(sum.min, 0);
	assert_int_equal(sum.max, 0);
	assert_int_equal(bench_samples_add(&s, 5000000000ull), 0);
	assert_int_equal(bench_samples_add(&s, 10), 0);
	bench_samples_summarize(&s, &sum);
	assert_int_equal(sum.max, 5000000000ull); /* exact */
	assert_int_equal(sum.p99, UINT32_MAX);	  /* stored saturated */
	assert_int_equal(sum.p50, 10);
	assert_int_equal(sum.mean, 2500000005ull);
	bench_samples_free(&s);
	assert_null(s.v);
	assert_int_equal(s.n, 0);
}

static void merging(void **state)
{
	struct bench_samples a, b, all;
	struct bench_summary sa, sall;

	(void)state;
	bench_samples_init(&a);
	bench_samples_init(&b);
	bench_samples_init(&all);
	for (int i = 0; i < 3000; i++) {
		uint64_t v = rnd() % 100000;

		assert_int_equal(bench_samples_add(i % 3 ? &a : &b, v), 0);
		assert_int_equal(bench_samples_add(&all, v), 0);
	}
	assert_int_equal(bench_samples_merge(&a, &b), 0);
	bench_samples_free(&b);
	assert_int_equal(bench_samples_merge(&a, &b), 0); /* empty: nothing */
	bench_samples_summarize(&a, &sa);
	bench_samples_summarize(&all, &sall);
	assert_memory_equal(&sa, &sall, sizeof(sa));
	assert_memory_equal(a.v, all.v, all.n * sizeof(*all.v));
	/* reserve never shrinks, and room means no allocation */
	assert_int_equal(bench_samples_reserve(&b, 10), 0);
	assert_true(b.cap >= 10);
	assert_int_equal(bench_samples_reserve(&b, SIZE_MAX), -ENOMEM);
	bench_samples_free(&a);
	bench_samples_free(&b);
	bench_samples_free(&all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(against_sorted_reference),
		cmocka_unit_test(one_sample),
		cmocka_unit_test(equal_samples),
		cmocka_unit_test(known_ranks),
		cmocka_unit_test(saturation_and_empty),
		cmocka_unit_test(merging),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

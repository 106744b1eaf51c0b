// SPDX-License-Identifier: MIT
/* Unit tests of daemon/quantile.c: every rank of the window against a sorted
 * copy of the last N samples, on random, sorted, reverse, all-equal and
 * adversarial series, across many wrap-arounds of the ring; the AVL and size
 * invariants after every step; resize; the nearest-rank definition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../daemon/quantile.c"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Checks subtree t: order, sizes, heights, balance; returns its size. */
static uint32_t check_tree(const struct quantile *q, uint32_t t, int *h)
{
	int hl = 0, hr = 0;
	uint32_t sl, sr;

	if (t == NIL) {
		*h = 0;
		return 0;
	}
	sl = check_tree(q, q->node[t].l, &hl);
	sr = check_tree(q, q->node[t].r, &hr);
	if (q->node[t].l != NIL)
		assert_true(less(q, q->node[t].l, t));
	if (q->node[t].r != NIL)
		assert_true(less(q, t, q->node[t].r));
	assert_true(hl - hr <= 1 && hr - hl <= 1);
	*h = (hl > hr ? hl : hr) + 1;
	assert_int_equal(q->node[t].h, *h);
	assert_int_equal(q->node[t].size, sl + sr + 1);
	return sl + sr + 1;
}

static void check_invariants(const struct quantile *q)
{
	int h;

	assert_int_equal(check_tree(q, q->root, &h), q->n);
	/* AVL height bound: h < 1.4405 log2(n + 2) */
	if (q->n)
		assert_true(h <= 1 + (int)(1.4405 * (32 - __builtin_clz(q->n + 2))));
}

/* Feed @len values from gen() into a window of @cap; after every add (or
 * every @every adds) compare every rank with a sorted copy of the last
 * min(i, cap) values. */
static void run_series(uint32_t cap, size_t len, uint64_t (*gen)(size_t i), size_t every)
{
	uint64_t *hist = calloc(len, sizeof(*hist)), *sorted = calloc(cap, sizeof(*sorted));
	struct quantile q;

	assert_non_null(hist);
	assert_non_null(sorted);
	assert_int_equal(quantile_init(&q, cap), 0);
	for (size_t i = 0; i < len; i++) {
		size_t n, from;

		hist[i] = gen(i);
		quantile_add(&q, hist[i]);
		n = i + 1 < cap ? i + 1 : cap;
		assert_int_equal(quantile_count(&q), n);
		if (i % every && i + 1 != len)
			continue;
		check_invariants(&q);
		from = i + 1 - n;
		memcpy(sorted, hist + from, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), cmp_u64);
		for (uint32_t k = 1; k <= n; k++)
			assert_true(quantile_rank(&q, k) == sorted[k - 1]);
		/* nearest rank: ceil(n p) */
		assert_true(quantile_ppm(&q, 990000) == sorted[(n * 99 + 99) / 100 - 1]);
		assert_true(quantile_ppm(&q, 500000) == sorted[(n + 1) / 2 - 1]);
		assert_true(quantile_ppm(&q, 999000) == sorted[(n * 999 + 999) / 1000 - 1]);
		assert_true(quantile_ppm(&q, 1000000) == sorted[n - 1]);
		assert_true(quantile_ppm(&q, 0) == sorted[0]);
	}
	assert_int_equal(q.total, len);
	quantile_fini(&q);
	free(hist);
	free(sorted);
}

static uint64_t gen_random(size_t i)
{
	return xorshift() % 1000000;
}

static uint64_t gen_random_full(size_t i)
{
	return xorshift();
}

static uint64_t gen_sorted(size_t i)
{
	return i;
}

static uint64_t gen_reverse(size_t i)
{
	return 1000000 - i;
}

static uint64_t gen_equal(size_t i)
{
	return 42;
}

/* alternating extremes: the worst case for a naive tree and a sort */
static uint64_t gen_zigzag(size_t i)
{
	return i & 1 ? UINT64_MAX - i : i;
}

/* few distinct values, long runs: many equal keys entering and leaving */
static uint64_t gen_runs(size_t i)
{
	return (i / 37) % 3;
}

/* a latency-like series: mostly small, rare huge spikes */
static uint64_t gen_spiky(size_t i)
{
	uint64_t r = xorshift();

	return r % 100 == 0 ? 1000000 + r % 10000000 : 10000 + r % 5000;
}

/* sawtooth whose period is close to the window: inserts at both ends */
static uint64_t gen_saw(size_t i)
{
	return (i * 7919) % 127;
}

static void series_small_window(void **state)
{
	uint64_t (*gens[])(size_t) = { gen_random, gen_random_full, gen_sorted, gen_reverse,
					gen_equal,  gen_zigzag,      gen_runs,   gen_spiky,
					gen_saw };

	for (size_t g = 0; g < sizeof(gens) / sizeof(gens[0]); g++) {
		run_series(1, 50, gens[g], 1);
		run_series(2, 50, gens[g], 1);
		run_series(7, 200, gens[g], 1);
		run_series(128, 3000, gens[g], 1); /* 23 wrap-arounds, checked every add */
	}
}

static void series_default_window(void **state)
{
	uint64_t (*gens[])(size_t) = { gen_random, gen_sorted, gen_reverse, gen_equal,
					gen_zigzag, gen_spiky };

	/* RefCount = 10000, three wrap-arounds, full check every 4999 adds */
	for (size_t g = 0; g < sizeof(gens) / sizeof(gens[0]); g++)
		run_series(10000, 32000, gens[g], 4999);
}

static void empty_and_bounds(void **state)
{
	struct quantile q;

	assert_int_equal(quantile_init(&q, 0), -EINVAL);
	assert_int_equal(quantile_init(&q, QUANTILE_MAX_CAP + 1), -EINVAL);
	assert_int_equal(quantile_init(&q, 10), 0);
	assert_int_equal(quantile_ppm(&q, 990000), 0);
	assert_int_equal(quantile_rank(&q, 1), 0);
	quantile_add(&q, 5);
	assert_int_equal(quantile_rank(&q, 0), 0);
	assert_int_equal(quantile_rank(&q, 2), 0);
	assert_int_equal(quantile_rank(&q, 1), 5);
	assert_int_equal(quantile_ppm(&q, 2000000), 5); /* clamped to the max */
	quantile_reset(&q);
	assert_int_equal(quantile_count(&q), 0);
	assert_int_equal(quantile_ppm(&q, 500000), 0);
	quantile_add(&q, 7);
	assert_int_equal(quantile_ppm(&q, 500000), 7);
	quantile_fini(&q);
	quantile_fini(&q); /* twice is fine */
}

/* p99 of 100 samples 1..100 is the 99th, of 1000 samples the 990th:
 * nearest rank, no interpolation. */
static void nearest_rank(void **state)
{
	struct quantile q;

	assert_int_equal(quantile_init(&q, 1000), 0);
	for (uint64_t v = 100; v >= 1; v--)
		quantile_add(&q, v);
	assert_int_equal(quantile_ppm(&q, 990000), 99);
	assert_int_equal(quantile_ppm(&q, 999000), 100);
	assert_int_equal(quantile_ppm(&q, 500000), 50);
	assert_int_equal(quantile_ppm(&q, 10000), 1);
	for (uint64_t v = 101; v <= 1000; v++)
		quantile_add(&q, v);
	assert_int_equal(quantile_ppm(&q, 990000), 990);
	assert_int_equal(quantile_ppm(&q, 999000), 999);
	assert_int_equal(quantile_ppm(&q, 500000), 500);
	/* one more: the oldest (100) leaves, 1..99 and 101..1001 remain */
	quantile_add(&q, 1001);
	assert_int_equal(quantile_rank(&q, 1), 1);
	assert_int_equal(quantile_rank(&q, 100), 101);
	assert_int_equal(quantile_ppm(&q, 990000), 991);
	quantile_fini(&q);
}

/* A step change of the latency leaves the window after exactly cap adds. */
static void window_forgets(void **state)
{
	struct quantile q;

	assert_int_equal(quantile_init(&q, 500), 0);
	for (int i = 0; i < 500; i++)
		quantile_add(&q, 1000000);
	assert_int_equal(quantile_ppm(&q, 990000), 1000000);
	for (int i = 0; i < 494; i++)
		quantile_add(&q, 20000);
	/* 6 of 500 old samples left: p99 (rank 495) is still high */
	assert_int_equal(quantile_ppm(&q, 990000), 1000000);
	quantile_add(&q, 20000);
	assert_int_equal(quantile_ppm(&q, 990000), 20000);
	quantile_fini(&q);
}

static void resize_keeps_newest(void **state)
{
	struct quantile q;

	assert_int_equal(quantile_init(&q, 100), 0);
	for (uint64_t v = 1; v <= 250; v++)
		quantile_add(&q, v); /* window: 151..250, wrapped */
	assert_int_equal(quantile_resize(&q, 10), 0);
	check_invariants(&q);
	assert_int_equal(quantile_count(&q), 10);
	assert_int_equal(quantile_rank(&q, 1), 241);
	assert_int_equal(quantile_rank(&q, 10), 250);
	assert_int_equal(q.total, 250);
	quantile_add(&q, 1);
	assert_int_equal(quantile_rank(&q, 1), 1);
	assert_int_equal(quantile_rank(&q, 2), 242);
	assert_int_equal(quantile_resize(&q, 1000), 0);
	check_invariants(&q);
	assert_int_equal(quantile_count(&q), 10);
	for (uint64_t v = 0; v < 2000; v++)
		quantile_add(&q, v);
	check_invariants(&q);
	assert_int_equal(quantile_count(&q), 1000);
	assert_int_equal(quantile_rank(&q, 1), 1000);
	assert_int_equal(quantile_resize(&q, 0), -EINVAL);
	assert_int_equal(quantile_count(&q), 1000); /* unchanged on error */
	quantile_fini(&q);
}

/* The tree stays balanced over a long sorted series (a plain BST would
 * degenerate into a list here). */
static void height_stays_logarithmic(void **state)
{
	struct quantile q;
	int h;

	assert_int_equal(quantile_init(&q, 1u << 16), 0);
	for (uint64_t v = 0; v < 3u << 16; v++)
		quantile_add(&q, v);
	check_tree(&q, q.root, &h);
	assert_true(h <= 24); /* 1.44 log2(65538) = 23.04 */
	quantile_fini(&q);
}

/* Samples leave by age, oldest first, whatever their values; the tree
 * stays consistent; a resize keeps their times. */
static void expire_by_age(void **state)
{
	struct quantile q;
	int h;

	assert_int_equal(quantile_init(&q, 1000), 0);
	/* a violation (100 samples of 10 ms) then 900 on target, 1 per ms */
	for (uint64_t t = 1; t <= 1000; t++)
		quantile_add_at(&q, t <= 100 ? 10000000 : 50000 + t, t * 1000000);
	assert_int_equal(quantile_ppm(&q, 990000), 10000000);
	assert_int_equal(quantile_expire(&q, 1000000), 0); /* t=1 ms is not before 1 ms */
	assert_int_equal(quantile_expire(&q, 100000001), 100);
	assert_int_equal(quantile_count(&q), 900);
	assert_int_equal(check_tree(&q, q.root, &h), 900);
	assert_int_equal(quantile_ppm(&q, 990000), 50000 + 100 + 891); /* rank 891 of 900 */
	assert_int_equal(quantile_rank(&q, 1), 50101);
	/* new samples go where the old left */
	for (uint64_t t = 1001; t <= 1100; t++)
		quantile_add_at(&q, 7, t * 1000000);
	assert_int_equal(quantile_count(&q), 1000);
	assert_int_equal(quantile_rank(&q, 100), 7);
	assert_int_equal(quantile_resize(&q, 500), 0);
	assert_int_equal(quantile_expire(&q, 1050000001), 450);
	assert_int_equal(quantile_count(&q), 50);
	assert_int_equal(quantile_rank(&q, 50), 7);
	assert_int_equal(quantile_expire(&q, UINT64_MAX), 50);
	assert_int_equal(quantile_count(&q), 0);
	assert_int_equal(q.root, NIL);
	quantile_add_at(&q, 3, 1);
	assert_int_equal(quantile_ppm(&q, 990000), 3);
	quantile_fini(&q);
}

/* The largest of the newest k, across the ring's wrap. */
static void max_of_newest(void **state)
{
	struct quantile q;

	assert_int_equal(quantile_init(&q, 8), 0);
	assert_int_equal(quantile_max_newest(&q, 3), 0);
	for (uint64_t v = 1; v <= 11; v++) /* the ring wraps: 4..11 stay */
		quantile_add(&q, v == 9 ? 100 : v);
	assert_int_equal(quantile_max_newest(&q, 0), 0);
	assert_int_equal(quantile_max_newest(&q, 2), 11);
	assert_int_equal(quantile_max_newest(&q, 3), 100);
	assert_int_equal(quantile_max_newest(&q, 50), 100);
	quantile_fini(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(series_small_window),
		cmocka_unit_test(series_default_window),
		cmocka_unit_test(empty_and_bounds),
		cmocka_unit_test(nearest_rank),
		cmocka_unit_test(window_forgets),
		cmocka_unit_test(resize_keeps_newest),
		cmocka_unit_test(height_stays_logarithmic),
		cmocka_unit_test(expire_by_age),
		cmocka_unit_test(max_of_newest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

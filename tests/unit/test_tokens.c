// SPDX-License-Identifier: MIT
/* Unit tests of daemon/tokens.c and common/bucket.h: weighted fairness of the
 * distribution (Jain's index over 1024 flows, on the granted rates and on
 * what 1024 simulated shim buckets actually let through), one_flow_per_app,
 * inactive and latency flows, the Appendix D hints, tau and cost arithmetic
 * from 1 Mbit/s to 400 Gbit/s without overflow, bucket conformance over
 * simulated time, and concurrent takers that never over-consume. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <time.h>

#include "../../daemon/tokens.c"

#define G 1000000000ull
#define M 1000000ull
#define MiB 1048576ull

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Jain's fairness index of x[0..n-1]. */
static double jain(const double *x, size_t n)
{
	double s = 0, s2 = 0;

	for (size_t i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return s2 > 0 ? s * s / ((double)n * s2) : 0;
}

static struct tokens_params params(uint64_t safe)
{
	return (struct tokens_params){ .safe_util_bps = safe, .token_bytes = MiB,
				       .token_ops = 5000, .chunk_bytes = 5120,
				       .alpha_permille = 500 };
}

/* Tokens/s flow i gets, from its rate or its op rate. */
static double tokens_per_s(const struct tokens_flow *f, const struct tokens_params *p)
{
	if (f->cls == FLOW_CLASS_BANDWIDTH)
		return (double)f->rate_bps / (8.0 * (double)p->token_bytes);
	return (double)f->ops_per_s / (double)p->token_ops;
}

static void weighted_fairness_1024(void **state)
{
	static struct tokens_flow f[1024];
	static double x[1024];
	struct tokens_params p = params(100 * G);
	uint64_t sum_bps = 0;

	for (size_t i = 0; i < 1024; i++)
		f[i] = (struct tokens_flow){ .weight = (uint32_t)(1 + xorshift() % 1000),
					     .app = (uint32_t)i, .active = true,
					     .cls = i % 3 ? FLOW_CLASS_BANDWIDTH
							  : FLOW_CLASS_THROUGHPUT };
	tokens_distribute(f, 1024, &p);
	for (size_t i = 0; i < 1024; i++) {
		x[i] = tokens_per_s(&f[i], &p) / f[i].weight;
		if (f[i].cls == FLOW_CLASS_BANDWIDTH) {
			sum_bps += f[i].rate_bps;
			assert_true(f[i].rate_bps > 0);
			assert_int_equal(f[i].ops_per_s, 0);
		} else {
			sum_bps += (uint64_t)((double)f[i].ops_per_s * 8.0 * MiB / 5000);
			assert_int_equal(f[i].rate_bps, 0);
		}
	}
	print_message("Jain index of tokens/weight over 1024 flows: %.6f\n", jain(x, 1024));
	assert_true(jain(x, 1024) >= 0.99);
	/* the shares add up to SafeUtil, rounded down */
	assert_true(sum_bps <= 100 * G + 1024);
	assert_true(sum_bps >= 100 * G - 100 * G / 1000);

	/* equal weights: exactly equal rates */
	for (size_t i = 0; i < 1024; i++)
		f[i] = (struct tokens_flow){ .weight = 3, .app = (uint32_t)i, .active = true,
					     .cls = FLOW_CLASS_BANDWIDTH };
	tokens_distribute(f, 1024, &p);
	for (size_t i = 0; i < 1024; i++)
		assert_int_equal(f[i].rate_bps, 100 * G / 1024);
}

/* What the shim would let through: 1024 greedy flows, each posting 64 KiB
 * chunks through its own bucket at the granted rate, over one simulated
 * second.  Delivered bytes per weight must be fair, and the total must
 * not exceed SafeUtil plus the bursts. */
static void buckets_deliver_fair_shares(void **state)
{
	enum { NF = 1024 };
	static struct tokens_flow f[NF];
	static _Atomic uint64_t vt[NF];
	static uint64_t next[NF], bytes[NF];
	static double x[NF];
	struct tokens_params p = params(400 * G);
	const uint64_t chunk = 65536, burst = 200000, end = 1 * G;
	uint64_t total = 0;

	for (size_t i = 0; i < NF; i++) {
		f[i] = (struct tokens_flow){ .weight = (uint32_t)(1 + xorshift() % 8),
					     .app = (uint32_t)i, .active = true,
					     .cls = FLOW_CLASS_BANDWIDTH };
		atomic_init(&vt[i], 0);
		next[i] = 0;
		bytes[i] = 0;
	}
	tokens_distribute(f, NF, &p);
	/* the buckets are independent: run each greedy flow on its own */
	for (size_t k = 0; k < NF; k++) {
		uint64_t cost = bucket_cost_ns(chunk, f[k].rate_bps), wait;

		while (next[k] < end) {
			wait = bucket_take(&vt[k], next[k], cost, burst);
			if (wait) {
				next[k] += wait;
			} else {
				bytes[k] += chunk;
				total += chunk;
			}
		}
	}
	for (size_t i = 0; i < NF; i++)
		x[i] = (double)bytes[i] / f[i].weight;
	print_message("Jain index of delivered bytes/weight (1024 buckets, 1 s): %.6f\n",
		      jain(x, NF));
	assert_true(jain(x, NF) >= 0.99);
	/* at most 1 s at SafeUtil plus each bucket's initial credit and one chunk */
	assert_true((double)total * 8 <= 400.0 * G + NF * (400.0 * G / NF * burst / G + 8 * chunk));
	assert_true((double)total * 8 >= 0.95 * 400 * G);
}

static void one_flow_per_app(void **state)
{
	/* app 1: four QPs; app 2: one QP; app 3: weight 2, two QPs of weights 2
	 * and 1; app 4: a latency app */
	struct tokens_flow f[] = {
		{ .weight = 1, .app = 1, .cls = FLOW_CLASS_BANDWIDTH, .active = true },
		{ .weight = 1, .app = 1, .cls = FLOW_CLASS_BANDWIDTH, .active = true },
		{ .weight = 1, .app = 1, .cls = FLOW_CLASS_BANDWIDTH, .active = true },
		{ .weight = 1, .app = 1, .cls = FLOW_CLASS_BANDWIDTH, .active = true },
		{ .weight = 1, .app = 2, .cls = FLOW_CLASS_BANDWIDTH, .active = true },
		{ .weight = 2, .app = 3, .cls = FLOW_CLASS_BANDWIDTH, .active = true },
		{ .weight = 1, .app = 3, .cls = FLOW_CLASS_BANDWIDTH, .active = true },
		{ .weight = 1, .app = 4, .cls = FLOW_CLASS_LATENCY, .active = true },
	};
	struct tokens_params p = params(40 * G);
	uint64_t app1 = 0;

	p.one_per_app = true;
	tokens_distribute(f, 8, &p);
	/* W = 1 + 1 + 2 = 4: app 1 and app 2 get 10 G each, app 3 20 G */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(f[i].rate_bps, 2500000000ull);
		app1 += f[i].rate_bps;
	}
	assert_int_equal(app1, 10 * G);
	assert_int_equal(f[4].rate_bps, 10 * G);
	assert_int_equal(f[5].rate_bps, 40 * G * 2 * 2 / (4 * 3));
	assert_int_equal(f[6].rate_bps, 40 * G * 2 * 1 / (4 * 3));
	assert_int_equal(f[7].rate_bps + f[7].ops_per_s, 0);

	/* an idle QP joining app 2 would split app 2's share; an idle QP of a
	 * new app would get 1/(W + 1) */
	{
		struct tokens_flow g[] = {
			{ .weight = 1, .app = 1, .cls = FLOW_CLASS_BANDWIDTH, .active = true },
			{ .weight = 3, .app = 2, .cls = FLOW_CLASS_BANDWIDTH, .active = true },
			{ .weight = 1, .app = 2, .cls = FLOW_CLASS_BANDWIDTH, .active = false },
			{ .weight = 4, .app = 3, .cls = FLOW_CLASS_BANDWIDTH, .active = false },
		};

		tokens_distribute(g, 4, &p);
		assert_int_equal(g[0].rate_bps, 10 * G);
		assert_int_equal(g[1].rate_bps, 30 * G);
		assert_int_equal(g[2].rate_bps, 40 * G * 3 * 1 / (4 * 4));
		assert_int_equal(g[3].rate_bps, 40 * G * 4 / 8);
	}

	/* without it, every QP is a flow (W = 8): app 1 gets half of 40 G */
	p.one_per_app = false;
	tokens_distribute(f, 8, &p);
	assert_int_equal(f[0].rate_bps, 40 * G / 8);
	assert_int_equal(f[5].rate_bps, 40 * G * 2 / 8);
}

static void inactive_and_latency_flows(void **state)
{
	struct tokens_flow f[] = {
		{ .weight = 1, .app = 1, .cls = FLOW_CLASS_BANDWIDTH, .active = true },
		{ .weight = 3, .app = 2, .cls = FLOW_CLASS_BANDWIDTH, .active = true },
		{ .weight = 4, .app = 3, .cls = FLOW_CLASS_BANDWIDTH, .active = false },
		{ .weight = 4, .app = 4, .cls = FLOW_CLASS_THROUGHPUT, .active = false },
		{ .weight = 9, .app = 5, .cls = FLOW_CLASS_LATENCY, .active = true },
	};
	struct tokens_params p = params(8 * G);

	tokens_distribute(f, 5, &p);
	assert_int_equal(f[0].rate_bps, 2 * G);
	assert_int_equal(f[1].rate_bps, 6 * G);
	/* an idle flow gets what it would get if it started now: 4/(4+4) */
	assert_int_equal(f[2].rate_bps, 4 * G);
	/* throughput: 4 G of the token stream = 4 G / 8 MiB tokens/s x 5000 ops */
	assert_int_equal(f[3].ops_per_s, (uint64_t)(4 * G * 5000 / (8 * MiB)));
	assert_int_equal(f[3].rate_bps, 0);
	assert_int_equal(f[4].rate_bps + f[4].ops_per_s + f[4].wait_ns, 0);
	/* Appendix D: wait = alpha * chunk / rate; 5120 B at 2 Gbit/s = 20480 ns */
	assert_int_equal(f[0].wait_ns, 10240);
	assert_int_equal(f[3].ops_per_s, 2384185);
	assert_int_equal(f[3].wait_ns, 210); /* ceil(1e9 / 2384185) = 420 ns, halved */

	/* no SafeUtil (MaxRate unknown): rates 0 = unpaced */
	p.safe_util_bps = 0;
	tokens_distribute(f, 5, &p);
	for (int i = 0; i < 5; i++)
		assert_int_equal(f[i].rate_bps + f[i].ops_per_s + f[i].wait_ns, 0);

	/* a tiny SafeUtil never rounds a share down to 0 (= unpaced) */
	p.safe_util_bps = 1;
	tokens_distribute(f, 5, &p);
	assert_int_equal(f[0].rate_bps, 1);
	assert_int_equal(f[3].ops_per_s, 1);
}

static void tau_and_cost_arithmetic(void **state)
{
	static const uint64_t rates[] = { 1 * M, 10 * M, 100 * M, 1 * G, 10 * G, 25 * G, 48 * G,
					  56 * G, 100 * G, 200 * G, 400 * G, 1600 * G };
	static const uint64_t sizes[] = { 1, 10, 512, 5120, 65536, MiB, 1024 * MiB, 1ull << 40 };

	for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			long double exact = (long double)sizes[s] * 8e9L / (long double)rates[r];
			uint64_t got = bucket_cost_ns(sizes[s], rates[r]);

			assert_true((long double)got >= exact && (long double)got < exact + 1);
			assert_int_equal(tokens_tau_ns(sizes[s], rates[r]), got);
		}
	}
	/* the paper's example: 1 MiB tokens at 48 Gbit/s */
	assert_int_equal(tokens_tau_ns(MiB, 48 * G), 174763);
	assert_int_equal(tokens_token_ops(0, MiB, 48 * G, 30 * M), 5242);
	assert_int_equal(tokens_token_ops(7, MiB, 48 * G, 30 * M), 7);
	assert_int_equal(tokens_token_ops(0, MiB, 48 * G, 0), MiB / 64);
	assert_int_equal(tokens_token_ops(0, 16, 48 * G, 0), 1);
	assert_int_equal(tokens_token_ops(0, UINT64_MAX, 1, UINT64_MAX), UINT64_MAX);
	/* saturation instead of overflow */
	assert_int_equal(bucket_cost_ns(UINT64_MAX, 1), UINT64_MAX);
	assert_int_equal(bucket_cost_ns(UINT64_MAX, UINT64_MAX), 8 * G);
	assert_int_equal(bucket_cost_ns(123, 0), 0);
	assert_int_equal(tokens_tau_ns(MiB, 0), 0);
	assert_int_equal(bucket_cost_ops_ns(1, 3), 333333334);
	assert_int_equal(bucket_cost_ops_ns(UINT64_MAX, 1), UINT64_MAX);
	assert_int_equal(bucket_cost_ops_ns(5, 0), 0);
	/* the distributor at the extremes: 1.6 Tbit/s, 1 GiB tokens, 1e9 ops */
	{
		struct tokens_flow f[2] = {
			{ .weight = 1000, .app = 1, .cls = FLOW_CLASS_THROUGHPUT, .active = true },
			{ .weight = 1, .app = 2, .cls = FLOW_CLASS_BANDWIDTH, .active = true },
		};
		struct tokens_params p = { .safe_util_bps = 1600 * G, .token_bytes = 1024 * MiB,
					   .token_ops = 1000000000, .chunk_bytes = 1 << 30,
					   .alpha_permille = 1000 };

		tokens_distribute(f, 2, &p);
		assert_int_equal(f[1].rate_bps, 1600 * G / 1001);
		assert_int_equal(f[0].ops_per_s,
				 (uint64_t)((unsigned __int128)1600 * G * 1000000000 * 1000 /
					    ((unsigned __int128)1001 * 8 * 1024 * MiB)));
	}
}

/* A greedy taker at a fixed rate over simulated time: it gets the rate,
 * no more than rate * T + burst, no less than rate * T - one cost. */
static void bucket_conformance(void **state)
{
	static const uint64_t rates[] = { 1 * M, 100 * M, 10 * G, 400 * G };
	static const uint64_t sizes[] = { 10, 5120, MiB };
	static const uint64_t bursts[] = { 0, 200000, 5 * M };

	for (size_t r = 0; r < 4; r++)
		for (size_t s = 0; s < 3; s++)
			for (size_t b = 0; b < 3; b++) {
				uint64_t cost = bucket_cost_ns(sizes[s], rates[r]);
				uint64_t t0 = 5 * G, now = t0, taken = 0, wait;
				uint64_t T = cost * 200000 < 2 * G ? cost * 200000 : 2 * G;
				uint64_t cap = bursts[b] > cost ? bursts[b] : cost;
				_Atomic uint64_t v;

				if (cost > T / 4)
					continue;
				atomic_init(&v, 0);
				while (now < t0 + T) {
					wait = bucket_take(&v, now, cost, bursts[b]);
					if (!wait) {
						taken += cost;
						/* never more than elapsed + credit */
						assert_true(taken <= now - t0 + cap);
					} else {
						assert_true(wait <= cost);
						now += wait;
					}
				}
				assert_true(taken + cost >= T);
				assert_true(atomic_load(&v) <= now);
			}
}

static void bucket_semantics(void **state)
{
	_Atomic uint64_t v;

	/* new bucket: full (burst of credit) */
	atomic_init(&v, 0);
	assert_int_equal(bucket_take(&v, 1000000, 400, 1000), 0);
	assert_int_equal(bucket_take(&v, 1000000, 400, 1000), 0);
	assert_int_equal(bucket_take(&v, 1000000, 400, 1000), 200); /* 200 short */
	assert_int_equal(atomic_load(&v), 1000000 - 1000 + 800);   /* nothing taken */
	assert_int_equal(bucket_take(&v, 1000200, 400, 1000), 0);
	/* a cost above the burst goes once that much credit has built up */
	assert_int_equal(bucket_take(&v, 1000200, 5000, 1000), 5000);
	assert_int_equal(bucket_take(&v, 1005200, 5000, 1000), 0);
	/* no debt: the rate rises (cost falls) and the next take is charged at
	 * the new rate at once */
	assert_int_equal(bucket_take(&v, 1005200, 10, 1000), 10);
	assert_int_equal(bucket_take(&v, 1005210, 10, 1000), 0);
	/* unpaced: always taken, bucket untouched */
	assert_int_equal(bucket_take(&v, 0, 0, 0), 0);
	assert_int_equal(atomic_load(&v), 1005210);
	/* near the clock's start and at its end: no wrap */
	atomic_init(&v, 0);
	assert_int_equal(bucket_take(&v, 10, 100, 1000), 90);
	assert_int_equal(bucket_take(&v, 100, 100, 1000), 0);
	atomic_init(&v, UINT64_MAX - 10);
	assert_true(bucket_take(&v, UINT64_MAX - 10, 100, 0) > 0);
	assert_int_equal(bucket_take(&v, 5, UINT64_MAX, 0), UINT64_MAX - 5);
}

struct taker {
	_Atomic uint64_t *v;
	uint64_t now, cost, burst, rounds;
	int realtime;
	uint64_t taken;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * G + (uint64_t)ts.tv_nsec;
}

static void *taker_main(void *arg)
{
	struct taker *t = arg;

	for (uint64_t i = 0; i < t->rounds; i++)
		if (!bucket_take(t->v, t->realtime ? mono_ns() : t->now, t->cost, t->burst))
			t->taken++;
	return NULL;
}

/* Eight threads hammering one bucket: at a frozen instant exactly the credit
 * is taken, never more; in real time never more than elapsed + credit. */
static void bucket_concurrent_takers(void **state)
{
	enum { NT = 8 };
	struct taker t[NT];
	pthread_t th[NT];
	_Atomic uint64_t v;
	uint64_t sum = 0, t0, t1;

	atomic_init(&v, 0);
	for (int i = 0; i < NT; i++) {
		t[i] = (struct taker){ .v = &v, .now = 5 * G, .cost = 7, .burst = 7000,
				       .rounds = 200000 };
		assert_int_equal(pthread_create(&th[i], NULL, taker_main, &t[i]), 0);
	}
	for (int i = 0; i < NT; i++) {
		pthread_join(th[i], NULL);
		sum += t[i].taken;
	}
	assert_int_equal(sum, 1000);
	assert_int_equal(atomic_load(&v), 5 * G);

	/* real time: 100 ns costs, 20 us burst, for as long as it takes */
	atomic_init(&v, 0);
	sum = 0;
	t0 = mono_ns();
	for (int i = 0; i < NT; i++) {
		t[i] = (struct taker){ .v = &v, .cost = 100, .burst = 20000, .rounds = 300000,
				       .realtime = 1 };
		assert_int_equal(pthread_create(&th[i], NULL, taker_main, &t[i]), 0);
	}
	for (int i = 0; i < NT; i++) {
		pthread_join(th[i], NULL);
		sum += t[i].taken;
	}
	t1 = mono_ns();
	print_message("concurrent real-time takers: %llu taken in %llu ns (bound %llu)\n",
		      (unsigned long long)sum, (unsigned long long)(t1 - t0),
		      (unsigned long long)((t1 - t0 + 20000) / 100));
	assert_true(sum * 100 <= t1 - t0 + 20000);
	assert_true(sum > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(weighted_fairness_1024),
		cmocka_unit_test(buckets_deliver_fair_shares),
		cmocka_unit_test(one_flow_per_app),
		cmocka_unit_test(inactive_and_latency_flows),
		cmocka_unit_test(tau_and_cost_arithmetic),
		cmocka_unit_test(bucket_conformance),
		cmocka_unit_test(bucket_semantics),
		cmocka_unit_test(bucket_concurrent_takers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

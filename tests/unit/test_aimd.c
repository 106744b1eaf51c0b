// SPDX-License-Identifier: MIT
/* Unit tests of daemon/aimd.c on synthetic latency series: halving within one
 * period, the floor, recovery time of the auto step, the unattainable mode
 * (entry after delta, exit only when L/(B+T) grows), missing measurements,
 * counting with one_flow_per_app. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../daemon/aimd.c"

#define G 1000000000ull
#define MS 1000000ull
#define US 1000ull

static struct aimd_config cfg(void)
{
	return (struct aimd_config){
		.max_rate_bps = 10 * G,
		.period_ns = 500 * US,
		.target99_ns = 100 * US,
		.delta_ns = 5000 * MS,
		.stale_ns = 50 * MS,
	};
}

/* A simulated controller: one step per period. */
struct sim {
	struct aimd a;
	struct aimd_config c;
	uint64_t now;
	enum aimd_event ev;
};

static void sim_init(struct sim *s, const struct aimd_config *c)
{
	s->c = *c;
	s->now = 1000 * G;
	aimd_init(&s->a, &s->c, s->now);
}

/* One period with a fresh Current99 (0 = no sample this period). */
static uint64_t sim_step(struct sim *s, uint32_t L, uint32_t B, uint32_t T, uint64_t cur99)
{
	struct aimd_input in = { .now_ns = s->now, .n = { L, B, T }, .fresh = cur99 != 0,
				 .current99_ns = cur99 };

	s->ev = aimd_step(&s->a, &s->c, &in);
	s->now += s->c.period_ns;
	assert_true(s->a.safe_util_bps <= s->c.max_rate_bps);
	if (L)
		assert_true(s->a.safe_util_bps >= aimd_floor(&s->c, &in.n));
	return s->a.safe_util_bps;
}

static void no_latency_flow_is_max_rate(void **state)
{
	struct aimd_config c = cfg();
	struct sim s;

	sim_init(&s, &c);
	assert_int_equal(s.a.safe_util_bps, 10 * G);
	/* even with a terrible measurement: L = 0 means nothing to protect */
	assert_int_equal(sim_step(&s, 0, 5, 5, 50 * MS), 10 * G);
	assert_int_equal(s.a.action, AIMD_MAX);
	/* unknown MaxRate: nothing is paced */
	c.max_rate_bps = 0;
	sim_init(&s, &c);
	assert_int_equal(sim_step(&s, 1, 1, 0, 50 * MS), 0);
	assert_int_equal(aimd_floor(&c, &(struct aimd_counts){ 1, 1, 0 }), 0);
}

static void floor_is_share_of_hungry_flows(void **state)
{
	struct aimd_config c = cfg();

	assert_int_equal(aimd_floor(&c, &(struct aimd_counts){ 1, 1, 0 }), 5 * G);
	assert_int_equal(aimd_floor(&c, &(struct aimd_counts){ 3, 1, 0 }), 2500000000ull);
	assert_int_equal(aimd_floor(&c, &(struct aimd_counts){ 1, 1, 2 }), 7500000000ull);
	assert_int_equal(aimd_floor(&c, &(struct aimd_counts){ 2, 0, 1 }), 3333333333ull);
	/* no hungry flow: the absolute minimum */
	assert_int_equal(aimd_floor(&c, &(struct aimd_counts){ 4, 0, 0 }), AIMD_MIN_BPS);
	/* huge counts do not overflow */
	c.max_rate_bps = 1600 * G;
	assert_int_equal(aimd_floor(&c, &(struct aimd_counts){ UINT32_MAX, UINT32_MAX, 0 }),
			 800 * G);
}

/* Pseudocode 1: a step up of Current99 halves SafeUtil in the very next
 * period, down to the floor and not below. */
static void violation_halves_within_one_period(void **state)
{
	struct aimd_config c = cfg();
	struct sim s;

	sim_init(&s, &c);
	assert_int_equal(sim_step(&s, 3, 1, 0, 50 * US), 10 * G); /* met, at max */
	assert_int_equal(s.a.action, AIMD_INCREASE);
	assert_int_equal(sim_step(&s, 3, 1, 0, 500 * US), 5 * G);
	assert_int_equal(s.a.action, AIMD_DECREASE);
	assert_int_equal(sim_step(&s, 3, 1, 0, 500 * US), 2500000000ull);
	assert_int_equal(sim_step(&s, 3, 1, 0, 500 * US), 2500000000ull); /* floor 1/4 */
	/* Current99 == Target99 is not a violation */
	assert_true(sim_step(&s, 3, 1, 0, 100 * US) > 2500000000ull);
}

/* Random counts, measurements and gaps: SafeUtil stays in [floor, MaxRate]
 * (checked by sim_step after every period). */
static void floor_never_crossed(void **state)
{
	struct aimd_config c = cfg();
	uint64_t r = 88172645463325252ull;
	struct sim s;

	c.delta_ns = 20 * MS;
	for (int pol = 0; pol < 2; pol++) {
		c.ignore_latency = pol;
		sim_init(&s, &c);
		for (int i = 0; i < 200000; i++) {
			uint32_t L, B, T;
			uint64_t cur;

			r ^= r << 13;
			r ^= r >> 7;
			r ^= r << 17;
			L = (uint32_t)(r % 4);
			B = (uint32_t)(r >> 8) % 3;
			T = (uint32_t)(r >> 16) % 2;
			cur = (r >> 24) % 5 == 0 ? 0 : (r >> 32) % (300 * US);
			sim_step(&s, L, B, T, cur);
		}
	}
}

/* The auto step brings SafeUtil from the floor back to MaxRate within
 * 100 ms of periods at the default RefPeriod (the prototype's +1 MB/s per
 * loop needed over 0.6 s for 3 GB/s), and within ceil(100 ms / period)
 * periods at any period. */
static void recovery_within_100ms(void **state)
{
	static const uint64_t periods_ns[] = { 10 * US, 100 * US, 250 * US, 500 * US, 1 * MS,
					       7 * MS, 100 * MS, 1000 * MS };
	static const uint64_t rates[] = { 1000000ull, 100000000ull, 10 * G, 25 * G, 400 * G,
					  1600 * G };

	for (size_t p = 0; p < sizeof(periods_ns) / sizeof(periods_ns[0]); p++) {
		for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
			struct aimd_config c = cfg();
			uint64_t floor, limit, start;
			struct sim s;
			unsigned n = 0;

			c.period_ns = periods_ns[p];
			c.max_rate_bps = rates[r];
			sim_init(&s, &c);
			/* 1 bandwidth flow, 7 latency flows: floor = MaxRate / 8 */
			while (s.a.safe_util_bps > aimd_floor(&c, &(struct aimd_counts){ 7, 1, 0 }))
				sim_step(&s, 7, 1, 0, 1 * MS);
			floor = s.a.safe_util_bps;
			assert_int_equal(floor, aimd_floor(&c, &(struct aimd_counts){ 7, 1, 0 }));
			start = s.now;
			while (s.a.safe_util_bps < c.max_rate_bps) {
				sim_step(&s, 7, 1, 0, 10 * US);
				n++;
				assert_true(n <= 1000000);
			}
			limit = (AIMD_RECOVERY_NS + c.period_ns - 1) / c.period_ns;
			assert_true(n <= limit);
			if (c.period_ns == 500 * US)
				assert_true(s.now - start <= 100 * MS);
		}
	}
}

/* Over a long path a sample comes once per round trip (40 periods at
 * 20 ms): each one that meets the target earns the periods it covered, so
 * the climb from the floor still takes about 100 ms, not 4 s; a violation
 * still halves once per sample; the first sample after a stale gap earns
 * one step only. */
static void recovery_with_sparse_samples(void **state)
{
	struct aimd_config c = cfg();
	uint64_t floor, start, before;
	struct sim s;

	(void)state;
	c.period_ns = 500 * US;
	c.stale_ns = 50 * MS;
	sim_init(&s, &c);
	floor = aimd_floor(&c, &(struct aimd_counts){ 1, 0, 0 });
	while (s.a.safe_util_bps > floor)
		sim_step(&s, 1, 0, 0, 50 * MS);
	start = s.now;
	while (s.a.safe_util_bps < c.max_rate_bps) {
		for (int i = 0; i < 39; i++)
			sim_step(&s, 1, 0, 0, 0);       /* hold: no sample */
		assert_int_equal(s.a.action, AIMD_HOLD);
		sim_step(&s, 1, 0, 0, 10 * US);         /* one per round trip */
		assert_int_equal(s.a.action, AIMD_INCREASE);
		assert_true(s.now - start <= 100 * MS + 20 * MS);
	}
	/* a violation halves once per sample, however long the round trip */
	for (int i = 0; i < 39; i++)
		sim_step(&s, 1, 0, 0, 0);
	assert_int_equal(sim_step(&s, 1, 0, 0, 50 * MS), c.max_rate_bps / 2);
	/* a gap past stale_ns halves; the sample after it earns one step */
	for (int i = 0; i < 200; i++)
		sim_step(&s, 1, 0, 0, 0);
	assert_true(s.a.stale);
	before = s.a.safe_util_bps;
	sim_step(&s, 1, 0, 0, 10 * US);
	assert_int_equal(s.a.action, AIMD_INCREASE);
	assert_int_equal(s.a.safe_util_bps, before + aimd_step_size(&c, floor));
}

static void configured_step(void **state)
{
	struct aimd_config c = cfg();
	struct sim s;

	c.step_bps = 1 * G;
	sim_init(&s, &c);
	sim_step(&s, 1, 1, 0, 1 * MS); /* 5 G */
	assert_int_equal(sim_step(&s, 1, 1, 0, 1 * US), 6 * G);
	assert_int_equal(sim_step(&s, 1, 1, 0, 1 * US), 7 * G);
	for (int i = 0; i < 10; i++)
		sim_step(&s, 1, 1, 0, 1 * US);
	assert_int_equal(s.a.safe_util_bps, 10 * G); /* capped */
	c.step_bps = UINT64_MAX;                     /* no overflow either */
	sim_init(&s, &c);
	sim_step(&s, 1, 1, 0, 1 * MS);
	assert_int_equal(sim_step(&s, 1, 1, 0, 1 * US), 10 * G);
}

/* Policy ignore_latency: after delta of continuous violation latency flows
 * are ignored (SafeUtil = MaxRate) until L/(B+T) grows. */
static void unattainable_ignore(void **state)
{
	struct aimd_config c = cfg();
	uint64_t need = c.delta_ns / c.period_ns;
	struct sim s;
	uint64_t i;

	c.ignore_latency = true;
	sim_init(&s, &c);
	/* violations, broken once just before delta: the timer restarts */
	for (i = 0; i < need - 2; i++)
		sim_step(&s, 1, 2, 0, 1 * MS);
	assert_false(s.a.unattainable);
	sim_step(&s, 1, 2, 0, 10 * US);
	for (i = 0; i < need; i++) {
		sim_step(&s, 1, 2, 0, 1 * MS);
		assert_int_equal(s.a.mode, AIMD_NORMAL);
	}
	/* delta reached exactly now */
	sim_step(&s, 1, 2, 0, 1 * MS);
	assert_int_equal(s.ev, AIMD_EV_ENTER_IGNORE);
	assert_int_equal(s.a.mode, AIMD_UNATTAINABLE);
	assert_true(s.a.unattainable);
	assert_int_equal(s.a.safe_util_bps, 10 * G);
	/* stays: more violations, the same ratio (2/4 = 1/2), a lower ratio */
	for (i = 0; i < 1000; i++)
		assert_int_equal(sim_step(&s, 1, 2, 0, 5 * MS), 10 * G);
	assert_int_equal(sim_step(&s, 2, 4, 0, 5 * MS), 10 * G);
	assert_int_equal(sim_step(&s, 1, 3, 1, 5 * MS), 10 * G);
	assert_int_equal(s.a.mode, AIMD_UNATTAINABLE);
	/* even a met target does not end it: only the ratio does */
	assert_int_equal(sim_step(&s, 1, 2, 0, 10 * US), 10 * G);
	assert_int_equal(s.a.mode, AIMD_UNATTAINABLE);
	/* L/(B+T) grows: 2/2 > 1/2 -> normal, and the violation halves at once */
	assert_int_equal(sim_step(&s, 2, 2, 0, 5 * MS), 5 * G);
	assert_int_equal(s.ev, AIMD_EV_LEAVE_IGNORE);
	assert_int_equal(s.a.mode, AIMD_NORMAL);
	assert_false(s.a.unattainable);

	/* fewer hungry flows also raise the ratio */
	sim_init(&s, &c);
	for (i = 0; i <= need; i++)
		sim_step(&s, 1, 4, 0, 1 * MS);
	assert_int_equal(s.a.mode, AIMD_UNATTAINABLE);
	sim_step(&s, 1, 3, 0, 1 * MS);
	assert_int_equal(s.a.mode, AIMD_NORMAL);

	/* switching the policy to keep ends it too */
	sim_init(&s, &c);
	for (i = 0; i <= need; i++)
		sim_step(&s, 1, 4, 0, 1 * MS);
	assert_int_equal(s.a.mode, AIMD_UNATTAINABLE);
	s.c.ignore_latency = false;
	sim_step(&s, 1, 4, 0, 1 * MS);
	assert_int_equal(s.a.mode, AIMD_NORMAL);
	assert_int_equal(s.ev, AIMD_EV_LEAVE_IGNORE);
}

/* Policy keep: reported, but the controller keeps protecting the target. */
static void unattainable_keep(void **state)
{
	struct aimd_config c = cfg();
	uint64_t need = c.delta_ns / c.period_ns, i;
	int reported = 0;
	struct sim s;

	sim_init(&s, &c);
	for (i = 0; i <= need + 100; i++) {
		sim_step(&s, 1, 1, 0, 1 * MS);
		reported += s.ev == AIMD_EV_UNATTAINABLE;
		assert_int_equal(s.a.mode, AIMD_NORMAL);
		assert_int_equal(s.a.safe_util_bps, 5 * G);
	}
	assert_int_equal(reported, 1);
	assert_true(s.a.unattainable);
	sim_step(&s, 1, 1, 0, 10 * US);
	assert_int_equal(s.ev, AIMD_EV_ATTAINABLE);
	assert_false(s.a.unattainable);
}

/* Current99 above the target only because of old samples (the newest all
 * meet it): still a decrease, but never "unattainable" however long. */
static void old_violation_is_not_unattainable(void **state)
{
	struct aimd_config c = cfg();
	uint64_t need = c.delta_ns / c.period_ns, i;
	struct sim s;

	sim_init(&s, &c);
	sim_step(&s, 1, 1, 0, 1 * MS); /* a real violation starts the timer */
	for (i = 0; i <= need + 10; i++) {
		struct aimd_input in = { .now_ns = s.now, .n = { 1, 1, 0 }, .fresh = true,
					 .current99_ns = 1 * MS, .met_now = true };

		s.ev = aimd_step(&s.a, &s.c, &in);
		s.now += c.period_ns;
		assert_int_equal(s.a.action, AIMD_DECREASE);
		assert_int_equal(s.ev, AIMD_EV_NONE);
	}
	assert_false(s.a.unattainable);
	/* new samples miss it again: delta counts from now */
	for (i = 0; i < need; i++)
		sim_step(&s, 1, 1, 0, 1 * MS);
	assert_false(s.a.unattainable);
	sim_step(&s, 1, 1, 0, 1 * MS);
	assert_true(s.a.unattainable);
}

/* No samples: hold, then halve to the floor after stale_ns; samples back:
 * normal control again.  Stale periods do not start the delta timer. */
static void missing_measurements(void **state)
{
	struct aimd_config c = cfg();
	uint64_t stale_periods = c.stale_ns / c.period_ns, i;
	struct sim s;

	c.delta_ns = 10 * MS; /* shorter than stale: must not fire on gaps */
	c.ignore_latency = true;
	sim_init(&s, &c);
	/* a latency flow appears, no sample yet: no additive increase */
	sim_step(&s, 1, 1, 0, 1 * MS); /* one violation: 5 G */
	for (i = 1; i < stale_periods; i++) {
		assert_int_equal(sim_step(&s, 1, 1, 0, 0), 5 * G);
		assert_int_equal(s.a.action, AIMD_HOLD);
	}
	/* stale: violation each period, down to the floor (1/4 with L=3) */
	sim_step(&s, 3, 1, 0, 0);
	assert_int_equal(s.ev, AIMD_EV_STALE);
	assert_int_equal(s.a.action, AIMD_STALE);
	assert_int_equal(s.a.safe_util_bps, 2500000000ull);
	for (i = 0; i < 1000; i++)
		assert_int_equal(sim_step(&s, 3, 1, 0, 0), 2500000000ull);
	assert_int_equal(s.a.mode, AIMD_NORMAL); /* gaps never mean "unattainable" */
	assert_false(s.a.unattainable);
	/* nor does a violation after the gap: the gap does not count */
	sim_step(&s, 3, 1, 0, 1 * MS);
	assert_int_equal(s.a.action, AIMD_DECREASE);
	assert_int_equal(s.ev, AIMD_EV_FRESH);
	assert_false(s.a.unattainable);
	assert_int_equal(s.a.mode, AIMD_NORMAL);
	for (i = 0; i < stale_periods; i++)
		sim_step(&s, 3, 1, 0, 0);
	assert_true(s.a.stale);
	/* a sample meeting the target: increase again */
	assert_true(sim_step(&s, 3, 1, 0, 10 * US) > 2500000000ull);
	assert_int_equal(s.ev, AIMD_EV_FRESH);
	assert_false(s.a.stale);

	/* from the start: a new latency flow and never a sample */
	sim_init(&s, &c);
	for (i = 0; i < 10; i++)
		sim_step(&s, 0, 1, 0, 0); /* L = 0: max, clocks reset */
	for (i = 0; i + 1 < stale_periods; i++)
		assert_int_equal(sim_step(&s, 1, 1, 0, 0), 10 * G);
	assert_int_equal(sim_step(&s, 1, 1, 0, 0), 5 * G);
}

static void counting(void **state)
{
	const struct aimd_flow f[] = {
		{ 1, FLOW_CLASS_LATENCY, false },   { 1, FLOW_CLASS_LATENCY, true },
		{ 1, FLOW_CLASS_BANDWIDTH, true },  { 2, FLOW_CLASS_BANDWIDTH, true },
		{ 2, FLOW_CLASS_BANDWIDTH, true },  { 2, FLOW_CLASS_BANDWIDTH, false },
		{ 3, FLOW_CLASS_THROUGHPUT, true }, { 3, FLOW_CLASS_THROUGHPUT, true },
		{ 4, FLOW_CLASS_BANDWIDTH, false }, { 5, FLOW_CLASS_LATENCY, false },
		{ 6, FLOW_CLASS_THROUGHPUT, false },
	};
	struct aimd_counts n;

	aimd_count(f, sizeof(f) / sizeof(f[0]), false, &n);
	/* every latency flow, active or not; active hungry flows only */
	assert_int_equal(n.lat, 3);
	assert_int_equal(n.bw, 3);
	assert_int_equal(n.tput, 2);
	aimd_count(f, sizeof(f) / sizeof(f[0]), true, &n);
	/* app 1: one L and one B; app 2: one B; app 3: one T; app 5: one L */
	assert_int_equal(n.lat, 2);
	assert_int_equal(n.bw, 2);
	assert_int_equal(n.tput, 1);
	aimd_count(f, 0, true, &n);
	assert_int_equal(n.lat + n.bw + n.tput, 0);

	/* one_flow_per_app changes the floor: 64 QPs of one elephant vs one
	 * latency app count 1:1, not 64:1 */
	{
		struct aimd_flow many[65];
		struct aimd_config c = cfg();

		many[0] = (struct aimd_flow){ 7, FLOW_CLASS_LATENCY, true };
		for (int i = 1; i < 65; i++)
			many[i] = (struct aimd_flow){ 8, FLOW_CLASS_BANDWIDTH, true };
		aimd_count(many, 65, true, &n);
		assert_int_equal(aimd_floor(&c, &n), 5 * G);
		aimd_count(many, 65, false, &n);
		assert_int_equal(aimd_floor(&c, &n), 10 * G * 64 / 65);
	}
	assert_string_equal(aimd_action_name(AIMD_STALE), "stale");
	assert_string_equal(aimd_action_name((enum aimd_action)99), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_latency_flow_is_max_rate),
		cmocka_unit_test(floor_is_share_of_hungry_flows),
		cmocka_unit_test(violation_halves_within_one_period),
		cmocka_unit_test(floor_never_crossed),
		cmocka_unit_test(recovery_within_100ms),
		cmocka_unit_test(recovery_with_sparse_samples),
		cmocka_unit_test(configured_step),
		cmocka_unit_test(unattainable_ignore),
		cmocka_unit_test(unattainable_keep),
		cmocka_unit_test(old_violation_is_not_unattainable),
		cmocka_unit_test(missing_measurements),
		cmocka_unit_test(counting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

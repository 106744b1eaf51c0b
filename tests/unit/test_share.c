// SPDX-License-Identifier: MIT
/* Unit tests of daemon/share.c: the work-conserving shares of pace mode
 * SHARE, in closed loop with a model link.  The link carries X bit/s; each
 * flow offers min(grant, demand); when the offers exceed X the link splits
 * X by its own bias (a NIC that favours large messages), which is exactly
 * the unfairness the grants must override.  Checked: two greedy flows end
 * within 5% of each other with >= 95% of X; a capacity estimate far below
 * the link climbs to it (no configured cap); a flow that uses little leaves
 * the rest to the others; weights; fractions never add up to more than 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>

#include "../../daemon/share.c"

#define M 1000000.0
#define NF 8

struct link {
	double x;              /* what the link carries, bit/s */
	double demand[NF];     /* what each flow wants (INFINITY: greedy) */
	double bias[NF];       /* the NIC's arbitration weight */
};

/* What each flow achieves given its grant (bit/s). */
static void link_carry(const struct link *l, size_t n, const double *grant, double *got)
{
	double offer[NF], left = l->x;
	int done[NF] = { 0 };
	size_t open = n;

	for (size_t i = 0; i < n; i++)
		offer[i] = grant[i] < l->demand[i] ? grant[i] : l->demand[i];
	/* the NIC's biased water-filling of X over the offers */
	while (open && left > 1e-9) {
		double b = 0;
		int changed = 0;

		for (size_t i = 0; i < n; i++)
			if (!done[i])
				b += l->bias[i];
		for (size_t i = 0; i < n; i++) {
			if (done[i] || offer[i] > left * l->bias[i] / b)
				continue;
			got[i] = offer[i];
			left -= offer[i];
			done[i] = 1;
			open--;
			changed = 1;
		}
		if (!changed) {
			for (size_t i = 0; i < n; i++)
				if (!done[i]) {
					got[i] = left * l->bias[i] / b;
					done[i] = 1;
				}
			break;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (!done[i])
			got[i] = 0;
}

/* Run @windows windows from capacity @c0; the last window's rates in @got
 * and the final capacity returned. */
static uint64_t run(const struct link *l, size_t n, const uint32_t *w, uint64_t c0,
		    int windows, double *got)
{
	struct share_flow f[NF];
	struct share_state st;
	double grant[NF];

	for (size_t i = 0; i < n; i++)
		f[i] = (struct share_flow){ .weight = w ? w[i] : 1 };
	share_start(&st, c0, f, n);
	for (int k = 0; k < windows; k++) {
		double sum = 0;
		uint64_t c = st.c_bps;

		for (size_t i = 0; i < n; i++)
			grant[i] = f[i].frac * (double)c;
		link_carry(l, n, grant, got);
		for (size_t i = 0; i < n; i++) {
			f[i].granted = f[i].frac;
			f[i].used = got[i] / (double)c;
			/* its work waits for tokens when it wants more than its
			 * grant and got it: the link had room for the offers */
			f[i].bound = l->demand[i] > grant[i] && got[i] >= grant[i] * (1 - 1e-9);
			/* and it is queued (in the shim or the NIC) whenever it
			 * wants more than it got */
			f[i].queued = l->demand[i] > got[i] * (1 + 1e-9);
		}
		share_update(&st, f, n);
		/* the grants commit C, plus the headroom of satisfied flows */
		{
			double slack = 0;

			for (size_t i = 0; i < n; i++) {
				sum += f[i].frac;
				slack += f[i].used * (double)c / (double)st.c_bps *
					 (SHARE_HEADROOM - 1);
			}
			assert_true(sum <= 1.0 + slack + 1e-9);
		}
	}
	return st.c_bps;
}

/* Averages over the last @k windows (the estimate oscillates by design). */
static void run_avg(const struct link *l, size_t n, const uint32_t *w, uint64_t c0, double *avg)
{
	double got[NF];

	for (size_t i = 0; i < n; i++)
		avg[i] = 0;
	for (int k = 0; k < 20; k++) {
		run(l, n, w, c0, 60 + k, got);
		for (size_t i = 0; i < n; i++)
			avg[i] += got[i] / 20;
	}
}

/* A 1 MiB flow and a 64 KiB flow, both greedy, the NIC giving the big one
 * 3x more, from capacity @c0: their shares end within 5% of each other and
 * they move >= 95% of the link. */
static void greedy_pair_from(const char *what, double c0)
{
	struct link l = { .x = 300 * M, .demand = { INFINITY, INFINITY }, .bias = { 3, 1 } };
	double avg[NF];

	run_avg(&l, 2, NULL, (uint64_t)c0, avg);
	print_message("%s: %.1f + %.1f Mbit/s of %.0f\n", what, avg[0] / M, avg[1] / M, l.x / M);
	assert_true(fabs(avg[0] - avg[1]) <= 0.05 * (avg[0] > avg[1] ? avg[0] : avg[1]));
	assert_true(avg[0] + avg[1] >= 0.95 * l.x);
}

static void greedy_flows_share_fairly(void **state)
{
	(void)state;
	greedy_pair_from("greedy", 300 * M);
}

/* C far above the link (a probe that overshot, or a start at MaxRate on a
 * slower link): both flows use well below their grants, on a link that
 * seems to have room, and the NIC splits it 3:1.  Their work is queued all
 * the time: neither is limited by itself, so C comes down and the grants
 * decide the split.  (Judged by their fills alone both looked satisfied,
 * each was granted what it used plus the headroom, and the NIC's split
 * stayed: 225 + 75 Mbit/s.) */
static void overshoot_is_not_satisfaction(void **state)
{
	(void)state;
	greedy_pair_from("overshoot", 900 * M);
}

static void low_estimate_climbs_to_the_link(void **state)
{
	/* MaxRate configured at a quarter of what the link carries */
	struct link l = { .x = 400 * M, .demand = { INFINITY, INFINITY }, .bias = { 1, 1 } };
	double got[NF];
	uint64_t c;

	(void)state;
	c = run(&l, 2, NULL, (uint64_t)(100 * M), 30, got);
	print_message("climb: C %.0f, %.1f + %.1f Mbit/s\n", (double)c / M, got[0] / M, got[1] / M);
	assert_true(got[0] + got[1] >= 0.9 * l.x);
	assert_true((double)c >= 0.95 * l.x);
}

static void unused_share_goes_to_the_others(void **state)
{
	/* one flow wants 10% of the link, the other everything */
	struct link l = { .x = 200 * M, .demand = { 20 * M, INFINITY }, .bias = { 1, 1 } };
	double avg[NF];

	(void)state;
	run_avg(&l, 2, NULL, (uint64_t)(200 * M), avg);
	print_message("work-conserving: %.1f + %.1f Mbit/s\n", avg[0] / M, avg[1] / M);
	assert_true(avg[0] >= 0.95 * 20 * M);
	assert_true(avg[1] >= 0.8 * l.x);
}

/* Eight greedy flows, four of them favoured 16:1 by the NIC (1 MiB against
 * 64 KiB WQEs under per-WQE round robin): the starved ones must not be
 * taken for flows that want little. */
static void many_flows_nic_bias(void **state)
{
	struct link l = { .x = 800 * M };
	double avg[NF], sum = 0, sq = 0, mn = INFINITY, mx = 0;

	(void)state;
	for (int i = 0; i < 8; i++) {
		l.demand[i] = INFINITY;
		l.bias[i] = i < 4 ? 16 : 1;
	}
	run_avg(&l, 8, NULL, (uint64_t)(800 * M), avg);
	for (int i = 0; i < 8; i++) {
		sum += avg[i];
		sq += avg[i] * avg[i];
		mn = avg[i] < mn ? avg[i] : mn;
		mx = avg[i] > mx ? avg[i] : mx;
	}
	print_message("8 flows, NIC bias 16:1: %.1f..%.1f Mbit/s, sum %.1f, Jain %.3f\n", mn / M,
		      mx / M, sum / M, sum * sum / (8 * sq));
	assert_true(sum * sum / (8 * sq) >= 0.99);
	assert_true(sum >= 0.95 * l.x);
}

/* Flows that pause or end use little: they are satisfied, but C must not
 * collapse with them, or the next flow starts at a crawl. */
static void idle_flows_keep_the_capacity(void **state)
{
	struct share_flow f[2] = {
		{ .weight = 1, .granted = 0.5, .used = 0.5 },
		{ .weight = 1, .granted = 0.5, .used = 0.5 },
	};
	struct share_state st = { .c_bps = 800000000ull, .hold = 3 };

	(void)state;
	share_update(&st, f, 2);        /* binding, in a hold */
	assert_int_equal(st.c_bps, 800000000ull);
	for (int k = 0; k < 5; k++) {   /* both stop posting */
		f[0].granted = f[0].frac;
		f[1].granted = f[1].frac;
		f[0].used = f[1].used = 0;
		share_update(&st, f, 2);
		assert_int_equal(st.c_bps, 800000000ull);
	}
	assert_true(f[0].satisfied && f[1].satisfied);
}

static void weights_are_respected(void **state)
{
	struct link l = { .x = 300 * M, .demand = { INFINITY, INFINITY, INFINITY },
			  .bias = { 1, 1, 4 } };
	uint32_t w[3] = { 2, 1, 1 };
	double avg[NF];

	(void)state;
	run_avg(&l, 3, w, (uint64_t)(300 * M), avg);
	print_message("weights 2:1:1: %.1f %.1f %.1f\n", avg[0] / M, avg[1] / M, avg[2] / M);
	assert_true(avg[0] >= 1.8 * avg[1] && avg[0] <= 2.2 * avg[1]);
	assert_true(fabs(avg[1] - avg[2]) <= 0.1 * avg[1]);
}

static void update_by_hand(void **state)
{
	struct share_flow f[3] = {
		{ .weight = 1, .granted = 0.5, .used = 0.1 },  /* satisfied: 0.15 */
		{ .weight = 1, .granted = 0.25, .used = 0.25, .bound = 0.9, .queued = 1 },
		{ .weight = 1, .granted = 0.25, .used = 0.2, .bound = 0.6, .queued = 1 },
	};
	struct share_state st = { .c_bps = 1000000000ull };

	(void)state;
	/* the others wait for tokens (whatever the count of a window says of
	 * their use), no hold: a probe */
	share_update(&st, f, 3);
	assert_int_equal(st.c_bps, 1100000000ull);
	assert_true(st.probing);
	assert_true(f[0].satisfied && !f[1].satisfied && !f[2].satisfied);
	/* the satisfied one: charged its use, granted 1.5 times that */
	assert_true(fabs(f[0].frac - 0.15 / 1.1) < 1e-9);
	assert_true(fabs(f[1].frac - (1 - 0.1 / 1.1) / 2) < 1e-9);
	/* the probe was not absorbed (one flow's work waited in the NIC's
	 * queue, not for tokens): C is what was moved (more than before the
	 * probe), then a hold */
	for (int i = 0; i < 3; i++) {
		f[i].granted = f[i].frac;
		f[i].used = f[i].frac * 0.9;
		f[i].bound = 0.9;
	}
	f[1].used = f[1].granted * 0.7;
	f[1].bound = 0.1;
	share_update(&st, f, 3);
	assert_false(st.probing);
	assert_int_equal(st.hold, SHARE_HOLD);
	/* nobody judged satisfied from a failed probe: plain sum of uses */
	assert_false(f[1].satisfied);
	assert_true(fabs((double)st.c_bps -
			 1.1e9 * (f[0].used + f[1].used + f[2].used)) < 2.0);
	assert_int_equal(st.c_base_bps, 0);
	/* bound again: the hold counts down before the next probe */
	for (int i = 0; i < 3; i++) {
		f[i].granted = f[i].frac;
		f[i].used = f[i].frac;
		f[i].bound = 1;
	}
	share_update(&st, f, 3);
	assert_int_equal(st.hold, SHARE_HOLD - 1);
	assert_false(st.probing);
	/* a flow that waits for tokens is never satisfied, whatever it used */
	f[0].granted = 0.5;
	f[0].used = 0.05;
	f[0].satisfied = true;
	share_update(&st, f, 3);
	assert_false(f[0].satisfied);
	/* not bound, moved a little less than C: C comes down by at most
	 * SHARE_DECAY */
	f[0] = (struct share_flow){ .weight = 1, .granted = 0.5, .used = 0.3, .queued = 1 };
	f[1] = (struct share_flow){ .weight = 1, .granted = 0.5, .used = 0.3, .queued = 1 };
	st.probing = true; /* judged by nobody: a failed probe */
	st.c_bps = 1000000000ull;
	share_update(&st, f, 2);
	assert_int_equal(st.c_bps, (uint64_t)(1e9 * SHARE_DECAY));
	/* far less: C was far above the link, it is what they moved */
	f[0].used = f[1].used = 0.1;
	st.probing = true;
	share_update(&st, f, 2);
	assert_int_equal(st.c_bps, (uint64_t)(1e9 * SHARE_DECAY * 0.2));
	/* hungry flows that moved nothing (the link stalled): the floor */
	f[0] = (struct share_flow){ .weight = 1, .granted = 1, .used = 0, .queued = 1 };
	f[1] = (struct share_flow){ .weight = 1, .granted = 0.001, .used = 0, .queued = 1 };
	st.probing = true;
	share_update(&st, f, 2);
	assert_int_equal(st.c_bps, SHARE_MIN_BPS);
	/* below its grant, its work not queued all the window: its
	 * application held it back, it says nothing of C; the other fills
	 * its grant and (after the hold) C probes */
	f[0] = (struct share_flow){ .weight = 1, .granted = 0.5, .used = 0.425, .queued = 0.6 };
	f[1] = (struct share_flow){ .weight = 1, .granted = 0.5, .used = 0.5, .queued = 1 };
	st = (struct share_state){ .c_bps = 1000000000ull };
	share_update(&st, f, 2);
	assert_true(st.probing);
	assert_int_equal(st.c_bps, 1100000000ull);
	/* batches (a throughput flow) at 85% of their grant without waiting
	 * for tokens: their round trip held them, C probes; at 60% in a probe
	 * the link (the other's queue in the NIC) did, C comes down */
	for (int k = 0; k < 2; k++) {
		f[0] = (struct share_flow){ .weight = 1, .granted = 0.5, .used = k ? 0.3 : 0.425,
					    .bound = 0.1, .queued = 1, .batches = true };
		f[1] = (struct share_flow){ .weight = 1, .granted = 0.5, .used = 0.5, .queued = 1 };
		st = (struct share_state){ .c_bps = 1000000000ull, .probing = k };
		share_update(&st, f, 2);
		assert_true(k ? st.c_bps < 1000000000ull : st.c_bps == 1100000000ull);
	}
	/* the same with its work queued all the window: the link held it
	 * back, C comes down */
	f[0] = (struct share_flow){ .weight = 1, .granted = 0.5, .used = 0.425, .queued = 1 };
	f[1] = (struct share_flow){ .weight = 1, .granted = 0.5, .used = 0.5, .queued = 1 };
	st = (struct share_state){ .c_bps = 1000000000ull };
	share_update(&st, f, 2);
	assert_false(st.probing);
	assert_true(st.c_bps < 1000000000ull);
}

/* A window's count of a few large messages says 75-150% of the grant, at
 * random, while every flow is held back by its grant: C must not ratchet
 * down (it did, to a third of the link, on Soft-RoCE), whether the flows
 * say they waited for tokens (a real NIC) or little (Soft-RoCE's posts do
 * the packet work: a flow paced near the link's rate spends its time in
 * them). */
static void noisy_counts_do_not_ratchet_down(void **state)
{
	static const double noise[] = { 0.74, 0.48, 0.38, 0.65, 0.44, 0.59, 0.47, 0.51,
					0.55, 0.43, 0.60, 0.46, 0.50, 0.48, 0.53, 0.45 };

	(void)state;
	for (int b = 0; b < 2; b++) {
		struct share_flow f[2] = { { .weight = 1 }, { .weight = 1 } };
		struct share_state st;

		share_start(&st, 200000000ull, f, 2);
		for (int k = 0; k < 64; k++) {
			for (int i = 0; i < 2; i++) {
				f[i].granted = f[i].frac;
				f[i].used = noise[(2 * k + i) % 16] * f[i].frac / 0.5;
				f[i].bound = b ? 0.9 : 0.2;
				f[i].queued = 1;
			}
			share_update(&st, f, 2);
			assert_true(st.c_bps >= 200000000ull);
		}
	}
}

/* A flow of batches (64 B messages, one batch per round trip) wants
 * 20 Mbit/s of a 200 Mbit/s link alone, and less the more of the link the
 * other, greedy flow takes: its round trip is the queue the other's work
 * builds in the NIC (its demand here: 20 x the room the other leaves).  At
 * half the link each it moves 10 Mbit/s and looks limited by itself; lent
 * what it leaves, the other fills the link and the batches crawl.  Once its
 * use fell after it was judged so, it keeps its fair share (and C no
 * longer grows past what the others can use), trying to lend again only
 * every SHARE_NO_LEND windows: over 60 windows it moves at least 80% of
 * what it moves at a fair share (8.5 Mbit/s), where lending and taking back
 * every few windows left it 0.9 Mbit/s. */
static void lending_that_hurts_stops(void **state)
{
	const double x = 200 * M, d0 = 20 * M;
	struct share_flow f[2] = { { .weight = 1, .batches = true }, { .weight = 1, .queued = 1 } };
	struct share_state st;
	double other = x / 2, sum0 = 0;

	(void)state;
	share_start(&st, (uint64_t)x, f, 2);
	for (int k = 0; k < 80; k++) {
		double c = (double)st.c_bps, g0 = f[0].frac * c, g1 = f[1].frac * c;
		double room = other < x ? 1 - other / x : 0;
		double got0 = g0 < d0 * room ? g0 : d0 * room;
		double got1 = g1 < x - got0 ? g1 : x - got0;

		f[0].granted = f[0].frac;
		f[1].granted = f[1].frac;
		f[0].used = got0 / c;
		f[1].used = got1 / c;
		f[0].bound = got0 >= g0 * (1 - 1e-9);
		f[1].bound = got1 >= g1 * (1 - 1e-9);
		other = got1;
		if (k >= 20)
			sum0 += got0 / 60;
		share_update(&st, f, 2);
	}
	print_message("lending: the batches' flow %.2f Mbit/s (10 at a fair share)\n", sum0 / M);
	assert_true(sum0 >= 0.8 * 10 * M);
}

/* Batches whose work was queued all the window, using 60% of their grant
 * on a link with room: the NIC (the other's queue) held them, they keep
 * their share (lent, it went to the other, whose queue then stretched
 * their round trip: on Soft-RoCE the 64 B flow fell to a third).  Using a
 * tenth of it, they lend as before; so do batches at 60% whose work was
 * not queued all the window. */
static void queued_batches_near_their_grant_keep_their_share(void **state)
{
	(void)state;
	for (int k = 0; k < 3; k++) {
		struct share_flow f[2] = {
			{ .weight = 1, .granted = 0.5, .used = k == 1 ? 0.05 : 0.3,
			  .queued = k == 2 ? 0.5 : 1, .batches = true },
			{ .weight = 1, .granted = 0.5, .used = 0.5, .bound = 0.6, .queued = 1 },
		};
		struct share_state st = { .c_bps = 1000000000ull };

		share_update(&st, f, 2);
		if (k == 0) {
			/* (and next to a bandwidth flow, all of C on top) */
			assert_false(f[0].satisfied);
			assert_true(fabs(f[0].frac - 1) < 1e-9);
			assert_true(fabs(f[1].frac - 0.5) < 1e-9);
		} else {
			assert_true(f[0].satisfied);
			assert_true(f[0].frac < 0.5);
			assert_true(f[1].frac > 0.5);
		}
	}
}

/* Soft-RoCE, a 1 MiB elephant and a 64 B throughput flow at C = 276
 * Mbit/s, both filling their grants (0.98 of C moved): C probes to 303.6;
 * in the probe's window the 64 B flow, its batches queued behind the
 * elephant's work, fills 60% and the two moved 0.74 of C.  C returns to
 * what they moved before the probe, 0.98 x 276 (it went to 228, and
 * stayed there for the hold while both filled their grants), and stays
 * there through the hold while they fill them again. */
static void failed_probe_returns_to_where_it_was(void **state)
{
	struct share_flow f[2] = {
		{ .weight = 1, .granted = 0.5, .used = 0.5, .bound = 0.5, .queued = 1 },
		{ .weight = 1, .granted = 0.5, .used = 0.48, .queued = 1, .batches = true },
	};
	struct share_state st = { .c_bps = 276000000ull };

	(void)state;
	share_update(&st, f, 2);
	assert_true(st.probing);
	assert_int_equal(st.c_bps, 303600000ull);
	f[0].granted = f[0].frac;
	f[1].granted = f[1].frac;
	f[0].used = 0.44;
	f[0].bound = 0.76;
	f[1].used = 0.30;
	share_update(&st, f, 2);
	assert_false(st.probing);
	assert_int_equal(st.c_bps, (uint64_t)(276000000 * 0.98));
	assert_int_equal(st.hold, SHARE_HOLD);
	for (int k = 0; k < SHARE_HOLD; k++) {
		f[0].used = f[0].granted = f[0].frac;
		f[1].used = (f[1].granted = f[1].frac) * 0.95;
		share_update(&st, f, 2);
		assert_int_equal(st.c_bps, (uint64_t)(276000000 * 0.98));
		assert_false(f[0].satisfied || f[1].satisfied);
	}
	/* the 64 B flow's grant grew on top of C meanwhile, up to all of C
	 * (the elephant kept its half); with no raise left to try, C probes
	 * again */
	assert_true(fabs(f[1].boost.x - 2) < 1e-9 && !f[1].boost.trying);
	assert_true(fabs(f[1].frac - 1) < 1e-9 && fabs(f[0].frac - 0.5) < 1e-9);
	f[0].used = f[0].granted = f[0].frac;
	f[1].used = (f[1].granted = f[1].frac) * 0.95;
	share_update(&st, f, 2);
	assert_true(st.probing);
	assert_int_equal(st.c_bps, (uint64_t)((uint64_t)(276000000 * 0.98) * SHARE_PROBE));
}

/* Soft-RoCE, a 1 MiB elephant and a 64 B throughput flow between two
 * probes of C.  The 64 B flow's grant is all of C on top of C (its batches
 * use 0.55 of it: their round trip bounds them) while the elephant fills
 * its half; a window the elephant misses its grant steps the boost down,
 * the next raise back is kept while the elephant fills its grant, and
 * undone and held if it does not.  The elephant's half of C never
 * changes, and a bandwidth flow is never boosted.  With no bandwidth flow
 * left, the 64 B flow's grant is its fair share again. */
static void throughput_flow_gets_what_the_link_carries_on_top(void **state)
{
	struct share_flow f[2] = {
		{ .weight = 1, .granted = 0.5, .used = 0.5, .bound = 0.5, .queued = 1 },
		{ .weight = 1, .granted = 0.5, .used = 0.48, .queued = 1, .batches = true },
	};
	struct share_state st = { .c_bps = 276000000ull, .hold = SHARE_HOLD };
	/* does the elephant fill its grant in window k */
	static const bool fills[] = { true, true, false, true, false, true, true };
	static const double x[] = { 2, 2, 2 / SHARE_BOOST_STEP, 2, 2 / SHARE_BOOST_STEP,
				    2 / SHARE_BOOST_STEP, 2 / SHARE_BOOST_STEP };

	(void)state;
	for (int k = 0; k < 7; k++) {
		f[0].used = fills[k] ? 0.5 : 0.35;
		f[0].bound = fills[k] ? 0.5 : 0;
		f[1].used = 0.55 * f[1].granted;
		share_update(&st, f, 2);
		assert_false(st.probing);
		assert_true(fabs(f[1].boost.x - x[k]) < 1e-9);
		assert_true(fabs(f[1].frac - 0.5 * x[k]) < 1e-9);
		assert_true(fabs(f[0].frac - 0.5) < 1e-9);
		assert_true(fabs(f[0].boost.x - 1) < 1e-9);
		if (k == 3)
			assert_true(f[1].boost.trying);
		if (k >= 4)
			assert_int_equal(f[1].boost.hold, SHARE_HOLD - (unsigned)(k - 4));
		f[0].granted = f[0].frac;
		f[1].granted = f[1].frac;
	}
	/* the elephant leaves */
	share_update(&st, &f[1], 1);
	assert_true(fabs(f[1].frac - 1) < 1e-9 && f[1].boost.x < 1);
}

/* Two throughput flows and no bandwidth flow: nobody is boosted, each
 * gets its fair share of C. */
static void throughput_flows_alone_share_fairly(void **state)
{
	struct share_flow f[2] = {
		{ .weight = 1, .granted = 0.5, .used = 0.5, .bound = 0.6, .queued = 1, .batches = true },
		{ .weight = 1, .granted = 0.5, .used = 0.5, .bound = 0.6, .queued = 1, .batches = true },
	};
	struct share_state st = { .c_bps = 276000000ull, .hold = SHARE_HOLD };

	(void)state;
	for (int k = 0; k < 4; k++) {
		share_update(&st, f, 2);
		for (int i = 0; i < 2; i++) {
			assert_true(f[i].boost.x <= 1);
			assert_true(fabs(f[i].frac - 0.5) < 1e-9);
			f[i].granted = f[i].used = f[i].frac;
		}
	}
}

/* The shim's queued_us wraps at 2^32 us; a window's fraction is at most 1
 * whatever the (untrusted) count says. */
static void queued_fraction_wraps_and_clamps(void **state)
{
	(void)state;
	assert_true(fabs(share_queued_fraction(100, UINT32_MAX - 99, 1000000) - 0.2) < 1e-9);
	assert_true(share_queued_fraction(5000000, 0, 1000000) == 1);
	assert_true(share_queued_fraction(10, 10, 1000000) == 0);
	assert_true(share_queued_fraction(10, 0, 0) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(update_by_hand),
		cmocka_unit_test(queued_fraction_wraps_and_clamps),
		cmocka_unit_test(queued_batches_near_their_grant_keep_their_share),
		cmocka_unit_test(failed_probe_returns_to_where_it_was),
		cmocka_unit_test(throughput_flow_gets_what_the_link_carries_on_top),
		cmocka_unit_test(throughput_flows_alone_share_fairly),
		cmocka_unit_test(greedy_flows_share_fairly),
		cmocka_unit_test(overshoot_is_not_satisfaction),
		cmocka_unit_test(low_estimate_climbs_to_the_link),
		cmocka_unit_test(unused_share_goes_to_the_others),
		cmocka_unit_test(weights_are_respected),
		cmocka_unit_test(many_flows_nic_bias),
		cmocka_unit_test(idle_flows_keep_the_capacity),
		cmocka_unit_test(noisy_counts_do_not_ratchet_down),
		cmocka_unit_test(lending_that_hurts_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/* Work-conserving shares in pace mode SHARE (see share.h): the capacity C
 * adapted every window and each flow's max-min fair fraction of it.
 * May call: nothing of the daemon (pure arithmetic). */
#include "share.h"

static double weight(const struct share_flow *f)
{
	return f->weight ? (double)f->weight : 1.0;
}

static double total_weight(const struct share_flow *f, size_t n)
{
	double w = 0;

	for (size_t i = 0; i < n; i++)
		w += weight(&f[i]);
	return w;
}

/* Held back by its grant: it filled it, or its work waited for tokens
 * (share.h). */
static bool bound(const struct share_flow *f)
{
	return f->fill >= SHARE_BINDING || f->bound >= SHARE_BOUND;
}

/* Below its grant this window, but neither its grant nor the link held
 * it back (share.h): a bandwidth flow whose work was not queued all the
 * window (its application), or a throughput flow near its grant without
 * waiting for tokens (its round trip: a batch at a time).  It says nothing
 * of C. */
static bool says_nothing(const struct share_flow *f)
{
	if (bound(f))
		return false;
	/* a boosted flow that used its fair share: what it left is its boost */
	if (f->boost.x > 1 && f->used >= SHARE_BINDING * f->granted / f->boost.x)
		return true;
	return f->batches ? f->fill >= SHARE_SATISFIED : f->queued < SHARE_QUEUED;
}

/* Held back by the NIC, not by itself: its work was queued all the
 * window.  Batches are queued by design, a batch per round trip: only
 * those that still used over SHARE_BATCH_LENDS of their grant (share.h). */
static bool queued_by_nic(const struct share_flow *f)
{
	if (f->queued < SHARE_QUEUED)
		return false;
	return !f->batches || f->fill >= SHARE_BATCH_LENDS;
}

/* Limited by itself (share.h): not held back by its grant, nor by the
 * NIC (queued_by_nic()), it used well below its grant, and either was
 * judged so already or is judged now, on a link that had room. */
static bool satisfied(const struct share_flow *f, bool judge)
{
	if (f->no_lend || bound(f) || queued_by_nic(f) ||
	    !(f->granted > 0 && f->fill < SHARE_SATISFIED))
		return false;
	/* a boosted flow that still used its fair share needs it */
	if (f->boost.x > 1 && f->used >= f->granted / f->boost.x)
		return false;
	return f->satisfied || judge;
}

static uint64_t clamp_bps(double c)
{
	if (c < (double)SHARE_MIN_BPS)
		return SHARE_MIN_BPS;
	return c > 1.8e19 ? UINT64_MAX : (uint64_t)c;
}

/* What the link carried of @c_bps when the flows moved @moved of it, at
 * most C: the floor of a probe from there (share.h). */
static uint64_t carried(uint64_t c_bps, double moved)
{
	return moved < 1 ? clamp_bps((double)c_bps * moved) : c_bps;
}

/* What @f moved of C (its average fill), a boosted flow's at most its fair
 * share: the boost is carried on top of C (share.h). */
static double moved_of_c(const struct share_flow *f)
{
	double m = f->granted > 0 ? f->fill * f->granted : f->used;

	if (f->boost.x > 1 && m > f->granted / f->boost.x)
		m = f->granted / f->boost.x;
	return m;
}

static bool boost_trying(const struct share_flow *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].boost.trying)
			return true;
	return false;
}

/* Throughput flows above their share (share.h), after C's step; @c_probe:
 * C probes this window (one trial at a time). */
static void boost_update(struct share_flow *f, size_t n, bool c_probe)
{
	bool others = false, others_bound = true;

	for (size_t i = 0; i < n; i++) {
		if (f[i].batches || f[i].satisfied || !f[i].granted)
			continue;
		others = true;
		others_bound = others_bound && bound(&f[i]);
	}
	others_bound = others && others_bound;
	for (size_t i = 0; i < n; i++) {
		struct share_boost *b = &f[i].boost;

		/* (a throughput flow's starts over when it is boosted again) */
		if (!f[i].batches || f[i].satisfied || !others) {
			*b = (struct share_boost){ .x = f[i].batches ? 0 : 1 };
			continue;
		}
		/* next to bandwidth flows, new or judged limited by itself
		 * until now: all of C (a grant near what the batches use binds
		 * a batch now and then: their round trip bounds them, and the
		 * grant adds its waits) */
		if (b->x < 1) {
			*b = (struct share_boost){ .x = SHARE_BOOST_ALL };
			continue;
		}
		if (!f[i].granted)
			continue;
		if (b->hold)
			b->hold--;
		if (b->trying) {
			b->trying = false;
			if (!others_bound) {
				b->x = b->from;
				b->hold = SHARE_HOLD;
				continue;
			}
		} else if (b->x > 1 && !others_bound) {
			b->x = b->x / SHARE_BOOST_STEP > 1 ? b->x / SHARE_BOOST_STEP : 1;
			continue;
		}
		if (!b->hold && !c_probe && others_bound) {
			b->from = b->x;
			b->x *= SHARE_BOOST_STEP;
			b->trying = true;
		}
	}
}

double share_queued_fraction(uint32_t end_us, uint32_t start_us, uint64_t dt_ns)
{
	double q = dt_ns ? (double)(uint32_t)(end_us - start_us) * 1e3 / (double)dt_ns : 0;

	return q < 1 ? q : 1;
}

void share_start(struct share_state *st, uint64_t c_bps, struct share_flow *f, size_t n)
{
	st->c_bps = clamp_bps((double)c_bps);
	st->hold = 0;
	st->probing = false;
	st->c_base_bps = 0;
	st->moved_c = true;
	for (size_t i = 0; i < n; i++) {
		f[i].satisfied = false;
		f[i].fill = 0;
		f[i].boost = (struct share_boost){ .x = f[i].batches ? 0 : 1 };
	}
	share_split(f, n, st->c_bps, st->c_bps);
}

void share_update(struct share_state *st, struct share_flow *f, size_t n)
{
	uint64_t c_old = st->c_bps;
	double moved = 0; /* fraction of C the flows moved */
	bool binding = true, hungry = false, hurt = false, judge;

	if (!n) {
		st->probing = false;
		st->c_base_bps = 0;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		double raw = f[i].granted > 0 ? f[i].used / f[i].granted : 0;

		/* averaged while C stays: new flows and a new C start over */
		f[i].fill = !st->moved_c && f[i].fill > 0 && raw > 0 ? (f[i].fill + raw) / 2 : raw;
		moved += moved_of_c(&f[i]);
	}
	/* new judgments only from a window that ran on no probe and left
	 * room on the link */
	judge = !st->probing && moved < SHARE_FULL;
	for (size_t i = 0; i < n; i++) {
		bool was = f[i].satisfied;

		if (f[i].no_lend)
			f[i].no_lend--;
		if (was && f[i].used * (double)c_old < SHARE_LENT_DROP * f[i].sat_bps) {
			/* what it left to the others cost it its own rate */
			was = f[i].satisfied = false;
			f[i].no_lend = SHARE_NO_LEND;
		}
		f[i].satisfied = satisfied(&f[i], judge);
		if (f[i].satisfied && !was)
			f[i].sat_bps = f[i].used * (double)c_old;
		if (f[i].satisfied || !f[i].granted)
			continue;
		if (f[i].no_lend && !bound(&f[i])) {
			/* below its grant because of the others' share, not
			 * the link's: it says nothing of C, and C may not
			 * grow (lending it to the others by another way).
			 * (One that fills its grant again is just hungry.) */
			hurt = true;
			continue;
		}
		if (says_nothing(&f[i]))
			continue;
		/* every one: a flow the NIC favours fills its grant while the
		 * others starve, and only theirs say the link is full */
		hungry = true;
		binding = binding && bound(&f[i]);
	}
	if (!hungry) {
		/* every flow is limited by itself (or new): the link told
		 * nothing about C, keep it (flows that pause or end must not
		 * leave the next one a tiny C) */
		st->probing = false;
	} else if (binding) {
		/* the grants hold the flows back */
		if (hurt) {
			st->probing = false;
		} else if (st->probing) {
			st->c_base_bps = carried(c_old, moved);
			st->c_bps = clamp_bps((double)c_old * SHARE_PROBE_MORE);
		} else if (st->hold) {
			st->hold--;
		} else if (boost_trying(f, n)) {
			/* a throughput flow's raise first, one trial at a time */
		} else {
			st->c_base_bps = carried(c_old, moved);
			st->c_bps = clamp_bps((double)c_old * SHARE_PROBE);
			st->probing = true;
			st->moved_c = true;
			boost_update(f, n, true);
			share_split(f, n, c_old, st->c_bps);
			return;
		}
	} else {
		/* not held back by their grants: the link (or the
		 * applications) limits them.  C comes down to what they moved,
		 * or the NIC's queue (not the grants) would split it, by at most
		 * SHARE_DECAY a window; after a probe it could not carry, hold,
		 * and no lower than before the probe (share.h) */
		if (st->probing)
			st->hold = SHARE_HOLD;
		if (moved < 1)
			st->c_bps = clamp_bps((double)c_old * (moved < SHARE_FAR ? moved
							       : moved > SHARE_DECAY ? moved
							       : SHARE_DECAY));
		if (st->probing && st->c_bps < st->c_base_bps)
			st->c_bps = st->c_base_bps;
		st->probing = false;
	}
	if (!st->probing)
		st->c_base_bps = 0;
	st->moved_c = st->c_bps != c_old;
	boost_update(f, n, st->probing);
	share_split(f, n, c_old, st->c_bps);
}

void share_split(struct share_flow *f, size_t n, uint64_t c_old_bps, uint64_t c_new_bps)
{
	double left = 1.0, scale = c_new_bps ? (double)c_old_bps / (double)c_new_bps : 1.0;
	double w = total_weight(f, n);
	bool changed = true;

	for (size_t i = 0; i < n; i++)
		f[i].frac = -1; /* unresolved */
	/* water-filling: a satisfied flow whose use fits under its fair share
	 * of what is left is charged what it uses and granted that plus
	 * SHARE_HEADROOM (room to grow: the grants may add up to a little
	 * more than C, by what satisfied flows leave unused); repeat, as each
	 * one resolved leaves more for the rest */
	while (changed) {
		changed = false;
		for (size_t i = 0; i < n && w > 0; i++) {
			double use, fair;

			if (f[i].frac >= 0 || !f[i].satisfied)
				continue;
			use = f[i].used * scale;
			fair = left * weight(&f[i]) / w;
			if (use <= fair) {
				f[i].frac = use * SHARE_HEADROOM < fair ? use * SHARE_HEADROOM : fair;
				left -= use;
				w -= weight(&f[i]);
				changed = true;
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (f[i].frac >= 0)
			continue;
		f[i].frac = left > 0 && w > 0 ? left * weight(&f[i]) / w : 0;
		/* a throughput flow's boost, on top of C (share.h) */
		if (f[i].boost.x > 1) {
			/* at most all of C */
			if (f[i].frac * f[i].boost.x > 1 && f[i].frac > 0) {
				f[i].boost.x = 1 / f[i].frac;
				/* (nothing left to try) */
				if (f[i].boost.x <= f[i].boost.from)
					f[i].boost.trying = false;
			}
			f[i].frac *= f[i].boost.x;
		}
	}
}

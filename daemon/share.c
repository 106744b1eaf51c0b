// SPDX-License-Identifier: MIT
/* Work-conserving shares in pace mode SHARE (see share.h). */
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

/* Limited by itself: it used well below what it was granted.  Without
 * @judge (the window ran on a probe the NIC may have split its own way)
 * only a flow already held below its fair share counts: one at its fair
 * share using little may just have lost the NIC's arbitration. */
static bool satisfied(const struct share_flow *f, bool judge, double w_all)
{
	if (!(f->granted > 0 && f->used < SHARE_SATISFIED * f->granted))
		return false;
	return judge || f->granted < 0.999 * weight(f) / w_all;
}

static uint64_t clamp_bps(double c)
{
	if (c < (double)SHARE_MIN_BPS)
		return SHARE_MIN_BPS;
	return c > 1.8e19 ? UINT64_MAX : (uint64_t)c;
}

void share_start(struct share_state *st, uint64_t c_bps, struct share_flow *f, size_t n)
{
	st->c_bps = clamp_bps((double)c_bps);
	st->hold = 0;
	st->probing = false;
	share_split(f, n, st->c_bps, st->c_bps, false);
}

void share_update(struct share_state *st, struct share_flow *f, size_t n)
{
	uint64_t c_old = st->c_bps;
	double moved = 0; /* fraction of C: what a grant equal to each use needs */
	bool binding = false, slack = false, judge = !st->probing;
	double w_all = total_weight(f, n);

	if (!n) {
		st->probing = false;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (satisfied(&f[i], judge, w_all)) {
			moved += f[i].used * SHARE_HEADROOM;
			continue;
		}
		moved += f[i].used;
		if (!f[i].granted)
			continue;
		if (f[i].used >= SHARE_BINDING * f[i].granted)
			binding = true;
		else
			slack = true;
	}
	if (binding && !slack) {
		/* the grants hold the flows back */
		if (st->probing) {
			st->c_bps = clamp_bps((double)c_old * SHARE_PROBE_MORE);
		} else if (st->hold) {
			st->hold--;
		} else {
			st->c_bps = clamp_bps((double)c_old * SHARE_PROBE);
			st->probing = true;
			share_split(f, n, c_old, st->c_bps, judge);
			return;
		}
	} else {
		/* the link (or the applications) moved less than granted: C is
		 * what they moved; after a probe it could not carry, hold */
		if (st->probing)
			st->hold = SHARE_HOLD;
		st->c_bps = clamp_bps((double)c_old * moved);
		st->probing = false;
	}
	share_split(f, n, c_old, st->c_bps, judge);
}

void share_split(struct share_flow *f, size_t n, uint64_t c_old_bps, uint64_t c_new_bps,
		 bool judge)
{
	double left = 1.0, scale = c_new_bps ? (double)c_old_bps / (double)c_new_bps : 1.0;
	double w = total_weight(f, n), w_all = w;
	bool changed = true;

	for (size_t i = 0; i < n; i++)
		f[i].frac = -1; /* unresolved */
	/* water-filling: a satisfied flow whose demand fits under its fair
	 * share of what is left gets exactly its demand; repeat, as each one
	 * resolved leaves more for the rest */
	while (changed) {
		changed = false;
		for (size_t i = 0; i < n && w > 0; i++) {
			double demand;

			if (f[i].frac >= 0 || !satisfied(&f[i], judge, w_all))
				continue;
			demand = f[i].used * scale * SHARE_HEADROOM;
			if (demand <= left * weight(&f[i]) / w) {
				f[i].frac = demand;
				left -= demand;
				w -= weight(&f[i]);
				changed = true;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		if (f[i].frac < 0)
			f[i].frac = left > 0 && w > 0 ? left * weight(&f[i]) / w : 0;
}

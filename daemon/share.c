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

/* Limited by itself (share.h): it used well below its grant, and either
 * was judged so already or is judged now, on a link that had room. */
static bool satisfied(const struct share_flow *f, bool judge)
{
	if (!(f->granted > 0 && f->used < SHARE_SATISFIED * f->granted))
		return false;
	return f->satisfied || judge;
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
	for (size_t i = 0; i < n; i++)
		f[i].satisfied = false;
	share_split(f, n, st->c_bps, st->c_bps);
}

void share_update(struct share_state *st, struct share_flow *f, size_t n)
{
	uint64_t c_old = st->c_bps;
	double moved = 0; /* fraction of C the flows moved */
	double g_hungry = 0, u_hungry = 0;
	bool binding, judge;

	if (!n) {
		st->probing = false;
		return;
	}
	for (size_t i = 0; i < n; i++)
		moved += f[i].used;
	/* new judgments only from a window that ran on no probe and left
	 * room on the link */
	judge = !st->probing && moved < SHARE_FULL;
	for (size_t i = 0; i < n; i++) {
		f[i].satisfied = satisfied(&f[i], judge);
		if (f[i].satisfied || !f[i].granted)
			continue;
		g_hungry += f[i].granted;
		u_hungry += f[i].used;
	}
	/* (in aggregate: with many flows of large messages one of them is
	 * always between two messages at the window's end) */
	binding = g_hungry > 0 && u_hungry >= SHARE_BINDING * g_hungry;
	if (binding) {
		/* the grants hold the flows back */
		if (st->probing) {
			st->c_bps = clamp_bps((double)c_old * SHARE_PROBE_MORE);
		} else if (st->hold) {
			st->hold--;
		} else {
			st->c_bps = clamp_bps((double)c_old * SHARE_PROBE);
			st->probing = true;
			share_split(f, n, c_old, st->c_bps);
			return;
		}
	} else {
		/* the link (or the applications) moved less than granted: C is
		 * what they moved, never more, or the NIC's queue (not the
		 * grants) would split it; after a probe it could not carry,
		 * hold */
		if (st->probing)
			st->hold = SHARE_HOLD;
		st->c_bps = clamp_bps((double)c_old * moved);
		st->probing = false;
	}
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
	for (size_t i = 0; i < n; i++)
		if (f[i].frac < 0)
			f[i].frac = left > 0 && w > 0 ? left * weight(&f[i]) / w : 0;
}

// SPDX-License-Identifier: MIT
/* The AIMD controller of the safe utilisation (see aimd.h): one step per
 * RefPeriod from Current99 and the counts of L/B/T flows, pure arithmetic.
 * May call: config (its types) only. */
#include "aimd.h"

#include <string.h>

#include "config.h"

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

void aimd_init(struct aimd *a, const struct aimd_config *c, uint64_t now_ns)
{
	memset(a, 0, sizeof(*a));
	a->safe_util_bps = c->max_rate_bps;
	a->mode = AIMD_NORMAL;
	a->action = AIMD_MAX;
	a->last_fresh_ns = now_ns;
}

uint64_t aimd_floor(const struct aimd_config *c, const struct aimd_counts *n)
{
	uint64_t hungry = (uint64_t)n->bw + n->tput, all = hungry + n->lat, share;

	if (!c->max_rate_bps)
		return 0;
	share = all ? (uint64_t)((unsigned __int128)c->max_rate_bps * hungry / all) : 0;
	return min_u64(max_u64(share, AIMD_MIN_BPS), c->max_rate_bps);
}

uint64_t aimd_step_size(const struct aimd_config *c, uint64_t floor_bps)
{
	uint64_t periods, span;

	if (c->step_bps)
		return c->step_bps;
	periods = c->period_ns ? (AIMD_RECOVERY_NS + c->period_ns - 1) / c->period_ns : 1;
	span = c->max_rate_bps > floor_bps ? c->max_rate_bps - floor_bps : 0;
	span = (span + periods - 1) / periods;
	return span ? span : 1;
}

/* How many periods of additive increase a fresh sample that meets the
 * target earns: the periods since the previous fresh one.  Samples come
 * once per reference round trip, and a round trip can last many periods
 * (20 ms over a long path: 40 periods of 500 us); one step per sample
 * would stretch the recovery from the floor from 100 ms to 4 s.  Never
 * across a stale gap (no evidence for it) nor more than stale_ns of
 * periods. */
static uint64_t increase_periods(const struct aimd *a, const struct aimd_config *c,
				 uint64_t now_ns)
{
	uint64_t gap, cap;

	if (a->stale || !c->period_ns || now_ns <= a->last_fresh_ns)
		return 1;
	gap = (now_ns - a->last_fresh_ns) / c->period_ns;
	cap = c->stale_ns / c->period_ns;
	return max_u64(min_u64(gap, cap), 1);
}

/* L/(B+T) grew since ignore mode began (B+T = 0 is an infinite ratio). */
static bool ratio_grew(const struct aimd_counts *then, const struct aimd_counts *now)
{
	uint64_t h0 = (uint64_t)then->bw + then->tput, h1 = (uint64_t)now->bw + now->tput;

	if (!h1)
		return h0 != 0;
	if (!h0)
		return false;
	return (uint64_t)now->lat * h0 > (uint64_t)then->lat * h1;
}

enum aimd_event aimd_step(struct aimd *a, const struct aimd_config *c,
			  const struct aimd_input *in)
{
	enum aimd_event ev = AIMD_EV_NONE;
	uint64_t floor = aimd_floor(c, &in->n), max = c->max_rate_bps;
	uint64_t su = a->safe_util_bps, inc;

	a->floor_bps = floor;
	a->step_bps = aimd_step_size(c, floor);
	if (!in->n.lat) {
		/* no latency flow: nothing to protect, and the measurement
		 * clocks start afresh with the next latency flow */
		if (a->mode == AIMD_UNATTAINABLE)
			ev = AIMD_EV_LEAVE_IGNORE;
		a->mode = AIMD_NORMAL;
		a->unattainable = false;
		a->stale = false;
		a->violating_since_ns = 0;
		a->last_fresh_ns = in->now_ns;
		a->safe_util_bps = max;
		a->action = AIMD_MAX;
		a->n = in->n;
		return ev;
	}
	if (a->mode == AIMD_UNATTAINABLE) {
		if (!c->ignore_latency || ratio_grew(&a->at_entry, &in->n)) {
			a->mode = AIMD_NORMAL;
			a->unattainable = false;
			a->violating_since_ns = 0;
			ev = AIMD_EV_LEAVE_IGNORE;
		} else {
			if (in->fresh)
				a->last_fresh_ns = in->now_ns;
			a->safe_util_bps = max;
			a->action = AIMD_MAX;
			a->n = in->n;
			return ev;
		}
	}
	if (in->fresh) {
		uint64_t periods = increase_periods(a, c, in->now_ns);

		if (a->stale && ev == AIMD_EV_NONE)
			ev = AIMD_EV_FRESH;
		a->stale = false;
		a->last_fresh_ns = in->now_ns;
		if (in->current99_ns > c->target99_ns) {
			/* unattainable means missed for delta by what is
			 * measured now: not while the newest samples meet it */
			if (in->met_now)
				a->violating_since_ns = 0;
			else if (!a->violating_since_ns)
				a->violating_since_ns = in->now_ns;
			su = max_u64(su / 2, floor);
			a->action = AIMD_DECREASE;
			if (!a->unattainable && a->violating_since_ns &&
			    in->now_ns >= a->violating_since_ns &&
			    in->now_ns - a->violating_since_ns >= c->delta_ns) {
				a->unattainable = true;
				ev = AIMD_EV_UNATTAINABLE;
				if (c->ignore_latency) {
					a->mode = AIMD_UNATTAINABLE;
					a->at_entry = in->n;
					su = max;
					a->action = AIMD_MAX;
					ev = AIMD_EV_ENTER_IGNORE;
				}
			}
		} else {
			if (a->unattainable && ev == AIMD_EV_NONE)
				ev = AIMD_EV_ATTAINABLE;
			a->violating_since_ns = 0;
			a->unattainable = false;
			inc = a->step_bps > UINT64_MAX / periods ? UINT64_MAX : a->step_bps * periods;
			su = su > max - min_u64(inc, max) ? max : su + inc;
			a->action = AIMD_INCREASE;
		}
	} else if (in->now_ns >= a->last_fresh_ns && in->now_ns - a->last_fresh_ns >= c->stale_ns) {
		if (!a->stale && ev == AIMD_EV_NONE)
			ev = AIMD_EV_STALE;
		a->stale = true;
		/* a gap in the measurements never counts towards delta */
		a->violating_since_ns = 0;
		su = max_u64(su / 2, floor);
		a->action = AIMD_STALE;
	} else {
		a->action = AIMD_HOLD;
	}
	a->safe_util_bps = min_u64(max_u64(su, floor), max);
	a->n = in->n;
	return ev;
}

void aimd_count(const struct aimd_flow *f, size_t n, bool one_per_app, struct aimd_counts *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n;) {
		size_t end = i + 1;
		bool lat = false, bw = false, tput = false;

		if (one_per_app)
			while (end < n && f[end].app == f[i].app)
				end++;
		for (size_t j = i; j < end; j++) {
			if (f[j].cls == FLOW_CLASS_LATENCY)
				lat = true;
			else if (f[j].cls == FLOW_CLASS_BANDWIDTH && f[j].active)
				bw = true;
			else if (f[j].cls == FLOW_CLASS_THROUGHPUT && f[j].active)
				tput = true;
			if (!one_per_app) {
				out->lat += lat;
				out->bw += bw;
				out->tput += tput;
				lat = bw = tput = false;
			}
		}
		out->lat += lat;
		out->bw += bw;
		out->tput += tput;
		i = end;
	}
}

const char *aimd_action_name(enum aimd_action a)
{
	static const char *const names[] = { "max", "decrease", "increase", "hold", "stale" };

	return (unsigned)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}

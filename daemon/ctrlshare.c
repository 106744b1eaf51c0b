// SPDX-License-Identifier: MIT
/* The isolation controller's pace modes: PROTECT while latency flows are
 * registered, SHARE while two or more flows compete (the capacity C adapted
 * every window, share.h, and each flow's max-min fair fraction of it), OFF
 * otherwise; and each flow's achieved rates over the share window.
 * May call: share, flows, log; not controller.c, ctrlport.c or ctrlstatus.c. */
#include "ctrlshare.h"

#include <stdio.h>

#include "justitiad.h"
#include "log.h"

static bool hungry_cls(int cls)
{
	return cls == FLOW_CLASS_BANDWIDTH || cls == FLOW_CLASS_THROUGHPUT;
}

/* Competing for the link: active, or moved something over the last share
 * window (a paced flow of large messages may post less often than the
 * activity window). */
static bool competing(const struct flow *f)
{
	return hungry_cls(f->cls) && (f->active || f->meas_bps || f->meas_ops);
}

/* Throughput flows spend ops: a bit/s of the token stream buys this many
 * ops/s (TokenOps per 8 TokenBytes bits). */
static double ops_per_bit(const struct ctrl *c)
{
	uint64_t tb = c->d->cfg.tokens.bytes;

	return tb ? (double)c->token_ops / (8.0 * (double)tb) : 0;
}

/* What the flow moved over the window, as bit/s of the token stream. */
static double used_bps(const struct ctrl *c, const struct flow *f)
{
	double opb = ops_per_bit(c);

	if (f->cls == FLOW_CLASS_THROUGHPUT)
		return opb > 0 ? (double)f->meas_ops / opb : 0;
	return (double)f->meas_bps;
}

static double granted_bps(const struct ctrl *c, const struct flow *f)
{
	double opb = ops_per_bit(c);

	if (f->cls == FLOW_CLASS_THROUGHPUT)
		return opb > 0 ? (double)f->ops_per_s / opb : 0;
	return (double)f->rate_bps;
}

/* Every SHARE_WINDOW_NS: each flow's achieved rates over the window.  A
 * split message counts its bytes when its last chunk goes, which at a low
 * grant may take longer than a window: its chunks (at the chunk size)
 * count too, whichever says more.  Returns true when a window ended. */
bool ctrlshare_measure_window(struct ctrl *c, size_t n, uint64_t now)
{
	uint64_t dt = now - c->win_t0_ns;

	if (c->win_t0_ns && dt < SHARE_WINDOW_NS)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct flow *f = c->fp[i];

		if (c->win_t0_ns && f->win_bytes0 <= f->last.bytes && f->win_ops0 <= f->last.ops &&
		    f->win_chunks0 <= f->last.chunks && f->win_wait0 <= f->last.token_wait_ns) {
			uint64_t b = f->last.bytes - f->win_bytes0;
			uint64_t cb = (f->last.chunks - f->win_chunks0) * (uint64_t)c->chunk_bytes;
			double bound = (double)(f->last.token_wait_ns - f->win_wait0) / (double)dt;

			f->meas_bps = (uint64_t)((double)(cb > b ? cb : b) * 8e9 / (double)dt);
			f->meas_ops = (uint64_t)((double)(f->last.ops - f->win_ops0) * 1e9 /
						 (double)dt);
			/* (the shim's word, untrusted: fractions of the window) */
			f->meas_bound = bound < 1 ? bound : 1;
			f->meas_queued = share_queued_fraction(f->last.queued_us, f->win_queued0,
							       dt);
		} else {
			f->meas_bps = f->meas_ops = 0;
			f->meas_bound = f->meas_queued = 0;
		}
		f->win_bytes0 = f->last.bytes;
		f->win_ops0 = f->last.ops;
		f->win_chunks0 = f->last.chunks;
		f->win_wait0 = f->last.token_wait_ns;
		f->win_queued0 = f->last.queued_us;
	}
	c->win_t0_ns = now;
	return true;
}

/* The remote READ flows (rread.h, c->tf[n..n+n_remote)) that compete:
 * how many, and their weights in *@w. */
static size_t remote_competing(const struct ctrl *c, size_t n, double *w)
{
	size_t k = 0;

	*w = 0;
	for (size_t i = n; i < n + c->n_remote; i++)
		if (c->tf[i].active) {
			k++;
			*w += c->tf[i].weight ? c->tf[i].weight : 1;
		}
	return k;
}

/* SHARE: the remote READ flows' shares (a throughput flow's in ops/s, as
 * a local one's), by weight next to the local competing flows' (@w_loc),
 * of MaxRate (SafeUtil without a latency flow,
 * the paper's): this host's NIC sends their data, but nothing here
 * measures it, so C (what the local flows are seen to move) says nothing
 * of it.  @w_rem: their weights (remote_competing()).  Returns the
 * part of C left to the local flows. */
static double remote_share_rates(struct ctrl *c, size_t n, double w_loc, double w_rem)
{
	double cap = (double)c->share.c_bps;
	double su = c->max_rate_bps ? (double)c->max_rate_bps : cap;

	for (size_t i = n; i < n + c->n_remote; i++) {
		struct tokens_flow *t = &c->tf[i];
		double w = t->weight ? t->weight : 1;
		double r = su * w / (w_loc + w_rem + (t->active ? 0 : w));

		t->rate_bps = t->ops_per_s = t->wait_ns = 0;
		/* a throughput READ flow spends ops, as a local one does */
		if (t->cls == FLOW_CLASS_THROUGHPUT)
			t->ops_per_s = (uint64_t)(r * ops_per_bit(c)) + 1;
		else
			t->rate_bps = (uint64_t)r + 1;
	}
	return w_rem > 0 && w_loc > 0 ? cap * w_loc / (w_loc + w_rem) : cap;
}

/* SHARE: the tokens' rate is C, adapted every window (share.h), and each
 * active flow's grant its max-min fair fraction of C; a flow not active
 * gets what it would get if it became active now.  @w_rem: the competing
 * remote READ flows' weights. */
static void share_rates(struct ctrl *c, size_t n, double w_rem, bool window_ended, bool entered)
{
	struct share_flow *sf = c->sf;
	double opb = ops_per_bit(c), w_act = 0, cap;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		struct flow *f = c->fp[i];
		double cb = c->share.c_bps ? (double)c->share.c_bps : 1;

		if (!competing(f))
			continue;
		sf[k] = (struct share_flow){
			.weight = f->weight,
			.granted = entered ? 0 : granted_bps(c, f) / cb,
			.used = used_bps(c, f) / cb,
			.bound = f->meas_bound,
			.queued = f->meas_queued,
			.batches = f->cls == FLOW_CLASS_THROUGHPUT,
			.satisfied = f->share_sat,
			.fill = f->share_fill,
			.sat_bps = f->share_sat_bps,
			.no_lend = f->share_no_lend,
			.boost = f->share_boost,
		};
		k++;
	}
	if (entered) {
		double sum = 0;

		for (size_t i = 0; i < n; i++)
			if (hungry_cls(c->fp[i]->cls))
				sum += used_bps(c, c->fp[i]);
		/* the more of what the flows moved together and MaxRate (flows
		 * that just started moved next to nothing: C would start at a
		 * crawl and climb a window at a time), else no cap to speak
		 * of: the first windows find it */
		uint64_t c0 = c->max_rate_bps ? c->max_rate_bps : SHARE_START_BPS;

		share_start(&c->share, sum > (double)c0 ? (uint64_t)sum : c0, sf, k);
	} else if (window_ended) {
		uint64_t c_old = c->share.c_bps;

		char line[256];
		int at = 0;

		share_update(&c->share, sf, k);
		/* per flow: used/granted, bound, queued, satisfied, not lending,
		 * new fraction, a throughput flow's boost */
		for (size_t j = 0; j < k && at >= 0 && (size_t)at < sizeof(line); j++)
			at += snprintf(line + at, sizeof(line) - (size_t)at,
				       " %.2f/%.2f b%.2f q%.2f%s%s>%.2f", sf[j].used, sf[j].granted,
				       sf[j].bound, sf[j].queued,
				       sf[j].satisfied ? "s" : "", sf[j].no_lend ? "n" : "", sf[j].frac);
		for (size_t j = 0, b = 0; j < k && at >= 0 && (size_t)at < sizeof(line); j++)
			if (sf[j].boost.x > 1)
				at += snprintf(line + at, sizeof(line) - (size_t)at, "%s%zu:x%.2f",
					       b++ ? " " : "; boost ", j, sf[j].boost.x);
		log_debug(LOG_SS_CTRL, "share window: C %llu -> %llu bit/s;%s",
			  (unsigned long long)c_old, (unsigned long long)c->share.c_bps, line);
	} else {
		/* between windows: keep each active flow's fraction */
		for (size_t j = 0; j < k; j++)
			sf[j].frac = sf[j].granted;
	}
	for (size_t j = 0; j < k; j++)
		w_act += sf[j].weight ? sf[j].weight : 1;
	cap = remote_share_rates(c, n, w_act, w_rem);
	k = 0;
	for (size_t i = 0; i < n; i++) {
		struct flow *f = c->fp[i];
		struct tokens_flow *t = &c->tf[i];
		double frac, w = f->weight ? f->weight : 1;

		if (!hungry_cls(f->cls))
			continue;
		if (competing(f)) {
			f->share_sat = sf[k].satisfied;
			f->share_fill = sf[k].fill;
			f->share_sat_bps = sf[k].sat_bps;
			f->share_no_lend = sf[k].no_lend;
			f->share_boost = sf[k].boost;
		}
		frac = competing(f) ? sf[k++].frac : 0;
		if (frac <= 0) /* not active, or new since the window: room to start */
			frac = w / (w_act + w);
		t->wait_ns = 0;
		t->rate_bps = 0;
		t->ops_per_s = 0;
		if (f->cls == FLOW_CLASS_THROUGHPUT)
			t->ops_per_s = (uint64_t)(frac * cap * opb) + 1;
		else
			t->rate_bps = (uint64_t)(frac * cap) + 1;
	}
}

/* PROTECT while latency flows are registered; else SHARE while two or more
 * flows compete on the port, OFF otherwise.  A change republishes every
 * slot's flags and chunk (flows.c), then the global header's mode_gen. */
void ctrlshare_set_pace_mode(struct ctrl *c, size_t n, uint32_t n_lat_all, uint64_t now,
			     bool window_ended)
{
	struct daemon *d = c->d;
	size_t n_comp = 0;
	double w_rem;
	int mode;
	bool entered;

	for (size_t i = 0; i < n; i++)
		if (competing(c->fp[i]))
			n_comp++;
	n_comp += remote_competing(c, n, &w_rem);
	if (n_comp >= 2)
		c->competed_ns = now;
	mode = n_lat_all ? JST_PACE_PROTECT : n_comp >= 2 ? JST_PACE_SHARE : JST_PACE_OFF;
	/* share -> off only after SHARE_LINGER_NS without competition: a
	 * flow pausing between two messages does not flip the mode */
	if (mode == JST_PACE_OFF && c->pace_mode == JST_PACE_SHARE &&
	    now - c->competed_ns < SHARE_LINGER_NS)
		mode = JST_PACE_SHARE;
	/* controller.pace_mode: the lowest mode the operator allows */
	if (d->cfg.controller.pace_mode == CONFIG_PACE_SHARE && mode == JST_PACE_OFF)
		mode = JST_PACE_SHARE;
	else if (d->cfg.controller.pace_mode == CONFIG_PACE_PROTECT)
		mode = JST_PACE_PROTECT;
	entered = mode != c->pace_mode;
	if (entered) {
		log_info("pace mode %s (%u latency flows, %zu competing flows)",
			 ctrl_pace_mode_name(mode), n_lat_all, n_comp);
		c->pace_mode = mode;
		d->flows.pace_mode = mode;
		flows_publish_all(&d->flows);
		c->mode_gen++;
	}
	if (mode == JST_PACE_OFF) {
		for (size_t i = 0; i < n + c->n_remote; i++)
			c->tf[i].rate_bps = c->tf[i].ops_per_s = c->tf[i].wait_ns = 0;
	} else if (mode == JST_PACE_SHARE) {
		share_rates(c, n, w_rem, window_ended, entered);
	}
}

const char *ctrl_pace_mode_name(int mode)
{
	switch (mode) {
	case JST_PACE_OFF: return "off";
	case JST_PACE_SHARE: return "share";
	case JST_PACE_PROTECT: return "protect";
	default: return "?";
	}
}

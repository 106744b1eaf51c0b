// SPDX-License-Identifier: MIT
/* The daemon's pace modes in the model (see sim_share.h). */
#include "sim_share.h"

#include <string.h>

#include "daemon/config.h"
#include "sim_util.h"

void sim_share_init(struct sim_share *s, uint32_t n, int min_mode, uint64_t max_rate_bps,
		    uint64_t token_bytes, uint64_t token_ops)
{
	memset(s, 0, sizeof(*s));
	s->mode = -1;
	s->min_mode = min_mode;
	s->max_rate_bps = max_rate_bps;
	s->ops_per_bit = token_bytes ? (double)token_ops / (8.0 * (double)token_bytes) : 0;
	s->sf = sim_zalloc((n + 1) * sizeof(*s->sf));
	s->b0 = sim_zalloc((n + 1) * sizeof(*s->b0));
	s->o0 = sim_zalloc((n + 1) * sizeof(*s->o0));
	s->w0 = sim_zalloc((n + 1) * sizeof(*s->w0));
	s->meas_bound = sim_zalloc((n + 1) * sizeof(*s->meas_bound));
	s->q0 = sim_zalloc((n + 1) * sizeof(*s->q0));
	s->meas_queued = sim_zalloc((n + 1) * sizeof(*s->meas_queued));
	s->meas_bps = sim_zalloc((n + 1) * sizeof(*s->meas_bps));
	s->meas_ops = sim_zalloc((n + 1) * sizeof(*s->meas_ops));
	s->sat = sim_zalloc((n + 1) * sizeof(*s->sat));
	s->fill = sim_zalloc((n + 1) * sizeof(*s->fill));
	s->sat_bps = sim_zalloc((n + 1) * sizeof(*s->sat_bps));
	s->no_lend = sim_zalloc((n + 1) * sizeof(*s->no_lend));
	s->boost = sim_zalloc((n + 1) * sizeof(*s->boost));
}

void sim_share_fini(struct sim_share *s)
{
	free(s->sf);
	free(s->b0);
	free(s->o0);
	free(s->w0);
	free(s->meas_bound);
	free(s->q0);
	free(s->meas_queued);
	free(s->meas_bps);
	free(s->meas_ops);
	free(s->sat);
	free(s->sat_bps);
	free(s->no_lend);
	free(s->boost);
	free(s->fill);
	memset(s, 0, sizeof(*s));
}

static bool hungry(uint8_t cls)
{
	return cls == FLOW_CLASS_BANDWIDTH || cls == FLOW_CLASS_THROUGHPUT;
}

/* Every SHARE_WINDOW_NS: what each flow moved over the window. */
static bool measure_window(struct sim_share *s, struct sim_flow **fl, uint32_t n, uint64_t now)
{
	uint64_t dt = now - s->win_t0;

	if (s->win_t0 && dt < SHARE_WINDOW_NS)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t w = sim_flow_token_wait(fl[i], now);
		uint32_t q = sim_flow_queued_us(fl[i]);

		if (s->win_t0) {
			s->meas_bound[i] = (double)(w - s->w0[i]) / (double)dt;
			s->meas_queued[i] = share_queued_fraction(q, s->q0[i], dt);
			s->meas_bps[i] = (uint64_t)((double)(fl[i]->tot_bytes - s->b0[i]) * 8e9 /
						    (double)dt);
			s->meas_ops[i] = (uint64_t)((double)(fl[i]->tot_msgs - s->o0[i]) * 1e9 /
						    (double)dt);
		}
		s->b0[i] = fl[i]->tot_bytes;
		s->o0[i] = fl[i]->tot_msgs;
		s->w0[i] = w;
		s->q0[i] = q;
	}
	s->win_t0 = now;
	return true;
}

/* As bit/s of the token stream. */
static double used_bps(const struct sim_share *s, uint8_t cls, uint32_t i)
{
	if (cls == FLOW_CLASS_THROUGHPUT)
		return s->ops_per_bit > 0 ? (double)s->meas_ops[i] / s->ops_per_bit : 0;
	return (double)s->meas_bps[i];
}

static double granted_bps(const struct sim_share *s, const struct sim_flow *f, uint8_t cls)
{
	if (cls == FLOW_CLASS_THROUGHPUT)
		return s->ops_per_bit > 0 ? (double)f->grant.ops_per_s / s->ops_per_bit : 0;
	return (double)f->grant.rate_bps;
}

/* The remote READ flows @tf[n..n+n_remote) that compete: how many, and
 * their weights in *@w (ctrlshare.c remote_competing). */
static uint32_t remote_competing(const struct tokens_flow *tf, uint32_t n, uint32_t n_remote,
				 double *w)
{
	uint32_t k = 0;

	*w = 0;
	for (uint32_t i = n; i < n + n_remote; i++)
		if (tf[i].active) {
			k++;
			*w += tf[i].weight ? tf[i].weight : 1;
		}
	return k;
}

/* SHARE: the remote READ flows' shares by weight next to the local
 * competing flows' (@w_loc) of MaxRate: nothing here measures what they
 * move, so C says nothing of them.  Returns the part of C left to the
 * local flows (ctrlshare.c remote_share_rates). */
static double remote_share_rates(struct sim_share *s, struct tokens_flow *tf, uint32_t n,
				 uint32_t n_remote, double w_loc)
{
	double w_rem, cap = (double)s->st.c_bps;
	double su = s->max_rate_bps ? (double)s->max_rate_bps : cap;

	remote_competing(tf, n, n_remote, &w_rem);
	for (uint32_t i = n; i < n + n_remote; i++) {
		struct tokens_flow *t = &tf[i];
		double w = t->weight ? t->weight : 1;

		t->ops_per_s = t->wait_ns = 0;
		t->rate_bps = (uint64_t)(su * w / (w_loc + w_rem + (t->active ? 0 : w))) + 1;
	}
	return w_rem > 0 && w_loc > 0 ? cap * w_loc / (w_loc + w_rem) : cap;
}

static void share_rates(struct sim_share *s, struct sim_flow **fl, const uint8_t *cls,
			struct tokens_flow *tf, uint32_t n, uint32_t n_remote, bool window_ended,
			bool entered)
{
	double w_act = 0, cap, cb = s->st.c_bps ? (double)s->st.c_bps : 1;
	size_t k = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (!hungry(cls[i]) || !tf[i].active)
			continue;
		s->sf[k++] = (struct share_flow){
			.weight = tf[i].weight,
			.granted = entered ? 0 : granted_bps(s, fl[i], cls[i]) / cb,
			.used = used_bps(s, cls[i], i) / cb,
			.bound = s->meas_bound[i],
			.queued = s->meas_queued[i],
			.batches = cls[i] == FLOW_CLASS_THROUGHPUT,
			.satisfied = s->sat[i],
			.fill = s->fill[i],
			.sat_bps = s->sat_bps[i],
			.no_lend = s->no_lend[i],
			.boost = s->boost[i],
		};
	}
	if (entered) {
		double sum = 0;

		for (uint32_t i = 0; i < n; i++)
			if (hungry(cls[i]))
				sum += used_bps(s, cls[i], i);
		uint64_t c0 = s->max_rate_bps ? s->max_rate_bps : SHARE_START_BPS;

		share_start(&s->st, sum > (double)c0 ? (uint64_t)sum : c0, s->sf, k);
	} else if (window_ended) {
		share_update(&s->st, s->sf, k);
	} else {
		for (size_t j = 0; j < k; j++)
			s->sf[j].frac = s->sf[j].granted;
	}
	for (size_t j = 0; j < k; j++)
		w_act += s->sf[j].weight ? s->sf[j].weight : 1;
	cap = remote_share_rates(s, tf, n, n_remote, w_act);
	k = 0;
	for (uint32_t i = 0; i < n; i++) {
		double frac, w = tf[i].weight ? tf[i].weight : 1;

		if (!hungry(cls[i]))
			continue;
		if (tf[i].active) {
			s->sat[i] = s->sf[k].satisfied;
			s->fill[i] = s->sf[k].fill;
			s->sat_bps[i] = s->sf[k].sat_bps;
			s->no_lend[i] = s->sf[k].no_lend;
			s->boost[i] = s->sf[k].boost;
		}
		frac = tf[i].active ? s->sf[k++].frac : 0;
		if (frac <= 0)
			frac = w / (w_act + w);
		tf[i].wait_ns = tf[i].rate_bps = tf[i].ops_per_s = 0;
		if (cls[i] == FLOW_CLASS_THROUGHPUT)
			tf[i].ops_per_s = (uint64_t)(frac * cap * s->ops_per_bit) + 1;
		else
			tf[i].rate_bps = (uint64_t)(frac * cap) + 1;
	}
}

int sim_share_step(struct sim_share *s, struct sim_flow **fl, const uint8_t *cls,
		   struct tokens_flow *tf, uint32_t n, uint32_t n_remote, uint32_t n_lat,
		   uint64_t now)
{
	bool window_ended = measure_window(s, fl, n, now), entered;
	uint32_t competing = 0;
	double w_rem;
	int mode;

	for (uint32_t i = 0; i < n; i++)
		if (hungry(cls[i]) && tf[i].active)
			competing++;
	competing += remote_competing(tf, n, n_remote, &w_rem);
	mode = n_lat ? JST_PACE_PROTECT : competing >= 2 ? JST_PACE_SHARE : JST_PACE_OFF;
	if (mode < s->min_mode)
		mode = s->min_mode;
	entered = mode != s->mode;
	if (entered) {
		s->mode = mode;
		s->mode_changes++;
	}
	if (mode == JST_PACE_OFF) {
		for (uint32_t i = 0; i < n + n_remote; i++)
			tf[i].rate_bps = tf[i].ops_per_s = tf[i].wait_ns = 0;
	} else if (mode == JST_PACE_SHARE) {
		share_rates(s, fl, cls, tf, n, n_remote, window_ended, entered);
	}
	return mode;
}

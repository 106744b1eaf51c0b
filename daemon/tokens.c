// SPDX-License-Identifier: MIT
/* The multi-resource token distributor (see tokens.h): each active flow's
 * share of the token stream, as bit/s or ops/s.
 * May call: config (its types), common/bucket; nothing else of the daemon. */
#include "tokens.h"

#include "bucket.h"
#include "config.h"
#include "shm_abi.h"

/* Flow i's share of the token stream is s_i = w_i / W over the active
 * resource-hungry flows (with one_per_app: app a gets W_a / W, where W_a is
 * the largest weight among its active flows, split among them by weight).
 * Tokens come at SafeUtil / (8 TokenBytes) per second, so
 *   bandwidth flow:  rate_bps  = SafeUtil * s_i
 *   throughput flow: ops_per_s = SafeUtil * TokenOps * s_i / (8 TokenBytes)
 * computed in 128 bits, rounded down (the sum never exceeds SafeUtil), and at
 * least 1 (0 would mean unpaced).  Flags as daemon/flows.c publishes them:
 * JST_F_PACE | JST_F_SPLIT for bandwidth flows, JST_F_PACE for throughput
 * flows; a rate of 0 (SafeUtil unknown) leaves them unpaced all the same. */

uint64_t tokens_tau_ns(uint64_t token_bytes, uint64_t safe_util_bps)
{
	return bucket_cost_ns(token_bytes, safe_util_bps);
}

uint64_t tokens_token_ops(uint64_t cfg_ops, uint64_t token_bytes, uint64_t max_rate_bps,
			  uint64_t max_ops)
{
	unsigned __int128 ops;

	if (cfg_ops)
		return cfg_ops;
	if (max_ops && max_rate_bps)
		ops = (unsigned __int128)token_bytes * 8u * max_ops / max_rate_bps;
	else
		ops = token_bytes / 64;
	if (ops > UINT64_MAX)
		return UINT64_MAX;
	return ops ? (uint64_t)ops : 1;
}

static bool hungry(const struct tokens_flow *f)
{
	return f->cls == FLOW_CLASS_BANDWIDTH || f->cls == FLOW_CLASS_THROUGHPUT;
}

static uint64_t weight(const struct tokens_flow *f)
{
	return f->weight ? f->weight : 1;
}

/* One flow's rate for a share num/den of the token stream. */
static void grant(struct tokens_flow *f, const struct tokens_params *p, unsigned __int128 num,
		  unsigned __int128 den)
{
	unsigned __int128 v;

	if (f->cls == FLOW_CLASS_BANDWIDTH) {
		if (!p->safe_util_bps || !den)
			return;
		v = (unsigned __int128)p->safe_util_bps * num / den;
		f->rate_bps = v > UINT64_MAX ? UINT64_MAX : v ? (uint64_t)v : 1;
		v = (unsigned __int128)bucket_cost_ns(p->chunk_bytes, f->rate_bps) *
		    p->alpha_permille / 1000;
		f->wait_ns = (uint64_t)v;
		return;
	}
	if (!p->safe_util_bps || !den || !p->token_bytes)
		return;
	v = (unsigned __int128)p->safe_util_bps * p->token_ops * num / (den * 8u * p->token_bytes);
	f->ops_per_s = v > UINT64_MAX ? UINT64_MAX : v ? (uint64_t)v : 1;
	f->wait_ns = (uint64_t)((unsigned __int128)bucket_cost_ops_ns(1, f->ops_per_s) *
				p->alpha_permille / 1000);
}

/* Without one_per_app a flow's grant depends only on its class, weight and
 * activity: compute it once per such triple (the 128-bit divisions are the
 * cost of a step with many flows).  An epoch marks the valid entries, so
 * nothing is cleared per call; the daemon is single-threaded. */
#define CACHE_WEIGHTS 1001

static struct grant_cache {
	uint64_t epoch;
	uint64_t rate_bps, ops_per_s, wait_ns;
} cache[2][2][CACHE_WEIGHTS];
static uint64_t cache_epoch;

static void distribute_flows(struct tokens_flow *f, size_t n, const struct tokens_params *p)
{
	uint64_t W = 0;

	cache_epoch++;
	for (size_t i = 0; i < n; i++)
		if (hungry(&f[i]) && f[i].active)
			W += weight(&f[i]);
	for (size_t i = 0; i < n; i++) {
		uint64_t w = weight(&f[i]);
		struct grant_cache *g;

		if (!hungry(&f[i]))
			continue;
		g = w < CACHE_WEIGHTS
			    ? &cache[f[i].cls == FLOW_CLASS_BANDWIDTH][f[i].active][w]
			    : NULL;
		if (g && g->epoch == cache_epoch) {
			f[i].rate_bps = g->rate_bps;
			f[i].ops_per_s = g->ops_per_s;
			f[i].wait_ns = g->wait_ns;
			continue;
		}
		grant(&f[i], p, w, f[i].active ? W : W + w);
		if (g)
			*g = (struct grant_cache){ .epoch = cache_epoch, .rate_bps = f[i].rate_bps,
						   .ops_per_s = f[i].ops_per_s,
						   .wait_ns = f[i].wait_ns };
	}
}

/* one_per_app: W = sum over active apps of W_a (the app's largest active
 * weight); flow i of app a gets (W_a / W) * (w_i / S_a), S_a the sum of its
 * active flows' weights.  An inactive flow gets what it would get if it
 * became active alone. */
static void distribute_apps(struct tokens_flow *f, size_t n, const struct tokens_params *p)
{
	uint64_t W = 0;
	size_t i, j, end;

	for (i = 0; i < n; i = end) {
		uint64_t wa = 0;

		for (end = i; end < n && f[end].app == f[i].app; end++)
			if (hungry(&f[end]) && f[end].active && weight(&f[end]) > wa)
				wa = weight(&f[end]);
		W += wa;
	}
	for (i = 0; i < n; i = end) {
		uint64_t wa = 0, sa = 0;

		for (end = i; end < n && f[end].app == f[i].app; end++) {
			if (!hungry(&f[end]) || !f[end].active)
				continue;
			if (weight(&f[end]) > wa)
				wa = weight(&f[end]);
			sa += weight(&f[end]);
		}
		for (j = i; j < end; j++) {
			uint64_t w = weight(&f[j]);

			if (!hungry(&f[j]))
				continue;
			if (f[j].active)
				grant(&f[j], p, (unsigned __int128)wa * w,
				      (unsigned __int128)W * sa);
			else if (wa) /* joins an active app */
				grant(&f[j], p, (unsigned __int128)(w > wa ? w : wa) * w,
				      (unsigned __int128)(W - wa + (w > wa ? w : wa)) * (sa + w));
			else /* a new app */
				grant(&f[j], p, w, W + w);
		}
	}
}

void tokens_distribute(struct tokens_flow *f, size_t n, const struct tokens_params *p)
{
	for (size_t i = 0; i < n; i++) {
		f[i].rate_bps = 0;
		f[i].ops_per_s = 0;
		f[i].wait_ns = 0;
	}
	if (p->one_per_app)
		distribute_apps(f, n, p);
	else
		distribute_flows(f, n, p);
}

/* SPDX-License-Identifier: MIT */
/* The multi-resource token distributor (Justitia §4.2, Appendix D).
 *
 * Tokens are minted at one per tau = TokenBytes / SafeUtil; each carries
 * TokenBytes (spent by a bandwidth flow) or TokenOps (spent by a throughput
 * flow).  They go weighted-round-robin to the active resource-hungry flows.
 * Nothing mints them one by one: the distributor computes each flow's share
 * of the token stream as a rate - bytes/s for bandwidth flows, ops/s for
 * throughput flows - which the daemon publishes in the flow's shared-memory
 * slot, and the shim enforces it with a virtual-time bucket of its own
 * (common/bucket.h).  Over any interval longer than a few tau this is the
 * same allocation weighted round robin gives, without a thread per token.
 *
 * A flow that is registered but not active gets the rate it would get if it
 * became active now (its weight added to the active ones), so that it is
 * paced from its first post; the others are rebalanced at the next period.
 * Latency flows are never paced.  Pure functions, no I/O. */
#ifndef JUSTITIAD_TOKENS_H
#define JUSTITIAD_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tokens_flow {
	/* in */
	uint32_t weight;              /* 1..1000 (0 is taken as 1) */
	uint32_t app;                 /* flows of one app are contiguous */
	uint8_t cls;                  /* enum flow_class */
	bool active;
	/* out */
	uint64_t rate_bps;            /* bandwidth flows; 0 = unpaced */
	uint64_t ops_per_s;           /* throughput flows; 0 = unpaced */
	uint64_t wait_ns;             /* Appendix D hint between chunks / ops */
	/* (a flow's flags and chunk are flows.c's: published on registration,
	 * update, and when latency flows come and go) */
};

struct tokens_params {
	uint64_t safe_util_bps;       /* 0: nothing is paced */
	uint64_t token_bytes;
	uint64_t token_ops;
	uint32_t chunk_bytes;         /* current split size */
	uint32_t alpha_permille;      /* Appendix D: wait = alpha * chunk / rate */
	bool one_per_app;             /* an app's flows share one logical flow's tokens */
};

/* tau = TokenBytes / SafeUtil in ns (0 when SafeUtil is 0). */
uint64_t tokens_tau_ns(uint64_t token_bytes, uint64_t safe_util_bps);
/* TokenOps: @cfg_ops if set; else TokenBytes * max_ops / MaxRate (the ops a
 * token's time buys at the NIC's message rate), or, when max_ops is unknown,
 * TokenBytes / 64 (one op per minimum-size message).  At least 1. */
uint64_t tokens_token_ops(uint64_t cfg_ops, uint64_t token_bytes, uint64_t max_rate_bps,
			  uint64_t max_ops);
/* Fill the out fields of every flow. */
void tokens_distribute(struct tokens_flow *f, size_t n, const struct tokens_params *p);

#endif

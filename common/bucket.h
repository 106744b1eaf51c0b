/* SPDX-License-Identifier: MIT */
/* A lock-free virtual-time token bucket (FreeFlow style): the shim takes
 * from it (pace.c), the daemon uses its cost functions for tau and the wait
 * hints (tokens.c).
 *
 * The whole state is one 64-bit "virtual time" in shared memory
 * (struct jst_flow_stats.bucket_vtime_ns): the instant (CLOCK_MONOTONIC ns)
 * up to which the flow's granted rate has been spent.  A cost (the ns its
 * bytes or ops take at the granted rate, bucket_cost_ns()) may be taken when
 * the bucket holds that much credit, i.e. when vtime + cost <= now; the
 * taker then moves vtime forward by the cost with a compare-and-swap.  So
 * concurrent takers (threads of one process) never take more than the rate
 * allows, and nobody mints tokens: no thread runs for the bucket.
 *
 * Credit: a quiet flow banks at most max(burst, cost) ns of credit (vtime is
 * never allowed to lag now by more), so one cost larger than the burst is
 * still taken, once enough credit has accumulated.  bucket_take() never
 * moves vtime ahead of now: it makes no debt, so when the daemon raises a
 * flow's rate the next take is charged at the new rate at once.  (A caller
 * that charges work already done, as pace.c does for what went to the
 * provider directly, may move it ahead; later takes then wait the debt off.)  Over any interval
 * [t0, t1] the costs taken add up to at most (t1 - t0) + max(burst, cost).
 *
 * The daemon publishes the rates (struct jst_flow_ctl.rate_bps for
 * bandwidth flows, ops_per_s for throughput flows; 0 = unpaced). */
#ifndef JUSTITIA_BUCKET_H
#define JUSTITIA_BUCKET_H

#include <stdatomic.h>
#include <stdint.h>

#define BUCKET_NS_PER_S 1000000000u

/* ns that @bytes take at @rate_bps (rounded up, saturated at UINT64_MAX);
 * 0 when unpaced (rate 0).  Exact for every byte count and every rate from
 * 1 bit/s: computed in 128 bits. */
static inline uint64_t bucket_cost_ns(uint64_t bytes, uint64_t rate_bps)
{
	unsigned __int128 ns;

	if (!rate_bps)
		return 0;
	ns = (unsigned __int128)bytes * 8u * BUCKET_NS_PER_S;
	ns = (ns + rate_bps - 1) / rate_bps;
	return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

/* ns that @ops operations take at @ops_per_s (rounded up, saturated); 0 when
 * unpaced. */
static inline uint64_t bucket_cost_ops_ns(uint64_t ops, uint64_t ops_per_s)
{
	unsigned __int128 ns;

	if (!ops_per_s)
		return 0;
	ns = (unsigned __int128)ops * BUCKET_NS_PER_S;
	ns = (ns + ops_per_s - 1) / ops_per_s;
	return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

/* The most credit a take of @cost_ns finds banked: @burst_ns, or the cost
 * itself when that is larger (one cost is always takeable). */
static inline uint64_t bucket_bank_ns(uint64_t cost_ns, uint64_t burst_ns)
{
	return burst_ns > cost_ns ? burst_ns : cost_ns;
}

/* Take @cost_ns at @now_ns.  Returns 0 when the cost was taken, else the ns
 * to wait until it can be (at the current rate; nothing was taken).  A cost
 * of 0 (unpaced) is always taken and leaves the bucket alone.  Initialise
 * vtime to 0: a new bucket is full. */
static inline uint64_t bucket_take(_Atomic uint64_t *vtime, uint64_t now_ns, uint64_t cost_ns,
				   uint64_t burst_ns)
{
	uint64_t cap = bucket_bank_ns(cost_ns, burst_ns);
	uint64_t lo = now_ns > cap ? now_ns - cap : 0;
	uint64_t v, base, due;

	if (!cost_ns)
		return 0;
	v = atomic_load_explicit(vtime, memory_order_relaxed);
	for (;;) {
		base = v > lo ? v : lo;
		due = base + cost_ns < base ? UINT64_MAX : base + cost_ns;
		if (due > now_ns)
			return due - now_ns;
		if (atomic_compare_exchange_weak_explicit(vtime, &v, due, memory_order_acq_rel,
							  memory_order_relaxed))
			return 0;
	}
}

#endif

/* SPDX-License-Identifier: MIT */
/* A lock-free virtual-time token bucket (FreeFlow style).
 *
 * The whole state is one 64-bit "virtual time" in shared memory: the
 * instant (CLOCK_MONOTONIC ns) at which everything taken so far has been
 * paid for at the granted rate.  Taking a cost is allowed when that instant
 * is not in the future; the taker then moves it forward by the cost with a
 * compare-and-swap, so concurrent takers (threads of one process) never
 * take more than the rate allows, and nobody has to mint tokens: no thread
 * runs for the bucket.  A quiet flow may bank at most @burst_ns of credit.
 * A single cost larger than the burst is allowed when the bucket is not in
 * debt and leaves it in debt: large messages go whole, then wait. */
#ifndef JUSTITIA_BUCKET_H
#define JUSTITIA_BUCKET_H

#include <stdatomic.h>
#include <stdint.h>

/* ns that @bytes take at @rate_bps; 0 when unpaced (rate 0).  Exact for any
 * byte count up to 2^64 and any rate from 1 bit/s: computed in 128 bits and
 * saturated. */
static inline uint64_t bucket_cost_ns(uint64_t bytes, uint64_t rate_bps)
{
	unsigned __int128 ns;

	if (!rate_bps)
		return 0;
	ns = (unsigned __int128)bytes * 8u * 1000000000u;
	ns = (ns + rate_bps - 1) / rate_bps;
	return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

/* Take @cost_ns at @now_ns.  Returns 0 when taken, else the ns until the
 * bucket is out of debt (nothing taken). */
static inline uint64_t bucket_take(_Atomic uint64_t *vtime, uint64_t now_ns, uint64_t cost_ns,
				   uint64_t burst_ns)
{
	uint64_t v = atomic_load_explicit(vtime, memory_order_relaxed);

	for (;;) {
		uint64_t floor = now_ns > burst_ns ? now_ns - burst_ns : 0;
		uint64_t base, nv;

		if (v > now_ns)
			return v - now_ns;
		base = v < floor ? floor : v;
		nv = base + cost_ns < base ? UINT64_MAX : base + cost_ns;
		if (atomic_compare_exchange_weak_explicit(vtime, &v, nv, memory_order_acq_rel,
							  memory_order_relaxed))
			return 0;
	}
}

#endif

/* SPDX-License-Identifier: MIT */
/* Work-conserving shares among competing flows when no latency flow needs
 * protecting (pace mode SHARE, common/shm_abi.h).
 *
 * With L = 0 the paper sets SafeUtil = MaxRate, but a configured or
 * calibrated MaxRate below what the link really carries then caps every
 * flow although nobody is protected.  So in SHARE mode the token stream's
 * rate is not MaxRate but C, an estimate of what the competing flows can
 * really move together, and each flow's share of it is max-min fair by
 * weight over what the flows really use:
 *
 *  - every window (SHARE_WINDOW_NS) each flow's use u = achieved / granted
 *    is measured (bytes for bandwidth flows, ops for throughput flows);
 *  - a flow using less than SHARE_SATISFIED of its grant is limited by
 *    itself: it keeps what it uses plus SHARE_HEADROOM, and what it leaves
 *    goes to the others (work conservation);
 *  - when every other flow uses at least SHARE_BINDING of its grant, the
 *    grants hold the flows back and the link may carry more: after
 *    SHARE_HOLD windows C probes upwards (SHARE_PROBE, then faster while
 *    the flows keep absorbing it);
 *  - when they do not (a probe the link could not carry, or the link got
 *    slower), C becomes what the flows really moved, so that the grants,
 *    not the NIC's own arbitration, decide the split: the paper's fairness
 *    between message sizes.  Uses measured during a probe the link could
 *    not carry are the NIC's split, not the flows' demand: nobody is judged
 *    satisfied from them.
 *
 * Pure functions, no I/O, unit-tested in tests/unit/test_share.c. */
#ifndef JUSTITIAD_SHARE_H
#define JUSTITIAD_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHARE_WINDOW_NS 250000000ull   /* measure and adapt every 250 ms */
#define SHARE_SATISFIED 0.8            /* below: limited by the application
                                        * (> 1 / SHARE_HEADROOM) */
#define SHARE_BINDING 0.9              /* at least: limited by its grant */
#define SHARE_PROBE 1.1                /* C's first step up */
#define SHARE_PROBE_MORE 1.25          /* ... and the next ones, while absorbed */
#define SHARE_HOLD 8                   /* windows between probes */
#define SHARE_HEADROOM 1.5             /* a satisfied flow's room to grow */
#define SHARE_MIN_BPS 1000000ull       /* C never drops below 1 Mbit/s */

struct share_flow {
	/* in */
	uint32_t weight;        /* 0 is taken as 1 */
	double granted;         /* fraction of C granted last window (0: new) */
	double used;            /* fraction of C it used last window */
	/* out */
	double frac;            /* fraction of the new C granted */
};

struct share_state {
	uint64_t c_bps;         /* C: what the flows share */
	unsigned hold;          /* windows left before the next probe */
	bool probing;           /* the last window ran on a probe */
};

/* Start from @c_bps (what the flows moved so far, or MaxRate). */
void share_start(struct share_state *st, uint64_t c_bps, struct share_flow *f, size_t n);
/* A window ended with the flows' use of st->c_bps in @f: adapt C and set
 * every f[i].frac, a fraction of the new C (they add up to at most 1). */
void share_update(struct share_state *st, struct share_flow *f, size_t n);
/* Weighted max-min fair fractions of @c_new_bps given last window's use
 * (measured against @c_old_bps); @judge: whether a flow using little may
 * be judged satisfied. */
void share_split(struct share_flow *f, size_t n, uint64_t c_old_bps, uint64_t c_new_bps,
		 bool judge);

#endif

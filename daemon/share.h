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
 *  - every window (SHARE_WINDOW_NS) each flow's fill = achieved / granted
 *    is measured (bytes for bandwidth flows, ops for throughput flows) and
 *    averaged with the windows before while C stays (a window counts a
 *    few large messages: one more or less is 10-20%), and so is how much
 *    of the window its posted work waited for tokens (the shim counts it:
 *    jst_flow_stats.token_wait_ns).  A flow that filled SHARE_BINDING of
 *    its grant, or waited for tokens SHARE_BOUND of the window, is held
 *    back by its grant.  (On a NIC that does its work in the post call,
 *    Soft-RoCE, a flow paced near the link's rate waits for tokens only
 *    a little of the time: the fill says it.);
 *  - a flow using less than SHARE_SATISFIED of its grant while the link
 *    had room (the flows moved less than SHARE_FULL of C) is limited by
 *    itself, and stays judged so while it keeps using less than that: it
 *    is charged what it uses and granted that plus SHARE_HEADROOM (never
 *    more than its fair share), and what it leaves goes to the others
 *    (work conservation).  On a full link a flow using little may just
 *    be losing the NIC's arbitration (1 MiB WQEs against 64 KiB ones):
 *    it is not judged then.  Nor is a flow whose work was queued (in the
 *    shim's backlog or the NIC's send queue: jst_flow_stats.queued_us)
 *    SHARE_QUEUED of the window: it would have moved more, and what it
 *    moved is the NIC's split, whatever C says (a C far above the link,
 *    after a probe or at the start, made the link look roomy: both of two
 *    greedy flows used under SHARE_SATISFIED of their grants, were judged
 *    limited by themselves, and the NIC's split stood).  A throughput
 *    flow's batches are queued by design, one per round trip: this is
 *    said of them only while they use SHARE_BATCH_LENDS of their grant or
 *    more (one far below it, a few percent at line rate, lends what it
 *    leaves; on Soft-RoCE a 64 B flow next to an elephant used 50-75% of
 *    its grant, was judged limited by itself, lent, and then moved a third
 *    of that while the elephant filled the link);
 *  - a flow judged satisfied whose use then falls below SHARE_LENT_DROP of
 *    what it used when judged was not limited by itself but by the
 *    others' share: batches of small messages (a throughput flow) move
 *    one batch per round trip, and the round trip is the queue the
 *    others' work builds in the NIC once they get what it left.  It gets
 *    its fair share back at once and is not judged satisfied again for
 *    SHARE_NO_LEND windows, during which C does not grow unless it
 *    fills its grant again (the RNIC model's tput-elephant over 1 s: the
 *    64 B flow fell from 4.86 to 2.14 Mmsg/s, lending and taking back its
 *    share every third window);
 *  - when the other flows are all held back by their grants, the link may
 *    carry more: after SHARE_HOLD windows C probes upwards (SHARE_PROBE,
 *    then faster while the flows keep absorbing it);
 *  - a bandwidth flow below its grant whose work was not queued
 *    SHARE_QUEUED of the window was held back by its application this
 *    window (on Soft-RoCE the guest's scheduler starves one process for a
 *    while: one such window cut C by a quarter, and C ratcheted down to
 *    half the link): it says nothing of C.  Nor does a throughput flow
 *    that filled SHARE_SATISFIED (not SHARE_BINDING) of its grant without
 *    waiting for tokens: a batch per round trip, its round trip held it
 *    (on Soft-RoCE a 64 B flow filled 85-95% of its grant, each window
 *    under 90% cut C, and C fell from MaxRate to two thirds of it while
 *    the link carried 1.4 MaxRate of the two flows' mix).  C then probes
 *    while the others are bound, until the batches fill less than
 *    SHARE_SATISFIED (the others' queue in the NIC stretches their round
 *    trip) or the others no longer fill theirs;
 *  - when they are not (a probe the link could not carry, or the link got
 *    slower: their work waits in the NIC's queue, not for tokens), C comes
 *    down to what the flows really moved, never more, so that the grants,
 *    not the NIC's own arbitration, decide the split: the paper's fairness
 *    between message sizes.  At most by SHARE_DECAY a window (unless they
 *    moved less than SHARE_FAR of C: C was far above the link, at the
 *    start, say): a window counts a few large messages, and one counted
 *    short must not cost the link its rate (C ratcheting down below the
 *    link while every flow waits for tokens).  Uses measured during a
 *    probe the link could not carry are the NIC's split, not the flows'
 *    demand: nobody is judged satisfied from them.  Nor does C fall
 *    below what the flows moved before that probe, in the last window
 *    every hungry one filled its grant (at most that window's C): the
 *    link carried that, and what the probe's window moved is the NIC's
 *    split of a C too large (on Soft-RoCE a probe from 276 to 304 Mbit/s that a 64 B flow
 *    next to an elephant could not follow took C to 228, where both
 *    filled their grants through the hold's 2 s).
 *  - a throughput flow next to bandwidth flows, not judged limited by
 *    itself, is granted all of C: its share and a boost on top.  Its
 *    batches' round trip bounds it, not the grant: a grant near what they
 *    use binds a batch now and then, and the waits add to the round trip
 *    (on Soft-RoCE, next to a 1 MiB elephant, a 64 B flow whose boost grew
 *    SHARE_BOOST_STEP a window while it used SHARE_SATISFIED of the raised
 *    grant churned between x1.15 and x2 and did 0.79 of its plain rate;
 *    with all of C, 0.99 in the same boot, and the elephant more too;
 *    1.43 in another).  A window in which a bandwidth flow misses its
 *    grant steps the boost down by SHARE_BOOST_STEP; while they all fill
 *    theirs it is raised by that a window again, and a raise after which
 *    one misses its grant is undone and not tried again for SHARE_HOLD
 *    windows.  With no bandwidth
 *    flow competing, throughput flows get their fair shares.  The others
 *    keep their shares of C (the paper's sharing incentive: each
 *    flow at least 1/n of its dominant resource); the boost is what the
 *    link carries on top, the paper's "then maximise utilisation" for the
 *    flows that care about messages per second.  C's own probes raise
 *    every grant, and on Soft-RoCE, where bytes and operations are not one
 *    resource, a larger elephant grant stretches the 64 B flow's round
 *    trip and the probe fails: C settled near MaxRate and the 64 B flow,
 *    at its half of it, kept 0.79 of its plain rate next to the elephant.
 *    Only throughput flows are boosted: two bandwidth flows stay equal.
 *
 * Pure functions, no I/O, unit-tested in tests/unit/test_share.c. */
#ifndef JUSTITIAD_SHARE_H
#define JUSTITIAD_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHARE_WINDOW_NS 250000000ull   /* measure and adapt every 250 ms */
#define SHARE_LINGER_NS 1000000000ull  /* share -> off after 1 s alone */
#define SHARE_SATISFIED 0.8            /* below: limited by the application
                                        * (> 1 / SHARE_HEADROOM) */
#define SHARE_BINDING 0.9              /* filled this much of its grant, or */
#define SHARE_BOUND 0.5                /* waited for tokens this much of a window:
                                        * limited by the grant */
#define SHARE_DECAY 0.75               /* C's largest step down in a window ... */
#define SHARE_FAR 0.5                  /* ... unless they moved less than this:
                                        * C was far above the link */
#define SHARE_FULL 0.95                /* the flows moved this much of C: full */
#define SHARE_PROBE 1.1                /* C's first step up */
#define SHARE_PROBE_MORE 1.25          /* ... and the next ones, while absorbed */
#define SHARE_HOLD 8                   /* windows between probes */
#define SHARE_LENT_DROP 0.5            /* a satisfied flow now using less than
                                        * this of what it used when judged ... */
#define SHARE_NO_LEND 16               /* ... keeps its fair share this many
                                        * windows */
#define SHARE_QUEUED 0.9               /* work queued this much of a window:
                                        * not limited by itself */
#define SHARE_BATCH_LENDS 0.5          /* ... batches, unless they used less
                                        * than this of their grant */
#define SHARE_HEADROOM 1.5             /* a satisfied flow's room to grow */
#define SHARE_BOOST_STEP 1.15          /* a throughput flow's boost's step,
                                        * a window */
#define SHARE_BOOST_ALL 1e9            /* its boost at the start: all of C */
#define SHARE_MIN_BPS 1000000ull       /* C never drops below 1 Mbit/s */
#define SHARE_START_BPS 400000000000ull /* nothing known: 400 Gbit/s */

/* A throughput flow's grant above its fair share (share.h). */
struct share_boost {
	double x;               /* its fair fraction times this (>= 1) */
	double from;            /* while a raise is tried: x before it */
	uint32_t hold;          /* windows before the next raise */
	bool trying;            /* the last window ran on a raise */
};

struct share_flow {
	/* in */
	uint32_t weight;        /* 0 is taken as 1 */
	double granted;         /* fraction of C granted last window (0: new) */
	double used;            /* fraction of C it used last window */
	double bound;           /* fraction of the window it waited for tokens */
	double queued;          /* ... its work was queued (shim or NIC) */
	bool batches;           /* a throughput flow: its work is queued by
				 * design (a batch per round trip) */
	/* in and out: kept by the caller from one window to the next */
	bool satisfied;         /* judged limited by itself */
	double fill;            /* used / granted, averaged while C stays */
	double sat_bps;         /* what it used when judged so, bit/s of C */
	uint32_t no_lend;       /* windows before it may be judged so again */
	struct share_boost boost; /* a throughput flow's, above its share */
	/* out */
	double frac;            /* fraction of the new C granted */
};

struct share_state {
	uint64_t c_bps;         /* C: what the flows share */
	unsigned hold;          /* windows left before the next probe */
	bool probing;           /* the last window ran on a probe */
	uint64_t c_base_bps;    /* while probing: what the flows moved in the
				 * last window every hungry one filled its
				 * grant (at most that window's C) */
	bool moved_c;           /* the last update changed C: fills start over */
};

/* The fraction of a window of @dt_ns during which a flow's work was queued,
 * from the shim's queued_us (wrapping, untrusted) at its end and start: at
 * most 1. */
double share_queued_fraction(uint32_t end_us, uint32_t start_us, uint64_t dt_ns);
/* Start from @c_bps (what the flows moved so far, or MaxRate). */
void share_start(struct share_state *st, uint64_t c_bps, struct share_flow *f, size_t n);
/* A window ended with the flows' use of st->c_bps in @f: adapt C and set
 * every f[i].frac, a fraction of the new C (they add up to at most 1 plus
 * the headroom of satisfied flows and the boosts of throughput flows). */
void share_update(struct share_state *st, struct share_flow *f, size_t n);
/* Weighted max-min fair fractions of @c_new_bps given last window's use
 * (measured against @c_old_bps) and who is satisfied; a boosted
 * throughput flow's times its boost, at most 1. */
void share_split(struct share_flow *f, size_t n, uint64_t c_old_bps, uint64_t c_new_bps);

#endif

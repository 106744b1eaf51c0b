/* SPDX-License-Identifier: MIT */
/* JUSTITIA_CLASS=auto: classify a QP from what it posts.
 *
 * Over a window of CLASSIFY_WINDOW post calls the shim looks at two things:
 * the mean message size, and how often the application posts while it
 * already has work in flight (several WRs in one call, or WRs posted before
 * the last signaled WR whose completion it polled).  An application that
 * posts one message at a time unsignaled (selective signaling) looks
 * pipelined.
 *   mean >= CLASSIFY_BW_BYTES          -> bandwidth
 *   else in flight in >= half the calls -> throughput (small, pipelined)
 *   else                                -> latency (small, one at a time)
 * A QP changes class after CLASSIFY_STREAK windows agree on a new one.  The
 * first window that agrees with the class the QP already has is logged once
 * ("posts like a X flow: class kept"), so a log shows the QP was judged.  The
 * post path only counts; the verdict goes to the daemon from the progress
 * thread's tick (never block a post).  Only QPs whose class nobody else
 * decided (no justitia_set_qp_class(), no apps rule in the daemon's
 * configuration) are classified.  A QP starts as bandwidth, the paper's
 * default, so it has a split QP from the start if it turns out to be one. */
#ifndef JUSTITIA_SHIM_CLASSIFY_H
#define JUSTITIA_SHIM_CLASSIFY_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdint.h>

#define CLASSIFY_WINDOW 64
#define CLASSIFY_BW_BYTES 16384
#define CLASSIFY_STREAK 2

#define CLASSIFY_KEPT 0x100 /* in verdict: the class was confirmed, not changed */

#define CLASSIFY_RING 256   /* signaled WRs in flight that we follow */

struct classify_state {
	_Atomic int on;           /* this QP is classified by the shim */
	uint32_t calls, wrs, busy;
	uint64_t bytes;
	/* WRs in flight: a signaled WR's completion means every WR posted
	 * before it is done too */
	uint64_t posted;          /* WRs posted */
	uint64_t done_upto;       /* WRs known to be done */
	uint64_t cqes_seen;       /* send completions accounted for */
	uint64_t ring[CLASSIFY_RING]; /* posted-count at each signaled WR */
	unsigned ring_head, ring_len;
	int candidate, streak;
	int kept;                 /* a window confirmed the QP's class */
	_Atomic int verdict;      /* class to report to the daemon (| CLASSIFY_KEPT:
				   * only to log), or -1 */
	int sq_sig_all;
};

/* Set when JUSTITIA_CLASS=auto. */
extern int shim_classify_auto;

/* One post call on a QP of class @cur (WR list @wr, the provider took
 * those before @bad); @cqes: its send completions polled so far. */
void shim_classify_post(struct classify_state *c, uint64_t cqes, int cur,
			const struct ibv_send_wr *wr, const struct ibv_send_wr *bad);
/* Called on the progress thread's tick: take the verdict of QP @qp_num
 * (logged).  Returns the class to report to the daemon (the caller does:
 * that may block), or -1. */
int shim_classify_tick(struct classify_state *c, uint32_t qp_num);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * justbench named modes (--mode, docs/justbench.1, MODES): what a run measures besides its
 * flows, what it requires of them, and the flows it runs when none are given.
 *
 *	flows		the flows as given (the default)
 *	poll-cost	the cost of checking for completion: every ibv_poll_cq call of each latency
 *			flow is timed, on an empty CQ and when it returns the completion
 *			(bench_pollcost.h)
 *	bidir		both directions at once: the server runs every flow towards the client on
 *			the same QPs while the client runs it towards the server
 *	reuse		buffer reuse: a point per reuse percentage (and per buffers in rotation)
 *	overhead	host overhead: CPU per message of a latency flow's post and polls; a
 *			bandwidth flow's rate against computation between its posts
 *	overlap		computation/communication overlap of a latency flow
 *	progress	fetch latency from a loaded remote process: READ against a SEND request
 *			answered by the server between slices of computation (bench_progress.h)
 *			(the last four sweep: bench_sweep.h)
 */
#ifndef JUSTITIA_BENCH_MODE_H
#define JUSTITIA_BENCH_MODE_H

#include "bench_flow.h"

enum bench_mode {
	BENCH_MODE_FLOWS,
	BENCH_MODE_POLL_COST,
	BENCH_MODE_BIDIR,
	BENCH_MODE_REUSE,
	BENCH_MODE_OVERHEAD,
	BENCH_MODE_OVERLAP,
	BENCH_MODE_PROGRESS,
	BENCH_MODE_MAX
};

const char *bench_mode_name(enum bench_mode m); /* "flows", "poll-cost", "bidir", "reuse", ... */
int bench_mode_parse(const char *s, enum bench_mode *out);

/*
 * The flows of mode m when the command line gives none, each of duration_us: poll-cost one
 * latency WRITE of 8 bytes; bidir a latency WRITE of 8 bytes, then (delayed by duration_us) a
 * bandwidth WRITE of 64 KiB; reuse a latency WRITE of 64 bytes, then a bandwidth WRITE of 64 KiB;
 * overhead a latency WRITE of 8 bytes, then a bandwidth WRITE of 256 KiB; overlap a latency
 * WRITE of 1 KiB; progress a latency READ of 1 KiB ("read"), then (delayed by duration_us) a
 * latency SEND of 1 KiB ("send": a request answered with 1 KiB).  Writes at most max flows; returns how many (0 for flows: the user
 * must give them).
 */
size_t bench_mode_defaults(enum bench_mode m, uint64_t duration_us, struct bench_flow *flows,
			   size_t max);

/*
 * Whether flow f may run in mode m (with --rperf when rperf): poll-cost takes busy-polling
 * latency flows and no rperf; bidir takes WRITE and READ flows (the client keeps no receives
 * posted); reuse, overhead and overlap take busy-polling flows of batch 1 and no rperf,
 * overlap only latency flows; progress busy-polling latency flows of verb READ or SEND and no
 * rperf.  -EINVAL with "KEY: what is wrong" in err.
 */
int bench_mode_check(enum bench_mode m, bool rperf, const struct bench_flow *f, char *err,
		     size_t errlen);

#endif

/* SPDX-License-Identifier: MIT */
/* Draining the backlog of one QP: post what its tokens allow, behind an
 * ordering barrier before a split message's first chunk, a window of split
 * chunks at a time, and say when to look again.  Everything here is called
 * with q->lock held, from the post path, the application's polls or the
 * progress thread. */
#ifndef JUSTITIA_SHIM_DRAIN_H
#define JUSTITIA_SHIM_DRAIN_H

#include <stdint.h>

#include "registry.h"

/* Post what the tokens allow.  Returns the time the next token is due (0:
 * nothing due: empty, or waiting for completions, which wake the thread
 * themselves).  Counts the flow's token_wait_ns. */
uint64_t drain_locked(struct shim_qp *q, uint64_t now);
/* Reap split completions, drain, and arm the split CQ when the next step
 * is not a token due soon; returns as drain_locked(). */
uint64_t drain_service_locked(struct shim_qp *q, uint64_t now);
/* At @now its work is queued (in the backlog or the send queue) or not:
 * publishes the time it was, jst_flow_stats.queued_us (sq.h). */
void drain_queued_locked(struct shim_qp *q, uint64_t now);
/* Whether @q takes the one-branch fast path (latency class, uncounted). */
void drain_set_fast_locked(struct shim_qp *q);

#endif

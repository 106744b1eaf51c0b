/* SPDX-License-Identifier: MIT */
/* The shim's clock: every time the shim reads (token buckets, split
 * delays, the daemon's heartbeat, reconnect backoff) comes from here.  By
 * default it is common/clock.h's CLOCK_MONOTONIC; a program that runs the
 * shim in virtual time (justsim, docs/rnic-model.md) swaps in its own
 * clock.  The default costs one predictable branch.  A virtual clock does
 * not advance while the shim waits, so nothing may sleep on it: paths that
 * would (shim_pace_when_idle) give up at once instead.
 * Base layer; may call: common/clock.h only. */
#ifndef JUSTITIA_SHIM_VCLOCK_H
#define JUSTITIA_SHIM_VCLOCK_H

#include <stdatomic.h>
#include <stdint.h>

#include "clock.h"

typedef uint64_t (*shim_clock_fn)(void);

/* NULL: CLOCK_MONOTONIC. */
extern _Atomic shim_clock_fn shim_vclock;

static inline uint64_t shim_now_ns(void)
{
	shim_clock_fn fn = atomic_load_explicit(&shim_vclock, memory_order_relaxed);

	return __builtin_expect(fn == NULL, 1) ? clock_now_ns() : fn();
}

/* Read time from @fn from now on (NULL: CLOCK_MONOTONIC again).  Set it
 * before the first QP, and do not mix: buckets hold times of one clock. */
void shim_vclock_set(shim_clock_fn fn);
/* Whether the clock is a virtual one (nothing may sleep on it). */
static inline int shim_vclock_virtual(void)
{
	return atomic_load_explicit(&shim_vclock, memory_order_relaxed) != NULL;
}

#endif

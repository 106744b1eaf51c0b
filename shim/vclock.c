// SPDX-License-Identifier: MIT
/* The shim's clock (see vclock.h).  Base layer; may call nothing of the
 * shim. */
#include "vclock.h"

_Atomic shim_clock_fn shim_vclock;

void shim_vclock_set(shim_clock_fn fn)
{
	atomic_store_explicit(&shim_vclock, fn, memory_order_relaxed);
}

/* SPDX-License-Identifier: MIT */
/* The one clock of Justitia: CLOCK_MONOTONIC in nanoseconds.  The daemon's
 * heartbeat and the token buckets' virtual time in shared memory
 * (shm_abi.h, bucket.h) are in it, so the daemon, the shim and the tools
 * all read time through here. */
#ifndef JUSTITIA_CLOCK_H
#define JUSTITIA_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif

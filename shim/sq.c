// SPDX-License-Identifier: MIT
/* What an application QP's send queue holds (see sq.h).
 * Per-QP state layer; pure: may call nothing. */
#include "sq.h"

#include <errno.h>
#include <stdlib.h>

/* Signaled WRs outstanding at most: the application's and a few of the
 * shim's own (an ordering barrier). */
#define SQ_SLACK 8

_Atomic unsigned shim_sq_watched;

static void set_empty(struct shim_sq *sq)
{
	shim_sq_lost(sq);
	if (sq->sig)
		atomic_store_explicit(&sq->known, SHIM_SQ_EMPTY, memory_order_relaxed);
}

int shim_sq_init(struct shim_sq *sq, uint32_t cap)
{
	uint32_t size = cap ? cap + SQ_SLACK : 0;

	shim_sq_lost(sq);
	/* (a recycled QP record keeps its ring when it is large enough) */
	if (size > sq->sig_size) {
		free(sq->sig);
		sq->sig = calloc(size, sizeof(*sq->sig));
		sq->sig_size = sq->sig ? size : 0;
	}
	sq->cap = cap;
	sq->posted = sq->done = 0;
	sq->sig_head = sq->sig_n = 0;
	sq->queued_since = 0;
	if (cap)
		set_empty(sq);
	return cap && !sq->sig ? -ENOMEM : 0;
}

void shim_sq_fini(struct shim_sq *sq)
{
	shim_sq_lost(sq);
}

void shim_sq_reset(struct shim_sq *sq)
{
	sq->posted = sq->done = 0;
	sq->sig_head = sq->sig_n = 0;
	sq->queued_since = 0;
	if (sq->cap)
		set_empty(sq);
}

void shim_sq_posted(struct shim_sq *sq, int signaled)
{
	if (!shim_sq_known(sq))
		return;
	if (atomic_load_explicit(&sq->known, memory_order_relaxed) == SHIM_SQ_EMPTY) {
		/* its completions are looked at from now on */
		atomic_store_explicit(&sq->known, SHIM_SQ_KNOWN, memory_order_relaxed);
		atomic_fetch_add_explicit(&shim_sq_watched, 1, memory_order_relaxed);
	}
	sq->posted++;
	if (!signaled)
		return;
	if (sq->sig_n == sq->sig_size) {
		/* more signaled WRs outstanding than the queue holds: a
		 * provider larger than it said, or a count gone wrong */
		shim_sq_lost(sq);
		return;
	}
	sq->sig[(sq->sig_head + sq->sig_n++) % sq->sig_size] = sq->posted;
}

void shim_sq_completed(struct shim_sq *sq, int success)
{
	if (!shim_sq_known(sq))
		return;
	if (!success || !sq->sig_n) {
		/* the flushes after an error come for unsignaled WRs too; a
		 * completion nobody signaled: either way, no longer known */
		shim_sq_lost(sq);
		return;
	}
	sq->done = sq->sig[sq->sig_head];
	sq->sig_head = (sq->sig_head + 1) % sq->sig_size;
	sq->sig_n--;
}

void shim_sq_queued(struct shim_sq *sq, uint64_t now, int backlog)
{
	int known = shim_sq_known(sq);

	if (known && sq->queued_since && now > sq->queued_since)
		sq->queued_ns += now - sq->queued_since;
	sq->queued_since = known && (backlog || shim_sq_held(sq)) ? now : 0;
}

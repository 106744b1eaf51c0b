/* SPDX-License-Identifier: MIT */
/* Allocation for the model: out of memory aborts (a simulator, not library
 * code), so callers never check for NULL. */
#ifndef JUSTITIA_SIM_UTIL_H
#define JUSTITIA_SIM_UTIL_H

#include <stdio.h>
#include <stdlib.h>

static inline void *sim_realloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fputs("justsim: out of memory\n", stderr);
		abort();
	}
	return p;
}

static inline void *sim_zalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		fputs("justsim: out of memory\n", stderr);
		abort();
	}
	return p;
}

#endif

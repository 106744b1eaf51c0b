/* SPDX-License-Identifier: MIT */
/* The daemon's shared-memory segments, seen from the shim: mapped only when
 * sealed as the ABI says, validated field by field (anything unexpected
 * means "run unmanaged"), and retired, never unmapped, when the daemon is
 * lost.  Part of the daemon link (client.c). */
#ifndef JUSTITIA_SHIM_SEGMENT_H
#define JUSTITIA_SHIM_SEGMENT_H

#include <stddef.h>

#include "shm_abi.h"

/* Map the segment @fd with @prot if it carries @seals (and the size seals);
 * its size in *@size.  NULL when it does not or cannot be mapped. */
void *shim_segment_map(int fd, int prot, int seals, size_t *size);
/* 0 when the global segment @g and the client segment @c are what this
 * shim's ABI expects, else -EPROTO. */
int shim_segment_validate(const struct jst_shm_global *g, size_t gsize,
			  const struct jst_shm_client *c, size_t csize);
/* Let go of a lost daemon's segment @p of @n bytes (never unmapped). */
void shim_segment_retire(void *p, size_t n);

#endif

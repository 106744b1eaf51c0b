/* SPDX-License-Identifier: MIT */
/* Chunking and completion stitching of one split message (struct pend_wr,
 * splitstate.h) at the head of a QP's backlog: all chunks but one go to the
 * split QP, the final one goes last on the application's QP as the
 * application's own WR, so the application's completion means the whole
 * message is done.  The pacer decides when (tokens, order); this module
 * decides how.  All of it is called with q->lock held. */
#ifndef JUSTITIA_SHIM_SPLITJOB_H
#define JUSTITIA_SHIM_SPLITJOB_H

#include <stdint.h>

#include "registry.h"
#include "shm_abi.h"

/* @p goes in chunks of @chunk bytes; a two-sided one asks the peer first. */
void splitjob_prepare(struct pend_wr *p, uint32_t chunk, int kind);

/* Chunk @k of a split message goes last, on the application's QP, as the
 * application's own WR: chunk 0 of a SEND (its data lands at the start of
 * the peer's receive buffer), the last chunk of anything else. */
static inline uint32_t splitjob_final_chunk(const struct pend_wr *p)
{
	return p->kind == SPLITMSG_SEND ? 0 : p->n_chunks - 1;
}

/* The @i-th chunk that goes to the split QP. */
static inline uint32_t splitjob_data_chunk(const struct pend_wr *p, uint32_t i)
{
	return p->kind == SPLITMSG_SEND ? i + 1 : i;
}

/* How many data chunks of @chunk bytes @q may have in flight (@direct: the
 * QP is unpaced). */
uint32_t splitjob_window(const struct shim_qp *q, const struct jst_flow_ctl *slot,
			 uint32_t chunk, int direct);
/* Post chunk @k of @p: on the split QP in a window of @window, or (the
 * final one) on the application's QP.  0 or an errno. */
int splitjob_post_chunk(struct shim_qp *q, struct pend_wr *p, uint32_t k, uint32_t window);
/* Ask for the split CQ's next completion event, then reap. */
void splitjob_arm_locked(struct shim_qp *q);
/* Reap split-chunk and control completions. */
void splitjob_reap_locked(struct shim_qp *q);

#endif

/* SPDX-License-Identifier: MIT */
/* Reading a flow slot of the daemon's global segment (common/shm_abi.h):
 * the daemon rewrites a slot under its seq counter (odd while writing) and
 * recycles the slots of flows that went away, so a reader takes a copy that
 * no rewrite crossed and checks that the slot still belongs to its flow. */
#ifndef JUSTITIA_SHIM_SLOT_H
#define JUSTITIA_SHIM_SLOT_H

#include <errno.h>
#include <stdint.h>

#include "shm_abi.h"

struct shim_slot_view {
	uint32_t cls, flags, chunk_bytes, weight;
	uint64_t rate_bps, ops_per_s, wait_ns;
};

#define SHIM_SLOT_TRIES 64

/* 0 and a consistent copy of @s in @v when @s is the active slot of flow
 * @flow_id; -ESTALE when it is free or another flow's; -EAGAIN when every
 * try crossed a rewrite (the caller keeps what it had). */
static inline int shim_slot_read(const struct jst_flow_ctl *s, uint32_t flow_id,
				 struct shim_slot_view *v)
{
	for (int i = 0; i < SHIM_SLOT_TRIES; i++) {
		uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire), state, id;

		if (seq & 1)
			continue;
		state = atomic_load_explicit(&s->state, memory_order_relaxed);
		id = atomic_load_explicit(&s->flow_id, memory_order_relaxed);
		v->cls = atomic_load_explicit(&s->cls, memory_order_relaxed);
		v->flags = atomic_load_explicit(&s->flags, memory_order_relaxed);
		v->chunk_bytes = atomic_load_explicit(&s->chunk_bytes, memory_order_relaxed);
		v->weight = atomic_load_explicit(&s->weight, memory_order_relaxed);
		v->rate_bps = atomic_load_explicit(&s->rate_bps, memory_order_relaxed);
		v->ops_per_s = atomic_load_explicit(&s->ops_per_s, memory_order_relaxed);
		v->wait_ns = atomic_load_explicit(&s->wait_ns, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq)
			continue;
		return state == JST_SLOT_ACTIVE && id == flow_id && flow_id ? 0 : -ESTALE;
	}
	return -EAGAIN;
}

#endif

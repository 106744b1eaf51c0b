/* SPDX-License-Identifier: MIT */
/* Shared-memory segments of justitiad (layout: common/shm_abi.h). */
#ifndef JUSTITIAD_SHM_H
#define JUSTITIAD_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "shm_abi.h"

struct shm_seg {
	int fd;
	void *base;
	size_t size;
};

/* An anonymous memfd of @size bytes, sealed against resizing, mapped
 * read-write.  0 or -errno.  (The global segment is also sealed with
 * F_SEAL_FUTURE_WRITE: only the daemon's own mapping can write it.) */
int shm_seg_create(struct shm_seg *s, const char *name, size_t size);
void shm_seg_destroy(struct shm_seg *s);
/* A new read-only descriptor of the same memory (the shim cannot map it
 * writable).  fd or -errno. */
int shm_seg_open_ro(const struct shm_seg *s);

/* Global segment: header and @n_slots free flow slots. */
int shm_global_create(struct shm_seg *s, uint32_t n_slots, uint64_t instance);
/* Client segment of process @pid with @n_slots counter slots. */
int shm_client_create(struct shm_seg *s, uint32_t n_slots, uint32_t pid, uint64_t instance);

/* Publish a slot's fields under its seq counter (odd while writing). */
void shm_slot_publish(struct jst_flow_ctl *slot, uint32_t state, uint32_t flow_id,
		      uint32_t pid, uint32_t cls, uint32_t flags, uint32_t chunk,
		      uint32_t weight, uint64_t rate_bps, uint64_t ops, uint64_t wait_ns);

/* Rewrite only the granted rates of a slot (the controller, every period),
 * under the same seq protocol. */
void shm_slot_set_rates(struct jst_flow_ctl *slot, uint64_t rate_bps, uint64_t ops,
			uint64_t wait_ns);

/* Counters one process wrote, read as untrusted input, @dt_ns after @prev
 * was read: each must neither go backwards nor grow faster than any RNIC
 * could make it (SHM_MAX_BYTES_PER_S, SHM_MAX_OPS_PER_S, a wait of at most
 * SHM_MAX_WAIT_PER_NS per ns, each plus SHM_SLACK_S of it).  One that
 * does keeps @prev, and the call returns 1 = the process scribbled. */
#define SHM_MAX_BYTES_PER_S 1000000000000ull /* 8 Tbit/s */
#define SHM_MAX_OPS_PER_S 1000000000ull
#define SHM_MAX_WAIT_PER_NS 64ull            /* backlogs of one flow waiting at once */
#define SHM_SLACK_S 1ull
struct shm_counters {
	uint64_t bytes, ops, chunks, tokens_bytes, token_wait_ns;
	uint32_t queued_us;  /* modulo 2^32: at most the time between two reads
			      * (plus SHM_SLACK_S) more */
};
int shm_read_counters(const struct jst_flow_stats *st, const struct shm_counters *prev,
		      struct shm_counters *out, uint64_t dt_ns);

#endif

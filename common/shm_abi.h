/* SPDX-License-Identifier: MIT */
/* Shared-memory ABI between justitiad and the shims (libjustitia.so).
 *
 * Two kinds of segments, both memfds created by the daemon and handed to a
 * shim over the control socket (SCM_RIGHTS) in the reply to "hello":
 *
 *  - the GLOBAL segment (one per daemon): written only by the daemon, given
 *    to every shim READ-ONLY.  Header with the controller's published state,
 *    then one struct jst_flow_ctl (one cache line) per flow slot.
 *
 *  - one CLIENT segment per connected process: written only by that
 *    process's shim, read by the daemon, which treats every byte as hostile
 *    (it re-validates sizes from its own copy, clamps counters, never
 *    follows anything found there).  Header, then one struct jst_flow_stats
 *    (one cache line) per flow of that process.
 *
 * So every cache line has exactly one writer.  All shared fields are C11
 * atomics; readers use relaxed loads plus the seq protocol below.  The
 * layout is versioned: a shim that finds another magic, major version or
 * size runs unmanaged (pass-through).  Additive changes go into reserved
 * space and bump JST_SHM_VERSION_MINOR only. */
#ifndef JUSTITIA_SHM_ABI_H
#define JUSTITIA_SHM_ABI_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define JST_SHM_GLOBAL_MAGIC 0x4a535447u /* "JSTG" */
#define JST_SHM_CLIENT_MAGIC 0x4a535443u /* "JSTC" */
#define JST_SHM_VERSION_MAJOR 1
#define JST_SHM_VERSION_MINOR 4
#define JST_CACHELINE 64

enum jst_flow_class {
	JST_CLASS_LATENCY = 0,
	JST_CLASS_THROUGHPUT = 1,
	JST_CLASS_BANDWIDTH = 2,
};
#define JST_CLASS_COUNT 3
/* A heartbeat older than this: the daemon is gone (shims fail open). */
#define JST_HEARTBEAT_STALE_NS 2000000000ull
/* Their names, in enum order, as the control protocol, the configuration,
 * justbench and the logs spell them: the one list of them. */
#define JST_CLASS_NAME_LIST "latency", "throughput", "bandwidth"

/* jst_shm_global.pace_mode (minor 1): what the controlled device needs from
 * its bandwidth and throughput flows (docs/libjustitia.7, "Pacing modes").
 * The daemon also says it per flow (jst_flow_ctl.flags, chunk_bytes, rates);
 * mode_gen is bumped at every change, so a shim whose QPs post directly
 * notices a change on its next post without a thread of its own. */
enum jst_pace_mode {
	JST_PACE_OFF = 0,     /* no latency flow, <= 1 active flow: post directly */
	JST_PACE_SHARE = 1,   /* no latency flow, flows compete: large tokens,
			       * work-conserving shares of the measured capacity */
	JST_PACE_PROTECT = 2, /* latency flows: small chunks, SafeUtil */
};

enum jst_ctrl_mode {
	JST_MODE_NORMAL = 0,      /* latency targets enforced */
	JST_MODE_UNATTAINABLE = 1 /* Target99 given up, fair share only */
};

/* jst_shm_global.flags */
#define JST_G_RUNNING (1u << 0)   /* daemon alive; cleared on clean exit */
#define JST_G_LATENCY (1u << 1)   /* at least one latency flow registered */

/* jst_flow_ctl.state */
#define JST_SLOT_FREE 0u
#define JST_SLOT_ACTIVE 1u

/* jst_flow_stats.flags (minor 3): what the shim saw the flow do, set once
 * and never cleared while the flow lives (untrusted, like every counter) */
#define JST_FS_READ (1u << 0)     /* it posted an RDMA READ: the data comes from
				   * the peer's NIC (remote READ control) */

/* jst_flow_ctl.flags */
#define JST_F_PACE (1u << 0)      /* pace this flow by tokens */
#define JST_F_SPLIT (1u << 1)     /* split messages larger than chunk_bytes */

struct jst_shm_global {
	/* immutable after creation */
	uint32_t magic;
	uint16_t version_major;
	uint16_t version_minor;
	uint32_t header_size;     /* sizeof(struct jst_shm_global) */
	uint32_t slot_size;       /* sizeof(struct jst_flow_ctl) */
	uint32_t n_slots;
	uint32_t reserved0;
	uint64_t total_size;
	uint64_t instance;        /* random per daemon start */
	uint8_t reserved1[JST_CACHELINE - 40];

	/* controller state, rewritten by the daemon every period */
	alignas(JST_CACHELINE) _Atomic uint64_t heartbeat_ns; /* CLOCK_MONOTONIC;
							       * JST_HEARTBEAT_STALE_NS */
	_Atomic uint32_t flags;
	_Atomic uint32_t mode;                 /* enum jst_ctrl_mode */
	_Atomic uint64_t safe_util_bps;
	_Atomic uint64_t max_rate_bps;
	_Atomic uint64_t current99_ns;         /* 0: no measurement */
	_Atomic uint32_t chunk_bytes;          /* current split size */
	_Atomic uint32_t alpha_permille;       /* Appendix D wait hint */
	_Atomic uint64_t token_bytes;
	_Atomic uint32_t pace_mode;            /* enum jst_pace_mode (minor 1) */
	_Atomic uint32_t mode_gen;             /* bumped when pace_mode changes */
};

/* One flow slot of the global segment: daemon-written. */
struct jst_flow_ctl {
	alignas(JST_CACHELINE) _Atomic uint32_t seq; /* odd while being rewritten */
	_Atomic uint32_t state;                      /* JST_SLOT_* */
	_Atomic uint32_t flow_id;
	_Atomic uint32_t owner_pid;
	_Atomic uint32_t cls;                        /* enum jst_flow_class */
	_Atomic uint32_t flags;                      /* JST_F_* */
	_Atomic uint32_t chunk_bytes;
	_Atomic uint32_t weight;
	_Atomic uint64_t rate_bps;                   /* granted pacing rate, 0 = unpaced */
	_Atomic uint64_t ops_per_s;                  /* granted op rate, 0 = unpaced */
	_Atomic uint64_t wait_ns;                    /* Appendix D: wait between chunks */
	uint8_t reserved[JST_CACHELINE - 56];
};

struct jst_shm_client {
	/* written by the daemon before the fd is handed over; informative only
	 * for the shim, never read back by the daemon */
	uint32_t magic;
	uint16_t version_major;
	uint16_t version_minor;
	uint32_t header_size;
	uint32_t slot_size;
	uint32_t n_slots;
	uint32_t pid;
	uint64_t total_size;
	uint64_t instance;
	uint8_t reserved[JST_CACHELINE - 40];
};

/* Per-flow counters of one process: shim-written, daemon-read (untrusted). */
struct jst_flow_stats {
	alignas(JST_CACHELINE) _Atomic uint64_t bytes; /* payload bytes posted */
	_Atomic uint64_t ops;                          /* send WRs posted */
	_Atomic uint64_t chunks;                       /* split chunks posted */
	_Atomic uint64_t tokens_bytes;                 /* token bytes consumed */
	_Atomic uint64_t token_wait_ns;                /* (minor 2) ns its posted work
							* waited for tokens: the grant
							* held it back (SHARE mode's
							* "binding", share.h) */
	_Atomic uint64_t bucket_vtime_ns;              /* token bucket state */
	_Atomic uint64_t last_post_ns;
	_Atomic uint32_t flags;                        /* JST_FS_* (minor 3) */
	_Atomic uint32_t queued_us;                    /* (minor 4) us its work was
							* queued (in the shim's backlog
							* or the NIC's send queue),
							* modulo 2^32: it would have
							* moved more (SHARE mode's
							* "backlogged", share.h) */
};

_Static_assert(sizeof(struct jst_shm_global) == 2 * JST_CACHELINE, "global header size");
_Static_assert(offsetof(struct jst_shm_global, heartbeat_ns) == JST_CACHELINE,
	       "controller line starts on its own cache line");
_Static_assert(offsetof(struct jst_shm_global, mode_gen) == 2 * JST_CACHELINE - 4,
	       "pace_mode and mode_gen took the controller line's reserved space");
_Static_assert(sizeof(struct jst_flow_ctl) == JST_CACHELINE, "one cache line per flow slot");
_Static_assert(sizeof(struct jst_shm_client) == JST_CACHELINE, "client header size");
_Static_assert(sizeof(struct jst_flow_stats) == JST_CACHELINE, "one cache line per flow stats");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock free in shared memory");

static inline uint64_t jst_shm_global_size(uint32_t n_slots)
{
	return sizeof(struct jst_shm_global) + (uint64_t)n_slots * sizeof(struct jst_flow_ctl);
}

static inline uint64_t jst_shm_client_size(uint32_t n_slots)
{
	return sizeof(struct jst_shm_client) + (uint64_t)n_slots * sizeof(struct jst_flow_stats);
}

static inline struct jst_flow_ctl *jst_shm_global_slot(struct jst_shm_global *g, uint32_t i)
{
	return (struct jst_flow_ctl *)((char *)g + sizeof(*g)) + i;
}

static inline struct jst_flow_stats *jst_shm_client_slot(struct jst_shm_client *c, uint32_t i)
{
	return (struct jst_flow_stats *)((char *)c + sizeof(*c)) + i;
}

#endif

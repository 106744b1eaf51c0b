// SPDX-License-Identifier: MIT
/* Shared-memory segments: memfds, so nothing is left in /dev/shm when the
 * daemon dies, and the segments vanish with their last user.
 * May call: clock only. */
#include "shm.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define RELAXED memory_order_relaxed
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010 /* Linux 5.1 */
#endif

static int seg_create(struct shm_seg *s, const char *name, size_t size, int seals)
{
	int rc;

	s->fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (s->fd < 0)
		return -errno;
	if (ftruncate(s->fd, (off_t)size)) {
		rc = -errno;
		goto out_close;
	}
	s->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (s->base == MAP_FAILED) {
		rc = -errno;
		goto out_unmapped;
	}
	/* after our own writable mapping: F_SEAL_FUTURE_WRITE leaves it
	 * writable and refuses every later write, through any descriptor
	 * (a read-only one reopened O_RDWR through /proc/PID/fd included) */
	if (fcntl(s->fd, F_ADD_SEALS, seals | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		rc = -errno;
		munmap(s->base, size);
		goto out_unmapped;
	}
	s->size = size;
	return 0;
out_unmapped:
	s->base = NULL;
out_close:
	close(s->fd);
	s->fd = -1;
	s->base = NULL;
	return rc;
}

int shm_seg_create(struct shm_seg *s, const char *name, size_t size)
{
	return seg_create(s, name, size, 0);
}

void shm_seg_destroy(struct shm_seg *s)
{
	if (s->base)
		munmap(s->base, s->size);
	if (s->fd >= 0)
		close(s->fd);
	s->base = NULL;
	s->fd = -1;
	s->size = 0;
}

int shm_seg_open_ro(const struct shm_seg *s)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", s->fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int shm_global_create(struct shm_seg *s, uint32_t n_slots, uint64_t instance)
{
	struct jst_shm_global *g;
	/* every shim reads it, none may write it (Linux >= 5.1) */
	int rc = seg_create(s, "justitia-global", jst_shm_global_size(n_slots), F_SEAL_FUTURE_WRITE);

	if (rc)
		return rc;
	g = s->base;
	g->magic = JST_SHM_GLOBAL_MAGIC;
	g->version_major = JST_SHM_VERSION_MAJOR;
	g->version_minor = JST_SHM_VERSION_MINOR;
	g->header_size = sizeof(*g);
	g->slot_size = sizeof(struct jst_flow_ctl);
	g->n_slots = n_slots;
	g->total_size = s->size;
	g->instance = instance;
	/* alive from the start: a shim that says hello before the first tick
	 * must not take the new daemon for a dead one */
	atomic_store_explicit(&g->heartbeat_ns, clock_now_ns(), memory_order_relaxed);
	atomic_store_explicit(&g->flags, JST_G_RUNNING, memory_order_release);
	return 0;
}

int shm_client_create(struct shm_seg *s, uint32_t n_slots, uint32_t pid, uint64_t instance)
{
	struct jst_shm_client *c;
	int rc = shm_seg_create(s, "justitia-client", jst_shm_client_size(n_slots));

	if (rc)
		return rc;
	c = s->base;
	c->magic = JST_SHM_CLIENT_MAGIC;
	c->version_major = JST_SHM_VERSION_MAJOR;
	c->version_minor = JST_SHM_VERSION_MINOR;
	c->header_size = sizeof(*c);
	c->slot_size = sizeof(struct jst_flow_stats);
	c->n_slots = n_slots;
	c->pid = pid;
	c->total_size = s->size;
	c->instance = instance;
	return 0;
}

void shm_slot_publish(struct jst_flow_ctl *slot, uint32_t state, uint32_t flow_id,
		      uint32_t pid, uint32_t cls, uint32_t flags, uint32_t chunk,
		      uint32_t weight, uint64_t rate_bps, uint64_t ops, uint64_t wait_ns)
{
	uint32_t seq = atomic_load_explicit(&slot->seq, RELAXED);

	atomic_store_explicit(&slot->seq, seq | 1u, RELAXED);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&slot->state, state, RELAXED);
	atomic_store_explicit(&slot->flow_id, flow_id, RELAXED);
	atomic_store_explicit(&slot->owner_pid, pid, RELAXED);
	atomic_store_explicit(&slot->cls, cls, RELAXED);
	atomic_store_explicit(&slot->flags, flags, RELAXED);
	atomic_store_explicit(&slot->chunk_bytes, chunk, RELAXED);
	atomic_store_explicit(&slot->weight, weight, RELAXED);
	atomic_store_explicit(&slot->rate_bps, rate_bps, RELAXED);
	atomic_store_explicit(&slot->ops_per_s, ops, RELAXED);
	atomic_store_explicit(&slot->wait_ns, wait_ns, RELAXED);
	atomic_store_explicit(&slot->seq, (seq | 1u) + 1, memory_order_release);
}

void shm_slot_set_rates(struct jst_flow_ctl *slot, uint64_t rate_bps, uint64_t ops,
			uint64_t wait_ns)
{
	uint32_t seq = atomic_load_explicit(&slot->seq, RELAXED);

	atomic_store_explicit(&slot->seq, seq | 1u, RELAXED);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&slot->rate_bps, rate_bps, RELAXED);
	atomic_store_explicit(&slot->ops_per_s, ops, RELAXED);
	atomic_store_explicit(&slot->wait_ns, wait_ns, RELAXED);
	atomic_store_explicit(&slot->seq, (seq | 1u) + 1, memory_order_release);
}

/* @now if it is no less than @prev and at most @max more, else @prev
 * (and *bad). */
static uint64_t plausible(uint64_t now, uint64_t prev, uint64_t max, int *bad)
{
	if (now < prev || now - prev > max) {
		*bad = 1;
		return prev;
	}
	return now;
}

/* @per_s over @dt_ns plus SHM_SLACK_S of it, saturating */
static uint64_t at_most(uint64_t per_s, uint64_t dt_ns)
{
	double v = (double)per_s * ((double)dt_ns / 1e9 + (double)SHM_SLACK_S);

	return v >= 1.8e19 ? UINT64_MAX : (uint64_t)v;
}

int shm_read_counters(const struct jst_flow_stats *st, const struct shm_counters *prev,
		      struct shm_counters *out, uint64_t dt_ns)
{
	uint64_t max_bytes = at_most(SHM_MAX_BYTES_PER_S, dt_ns);
	uint64_t max_ops = at_most(SHM_MAX_OPS_PER_S, dt_ns);
	uint64_t max_wait = at_most(SHM_MAX_WAIT_PER_NS * 1000000000ull, dt_ns);
	int bad = 0;

	out->bytes = plausible(atomic_load_explicit(&st->bytes, RELAXED), prev->bytes, max_bytes,
			       &bad);
	out->ops = plausible(atomic_load_explicit(&st->ops, RELAXED), prev->ops, max_ops, &bad);
	out->chunks = plausible(atomic_load_explicit(&st->chunks, RELAXED), prev->chunks, max_ops,
				&bad);
	out->tokens_bytes = plausible(atomic_load_explicit(&st->tokens_bytes, RELAXED),
				      prev->tokens_bytes, max_bytes, &bad);
	out->token_wait_ns = plausible(atomic_load_explicit(&st->token_wait_ns, RELAXED),
				       prev->token_wait_ns, max_wait, &bad);
	out->queued_us = atomic_load_explicit(&st->queued_us, RELAXED);
	/* (a count of one QP's time, wrapping: one flow, one clock) */
	if ((uint32_t)(out->queued_us - prev->queued_us) >
	    dt_ns / 1000 + SHM_SLACK_S * 1000000ull) {
		bad = 1;
		out->queued_us = prev->queued_us;
	}
	return bad;
}

// SPDX-License-Identifier: MIT
/* One WR on its way through the pacer (see wrpost.h): what it costs in
 * tokens, whether it is split and in what size, the room the application's
 * send queue has, and the post itself, alone or through the direct window.
 * Pacer layer, its lowest module; may call: the splitter's protocol
 * (splitmsg_kind_of), the daemon link's view (client.h, slot.h), the per-QP
 * state (registry, stats, window, sq), log. */
#include "wrpost.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bucket.h"
#include "client.h"
#include "log.h"
#include "splitmsg.h"

#define LATE_NS 4000000ull           /* ... plus this much for a late wake-up */
#define BACKLOG_MAX 65536            /* when max_send_wr is unknown */

size_t wrpost_count(const struct ibv_send_wr *wr)
{
	size_t n = 0;

	for (; wr; wr = wr->next)
		n++;
	return n;
}

uint64_t wrpost_bytes(const struct ibv_send_wr *wr)
{
	uint64_t b = 0;

	for (int i = 0; i < wr->num_sge; i++)
		b += wr->sg_list[i].length;
	return b;
}

/* What one WR costs in the flow's bucket, in ns at its granted rate. */
uint64_t wrpost_cost_ns(int cls, const struct jst_flow_ctl *slot, uint64_t bytes)
{
	if (cls == JST_CLASS_THROUGHPUT) {
		uint64_t ops = atomic_load_explicit(&slot->ops_per_s, memory_order_relaxed);

		return ops ? 1000000000ull / ops : 0;
	}
	return bucket_cost_ns(bytes, atomic_load_explicit(&slot->rate_bps, memory_order_relaxed));
}

/* A chunk of @chunk bytes rounded down to whole packets of @mtu (at least
 * one; @mtu 0: unknown, as is).  A 5 KiB chunk on a 4 KiB path MTU is a
 * full packet and a quarter one: two packets' headers and the NIC's
 * per-packet work for 1.25 packets of data.  One full packet moves more
 * and holds the wire for less (the RNIC model, lat-elephant: 93.91 ->
 * 94.58 Gbit/s and p99.9 2.09 -> 1.75 us); on a 1 KiB MTU (Soft-RoCE over
 * Ethernet) 5 KiB is five whole packets and stays. */
uint32_t wrpost_whole_packets(uint32_t chunk, uint32_t mtu)
{
	return mtu && chunk > mtu ? chunk - chunk % mtu : chunk;
}

/* The split size for @wr, or 0 when it goes whole: RDMA WRITE, READ,
 * SEND and WRITE_WITH_IMM larger than the chunk, not inline, on a QP whose
 * split QP is connected and whose flow the daemon says to split.  *kind:
 * enum splitmsg_kind. */
uint32_t wrpost_split_size(struct shim_qp *q, const struct jst_flow_ctl *slot,
			   const struct ibv_send_wr *wr, int *kind)
{
	uint32_t chunk;

	if (!slot || atomic_load_explicit(&q->split.state, memory_order_relaxed) != SPLIT_READY ||
	    !(atomic_load_explicit(&slot->flags, memory_order_relaxed) & JST_F_SPLIT))
		return 0;
	*kind = splitmsg_kind_of(q, wr);
	if (*kind < 0 || (wr->send_flags & IBV_SEND_INLINE) || wr->num_sge > SPLIT_MAX_SGE)
		return 0;
	chunk = wrpost_whole_packets(atomic_load_explicit(&slot->chunk_bytes, memory_order_relaxed),
				     q->split.mtu);
	return chunk && wrpost_bytes(wr) > chunk ? chunk : 0;
}

/* Pace mode share: no latency flow to protect, flows compete. */
int wrpost_share_mode(void)
{
	const struct jst_shm_global *g = shim_client_global();

	return g && atomic_load_explicit(&g->pace_mode, memory_order_relaxed) == JST_PACE_SHARE;
}

/* A throughput flow's batch in pace mode share: it posts WRPOST_BATCH_OPS
 * operations and waits for their completions, one round trip, so a bucket
 * that banks a few operations (WRPOST_BURST_NS) holds most of every batch
 * back and lets it out one token at a time, though the flow stays within
 * its grant: each held operation costs a copy, a drain by the application's
 * poll or the progress thread, and its own post (on Soft-RoCE a 64 B
 * ib_write_bw next to an elephant held 37% of its operations and moved a
 * third of its plain rate).  The paper's token for a throughput flow is
 * TokenOps operations, hundreds.  0 when not in that case (@share: the
 * pace mode is share). */
static uint64_t share_batch(int cls, uint64_t cost, int share)
{
	if (cls != JST_CLASS_THROUGHPUT || !share)
		return 0;
	return cost > UINT64_MAX / WRPOST_BATCH_OPS ? UINT64_MAX : cost * WRPOST_BATCH_OPS;
}

/* The credit a backlog may bank for a take of @cost: a wake-up up to
 * LATE_NS late (a scheduler tick) loses no tokens, so the flow fills its
 * grant; the window of chunks in flight still bounds what goes at once.
 * With no latency flow to protect (pace mode share: large tokens), a
 * whole token more: a late wake-up or a slow post is made up by the next
 * two going back to back, and no grant is lost to the host's scheduler.
 * A throughput flow's token is then a batch (WRPOST_BATCH_OPS operations,
 * share_batch()).  (A post that finds no backlog: wrpost_post_burst().) */
uint64_t wrpost_burst(int cls, uint64_t cost)
{
	int share = wrpost_share_mode();
	uint64_t late = LATE_NS, batch = share_batch(cls, cost, share), b;

	if (share && cost > late)
		late = cost;
	b = cost + late > WRPOST_BURST_NS ? cost + late : WRPOST_BURST_NS;
	return batch > b ? batch : b;
}

/* A post that finds no backlog is not late: WRPOST_BURST_NS, or a
 * throughput flow's batch in pace mode share (share_batch()). */
uint64_t wrpost_post_burst(int cls, uint64_t cost)
{
	uint64_t batch = cls == JST_CLASS_THROUGHPUT ? share_batch(cls, cost, wrpost_share_mode()) : 0;

	return batch > WRPOST_BURST_NS ? batch : WRPOST_BURST_NS;
}

/* Copy a WR (and its inline payload, which the application may reuse as
 * soon as the post returns). */
struct pend_wr *wrpost_copy(const struct ibv_send_wr *wr)
{
	size_t n = wr->num_sge > 0 ? (size_t)wr->num_sge : 0, inl = 0, off;
	struct pend_wr *p;

	if (wr->send_flags & IBV_SEND_INLINE)
		inl = wrpost_bytes(wr);
	p = malloc(sizeof(*p) + n * sizeof(struct ibv_sge) + inl);
	if (!p)
		return NULL;
	p->next = NULL;
	p->chunk = 0;
	p->n_chunks = 1;
	p->next_chunk = 0;
	p->inflight = 0;
	p->failed = 0;
	p->kind = SPLITMSG_ONE_SIDED;
	p->phase = SPLITMSG_DATA;
	p->nseg = 0;
	p->went_whole = 0;
	p->paid = 0;
	p->window = 0;
	p->zfin = 0;
	p->seq = 0;
	p->deadline_ns = 0;
	p->wr_api = 0;
	p->wr = *wr;
	p->wr.next = NULL;
	p->wr.sg_list = p->sge;
	memcpy(p->sge, wr->sg_list, n * sizeof(struct ibv_sge));
	p->cost_bytes = wrpost_bytes(wr);
	if (inl) {
		char *data = (char *)&p->sge[n];

		off = 0;
		for (size_t i = 0; i < n; i++) {
			memcpy(data + off, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			p->sge[i].addr = (uintptr_t)(data + off);
			off += wr->sg_list[i].length;
		}
	}
	return p;
}

/* How many more WRs the application may post on @q: its max_send_wr less
 * what the provider holds of its WRs (sq.h; when that is not known, only
 * the backlog is bounded) and what the backlog holds.  The shim's own
 * barrier in the send queue is not the application's. */
size_t wrpost_app_room(const struct shim_qp *q)
{
	size_t cap = q->max_send_wr ? q->max_send_wr : BACKLOG_MAX;
	uint64_t used = q->bl_len;

	if (shim_sq_known(&q->sq)) {
		uint64_t held = shim_sq_held(&q->sq);

		used += q->ord_barrier && held ? held - 1 : held;
	}
	return used < cap ? cap - (size_t)used : 0;
}

/* Post one WR for the application (counts it like the direct path). */
int wrpost_one(struct shim_qp *q, struct ibv_send_wr *wr, int wr_api)
{
	struct ibv_send_wr *bad = NULL;
	uint64_t bytes = 0, n = 0;
	int rc;

	rc = shim_qp_post_app(q, wr, &bad);
	if (!rc || bad != wr)
		atomic_store_explicit(&q->ord_dirty, 1, memory_order_relaxed);
	if (!wr_api) /* (the application's call is counted once: pace_post) */
		n = stats_account_classic(&q->st, wr, rc ? bad : NULL, rc, &bytes);
	else if (!rc)
		n = stats_account_wr_api(&q->st, wr, NULL, &bytes);
	shim_client_publish(q, n, bytes);
	return rc;
}

int wrpost_windowed_qp(const struct shim_qp *q)
{
	return atomic_load_explicit(&q->win.on, memory_order_relaxed);
}

/* Post @wr (alone) on a windowed QP if it fits: 0 posted, -EAGAIN it must
 * wait (*due: when to give up waiting), else the provider's error. */
int wrpost_windowed(struct shim_qp *q, const struct ibv_send_wr *wr, int wr_api, uint64_t now,
		    uint64_t *due)
{
	struct ibv_send_wr one = *wr;
	uint64_t bytes = wrpost_bytes(wr);
	int tag, rc, app_signaled;

	if (!shim_window_admit(&q->win, bytes, now)) {
		*due = q->win.wait_since + SHIM_WINDOW_BLIND_NS;
		return -EAGAIN;
	}
	if (q->win.blind)
		shim_log_once("a QP's window tags did not come back through ibv_poll_cq within "
			      "2 s: its direct posts are not windowed any more");
	one.next = NULL;
	tag = shim_window_want_tag(&q->win, bytes);
	app_signaled = q->classify.sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	shim_window_post(&q->win, bytes, tag, wr->wr_id, app_signaled);
	if (tag) {
		one.wr_id = shim_pace_window_tag(q);
		one.send_flags |= IBV_SEND_SIGNALED;
	}
	rc = wrpost_one(q, &one, wr_api);
	if (rc)
		shim_window_unpost(&q->win, bytes, tag);
	return rc;
}

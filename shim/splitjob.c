// SPDX-License-Identifier: MIT
/* A split message's chunks (see splitjob.h): posting them on the split QP
 * a window at a time, the final one on the application's QP, and reaping
 * their completions.  Splitter layer; may call: the two-sided protocol
 * (splitmsg.c), the daemon link's counters (client.h), the per-QP state
 * (registry, stats, inject), log. */
#include "splitjob.h"

#include "vclock.h"
#include "client.h"
#include "inject.h"
#include "log.h"
#include "sge.h"
#include "splitmsg.h"
#include "vops.h"

/* Zero-length final.
 *
 * A one-sided WRITE or READ goes whole in data chunks on the split QP; once
 * they have completed, the application's own WR follows on its QP with no
 * bytes: it carries the wr_id, the completion and the flags, and has no
 * effect on remote memory.  So the next split message needs no ordering
 * barrier behind it (a final that moved bytes could still land after the
 * next message's chunks), which saved a round trip per message.
 * WRITE_WITH_IMM keeps bytes in its final (its immediate tells the peer the
 * data is there), and SENDs have their own protocol (splitmsg.c). */

/* @p goes in chunks of @chunk bytes; a two-sided one asks the peer first. */
void splitjob_prepare(struct pend_wr *p, uint32_t chunk, int kind)
{
	p->chunk = chunk;
	p->zfin = kind == SPLITMSG_ONE_SIDED;
	p->n_chunks = (uint32_t)((p->cost_bytes + chunk - 1) / chunk) + p->zfin;
	p->kind = (uint8_t)kind;
	p->phase = kind == SPLITMSG_ONE_SIDED ? SPLITMSG_DATA : SPLITMSG_HDR;
}

/* Split window.
 *
 * Data chunks in flight on the split QP: what the granted rate moves in a
 * chunk's round trip without queueing (the least post-to-reaped-completion
 * time of the last one to two seconds), plus two,
 * within [SPLIT_WINDOW, SPLIT_WINDOW_MAX]; the most while the QP is direct
 * (a message that started split drains unpaced).  Not the average time: a
 * queue in the NIC (the pacer's own chunks included) lengthens it, a
 * longer time opens the window, more chunks queue ahead of the latency
 * flow's messages, and so on up to the largest window (on Soft-RoCE,
 * where a completion can take milliseconds, 32 chunks in flight and a p99
 * in milliseconds).  The window is the bandwidth-delay product, as a
 * congestion controller keeps it: rate x base round trip.  Chunks are
 * signaled every half window, when the window fills and at the message's
 * last; each completion says every chunk up to it is done (RC completes in
 * order), so the pacer reaps a few completions per window, not one per
 * chunk.  A message's window never shrinks: posting stops only at a full
 * window, whose last chunk is signaled, or at a token, after which more
 * chunks go; a smaller window could stop it behind unsignaled chunks,
 * whose completions nobody would ever see. */

uint32_t splitjob_window(const struct shim_qp *q, const struct jst_flow_ctl *slot,
			 uint32_t chunk, int direct)
{
	uint64_t rate = slot && !direct ? atomic_load_explicit(&slot->rate_bps, memory_order_relaxed)
					: 0;
	double w;

	if (direct)
		return SPLIT_WINDOW_MAX;
	if (!rate || !chunk)
		return SPLIT_WINDOW;
	w = (double)rate / 8.0 * (double)shim_split_base_ns(&q->split) / 1e9 / (double)chunk + 2;
	return w < SPLIT_WINDOW ? SPLIT_WINDOW : w > SPLIT_WINDOW_MAX ? SPLIT_WINDOW_MAX
								 : (uint32_t)w;
}

/* Post @w on the split QP as the next data chunk of @p (the message's last
 * when @last) in a window of @window. */
static int post_split(struct shim_qp *q, struct pend_wr *p, struct ibv_send_wr *w, int last,
		      uint32_t window)
{
	struct shim_split *sp = &q->split;
	struct ibv_send_wr *bad = NULL;
	uint64_t seq = sp->c_posted + 1;
	uint32_t every = window / 2 ? window / 2 : 1;
	/* (in flight: the message's own chunks and those of the one ahead of
	 * it, drain.c, "following message") */
	int sig = last || sp->c_since_sig + 1 >= every || sp->c_posted - sp->c_done + 1 >= window,
	    rc;

	w->wr_id = seq << 3; /* (its low bits clear: not a control message) */
	w->send_flags = sig ? IBV_SEND_SIGNALED : 0;
	rc = q->sctx->post_send(sp->qp, w, &bad);
	if (rc)
		return rc;
	sp->c_posted = seq;
	sp->c_since_sig = sig ? 0 : sp->c_since_sig + 1;
	sp->c_post_ns[seq % SPLIT_WINDOW_MAX] = shim_now_ns();
	p->inflight++;
	return 0;
}

/* The split chunk @wc completed (a signaled one, or any on error): every
 * chunk up to it is done.  Called with q->lock held. */
static void split_chunk_done(struct shim_qp *q, const struct ibv_wc *wc, uint64_t now)
{
	struct shim_split *sp = &q->split;
	struct pend_wr *p = q->bl_head;
	uint64_t seq = wc->wr_id >> 3, n;

	/* chunks complete in order: first those of the job at the head, then
	 * those of the one that follows it (drain.c, "following message");
	 * one from before a RESET is not */
	if (!p || seq <= sp->c_done || seq > sp->c_posted)
		return;
	n = seq - sp->c_done;
	sp->c_done = seq;
	if (n > p->inflight && p->next && p->next->inflight) {
		struct pend_wr *f = p->next;

		n -= p->inflight;
		p->inflight = 0;
		p = f; /* (an error is the follower's: the head's chunks all went well) */
	}
	p->inflight = p->inflight > n ? p->inflight - (uint32_t)n : 0;
	if (wc->status == IBV_WC_SUCCESS) {
		uint64_t t = sp->c_post_ns[seq % SPLIT_WINDOW_MAX], d = now > t ? now - t : 0;

		if (!sp->c_epoch_ns || now - sp->c_epoch_ns >= SPLIT_BASE_EPOCH_NS) {
			sp->c_min_prev_ns = sp->c_epoch_ns ? sp->c_min_cur_ns : d;
			sp->c_min_cur_ns = d;
			sp->c_epoch_ns = now;
		} else if (d < sp->c_min_cur_ns) {
			sp->c_min_cur_ns = d;
		}
	} else if (!p->failed) {
		p->failed = 1 + wc->status;
	}
}

/* Post @w (SGEs @sg/@n) on the split QP as RDMA WRITEs into the peer's
 * receive buffer segments, for message bytes [@off, @off + @len); @last:
 * the message's last data chunk. */
static int post_to_segments(struct shim_qp *q, struct pend_wr *p, struct ibv_send_wr *w,
			    uint64_t off, uint64_t len, int last, uint32_t window)
{
	uint64_t at = off - p->chunk, seg0 = 0; /* segments cover [chunk, length) */
	struct ibv_sge sg[SPLIT_MAX_SGE];
	int posted = 0;

	for (unsigned i = 0; i < p->nseg && len; i++) {
		uint64_t s_end = seg0 + p->seg[i].len, take;
		int n, rc;

		if (at >= s_end) {
			seg0 = s_end;
			continue;
		}
		take = s_end - at < len ? s_end - at : len;
		n = shim_split_sges(p->sge, p->wr.num_sge, off, take, sg, SPLIT_MAX_SGE);
		if (n < 0)
			return EINVAL;
		w->sg_list = sg;
		w->num_sge = n;
		w->opcode = IBV_WR_RDMA_WRITE;
		w->wr.rdma.remote_addr = p->seg[i].addr + (at - seg0);
		w->wr.rdma.rkey = p->seg[i].rkey;
		rc = post_split(q, p, w, last && take == len, window);
		if (rc)
			return posted ? EIO : rc; /* (a part went: no retry) */
		posted = 1;
		off += take;
		at += take;
		len -= take;
		seg0 = s_end;
	}
	return len ? EINVAL : 0;
}

/* Chunk @k of a split message: on the split QP (in a window of @window),
 * or (the final one, see splitjob_final_chunk()) as the application's own WR on its
 * QP. */
int splitjob_post_chunk(struct shim_qp *q, struct pend_wr *p, uint32_t k, uint32_t window)
{
	int last = k == splitjob_data_chunk(p, p->n_chunks - 2);
	uint64_t off = (uint64_t)k * p->chunk, len = off < p->cost_bytes ? p->cost_bytes - off : 0;
	struct ibv_sge sg[SPLIT_MAX_SGE];
	struct ibv_send_wr w = p->wr, *bad = NULL;
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	int n, rc;

	if (len > p->chunk)
		len = p->chunk;
	w.next = NULL;
	if (k != splitjob_final_chunk(p)) {
		if (p->kind == SPLITMSG_SEND) {
			rc = post_to_segments(q, p, &w, off, len, last, window);
			goto out;
		}
		if (p->kind == SPLITMSG_WRITE_IMM)
			w.opcode = IBV_WR_RDMA_WRITE;
	}
	n = shim_split_sges(p->sge, p->wr.num_sge, off, len, sg, SPLIT_MAX_SGE);
	if (n < 0)
		return EINVAL;
	w.sg_list = sg;
	w.num_sge = n;
	if (p->kind != SPLITMSG_SEND) /* (a zero-length final: the message's own address) */
		w.wr.rdma.remote_addr = p->wr.wr.rdma.remote_addr + (len ? off : 0);
	if (k != splitjob_final_chunk(p)) {
		rc = post_split(q, p, &w, last, window);
	} else {
		/* known before it can complete: the app may be polling.  An
		 * unsignaled final never completes successfully: nothing to
		 * remember, nothing a later WR could be mistaken for */
		int fin = shim_qp_signaled(q, &w);

		if (fin)
			splitmsg_tx_final(q, p->wr.wr_id, shim_wc_opcode(p->wr.opcode), (uint32_t)len,
					  p->cost_bytes);
		rc = shim_qp_post_app(q, &w, &bad);
		if (!rc) {
			if (len)
				atomic_store_explicit(&q->ord_dirty, 1, memory_order_relaxed);
			/* the application posted one WR of the whole length */
			uint64_t bytes, cnt = p->wr_api ? stats_account_wr_api(&q->st, &p->wr, NULL, &bytes)
						      : stats_account_classic(&q->st, &p->wr, NULL, 0, &bytes);

			atomic_fetch_add_explicit(&q->st.split[p->kind], 1, memory_order_relaxed);
			shim_client_publish(q, cnt, bytes);
		} else if (fin) {
			splitmsg_tx_unfinal(q);
		}
	}
out:
	if (!rc && st)
		atomic_fetch_add_explicit(&st->chunks, 1, memory_order_relaxed);
	return rc;
}

/* Ask for the split CQ's next completion event, then reap what completed
 * before that (it raises none).  Called with q->lock held. */
void splitjob_arm_locked(struct shim_qp *q)
{
	struct shim_split *sp = &q->split;

	if (!sp->cq || !sp->ch || sp->armed)
		return;
	if (shim_vops()->req_notify_cq(sp->cq, 0))
		shim_log_once("cannot arm a split CQ: split completions are seen at the next tick");
	sp->armed = true;
	splitjob_reap_locked(q);
}

/* Reap split-chunk completions.  Called with q->lock held. */
void splitjob_reap_locked(struct shim_qp *q)
{
	struct shim_split *sp = &q->split;
	struct ibv_wc wc[16];
	uint64_t now = 0;
	int n;

	if (!sp->cq)
		return;
	while ((n = q->sctx->poll_cq(sp->cq, 16, wc)) > 0) {
		if (!now)
			now = shim_now_ns();
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id & SPLITMSG_TAG_MASK)
				splitmsg_on_wc(q, &wc[i]);
			else
				split_chunk_done(q, &wc[i], now);
		}
	}
}

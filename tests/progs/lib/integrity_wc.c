// SPDX-License-Identifier: MIT
/* integrity's completions (see integrity.h): each requester and receive
 * completion checked against the outstanding messages (order, opcode,
 * length, immediate data), logged for --order, and every byte of a
 * completed message verified by checksum.
 * May call: integrity_state, lib/sgl, libibverbs and libc. */
#include "integrity.h"

#include "sgl.h"

#include <endian.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>

/* ------------------------------------------------------------ completions */

static void log_wc(struct wc_log *l, const struct ibv_wc *wc, int has_len)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			integ_fatal("out of memory");
	}
	l->v[l->n++] = (struct wc_rec){ wc->wr_id, wc->byte_len, (int)wc->opcode, (int)wc->status,
					has_len };
}

uint32_t integ_imm_of(uint64_t seq)
{
	return (uint32_t)(seq * 2654435761u) ^ 0xc0ffee;
}

int integ_needs_recv(const struct msg *m)
{
	return m->op == OP_SEND || m->op == OP_WRITE_IMM;
}

static const char *desc(const struct msg *m)
{
	static char b[96];

	snprintf(b, sizeof(b), "seq %" PRIu64 " %s len %u (%d SGE%s, %ssignaled)", m->seq,
		 integ_op_name[m->op], m->len, m->nsge, m->nsge > 1 ? "s" : "",
		 m->signaled ? "" : "un");
	return b;
}

static void on_req_wc(const struct ibv_wc *wc)
{
	static const enum ibv_wc_opcode want_op[OP_MAX] = { IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
							    IBV_WC_SEND, IBV_WC_RDMA_WRITE };
	struct msg *m = NULL;
	unsigned i, skipped = 0;

	log_wc(&req_log, wc, wc->opcode == IBV_WC_RDMA_READ);
	if (wc->status != IBV_WC_SUCCESS)
		integ_fatal("requester completion of wr_id %" PRIu64 ": %s (vendor_err %u)",
			    wc->wr_id, ibv_wc_status_str(wc->status), wc->vendor_err);
	for (i = 0; i < fifo_n; i++) {
		struct msg *x = integ_fifo_at(i);

		if (!x->posted)
			break;
		if (x->req_done)
			continue;
		if (x->seq == wc->wr_id) {
			m = x;
			break;
		}
		if (x->signaled)
			skipped++;
	}
	if (!m) {
		integ_fail("requester completion with wr_id %" PRIu64 ", which is not outstanding",
			   wc->wr_id);
		return;
	}
	if (skipped)
		integ_fail("requester completion of %s arrived before %u earlier signaled WR%s",
			   desc(m), skipped, skipped > 1 ? "s" : "");
	if (!m->signaled)
		integ_fail("requester completion of the unsignaled %s", desc(m));
	if (wc->opcode != want_op[m->op])
		integ_fail("requester completion of %s has opcode %d, want %d", desc(m), wc->opcode,
			   want_op[m->op]);
	else if (m->op == OP_READ && wc->byte_len != m->len)
		integ_fail("requester completion of %s has byte_len %u, want %u", desc(m),
			   wc->byte_len, m->len);
	else if (m->op != OP_READ && wc->byte_len != m->len)
		st.len_differs++;
	for (unsigned j = 0; j <= i; j++)
		integ_fifo_at(j)->req_done = 1;
}

static void on_recv_wc(const struct ibv_wc *wc)
{
	struct msg *m = NULL;
	unsigned i, skipped = 0;

	log_wc(&recv_log, wc, 1);
	if (wc->status != IBV_WC_SUCCESS)
		integ_fatal("receive completion of wr_id %" PRIu64 ": %s (vendor_err %u)",
			    wc->wr_id, ibv_wc_status_str(wc->status), wc->vendor_err);
	for (i = 0; i < fifo_n; i++) {
		struct msg *x = integ_fifo_at(i);

		if (!integ_needs_recv(x) || x->recv_done)
			continue;
		if (x->seq == wc->wr_id) {
			m = x;
			break;
		}
		skipped++;
	}
	if (!m) {
		integ_fail("receive completion with wr_id %" PRIu64 ", which is not outstanding", wc->wr_id);
		return;
	}
	m->recv_done = 1;
	if (skipped)
		integ_fail("receive completion of %s arrived before %u earlier receive%s", desc(m),
			   skipped, skipped > 1 ? "s" : "");
	if (wc->byte_len != m->len)
		integ_fail("receive completion of %s has byte_len %u, want %u", desc(m),
			   wc->byte_len, m->len);
	if (m->op == OP_SEND && (wc->opcode != IBV_WC_RECV || (wc->wc_flags & IBV_WC_WITH_IMM)))
		integ_fail("receive completion of %s has opcode %d flags %#x, want RECV", desc(m),
			   wc->opcode, wc->wc_flags);
	if (m->op == OP_WRITE_IMM) {
		if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc->wc_flags & IBV_WC_WITH_IMM))
			integ_fail("receive completion of %s has opcode %d flags %#x, want "
				   "RECV_RDMA_WITH_IMM",
				   desc(m), wc->opcode, wc->wc_flags);
		else if (be32toh(wc->imm_data) != integ_imm_of(m->seq))
			integ_fail("receive completion of %s has imm_data %#x, want %#x", desc(m),
				   be32toh(wc->imm_data), integ_imm_of(m->seq));
	}
}

/* Every byte of a completed message's destination. */
static void verify(const struct msg *m)
{
	struct ibv_sge rem = { .addr = m->raddr, .length = m->len };
	const struct ibv_sge *src = m->sge, *dst = &rem;
	int ns = m->nsge, nd = 1;
	uint64_t first = 0, bad;

	if (m->op == OP_READ) {
		src = &rem;
		ns = 1;
		dst = m->sge;
		nd = m->nsge;
	} else if (m->op == OP_SEND) {
		dst = m->rsge;
		nd = m->nrsge;
	}
	if ((int64_t)m->seq == opt.corrupt)
		*sgl_byte(dst, nd, m->len / 2) ^= 0x40;
	if (sgl_sum(dst, nd, m->len) != m->sum) {
		bad = sgl_cmp(src, ns, dst, nd, m->len, &first);
		st.corrupted += bad;
		if (bad)
			integ_fail("%s: checksum differs: %" PRIu64 " corrupted bytes, the first "
				   "at offset %" PRIu64,
				   desc(m), bad, first);
		else
			integ_fail(
			    "%s: checksum differs but the bytes compare equal (source changed?)",
			    desc(m));
	}
	if (m->op == OP_SEND) {
		uint64_t spoiled = 0;

		for (uint64_t o = m->len; o < m->rtotal; o++)
			if (*sgl_byte(m->rsge, m->nrsge, o) != CANARY)
				spoiled++;
		if (spoiled) {
			st.corrupted += spoiled;
			integ_fail("%s: %" PRIu64
				   " of the %u receive bytes past the message were written",
				   desc(m), spoiled, m->rtotal - m->len);
		}
	}
}

double last_progress;

/* Poll both CQs once, retire what is complete; returns completions seen. */
static int poll_once(void)
{
	struct ibv_wc wc[16];
	int n, got = 0;

	n = ibv_poll_cq(A.cq, 16, wc);
	if (n < 0)
		integ_fatal("%s: ibv_poll_cq failed", A.name);
	for (int i = 0; i < n; i++)
		on_req_wc(&wc[i]);
	got += n;
	n = ibv_poll_cq(B.cq, 16, wc);
	if (n < 0)
		integ_fatal("%s: ibv_poll_cq failed", B.name);
	for (int i = 0; i < n; i++) {
		if (wc[i].opcode & IBV_WC_RECV)
			on_recv_wc(&wc[i]);
		else
			integ_fatal("%s: unexpected send completion on the responder", B.name);
	}
	got += n;
	while (fifo_n) {
		struct msg *m = integ_fifo_at(0);

		if (!m->req_done || (integ_needs_recv(m) && !m->recv_done))
			break;
		verify(m);
		fifo_head = (fifo_head + 1) % MAX_DEPTH;
		fifo_n--;
	}
	return got;
}

/* Wait for at least one completion (or a stall). */
void integ_wait_progress(void)
{
	unsigned idle = 0;
	int posted = 0;

	for (unsigned i = 0; i < fifo_n; i++)
		posted |= integ_fifo_at(i)->posted;
	if (!posted)
		integ_fatal("internal: waiting with nothing posted");
	while (!poll_once()) {
		if (++idle % 64)
			continue;
		sched_yield();
		if (idle % 4096 == 0 && integ_now_s() - last_progress > STALL_SECONDS) {
			const struct msg *m = integ_fifo_at(0);

			integ_fatal(
			    "no completion for %d s; %u messages outstanding, the oldest %s%s%s",
			    STALL_SECONDS, fifo_n, desc(m), m->req_done ? " (requester done)" : "",
			    m->recv_done ? " (received)" : "");
		}
	}
	last_progress = integ_now_s();
}

// SPDX-License-Identifier: MIT
/* Two-sided split messages (see splitmsg.h).  Everything here runs with the
 * QP's lock held; the data chunks themselves are posted by splitjob.c.
 * Splitter layer; may call: the per-QP state (registry, sge), log, the
 * host's verbs (vops). */
#include "splitmsg.h"

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "log.h"
#include "registry.h"
#include "sge.h"
#include "vops.h"

#define WIRE_MAGIC 0x4a53504cu /* "JSPL" */
#define WIRE_VERSION 1
#define WIRE_HDR 1
#define WIRE_READY 2
#define VERDICT_GO 0
#define VERDICT_WHOLE 1

/* On the wire, little endian:
 *   0 magic u32 | 4 version u8 | 5 type u8 | 6 kind (HDR) or verdict (READY)
 *   u8 | 7 nseg u8 | 8 seq u64 | 16 length u64 | 24 chunk u32 | 28 zero u32 |
 *   32 nseg x {addr u64, rkey u32, len u32} */
#define WIRE_FIXED 32
#define WIRE_SEG 16
#define SPLITMSG_MAX_LEN (1ull << 31) /* the largest RDMA message */
_Static_assert(WIRE_FIXED + SPLITMSG_MAX_SEG * WIRE_SEG <= SPLITMSG_SLOT_SIZE,
	       "a control message fits a slot");

struct wire {
	uint8_t type, arg, nseg;
	uint64_t seq, length;
	uint32_t chunk;
	struct splitmsg_seg seg[SPLITMSG_MAX_SEG];
};

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static size_t wire_encode(uint8_t *p, const struct wire *w)
{
	memset(p, 0, WIRE_FIXED);
	put32(p, WIRE_MAGIC);
	p[4] = WIRE_VERSION;
	p[5] = w->type;
	p[6] = w->arg;
	p[7] = w->nseg;
	put64(p + 8, w->seq);
	put64(p + 16, w->length);
	put32(p + 24, w->chunk);
	for (unsigned i = 0; i < w->nseg; i++) {
		put64(p + WIRE_FIXED + i * WIRE_SEG, w->seg[i].addr);
		put32(p + WIRE_FIXED + i * WIRE_SEG + 8, w->seg[i].rkey);
		put32(p + WIRE_FIXED + i * WIRE_SEG + 12, w->seg[i].len);
	}
	return WIRE_FIXED + (size_t)w->nseg * WIRE_SEG;
}

/* 0, or -EPROTO for what a shim of ours would not send: another magic or
 * version, an unknown type, kind or verdict, a reserved field that is not
 * zero, segments anywhere but in a READY GO, more segments than
 * SPLITMSG_MAX_SEG or than @len holds, or a HDR whose chunk is not inside
 * a message of at most SPLITMSG_MAX_LEN bytes. */
static int wire_decode(const uint8_t *p, size_t len, struct wire *w)
{
	if (len < WIRE_FIXED || get32(p) != WIRE_MAGIC || p[4] != WIRE_VERSION ||
	    get32(p + 28) != 0)
		return -EPROTO;
	w->type = p[5];
	w->arg = p[6];
	w->nseg = p[7];
	w->seq = get64(p + 8);
	w->length = get64(p + 16);
	w->chunk = get32(p + 24);
	if (w->nseg > SPLITMSG_MAX_SEG || len < WIRE_FIXED + (size_t)w->nseg * WIRE_SEG)
		return -EPROTO;
	switch (w->type) {
	case WIRE_HDR:
		if ((w->arg != SPLITMSG_SEND && w->arg != SPLITMSG_WRITE_IMM) || w->nseg ||
		    !w->chunk || w->chunk >= w->length || w->length > SPLITMSG_MAX_LEN)
			return -EPROTO;
		break;
	case WIRE_READY:
		if ((w->arg != VERDICT_GO && w->arg != VERDICT_WHOLE) ||
		    (w->arg == VERDICT_WHOLE && w->nseg) || w->length || w->chunk)
			return -EPROTO;
		break;
	default:
		return -EPROTO;
	}
	for (unsigned i = 0; i < w->nseg; i++) {
		w->seg[i].addr = get64(p + WIRE_FIXED + i * WIRE_SEG);
		w->seg[i].rkey = get32(p + WIRE_FIXED + i * WIRE_SEG + 8);
		w->seg[i].len = get32(p + WIRE_FIXED + i * WIRE_SEG + 12);
	}
	return 0;
}

/* Sends that consume one of the peer's receives, posted so far. */
static uint64_t recv_consumers(const struct shim_qp *q)
{
	static const enum stats_op ops[] = { STATS_OP_SEND, STATS_OP_SEND_WITH_IMM,
					     STATS_OP_RDMA_WRITE_WITH_IMM, STATS_OP_SEND_WITH_INV };
	uint64_t n = 0;

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		n += atomic_load_explicit(&q->st.op[ops[i]].wrs, memory_order_relaxed);
	return n;
}

/* ------------------------------------------------------------ slots */

static int post_slot(struct shim_qp *q, unsigned i)
{
	struct splitmsg_state *m = &q->split.msg;
	struct ibv_sge sg = { .addr = (uintptr_t)(m->buf + (size_t)i * SPLITMSG_SLOT_SIZE),
			      .length = SPLITMSG_SLOT_SIZE, .lkey = m->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = ((uint64_t)i << 3) | SPLITMSG_TAG_RECV,
				  .sg_list = &sg, .num_sge = 1 }, *bad;

	return q->sctx->post_recv(q->split.qp, &wr, &bad);
}

int splitmsg_qp_rts_locked(struct shim_qp *q, const struct ibv_qp_attr *app, int mask)
{
	struct shim_split *sp = &q->split;
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_RTS, .timeout = SPLIT_TIMEOUT_DEFAULT,
				 .retry_cnt = 7,
				 .rnr_retry = 7, /* control slots are always posted: never used */
				 .max_rd_atomic = sp->init_rd_atom, .sq_psn = 0 };
	int want = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		   IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_SQ_PSN;
	int saved = shim_busy, rc;

	if (sp->rts)
		return 0;
	if (app && (mask & IBV_QP_TIMEOUT) && app->timeout)
		m.timeout = app->timeout; /* (0, no timeout at all: ours) */
	if (app && (mask & IBV_QP_RETRY_CNT))
		m.retry_cnt = app->retry_cnt;
	if (app && (mask & IBV_QP_ACCESS_FLAGS)) {
		want |= IBV_QP_ACCESS_FLAGS;
		m.qp_access_flags = app->qp_access_flags;
	}
	shim_busy = 1;
	rc = shim_vops()->modify_qp(sp->qp, &m, want);
	shim_busy = saved;
	if (!rc)
		sp->rts = true;
	return rc;
}

static int send_ctl(struct shim_qp *q, const struct wire *w)
{
	struct splitmsg_state *m = &q->split.msg;
	unsigned i = SPLITMSG_SLOTS + m->send_next++ % SPLITMSG_SLOTS;
	uint8_t *p = m->buf + (size_t)i * SPLITMSG_SLOT_SIZE;
	struct ibv_sge sg = { .addr = (uintptr_t)p, .lkey = m->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = SPLITMSG_TAG_SEND, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	int rc;

	/* an application QP that stays in RTR (receive only): its split QP
	 * goes to RTS for its answers */
	rc = splitmsg_qp_rts_locked(q, NULL, 0);
	if (rc)
		return rc;
	sg.length = (uint32_t)wire_encode(p, w);
	return q->sctx->post_send(q->split.qp, &wr, &bad);
}

/* libibverbs registers memory under a lock of its own (its fork-safety
 * bookkeeping): a fork() while one of the shim's threads is inside
 * ibv_reg_mr() or ibv_dereg_mr() would leave that lock held in the child,
 * whose first registration then hangs for ever.  The application cannot
 * know of the shim's registrations, so the shim keeps fork() out of them
 * (splitmsg_atfork_prepare()). */
static pthread_mutex_t mr_lock = PTHREAD_MUTEX_INITIALIZER;

static struct ibv_mr *mr_reg(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr;
	int err;

	pthread_mutex_lock(&mr_lock);
	mr = shim_vops()->reg_mr(pd, addr, len, access);
	err = errno;
	pthread_mutex_unlock(&mr_lock);
	errno = err;
	return mr;
}

static void mr_dereg(struct ibv_mr *mr)
{
	pthread_mutex_lock(&mr_lock);
	shim_vops()->dereg_mr(mr);
	pthread_mutex_unlock(&mr_lock);
}

void splitmsg_atfork_prepare(void)
{
	pthread_mutex_lock(&mr_lock);
}

void splitmsg_atfork_parent(void)
{
	pthread_mutex_unlock(&mr_lock);
}

void splitmsg_atfork_child(void)
{
	pthread_mutex_init(&mr_lock, NULL);
}

static void rx_free(struct splitmsg_rx *e)
{
	for (int i = 0; i < e->nmr; i++)
		mr_dereg(e->mr[i]);
	free(e);
}

static void fin_drop_all(struct splitmsg_state *m)
{
	struct splitmsg_fin *f;

	while ((f = m->fin_head)) {
		m->fin_head = f->next;
		free(f);
	}
	m->fin_tail = NULL;
	atomic_store_explicit(&m->fin_len, 0, memory_order_relaxed);
}

static void rx_drop_all(struct splitmsg_state *m)
{
	struct splitmsg_rx *e;

	while ((e = m->rx_head)) {
		m->rx_head = e->next;
		rx_free(e);
	}
	m->rx_tail = NULL;
	m->rx_len = 0;
}

int splitmsg_setup(struct shim_qp *q)
{
	struct splitmsg_state *m = &q->split.msg;
	size_t size = 2 * SPLITMSG_SLOTS * SPLITMSG_SLOT_SIZE;

	memset(m, 0, sizeof(*m));
	/* pages of its own: with ibv_fork_init() a registered region is not
	 * inherited by fork(), and heap memory next to it would go too */
	m->buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->buf == MAP_FAILED) {
		m->buf = NULL;
		return -ENOMEM;
	}
	m->mr = mr_reg(q->qp->pd, m->buf, size, IBV_ACCESS_LOCAL_WRITE);
	if (!m->mr) {
		int rc = errno ? -errno : -ENOMEM;

		munmap(m->buf, size);
		m->buf = NULL;
		return rc;
	}
	/* receives posted before the shim counted them cannot be matched */
	m->rx_off = q->qp->srq != NULL ||
		    atomic_load_explicit(&q->st.recv.wrs, memory_order_relaxed) != 0;
	m->tx_base = recv_consumers(q);
	return 0;
}

void splitmsg_teardown(struct shim_qp *q)
{
	struct splitmsg_state *m = &q->split.msg;

	rx_drop_all(m);
	fin_drop_all(m);
	if (m->mr)
		mr_dereg(m->mr);
	if (m->buf)
		munmap(m->buf, 2 * SPLITMSG_SLOTS * SPLITMSG_SLOT_SIZE);
	memset(m, 0, sizeof(*m));
}

void splitmsg_post_slots(struct shim_qp *q)
{
	struct splitmsg_state *m = &q->split.msg;

	/* nothing can be sent before RTS: the counts start here */
	m->tx_base = recv_consumers(q);
	if (!m->mr || m->slots_posted)
		return;
	for (unsigned i = 0; i < SPLITMSG_SLOTS; i++)
		if (post_slot(q, i)) {
			shim_log("QP %u: cannot post the split QP's control receives: "
				 "SENDs go whole", q->qp->qp_num);
			m->rx_off = 1;
			m->tx_off = 1;
			return;
		}
	m->slots_posted = 1;
}

void splitmsg_reset(struct shim_qp *q)
{
	struct splitmsg_state *m = &q->split.msg;

	rx_drop_all(m);
	fin_drop_all(m);
	m->rx_next = 0;
	m->rx_off = q->qp->srq != NULL;
	m->tx_off = 0;
	m->slots_posted = 0; /* the split QP's receives are gone too */
	m->tx_base = recv_consumers(q);
}

/* ------------------------------------------------------------ sender */

int splitmsg_kind_of(const struct shim_qp *q, const struct ibv_send_wr *wr)
{
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
		return SPLITMSG_ONE_SIDED;
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return q->split.msg.tx_off || !q->split.msg.slots_posted ? -1 : SPLITMSG_SEND;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return q->split.msg.tx_off || !q->split.msg.slots_posted ? -1 : SPLITMSG_WRITE_IMM;
	default:
		return -1;
	}
}

int splitmsg_send_hdr(struct shim_qp *q, struct pend_wr *p, uint64_t now)
{
	struct wire w = { .type = WIRE_HDR, .arg = p->kind, .length = p->cost_bytes,
			  .chunk = p->chunk };
	int rc;

	/* everything before this message was posted (it heads the backlog) */
	p->seq = w.seq = recv_consumers(q) - q->split.msg.tx_base;
	rc = send_ctl(q, &w);
	if (rc)
		return rc;
	p->phase = SPLITMSG_WAIT;
	p->deadline_ns = now + SPLITMSG_TIMEOUT_NS;
	return 0;
}

void splitmsg_make_whole(struct shim_qp *q, struct pend_wr *p)
{
	if (p->kind != SPLITMSG_ONE_SIDED)
		atomic_fetch_add_explicit(&q->st.split[STATS_SPLIT_WHOLE], 1,
					  memory_order_relaxed);
	p->chunk = 0;
	p->n_chunks = 1;
	p->zfin = 0;
	p->next_chunk = 0;
	p->kind = SPLITMSG_ONE_SIDED;
	p->phase = SPLITMSG_DATA;
	p->went_whole = 1;
}

static void on_ready(struct shim_qp *q, const struct wire *w)
{
	struct pend_wr *p = q->bl_head;
	uint64_t sum = 0;

	if (!p || p->kind == SPLITMSG_ONE_SIDED || p->phase != SPLITMSG_WAIT || p->seq != w->seq)
		return; /* late, for a message that went whole meanwhile */
	if (w->arg != VERDICT_GO) {
		splitmsg_make_whole(q, p);
		return;
	}
	if (p->kind == SPLITMSG_SEND) {
		for (unsigned i = 0; i < w->nseg; i++)
			sum += w->seg[i].len;
		if (!w->nseg || sum != p->cost_bytes - p->chunk) {
			shim_log("QP %u: the peer's READY does not add up: the message goes whole",
				 q->qp->qp_num);
			splitmsg_make_whole(q, p);
			return;
		}
		memcpy(p->seg, w->seg, w->nseg * sizeof(w->seg[0]));
		p->nseg = w->nseg;
	}
	p->phase = SPLITMSG_DATA;
}

#define FIN_MAX 4096 /* finals whose completion we still wait for */

void splitmsg_tx_final(struct shim_qp *q, uint64_t wr_id, int wc_opcode, uint32_t piece,
		       uint64_t full_len)
{
	struct splitmsg_state *m = &q->split.msg;
	struct splitmsg_fin *f;

	if (atomic_load_explicit(&m->fin_len, memory_order_relaxed) >= FIN_MAX) {
		/* (only signaled finals are kept; one whose WR was flushed
		 * with an error never matches): forget the oldest */
		f = m->fin_head;
		m->fin_head = f->next;
		atomic_fetch_sub_explicit(&m->fin_len, 1, memory_order_relaxed);
		free(f);
	}
	f = malloc(sizeof(*f));
	if (!f)
		return; /* its completion shows the chunk's length */
	*f = (struct splitmsg_fin){ .wr_id = wr_id, .full_len = full_len, .piece = piece,
				    .opcode = wc_opcode };
	if (m->fin_head)
		m->fin_tail->next = f;
	else
		m->fin_head = f;
	m->fin_tail = f;
	atomic_fetch_add_explicit(&m->fin_len, 1, memory_order_relaxed);
}

void splitmsg_tx_unfinal(struct shim_qp *q)
{
	struct splitmsg_state *m = &q->split.msg;
	struct splitmsg_fin **pp = &m->fin_head, *prev = NULL;

	if (!*pp)
		return;
	while ((*pp)->next) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	free(*pp);
	*pp = NULL;
	m->fin_tail = prev;
	atomic_fetch_sub_explicit(&m->fin_len, 1, memory_order_relaxed);
}

/* Send completions come in posting order and only signaled finals are kept
 * (splitjob.c): the first final that matches (wr_id, opcode, the chunk's length)
 * is this one, normally the head; finals ahead of it completed with an
 * error (flushed), which restores no length. */
void splitmsg_tx_done(struct shim_qp *q, struct ibv_wc *wc)
{
	struct splitmsg_state *m = &q->split.msg;
	struct splitmsg_fin *f, *g;

	for (f = m->fin_head; f; f = f->next)
		if (f->wr_id == wc->wr_id && f->opcode == (int)wc->opcode && f->piece == wc->byte_len)
			break;
	if (!f)
		return;
	wc->byte_len = (uint32_t)f->full_len;
	/* forget it and everything ahead of it */
	do {
		g = m->fin_head;
		m->fin_head = g->next;
		atomic_fetch_sub_explicit(&m->fin_len, 1, memory_order_relaxed);
		free(g);
	} while (g != f);
	if (!m->fin_head)
		m->fin_tail = NULL;
}

/* ------------------------------------------------------------ receiver */

static struct splitmsg_rx *rx_find(struct splitmsg_state *m, uint64_t idx)
{
	for (struct splitmsg_rx *e = m->rx_head; e; e = e->next)
		if (e->idx == idx)
			return e;
	return NULL;
}

/* GO for a SEND: register exactly the bytes [chunk, length) of @e's buffer
 * for the peer's split QP to write. */
static int rx_expose(struct shim_qp *q, struct splitmsg_rx *e, const struct wire *h,
		     struct wire *r)
{
	struct ibv_sge sg[SPLITMSG_MAX_SEG];
	int n;

	if (e->total < h->length || !h->chunk || h->chunk >= h->length)
		return -EINVAL; /* the native error comes from the whole message */
	n = shim_split_sges(e->sge, e->nsge, h->chunk, h->length - h->chunk, sg,
			    SPLITMSG_MAX_SEG);
	if (n <= 0)
		return -E2BIG;
	for (int i = 0; i < n; i++) {
		struct ibv_mr *mr = mr_reg(q->qp->pd, (void *)(uintptr_t)sg[i].addr, sg[i].length,
					   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);

		if (!mr) {
			int rc = errno ? -errno : -ENOMEM;

			while (e->nmr)
				mr_dereg(e->mr[--e->nmr]);
			return rc;
		}
		e->mr[e->nmr++] = mr;
		r->seg[i] = (struct splitmsg_seg){ .addr = sg[i].addr, .rkey = mr->rkey,
						   .len = sg[i].length };
	}
	r->nseg = (uint8_t)n;
	return 0;
}

static void on_hdr(struct shim_qp *q, const struct wire *h)
{
	struct splitmsg_state *m = &q->split.msg;
	struct wire r = { .type = WIRE_READY, .arg = VERDICT_WHOLE, .seq = h->seq };
	struct splitmsg_rx *e = m->rx_off ? NULL : rx_find(m, h->seq);

	if (e && !e->full_len) {
		if (h->arg == SPLITMSG_WRITE_IMM)
			r.arg = VERDICT_GO;
		else if (h->arg == SPLITMSG_SEND)
			r.arg = q->split.no_remote_write || rx_expose(q, e, h, &r) ? VERDICT_WHOLE
										: VERDICT_GO;
		if (r.arg == VERDICT_GO)
			e->full_len = h->length;
	}
	if (send_ctl(q, &r)) {
		/* the peer times out and sends it whole */
		shim_log("QP %u: cannot answer the peer's split request", q->qp->qp_num);
		if (e && e->full_len) {
			while (e->nmr)
				mr_dereg(e->mr[--e->nmr]);
		}
	}
}

void splitmsg_on_wc(struct shim_qp *q, const struct ibv_wc *wc)
{
	struct splitmsg_state *m = &q->split.msg;
	unsigned tag = (unsigned)(wc->wr_id & SPLITMSG_TAG_MASK), slot;
	struct wire w;

	if (tag == SPLITMSG_TAG_SEND) {
		if (wc->status != IBV_WC_SUCCESS && !m->tx_off) {
			shim_log("QP %u: a split control message failed (%s): SENDs go whole",
				 q->qp->qp_num, ibv_wc_status_str(wc->status));
			m->tx_off = 1;
			if (q->bl_head && q->bl_head->kind != SPLITMSG_ONE_SIDED &&
			    q->bl_head->phase == SPLITMSG_WAIT)
				splitmsg_make_whole(q, q->bl_head);
		}
		return;
	}
	if (tag != SPLITMSG_TAG_RECV || wc->status != IBV_WC_SUCCESS)
		return; /* flushed: the QP is going down */
	slot = (unsigned)(wc->wr_id >> 3);
	if (slot >= SPLITMSG_SLOTS)
		return;
	if (wire_decode(m->buf + (size_t)slot * SPLITMSG_SLOT_SIZE, wc->byte_len, &w))
		shim_log_once("a malformed split control message: ignored");
	else if (w.type == WIRE_HDR)
		on_hdr(q, &w);
	else if (w.type == WIRE_READY)
		on_ready(q, &w);
	if (post_slot(q, slot))
		shim_log("QP %u: cannot repost a split control receive", q->qp->qp_num);
}

void splitmsg_rx_posted(struct shim_qp *q, const struct ibv_recv_wr *wr,
			const struct ibv_recv_wr *bad)
{
	struct splitmsg_state *m = &q->split.msg;

	for (; wr && wr != bad && m->mr && !m->rx_off; wr = wr->next) {
		size_t n = wr->num_sge > 0 ? (size_t)wr->num_sge : 0;
		struct splitmsg_rx *e;

		e = m->rx_len < SPLITMSG_RX_MAX ? malloc(sizeof(*e) + n * sizeof(e->sge[0])) : NULL;
		if (!e) {
			/* e.g. the application polls with ibv_start_poll, which
			 * the shim does not see: stop tracking */
			shim_log("QP %u: cannot track its receives: SENDs to it go whole",
				 q->qp->qp_num);
			rx_drop_all(m);
			m->rx_off = 1;
			return;
		}
		e->next = NULL;
		e->idx = m->rx_next++;
		e->full_len = 0;
		e->nmr = 0;
		e->nsge = (int)n;
		e->total = 0;
		memcpy(e->sge, wr->sg_list, n * sizeof(e->sge[0]));
		for (size_t i = 0; i < n; i++)
			e->total += wr->sg_list[i].length;
		if (m->rx_tail)
			m->rx_tail->next = e;
		else
			m->rx_head = e;
		m->rx_tail = e;
		m->rx_len++;
	}
}

void splitmsg_rx_done(struct shim_qp *q, struct ibv_wc *wc)
{
	struct splitmsg_state *m = &q->split.msg;
	struct splitmsg_rx *e = m->rx_head;

	if (!e)
		return;
	m->rx_head = e->next;
	if (!m->rx_head)
		m->rx_tail = NULL;
	m->rx_len--;
	if (e->full_len)
		wc->byte_len = (uint32_t)e->full_len;
	rx_free(e);
}

_Static_assert((int)SPLITMSG_SEND == (int)STATS_SPLIT_SEND &&
		       (int)SPLITMSG_WRITE_IMM == (int)STATS_SPLIT_WRITE_IMM &&
		       (int)SPLITMSG_ONE_SIDED == (int)STATS_SPLIT_ONE_SIDED,
	       "splitjob.c counts split messages by kind");

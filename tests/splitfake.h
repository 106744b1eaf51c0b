/* SPDX-License-Identifier: MIT */
/* Two shim QPs whose split QPs talk through memory, for the tests and the
 * fuzzer of the two-sided split protocol (shim/splitmsg.c).  Include once,
 * after nothing else of the shim: it includes shim-all.h.
 *
 * Each side has a fake context whose post_send on the split QP keeps the
 * control message it sends (sf_deliver() hands it to the other side as a
 * receive completion in one of that side's posted control slots) and a
 * memory registration that only records what it was given
 * (ibv_reg_mr/ibv_dereg_mr are defined here, so a binary that includes
 * this never calls libibverbs' own). */
#ifndef JUSTITIA_TESTS_SPLITFAKE_H
#define JUSTITIA_TESTS_SPLITFAKE_H

#include "shim-all.h"

#define SF_OUT 32

struct sf_side {
	struct ibv_context ctx;
	struct ibv_pd pd;
	struct ibv_qp qp, split_qp;
	struct shim_ctx sctx;
	struct shim_qp *q;
	unsigned posted[SPLITMSG_SLOTS * 4]; /* control slots posted, oldest first */
	unsigned n_posted;
	uint8_t out[SF_OUT][SPLITMSG_SLOT_SIZE]; /* control messages sent */
	uint32_t out_len[SF_OUT];
	unsigned n_out;
	int fail_send;                /* post_send on the split QP fails */
};

static struct sf_side sf_a, sf_b;

/* ------------------------------------------------------------ memory registration */

static int sf_mrs;           /* live registrations */
static int sf_mr_fail_after = -1; /* fail the registration after this many more */
static uint32_t sf_next_key = 0x100;
static void (*sf_mr_hook)(void); /* runs inside every registration */

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct ibv_mr *mr;

	if (sf_mr_hook)
		sf_mr_hook();
	if (sf_mr_fail_after == 0) {
		errno = ENOMEM;
		return NULL;
	}
	if (sf_mr_fail_after > 0)
		sf_mr_fail_after--;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = sf_next_key;
	mr->rkey = sf_next_key++;
	sf_mrs++;
	return mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	return (ibv_reg_mr)(pd, addr, length, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	sf_mrs--;
	free(mr);
	return 0;
}

/* ------------------------------------------------------------ the split QPs */

static struct sf_side *sf_side_of(struct ibv_qp *qp)
{
	return qp->qp_context;
}

static int sf_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct sf_side *s = sf_side_of(qp);

	for (; wr; wr = wr->next) {
		uint32_t len = wr->num_sge ? wr->sg_list[0].length : 0;

		if (s->fail_send || qp != &s->split_qp || s->n_out == SF_OUT ||
		    len > SPLITMSG_SLOT_SIZE) {
			*bad = wr;
			return EINVAL;
		}
		memcpy(s->out[s->n_out], (void *)(uintptr_t)wr->sg_list[0].addr, len);
		s->out_len[s->n_out++] = len;
	}
	return 0;
}

static int sf_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct sf_side *s = sf_side_of(qp);

	for (; wr; wr = wr->next) {
		if (qp != &s->split_qp || s->n_posted == sizeof(s->posted) / sizeof(s->posted[0]) ||
		    (wr->wr_id & SPLITMSG_TAG_MASK) != SPLITMSG_TAG_RECV ||
		    wr->sg_list[0].length != SPLITMSG_SLOT_SIZE) {
			*bad = wr;
			return EINVAL;
		}
		s->posted[s->n_posted++] = (unsigned)(wr->wr_id >> 3);
	}
	return 0;
}

static void sf_side_init(struct sf_side *s, uint32_t qpn)
{
	free(s->q);
	memset(s, 0, sizeof(*s));
	s->pd.context = &s->ctx;
	s->qp.context = s->split_qp.context = &s->ctx;
	s->qp.pd = s->split_qp.pd = &s->pd;
	s->qp.qp_context = s->split_qp.qp_context = s;
	s->qp.qp_num = qpn;
	s->qp.qp_type = s->split_qp.qp_type = IBV_QPT_RC;
	s->split_qp.qp_num = qpn + 1;
	s->sctx.post_send = sf_post_send;
	s->sctx.post_recv = sf_post_recv;
	s->q = calloc(1, sizeof(*s->q));
	s->q->sctx = &s->sctx;
	s->q->qp = &s->qp;
	s->q->type = IBV_QPT_RC;
	s->q->split.qp = &s->split_qp;
	s->q->split.peer_split_qpn = -1;
	s->q->split.rts = true; /* connected, as after the application's RTS */
	pthread_mutex_init(&s->q->lock, NULL);
}

/* Both sides, their control slots set up and posted.  0 or -errno. */
static int sf_init(void)
{
	int rc;

	sf_mr_fail_after = -1;
	sf_side_init(&sf_a, 100);
	sf_side_init(&sf_b, 200);
	rc = splitmsg_setup(sf_a.q);
	if (!rc)
		rc = splitmsg_setup(sf_b.q);
	if (rc)
		return rc;
	splitmsg_post_slots(sf_a.q);
	splitmsg_post_slots(sf_b.q);
	return sf_a.q->split.msg.slots_posted && sf_b.q->split.msg.slots_posted ? 0 : -EIO;
}

static void sf_fini(void)
{
	struct sf_side *sides[] = { &sf_a, &sf_b };

	for (int i = 0; i < 2; i++) {
		struct shim_qp *q = sides[i]->q;

		if (!q)
			continue;
		while (q->bl_head) {
			struct pend_wr *p = q->bl_head;

			q->bl_head = p->next;
			free(p);
		}
		splitmsg_teardown(q);
		pthread_mutex_destroy(&q->lock);
		free(q);
		sides[i]->q = NULL;
	}
}

/* Hand @len bytes to @to as a receive completion in its oldest posted
 * control slot (as the other side's split QP would).  0, or -ENOBUFS when
 * @to has no slot posted. */
static int sf_receive(struct sf_side *to, const void *bytes, uint32_t len)
{
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV };
	unsigned slot;

	if (!to->n_posted)
		return -ENOBUFS;
	slot = to->posted[0];
	memmove(to->posted, to->posted + 1, --to->n_posted * sizeof(to->posted[0]));
	if (len > SPLITMSG_SLOT_SIZE)
		len = SPLITMSG_SLOT_SIZE; /* the slot is all the HCA would fill */
	memcpy(to->q->split.msg.buf + (size_t)slot * SPLITMSG_SLOT_SIZE, bytes, len);
	wc.wr_id = ((uint64_t)slot << 3) | SPLITMSG_TAG_RECV;
	wc.byte_len = len;
	wc.qp_num = to->split_qp.qp_num;
	splitmsg_on_wc(to->q, &wc);
	return 0;
}

/* Deliver every control message @from sent so far to the other side.
 * Returns how many. */
static int sf_deliver(struct sf_side *from)
{
	struct sf_side *to = from == &sf_a ? &sf_b : &sf_a;
	unsigned n = from->n_out;

	from->n_out = 0;
	for (unsigned i = 0; i < n; i++)
		if (sf_receive(to, from->out[i], from->out_len[i]))
			return -ENOBUFS;
	return (int)n;
}

/* The application on @s posts one receive of @n buffers of the given
 * lengths at @base, @base + 0x10000, ... */
static void sf_app_recv(struct sf_side *s, uint64_t base, const uint32_t *lens, int n)
{
	struct ibv_sge sg[16];
	struct ibv_recv_wr wr = { .wr_id = 0x77, .sg_list = sg, .num_sge = n };

	for (int i = 0; i < n; i++)
		sg[i] = (struct ibv_sge){ .addr = base + (uint64_t)i * 0x10000, .length = lens[i],
					  .lkey = 1 };
	splitmsg_rx_posted(s->q, &wr, NULL);
}

/* A two-sided message of @len bytes, split at @chunk, at the head of @s's
 * backlog with its HDR sent (phase WAIT).  NULL if the HDR could not go. */
static struct pend_wr *sf_app_send(struct sf_side *s, enum splitmsg_kind kind, uint64_t len,
				   uint32_t chunk)
{
	struct pend_wr *p = calloc(1, sizeof(*p) + sizeof(struct ibv_sge));

	if (!p)
		return NULL;
	p->kind = (uint8_t)kind;
	p->phase = SPLITMSG_HDR;
	p->cost_bytes = len;
	p->chunk = chunk;
	p->n_chunks = chunk ? (uint32_t)((len + chunk - 1) / chunk) : 1;
	p->wr.opcode = kind == SPLITMSG_SEND ? IBV_WR_SEND : IBV_WR_RDMA_WRITE_WITH_IMM;
	p->next = s->q->bl_head;
	s->q->bl_head = p;
	if (!s->q->bl_tail)
		s->q->bl_tail = p;
	s->q->bl_len++;
	if (splitmsg_send_hdr(s->q, p, 0))
		return NULL;
	return p;
}

#endif

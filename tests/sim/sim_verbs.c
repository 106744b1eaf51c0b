// SPDX-License-Identifier: MIT
/* The model as a verbs provider (see sim_verbs.h). */
#include "sim_verbs.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "sim_util.h"

struct sctx {
	struct verbs_context vctx;  /* must stay first: ibv_context is its last member */
	struct ibv_pd pd;           /* the context's one PD: a QP's way back to it */
	struct sim_net *net;
	unsigned host;
};

struct scq {
	struct ibv_cq cq;
	struct ibv_wc *wc;
	uint32_t cap, head, n;
	uint64_t overflow;
	void (*notify)(void *arg);
	void *arg;
};

struct sqp {
	struct ibv_qp qp;
	struct sim_qp *m;
	bool sig_all;
};

static struct sctx *sctx_of(struct ibv_context *ctx)
{
	return (struct sctx *)((char *)ctx - offsetof(struct sctx, vctx.context));
}

static void cqe_in(void *cq, const struct sim_cqe *e)
{
	struct scq *c = cq;
	struct ibv_wc *wc;

	if (c->n == c->cap) {
		c->overflow++;  /* a real CQ would go to error; counted instead */
		return;
	}
	wc = &c->wc[(c->head + c->n++) % c->cap];
	*wc = (struct ibv_wc){ .wr_id = e->wr_id, .qp_num = e->qpn, .byte_len = e->byte_len,
			       .status = e->error ? IBV_WC_RNR_RETRY_EXC_ERR : IBV_WC_SUCCESS };
	if (e->recv)
		wc->opcode = IBV_WC_RECV;
	else if (e->op == SIM_OP_READ)
		wc->opcode = IBV_WC_RDMA_READ;
	else if (e->op == SIM_OP_SEND)
		wc->opcode = IBV_WC_SEND;
	else
		wc->opcode = IBV_WC_RDMA_WRITE;
	if (c->notify)
		c->notify(c->arg);
}

static int s_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	struct scq *c = (struct scq *)cq;
	int got = 0;

	while (got < num && c->n) {
		wc[got++] = c->wc[c->head++ % c->cap];
		c->n--;
	}
	return got;
}

static int op_of(enum ibv_wr_opcode o, enum sim_op *out)
{
	switch (o) {
	case IBV_WR_RDMA_WRITE:
		*out = SIM_OP_WRITE;
		return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		*out = SIM_OP_WRITE_IMM;
		return 0;
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		*out = SIM_OP_SEND;
		return 0;
	case IBV_WR_RDMA_READ:
		*out = SIM_OP_READ;
		return 0;
	default:
		return -EINVAL;
	}
}

static int s_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct sqp *q = (struct sqp *)qp;

	for (; wr; wr = wr->next) {
		struct sim_wr w = { .wr_id = wr->wr_id,
				    .signaled = q->sig_all || (wr->send_flags & IBV_SEND_SIGNALED) };
		uint64_t len = 0;
		int rc = op_of(wr->opcode, &w.op);

		for (int i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (!rc && len > UINT32_MAX)
			rc = -EINVAL;
		w.len = (uint32_t)len;
		if (!rc)
			rc = sim_qp_post_send(q->m, &w);
		if (rc) {
			*bad = wr;
			return -rc;
		}
	}
	return 0;
}

static int s_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct sqp *q = (struct sqp *)qp;

	for (; wr; wr = wr->next)
		sim_qp_post_recv(q->m, wr->wr_id);
	return 0;
}

static struct ibv_qp *s_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	struct sctx *s = sctx_of(ctx);
	struct sqp *q;

	if (a->qp_type != IBV_QPT_RC || !a->send_cq || !a->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	q = sim_zalloc(sizeof(*q));
	q->m = sim_qp_new(s->net, s->host, a->cap.max_send_wr, cqe_in, a->send_cq, a->recv_cq);
	q->sig_all = a->sq_sig_all;
	q->qp.context = ctx;
	q->qp.qp_context = a->qp_context;
	q->qp.pd = a->pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.srq = a->srq;
	q->qp.qp_num = sim_qp_num(q->m);
	q->qp.qp_type = a->qp_type;
	q->qp.state = IBV_QPS_RESET;
	return &q->qp;
}

struct ibv_context *sim_verbs_open(struct sim_net *net, unsigned host)
{
	struct sctx *s = sim_zalloc(sizeof(*s));
	struct ibv_context *ctx = &s->vctx.context;

	s->net = net;
	s->host = host;
	s->pd.context = ctx;
	s->vctx.sz = sizeof(s->vctx);
	s->vctx.create_qp_ex = s_create_qp_ex;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->ops.post_send = s_post_send;
	ctx->ops.post_recv = s_post_recv;
	ctx->ops.poll_cq = s_poll_cq;
	return ctx;
}

void sim_verbs_close(struct ibv_context *ctx)
{
	if (ctx)
		free(sctx_of(ctx));
}

struct ibv_cq *sim_verbs_create_cq(struct ibv_context *ctx, int cqe)
{
	struct scq *c = sim_zalloc(sizeof(*c));

	c->cap = cqe > 0 ? (uint32_t)cqe : 1;
	c->wc = sim_zalloc(c->cap * sizeof(*c->wc));
	c->cq.context = ctx;
	c->cq.cqe = (int)c->cap;
	return &c->cq;
}

void sim_verbs_destroy_cq(struct ibv_cq *cq)
{
	struct scq *c = (struct scq *)cq;

	if (!c)
		return;
	free(c->wc);
	free(c);
}

void sim_verbs_cq_notify(struct ibv_cq *cq, void (*fn)(void *arg), void *arg)
{
	struct scq *c = (struct scq *)cq;

	c->notify = fn;
	c->arg = arg;
}

void sim_verbs_connect(struct ibv_qp *a, struct ibv_qp *b)
{
	sim_qp_connect(((struct sqp *)a)->m, ((struct sqp *)b)->m);
	a->state = b->state = IBV_QPS_RTS;
}

void sim_verbs_destroy_qp(struct ibv_qp *qp)
{
	free(qp); /* the model's QP lives until sim_net_free() */
}

uint64_t sim_verbs_now(struct ibv_context *ctx)
{
	return sim_net_evq(sctx_of(ctx)->net)->now;
}

struct sim_evq *sim_verbs_evq(struct ibv_context *ctx)
{
	return sim_net_evq(sctx_of(ctx)->net);
}

struct ibv_pd *sim_verbs_pd(struct ibv_context *ctx)
{
	return &sctx_of(ctx)->pd;
}

struct ibv_qp *sim_verbs_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct ibv_qp_init_attr_ex x = {
		.qp_context = a->qp_context, .send_cq = a->send_cq, .recv_cq = a->recv_cq,
		.srq = a->srq, .cap = a->cap, .qp_type = a->qp_type, .sq_sig_all = a->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd,
	};

	return s_create_qp_ex(pd->context, &x); /* the model's own, not a wrapper */
}

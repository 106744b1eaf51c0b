// SPDX-License-Identifier: MIT
/* Applications in the model (see sim_flow.h). */
#include "sim_flow.h"

#include <stdalign.h>
#include <string.h>

#include "shm_abi.h"
#include "sim_shim.h"
#include "sim_util.h"
#include "sim_verbs.h"

#define POLL_BATCH 32

static uint64_t now_of(struct sim_flow *f)
{
	return sim_verbs_now(f->ctx);
}

static int post(struct sim_flow *f, uint64_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = (uint32_t)len, .lkey = 1 };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = f->c.opcode, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	int rc;

	if (f->c.opcode == IBV_WR_RDMA_WRITE || f->c.opcode == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = 0x2000;
		wr.wr.rdma.rkey = 2;
	}
	rc = ibv_post_send(f->qp, &wr, &bad);
	if (rc)
		f->errors++;
	return rc;
}

static void pump_app(struct sim_flow *f)
{
	if (!f->started)
		return;
	switch (f->c.kind) {
	case SIM_FLOW_LAT:
		if (f->outstanding)
			return;
		f->outstanding = 1;
		f->post_ns = now_of(f);
		post(f, f->c.msg_bytes, f->next_id++);
		return;
	case SIM_FLOW_BW:
		while (f->outstanding < f->c.depth) {
			f->outstanding++;
			post(f, f->c.msg_bytes, f->next_id++);
		}
		return;
	case SIM_FLOW_TPUT:
		if (f->outstanding)
			return; /* the next batch when the whole batch completed */
		for (uint32_t i = 0; i < f->c.batch; i++) {
			f->outstanding++;
			post(f, f->c.msg_bytes, f->next_id++);
		}
		return;
	}
}

static void pump(struct sim_flow *f)
{
	pump_app(f);
	sim_shim_kick(f->shim); /* what the shim holds back may be due now */
}

/* ------------------------------------------------- completions */
static void add_lat(struct sim_flow *f, uint64_t ns)
{
	if (f->n_lat == f->cap_lat) {
		f->cap_lat = f->cap_lat ? 2 * f->cap_lat : 4096;
		f->lat = sim_realloc(f->lat, f->cap_lat * sizeof(*f->lat));
	}
	f->lat[f->n_lat++] = ns;
}

static void completed(struct sim_flow *f, const struct ibv_wc *wc)
{
	uint64_t now = now_of(f);

	if (wc->status != IBV_WC_SUCCESS)
		f->errors++;
	f->outstanding--;
	f->tot_bytes += f->c.msg_bytes;
	f->tot_msgs++;
	if (now < f->meas_start)
		return;
	f->msgs++;
	f->bytes += f->c.msg_bytes;
	if (f->c.kind == SIM_FLOW_LAT && f->post_ns >= f->meas_start)
		add_lat(f, now - f->post_ns);
}

static void poll_ev(void *arg, uint64_t u)
{
	struct sim_flow *f = arg;
	struct ibv_wc wc[POLL_BATCH];
	int n;

	f->poll_pending = false;
	/* (through the shim, when on: split messages complete whole) */
	while ((n = ibv_poll_cq(f->cq, POLL_BATCH, wc)) > 0)
		for (int i = 0; i < n; i++)
			completed(f, &wc[i]);
	pump(f);
}

static void notify(void *arg)
{
	struct sim_flow *f = arg;

	if (f->poll_pending)
		return;
	f->poll_pending = true;
	sim_evq_after(sim_verbs_evq(f->ctx), 0, poll_ev, f, 0);
}

/* The responder re-posts every receive it consumed (SEND flows). */
static void peer_notify(void *arg)
{
	struct sim_flow *f = arg;
	struct ibv_wc wc[POLL_BATCH];
	int n;

	while ((n = ibv_poll_cq(f->rcq, POLL_BATCH, wc)) > 0)
		for (int i = 0; i < n; i++) {
			struct ibv_recv_wr rw = { .wr_id = wc[i].wr_id }, *bad;

			ibv_post_recv(f->peer_qp, &rw, &bad);
		}
}

/* ------------------------------------------------- setup */
static struct ibv_qp *mk_qp(struct ibv_context *ctx, struct ibv_cq *scq, struct ibv_cq *rcq,
			    uint32_t depth)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_RC, .send_cq = scq, .recv_cq = rcq,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
		.pd = sim_verbs_pd(ctx), /* (the shim's split QP goes in its PD) */
	};

	return ibv_create_qp_ex(ctx, &a); /* through verbs_context.create_qp_ex */
}

static void start_ev(void *arg, uint64_t u)
{
	struct sim_flow *f = arg;

	f->started = true;
	pump(f);
}

static void *zalloc_aligned(size_t align, size_t size)
{
	void *p = aligned_alloc(align, (size + align - 1) / align * align);

	if (!p)
		abort();
	return memset(p, 0, size);
}

/* Justitia by the real shim: the flow's slot (no grant yet: unpaced) and
 * counters, its split QPs (bandwidth flows), attached without a socket. */
static void use_shim(struct sim_flow *f, struct sim_shim *shim)
{
	int cls = f->c.kind == SIM_FLOW_TPUT ? JST_CLASS_THROUGHPUT : JST_CLASS_BANDWIDTH;

	f->shim = shim;
	f->slot = zalloc_aligned(alignof(struct jst_flow_ctl), sizeof(*f->slot));
	f->st = zalloc_aligned(alignof(struct jst_flow_stats), sizeof(*f->st));
	atomic_store(&f->slot->flow_id, f->id + 1);
	atomic_store(&f->slot->cls, (uint32_t)cls);
	atomic_store(&f->slot->weight, f->c.weight ? f->c.weight : 1);
	atomic_store(&f->slot->state, JST_SLOT_ACTIVE);
	if (sim_shim_flow(shim, f->qp, f->peer_qp, f->id + 1, cls,
			  f->c.kind == SIM_FLOW_BW &&
				  (f->c.opcode == IBV_WR_RDMA_WRITE || f->c.opcode == IBV_WR_RDMA_READ),
			  f->slot, f->st))
		f->errors++;
}

struct sim_flow *sim_flow_new(struct ibv_context **ctxs, const struct sim_flow_cfg *c,
			      uint32_t id, struct sim_shim *shim)
{
	struct sim_flow *f = sim_zalloc(sizeof(*f));
	uint32_t depth;
	int cqe;

	f->c = *c;
	if (!f->c.depth)
		f->c.depth = 1;
	if (!f->c.batch)
		f->c.batch = 1;
	if (!f->c.opcode)
		f->c.opcode = IBV_WR_RDMA_WRITE;  /* 0 is IBV_WR_RDMA_WRITE anyway */
	f->id = id;
	f->ctx = ctxs[c->src];
	depth = f->c.depth + f->c.batch + 4;
	cqe = (int)(depth + 16);
	f->cq = sim_verbs_create_cq(f->ctx, cqe);
	f->rcq = sim_verbs_create_cq(ctxs[c->dst], 4 * (int)depth);
	sim_verbs_cq_notify(f->cq, notify, f);
	sim_verbs_cq_notify(f->rcq, peer_notify, f);
	f->qp = mk_qp(f->ctx, f->cq, f->cq, depth);
	f->peer_qp = mk_qp(ctxs[c->dst], f->rcq, f->rcq, depth);
	sim_verbs_connect(f->qp, f->peer_qp);
	if (shim && c->kind != SIM_FLOW_LAT)
		use_shim(f, shim); /* the shim paces and splits */
	if (f->c.opcode == IBV_WR_SEND)
		for (uint32_t i = 0; i < 2 * depth; i++) {
			struct ibv_recv_wr rw = { .wr_id = i }, *bad;

			ibv_post_recv(f->peer_qp, &rw, &bad);
		}
	sim_evq_at(sim_verbs_evq(f->ctx), c->start_ns, start_ev, f, 0);
	return f;
}

void sim_flow_free(struct sim_flow *f)
{
	if (!f)
		return;
	sim_verbs_destroy_qp(f->qp);
	sim_verbs_destroy_qp(f->peer_qp);
	sim_verbs_destroy_cq(f->cq);
	sim_verbs_destroy_cq(f->rcq);
	free(f->slot);
	free(f->st);
	free(f->lat);
	free(f);
}

/* As daemon/flows.c publishes a slot (under its seq counter): a pace mode
 * other than OFF (@chunk set) paces, and splits bandwidth flows.  Returns
 * whether the flags changed. */
static bool publish(struct sim_flow *f, uint64_t rate_bps, uint64_t ops_per_s, uint32_t chunk)
{
	struct jst_flow_ctl *s = f->slot;
	uint32_t flags = !chunk ? 0 : f->c.kind == SIM_FLOW_BW ? JST_F_PACE | JST_F_SPLIT : JST_F_PACE;
	bool changed = atomic_load(&s->flags) != flags;

	atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&s->flags, flags, memory_order_relaxed);
	atomic_store_explicit(&s->chunk_bytes, chunk, memory_order_relaxed);
	atomic_store_explicit(&s->rate_bps, rate_bps, memory_order_relaxed);
	atomic_store_explicit(&s->ops_per_s, ops_per_s, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->seq, 1, memory_order_release);
	return changed;
}

bool sim_flow_grant(struct sim_flow *f, uint64_t rate_bps, uint64_t ops_per_s, uint32_t chunk)
{
	f->grant = (struct sim_grant){ .rate_bps = rate_bps, .ops_per_s = ops_per_s,
				       .chunk = chunk };
	return f->slot && publish(f, rate_bps, ops_per_s, chunk);
}

bool sim_flow_active(const struct sim_flow *f)
{
	return f->outstanding != 0;
}

void sim_flow_measure(struct sim_flow *f, uint64_t now)
{
	f->meas_start = now;
	f->bytes = f->msgs = 0;
	f->n_lat = 0;
}

uint64_t sim_flow_token_wait(const struct sim_flow *f, uint64_t now)
{
	return f->st ? atomic_load_explicit(&f->st->token_wait_ns, memory_order_relaxed) : 0;
}

uint32_t sim_flow_queued_us(const struct sim_flow *f)
{
	return f->st ? atomic_load_explicit(&f->st->queued_us, memory_order_relaxed) : 0;
}

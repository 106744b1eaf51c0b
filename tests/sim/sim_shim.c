// SPDX-License-Identifier: MIT
/* The real shim on the model (see sim_shim.h). */
#include "sim_shim.h"

#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "shim/attach.h"
#include "shim/client.h"
#include "shim/pacectl.h"
#include "shim/registry.h"
#include "shim/shim.h"
#include "shim/split.h"
#include "shim/vclock.h"
#include "shim/vops.h"
#include "sim_evq.h"
#include "sim_util.h"
#include "sim_verbs.h"

#define STUCK_NS 1000ull /* a deadline not after now: come back this much later */

struct sim_shim {
	struct ibv_context **ctxs;
	unsigned hosts;
	struct sim_evq *evq;
	struct jst_shm_global *g;
	uint64_t sched_at;           /* the live step event (UINT64_MAX: none) */
	uint64_t stuck;              /* deadlines that were not after now */
};

static struct sim_shim *cur; /* the shim is one per process */

static uint64_t vnow(void)
{
	return cur->evq->now;
}

/* ------------------------------------------------- wake-ups */
static void step_ev(void *arg, uint64_t u);

static void schedule(struct sim_shim *s, uint64_t t)
{
	if (t >= s->sched_at)
		return;
	s->sched_at = t;
	sim_evq_at(s->evq, t, step_ev, s, t);
}

static void stepped(struct sim_shim *s, uint64_t next)
{
	uint64_t now = s->evq->now;

	if (next <= now) {
		s->stuck++;
		next = now + STUCK_NS;
	}
	schedule(s, next);
}

static void step_ev(void *arg, uint64_t u)
{
	struct sim_shim *s = arg;

	if (u != s->sched_at)
		return; /* superseded by an earlier one */
	s->sched_at = UINT64_MAX;
	stepped(s, shim_pace_step(s->evq->now, NULL));
}

static void split_ev(void *arg, uint64_t u)
{
	struct sim_shim *s = cur;

	if (s)
		stepped(s, shim_pace_step(s->evq->now, (struct ibv_cq *)(uintptr_t)u));
	(void)arg;
}

/* A split CQ got a completion: the channel event the thread would sleep on. */
static void split_notify(void *arg)
{
	if (cur)
		sim_evq_after(cur->evq, 0, split_ev, NULL, (uintptr_t)arg);
}

void sim_shim_kick(struct sim_shim *s)
{
	if (s)
		schedule(s, s->evq->now);
}

/* ------------------------------------------------- the model's verbs for the shim */
static struct ibv_cq *v_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				  struct ibv_comp_channel *ch, int vec)
{
	struct ibv_cq *cq = sim_verbs_create_cq(ctx, cqe);

	cq->cq_context = cq_context;
	sim_verbs_cq_notify(cq, split_notify, cq);
	return cq;
}

static int v_destroy_cq(struct ibv_cq *cq)
{
	sim_verbs_destroy_cq(cq);
	return 0;
}

static int v_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return 0; /* (never called: no channel) */
}

static int v_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	/* the model connects QPs itself (sim_verbs_connect) */
	if (mask & IBV_QP_STATE)
		qp->state = a->qp_state;
	return 0;
}

static int v_destroy_qp(struct ibv_qp *qp)
{
	sim_verbs_destroy_qp(qp);
	return 0;
}

static int v_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	*a = (struct ibv_device_attr){ .max_qp_rd_atom = 16, .max_qp_init_rd_atom = 16 };
	return 0;
}

static struct ibv_mr *v_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr = sim_zalloc(sizeof(*mr));

	*mr = (struct ibv_mr){ .context = pd ? pd->context : NULL, .pd = pd, .addr = addr,
			       .length = len, .lkey = 1, .rkey = 1 };
	return mr;
}

static int v_dereg_mr(struct ibv_mr *mr)
{
	free(mr);
	return 0;
}

static const struct shim_verbs_ops model_vops = {
	.create_cq = v_create_cq, .destroy_cq = v_destroy_cq, .req_notify_cq = v_req_notify_cq,
	.create_qp = sim_verbs_create_qp, .modify_qp = v_modify_qp, .destroy_qp = v_destroy_qp,
	.query_device = v_query_device, .reg_mr = v_reg_mr, .dereg_mr = v_dereg_mr,
};

/* ------------------------------------------------- setup */
struct sim_shim *sim_shim_new(struct ibv_context **ctxs, unsigned hosts)
{
	struct sim_shim *s = sim_zalloc(sizeof(*s));

	s->hosts = hosts;
	s->ctxs = sim_zalloc(hosts * sizeof(*s->ctxs));
	s->evq = sim_verbs_evq(ctxs[0]);
	s->sched_at = UINT64_MAX;
	s->g = aligned_alloc(alignof(struct jst_shm_global), sizeof(*s->g));
	if (!s->g)
		abort();
	memset(s->g, 0, sizeof(*s->g));
	atomic_store(&s->g->flags, JST_G_RUNNING);
	cur = s;
	/* before the first QP: the shim never looks for justitiad's socket,
	 * never starts its thread, reads the model's clock */
	shim_client_attach(s->g);
	shim_pace_set_external();
	shim_vclock_set(vnow);
	shim_vops_set(&model_vops);
	for (unsigned h = 0; h < hosts; h++) {
		s->ctxs[h] = ctxs[h];
		shim_ops_attach(ctxs[h]);
	}
	return s;
}

static int ok_destroy(struct ibv_qp *qp)
{
	return 0; /* (the model frees its QPs) */
}

static int ok_close(struct ibv_context *ctx)
{
	return 0;
}

void sim_shim_free(struct sim_shim *s)
{
	struct shim_qp **qs;
	unsigned *gens;
	size_t n;

	if (!s)
		return;
	n = shim_registry_list(&qs, &gens);
	for (size_t i = 0; i < n; i++) {
		struct ibv_qp *qp = qs[i]->qp;

		shim_pace_qp_gone(qs[i]);
		shim_split_destroy(qs[i]);
		shim_qp_destroy(qp, ok_destroy);
	}
	free(qs);
	free(gens);
	for (unsigned h = 0; h < s->hosts; h++)
		shim_ctx_close(s->ctxs[h], ok_close);
	shim_client_attach(NULL);
	shim_vops_set(NULL);
	shim_vclock_set(NULL);
	cur = NULL;
	free(s->g);
	free(s->ctxs);
	free(s);
}

static struct ibv_qp *split_qp_of(struct ibv_qp *qp)
{
	struct shim_qp *q = shim_qp_find_sure(qp->context, qp->qp_num);

	return q ? q->split.qp : NULL;
}

int sim_shim_flow(struct sim_shim *s, struct ibv_qp *qp, struct ibv_qp *peer_qp,
		  uint32_t flow_id, int cls, bool split, const struct jst_flow_ctl *slot,
		  struct jst_flow_stats *st)
{
	struct ibv_qp_attr rtr = { .path_mtu = IBV_MTU_4096 };
	int a, b, rc;

	if (split) {
		/* each side's shim makes its split QP; the daemons tell each
		 * the other's number (here: the model) */
		a = shim_attach_split(qp);
		b = shim_attach_split(peer_qp);
		if (a < 0 || b < 0)
			return a < 0 ? a : b;
		sim_verbs_connect(split_qp_of(qp), split_qp_of(peer_qp));
		rc = shim_attach_peer_split(qp, &rtr, IBV_QP_PATH_MTU, (uint32_t)b);
		if (!rc)
			rc = shim_attach_peer_split(peer_qp, &rtr, IBV_QP_PATH_MTU, (uint32_t)a);
		if (rc)
			return rc;
	}
	return shim_attach_flow(qp, flow_id, cls, slot, st);
}

void sim_shim_daemon_step(struct sim_shim *s, bool mode_changed)
{
	atomic_store_explicit(&s->g->heartbeat_ns, s->evq->now, memory_order_relaxed);
	if (mode_changed)
		atomic_fetch_add_explicit(&s->g->mode_gen, 1, memory_order_release);
}

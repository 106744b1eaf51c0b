// SPDX-License-Identifier: MIT
/* The daemon's control loop in the model (see sim_ctl.h). */
#include "sim_ctl.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "daemon/config.h"
#include "sim_shim.h"
#include "sim_util.h"
#include "sim_verbs.h"

#define MiB (1024u * 1024u)

void sim_ctl_cfg_default(struct sim_ctl_cfg *c, uint64_t max_rate_bps)
{
	*c = (struct sim_ctl_cfg){
		.max_rate_bps = max_rate_bps,
		.period_ns = 500000,          /* reference.period_us 500 */
		.window = 10000,              /* reference.window */
		.target99_ns = 100000,        /* controller.target99_us 100 */
		.delta_ns = 5000000000ull,    /* unattainable_delta_ms 5000 */
		.stale_ns = 50000000ull,      /* stale_ms 50 */
		.token_bytes = MiB,           /* tokens.bytes */
		.chunk_latency = 5120,
		.chunk_default = MiB,
		.alpha_permille = 500,        /* cpu_alpha 0.5 */
		.ref_peer = 1,
	};
}

static uint8_t cls_of(const struct sim_flow *f)
{
	switch (f->c.kind) {
	case SIM_FLOW_LAT:
		return FLOW_CLASS_LATENCY;
	case SIM_FLOW_TPUT:
		return FLOW_CLASS_THROUGHPUT;
	default:
		return FLOW_CLASS_BANDWIDTH;
	}
}

static uint64_t cpu_now(void)
{
	struct timespec ts;

	/* measures the daemon modules' own cost; never feeds the model */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------- the reference flow */
static void ref_post(struct sim_ctl *k)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 10, .lkey = 1 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;

	wr.wr.rdma.remote_addr = 0x2000;
	wr.wr.rdma.rkey = 2;
	k->ref_post_ns = sim_verbs_now(k->ctx);
	if (!ibv_post_send(k->qp, &wr, &bad))
		k->ref_busy = true;
}

static void ref_done(void *arg)
{
	struct sim_ctl *k = arg;
	struct ibv_wc wc;

	while (ibv_poll_cq(k->cq, 1, &wc) > 0) {
		k->ref_busy = false;
		if (wc.status == IBV_WC_SUCCESS)
			quantile_add(&k->win, sim_verbs_now(k->ctx) - k->ref_post_ns);
	}
}

/* ------------------------------------------------- one step */
static void trace_add(struct sim_ctl *k, uint64_t now, uint64_t cur, uint64_t stream)
{
	if (k->n_trace == k->cap_trace) {
		k->cap_trace = k->cap_trace ? 2 * k->cap_trace : 1024;
		k->trace = sim_realloc(k->trace, k->cap_trace * sizeof(*k->trace));
	}
	k->trace[k->n_trace++] = (struct sim_ctl_point){ .t_ns = now,
							 .safe_util_bps = k->a.safe_util_bps,
							 .current99_ns = cur,
							 .stream_bps = stream,
							 .action = (uint8_t)k->a.action,
							 .mode = (uint8_t)k->mode };
}

static void step(void *arg, uint64_t u)
{
	struct sim_ctl *k = arg;
	uint64_t now = sim_verbs_now(k->ctx), t0, dt, cur = 0, stream;
	uint32_t chunk, n = k->n_flows, n_lat = 0;
	struct aimd_counts cnt;
	struct tokens_params tp;
	bool fresh, kick = false;

	t0 = cpu_now();
	for (uint32_t i = 0; i < k->n_flows; i++) {
		k->cls[i] = cls_of(k->flows[i]);
		k->af[i] = (struct aimd_flow){ .app = i, .cls = k->cls[i],
					       .active = sim_flow_active(k->flows[i]) };
		k->tf[i] = (struct tokens_flow){ .weight = k->flows[i]->c.weight, .app = i,
						 .cls = k->af[i].cls, .active = k->af[i].active };
		n_lat += k->cls[i] == FLOW_CLASS_LATENCY;
	}
	if (k->view) {
		/* requester: register and update this host's flows */
		kick = sim_view_sync(k->view, k->c.host, now);
		/* responder: the READ flows it serves; receiver: the flows
		 * arriving, an incoming latency flow protected as a local one */
		k->n_remote = (uint32_t)rreadtab_fill(&k->view->tab[k->c.host], k->tf + n, k->af + n,
						      n);
		k->n_recv = (uint32_t)rreadtab_fill_recv(&k->view->tab[k->c.host],
							 k->af + n + k->n_remote, n + k->n_remote);
		for (uint32_t i = n + k->n_remote; i < n + k->n_remote + k->n_recv; i++)
			n_lat += k->af[i].cls == FLOW_CLASS_LATENCY;
	}
	aimd_count(k->af, n + k->n_remote + k->n_recv, k->c.one_per_app, &cnt);
	fresh = k->win.total != k->last_total;
	k->last_total = k->win.total;
	if (fresh)
		cur = quantile_ppm(&k->win, 990000);
	aimd_step(&k->a, &k->ac,
		  &(struct aimd_input){ .now_ns = now, .n = cnt, .fresh = fresh,
					.current99_ns = cur });
	tp = (struct tokens_params){
		.safe_util_bps = k->a.safe_util_bps,
		.token_bytes = k->c.token_bytes,
		.token_ops = tokens_token_ops(0, k->c.token_bytes, k->c.max_rate_bps, k->c.max_ops),
		.chunk_bytes = cnt.lat || (k->mode == JST_PACE_PROTECT &&
					   k->c.min_pace_mode != SIM_PACE_PAPER)
				       ? k->c.chunk_latency
							       : k->c.chunk_default,
		.alpha_permille = k->c.alpha_permille,
		.one_per_app = k->c.one_per_app,
	};
	tokens_distribute(k->tf, n + k->n_remote, &tp);
	k->mode = k->c.min_pace_mode == SIM_PACE_PAPER
			  ? JST_PACE_PROTECT
			  : sim_share_step(&k->share, k->flows, k->cls, k->tf, n, k->n_remote,
					   k->view ? n_lat : cnt.lat, now);
	if (k->view) {
		struct rread_tab *t = &k->view->tab[k->c.host];

		/* as controller.c: incoming flows limited only while this
		 * host protects a latency flow */
		rreadtab_recv_shares(t, k->a.safe_util_bps, n_lat ? k->c.max_rate_bps : 0);
		rreadtab_set_chunk(t, tp.chunk_bytes);
		sim_view_after_step(k->view, k->c.host, k->tf + n, k->n_remote, now,
				    k->c.period_ns);
	}
	dt = cpu_now() - t0;
	stream = k->mode == JST_PACE_PROTECT ? k->a.safe_util_bps
		 : k->mode == JST_PACE_SHARE ? k->share.st.c_bps : 0;
	k->steps++;
	k->cpu_ns += dt;
	if (dt > k->cpu_max_ns)
		k->cpu_max_ns = dt;
	if (now >= k->meas_start) {
		k->grant_sum_bps += k->a.safe_util_bps;
		k->stream_sum_bps += stream ? stream : k->c.max_rate_bps;
		k->grant_n++;
	}
	trace_add(k, now, cur, stream);
	/* OFF: the daemon publishes no PACE or SPLIT flag */
	chunk = k->mode == JST_PACE_OFF ? 0 : tp.chunk_bytes;
	{
		struct sim_shim *shim = NULL;
		bool changed = kick;

		for (uint32_t i = 0; i < n; i++) {
			uint64_t rate = k->tf[i].rate_bps;
			uint32_t ch = chunk;

			if (k->view)
				sim_view_apply(k->flows[i], &rate, &ch, k->c.chunk_default);
			changed |= sim_flow_grant(k->flows[i], rate, k->tf[i].ops_per_s, ch);
			shim = k->flows[i]->shim ? k->flows[i]->shim : shim;
		}
		/* the heartbeat, and mode_gen when flags changed */
		if (shim)
			sim_shim_daemon_step(shim, changed);
	}
	/* the reference flow runs while a latency flow exists */
	if (cnt.lat && !k->ref_busy)
		ref_post(k);
	sim_evq_after(sim_verbs_evq(k->ctx), k->c.period_ns, step, k, 0);
}

/* ------------------------------------------------- setup */
static struct ibv_qp *mk_qp(struct ibv_context *ctx, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
	};

	return ibv_create_qp_ex(ctx, &a);
}

int sim_ctl_init(struct sim_ctl *k, struct ibv_context **ctxs, const struct sim_ctl_cfg *c,
		 struct sim_flow **flows, uint32_t n_flows)
{
	int rc;

	memset(k, 0, sizeof(*k));
	k->c = *c;
	rc = quantile_init(&k->win, c->window);
	if (rc)
		return rc;
	k->ac = (struct aimd_config){ .max_rate_bps = c->max_rate_bps, .step_bps = c->step_bps,
				      .period_ns = c->period_ns, .target99_ns = c->target99_ns,
				      .delta_ns = c->delta_ns, .stale_ns = c->stale_ns };
	k->ctx = ctxs[c->host];
	aimd_init(&k->a, &k->ac, sim_verbs_now(k->ctx));
	k->flows = flows;
	k->n_flows = n_flows;
	k->af = sim_zalloc((n_flows + 1) * sizeof(*k->af));
	k->tf = sim_zalloc((n_flows + 1) * sizeof(*k->tf));
	k->cls = sim_zalloc(n_flows + 1);
	k->mode = -1;
	sim_share_init(&k->share, n_flows, c->min_pace_mode, c->max_rate_bps, c->token_bytes,
		       tokens_token_ops(0, c->token_bytes, c->max_rate_bps, c->max_ops));
	k->cq = sim_verbs_create_cq(k->ctx, 8);
	k->peer_cq = sim_verbs_create_cq(ctxs[c->ref_peer], 8);
	k->qp = mk_qp(k->ctx, k->cq);
	k->peer_qp = mk_qp(ctxs[c->ref_peer], k->peer_cq);
	sim_verbs_connect(k->qp, k->peer_qp);
	sim_verbs_cq_notify(k->cq, ref_done, k);
	sim_evq_after(sim_verbs_evq(k->ctx), 0, step, k, 0);
	return 0;
}

void sim_ctl_set_view(struct sim_ctl *k, struct sim_view *v, uint32_t max)
{
	uint32_t n = k->n_flows + max + 1;

	k->view = v;
	k->af = sim_realloc(k->af, n * sizeof(*k->af));
	k->tf = sim_realloc(k->tf, n * sizeof(*k->tf));
	memset(k->af, 0, n * sizeof(*k->af));
	memset(k->tf, 0, n * sizeof(*k->tf));
}

void sim_ctl_fini(struct sim_ctl *k)
{
	quantile_fini(&k->win);
	free(k->af);
	free(k->tf);
	free(k->cls);
	sim_share_fini(&k->share);
	free(k->trace);
	sim_verbs_destroy_qp(k->qp);
	sim_verbs_destroy_qp(k->peer_qp);
	sim_verbs_destroy_cq(k->cq);
	sim_verbs_destroy_cq(k->peer_cq);
	memset(k, 0, sizeof(*k));
}

void sim_ctl_measure(struct sim_ctl *k, uint64_t now)
{
	k->meas_start = now;
	k->grant_sum_bps = k->grant_n = k->stream_sum_bps = 0;
}

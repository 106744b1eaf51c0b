// SPDX-License-Identifier: MIT
/* One run of the model (see sim_run.h). */
#include "sim_run.h"

#include <errno.h>
#include <string.h>

#include "daemon/rread.h"
#include "sim_shim.h"
#include "sim_util.h"
#include "sim_verbs.h"

void sim_params_default(struct sim_params *p)
{
	memset(p, 0, sizeof(*p));
	sim_nic_params_default(&p->nic);
	sim_ctl_cfg_default(&p->ctl, p->nic.line_bps);
	p->ctl.target99_ns = 3000;   /* about twice the lone p99 (docs/rnic-model.md) */
	p->hosts = 2;
	p->warmup_ns = 50000000;
	p->duration_ns = 200000000;
	p->start_ns = 1000000;
	p->seed = 1;
	p->trace_every_ns = 1000000;
	p->channel_ns = SIM_VIEW_DELAY_NS;
	p->sync_ns = RREAD_SYNC_NS;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t rank(const uint64_t *v, uint64_t n, uint64_t ppm)
{
	uint64_t k = (n * ppm + 999999) / 1000000;

	return v[(k ? k : 1) - 1];
}

void sim_lat_stats(uint64_t *v, uint64_t n, struct sim_lat_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_u64);
	*out = (struct sim_lat_stats){ .n = n, .p50 = rank(v, n, 500000),
				       .p99 = rank(v, n, 990000), .p999 = rank(v, n, 999000),
				       .max = v[n - 1] };
}

double sim_jain(const uint64_t *x, uint32_t n)
{
	double s = 0, s2 = 0;

	for (uint32_t i = 0; i < n; i++) {
		s += (double)x[i];
		s2 += (double)x[i] * (double)x[i];
	}
	return s2 > 0 ? s * s / (n * s2) : 1.0;
}

static uint64_t rate(uint64_t bytes, uint64_t ns)
{
	return ns ? (uint64_t)((unsigned __int128)bytes * 8u * 1000000000u / ns) : 0;
}

static void collect(struct sim_result *r, struct sim_flow **fl, uint32_t n, uint64_t dur)
{
	uint64_t nl = 0, *all, k = 0, ops = 0;

	for (uint32_t i = 0; i < n; i++) {
		r->errors += fl[i]->errors;
		if (fl[i]->c.kind == SIM_FLOW_LAT)
			nl += fl[i]->n_lat;
		else if (fl[i]->c.kind == SIM_FLOW_BW)
			r->n_bw++;
		else
			r->n_tput++;
	}
	all = sim_zalloc(nl * sizeof(*all));
	r->bw_bps = sim_zalloc((r->n_bw + 1) * sizeof(*r->bw_bps));
	r->bw_grant = sim_zalloc((r->n_bw + 1) * sizeof(*r->bw_grant));
	r->bw_remote = sim_zalloc((r->n_bw + 1) * sizeof(*r->bw_remote));
	r->bw_min_bps = UINT64_MAX;
	for (uint32_t i = 0, b = 0; i < n; i++) {
		struct sim_flow *f = fl[i];

		if (f->c.kind == SIM_FLOW_LAT) {
			if (f->n_lat)
				memcpy(all + k, f->lat, f->n_lat * sizeof(*all));
			k += f->n_lat;
		} else if (f->c.kind == SIM_FLOW_BW) {
			uint64_t x = rate(f->bytes, dur);

			r->bw_grant[b] = f->grant;
			r->bw_remote[b] = f->remote;
			r->bw_bps[b++] = x;
			r->bw_sum_bps += x;
			if (x < r->bw_min_bps)
				r->bw_min_bps = x;
			if (x > r->bw_max_bps)
				r->bw_max_bps = x;
		} else {
			ops += f->msgs;
		}
	}
	if (!r->n_bw)
		r->bw_min_bps = 0;
	sim_lat_stats(all, nl, &r->lat);
	free(all);
	r->jain = sim_jain(r->bw_bps, r->n_bw);
	r->tput_mops = dur ? (double)ops * 1000.0 / (double)dur : 0;
}

int sim_run(const struct sim_params *p, const struct sim_flow_cfg *f, uint32_t n,
	    bool justitia, struct sim_result *out)
{
	struct ibv_context *ctxs[SIM_MAX_HOSTS];
	struct sim_flow **fl, **mine;
	struct sim_ctl *ctl = NULL;
	struct sim_shim *shim = NULL;
	struct sim_view *view = NULL;
	struct sim_nic_stats st0, st1;
	uint64_t warmup = p->warmup_ns;
	struct sim_evq q;
	struct sim_net *net;
	unsigned hosts = p->hosts < 2 ? 2 : p->hosts;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->justitia = justitia;
	out->views = justitia && p->views;
	if (hosts > SIM_MAX_HOSTS)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if (f[i].src >= hosts || f[i].dst >= hosts || f[i].src == f[i].dst)
			return -EINVAL;
	sim_evq_init(&q);
	net = sim_net_new(&q, &p->nic, hosts, p->seed);
	for (unsigned h = 0; h < hosts; h++)
		ctxs[h] = sim_verbs_open(net, h);
	/* Justitia is the real shim */
	if (justitia)
		shim = sim_shim_new(ctxs, hosts);
	out->shim = shim != NULL;
	fl = sim_zalloc((n + 1) * sizeof(*fl));
	mine = sim_zalloc((n + 1) * sizeof(*mine));
	for (uint32_t i = 0; i < n; i++) {
		struct sim_flow_cfg c = f[i];

		c.start_ns += p->start_ns;
		fl[i] = sim_flow_new(ctxs, &c, i, shim);
	}
	if (out->views) {
		view = sim_view_new(&q, hosts, fl, n, p->channel_ns, p->sync_ns, p->view_kinds);
		warmup += view->sync_ns;
	}
	if (justitia) {
		ctl = sim_zalloc(hosts * sizeof(*ctl));
		for (unsigned h = 0; h < hosts; h++) {
			struct sim_ctl_cfg c = p->ctl;
			uint32_t m = 0;
			bool target = false;

			for (uint32_t i = 0; i < n; i++) {
				if (f[i].src == h)
					mine[m++] = fl[i];
				target |= f[i].dst == h;
			}
			/* with the views, a host that only serves READs or
			 * receives runs its daemon too */
			if (!m && !(view && target))
				continue;
			c.host = h;
			c.ref_peer = (h + 1) % hosts;
			/* the controller keeps its own array: copy this host's flows */
			rc = sim_ctl_init(&ctl[h], ctxs, &c, sim_zalloc((m + 1) * sizeof(*fl)), m);
			if (rc)
				goto out;
			memcpy(ctl[h].flows, mine, m * sizeof(*mine));
			if (view)
				sim_ctl_set_view(&ctl[h], view, n);
		}
	}
	sim_evq_run(&q, warmup);
	for (uint32_t i = 0; i < n; i++)
		sim_flow_measure(fl[i], q.now);
	for (unsigned h = 0; ctl && h < hosts; h++)
		if (ctl[h].flows)
			sim_ctl_measure(&ctl[h], q.now);
	sim_nic_stats(net, 0, &st0);
	sim_evq_run(&q, warmup + p->duration_ns);
	sim_nic_stats(net, 0, &st1);
	collect(out, fl, n, p->duration_ns);
	out->wire_bps = rate(st1.tx_wire - st0.tx_wire, p->duration_ns);
	out->events = q.ran;
	for (unsigned h = 0; view && h < hosts; h++) {
		size_t lat, bw;

		rreadtab_recv_count(&view->tab[h], &lat, &bw);
		out->served_recv += (uint32_t)(lat + bw);
		out->served_read += (uint32_t)(view->tab[h].total - lat - bw);
		out->view_grants += view->tab[h].grants_sent;
	}
	if (ctl && ctl[0].flows) {
		struct sim_ctl *k = &ctl[0];
		uint64_t every = p->trace_every_ns ? p->trace_every_ns : 1, next = 0;

		out->safe_util_avg_bps = k->grant_n ? k->grant_sum_bps / k->grant_n : 0;
		out->stream_avg_bps = k->grant_n ? k->stream_sum_bps / k->grant_n : 0;
		out->mode_changes = k->share.mode_changes;
		out->steps = k->steps;
		out->cpu_ns_per_step = k->steps ? (double)k->cpu_ns / (double)k->steps : 0;
		out->cpu_max_ns = (double)k->cpu_max_ns;
		out->trace = sim_zalloc((k->n_trace + 1) * sizeof(*out->trace));
		for (uint32_t i = 0; i < k->n_trace; i++)
			if (k->trace[i].t_ns >= next) {
				out->trace[out->n_trace++] = k->trace[i];
				next = k->trace[i].t_ns + every;
			}
	}
out:
	sim_shim_free(shim); /* (before the model's QPs go) */
	for (unsigned h = 0; ctl && h < hosts; h++)
		if (ctl[h].flows) {
			free(ctl[h].flows);
			sim_ctl_fini(&ctl[h]);
		}
	free(ctl);
	sim_view_free(view);
	for (uint32_t i = 0; i < n; i++)
		sim_flow_free(fl[i]);
	free(fl);
	free(mine);
	for (unsigned h = 0; h < hosts; h++)
		sim_verbs_close(ctxs[h]);
	sim_net_free(net);
	sim_evq_fini(&q);
	return rc;
}

void sim_result_free(struct sim_result *r)
{
	free(r->bw_bps);
	free(r->bw_grant);
	free(r->bw_remote);
	free(r->trace);
	memset(r, 0, sizeof(*r));
}

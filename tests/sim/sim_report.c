// SPDX-License-Identifier: MIT
/* justsim's output (see sim_report.h). */
#include "sim_report.h"

#include "shim/wrpost.h"

static const char *arb_name(enum sim_arb a)
{
	return a == SIM_ARB_BURST ? "burst" : "wqe";
}

static const char *mode_name(int m)
{
	switch (m) {
	case SIM_PACE_PAPER:
		return "paper";
	case JST_PACE_SHARE:
		return "share";
	case JST_PACE_PROTECT:
		return "protect";
	default:
		return "auto";
	}
}

static const char *variant(const struct sim_result *r)
{
	return !r->justitia ? "plain" : r->views ? "views" : "justitia";
}

static const char *kinds_name(unsigned k)
{
	return k == SIM_VIEW_READ ? "read" : k == SIM_VIEW_RECV ? "recv" : "both";
}

json_t *sim_report_params(const struct sim_params *p)
{
	const struct sim_nic_params *n = &p->nic;
	const struct sim_ctl_cfg *c = &p->ctl;

	return json_pack(
		"{s:{s:I,s:I,s:i,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:i,s:I}"
		",s:{s:I,s:I,s:i,s:I,s:I,s:i,s:i,s:s,s:s}"
		",s:I,s:I,s:I,s:{s:I,s:I,s:s}}",
		"nic", "line_bps", (json_int_t)n->line_bps, "rx_bps", (json_int_t)n->rx_bps,
		"mtu", (int)n->mtu, "hdr_bytes", (int)n->hdr_bytes, "prop_ns",
		(json_int_t)n->prop_ns, "fetch_ns", (json_int_t)n->fetch_ns, "fetch_jitter_ns",
		(json_int_t)n->fetch_jitter_ns, "wqe_ns", (json_int_t)n->wqe_ns, "resp_ns",
		(json_int_t)n->resp_ns, "cqe_ns", (json_int_t)n->cqe_ns, "arbiter",
		arb_name(n->arb), "burst_pkts", (int)n->burst_pkts, "pfc_ns", (json_int_t)n->pfc_ns,
		"controller", "max_rate_bps", (json_int_t)c->max_rate_bps, "period_ns",
		(json_int_t)c->period_ns, "window", (int)c->window, "target99_ns",
		(json_int_t)c->target99_ns, "token_bytes", (json_int_t)c->token_bytes,
		"chunk_latency", (int)c->chunk_latency, "chunk_default", (int)c->chunk_default,
		"pace_mode", mode_name(c->min_pace_mode), "pacer", "shim (shim/)",
		"seed", (json_int_t)p->seed, "warmup_ns", (json_int_t)p->warmup_ns, "duration_ns",
		(json_int_t)p->duration_ns, "views", "channel_ns", (json_int_t)p->channel_ns,
		"sync_ns", (json_int_t)p->sync_ns, "kinds", kinds_name(p->view_kinds));
}

void sim_report_params_text(FILE *f, const struct sim_params *p)
{
	const struct sim_nic_params *n = &p->nic;
	const struct sim_ctl_cfg *c = &p->ctl;

	fprintf(f,
		"model: %.0f Gbit/s tx, %.0f Gbit/s rx, MTU %u + %u B headers, prop %llu ns, "
		"fetch %llu+[0,%llu) ns, %llu ns/WQE, resp %llu ns, cqe %llu ns, arbiter %s",
		n->line_bps / 1e9, n->rx_bps / 1e9, n->mtu, n->hdr_bytes,
		(unsigned long long)n->prop_ns, (unsigned long long)n->fetch_ns,
		(unsigned long long)n->fetch_jitter_ns, (unsigned long long)n->wqe_ns,
		(unsigned long long)n->resp_ns, (unsigned long long)n->cqe_ns, arb_name(n->arb));
	if (n->arb == SIM_ARB_BURST)
		fprintf(f, " (%u packets)", n->burst_pkts);
	fprintf(f, ", PFC at %llu ns", (unsigned long long)n->pfc_ns);
	fprintf(f,
		"\ncontroller: MaxRate %.0f Gbit/s, RefPeriod %llu us, window %u, Target99 %.2f us, "
		"TokenBytes %llu, chunk %u B (latency flows; the shim splits at %u, whole "
		"packets) / %u B, "
		"pace mode %s, pacer: the real shim (shim/)\n"
		"views: %s, channel %llu us one way, sync every %llu ms (row \"views\": warmup + sync)\n"
		"run: seed %llu, warmup %llu ms, measured %llu ms\n",
		c->max_rate_bps / 1e9, (unsigned long long)c->period_ns / 1000, c->window,
		c->target99_ns / 1e3, (unsigned long long)c->token_bytes, c->chunk_latency,
		wrpost_whole_packets(c->chunk_latency, n->mtu), c->chunk_default,
		mode_name(c->min_pace_mode),
		kinds_name(p->view_kinds), (unsigned long long)p->channel_ns / 1000,
		(unsigned long long)p->sync_ns / 1000000,
		(unsigned long long)p->seed,
		(unsigned long long)p->warmup_ns / 1000000,
		(unsigned long long)p->duration_ns / 1000000);
}

json_t *sim_report_run(const struct sim_scen *s, const struct sim_params *p,
		       const struct sim_result *r, int trace)
{
	json_t *o = json_pack("{s:s,s:s,s:I,s:b,s:I}", "scenario", s->name, "variant",
			      variant(r), "events", (json_int_t)r->events,
			      "shim", r->shim,
			      "errors", (json_int_t)r->errors);

	if (r->lat.n)
		json_object_set_new(o, "latency",
				    json_pack("{s:I,s:I,s:I,s:I,s:I}", "samples",
					      (json_int_t)r->lat.n, "p50_ns", (json_int_t)r->lat.p50,
					      "p99_ns", (json_int_t)r->lat.p99, "p999_ns",
					      (json_int_t)r->lat.p999, "max_ns",
					      (json_int_t)r->lat.max));
	if (r->n_bw) {
		json_t *a = json_array();

		for (uint32_t i = 0; i < r->n_bw && i < 64; i++)
			json_array_append_new(a, json_integer((json_int_t)r->bw_bps[i]));
		json_object_set_new(o, "bandwidth",
				    json_pack("{s:i,s:I,s:I,s:I,s:f,s:o}", "flows", (int)r->n_bw,
					      "sum_bps", (json_int_t)r->bw_sum_bps, "min_bps",
					      (json_int_t)r->bw_min_bps, "max_bps",
					      (json_int_t)r->bw_max_bps, "jain", r->jain,
					      "first_flows_bps", a));
	}
	if (r->n_tput)
		json_object_set_new(o, "throughput",
				    json_pack("{s:i,s:f}", "flows", (int)r->n_tput, "mops",
					      r->tput_mops));
	json_object_set_new(o, "wire_bps", json_integer((json_int_t)r->wire_bps));
	if (r->views)
		json_object_set_new(o, "views",
				    json_pack("{s:i,s:i,s:I}", "served_read", (int)r->served_read,
					      "served_recv", (int)r->served_recv, "grants",
					      (json_int_t)r->view_grants));
	if (r->justitia && r->steps) {
		json_t *t = json_array();

		for (uint32_t i = 0; trace && i < r->n_trace; i++)
			json_array_append_new(t, json_pack("[I,I,I,I,i]",
							   (json_int_t)r->trace[i].t_ns,
							   (json_int_t)r->trace[i].safe_util_bps,
							   (json_int_t)r->trace[i].current99_ns,
							   (json_int_t)r->trace[i].stream_bps,
							   (int)r->trace[i].mode));
		json_object_set_new(o, "controller",
				    json_pack("{s:I,s:I,s:i,s:I,s:f,s:f,s:o}", "safe_util_avg_bps",
					      (json_int_t)r->safe_util_avg_bps, "stream_avg_bps",
					      (json_int_t)r->stream_avg_bps, "pace_mode_changes",
					      (int)r->mode_changes, "steps",
					      (json_int_t)r->steps, "cpu_ns_per_step",
					      r->cpu_ns_per_step, "cpu_max_ns", r->cpu_max_ns,
					      "trace_t_safeutil_current99_stream_mode", t));
	}
	return o;
}

void sim_report_head(FILE *f)
{
	fprintf(f, "%-14s %-8s %8s %8s %8s %9s %9s %6s %7s %9s %9s\n", "scenario", "variant",
		"p50 us", "p99 us", "p99.9 us", "bw Gb/s", "min Gb/s", "jain", "tput Mo", "tokens Gb",
		"ctl us");
}

static void us(FILE *f, uint64_t ns, uint64_t n)
{
	if (n)
		fprintf(f, " %8.2f", ns / 1e3);
	else
		fprintf(f, " %8s", "-");
}

void sim_report_row(FILE *f, const struct sim_scen *s, const struct sim_result *r)
{
	fprintf(f, "%-14s %-8s", s->name, variant(r));
	us(f, r->lat.p50, r->lat.n);
	us(f, r->lat.p99, r->lat.n);
	us(f, r->lat.p999, r->lat.n);
	if (r->n_bw)
		fprintf(f, " %9.2f %9.3f %6.3f", r->bw_sum_bps / 1e9, r->bw_min_bps / 1e9, r->jain);
	else
		fprintf(f, " %9s %9s %6s", "-", "-", "-");
	if (r->n_tput)
		fprintf(f, " %7.2f", r->tput_mops);
	else
		fprintf(f, " %7s", "-");
	if (r->justitia && r->steps)
		fprintf(f, " %9.2f %9.2f\n", r->stream_avg_bps / 1e9, r->cpu_ns_per_step / 1e3);
	else
		fprintf(f, " %9s %9s\n", "-", "-");
}

// SPDX-License-Identifier: MIT
/* The isolation controller (see controller.h). */
#include "controller.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "justitiad.h"
#include "log.h"
#include "proto.h"
#include "shm_abi.h"

#define RELAXED memory_order_relaxed
#define LINK_REFRESH_NS 1000000000ull
#define MiB 1048576u
#define DEBUG_EVERY_NS 1000000000ull   /* -D ctrl,token: one summary a second */

static uint64_t period_ns(const struct ctrl *c)
{
	return (uint64_t)c->d->cfg.reference.period_us * 1000;
}

/* The configuration entry of the controlled port, if any. */
static const struct config_device *devcfg(const struct ctrl *c)
{
	const struct config *cfg = &c->d->cfg;

	for (size_t i = 0; i < cfg->n_devices; i++)
		if (!strcmp(cfg->devices[i].name, c->dev) && cfg->devices[i].port == c->port)
			return &cfg->devices[i];
	return NULL;
}

/* A flow's device never changes, its port may (update_qp): the name
 * comparison is cached in the flow until the controlled port changes. */
static bool on_port(const struct ctrl *c, struct flow *f)
{
	if (f->ctl_gen != c->dev_gen) {
		f->ctl_gen = c->dev_gen;
		f->ctl_dev = c->dev[0] && !strcmp(f->device, c->dev);
	}
	return f->ctl_dev && (!f->port || f->port == c->port);
}

/* devices[0], or the first active port; its link speed; its calibration. */
static void resolve_port(struct ctrl *c)
{
	const struct config *cfg = &c->d->cfg;
	struct rdma_dev rd;
	char err[160];
	const char *probe_dev;

	c->dev[0] = 0;
	c->port = 0;
	c->gid = -1;
	c->dev_gen++;
	if (cfg->n_devices) {
		snprintf(c->dev, sizeof(c->dev), "%s", cfg->devices[0].name);
		c->port = cfg->devices[0].port;
		c->gid = cfg->devices[0].gid_index;
	}
	c->link_bps = 0;
	if (!rdma_dev_open(&rd, c->dev, c->port, c->gid, err, sizeof(err))) {
		if (!c->dev[0]) {
			snprintf(c->dev, sizeof(c->dev), "%s", rd.name);
			c->port = rd.port;
		}
		c->link_bps = rd.link_bps;
		rdma_dev_close(&rd);
	} else {
		log_warnx("controller: %s%s%s", c->dev, c->dev[0] ? ": " : "", err);
	}
	if (c->dev[0]) {
		calib_load(cfg->state_dir, c->dev, c->port, &c->calib_bps, &c->calib_at);
		if (c->calib_bps)
			log_info("controller: %s port %u calibrated at %llu bit/s", c->dev, c->port,
				 (unsigned long long)c->calib_bps);
	}
	/* the probes leave from reference.peers[0].device when it names one */
	probe_dev = cfg->n_peers && cfg->peers[0].device[0] ? cfg->peers[0].device : c->dev;
	if (c->ref_ok)
		refflow_set_device(&c->ref, probe_dev, strcmp(probe_dev, c->dev) ? 0 : c->port,
			   strcmp(probe_dev, c->dev) ? -1 : c->gid);
}

/* MaxRate: devices[].max_rate (or justctl set max-rate), else the stored
 * calibration, else the port's link speed. */
static uint64_t resolve_max_rate(struct ctrl *c)
{
	const struct config_device *dv = devcfg(c);

	if (dv && dv->max_rate_bps) {
		c->max_rate_src = "config";
		return dv->max_rate_bps;
	}
	if (c->calib_bps) {
		c->max_rate_src = "calibrated";
		return c->calib_bps;
	}
	if (c->link_bps) {
		c->max_rate_src = "link";
		return c->link_bps;
	}
	c->max_rate_src = "unknown";
	return 0;
}

uint64_t ctrl_device_max_rate(struct ctrl *c, const struct config_device *dv)
{
	if (dv->max_rate_bps)
		return dv->max_rate_bps;
	if (!strcmp(dv->name, c->dev) && dv->port == c->port)
		return c->calib_bps ? c->calib_bps : c->link_bps;
	return 0;
}

static int ensure_capacity(struct ctrl *c, size_t n)
{
	if (n <= c->cap)
		return 0;
	free(c->tf);
	free(c->af);
	free(c->fp);
	free(c->sf);
	c->tf = calloc(n, sizeof(*c->tf));
	c->af = calloc(n, sizeof(*c->af));
	c->fp = calloc(n, sizeof(*c->fp));
	c->sf = calloc(n, sizeof(*c->sf));
	c->cap = c->tf && c->af && c->fp && c->sf ? n : 0;
	return c->cap ? 0 : -ENOMEM;
}

static void log_event(struct ctrl *c, enum aimd_event ev)
{
	const struct config_controller *cc = &c->d->cfg.controller;

	switch (ev) {
	case AIMD_EV_UNATTAINABLE:
		log_warnx("latency target %u us missed for %u ms: unattainable (policy keep: still "
			  "protected)", cc->target99_us, cc->unattainable_delta_ms);
		break;
	case AIMD_EV_ENTER_IGNORE:
		log_warnx("latency target %u us missed for %u ms: ignoring latency flows until "
			  "L/(B+T) grows (policy ignore_latency)", cc->target99_us,
			  cc->unattainable_delta_ms);
		break;
	case AIMD_EV_LEAVE_IGNORE:
		log_info("latency flows protected again (normal mode)");
		break;
	case AIMD_EV_ATTAINABLE:
		log_info("latency target %u us met again", cc->target99_us);
		break;
	case AIMD_EV_STALE:
		log_warnx("no reference sample for %u ms: treating the gap as a violation",
			  cc->stale_ms);
		break;
	case AIMD_EV_FRESH:
		log_info("reference samples are back");
		break;
	default:
		break;
	}
}

static void publish_global(struct ctrl *c, uint32_t n_latency)
{
	struct jst_shm_global *g = c->d->flows.global.base;

	atomic_store_explicit(&g->safe_util_bps, c->aimd.safe_util_bps, RELAXED);
	atomic_store_explicit(&g->max_rate_bps, c->max_rate_bps, RELAXED);
	atomic_store_explicit(&g->current99_ns, c->have99 ? c->current99_ns : 0, RELAXED);
	atomic_store_explicit(&g->mode, (uint32_t)c->aimd.mode, RELAXED);
	atomic_store_explicit(&g->chunk_bytes, c->chunk_bytes, RELAXED);
	atomic_store_explicit(&g->alpha_permille,
			      (uint32_t)(c->d->cfg.controller.cpu_alpha * 1000 + 0.5), RELAXED);
	atomic_store_explicit(&g->token_bytes, c->d->cfg.tokens.bytes, RELAXED);
	atomic_store_explicit(&g->pace_mode, (uint32_t)c->pace_mode, RELAXED);
	/* after the slots it announces (flows_publish_all) */
	atomic_store_explicit(&g->mode_gen, c->mode_gen, memory_order_release);
	atomic_store_explicit(&g->flags, JST_G_RUNNING | (n_latency ? JST_G_LATENCY : 0),
			      memory_order_release);
}

static void trace_add(struct ctrl *c, uint64_t now)
{
	uint64_t t = now - c->d->start_ns, su = c->aimd.safe_util_bps;
	struct ctrl_trace *a = &c->acc;

	if (!c->acc_open) {
		*a = (struct ctrl_trace){ .t_ns = t, .min_bps = su, .max_bps = su,
					  .floor_bps = c->aimd.floor_bps };
		c->acc_open = true;
	}
	if (c->aimd.floor_bps < a->floor_bps)
		a->floor_bps = c->aimd.floor_bps;
	if (su < a->min_bps)
		a->min_bps = su;
	if (su > a->max_bps)
		a->max_bps = su;
	a->safe_util_bps = su;
	a->current99_ns = c->have99 ? c->current99_ns : 0;
	a->mode = (uint8_t)c->aimd.mode;
	if (t - a->t_ns < CTRL_TRACE_NS)
		return;
	a->t_ns = t;
	c->trace[c->trace_head] = *a;
	c->trace_head = (c->trace_head + 1) % CTRL_TRACE;
	if (c->trace_n < CTRL_TRACE)
		c->trace_n++;
	c->acc_open = false;
}

static void fill_view(struct ctrl *c)
{
	struct ctrl_view *v = &c->d->ctrl;
	const struct refflow *rf = &c->ref;

	v->mode = (int)c->aimd.mode;
	v->current99_ns = c->have99 ? c->current99_ns : 0;
	v->p50_ns = c->have99 ? c->p50_ns : 0;
	v->p999_ns = c->have99 ? c->p999_ns : 0;
	v->safe_util_bps = c->aimd.safe_util_bps;
	v->samples = rf->samples;
	v->ref_state = rf->wanted ? refflow_state_name(rf->state) : "off";
	snprintf(v->ref_peer, sizeof(v->ref_peer), "%s",
		 c->ref_ok && (rf->wanted || rf->s.up) ? refflow_peer_name(rf) : "");
	snprintf(v->ref_error, sizeof(v->ref_error), "%s",
		 !c->ref_ok ? "no peer channel" : rf->wanted ? rf->error : "");
}


/* ------------------------------------------------------------ pace modes */

static bool hungry_cls(int cls)
{
	return cls == FLOW_CLASS_BANDWIDTH || cls == FLOW_CLASS_THROUGHPUT;
}

/* Competing for the link: active, or moved something over the last share
 * window (a paced flow of large messages may post less often than the
 * activity window). */
static bool competing(const struct flow *f)
{
	return hungry_cls(f->cls) && (f->active || f->meas_bps || f->meas_ops);
}

/* Throughput flows spend ops: a bit/s of the token stream buys this many
 * ops/s (TokenOps per 8 TokenBytes bits). */
static double ops_per_bit(const struct ctrl *c)
{
	uint64_t tb = c->d->cfg.tokens.bytes;

	return tb ? (double)c->token_ops / (8.0 * (double)tb) : 0;
}

/* What the flow moved over the window, as bit/s of the token stream. */
static double used_bps(const struct ctrl *c, const struct flow *f)
{
	double opb = ops_per_bit(c);

	if (f->cls == FLOW_CLASS_THROUGHPUT)
		return opb > 0 ? (double)f->meas_ops / opb : 0;
	return (double)f->meas_bps;
}

static double granted_bps(const struct ctrl *c, const struct flow *f)
{
	double opb = ops_per_bit(c);

	if (f->cls == FLOW_CLASS_THROUGHPUT)
		return opb > 0 ? (double)f->ops_per_s / opb : 0;
	return (double)f->rate_bps;
}

/* Every SHARE_WINDOW_NS: each flow's achieved rates over the window.  A
 * split message counts its bytes when its last chunk goes, which at a low
 * grant may take longer than a window: its chunks (at the chunk size)
 * count too, whichever says more.  Returns true when a window ended. */
static bool measure_window(struct ctrl *c, size_t n, uint64_t now)
{
	uint64_t dt = now - c->win_t0_ns;

	if (c->win_t0_ns && dt < SHARE_WINDOW_NS)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct flow *f = c->fp[i];

		if (c->win_t0_ns && f->win_bytes0 <= f->last.bytes && f->win_ops0 <= f->last.ops &&
		    f->win_chunks0 <= f->last.chunks && f->win_wait0 <= f->last.token_wait_ns) {
			uint64_t b = f->last.bytes - f->win_bytes0;
			uint64_t cb = (f->last.chunks - f->win_chunks0) * (uint64_t)c->chunk_bytes;
			double bound = (double)(f->last.token_wait_ns - f->win_wait0) / (double)dt;

			f->meas_bps = (uint64_t)((double)(cb > b ? cb : b) * 8e9 / (double)dt);
			f->meas_ops = (uint64_t)((double)(f->last.ops - f->win_ops0) * 1e9 /
						 (double)dt);
			/* (the shim's word, untrusted: a fraction of the window) */
			f->meas_bound = bound < 1 ? bound : 1;
		} else {
			f->meas_bps = f->meas_ops = 0;
			f->meas_bound = 0;
		}
		f->win_bytes0 = f->last.bytes;
		f->win_ops0 = f->last.ops;
		f->win_chunks0 = f->last.chunks;
		f->win_wait0 = f->last.token_wait_ns;
	}
	c->win_t0_ns = now;
	return true;
}

/* SHARE: the tokens' rate is C, adapted every window (share.h), and each
 * active flow's grant its max-min fair fraction of C; a flow not active
 * gets what it would get if it became active now. */
static void share_rates(struct ctrl *c, size_t n, bool window_ended, bool entered)
{
	struct share_flow *sf = c->sf;
	double opb = ops_per_bit(c), w_act = 0, cap;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		struct flow *f = c->fp[i];
		double cb = c->share.c_bps ? (double)c->share.c_bps : 1;

		if (!competing(f))
			continue;
		sf[k] = (struct share_flow){
			.weight = f->weight,
			.granted = entered ? 0 : granted_bps(c, f) / cb,
			.used = used_bps(c, f) / cb,
			.bound = f->meas_bound,
			.satisfied = f->share_sat,
			.fill = f->share_fill,
		};
		k++;
	}
	if (entered) {
		double sum = 0;

		for (size_t i = 0; i < n; i++)
			if (hungry_cls(c->fp[i]->cls))
				sum += used_bps(c, c->fp[i]);
		/* the more of what the flows moved together and MaxRate (flows
		 * that just started moved next to nothing: C would start at a
		 * crawl and climb a window at a time), else no cap to speak
		 * of: the first windows find it */
		uint64_t c0 = c->max_rate_bps ? c->max_rate_bps : SHARE_START_BPS;

		share_start(&c->share, sum > (double)c0 ? (uint64_t)sum : c0, sf, k);
	} else if (window_ended) {
		uint64_t c_old = c->share.c_bps;

		char line[256];
		int at = 0;

		share_update(&c->share, sf, k);
		/* per flow: used/granted, bound, satisfied, new fraction */
		for (size_t j = 0; j < k && at >= 0 && (size_t)at < sizeof(line); j++)
			at += snprintf(line + at, sizeof(line) - (size_t)at, " %.2f/%.2f b%.2f%s>%.2f",
				       sf[j].used, sf[j].granted, sf[j].bound,
				       sf[j].satisfied ? "s" : "", sf[j].frac);
		log_debug(LOG_SS_CTRL, "share window: C %llu -> %llu bit/s;%s",
			  (unsigned long long)c_old, (unsigned long long)c->share.c_bps, line);
	} else {
		/* between windows: keep each active flow's fraction */
		for (size_t j = 0; j < k; j++)
			sf[j].frac = sf[j].granted;
	}
	for (size_t j = 0; j < k; j++)
		w_act += sf[j].weight ? sf[j].weight : 1;
	cap = (double)c->share.c_bps;
	k = 0;
	for (size_t i = 0; i < n; i++) {
		struct flow *f = c->fp[i];
		struct tokens_flow *t = &c->tf[i];
		double frac, w = f->weight ? f->weight : 1;

		if (!hungry_cls(f->cls))
			continue;
		if (competing(f)) {
			f->share_sat = sf[k].satisfied;
			f->share_fill = sf[k].fill;
		}
		frac = competing(f) ? sf[k++].frac : 0;
		if (frac <= 0) /* not active, or new since the window: room to start */
			frac = w / (w_act + w);
		t->wait_ns = 0;
		t->rate_bps = 0;
		t->ops_per_s = 0;
		if (f->cls == FLOW_CLASS_THROUGHPUT)
			t->ops_per_s = (uint64_t)(frac * cap * opb) + 1;
		else
			t->rate_bps = (uint64_t)(frac * cap) + 1;
	}
}

/* PROTECT while latency flows are registered; else SHARE while two or more
 * flows compete on the port, OFF otherwise.  A change republishes every
 * slot's flags and chunk (flows.c), then the global header's mode_gen. */
static void set_pace_mode(struct ctrl *c, size_t n, uint32_t n_lat_all, uint64_t now,
			  bool window_ended)
{
	struct daemon *d = c->d;
	size_t n_comp = 0;
	int mode;
	bool entered;

	for (size_t i = 0; i < n; i++)
		if (competing(c->fp[i]))
			n_comp++;
	if (n_comp >= 2)
		c->competed_ns = now;
	mode = n_lat_all ? JST_PACE_PROTECT : n_comp >= 2 ? JST_PACE_SHARE : JST_PACE_OFF;
	/* share -> off only after SHARE_LINGER_NS without competition: a
	 * flow pausing between two messages does not flip the mode */
	if (mode == JST_PACE_OFF && c->pace_mode == JST_PACE_SHARE &&
	    now - c->competed_ns < SHARE_LINGER_NS)
		mode = JST_PACE_SHARE;
	/* controller.pace_mode: the lowest mode the operator allows */
	if (d->cfg.controller.pace_mode == CONFIG_PACE_SHARE && mode == JST_PACE_OFF)
		mode = JST_PACE_SHARE;
	else if (d->cfg.controller.pace_mode == CONFIG_PACE_PROTECT)
		mode = JST_PACE_PROTECT;
	entered = mode != c->pace_mode;
	if (entered) {
		log_info("pace mode %s (%u latency flows, %zu competing flows)",
			 ctrl_pace_mode_name(mode), n_lat_all, n_comp);
		c->pace_mode = mode;
		d->flows.pace_mode = mode;
		flows_publish_all(&d->flows);
		c->mode_gen++;
	}
	if (mode == JST_PACE_OFF) {
		for (size_t i = 0; i < n; i++)
			c->tf[i].rate_bps = c->tf[i].ops_per_s = c->tf[i].wait_ns = 0;
	} else if (mode == JST_PACE_SHARE) {
		share_rates(c, n, window_ended, entered);
	}
}

const char *ctrl_pace_mode_name(int mode)
{
	switch (mode) {
	case JST_PACE_OFF: return "off";
	case JST_PACE_SHARE: return "share";
	case JST_PACE_PROTECT: return "protect";
	default: return "?";
	}
}

/* One period; @control: run the AIMD step (a kick after a registration
 * only redistributes). */
static void step(struct ctrl *c, uint64_t now, bool control)
{
	struct daemon *d = c->d;
	const struct config *cfg = &d->cfg;
	const struct config_device *dv = devcfg(c);
	uint64_t window = CTRL_ACTIVE_PERIODS * period_ns(c), cur;
	uint32_t n_lat_all = 0, app = 0;
	struct tokens_params tp;
	bool fresh, want;
	size_t n = 0, total = 0;

	if (window < CTRL_ACTIVE_MIN_NS)
		window = CTRL_ACTIVE_MIN_NS;
	/* activity has a window of >= 20 periods: reading the counters every
	 * few periods is enough */
	if (!control || c->steps % CTRL_POLL_PERIODS == 0)
		flows_poll_counters(&d->flows);
	if (ensure_capacity(c, d->flows.n_gslots))
		return;
	for (struct proc *p = d->flows.procs; p; p = p->next, app++) {
		for (struct flow *f = p->flows; f; f = f->next) {
			total++;
			/* (grew_ns may be a little after @now: the poll above) */
			f->active = f->grew_ns && (f->grew_ns >= now || now - f->grew_ns <= window);
			if (f->cls == FLOW_CLASS_LATENCY)
				n_lat_all++;
			if (!on_port(c, f)) {
				/* not ours (any more, after a reload): unpaced */
				if (f->rate_bps || f->ops_per_s || f->wait_ns) {
					f->rate_bps = f->ops_per_s = f->wait_ns = 0;
					shm_slot_set_rates(jst_shm_global_slot(d->flows.global.base,
									       f->gslot),
							   0, 0, 0);
				}
				continue;
			}
			c->fp[n] = f;
			c->af[n] = (struct aimd_flow){ .app = app, .cls = (uint8_t)f->cls,
						       .active = f->active };
			c->tf[n] = (struct tokens_flow){ .weight = f->weight, .app = app,
							 .cls = (uint8_t)f->cls,
							 .active = f->active };
			n++;
		}
	}
	aimd_count(c->af, n, cfg->controller.one_flow_per_app, &c->n);

	/* the reference flow runs while latency flows are registered */
	want = cfg->reference.always_on || c->n.lat > 0;
	if (want && !c->wanted) {
		quantile_reset(&c->win); /* old samples describe another situation */
		c->last_total = c->win.total;
	}
	c->wanted = want;
	if (c->ref_ok) {
		refflow_set_wanted(&c->ref, want);
		refflow_poll(&c->ref);
	}

	/* the measurement: new samples, or a probe outstanding for longer than
	 * the target (then the latency is known to exceed it) */
	fresh = c->win.total != c->last_total;
	c->last_total = c->win.total;
	c->have99 = quantile_count(&c->win) > 0;
	if (c->have99) {
		c->current99_ns = quantile_ppm(&c->win, 990000);
		c->p50_ns = quantile_ppm(&c->win, 500000);
		c->p999_ns = quantile_ppm(&c->win, 999000);
	}
	cur = c->have99 ? c->current99_ns : 0;
	{
		uint64_t age = refflow_outstanding_ns(&c->ref, now);

		if (age > (uint64_t)cfg->controller.target99_us * 1000) {
			fresh = true;
			cur = age > cur ? age : cur;
		}
	}

	/* AIMD */
	if (now - c->last_link_ns > LINK_REFRESH_NS && c->ref.dev_open &&
	    !strcmp(c->ref.dev.name, c->dev)) {
		c->last_link_ns = now;
		c->link_bps = rdma_dev_link_bps(&c->ref.dev);
	}
	c->max_rate_bps = resolve_max_rate(c);
	c->acfg = (struct aimd_config){
		.max_rate_bps = c->max_rate_bps,
		.step_bps = cfg->controller.additive_step_bps,
		.period_ns = period_ns(c),
		.target99_ns = (uint64_t)cfg->controller.target99_us * 1000,
		.delta_ns = (uint64_t)cfg->controller.unattainable_delta_ms * 1000000,
		.stale_ns = (uint64_t)cfg->controller.stale_ms * 1000000,
		.ignore_latency =
			cfg->controller.unattainable_policy == CONFIG_UNATTAINABLE_IGNORE_LATENCY,
	};
	if (control && c->cal.state != CALIB_RUNNING) {
		struct aimd_input in = { .now_ns = now, .n = c->n, .fresh = fresh,
					 .current99_ns = cur };

		log_event(c, aimd_step(&c->aimd, &c->acfg, &in));
		c->measured_ns = fresh ? cur : 0;
		if (c->aimd.action == AIMD_DECREASE || c->aimd.action == AIMD_STALE)
			c->decreases++;
		if (c->aimd.action == AIMD_DECREASE ||
		    (c->aimd.mode == AIMD_UNATTAINABLE && fresh && cur > c->acfg.target99_ns)) {
			c->violated_ns = now;
			c->violated_by_ns = cur;
		}
	} else if (c->aimd.safe_util_bps > c->max_rate_bps || !c->aimd.n.lat) {
		c->aimd.safe_util_bps = c->max_rate_bps;
	}

	/* tokens */
	c->chunk_bytes = n_lat_all || c->pace_mode == JST_PACE_PROTECT
				   ? (dv ? dv->chunk_latency : 5120)
				   : (dv ? dv->chunk_default : MiB);
	c->token_ops = tokens_token_ops(cfg->tokens.ops, cfg->tokens.bytes, c->max_rate_bps,
					dv ? dv->max_ops_per_s : 0);
	c->tau_ns = tokens_tau_ns(cfg->tokens.bytes, c->aimd.safe_util_bps);
	tp = (struct tokens_params){
		.safe_util_bps = c->aimd.safe_util_bps,
		.token_bytes = cfg->tokens.bytes,
		.token_ops = c->token_ops,
		.chunk_bytes = c->chunk_bytes,
		.alpha_permille = (uint32_t)(cfg->controller.cpu_alpha * 1000 + 0.5),
		.one_per_app = cfg->controller.one_flow_per_app,
	};
	tokens_distribute(c->tf, n, &tp);
	set_pace_mode(c, n, n_lat_all, now, measure_window(c, n, now));
	for (size_t i = 0; i < n; i++) {
		struct flow *f = c->fp[i];
		const struct tokens_flow *t = &c->tf[i];

		if (f->rate_bps == t->rate_bps && f->ops_per_s == t->ops_per_s &&
		    f->wait_ns == t->wait_ns)
			continue;
		f->rate_bps = t->rate_bps;
		f->ops_per_s = t->ops_per_s;
		f->wait_ns = t->wait_ns;
		/* class, flags and chunk are flows.c's (published on registration,
		 * update and when latency flows come and go); the rates are ours */
		shm_slot_set_rates(jst_shm_global_slot(d->flows.global.base, f->gslot), f->rate_bps,
				   f->ops_per_s, f->wait_ns);
	}
	c->n_latency_all = n_lat_all;
	publish_global(c, n_lat_all);
	if (now - c->last_debug_ns >= DEBUG_EVERY_NS) {
		uint64_t sum = 0;

		c->last_debug_ns = now;
		for (size_t i = 0; i < n; i++)
			sum += c->tf[i].rate_bps;
		log_debug(LOG_SS_CTRL, "L %u B %u T %u, current99 %llu ns, measured %llu ns, "
			  "SafeUtil %llu (floor %llu, %s), %llu decreases",
			  c->n.lat, c->n.bw, c->n.tput, (unsigned long long)cur,
			  (unsigned long long)c->measured_ns,
			  (unsigned long long)c->aimd.safe_util_bps,
			  (unsigned long long)c->aimd.floor_bps, aimd_action_name(c->aimd.action),
			  (unsigned long long)c->decreases);
		log_debug(LOG_SS_TOKEN, "tau %llu ns, TokenOps %llu, chunk %u, %zu flows on %s: "
			  "%llu bit/s granted to bandwidth flows",
			  (unsigned long long)c->tau_ns, (unsigned long long)c->token_ops,
			  c->chunk_bytes, n, c->dev[0] ? c->dev : "-", (unsigned long long)sum);
	}
	trace_add(c, now);
	fill_view(c);
	c->steps++;

	/* nothing to control: step slowly; bandwidth and throughput flows
	 * only (no latency flow, no reference flow): SafeUtil is MaxRate and
	 * only the shares move, which needs no step every RefPeriod */
	{
		double every = !total && !want ? CTRL_IDLE_S
			       : !want ? CTRL_RELAXED_S : (double)period_ns(c) / 1e9;

		c->idle = !total && !want;
		if (every != c->step_w.repeat) {
			c->step_w.repeat = every;
			ev_timer_again(d->loop, &c->step_w);
		}
	}
}

void ctrl_step(struct ctrl *c, uint64_t now)
{
	step(c, now, true);
}

static void step_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ctrl_step(w->data, clock_now_ns());
}

/* The target was missed within the last max(20 periods, 100 ms): what a
 * latency flow registering now should be warned about. */
static bool violated_recently(const struct ctrl *c, uint64_t now)
{
	uint64_t w = CTRL_ACTIVE_PERIODS * period_ns(c);

	if (w < CTRL_ACTIVE_MIN_NS)
		w = CTRL_ACTIVE_MIN_NS;
	return c->violated_ns && now >= c->violated_ns && now - c->violated_ns <= w;
}

void ctrl_flow_registered(struct ctrl *c, struct flow *f)
{
	const struct config *cfg = &c->d->cfg;

	if (!on_port(c, f)) {
		snprintf(f->warning, sizeof(f->warning),
			 "not paced: justitiad controls %s port %u only", c->dev[0] ? c->dev : "?",
			 c->port);
	} else if (f->cls == FLOW_CLASS_LATENCY && c->ref.state == REF_UP && c->ref.wanted) {
		/* soft admission control (paper §4.5): admitted, but warned when
		 * the target is being missed: the last measurement violated it,
		 * or the window's p99 or the probe in flight exceeds it now */
		uint64_t target = (uint64_t)cfg->controller.target99_us * 1000;
		uint64_t m = c->have99 ? c->current99_ns : 0, age;

		age = refflow_outstanding_ns(&c->ref, clock_now_ns());
		if (age > m)
			m = age;
		if (violated_recently(c, clock_now_ns()) && c->violated_by_ns > m)
			m = c->violated_by_ns;
		if (m > target) {
			snprintf(f->warning, sizeof(f->warning),
				 "registered while the measured p99 (%.1f us) exceeds the target "
				 "(%u us): the target may not be met",
				 (double)m / 1000, cfg->controller.target99_us);
			log_info("flow %u of pid %d: %s", f->id, (int)f->proc->pid, f->warning);
		}
	}
	/* grant the new flow its rate now, not one period later */
	step(c, clock_now_ns(), false);
}

static void calib_done(struct calib *cal, void *arg)
{
	struct ctrl *c = arg;

	if (cal->state == CALIB_DONE && !strcmp(cal->device, c->dev) && cal->port == c->port) {
		c->calib_bps = cal->rate_bps;
		c->calib_at = cal->measured_at;
	}
}

int ctrl_init(struct ctrl *c, struct daemon *d)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->d = d;
	c->idle = true;
	c->max_rate_src = "unknown";
	rc = quantile_init(&c->win, d->cfg.reference.window);
	if (rc)
		return rc;
	if (d->peer) {
		rc = refflow_init(&c->ref, d->loop, d->peer, &d->cfg, &c->win);
		if (rc)
			goto out_win;
		c->ref_ok = true;
	}
	calib_init(&c->cal, d->loop, &c->ref, calib_done, c);
	resolve_port(c);
	aimd_init(&c->aimd, &(struct aimd_config){ .max_rate_bps = resolve_max_rate(c) },
		  clock_now_ns());
	rc = ensure_capacity(c, d->flows.n_gslots);
	if (rc)
		goto out_ref;
	ev_init(&c->step_w, step_cb);
	c->step_w.data = c;
	c->step_w.repeat = CTRL_IDLE_S;
	ev_timer_again(d->loop, &c->step_w);
	log_info("controller: %s port %u, MaxRate %llu bit/s (%s), RefPeriod %u us, window %u",
		 c->dev[0] ? c->dev : "(no device)", c->port,
		 (unsigned long long)resolve_max_rate(c), c->max_rate_src,
		 d->cfg.reference.period_us, d->cfg.reference.window);
	step(c, clock_now_ns(), false);
	return 0;
out_ref:
	if (c->ref_ok)
		refflow_fini(&c->ref);
out_win:
	quantile_fini(&c->win);
	return rc;
}

void ctrl_fini(struct ctrl *c)
{
	ev_timer_stop(c->d->loop, &c->step_w);
	calib_fini(&c->cal);
	if (c->ref_ok)
		refflow_fini(&c->ref);
	quantile_fini(&c->win);
	free(c->tf);
	free(c->af);
	free(c->fp);
	free(c->sf);
	c->tf = NULL;
	c->af = NULL;
	c->fp = NULL;
	c->sf = NULL;
	c->cap = 0;
}

void ctrl_reconfigure(struct ctrl *c)
{
	const struct config *cfg = &c->d->cfg;

	if (quantile_resize(&c->win, cfg->reference.window))
		log_warnx("reference.window %u: out of memory, keeping %u", cfg->reference.window,
			  c->win.cap);
	c->last_total = c->win.total;
	resolve_port(c);
	if (c->ref_ok)
		refflow_reconfigure(&c->ref);
	if (!c->idle && c->step_w.repeat < CTRL_RELAXED_S) {
		c->step_w.repeat = (double)period_ns(c) / 1e9;
		ev_timer_again(c->d->loop, &c->step_w);
	}
	step(c, clock_now_ns(), false);
}

/* ------------------------------------------------------------ status */

static json_t *jnull_or(uint64_t v)
{
	return v ? json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v) : json_null();
}

static json_t *jint(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *calib_json(const struct ctrl *c)
{
	const struct calib *cal = &c->cal;
	bool have = c->calib_bps != 0;

	return json_pack("{s:s, s:o, s:o, s:o, s:o}", "state", calib_state_name(cal->state),
			 "max_rate_bps", jnull_or(c->calib_bps), "measured_at",
			 have && c->calib_at ? json_integer((json_int_t)c->calib_at) : json_null(),
			 "peer", cal->peer[0] ? json_string(cal->peer) : json_null(), "error",
			 cal->error[0] ? json_string(cal->error) : json_null());
}

static json_t *trace_json(const struct ctrl *c)
{
	json_t *a = json_array();
	size_t first = (c->trace_head + CTRL_TRACE - c->trace_n) % CTRL_TRACE;

	for (size_t i = 0; i < c->trace_n; i++) {
		const struct ctrl_trace *t = &c->trace[(first + i) % CTRL_TRACE];

		json_array_append_new(a, json_pack(
			"{s:I, s:o, s:o, s:o, s:o, s:o, s:s}", "t_ms",
			(json_int_t)(t->t_ns / 1000000), "safe_util_bps", jint(t->safe_util_bps),
			"min_bps", jint(t->min_bps), "max_bps", jint(t->max_bps), "floor_bps",
			jint(t->floor_bps), "current99_ns", jnull_or(t->current99_ns), "mode",
			t->mode ? "unattainable" : "normal"));
	}
	return a;
}

void ctrl_status(struct ctrl *c, json_t *o)
{
	const struct config *cfg = &c->d->cfg;
	const struct refflow *rf = &c->ref;
	json_t *ref = json_object_get(o, "reference");
	struct peer_ctx *pc = c->d->peer;

	if (!o)
		return;
	json_object_set_new(o, "safe_util_bps", jnull_or(c->aimd.safe_util_bps));
	json_object_set_new(o, "max_rate_bps", jnull_or(c->max_rate_bps));
	json_object_set_new(o, "max_rate_source", json_string(c->max_rate_src));
	json_object_set_new(o, "device", c->dev[0] ? json_pack("{s:s, s:i}", "name", c->dev, "port",
							       (int)c->port)
						   : json_null());
	json_object_set_new(o, "unattainable", json_boolean(c->aimd.unattainable));
	json_object_set_new(o, "policy", json_string(cfg->controller.unattainable_policy ==
								     CONFIG_UNATTAINABLE_KEEP
							     ? "keep"
							     : "ignore_latency"));
	json_object_set_new(o, "action", json_string(aimd_action_name(c->aimd.action)));
	json_object_set_new(o, "stale", json_boolean(c->aimd.stale));
	json_object_set_new(o, "violating", json_boolean(violated_recently(c, clock_now_ns())));
	json_object_set_new(o, "floor_bps", jnull_or(c->aimd.floor_bps));
	json_object_set_new(o, "step_bps", jnull_or(c->max_rate_bps ? c->aimd.step_bps : 0));
	json_object_set_new(o, "period_us", json_integer(cfg->reference.period_us));
	json_object_set_new(o, "window", json_pack("{s:i, s:i}", "size", (int)c->win.cap,
						   "samples", (int)quantile_count(&c->win)));
	json_object_set_new(o, "flows", json_pack("{s:i, s:i, s:i}", "latency", (int)c->n.lat,
						  "bandwidth", (int)c->n.bw, "throughput",
						  (int)c->n.tput));
	json_object_set_new(o, "chunk_bytes", json_integer(c->chunk_bytes));
	json_object_set_new(o, "pace_mode", json_string(ctrl_pace_mode_name(c->pace_mode)));
	json_object_set_new(o, "share_capacity_bps",
			    jnull_or(c->pace_mode == JST_PACE_SHARE ? c->share.c_bps : 0));
	json_object_set_new(o, "token_bytes", json_integer(cfg->tokens.bytes));
	json_object_set_new(o, "token_ops", jint(c->token_ops));
	json_object_set_new(o, "tau_ns", jnull_or(c->tau_ns));
	json_object_set_new(o, "alpha_permille",
			    json_integer((json_int_t)(cfg->controller.cpu_alpha * 1000 + 0.5)));
	json_object_set_new(o, "steps", jint(c->steps));
	json_object_set_new(o, "decreases", jint(c->decreases));
	json_object_set_new(o, "measured_ns", jnull_or(c->measured_ns));
	json_object_set_new(o, "calibration", calib_json(c));
	json_object_set_new(o, "trace", trace_json(c));
	if (ref) {
		json_object_set_new(ref, "device", rf->dev_open ? json_string(rf->dev.name)
								: json_null());
		json_object_set_new(ref, "last_ns", jnull_or(rf->last_ns));
		json_object_set_new(ref, "loopback_ns", jnull_or(rf->last_lb_ns));
		json_object_set_new(ref, "loopback_correction", json_boolean(rf->lb_up));
		json_object_set_new(ref, "skipped", jint(rf->skipped));
		json_object_set_new(ref, "errors", jint(rf->errors));
		json_object_set_new(ref, "outstanding_ns",
				    jnull_or(refflow_outstanding_ns(rf, clock_now_ns())));
		json_object_set_new(ref, "responders", json_integer((json_int_t)rf->n_resp));
		if (pc)
			json_object_set_new(ref, "channel", json_pack(
				"{s:s, s:i, s:b, s:o}", "listen", pc->listen_address, "port",
				(int)pc->listen_port, "authenticated", pc->have_secret, "error",
				pc->error[0] ? json_string(pc->error) : json_null()));
	}
}

json_t *ctrl_calibrate(struct ctrl *c, json_t *req)
{
	json_int_t ms = CALIB_DEFAULT_MS;
	const char *cmd;
	json_error_t err;
	json_t *id = NULL, *r;
	int v, rc;

	if (json_unpack_ex(req, &err, JSON_STRICT, "{s:i, s:s, s?o, s?I}", "v", &v, "cmd", &cmd,
			   "id", &id, "duration_ms", &ms))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "%s", err.text);
	if (ms < 100 || ms > 10000)
		return proto_reply_error(req, PROTO_E_BAD_REQUEST,
					 "duration_ms must be 100..10000");
	if (!c->ref_ok)
		return proto_reply_error(req, PROTO_E_NOT_FOUND, "no peer channel");
	rc = calib_start(&c->cal, (unsigned)ms);
	if (rc == -EBUSY)
		return proto_reply_error(req, PROTO_E_LIMIT, "a calibration is running");
	if (rc == -ENOTCONN)
		return proto_reply_error(req, PROTO_E_NOT_FOUND,
					 "no reference peer is up (reference.peers)");
	if (rc)
		return proto_reply_error(req, PROTO_E_INTERNAL, "calibration: %s", c->cal.error);
	r = proto_reply_ok(req);
	json_object_set_new(r, "calibration", json_pack("{s:s, s:I}", "state", "running",
							"duration_ms", ms));
	return r;
}

// SPDX-License-Identifier: MIT
/* The isolation controller (see controller.h): its life (init, reload,
 * fini), the step every RefPeriod (activity, AIMD, tokens, publishing in
 * the shared memory), a flow's registration, the calibrate command.
 * May call: ctrlport, ctrlshare, ctrlstatus, aimd, tokens, refflow, calib,
 * quantile, flows, log. */
#include "controller.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctrlport.h"
#include "ctrlshare.h"
#include "ctrlstatus.h"
#include "justitiad.h"
#include "log.h"
#include "proto.h"
#include "rread.h"
#include "shm_abi.h"

#define RELAXED memory_order_relaxed
#define LINK_REFRESH_NS 1000000000ull
#define MiB 1048576u
#define DEBUG_EVERY_NS 1000000000ull   /* -D ctrl,token: one summary a second */

static uint64_t period_ns(const struct ctrl *c)
{
	return (uint64_t)c->d->cfg.reference.period_us * 1000;
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

/* One period; @control: run the AIMD step (a kick after a registration
 * only redistributes). */
uint64_t ctrl_target99_ns(const struct ctrl *c)
{
	const struct config_controller *cc = &c->d->cfg.controller;

	return (uint64_t)cc->target99_us * 1000 + (cc->target99_over_base ? c->base_ns : 0);
}

/* The reference flow's base latency: the least sample of the current and
 * the previous epoch (5-10 s), so that it follows a changed path within
 * 10 s but a load shorter than that does not lift it. */
static void track_base(struct ctrl *c, uint64_t least_new, uint64_t now)
{
	if (least_new == UINT64_MAX)
		return;
	if (!c->base_epoch_ns || now - c->base_epoch_ns >= CTRL_BASE_EPOCH_NS) {
		c->base_prev_ns = c->base_epoch_ns ? c->base_cur_ns : least_new;
		c->base_cur_ns = least_new;
		c->base_epoch_ns = now;
	} else if (least_new < c->base_cur_ns) {
		c->base_cur_ns = least_new;
	}
	c->base_ns = c->base_cur_ns < c->base_prev_ns ? c->base_cur_ns : c->base_prev_ns;
}

static void step(struct ctrl *c, uint64_t now, bool control)
{
	struct daemon *d = c->d;
	const struct config *cfg = &d->cfg;
	const struct config_device *dv = ctrlport_devcfg(c);
	uint64_t window = CTRL_ACTIVE_PERIODS * period_ns(c), cur;
	uint32_t n_lat_all = 0, app = 0;
	struct tokens_params tp;
	bool fresh, met_now, want;
	size_t n = 0, total = 0;

	if (window < CTRL_ACTIVE_MIN_NS)
		window = CTRL_ACTIVE_MIN_NS;
	/* activity has a window of >= 20 periods: reading the counters every
	 * few periods is enough; stepping relaxed, at every step (the
	 * window's 100 ms are two relaxed steps) */
	if (!control || c->steps % CTRL_POLL_PERIODS == 0 || c->step_w.repeat >= CTRL_RELAXED_S)
		flows_poll_counters(&d->flows);
	if (ensure_capacity(c, d->flows.n_gslots + RREAD_MAX_TOTAL))
		return;
	for (struct proc *p = d->flows.procs; p; p = p->next, app++) {
		for (struct flow *f = p->flows; f; f = f->next) {
			total++;
			/* (grew_ns may be a little after @now: the poll above) */
			f->active = f->grew_ns && (f->grew_ns >= now || now - f->grew_ns <= window);
			if (f->cls == FLOW_CLASS_LATENCY)
				n_lat_all++;
			if (!ctrlport_on_port(c, f)) {
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
	/* the READ flows other hosts' daemons registered here: this NIC sends
	 * their data, so they count in L'/B'/T' and share the tokens (rread.h) */
	c->n_remote = rread_fill(d->rread, c->tf + n, c->af + n, app);
	/* the flows other hosts' daemons say arrive here (incast): an
	 * incoming latency flow is protected as a local one (rread.h) */
	c->n_recv = rread_fill_recv(d->rread, c->af + n + c->n_remote, app + (uint32_t)c->n_remote);
	/* ... and so is what it protects against: this host's own bandwidth
	 * flows go paced and split at the small chunk (pace mode protect), as
	 * for a local latency flow; its NIC sends a latency READ's responses,
	 * and a ping-pong's answers */
	for (size_t i = n + c->n_remote; i < n + c->n_remote + c->n_recv; i++)
		if (c->af[i].cls == FLOW_CLASS_LATENCY)
			n_lat_all++;
	total += c->n_remote + c->n_recv;
	aimd_count(c->af, n + c->n_remote + c->n_recv, cfg->controller.one_flow_per_app, &c->n);

	/* the reference flow runs while latency flows are registered */
	want = cfg->reference.always_on || c->n.lat > 0;
	if (want && !c->wanted) {
		quantile_reset(&c->win); /* old samples describe another situation */
		quantile_reset(&c->raw_win);
		c->last_total = c->win.total;
		c->base_ns = c->base_cur_ns = c->base_prev_ns = c->base_epoch_ns = 0;
	}
	c->wanted = want;
	if (c->ref_ok) {
		refflow_set_wanted(&c->ref, want);
		refflow_poll(&c->ref);
	}

	/* the measurement: new samples, or a probe outstanding for longer than
	 * the target (then the latency is known to exceed it) */
	fresh = c->win.total != c->last_total;
	if (fresh)
		track_base(c, quantile_min_newest(&c->win, (uint32_t)(c->win.total - c->last_total)),
			   now);
	c->target99_ns = ctrl_target99_ns(c);
	met_now = fresh && quantile_max_newest(&c->win, (uint32_t)(c->win.total - c->last_total)) <=
				   c->target99_ns;
	c->last_total = c->win.total;
	/* samples older than max_age_ms describe another moment: one long
	 * violation would hold Current99 (and SafeUtil at its floor) for the
	 * whole RefCount otherwise */
	if (cfg->reference.max_age_ms && now > (uint64_t)cfg->reference.max_age_ms * 1000000) {
		quantile_expire(&c->win, now - (uint64_t)cfg->reference.max_age_ms * 1000000);
		quantile_expire(&c->raw_win, now - (uint64_t)cfg->reference.max_age_ms * 1000000);
	}
	c->have99 = quantile_count(&c->win) > 0;
	if (c->have99) {
		c->current99_ns = quantile_ppm(&c->win, 990000);
		c->p50_ns = quantile_ppm(&c->win, 500000);
		c->p999_ns = quantile_ppm(&c->win, 999000);
		c->raw99_ns = c->ref.lb_up && quantile_count(&c->raw_win)
				      ? quantile_ppm(&c->raw_win, 990000) : 0;
	}
	cur = c->have99 ? c->current99_ns : 0;
	{
		uint64_t age = refflow_outstanding_ns(&c->ref, now);

		if (age > c->target99_ns) {
			fresh = true;
			met_now = false;
			cur = age > cur ? age : cur;
		}
	}

	/* AIMD */
	if (now - c->last_link_ns > LINK_REFRESH_NS && c->ref.dev_open &&
	    !strcmp(c->ref.dev.name, c->dev)) {
		c->last_link_ns = now;
		c->link_bps = rdma_dev_link_bps(&c->ref.dev);
	}
	c->max_rate_bps = ctrlport_max_rate(c);
	c->acfg = (struct aimd_config){
		.max_rate_bps = c->max_rate_bps,
		.step_bps = cfg->controller.additive_step_bps,
		.period_ns = period_ns(c),
		.target99_ns = c->target99_ns,
		.delta_ns = (uint64_t)cfg->controller.unattainable_delta_ms * 1000000,
		.stale_ns = (uint64_t)cfg->controller.stale_ms * 1000000,
		.ignore_latency =
			cfg->controller.unattainable_policy == CONFIG_UNATTAINABLE_IGNORE_LATENCY,
	};
	if (control && c->cal.state != CALIB_RUNNING) {
		struct aimd_input in = { .now_ns = now, .n = c->n, .fresh = fresh,
					 .current99_ns = cur, .met_now = met_now };

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
	tokens_distribute(c->tf, n + c->n_remote, &tp);
	ctrlshare_set_pace_mode(c, n, n_lat_all, now, ctrlshare_measure_window(c, n, now));
	/* incoming flows are limited only while this host protects a
	 * latency flow (its own or one that arrives): with none, a split of
	 * MaxRate among them would cap them although nobody is protected,
	 * below what the link carries when MaxRate is (issue 11: two
	 * elephants into one host held to 0.56-0.66 of plain on Soft-RoCE) */
	rread_set_recv(d->rread, c->aimd.safe_util_bps, c->n.lat ? c->max_rate_bps : 0);
	rread_set_chunk(d->rread, c->chunk_bytes);
	rread_after_step(d->rread, c->tf + n, c->n_remote, now, period_ns(c));
	/* READ flows registered with their responders: a limit that came or
	 * went changes their flags, which the shims look at again */
	if (rread_sync(d->rread, now))
		c->mode_gen++;
	for (size_t i = 0; i < n; i++) {
		struct flow *f = c->fp[i];
		const struct tokens_flow *t = &c->tf[i];
		uint64_t rate = rread_cap(f, t->rate_bps), ops = rread_cap_ops(f, t->ops_per_s);

		if (f->rate_bps == rate && f->ops_per_s == ops && f->wait_ns == t->wait_ns)
			continue;
		f->rate_bps = rate;
		f->ops_per_s = ops;
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
	ctrlstatus_trace_add(c, now);
	ctrlstatus_fill_view(c);
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

void ctrl_flow_registered(struct ctrl *c, struct flow *f)
{
	const struct config *cfg = &c->d->cfg;

	if (!ctrlport_on_port(c, f)) {
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
		if (ctrlstatus_violated_recently(c, clock_now_ns()) && c->violated_by_ns > m)
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
		c->calib_qps = cal->qps;
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
	rc = quantile_init(&c->raw_win, d->cfg.reference.window);
	if (rc)
		goto out_win;
	if (d->peer) {
		rc = refflow_init(&c->ref, d->loop, d->peer, &d->cfg, &c->win);
		if (rc)
			goto out_win;
		c->ref.raw_win = &c->raw_win;
		c->ref_ok = true;
	}
	calib_init(&c->cal, d->loop, &c->ref, calib_done, c);
	ctrlport_resolve(c);
	aimd_init(&c->aimd, &(struct aimd_config){ .max_rate_bps = ctrlport_max_rate(c) },
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
		 (unsigned long long)ctrlport_max_rate(c), c->max_rate_src,
		 d->cfg.reference.period_us, d->cfg.reference.window);
	step(c, clock_now_ns(), false);
	return 0;
out_ref:
	if (c->ref_ok)
		refflow_fini(&c->ref);
out_win:
	quantile_fini(&c->raw_win);
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
	quantile_fini(&c->raw_win);
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

	if (quantile_resize(&c->win, cfg->reference.window) ||
	    quantile_resize(&c->raw_win, cfg->reference.window))
		log_warnx("reference.window %u: out of memory, keeping %u", cfg->reference.window,
			  c->win.cap);
	c->last_total = c->win.total;
	ctrlport_resolve(c);
	if (c->ref_ok)
		refflow_reconfigure(&c->ref);
	if (!c->idle && c->step_w.repeat < CTRL_RELAXED_S) {
		c->step_w.repeat = (double)period_ns(c) / 1e9;
		ev_timer_again(c->d->loop, &c->step_w);
	}
	step(c, clock_now_ns(), false);
}

json_t *ctrl_calibrate(struct ctrl *c, json_t *req)
{
	json_int_t ms = CALIB_DEFAULT_MS, qps = 0;
	const char *cmd;
	json_error_t err;
	json_t *id = NULL, *r;
	int v, rc;

	if (json_unpack_ex(req, &err, JSON_STRICT, "{s:i, s:s, s?o, s?I, s?I}", "v", &v, "cmd",
			   &cmd, "id", &id, "duration_ms", &ms, "qps", &qps))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "%s", err.text);
	if (ms < 100 || ms > 10000)
		return proto_reply_error(req, PROTO_E_BAD_REQUEST,
					 "duration_ms must be 100..10000");
	if (json_object_get(req, "qps") && (qps < 1 || qps > CALIB_MAX_QPS))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "qps must be 1..%d",
					 CALIB_MAX_QPS);
	if (!c->ref_ok)
		return proto_reply_error(req, PROTO_E_NOT_FOUND, "no peer channel");
	rc = calib_start(&c->cal, (unsigned)ms, (unsigned)qps);
	if (rc == -EBUSY)
		return proto_reply_error(req, PROTO_E_LIMIT, "a calibration is running");
	if (rc == -ENOTCONN)
		return proto_reply_error(req, PROTO_E_NOT_FOUND,
					 "no reference peer is up (reference.peers)");
	if (rc)
		return proto_reply_error(req, PROTO_E_INTERNAL, "calibration: %s", c->cal.error);
	r = proto_reply_ok(req);
	json_object_set_new(r, "calibration",
			    json_pack("{s:s, s:I, s:i}", "state", "running", "duration_ms", ms,
				      "qps", (int)c->cal.qps_req));
	return r;
}

// SPDX-License-Identifier: MIT
/* What the isolation controller publishes for people: the view in the
 * daemon state (status), the SafeUtil trace, whether the target was missed
 * lately, and the controller's part of the status reply.
 * May call: refflow, calib, aimd, quantile (their state and names),
 * ctrl_pace_mode_name (ctrlshare.c); not controller.c or ctrlport.c. */
#include "ctrlstatus.h"

#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "justitiad.h"

void ctrlstatus_trace_add(struct ctrl *c, uint64_t now)
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

void ctrlstatus_fill_view(struct ctrl *c)
{
	struct ctrl_view *v = &c->d->ctrl;
	const struct refflow *rf = &c->ref;

	v->mode = (int)c->aimd.mode;
	v->measured = c->have99;
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

/* The target was missed within the last max(20 periods, 100 ms): what a
 * latency flow registering now should be warned about. */
bool ctrlstatus_violated_recently(const struct ctrl *c, uint64_t now)
{
	uint64_t w = CTRL_ACTIVE_PERIODS * (uint64_t)c->d->cfg.reference.period_us * 1000;

	if (w < CTRL_ACTIVE_MIN_NS)
		w = CTRL_ACTIVE_MIN_NS;
	return c->violated_ns && now >= c->violated_ns && now - c->violated_ns <= w;
}

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

	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "state", calib_state_name(cal->state),
			 "max_rate_bps", jnull_or(c->calib_bps), "measured_at",
			 have && c->calib_at ? json_integer((json_int_t)c->calib_at) : json_null(),
			 "qps", have ? jnull_or(c->calib_qps) : json_null(), "peer",
			 cal->peer[0] ? json_string(cal->peer) : json_null(), "error",
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
	/* what the next step uses (a justctl set takes effect there) */
	json_object_set_new(o, "target99_ns", json_integer((json_int_t)ctrl_target99_ns(c)));
	json_object_set_new(o, "base_ns", jnull_or(c->base_ns));
	json_object_set_new(o, "target99_over_base",
			    json_boolean(cfg->controller.target99_over_base));
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
	json_object_set_new(o, "violating",
			    json_boolean(ctrlstatus_violated_recently(c, clock_now_ns())));
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
		/* both views: Current99 is corrected, this is what it was before */
		json_object_set_new(ref, "uncorrected99_ns", jnull_or(c->raw99_ns));
		json_object_set_new(ref, "loopback_correction", json_boolean(rf->lb_up));
		json_object_set_new(ref, "skipped", jint(rf->skipped));
		json_object_set_new(ref, "polled", jint(rf->polled));
		json_object_set_new(ref, "errors", jint(rf->errors));
		json_object_set_new(ref, "outstanding_ns",
				    jnull_or(refflow_outstanding_ns(rf, clock_now_ns())));
		json_object_set_new(ref, "responders", json_integer((json_int_t)rf->n_resp));
		if (pc)
			json_object_set_new(ref, "channel", json_pack(
				"{s:o, s:i, s:b, s:o, s:o, s:{s:I, s:I, s:I}}", "listen",
				pc->listen_address[0] ? json_string(pc->listen_address) : json_null(),
				"port", (int)pc->listen_port, "authenticated",
				pc->have_secret, "encryption",
				pc->have_secret ? json_string("AES-256-GCM") : json_null(), "error",
				pc->error[0] ? json_string(pc->error) : json_null(), "refused",
				"address", (json_int_t)pc->refused.address, "limit",
				(json_int_t)pc->refused.limit, "protocol",
				(json_int_t)pc->refused.protocol));
	}
}

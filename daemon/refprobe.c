// SPDX-License-Identifier: MIT
/* The reference flow's probes: one in flight at a time, one RefPeriod
 * apart; completions into samples of the latency window; a failure tears
 * the session down and retries after a backoff.
 * May call: refverbs, quantile, rdma, log; not refflow.c or refresp.c. */
#include "refprobe.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "refverbs.h"

/* A probe and its loopback twin (loopback correction) are posted together;
 * the sample is the probe's time minus the twin's. */

#define WR_REF 1ull
#define WR_LB 2ull
#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 30000

static void probe_now(struct refflow *rf, uint64_t now);
static void poll_ep(struct refflow *rf, struct rdma_ep *ep, uint64_t now);

void refprobe_stop(struct refflow *rf)
{
	ev_timer_stop(rf->loop, &rf->probe_w);
	memset(&rf->cur, 0, sizeof(rf->cur));
}

void refprobe_fail(struct refflow *rf, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	refprobe_stop(rf);
	refflow_close_session(rf, &rf->s);
	refverbs_lb_teardown(rf);
	rf->requesting = false;
	rf->errors++;
	refverbs_set_error(rf, REF_DOWN, "%s", msg);
	rf->backoff_ms = rf->backoff_ms ? rf->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (rf->backoff_ms > BACKOFF_MAX_MS)
		rf->backoff_ms = BACKOFF_MAX_MS;
	ev_timer_stop(rf->loop, &rf->retry_w);
	ev_timer_set(&rf->retry_w, (double)rf->backoff_ms / 1000, 0);
	ev_timer_start(rf->loop, &rf->retry_w);
}

void refprobe_opened(struct refflow *rf, struct ref_session *s, int err, const char *msg,
		     void *arg)
{
	rf->requesting = false;
	if (err) {
		refprobe_fail(rf, "%s: %s", refflow_peer_name(rf), msg);
		return;
	}
	if (rf->cfg->reference.loopback_correction && !rf->lb_up)
		refverbs_lb_setup(rf);
	rf->backoff_ms = 0;
	rf->error[0] = 0;
	rf->state = REF_UP;
	if (rf->logged)
		log_info("reference flow to %s up (%s port %u)", refflow_peer_name(rf),
			 rf->dev.name, rf->dev.port);
	else
		log_debug(LOG_SS_REF, "reference flow to %s up (%s port %u)", refflow_peer_name(rf),
			  rf->dev.name, rf->dev.port);
	rf->logged = false;
	rf->last_t0 = 0;
	refprobe_schedule(rf, clock_now_ns());
}

/* Poll the probe's CQs for up to reference.poll_us after posting it, as a
 * busy-polling latency flow would: its completion is then timed when the
 * NIC delivers it, not when the event loop wakes up for its event (on a
 * loaded host, a scheduler tick later).  A probe that takes longer is left
 * to the completion channel.  Not nested: a probe posted from within
 * (sample_done() -> refprobe_schedule()) is polled by this loop. */
static void spin(struct refflow *rf)
{
	uint64_t budget = (uint64_t)rf->cfg->reference.poll_us * 1000, start;

	if (!budget || rf->spinning)
		return;
	rf->spinning = true;
	start = clock_now_ns();
	while (rf->cur.active && rf->state == REF_UP && clock_now_ns() - start < budget) {
		poll_ep(rf, &rf->s.ep, 0);
		poll_ep(rf, &rf->lb_src, 0);
	}
	rf->spinning = false;
}

/* Post one probe (and its loopback twin) now. */
static void probe_now(struct refflow *rf, uint64_t now)
{
	uint64_t seq = ++rf->seq;
	int rc;

	memset(&rf->cur, 0, sizeof(rf->cur));
	rf->cur.active = true;
	rf->cur.seq = seq;
	if (rf->lb_up) {
		rf->cur.lb_t0 = clock_now_ns();
		if (rdma_post_write(&rf->lb_src, &rf->lb_remote, WR_LB << 56 | seq,
				    REF_MSG_BYTES)) {
			log_warnx("loopback correction disabled: post failed");
			refverbs_lb_teardown(rf);
		}
	}
	rf->cur.t0 = clock_now_ns();
	rf->last_t0 = rf->cur.t0;
	rc = rdma_post_write(&rf->s.ep, &rf->s.remote, WR_REF << 56 | seq, REF_MSG_BYTES);
	if (rc) {
		refprobe_fail(rf, "post: %s", strerror(-rc));
		return;
	}
	spin(rf);
}

/* The next probe goes one RefPeriod after the previous one was posted, or
 * at once when the previous one took longer than that (counted as skipped
 * periods): one probe in flight at a time, and no timer wake-up while it is
 * in flight. */
void refprobe_schedule(struct refflow *rf, uint64_t now)
{
	uint64_t period = (uint64_t)rf->cfg->reference.period_us * 1000, due;

	ev_timer_stop(rf->loop, &rf->probe_w);
	if (rf->state != REF_UP || !rf->s.up || rf->paused || !rf->wanted || rf->cur.active)
		return;
	due = rf->last_t0 ? rf->last_t0 + period : now;
	if (due <= now) {
		if (rf->last_t0 && now - due >= period)
			rf->skipped += (now - due) / period;
		probe_now(rf, now);
		return;
	}
	ev_timer_set(&rf->probe_w, (double)(due - now) / 1e9, 0);
	ev_timer_start(rf->loop, &rf->probe_w);
}

void refprobe_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct refflow *rf = w->data;

	refprobe_schedule(rf, clock_now_ns());
}

static void sample_done(struct refflow *rf, uint64_t now)
{
	uint64_t v = rf->cur.ref_ns;

	if (rf->lb_up && rf->cur.lb_done) {
		v = v > rf->cur.lb_ns ? v - rf->cur.lb_ns : 0;
		if (rf->raw_win) /* both views in justctl status */
			quantile_add_at(rf->raw_win, rf->cur.ref_ns, now);
	}
	quantile_add_at(rf->win, v, now);
	rf->samples++;
	rf->polled += rf->spinning;
	rf->last_ns = rf->cur.ref_ns;
	rf->last_lb_ns = rf->cur.lb_done ? rf->cur.lb_ns : 0;
	rf->cur.active = false;
	refprobe_schedule(rf, now);
}

static void handle_wc(struct refflow *rf, struct rdma_ep *ep, const struct ibv_wc *wc,
		      uint64_t now)
{
	/* a completion of a probe posted before a pause is not this probe's */
	bool mine = rf->cur.active && (wc->wr_id & ((1ull << 56) - 1)) == rf->cur.seq;

	/* a probe posted while this batch was being polled completes after it */
	if (mine && now < rf->cur.t0)
		now = clock_now_ns();

	for (size_t i = 0; i < rf->n_extra; i++)
		if (ep == rf->extra[i]) {
			rf->extra_cb[i](rf, wc, now, rf->extra_arg[i]);
			return;
		}
	if (ep == &rf->lb_src) {
		if (wc->status != IBV_WC_SUCCESS) {
			log_warnx("loopback correction disabled: %s",
				  ibv_wc_status_str(wc->status));
			refverbs_lb_teardown(rf);
			rf->cur.lb_done = false;
		} else if (mine) {
			rf->cur.lb_ns = now - rf->cur.lb_t0;
			rf->cur.lb_done = true;
		}
	} else if (ep == &rf->s.ep) {
		if (wc->status != IBV_WC_SUCCESS) {
			refprobe_fail(rf, "reference QP: %s", ibv_wc_status_str(wc->status));
			return;
		}
		if (mine) {
			rf->cur.ref_ns = now - rf->cur.t0;
			rf->cur.ref_done = true;
		}
	}
	if (rf->cur.active && rf->cur.ref_done && (rf->cur.lb_done || !rf->lb_up))
		sample_done(rf, now);
}

/* @now: when the completions were seen (0: read the clock after each
 * poll that found some) */
static void poll_ep(struct refflow *rf, struct rdma_ep *ep, uint64_t now)
{
	struct ibv_wc wc[16];
	int n;

	while (ep->cq && (n = ibv_poll_cq(ep->cq, 16, wc)) > 0) {
		uint64_t t = now ? now : clock_now_ns();

		for (int i = 0; i < n && ep->cq; i++)
			handle_wc(rf, ep, &wc[i], t);
	}
}

/* The completion channel: acknowledge, re-arm, then poll every endpoint
 * (re-arming before polling loses no completion). */
void refprobe_chan_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct refflow *rf = w->data;
	uint64_t now = clock_now_ns();
	struct ibv_cq *cq;
	void *ctx;

	while (!ibv_get_cq_event(rf->dev.chan, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		rdma_ep_arm(ctx);
	}
	poll_ep(rf, &rf->s.ep, now);
	poll_ep(rf, &rf->lb_src, now);
	/* (a completion may close them all: n_extra is read again each time) */
	for (size_t i = 0; i < rf->n_extra; i++)
		poll_ep(rf, rf->extra[i], now);
}

uint64_t refflow_outstanding_ns(const struct refflow *rf, uint64_t now)
{
	if (rf->state != REF_UP || !rf->wanted || !rf->cur.active || rf->paused ||
	    now < rf->cur.t0)
		return 0;
	return now - rf->cur.t0;
}

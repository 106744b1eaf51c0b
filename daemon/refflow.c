// SPDX-License-Identifier: MIT
/* The reference latency flow and its responder (see refflow.h): whether it
 * is wanted, starting it when a peer's channel is up, retrying, following
 * the peer channel's events, the device it probes from, reloads.
 * May call: refverbs (device, sessions), refprobe (probes), refresp
 * (responder), peer (handlers, events), log. */
#include "refflow.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "refprobe.h"
#include "refresp.h"
#include "refverbs.h"

static void try_start(struct refflow *rf)
{
	int rc;

	if (!rf->wanted || rf->state == REF_UP || rf->requesting)
		return;
	if (!rf->pc->n_out) {
		refverbs_set_error(rf, REF_DOWN, "no reference.peers configured");
		return;
	}
	if (!refverbs_pick_peer(rf)) {
		struct peer *p = &rf->pc->out[0];

		rf->peer_idx = 0;
		if (p->state == PEER_DOWN)
			refverbs_set_error(rf, REF_DOWN, "peer %s: %s", p->name,
					   p->error[0] ? p->error : "unreachable");
		else
			refverbs_set_error(rf, REF_CONNECTING, "waiting for peer %s", p->name);
		return;
	}
	if (refverbs_ensure_device(rf)) {
		refprobe_fail(rf, "%s", rf->error);
		return;
	}
	rf->state = REF_CONNECTING;
	rf->requesting = true;
	rc = refflow_open_session(rf, &rf->s, 64, 4, refprobe_opened, NULL, rf);
	if (rc) {
		rf->requesting = false;
		refprobe_fail(rf, "cannot open the reference session: %s", strerror(-rc));
	}
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct refflow *rf = w->data;

	if (rf->state == REF_DOWN)
		rf->state = REF_CONNECTING;
	try_start(rf);
}

static void on_peer_event(struct peer_ctx *pc, struct peer *p, bool up, void *arg)
{
	struct refflow *rf = arg;

	if (up) {
		if (rf->wanted && rf->state != REF_UP)
			try_start(rf);
		return;
	}
	refresp_conn_closed(rf, p->serial);
	if (rf->s.conn == p->serial && (rf->s.up || rf->state == REF_UP)) {
		refprobe_stop(rf);
		refflow_close_session(rf, &rf->s);
		refverbs_set_error(rf, REF_CONNECTING, "peer %s: connection lost", p->name);
		try_start(rf);
	}
}

int refflow_init(struct refflow *rf, struct ev_loop *loop, struct peer_ctx *pc,
		 const struct config *cfg, struct quantile *win)
{
	memset(rf, 0, sizeof(*rf));
	rf->loop = loop;
	rf->pc = pc;
	rf->cfg = cfg;
	rf->win = win;
	rf->want_gid = -1;
	ev_init(&rf->chan_w, refprobe_chan_cb);
	rf->chan_w.data = rf;
	ev_init(&rf->probe_w, refprobe_timer_cb);
	rf->probe_w.data = rf;
	ev_init(&rf->retry_w, retry_cb);
	rf->retry_w.data = rf;
	if (peer_handle(pc, "ref_open", refresp_open, rf) ||
	    peer_handle(pc, "ref_close", refresp_close, rf) ||
	    peer_listen_events(pc, on_peer_event, rf))
		return -ENOSPC;
	return 0;
}

void refflow_fini(struct refflow *rf)
{
	refprobe_stop(rf);
	ev_timer_stop(rf->loop, &rf->retry_w);
	refflow_close_session(rf, &rf->s);
	refverbs_lb_teardown(rf);
	while (rf->resp)
		refresp_free(rf, rf->resp);
	if (rf->dev_open) {
		ev_io_stop(rf->loop, &rf->chan_w);
		rdma_dev_close(&rf->dev);
		rf->dev_open = false;
	}
}

void refflow_set_device(struct refflow *rf, const char *name, unsigned port, int gid_index)
{
	if (!strcmp(rf->want_dev, name ? name : "") && rf->want_port == port &&
	    rf->want_gid == gid_index)
		return;
	snprintf(rf->want_dev, sizeof(rf->want_dev), "%s", name ? name : "");
	rf->want_port = port;
	rf->want_gid = gid_index;
	if (rf->dev_open && !rf->resp && !rf->n_extra) {
		/* reopen on the next start */
		refprobe_stop(rf);
		refflow_close_session(rf, &rf->s);
		refverbs_lb_teardown(rf);
		ev_io_stop(rf->loop, &rf->chan_w);
		rdma_dev_close(&rf->dev);
		rf->dev_open = false;
		if (rf->state == REF_UP)
			rf->state = REF_CONNECTING;
		try_start(rf);
	}
}

void refflow_set_wanted(struct refflow *rf, bool wanted)
{
	if (wanted == rf->wanted)
		return;
	rf->wanted = wanted;
	if (!wanted) {
		/* the session stays: probing resumes at once when wanted again */
		refprobe_stop(rf);
		ev_timer_stop(rf->loop, &rf->retry_w);
		if (!rf->s.up) {
			rf->state = REF_OFF;
			rf->error[0] = 0;
		}
		log_debug(LOG_SS_REF, "reference flow not needed: probing stopped");
		return;
	}
	log_debug(LOG_SS_REF, "reference flow needed");
	if (rf->s.up && rf->state == REF_UP) {
		refprobe_schedule(rf, clock_now_ns());
		return;
	}
	rf->state = REF_CONNECTING;
	try_start(rf);
}

void refflow_poll(struct refflow *rf)
{
	if (rf->wanted && rf->state == REF_CONNECTING && !rf->requesting)
		try_start(rf);
}

void refflow_pause(struct refflow *rf, bool paused)
{
	rf->paused = paused;
	memset(&rf->cur, 0, sizeof(rf->cur));
	if (!paused)
		refprobe_schedule(rf, clock_now_ns());
}

void refflow_reconfigure(struct refflow *rf)
{
	/* a new period applies from the next probe on */
	if (!rf->cfg->reference.loopback_correction)
		refverbs_lb_teardown(rf);
	else if (rf->state == REF_UP && !rf->lb_up)
		refverbs_lb_setup(rf);
	if (rf->state != REF_UP)
		try_start(rf);
}

// SPDX-License-Identifier: MIT
/* The reference flow's verbs setup: the probes' device and its completion
 * channel, probe and calibration sessions with a peer's responder (over the
 * peer channel: ref_open, ref_close), the loopback pair of the loopback
 * correction; the flow's error state and its names.
 * May call: rdma, peer (requests), log; not refflow.c, refprobe.c or refresp.c. */
#include "refverbs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define OPEN_TIMEOUT_MS 5000

struct open_op {
	struct refflow *rf;
	struct ref_session *s;
	uint64_t gen;
	ref_open_fn cb;
	void *arg;
};
const char *refflow_state_name(enum ref_state s)
{
	static const char *const names[] = { "off", "connecting", "up", "down" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

const char *refflow_peer_name(const struct refflow *rf)
{
	struct peer *p = peer_outgoing(rf->pc, rf->peer_idx);

	return p ? p->name : "";
}

void refverbs_set_error(struct refflow *rf, enum ref_state st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rf->error, sizeof(rf->error), fmt, ap);
	va_end(ap);
	rf->state = st;
	if (st == REF_DOWN && !rf->logged) {
		log_warnx("reference flow: %s (retrying with backoff; the controller treats the "
			  "missing samples as violations after controller.stale_ms)",
			  rf->error);
		rf->logged = true;
	} else {
		log_debug(LOG_SS_REF, "reference flow %s: %s", refflow_state_name(st), rf->error);
	}
}

int refverbs_ensure_device(struct refflow *rf)
{
	char err[160];
	int rc;

	if (rf->dev_open)
		return 0;
	rc = rdma_dev_open(&rf->dev, rf->want_dev, rf->want_port, rf->want_gid, err, sizeof(err));
	if (rc) {
		refverbs_set_error(rf, REF_DOWN, "%s", err);
		return rc;
	}
	rf->dev_open = true;
	/* (its callback, probe handling's, set by refflow_init) */
	ev_io_set(&rf->chan_w, rf->dev.chan->fd, EV_READ);
	ev_io_start(rf->loop, &rf->chan_w);
	log_debug(LOG_SS_REF, "reference device %s port %u GID %d", rf->dev.name, rf->dev.port,
		  rf->dev.gid_index);
	return 0;
}

/* The first configured peer whose channel is up. */
bool refverbs_pick_peer(struct refflow *rf)
{
	for (size_t i = 0; i < rf->pc->n_out; i++)
		if (rf->pc->out[i].state == PEER_UP) {
			rf->peer_idx = i;
			return true;
		}
	return false;
}

static void ignore_reply(struct peer_ctx *pc, struct peer *p, json_t *result, const char *code,
			 const char *msg, void *arg)
{
}

static void send_close(struct refflow *rf, uint64_t conn, json_int_t handle)
{
	for (size_t i = 0; i < rf->pc->n_out; i++) {
		struct peer *p = &rf->pc->out[i];

		if (p->serial == conn && p->state == PEER_UP)
			peer_request(p, "ref_close", json_pack("{s:I}", "handle", handle),
				     ignore_reply, NULL, 0);
	}
}

static void extra_del(struct refflow *rf, const struct rdma_ep *ep)
{
	for (size_t i = 0; i < rf->n_extra; i++)
		if (rf->extra[i] == ep) {
			size_t last = --rf->n_extra;

			rf->extra[i] = rf->extra[last];
			rf->extra_cb[i] = rf->extra_cb[last];
			rf->extra_arg[i] = rf->extra_arg[last];
			return;
		}
}

void refflow_close_session(struct refflow *rf, struct ref_session *s)
{
	if (s->up || s->handle)
		send_close(rf, s->conn, s->handle);
	extra_del(rf, &s->ep);
	if (s->ep.qp)
		rdma_ep_destroy(&s->ep);
	s->up = false;
	s->handle = 0;
	s->conn = 0;
	s->gen++;
}

static void open_reply(struct peer_ctx *pc, struct peer *p, json_t *result, const char *code,
		       const char *msg, void *arg)
{
	struct open_op *op = arg;
	struct refflow *rf = op->rf;
	struct ref_session *s = op->s;
	json_int_t handle = 0;
	json_t *ep = NULL;
	json_error_t je;
	char err[160];
	int rc = 0;

	if (result && json_unpack_ex(result, &je, JSON_STRICT, "{s:I, s:o}", "handle", &handle,
				     "ep", &ep)) {
		snprintf(err, sizeof(err), "bad ref_open reply: %.120s", je.text);
		rc = -EPROTO;
	}
	if (s->gen != op->gen) { /* closed meanwhile: give it back */
		if (result && !rc)
			send_close(rf, p->serial, handle);
		free(op);
		return;
	}
	if (!result) {
		snprintf(err, sizeof(err), "ref_open: %s: %s", code ? code : "?", msg ? msg : "?");
		rc = -ECONNREFUSED;
	}
	if (!rc) {
		s->handle = handle;
		s->conn = p->serial;
		rc = rdma_remote_parse(ep, true, &s->remote, err, sizeof(err));
	}
	if (!rc)
		rc = rdma_ep_connect(&s->ep, &s->remote, err, sizeof(err));
	if (rc) {
		refflow_close_session(rf, s);
		op->cb(rf, s, rc, err, op->arg);
	} else {
		s->up = true;
		op->cb(rf, s, 0, NULL, op->arg);
	}
	free(op);
}

int refflow_open_session(struct refflow *rf, struct ref_session *s, size_t len, unsigned depth,
			 ref_open_fn cb, ref_wc_fn wc_cb, void *arg)
{
	struct open_op *op;
	char err[160];
	json_t *args;
	int rc;
	struct peer *p = peer_outgoing(rf->pc, rf->peer_idx);

	if ((!p || p->state != PEER_UP) && s != &rf->s && refverbs_pick_peer(rf))
		p = peer_outgoing(rf->pc, rf->peer_idx);
	if (!p || p->state != PEER_UP)
		return -ENOTCONN;
	if (s != &rf->s && rf->n_extra >= REF_MAX_EXTRA)
		return -ENOSPC;
	rc = refverbs_ensure_device(rf);
	if (rc)
		return rc;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	rc = rdma_ep_create(&s->ep, &rf->dev, len, false, depth, true, err, sizeof(err));
	if (rc) {
		log_warnx("reference endpoint: %s", err);
		free(op);
		return rc;
	}
	if (s != &rf->s) {
		rf->extra[rf->n_extra] = &s->ep;
		rf->extra_cb[rf->n_extra] = wc_cb;
		rf->extra_arg[rf->n_extra++] = arg;
	}
	*op = (struct open_op){ .rf = rf, .s = s, .gen = s->gen, .cb = cb, .arg = arg };
	args = json_pack("{s:o, s:I}", "ep", rdma_ep_info(&s->ep, false), "len", (json_int_t)len);
	rc = peer_request(p, "ref_open", args, open_reply, op, OPEN_TIMEOUT_MS);
	if (rc) {
		free(op);
		extra_del(rf, &s->ep);
		rdma_ep_destroy(&s->ep);
	}
	return rc;
}

void refverbs_lb_teardown(struct refflow *rf)
{
	if (rf->lb_src.qp)
		rdma_ep_destroy(&rf->lb_src);
	if (rf->lb_dst.qp)
		rdma_ep_destroy(&rf->lb_dst);
	rf->lb_up = false;
}

/* A loopback pair on the local device: lb_src writes into lb_dst. */
int refverbs_lb_setup(struct refflow *rf)
{
	struct rdma_remote a, b;
	char err[160];
	json_t *j;
	int rc;

	rc = rdma_ep_create(&rf->lb_dst, &rf->dev, 64, true, 1, false, err, sizeof(err));
	if (!rc)
		rc = rdma_ep_create(&rf->lb_src, &rf->dev, 64, false, 4, true, err, sizeof(err));
	if (!rc) {
		j = rdma_ep_info(&rf->lb_dst, true);
		rc = rdma_remote_parse(j, true, &b, err, sizeof(err));
		json_decref(j);
	}
	if (!rc) {
		j = rdma_ep_info(&rf->lb_src, false);
		rc = rdma_remote_parse(j, false, &a, err, sizeof(err));
		json_decref(j);
	}
	if (!rc)
		rc = rdma_ep_connect(&rf->lb_dst, &a, err, sizeof(err));
	if (!rc)
		rc = rdma_ep_connect(&rf->lb_src, &b, err, sizeof(err));
	if (rc) {
		log_warnx("loopback correction disabled: %s", err);
		refverbs_lb_teardown(rf);
		return rc;
	}
	rf->lb_remote = b;
	rf->lb_up = true;
	return 0;
}

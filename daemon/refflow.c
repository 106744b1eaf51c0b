// SPDX-License-Identifier: MIT
/* The reference latency flow and its responder (see refflow.h). */
#include "refflow.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <time.h>

#include "clock.h"
#include "log.h"

#define WR_REF 1ull
#define WR_LB 2ull
#define WR_KIND(id) ((id) >> 56)
#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 30000
#define OPEN_TIMEOUT_MS 5000

struct open_op {
	struct refflow *rf;
	struct ref_session *s;
	uint64_t gen;
	ref_open_fn cb;
	void *arg;
};

static void try_start(struct refflow *rf);
static bool pick_peer(struct refflow *rf);
static void schedule_probe(struct refflow *rf, uint64_t now);

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

static void set_error(struct refflow *rf, enum ref_state st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_error(struct refflow *rf, enum ref_state st, const char *fmt, ...)
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

/* ------------------------------------------------------------ device */

static void chan_cb(struct ev_loop *loop, ev_io *w, int revents);

static int ensure_device(struct refflow *rf)
{
	char err[160];
	int rc;

	if (rf->dev_open)
		return 0;
	rc = rdma_dev_open(&rf->dev, rf->want_dev, rf->want_port, rf->want_gid, err, sizeof(err));
	if (rc) {
		set_error(rf, REF_DOWN, "%s", err);
		return rc;
	}
	rf->dev_open = true;
	ev_io_init(&rf->chan_w, chan_cb, rf->dev.chan->fd, EV_READ);
	rf->chan_w.data = rf;
	ev_io_start(rf->loop, &rf->chan_w);
	log_debug(LOG_SS_REF, "reference device %s port %u GID %d", rf->dev.name, rf->dev.port,
		  rf->dev.gid_index);
	return 0;
}

/* ------------------------------------------------------------ sessions */

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

void refflow_close_session(struct refflow *rf, struct ref_session *s)
{
	if (s->up || s->handle)
		send_close(rf, s->conn, s->handle);
	if (rf->extra == &s->ep)
		rf->extra = NULL;
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

	if ((!p || p->state != PEER_UP) && s != &rf->s && pick_peer(rf))
		p = peer_outgoing(rf->pc, rf->peer_idx);
	if (!p || p->state != PEER_UP)
		return -ENOTCONN;
	rc = ensure_device(rf);
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
		rf->extra = &s->ep;
		rf->extra_cb = wc_cb;
		rf->extra_arg = arg;
	}
	*op = (struct open_op){ .rf = rf, .s = s, .gen = s->gen, .cb = cb, .arg = arg };
	args = json_pack("{s:o, s:I}", "ep", rdma_ep_info(&s->ep, false), "len", (json_int_t)len);
	rc = peer_request(p, "ref_open", args, open_reply, op, OPEN_TIMEOUT_MS);
	if (rc) {
		free(op);
		if (rf->extra == &s->ep)
			rf->extra = NULL;
		rdma_ep_destroy(&s->ep);
	}
	return rc;
}

/* ------------------------------------------------------------ probing */

static void stop_probing(struct refflow *rf)
{
	ev_timer_stop(rf->loop, &rf->probe_w);
	memset(&rf->cur, 0, sizeof(rf->cur));
}

static void lb_teardown(struct refflow *rf)
{
	if (rf->lb_src.qp)
		rdma_ep_destroy(&rf->lb_src);
	if (rf->lb_dst.qp)
		rdma_ep_destroy(&rf->lb_dst);
	rf->lb_up = false;
}

/* Tear the probe session down and retry after the backoff. */
static void fail(struct refflow *rf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct refflow *rf, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	stop_probing(rf);
	refflow_close_session(rf, &rf->s);
	lb_teardown(rf);
	rf->requesting = false;
	rf->errors++;
	set_error(rf, REF_DOWN, "%s", msg);
	rf->backoff_ms = rf->backoff_ms ? rf->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (rf->backoff_ms > BACKOFF_MAX_MS)
		rf->backoff_ms = BACKOFF_MAX_MS;
	ev_timer_stop(rf->loop, &rf->retry_w);
	ev_timer_set(&rf->retry_w, (double)rf->backoff_ms / 1000, 0);
	ev_timer_start(rf->loop, &rf->retry_w);
}

/* A loopback pair on the local device: lb_src writes into lb_dst. */
static int lb_setup(struct refflow *rf)
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
		lb_teardown(rf);
		return rc;
	}
	rf->lb_remote = b;
	rf->lb_up = true;
	return 0;
}

static void probe_open(struct refflow *rf, struct ref_session *s, int err, const char *msg,
		       void *arg)
{
	rf->requesting = false;
	if (err) {
		fail(rf, "%s: %s", refflow_peer_name(rf), msg);
		return;
	}
	if (rf->cfg->reference.loopback_correction && !rf->lb_up)
		lb_setup(rf);
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
	schedule_probe(rf, clock_now_ns());
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
			lb_teardown(rf);
		}
	}
	rf->cur.t0 = clock_now_ns();
	rf->last_t0 = rf->cur.t0;
	rc = rdma_post_write(&rf->s.ep, &rf->s.remote, WR_REF << 56 | seq, REF_MSG_BYTES);
	if (rc)
		fail(rf, "post: %s", strerror(-rc));
}

/* The next probe goes one RefPeriod after the previous one was posted, or
 * at once when the previous one took longer than that (counted as skipped
 * periods): one probe in flight at a time, and no timer wake-up while it is
 * in flight. */
static void schedule_probe(struct refflow *rf, uint64_t now)
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

static void probe_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct refflow *rf = w->data;

	schedule_probe(rf, clock_now_ns());
}

static void sample_done(struct refflow *rf, uint64_t now)
{
	uint64_t v = rf->cur.ref_ns;

	if (rf->lb_up && rf->cur.lb_done)
		v = v > rf->cur.lb_ns ? v - rf->cur.lb_ns : 0;
	quantile_add(rf->win, v);
	rf->samples++;
	rf->last_ns = rf->cur.ref_ns;
	rf->last_lb_ns = rf->cur.lb_done ? rf->cur.lb_ns : 0;
	rf->cur.active = false;
	schedule_probe(rf, now);
}

static void handle_wc(struct refflow *rf, struct rdma_ep *ep, const struct ibv_wc *wc,
		      uint64_t now)
{
	/* a completion of a probe posted before a pause is not this probe's */
	bool mine = rf->cur.active && (wc->wr_id & ((1ull << 56) - 1)) == rf->cur.seq;

	/* a probe posted while this batch was being polled completes after it */
	if (mine && now < rf->cur.t0)
		now = clock_now_ns();

	if (ep == rf->extra) {
		rf->extra_cb(rf, wc, now, rf->extra_arg);
		return;
	}
	if (ep == &rf->lb_src) {
		if (wc->status != IBV_WC_SUCCESS) {
			log_warnx("loopback correction disabled: %s",
				  ibv_wc_status_str(wc->status));
			lb_teardown(rf);
			rf->cur.lb_done = false;
		} else if (mine) {
			rf->cur.lb_ns = now - rf->cur.lb_t0;
			rf->cur.lb_done = true;
		}
	} else if (ep == &rf->s.ep) {
		if (wc->status != IBV_WC_SUCCESS) {
			fail(rf, "reference QP: %s", ibv_wc_status_str(wc->status));
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

static void poll_ep(struct refflow *rf, struct rdma_ep *ep, uint64_t now)
{
	struct ibv_wc wc[16];
	int n;

	while (ep->cq && (n = ibv_poll_cq(ep->cq, 16, wc)) > 0)
		for (int i = 0; i < n && ep->cq; i++)
			handle_wc(rf, ep, &wc[i], now);
}

/* The completion channel: acknowledge, re-arm, then poll every endpoint
 * (re-arming before polling loses no completion). */
static void chan_cb(struct ev_loop *loop, ev_io *w, int revents)
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
	if (rf->extra)
		poll_ep(rf, rf->extra, now);
}

uint64_t refflow_outstanding_ns(const struct refflow *rf, uint64_t now)
{
	if (rf->state != REF_UP || !rf->wanted || !rf->cur.active || rf->paused ||
	    now < rf->cur.t0)
		return 0;
	return now - rf->cur.t0;
}

/* ------------------------------------------------------------ control */

/* The first configured peer whose channel is up. */
static bool pick_peer(struct refflow *rf)
{
	for (size_t i = 0; i < rf->pc->n_out; i++)
		if (rf->pc->out[i].state == PEER_UP) {
			rf->peer_idx = i;
			return true;
		}
	return false;
}

static void try_start(struct refflow *rf)
{
	int rc;

	if (!rf->wanted || rf->state == REF_UP || rf->requesting)
		return;
	if (!rf->pc->n_out) {
		set_error(rf, REF_DOWN, "no reference.peers configured");
		return;
	}
	if (!pick_peer(rf)) {
		struct peer *p = &rf->pc->out[0];

		rf->peer_idx = 0;
		if (p->state == PEER_DOWN)
			set_error(rf, REF_DOWN, "peer %s: %s", p->name,
				  p->error[0] ? p->error : "unreachable");
		else
			set_error(rf, REF_CONNECTING, "waiting for peer %s", p->name);
		return;
	}
	if (ensure_device(rf)) {
		fail(rf, "%s", rf->error);
		return;
	}
	rf->state = REF_CONNECTING;
	rf->requesting = true;
	rc = refflow_open_session(rf, &rf->s, 64, 4, probe_open, NULL, rf);
	if (rc) {
		rf->requesting = false;
		fail(rf, "cannot open the reference session: %s", strerror(-rc));
	}
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct refflow *rf = w->data;

	if (rf->state == REF_DOWN)
		rf->state = REF_CONNECTING;
	try_start(rf);
}

/* ------------------------------------------------------------ responder */

static void responder_free(struct refflow *rf, struct ref_responder *r)
{
	struct ref_responder **pp;

	for (pp = &rf->resp; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	rdma_ep_destroy(&r->ep);
	rf->resp_bytes -= r->len;
	free(r);
	rf->n_resp--;
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return false;
}

/* May connection @conn from @host register another @len bytes?  Bounded per
 * connection, per peer host (whatever number of connections it opens) and
 * in total, in responders (QPs) and in bytes: 0, or -EBUSY with @why. */
static int resp_admit(const struct refflow *rf, uint64_t conn, const struct sockaddr_storage *host,
		      size_t len, char *why, size_t n)
{
	size_t on_conn = 0, on_host = 0, host_bytes = 0;

	for (const struct ref_responder *r = rf->resp; r; r = r->next) {
		on_conn += r->conn == conn;
		if (same_host(&r->host, host)) {
			on_host++;
			host_bytes += r->len;
		}
	}
	if (on_conn >= REF_MAX_RESPONDERS)
		snprintf(why, n, "%d endpoints per connection", REF_MAX_RESPONDERS);
	else if (on_host >= REF_MAX_RESP_PER_HOST || host_bytes + len > REF_MAX_RESP_BYTES_PER_HOST)
		snprintf(why, n, "%d endpoints or %u MiB per peer host", REF_MAX_RESP_PER_HOST,
			 REF_MAX_RESP_BYTES_PER_HOST >> 20);
	else if (rf->n_resp >= REF_MAX_RESP_TOTAL || rf->resp_bytes + len > REF_MAX_RESP_BYTES_TOTAL)
		snprintf(why, n, "%d endpoints or %u MiB for all peers", REF_MAX_RESP_TOTAL,
			 REF_MAX_RESP_BYTES_TOTAL >> 20);
	else
		return 0;
	return -EBUSY;
}

static void op_ref_open(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq,
			json_t *args, void *arg)
{
	struct refflow *rf = arg;
	struct rdma_remote rr;
	struct sockaddr_storage host;
	struct ref_responder *r;
	socklen_t hlen;
	json_int_t len;
	json_t *ep;
	json_error_t je;
	char err[160];

	if (json_unpack_ex(args, &je, JSON_STRICT, "{s:o, s:I}", "ep", &ep, "len", &len)) {
		peer_reply_error(pc, rq, "bad_request", "%s", je.text);
		return;
	}
	if (len < 1 || len > REF_MAX_BUF) {
		peer_reply_error(pc, rq, "bad_request", "len must be 1..%u", REF_MAX_BUF);
		return;
	}
	if (rdma_remote_parse(ep, false, &rr, err, sizeof(err))) {
		peer_reply_error(pc, rq, "bad_request", "%s", err);
		return;
	}
	if (peer_remote_addr(p, &host, &hlen)) {
		peer_reply_error(pc, rq, "internal", "no peer address");
		return;
	}
	if (resp_admit(rf, p->serial, &host, (size_t)len, err, sizeof(err))) {
		static uint64_t last_log;
		uint64_t now = clock_now_ns();

		rf->resp_refused++;
		if (!last_log || now - last_log > 10000000000ull) { /* one line per 10 s */
			log_warnx("peer %s: ref_open refused: %s (%llu refused so far)", p->name,
				  err, (unsigned long long)rf->resp_refused);
			last_log = now;
		}
		peer_reply_error(pc, rq, "limit", "%s", err);
		return;
	}
	if (ensure_device(rf)) {
		peer_reply_error(pc, rq, "no_device", "%s", rf->error);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		peer_reply_error(pc, rq, "internal", "out of memory");
		return;
	}
	if (rdma_ep_create(&r->ep, &rf->dev, (size_t)len, true, 1, false, err, sizeof(err)) ||
	    rdma_ep_connect(&r->ep, &rr, err, sizeof(err))) {
		if (r->ep.qp)
			rdma_ep_destroy(&r->ep);
		free(r);
		peer_reply_error(pc, rq, "rdma", "%s", err);
		return;
	}
	r->conn = p->serial;
	r->host = host;
	r->len = (size_t)len;
	r->handle = ++rf->next_handle;
	r->next = rf->resp;
	rf->resp = r;
	rf->n_resp++;
	rf->resp_bytes += r->len;
	log_debug(LOG_SS_REF, "responder %lld for %s: QP %u, %lld bytes", (long long)r->handle,
		  p->name, r->ep.qp->qp_num, (long long)len);
	peer_reply(pc, rq, json_pack("{s:I, s:o}", "handle", (json_int_t)r->handle, "ep",
				     rdma_ep_info(&r->ep, true)));
}

static void op_ref_close(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq,
			 json_t *args, void *arg)
{
	struct refflow *rf = arg;
	struct ref_responder *r;
	json_int_t handle;
	json_error_t je;

	if (json_unpack_ex(args, &je, JSON_STRICT, "{s:I}", "handle", &handle)) {
		peer_reply_error(pc, rq, "bad_request", "%s", je.text);
		return;
	}
	for (r = rf->resp; r; r = r->next)
		if (r->conn == p->serial && r->handle == handle)
			break;
	if (!r) {
		peer_reply_error(pc, rq, "not_found", "no endpoint %lld", (long long)handle);
		return;
	}
	responder_free(rf, r);
	peer_reply(pc, rq, NULL);
}

static void on_peer_event(struct peer_ctx *pc, struct peer *p, bool up, void *arg)
{
	struct refflow *rf = arg;
	struct ref_responder *r, *next;

	if (up) {
		if (rf->wanted && rf->state != REF_UP)
			try_start(rf);
		return;
	}
	for (r = rf->resp; r; r = next) {
		next = r->next;
		if (r->conn == p->serial)
			responder_free(rf, r);
	}
	if (rf->s.conn == p->serial && (rf->s.up || rf->state == REF_UP)) {
		stop_probing(rf);
		refflow_close_session(rf, &rf->s);
		set_error(rf, REF_CONNECTING, "peer %s: connection lost", p->name);
		try_start(rf);
	}
}

/* ------------------------------------------------------------ setup */

int refflow_init(struct refflow *rf, struct ev_loop *loop, struct peer_ctx *pc,
		 const struct config *cfg, struct quantile *win)
{
	memset(rf, 0, sizeof(*rf));
	rf->loop = loop;
	rf->pc = pc;
	rf->cfg = cfg;
	rf->win = win;
	rf->want_gid = -1;
	ev_init(&rf->probe_w, probe_cb);
	rf->probe_w.data = rf;
	ev_init(&rf->retry_w, retry_cb);
	rf->retry_w.data = rf;
	if (peer_handle(pc, "ref_open", op_ref_open, rf) ||
	    peer_handle(pc, "ref_close", op_ref_close, rf) ||
	    peer_listen_events(pc, on_peer_event, rf))
		return -ENOSPC;
	return 0;
}

void refflow_fini(struct refflow *rf)
{
	stop_probing(rf);
	ev_timer_stop(rf->loop, &rf->retry_w);
	refflow_close_session(rf, &rf->s);
	lb_teardown(rf);
	while (rf->resp)
		responder_free(rf, rf->resp);
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
	if (rf->dev_open && !rf->resp && !rf->extra) {
		/* reopen on the next start */
		stop_probing(rf);
		refflow_close_session(rf, &rf->s);
		lb_teardown(rf);
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
		stop_probing(rf);
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
		schedule_probe(rf, clock_now_ns());
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
		schedule_probe(rf, clock_now_ns());
}

void refflow_reconfigure(struct refflow *rf)
{
	/* a new period applies from the next probe on */
	if (!rf->cfg->reference.loopback_correction)
		lb_teardown(rf);
	else if (rf->state == REF_UP && !rf->lb_up)
		lb_setup(rf);
	if (rf->state != REF_UP)
		try_start(rf);
}

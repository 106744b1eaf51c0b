// SPDX-License-Identifier: MIT
/* justbench sessions: the client and server sides of one run.
 * May call: bench_wire, bench_verbs, bench_run, bench_bidir, bench_progress, bench_sweep(run),
 * bench_report and libc. */
#include "bench_session.h"
#include "bench_err.h"

#include "bench_bidir.h"
#include "bench_progress.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INLINE_WANTED 64
#define START_LEAD_NS (20ull * 1000000)
#define STOP_POLL_MS  200

static int min_mtu(int a, int b)
{
	return a < b ? a : b;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* Receives one message of type want; an ERROR becomes "server: TEXT" / "client: TEXT". */
static int expect(int fd, int timeout_ms, enum bench_msg want, const char *peer, uint8_t *buf,
		  size_t *len, char *err, size_t errlen)
{
	char text[BENCH_ERROR_MAX];
	enum bench_msg type;
	int rc = bench_wire_recv(fd, timeout_ms, &type, buf, len, err, errlen);

	if (rc == -ETIMEDOUT)
		return bench_seterr(err, errlen, rc, "%s: no answer in %d s", peer,
				    timeout_ms / 1000);
	if (rc == -ECONNRESET)
		return bench_seterr(err, errlen, rc, "%s: closed the connection", peer);
	if (rc && rc != -EPROTO)
		return bench_seterr(err, errlen, rc, "%s: %s", peer, strerror(-rc));
	if (rc)
		return rc;
	if (type == BENCH_MSG_ERROR) {
		bench_wire_get_error(buf, *len, text, sizeof(text));
		return bench_seterr(err, errlen, -EPROTO, "%s: %s", peer, text);
	}
	if (type != want)
		return bench_seterr(err, errlen, -EPROTO,
				    "%s: unexpected message type %d (wanted %d)", peer, type, want);
	return 0;
}

/* ---------------------------------------------------------------- client */

struct client {
	struct bench_dev dev;
	struct bench_worker *w;
	size_t nw;
	struct bench_hello hello;
	struct bench_accept accept;
	struct bench_result result;
	uint8_t buf[BENCH_WIRE_MAX];
};

static int client_setup(struct client *c, const struct bench_end *e, bool rperf,
			enum bench_mode mode, const struct bench_sweep_cfg *sweep,
			const struct bench_flow *flows, size_t n, char *err, size_t errlen)
{
	size_t k = 0;
	int rc;

	c->hello.mtu = (uint8_t)c->dev.port.active_mtu;
	c->hello.mode = (uint8_t)mode;
	c->hello.n_flows = (uint16_t)n;
	for (size_t i = 0; i < n; i++) {
		const struct bench_flow *f = &flows[i];
		struct bench_qp_cfg cfg = {
			.buf_len = f->size,
			.send_depth = f->batch * f->window,
			.cq_depth = f->window,
			.inline_size = f->size <= INLINE_WANTED && f->verb != BENCH_READ ?
					       INLINE_WANTED : 0,
			.event = f->poll == BENCH_POLL_EVENT,
			.cls = e->classify ? (int)f->cls : -1,
		};

		if (mode == BENCH_MODE_PROGRESS)
			bench_progress_client_cfg(f, &cfg);
		if (f->size > c->dev.port.max_msg_sz)
			return bench_seterr(err, errlen, -EINVAL,
					    "flow %s: %u-byte messages, %s takes %u "
					    "at most",
					    f->name, f->size, c->dev.name, c->dev.port.max_msg_sz);
		c->hello.flows[i] = (struct bench_wire_flow){
		    .cls = (uint8_t)f->cls,
		    .verb = (uint8_t)f->verb,
		    .size = f->size,
		    .qps = f->qps,
		    .recv_depth = bench_recv_depth(f),
		};
		if (bench_flow_format(f, c->hello.flows[i].spec, sizeof(c->hello.flows[i].spec)))
			return bench_seterr(err, errlen, -EINVAL, "flow %s: specification too long",
					    f->name);
		for (uint32_t q = 0; q < f->qps; q++, k++) {
			struct bench_worker *w = &c->w[k];

			w->flow = f;
			w->pollcost = mode == BENCH_MODE_POLL_COST;
			rc = bench_qp_create(&w->qp, &c->dev, &cfg, err, errlen);
			if (!rc && rperf && f->cls == BENCH_LAT)
				rc = bench_worker_setup_probe(w, &c->dev, e->classify, err, errlen);
			if (!rc && bench_sweep_mode(mode)) {
				w->sweep = calloc(1, sizeof(*w->sweep));
				rc = w->sweep ? bench_sweeper_setup(w->sweep, mode, sweep, f,
								    c->dev.pd, err, errlen)
					      : bench_seterr(err, errlen, -ENOMEM, "out of memory");
			}
			if (rc)
				return rc;
			bench_qp_local(&w->qp, &c->dev, &c->hello.qps[k]);
		}
	}
	c->hello.n_qps = (uint16_t)k;
	return 0;
}

static int client_connect(struct client *c, int fd, char *err, size_t errlen)
{
	size_t len = bench_wire_put_hello(&c->hello, c->buf, sizeof(c->buf));
	int rc;

	rc = bench_wire_send(fd, BENCH_MSG_HELLO, c->buf, len);
	if (rc)
		return bench_seterr(err, errlen, rc, "cannot send to the server: %s",
				    strerror(-rc));
	rc = expect(fd, BENCH_SETUP_TIMEOUT_MS, BENCH_MSG_ACCEPT, "server", c->buf, &len, err,
		    errlen);
	if (!rc)
		rc = bench_wire_get_accept(c->buf, len, &c->accept, err, errlen);
	if (rc)
		return rc;
	if (c->accept.n_qps != c->nw)
		return bench_seterr(err, errlen, -EPROTO, "server: %u QPs for our %zu",
				    c->accept.n_qps, c->nw);
	for (size_t k = 0; k < c->nw; k++) {
		struct bench_worker *w = &c->w[k];

		if (c->accept.qps[k].len < w->flow->size)
			return bench_seterr(err, errlen, -EPROTO,
					    "server: a %u-byte buffer for %u-byte "
					    "messages",
					    c->accept.qps[k].len, w->flow->size);
		w->remote = c->accept.qps[k];
		rc = bench_qp_connect(&w->qp, &c->dev, &w->remote,
				      min_mtu(c->accept.mtu, c->hello.mtu), err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static int client_run(struct client *c, int fd, atomic_bool *stop, char *err, size_t errlen)
{
	struct bench_start start;
	int rc = 0, sent;

	bench_start_init(&start);
	for (size_t k = 0; k < c->nw && !rc; k++) {
		c->w[k].stop = stop;
		c->w[k].start = &start;
		rc = bench_worker_start(&c->w[k]);
	}
	if (rc) {
		/* the started ones see the stop and end at once */
		atomic_store(stop, true);
		bench_seterr(err, errlen, rc, "cannot start a thread: %s", strerror(-rc));
	}
	/* the server's flows (--mode bidir) start as ours, lead included */
	sent = bench_wire_send(fd, BENCH_MSG_GO, NULL, 0);
	if (sent && !rc) {
		atomic_store(stop, true);
		rc = bench_seterr(err, errlen, sent, "cannot send to the server: %s",
				  strerror(-sent));
	}
	bench_start_go(&start, START_LEAD_NS);
	for (size_t k = 0; k < c->nw; k++)
		bench_worker_join(&c->w[k]);
	bench_start_destroy(&start);
	return rc;
}

static int client_results(struct client *c, int fd, const struct bench_flow *flows, size_t n,
			  struct bench_results *res, char *err, size_t errlen)
{
	size_t len, k = 0;
	int rc;

	rc = bench_wire_send(fd, BENCH_MSG_DONE, NULL, 0);
	if (rc)
		return bench_seterr(err, errlen, rc, "cannot send to the server: %s",
				    strerror(-rc));
	rc = expect(fd, BENCH_SETUP_TIMEOUT_MS, BENCH_MSG_RESULT, "server", c->buf, &len, err,
		    errlen);
	if (!rc)
		rc = bench_wire_get_result(c->buf, len, &c->result, err, errlen);
	if (!rc && c->result.n_flows != n)
		rc = bench_seterr(err, errlen, -EPROTO, "server: results of %u flows for our %zu",
				  c->result.n_flows, n);
	for (size_t i = 0; i < n; i++) {
		struct bench_flow_result *r = &res->flows[i];

		memset(r, 0, sizeof(*r));
		r->flow = flows[i];
		if (bench_result_collect(r, &c->w[k], flows[i].qps) && !rc)
			rc = bench_seterr(err, errlen, -ENOMEM,
					  "out of memory for the latency samples");
		k += flows[i].qps;
		if (c->result.n_flows == n) {
			r->server = true;
			r->server_msgs = c->result.flows[i].msgs;
			r->server_bytes = c->result.flows[i].bytes;
			r->server_cpu_ns = c->result.flows[i].cpu_ns;
			r->reverse = c->result.flows[i].reverse;
			r->rev = c->result.flows[i].rev;
		}
	}
	res->n = n;
	return rc;
}

int bench_client_session(const struct bench_end *e, bool rperf, enum bench_mode mode,
			 const struct bench_sweep_cfg *sweep, const struct bench_flow *flows,
			 size_t n, int fd, atomic_bool *stop, struct bench_results *res, char *err,
			 size_t errlen)
{
	struct client *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return bench_seterr(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		c->nw += flows[i].qps;
	c->w = calloc(c->nw, sizeof(*c->w));
	if (!c->w) {
		rc = bench_seterr(err, errlen, -ENOMEM, "out of memory");
		goto out_free;
	}
	rc = bench_dev_open(&c->dev, e->dev, e->port, e->gid_index, err, errlen);
	if (rc)
		goto out_free;
	snprintf(res->device, sizeof(res->device), "%s", c->dev.name);
	res->gid_index = c->dev.gid_index;
	res->rperf = rperf;
	res->bench_mode = mode;
	res->shim = bench_classify_available();
	rc = client_setup(c, e, rperf, mode, sweep, flows, n, err, errlen);
	if (!rc)
		rc = client_connect(c, fd, err, errlen);
	if (!rc)
		rc = client_run(c, fd, stop, err, errlen);
	if (!rc)
		rc = client_results(c, fd, flows, n, res, err, errlen);
	for (size_t k = 0; k < c->nw; k++)
		bench_worker_free(&c->w[k]);
	bench_dev_close(&c->dev);
out_free:
	free(c->w);
	free(c);
	return rc;
}

/* ---------------------------------------------------------------- server */

struct server {
	struct bench_dev dev;
	struct bench_responder *r;
	size_t nr;
	struct bench_bidir bidir; /* --mode bidir: the server's workers */
	struct bench_progress_server prog; /* --mode progress: the loaded threads */
	atomic_bool done;
	struct bench_hello hello;
	struct bench_accept accept;
	struct bench_result result;
	uint8_t buf[BENCH_WIRE_MAX];
};

static int server_setup(struct server *s, const struct bench_end *e, char *err, size_t errlen)
{
	uint64_t mem = 0;
	size_t k = 0;
	int rc;

	for (size_t i = 0; i < s->hello.n_flows; i++)
		mem += (uint64_t)s->hello.flows[i].size * s->hello.flows[i].qps;
	if (mem > BENCH_BUFFERS_MAX)
		return bench_seterr(err, errlen, -ENOMEM,
				    "the flows need %llu MiB of buffers, this "
				    "server gives at most %llu",
				    (unsigned long long)(mem >> 20), BENCH_BUFFERS_MAX >> 20);
	s->accept.mtu = (uint8_t)s->dev.port.active_mtu;
	s->accept.n_qps = s->hello.n_qps;
	if (s->hello.mode == BENCH_MODE_BIDIR)
		return bench_bidir_setup(&s->bidir, &s->dev, &s->hello,
					 min_mtu(s->hello.mtu, s->accept.mtu), e->classify,
					 &s->accept, err, errlen);
	if (s->hello.mode == BENCH_MODE_PROGRESS)
		return bench_progress_server_setup(&s->prog, &s->dev, &s->hello,
						   min_mtu(s->hello.mtu, s->accept.mtu),
						   e->classify, &s->accept, err, errlen);
	for (size_t i = 0; i < s->hello.n_flows; i++) {
		const struct bench_wire_flow *f = &s->hello.flows[i];
		struct bench_qp_cfg cfg = {
			.buf_len = f->size, .send_depth = 1, .cq_depth = f->recv_depth,
			.recv_depth = f->recv_depth, .event = true,
			.cls = e->classify ? f->cls : -1,
		};

		if (f->size > s->dev.port.max_msg_sz)
			return bench_seterr(err, errlen, -EINVAL,
					    "%u-byte messages, %s takes %u at most", f->size,
					    s->dev.name, s->dev.port.max_msg_sz);
		for (uint32_t q = 0; q < f->qps; q++, k++) {
			struct bench_responder *r = &s->r[k];

			r->size = f->size;
			r->stop = &s->done;
			rc = bench_qp_create(&r->qp, &s->dev, &cfg, err, errlen);
			if (!rc)
				rc = bench_qp_connect(&r->qp, &s->dev, &s->hello.qps[k],
						      min_mtu(s->hello.mtu, s->accept.mtu), err,
						      errlen);
			if (!rc && f->recv_depth) /* as many as the QP took */
				rc = bench_qp_post_recv(&r->qp, min_u32(f->recv_depth,
									r->qp.max_recv), f->size);
			if (!rc && f->recv_depth)
				rc = bench_responder_start(r);
			if (rc && !err[0])
				bench_seterr(err, errlen, rc, "%s", strerror(-rc));
			if (rc)
				return rc;
			bench_qp_local(&r->qp, &s->dev, &s->accept.qps[k]);
		}
	}
	return 0;
}

/* Waits for a message of type want, or for stop. */
static int server_wait(struct server *s, int fd, const atomic_bool *stop, enum bench_msg want,
		       char *err, size_t errlen)
{
	size_t len;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int rc = poll(&pfd, 1, STOP_POLL_MS);

		if (atomic_load(stop))
			return bench_seterr(err, errlen, -EINTR, "interrupted");
		if (rc < 0 && errno != EINTR)
			return bench_seterr(err, errlen, -errno, "poll: %s", strerror(errno));
		if (rc > 0)
			return expect(fd, BENCH_SETUP_TIMEOUT_MS, want, "client", s->buf, &len,
				      err, errlen);
	}
}

static void server_results(struct server *s)
{
	size_t k = 0;

	s->result.n_flows = s->hello.n_flows;
	for (size_t i = 0; i < s->hello.n_flows; i++) {
		for (uint32_t q = 0; q < s->hello.flows[i].qps; q++, k++) {
			s->result.flows[i].msgs += s->r[k].msgs;
			s->result.flows[i].bytes += s->r[k].bytes;
			s->result.flows[i].cpu_ns += s->r[k].cpu_ns;
		}
	}
}

int bench_server_session(const struct bench_end *e, int fd, const atomic_bool *stop, char *err,
			 size_t errlen)
{
	struct server *s = calloc(1, sizeof(*s));
	char perr[BENCH_ERRMSG_MAX + 16] = "";
	size_t len;
	int rc, prc = 0;

	if (!s)
		return bench_seterr(err, errlen, -ENOMEM, "out of memory");
	err[0] = 0;
	rc = expect(fd, BENCH_SETUP_TIMEOUT_MS, BENCH_MSG_HELLO, "client", s->buf, &len, err,
		    errlen);
	if (!rc)
		rc = bench_wire_get_hello(s->buf, len, &s->hello, err, errlen);
	if (rc) {
		bench_wire_send_error(fd, "%s", err);
		goto out_free;
	}
	s->nr = s->hello.n_qps;
	s->r = calloc(s->nr, sizeof(*s->r));
	if (!s->r) {
		rc = bench_seterr(err, errlen, -ENOMEM, "out of memory");
		bench_wire_send_error(fd, "%s", err);
		goto out_free;
	}
	rc = bench_dev_open(&s->dev, e->dev, e->port, e->gid_index, err, errlen);
	if (rc) {
		bench_wire_send_error(fd, "%s", err);
		goto out_free;
	}
	rc = server_setup(s, e, err, errlen);
	if (rc) {
		bench_wire_send_error(fd, "%s", err);
		goto out_stop;
	}
	len = bench_wire_put_accept(&s->accept, s->buf, sizeof(s->buf));
	rc = bench_wire_send(fd, BENCH_MSG_ACCEPT, s->buf, len);
	if (rc) {
		bench_seterr(err, errlen, rc, "cannot send to the client: %s", strerror(-rc));
		goto out_stop;
	}
	rc = server_wait(s, fd, stop, BENCH_MSG_GO, err, errlen);
	if (!rc && s->hello.mode == BENCH_MODE_BIDIR)
		bench_bidir_go(&s->bidir, START_LEAD_NS);
	if (!rc)
		rc = server_wait(s, fd, stop, BENCH_MSG_DONE, err, errlen);
out_stop:
	atomic_store(&s->done, true);
	if (rc)
		atomic_store(&s->bidir.stop, true);
	for (size_t k = 0; k < s->nr; k++)
		bench_responder_join(&s->r[k]);
	if (!rc) {
		server_results(s);
		if (s->hello.mode == BENCH_MODE_BIDIR)
			bench_bidir_finish(&s->bidir, &s->result, s->hello.n_flows);
		if (s->hello.mode == BENCH_MODE_PROGRESS)
			prc = bench_progress_server_finish(&s->prog, &s->hello, &s->result, perr,
							   sizeof(perr));
		len = bench_wire_put_result(&s->result, s->buf, sizeof(s->buf));
		rc = bench_wire_send(fd, BENCH_MSG_RESULT, s->buf, len);
		if (rc)
			bench_seterr(err, errlen, rc, "cannot send to the client: %s",
				     strerror(-rc));
	}
	if (prc && !rc)
		rc = bench_seterr(err, errlen, prc, "%s", perr);
	for (size_t k = 0; k < s->nr && !rc; k++)
		if (s->r[k].error)
			rc = bench_seterr(err, errlen, -EIO, "QP %zu: %s", k, s->r[k].errmsg);
	for (size_t k = 0; k < s->nr; k++)
		bench_qp_destroy(&s->r[k].qp);
	bench_bidir_free(&s->bidir);
	bench_progress_server_free(&s->prog);
	bench_dev_close(&s->dev);
out_free:
	free(s->r);
	free(s);
	return rc;
}

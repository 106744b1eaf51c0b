// SPDX-License-Identifier: MIT
/* justbench --mode progress: the client's fetches and the server's loaded thread.
 * May call: bench_verbs, bench_stats, bench_flow, bench_mode, bench_sweep(run), bench_wire (the
 * HELLO it serves), libibverbs, pthreads and libc. */
#include "bench_progress.h"
#include "bench_err.h"

#include "bench_mode.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC	     0x4a50 /* "JP" */
#define WC_MAX	     16
#define WAIT_MS	     100 /* an idle server thread's sleep between looks at the stop flag */
#define CLIENT_RECVS 2
#define PEER_SENDQ   (2 * BENCH_PROGRESS_RECVS + 4) /* answers in flight: never near it */
#define SAMPLES0     4096

enum { WR_MSG = 1, WR_READ, WR_RECV, WR_ANSWER, WR_ACK };

/* ---------------------------------------------------------------- messages, layout */

void bench_progress_put(const struct bench_progress_msg *m, uint8_t *b)
{
	b[0] = MAGIC >> 8;
	b[1] = MAGIC & 0xff;
	b[2] = BENCH_PROGRESS_VERSION;
	b[3] = m->op;
	for (int i = 0; i < 4; i++)
		b[4 + i] = (uint8_t)(m->seq >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		b[8 + i] = (uint8_t)(m->delay_ns >> (56 - 8 * i));
}

int bench_progress_get(const uint8_t *b, size_t len, struct bench_progress_msg *m)
{
	memset(m, 0, sizeof(*m));
	if (len != BENCH_PROGRESS_MSG || b[0] != MAGIC >> 8 || b[1] != (MAGIC & 0xff) ||
	    b[2] != BENCH_PROGRESS_VERSION || b[3] < 1 || b[3] >= BENCH_PROG_OP_MAX)
		return -EPROTO;
	m->op = b[3];
	for (int i = 0; i < 4; i++)
		m->seq = m->seq << 8 | b[4 + i];
	for (int i = 0; i < 8; i++)
		m->delay_ns = m->delay_ns << 8 | b[8 + i];
	return m->delay_ns > BENCH_RESPONSE_DELAY_MAX ? -EPROTO : 0;
}

uint64_t bench_progress_gap(uint64_t *state, uint64_t d)
{
	uint64_t z;

	if (!d)
		return 0;
	/* splitmix64 */
	z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z % d;
}

uint32_t bench_progress_client_recv_len(uint32_t size)
{
	return size < BENCH_PROGRESS_MSG ? BENCH_PROGRESS_MSG : size;
}

size_t bench_progress_client_buf(uint32_t size)
{
	return (size_t)bench_progress_client_recv_len(size) + BENCH_PROGRESS_SLOT;
}

size_t bench_progress_server_buf(uint32_t size)
{
	return (size_t)size + BENCH_PROGRESS_SLOT * (1 + BENCH_PROGRESS_RECVS);
}

void bench_progress_client_cfg(const struct bench_flow *f, struct bench_qp_cfg *cfg)
{
	cfg->buf_len = bench_progress_client_buf(f->size);
	cfg->send_depth = 2;
	cfg->cq_depth = 2 + CLIENT_RECVS;
	cfg->recv_depth = CLIENT_RECVS;
	cfg->inline_size = BENCH_PROGRESS_SLOT;
	cfg->event = false;
}

/* d ns of busy computation (a spin on CLOCK_MONOTONIC). */
static void spin(uint64_t d)
{
	volatile uint64_t acc = 0;
	uint64_t t0;

	if (!d)
		return;
	t0 = bench_now_ns();
	do {
		for (unsigned k = 0; k < 64; k++)
			acc += k * k;
	} while (bench_now_ns() - t0 < d);
}

/* ---------------------------------------------------------------- client */

struct cl {
	const struct bench_flow *f;
	const struct bench_sweep_qp *q;
	uint8_t *area; /* the message area */
	uint32_t recv_len, seq;
	uint64_t delay; /* the server's current D */
	char *err;
	size_t errlen;
};

static int cl_post_recv(struct cl *c)
{
	struct ibv_sge sge = { .addr = (uintptr_t)c->q->buf, .length = c->recv_len,
			       .lkey = c->q->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc = ibv_post_recv(c->q->qp, &wr, &bad);

	return rc ? bench_seterr(c->err, c->errlen, -EIO, "ibv_post_recv: %s", strerror(rc)) : 0;
}

/* Posts the flow's READ, or a message (op, the next sequence number, d). */
static int cl_post(struct cl *c, bool read, uint8_t op, uint64_t d)
{
	struct ibv_sge sge = { .addr = (uintptr_t)c->area, .length = BENCH_PROGRESS_MSG,
			       .lkey = c->q->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_MSG, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	int rc;

	if (read) {
		sge.addr = (uintptr_t)c->q->buf;
		sge.length = c->f->size;
		wr.wr_id = WR_READ;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = c->q->remote_addr;
		wr.wr.rdma.rkey = c->q->rkey;
	} else {
		bench_progress_put(&(struct bench_progress_msg){ op, ++c->seq, d }, c->area);
		if (c->q->max_inline >= BENCH_PROGRESS_MSG)
			wr.send_flags |= IBV_SEND_INLINE;
	}
	rc = ibv_post_send(c->q->qp, &wr, &bad);
	return rc ? bench_seterr(c->err, c->errlen, -EIO, "ibv_post_send: %s", strerror(rc)) : 0;
}

/* Whether the receive that came (len bytes) is the answer to message seq: an ACK of it, or (op
 * REQUEST) the flow's answer, which starts with the request when it has room for it. */
static bool cl_answer_ok(const struct cl *c, uint8_t op, uint32_t len)
{
	struct bench_progress_msg m;

	if (op != BENCH_PROG_REQUEST)
		return bench_progress_get(c->q->buf, len, &m) == 0 && m.op == BENCH_PROG_ACK &&
		       m.seq == c->seq;
	if (len != c->f->size)
		return false;
	return len < BENCH_PROGRESS_MSG ||
	       (bench_progress_get(c->q->buf, BENCH_PROGRESS_MSG, &m) == 0 &&
		m.op == BENCH_PROG_REQUEST && m.seq == c->seq);
}

/*
 * Waits for the completion of what was posted and, unless read, for the server's answer (op is
 * what was sent); *done is when the READ completed or the answer arrived.
 */
static int cl_wait(struct cl *c, bool read, uint8_t op, uint64_t deadline, uint64_t *done)
{
	bool sent = false, answered = read;
	struct ibv_wc wc[WC_MAX];

	while (!sent || !answered) {
		int n = ibv_poll_cq(c->q->cq, WC_MAX, wc);
		uint64_t now = bench_now_ns();

		if (n < 0)
			return bench_seterr(c->err, c->errlen, -EIO, "ibv_poll_cq failed (%d)", n);
		if (!n && now > deadline)
			return bench_seterr(
			    c->err, c->errlen, -ETIMEDOUT,
			    "no %s in %llu s (response delay %llu us)",
			    sent ? "answer from the server" : "completion",
			    (unsigned long long)(BENCH_PROGRESS_WAIT_NS / 1000000000),
			    (unsigned long long)(c->delay / 1000));
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				return bench_seterr(c->err, c->errlen, -EIO,
						    "completion error: %s (vendor error 0x%x)",
						    ibv_wc_status_str(wc[i].status),
						    wc[i].vendor_err);
			if (wc[i].wr_id == WR_RECV && !answered) {
				if (!cl_answer_ok(c, op, wc[i].byte_len))
					return bench_seterr(
					    c->err, c->errlen, -EPROTO,
					    "a %u-byte message from the server that "
					    "is not the answer to message %u",
					    wc[i].byte_len, c->seq);
				answered = true;
				*done = now;
				if (cl_post_recv(c))
					return -EIO;
			} else if (wc[i].wr_id == (read ? WR_READ : WR_MSG) && !sent) {
				sent = true;
				if (read)
					*done = now;
			} else {
				return bench_seterr(c->err, c->errlen, -EPROTO,
						    "unexpected completion (wr_id %llu)",
						    (unsigned long long)wc[i].wr_id);
			}
		}
	}
	return 0;
}

/* SET d or IDLE, and its ACK. */
static int cl_control(struct cl *c, uint8_t op, uint64_t d)
{
	uint64_t deadline = bench_now_ns() + BENCH_PROGRESS_WAIT_NS + 2 * (c->delay + d), done;
	int rc = cl_post(c, false, op, d);

	if (!rc)
		rc = cl_wait(c, false, op, deadline, &done);
	if (!rc)
		c->delay = d;
	return rc;
}

static int cl_point(struct cl *c, struct bench_point_run *r, uint64_t d, uint64_t end,
		    uint64_t *rng, const atomic_bool *stop)
{
	bool read = c->f->verb == BENCH_READ;
	uint64_t limit = c->f->iters ? c->f->iters : UINT64_MAX, t0 = bench_now_ns(), last = t0;
	int rc = cl_control(c, BENCH_PROG_SET, d);

	while (!rc && !atomic_load(stop) && r->msgs < limit && bench_now_ns() < end) {
		uint64_t gap = bench_progress_gap(rng, d), t, done = 0;

		spin(gap); /* not a sleep: the testbed's timer ticks would make every gap one */
		if (bench_now_ns() >= end)
			break;
		t = bench_now_ns();
		rc = cl_post(c, read, BENCH_PROG_REQUEST, d);
		if (!rc)
			rc = cl_wait(c, read, BENCH_PROG_REQUEST,
				     t + BENCH_PROGRESS_WAIT_NS + 2 * d, &done);
		if (rc)
			break;
		if (bench_samples_add(&r->lat, done - t))
			rc = bench_seterr(c->err, c->errlen, -ENOMEM, "out of memory for samples");
		r->msgs++;
		r->bytes += c->f->size;
		last = done;
	}
	r->elapsed_ns = last - t0;
	return rc;
}

int bench_progress_run(struct bench_sweeper *s, const struct bench_flow *f,
		       const struct bench_sweep_qp *q, const atomic_bool *stop, char *err,
		       size_t errlen)
{
	uint32_t recv_len = bench_progress_client_recv_len(f->size);
	struct cl c = { .f = f, .q = q, .area = (uint8_t *)q->buf + recv_len,
			.recv_len = recv_len, .err = err, .errlen = errlen };
	uint64_t share = s->n ? f->duration_us * 1000 / s->n : 0, start = bench_now_ns();
	uint64_t rng = start ^ ((uint64_t)q->qp->qp_num << 32);
	int rc = 0;

	for (unsigned k = 0; !rc && k < s->n; k++)
		if (bench_samples_reserve(&s->run[k].lat, SAMPLES0))
			rc = bench_seterr(err, errlen, -ENOMEM, "out of memory");
	for (int i = 0; !rc && i < CLIENT_RECVS; i++)
		rc = cl_post_recv(&c);
	for (unsigned k = 0; !rc && k < s->n && !atomic_load(stop); k++)
		rc = cl_point(&c, &s->run[k], s->spec[k].x, start + (k + 1) * share, &rng, stop);
	/* the server's thread stops computing (not after an error: it may not answer) */
	if (!rc)
		rc = cl_control(&c, BENCH_PROG_IDLE, 0);
	return rc;
}

/* ---------------------------------------------------------------- server */

__attribute__((format(printf, 2, 3))) static void peer_error(struct bench_progress_peer *p,
							      const char *fmt, ...)
{
	va_list ap;

	if (p->error)
		return;
	p->error = -EIO;
	va_start(ap, fmt);
	vsnprintf(p->errmsg, sizeof(p->errmsg), fmt, ap);
	va_end(ap);
}

static uint8_t *peer_slot(struct bench_progress_peer *p, uint64_t slot)
{
	return (uint8_t *)p->qp.buf + p->size + BENCH_PROGRESS_SLOT * (1 + slot);
}

static int peer_post_recv(struct bench_progress_peer *p, uint64_t slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)peer_slot(p, slot), .length = BENCH_PROGRESS_SLOT,
			       .lkey = p->qp.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return -ibv_post_recv(p->qp.qp, &wr, &bad);
}

/* The answer to m: the flow's data (a REQUEST, echoed at its start) or an ACK. */
static int peer_answer(struct bench_progress_peer *p, const struct bench_progress_msg *m)
{
	uint8_t *data = p->qp.buf, *ack = data + p->size;
	struct ibv_sge sge = { .addr = (uintptr_t)data, .length = p->size, .lkey = p->qp.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_ANSWER, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	int rc;

	if (m->op == BENCH_PROG_REQUEST) {
		if (p->size >= BENCH_PROGRESS_MSG)
			bench_progress_put(m, data);
	} else {
		bench_progress_put(&(struct bench_progress_msg){ BENCH_PROG_ACK, m->seq,
								 m->delay_ns },
				   ack);
		sge.addr = (uintptr_t)ack;
		sge.length = BENCH_PROGRESS_MSG;
		wr.wr_id = WR_ACK;
	}
	rc = ibv_post_send(p->qp.qp, &wr, &bad);
	if (rc)
		peer_error(p, "ibv_post_send: %s", strerror(rc));
	return -rc;
}

/* One receive: what the client says; 0 or -errno (p's error set). */
static int peer_message(struct bench_progress_peer *p, const struct ibv_wc *wc, uint64_t *d,
			bool *loaded)
{
	struct bench_progress_msg m;
	int rc;

	if (wc->wr_id >= BENCH_PROGRESS_RECVS ||
	    bench_progress_get(peer_slot(p, wc->wr_id), wc->byte_len, &m) ||
	    m.op == BENCH_PROG_ACK) {
		peer_error(p, "a %u-byte message that is not the protocol's", wc->byte_len);
		return -EPROTO;
	}
	*d = m.delay_ns;
	*loaded = m.op != BENCH_PROG_IDLE;
	rc = peer_answer(p, &m);
	if (!rc && m.op == BENCH_PROG_REQUEST) {
		p->requests++;
		p->bytes += p->size;
	} else if (!rc) {
		p->controls++;
	}
	if (!rc && (rc = peer_post_recv(p, wc->wr_id)))
		peer_error(p, "ibv_post_recv: %s", strerror(-rc));
	return rc;
}

/*
 * The loaded process: while a flow runs, D ns of computation, then a look at the CQ (answering
 * all that is there), again; between flows it sleeps on the CQ's events.
 */
static void *peer_main(void *arg)
{
	struct bench_progress_peer *p = arg;
	uint64_t cpu0 = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID), d = 0;
	struct ibv_wc wc[WC_MAX];
	bool loaded = false;

	while (!atomic_load(p->stop)) {
		int n;

		if (loaded) {
			spin(d);
			n = ibv_poll_cq(p->qp.cq, WC_MAX, wc);
			n = n < 0 ? -EIO : n;
		} else {
			n = bench_qp_poll(&p->qp, wc, WC_MAX, WAIT_MS);
		}
		if (n < 0) {
			peer_error(p, "polling the CQ failed: %s", strerror(-n));
			break;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				peer_error(p, "completion error: %s (vendor error 0x%x)",
					   ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
				goto out;
			}
			if ((wc[i].opcode & IBV_WC_RECV) && peer_message(p, &wc[i], &d, &loaded))
				goto out;
		}
	}
out:
	p->cpu_ns = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	return NULL;
}

static int check_flow(const struct bench_wire_flow *f, size_t i, char *err, size_t errlen)
{
	if (f->cls != BENCH_LAT || (f->verb != BENCH_READ && f->verb != BENCH_SEND))
		return bench_seterr(err, errlen, -EINVAL,
				    "flow %zu: --mode progress takes latency "
				    "read and send flows",
				    i);
	if (bench_progress_server_buf(f->size) > BENCH_BUFFERS_MAX)
		return bench_seterr(err, errlen, -EINVAL, "flow %zu: %u-byte messages", i, f->size);
	return 0;
}

int bench_progress_server_setup(struct bench_progress_server *s, struct bench_dev *dev,
				const struct bench_hello *h, int mtu, bool classify,
				struct bench_accept *acc, char *err, size_t errlen)
{
	size_t k = 0;
	int rc;

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < h->n_flows; i++) {
		rc = check_flow(&h->flows[i], i, err, errlen);
		if (rc)
			return rc;
	}
	s->p = calloc(h->n_qps, sizeof(*s->p));
	if (!s->p)
		return bench_seterr(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < h->n_flows; i++) {
		const struct bench_wire_flow *f = &h->flows[i];
		struct bench_qp_cfg cfg = {
			.buf_len = bench_progress_server_buf(f->size), .send_depth = PEER_SENDQ,
			.cq_depth = PEER_SENDQ + BENCH_PROGRESS_RECVS,
			.recv_depth = BENCH_PROGRESS_RECVS, .event = true,
			.cls = classify ? f->cls : -1,
		};

		for (uint32_t q = 0; q < f->qps; q++, k++) {
			struct bench_progress_peer *p = &s->p[k];

			p->size = f->size;
			p->stop = &s->stop;
			s->n = k + 1;
			rc = bench_qp_create(&p->qp, dev, &cfg, err, errlen);
			if (!rc)
				rc = bench_qp_connect(&p->qp, dev, &h->qps[k], mtu, err, errlen);
			for (uint64_t r = 0; !rc && r < BENCH_PROGRESS_RECVS; r++)
				if ((rc = peer_post_recv(p, r)))
					bench_seterr(err, errlen, rc, "ibv_post_recv: %s",
						     strerror(-rc));
			if (!rc && (rc = -pthread_create(&p->tid, NULL, peer_main, p)))
				bench_seterr(err, errlen, rc, "cannot start a thread: %s",
					     strerror(-rc));
			if (rc)
				return rc;
			p->started = true;
			bench_qp_local(&p->qp, dev, &acc->qps[k]);
		}
	}
	return 0;
}

static void join_all(struct bench_progress_server *s)
{
	atomic_store(&s->stop, true);
	for (size_t k = 0; k < s->n; k++) {
		if (s->p[k].started)
			pthread_join(s->p[k].tid, NULL);
		s->p[k].started = false;
	}
}

int bench_progress_server_finish(struct bench_progress_server *s, const struct bench_hello *h,
				 struct bench_result *res, char *err, size_t errlen)
{
	size_t k = 0;
	int rc = 0;

	join_all(s);
	res->n_flows = h->n_flows;
	for (size_t i = 0; i < h->n_flows; i++) {
		res->flows[i].msgs = res->flows[i].bytes = res->flows[i].cpu_ns = 0;
		for (uint32_t q = 0; q < h->flows[i].qps && k < s->n; q++, k++) {
			res->flows[i].msgs += s->p[k].requests;
			res->flows[i].bytes += s->p[k].bytes;
			res->flows[i].cpu_ns += s->p[k].cpu_ns;
			if (s->p[k].error && !rc)
				rc = bench_seterr(err, errlen, -EIO, "QP %zu: %s", k,
						  s->p[k].errmsg);
		}
	}
	return rc;
}

void bench_progress_server_free(struct bench_progress_server *s)
{
	if (!s->p)
		return;
	join_all(s);
	for (size_t k = 0; k < s->n; k++)
		bench_qp_destroy(&s->p[k].qp);
	free(s->p);
	s->p = NULL;
	s->n = 0;
}

// SPDX-License-Identifier: MIT
/* justbench traffic: the worker (initiator) and responder threads, and the rperf probe.
 * May call: bench_verbs, bench_stats, bench_flow, bench_pollcost, bench_sweeprun, bench_progress,
 * libibverbs,
 * pthreads and libc. */
#include "bench_run.h"

#include "bench_progress.h"

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WC_MAX	       32
#define WAIT_MS	       100
#define PACE_SPIN_NS   50000 /* rate: a post due sooner is waited for by polling */
#define PROBE_RECVS    4
#define INLINE_WANTED  64
#define SAMPLES_START  65536

__attribute__((format(printf, 3, 4))) static void set_error(int *error, char *msg, const char *fmt,
							     ...)
{
	va_list ap;

	if (*error)
		return; /* keep the first */
	*error = -EIO;
	va_start(ap, fmt);
	vsnprintf(msg, BENCH_ERRMSG_MAX, fmt, ap);
	va_end(ap);
}

uint32_t bench_recv_depth(const struct bench_flow *f)
{
	uint32_t depth;

	if (f->verb != BENCH_SEND && f->verb != BENCH_WRITE_IMM)
		return 0;
	depth = 2 * f->batch * f->window + 16;
	return depth < BENCH_RECV_MIN ? BENCH_RECV_MIN : depth;
}

static enum ibv_wr_opcode opcode(enum bench_verb v)
{
	switch (v) {
	case BENCH_WRITE_IMM:
		return IBV_WR_RDMA_WRITE_WITH_IMM;
	case BENCH_READ:
		return IBV_WR_RDMA_READ;
	case BENCH_SEND:
		return IBV_WR_SEND;
	default:
		return IBV_WR_RDMA_WRITE;
	}
}

/* The chain of n WRs of one post: all the same message, only the last signaled. */
static void build_chain(struct ibv_send_wr *wr, struct ibv_sge *sge, uint32_t n,
			const struct bench_flow *f, const struct bench_qp *q,
			const struct bench_wire_qp *remote)
{
	unsigned flags = 0;

	if (f->verb != BENCH_READ && f->size <= q->max_inline)
		flags = IBV_SEND_INLINE;
	for (uint32_t i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)q->buf, .length = f->size,
					   .lkey = q->mr->lkey };
		wr[i] = (struct ibv_send_wr){
			.next = i + 1 < n ? &wr[i + 1] : NULL,
			.sg_list = &sge[i],
			.num_sge = 1,
			.opcode = opcode(f->verb),
			.send_flags = flags | (i + 1 == n ? IBV_SEND_SIGNALED : 0),
		};
		wr[i].wr.rdma.remote_addr = remote->addr;
		wr[i].wr.rdma.rkey = remote->rkey;
	}
}

/* ---------------------------------------------------------------- rperf probe */

int bench_worker_setup_probe(struct bench_worker *w, struct bench_dev *dev, bool classify,
			     char *err, size_t errlen)
{
	const struct bench_flow *f = w->flow;
	struct bench_qp_cfg ca = {
		.buf_len = f->size, .send_depth = 1, .cq_depth = 1,
		.inline_size = f->size <= INLINE_WANTED ? INLINE_WANTED : 0,
		.event = f->poll == BENCH_POLL_EVENT, .cls = classify ? BENCH_LAT : -1,
	};
	struct bench_qp_cfg cb = {
		.buf_len = f->size, .send_depth = 1, .cq_depth = PROBE_RECVS,
		.recv_depth = PROBE_RECVS, .cls = classify ? BENCH_LAT : -1,
	};
	struct bench_wire_qp a, b;
	int rc;

	rc = bench_qp_create(&w->probe_a, dev, &ca, err, errlen);
	if (rc)
		return rc;
	rc = bench_qp_create(&w->probe_b, dev, &cb, err, errlen);
	if (rc)
		goto out_a;
	bench_qp_local(&w->probe_a, dev, &a);
	bench_qp_local(&w->probe_b, dev, &b);
	rc = bench_qp_connect(&w->probe_a, dev, &b, dev->port.active_mtu, err, errlen);
	if (!rc)
		rc = bench_qp_connect(&w->probe_b, dev, &a, dev->port.active_mtu, err, errlen);
	if (!rc && bench_recv_depth(f))
		rc = bench_qp_post_recv(&w->probe_b, PROBE_RECVS, f->size);
	if (rc)
		goto out_b;
	w->probe_remote = b;
	w->rperf = true;
	return 0;
out_b:
	bench_qp_destroy(&w->probe_b);
out_a:
	bench_qp_destroy(&w->probe_a);
	return rc;
}

/* Waits for one completion of q until deadline; 0, or -errno with w's error set. */
static int wait_one(struct bench_worker *w, struct bench_qp *q, uint64_t deadline,
		    const char *what)
{
	struct ibv_wc wc;
	int n;

	for (;;) {
		n = bench_qp_poll(q, &wc, 1, WAIT_MS);
		if (n < 0) {
			set_error(&w->error, w->errmsg, "%s: polling the CQ failed", what);
			return n;
		}
		if (n == 1)
			break;
		if (bench_now_ns() > deadline) {
			set_error(&w->error, w->errmsg, "%s: no completion in %llu s", what,
				  BENCH_DRAIN_NS / 1000000000);
			return -ETIMEDOUT;
		}
	}
	if (wc.status != IBV_WC_SUCCESS) {
		set_error(&w->error, w->errmsg, "%s: completion error: %s (vendor error 0x%x)",
			  what, ibv_wc_status_str(wc.status), wc.vendor_err);
		return -EIO;
	}
	return 0;
}

/* One loopback message like the flow's; its post-to-completion time in *ns. */
static int probe_once(struct bench_worker *w, uint64_t *ns)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint64_t t;
	int rc;

	build_chain(&wr, &sge, 1, w->flow, &w->probe_a, &w->probe_remote);
	t = bench_now_ns();
	rc = ibv_post_send(w->probe_a.qp, &wr, &bad);
	if (rc) {
		set_error(&w->error, w->errmsg, "probe: ibv_post_send: %s", strerror(rc));
		return -rc;
	}
	rc = wait_one(w, &w->probe_a, t + BENCH_DRAIN_NS, "probe");
	*ns = bench_now_ns() - t;
	if (rc || !bench_recv_depth(w->flow))
		return rc;
	rc = wait_one(w, &w->probe_b, t + BENCH_DRAIN_NS, "probe receiver");
	if (!rc)
		rc = bench_qp_post_recv(&w->probe_b, 1, w->flow->size);
	return rc;
}

/* ---------------------------------------------------------------- worker */

void bench_start_init(struct bench_start *s)
{
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->go = false;
	s->t0_ns = 0;
}

uint64_t bench_start_go(struct bench_start *s, uint64_t lead_ns)
{
	pthread_mutex_lock(&s->lock);
	s->t0_ns = bench_now_ns() + lead_ns;
	s->go = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return s->t0_ns;
}

void bench_start_destroy(struct bench_start *s)
{
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
}

static void sleep_until(uint64_t t, const atomic_bool *stop)
{
	for (;;) {
		uint64_t now = bench_now_ns(), until = t;
		struct timespec ts;

		if (now >= t || atomic_load(stop))
			return;
		if (until - now > WAIT_MS * 1000000ull)
			until = now + WAIT_MS * 1000000ull;
		ts.tv_sec = (time_t)(until / 1000000000);
		ts.tv_nsec = (long)(until % 1000000000);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
}

/* The completions of a poll: samples and counts; false on an error completion. */
static bool complete(struct bench_worker *w, const struct ibv_wc *wc, int n, uint64_t now,
		     const uint64_t *posted, const uint64_t *probe_ns, uint32_t *inflight)
{
	const struct bench_flow *f = w->flow;

	for (int i = 0; i < n; i++) {
		uint64_t slot = wc[i].wr_id, ns;

		if (wc[i].status != IBV_WC_SUCCESS) {
			set_error(&w->error, w->errmsg,
				  "completion error: %s (vendor error 0x%x) after %llu messages",
				  ibv_wc_status_str(wc[i].status), wc[i].vendor_err,
				  (unsigned long long)w->msgs);
			return false;
		}
		if (slot >= f->window || !*inflight) {
			set_error(&w->error, w->errmsg, "unexpected completion (wr_id %llu)",
				  (unsigned long long)slot);
			return false;
		}
		ns = now - posted[slot];
		if (bench_samples_add(&w->lat, ns) ||
		    (w->rperf &&
		     (bench_samples_add(&w->probe, probe_ns[slot]) ||
		      bench_samples_add(&w->corrected,
					ns > probe_ns[slot] ? ns - probe_ns[slot] : 0)))) {
			set_error(&w->error, w->errmsg, "out of memory for latency samples");
			return false;
		}
		(*inflight)--;
		w->msgs += f->batch;
		w->bytes += (uint64_t)f->batch * f->size;
		w->end_ns = now;
	}
	return true;
}

/* With a rate (@gap ns between posts, bench_post_ns()): whether a post may
 * go at @now (*due is when it may; a post more than one late does not bank
 * the time it missed). */
static bool rate_allows(uint64_t gap, uint64_t now, uint64_t *due)
{
	if (!gap)
		return true;
	if (!*due || *due + gap < now)
		*due = now;
	return now >= *due;
}

static void run_worker(struct bench_worker *w, struct ibv_send_wr *wr, uint64_t *posted,
		       uint64_t *probe_ns)
{
	const struct bench_flow *f = w->flow;
	uint64_t start = w->start->t0_ns + f->delay_us * 1000, end = start + f->duration_us * 1000;
	uint64_t deadline = 0, now, limit = f->iters ? f->iters : UINT64_MAX, sent = 0;
	uint32_t inflight = 0, slot = 0;
	uint64_t due = 0, gap = bench_post_ns(f); /* rate: when the next post may go */
	struct ibv_send_wr *bad;
	struct ibv_wc wc[WC_MAX];
	int n, rc, timeout;

	sleep_until(start, w->stop);
	w->start_ns = w->end_ns = bench_now_ns();
	for (;;) {
		bool posting;

		now = bench_now_ns();
		posting = !w->error && now < end && sent < limit && !atomic_load(w->stop);
		while (posting && inflight < f->window) {
			if (!rate_allows(gap, bench_now_ns(), &due))
				break;
			if (w->rperf && probe_once(w, &probe_ns[slot]))
				break;
			wr[f->batch - 1].wr_id = slot;
			if (f->verb == BENCH_WRITE_IMM)
				for (uint32_t i = 0; i < f->batch; i++)
					wr[i].imm_data = htobe32((uint32_t)(sent + i));
			posted[slot] = bench_now_ns();
			rc = ibv_post_send(w->qp.qp, wr, &bad);
			if (rc) {
				set_error(&w->error, w->errmsg, "ibv_post_send: %s", strerror(rc));
				break;
			}
			inflight++;
			w->posts++;
			due += gap;
			sent += f->batch;
			slot = (slot + 1) % f->window;
			posting = sent < limit;
		}
		if (!inflight && (!posting || w->error))
			break;
		if (!posting && !deadline)
			deadline = bench_now_ns() + BENCH_DRAIN_NS;
		timeout = WAIT_MS;
		if (posting && inflight < f->window && gap) {
			/* the window has room, the rate not yet: an event-driven
			 * flow sleeps while the next post is far (its completions
			 * come late by the sleep), a busy one keeps polling; then
			 * look at the CQ without blocking */
			now = bench_now_ns();
			if (f->poll == BENCH_POLL_EVENT && due > now + PACE_SPIN_NS)
				sleep_until(due - PACE_SPIN_NS, w->stop);
			timeout = 0;
		}
		n = bench_qp_poll(&w->qp, wc, WC_MAX, timeout);
		now = bench_now_ns();
		if (n < 0) {
			set_error(&w->error, w->errmsg, "polling the CQ failed: %s", strerror(-n));
			break;
		}
		if (!complete(w, wc, n, now, posted, probe_ns, &inflight))
			break;
		if (deadline && inflight && now > deadline) {
			set_error(&w->error, w->errmsg, "%u posts still in flight %llu s after the "
				  "end", inflight, BENCH_DRAIN_NS / 1000000000);
			break;
		}
	}
}

/* --mode poll-cost: one message at a time, every poll timed (bench_pollcost.h). */
static void run_pollcost(struct bench_worker *w, struct ibv_send_wr *wr)
{
	const struct bench_flow *f = w->flow;
	uint64_t start = w->start->t0_ns + f->delay_us * 1000, end = start + f->duration_us * 1000;
	uint64_t limit = f->iters ? f->iters : UINT64_MAX, lat;
	int rc;

	if (bench_pollcost_clock(&w->pc, BENCH_POLLCOST_CLOCK_SAMPLES)) {
		set_error(&w->error, w->errmsg, "out of memory for poll samples");
		return;
	}
	sleep_until(start, w->stop);
	w->start_ns = w->end_ns = bench_now_ns();
	wr->wr_id = 0;
	while (!atomic_load(w->stop) && w->msgs < limit && bench_now_ns() < end) {
		if (f->verb == BENCH_WRITE_IMM)
			wr->imm_data = htobe32((uint32_t)w->msgs);
		rc = bench_pollcost_message(&w->pc, w->qp.qp, w->qp.cq, wr, BENCH_DRAIN_NS, &lat,
					    w->errmsg, sizeof(w->errmsg));
		if (rc) {
			w->error = rc;
			return;
		}
		if (bench_samples_add(&w->lat, lat)) {
			set_error(&w->error, w->errmsg, "out of memory for latency samples");
			return;
		}
		w->posts++;
		w->msgs++;
		w->bytes += f->size;
		w->end_ns = bench_now_ns();
	}
}

/* A sweeping mode: the sweeper's points, then their sums as the worker's numbers. */
static void run_sweep(struct bench_worker *w)
{
	const struct bench_flow *f = w->flow;
	struct bench_sweeper *s = w->sweep;
	struct bench_sweep_qp q = {
		.qp = w->qp.qp, .cq = w->qp.cq, .buf = w->qp.buf, .lkey = w->qp.mr->lkey,
		.max_inline = w->qp.max_inline, .remote_addr = w->remote.addr,
		.rkey = w->remote.rkey,
	};
	int rc;

	sleep_until(w->start->t0_ns + f->delay_us * 1000, w->stop);
	w->start_ns = bench_now_ns();
	if (s->n && s->spec[0].kind == BENCH_PT_PROGRESS)
		rc = bench_progress_run(s, f, &q, w->stop, w->errmsg, sizeof(w->errmsg));
	else
		rc = bench_sweeper_run(s, f, &q, w->stop, w->errmsg, sizeof(w->errmsg));
	w->end_ns = bench_now_ns();
	if (rc)
		w->error = rc;
	for (unsigned k = 0; k < s->n; k++) {
		w->msgs += s->run[k].msgs;
		w->posts += s->run[k].msgs;
		w->bytes += s->run[k].bytes;
		if (bench_samples_merge(&w->lat, &s->run[k].lat))
			set_error(&w->error, w->errmsg, "out of memory for latency samples");
	}
}

static void *worker_main(void *arg)
{
	struct bench_worker *w = arg;
	const struct bench_flow *f = w->flow;
	struct ibv_send_wr *wr = calloc(f->batch, sizeof(*wr));
	struct ibv_sge *sge = calloc(f->batch, sizeof(*sge));
	uint64_t *posted = calloc(f->window, sizeof(*posted));
	uint64_t *probe_ns = calloc(f->window, sizeof(*probe_ns));
	uint64_t cpu0;

	if (!wr || !sge || !posted || !probe_ns ||
	    bench_samples_reserve(&w->lat, SAMPLES_START))
		set_error(&w->error, w->errmsg, "out of memory");
	else
		build_chain(wr, sge, f->batch, f, &w->qp, &w->remote);
	pthread_mutex_lock(&w->start->lock);
	while (!w->start->go)
		pthread_cond_wait(&w->start->cond, &w->start->lock);
	pthread_mutex_unlock(&w->start->lock);
	cpu0 = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if (!w->error && w->sweep)
		run_sweep(w);
	else if (!w->error && w->pollcost)
		run_pollcost(w, wr);
	else if (!w->error)
		run_worker(w, wr, posted, probe_ns);
	w->cpu_ns = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	free(probe_ns);
	free(posted);
	free(sge);
	free(wr);
	return NULL;
}

int bench_worker_start(struct bench_worker *w)
{
	int rc;

	bench_samples_init(&w->lat);
	bench_samples_init(&w->probe);
	bench_samples_init(&w->corrected);
	bench_pollcost_init(&w->pc);
	rc = pthread_create(&w->tid, NULL, worker_main, w);
	w->started = rc == 0;
	return -rc;
}

void bench_worker_join(struct bench_worker *w)
{
	if (w->started)
		pthread_join(w->tid, NULL);
	w->started = false;
}

void bench_worker_free(struct bench_worker *w)
{
	bench_samples_free(&w->lat);
	bench_samples_free(&w->probe);
	bench_samples_free(&w->corrected);
	bench_pollcost_free(&w->pc);
	if (w->sweep) {
		bench_sweeper_free(w->sweep);
		free(w->sweep);
		w->sweep = NULL;
	}
	if (w->rperf) {
		bench_qp_destroy(&w->probe_a);
		bench_qp_destroy(&w->probe_b);
		w->rperf = false;
	}
	bench_qp_destroy(&w->qp);
}

/* ---------------------------------------------------------------- responder */

static void *responder_main(void *arg)
{
	struct bench_responder *r = arg;
	uint64_t cpu0 = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	struct ibv_wc wc[WC_MAX];

	for (;;) {
		bool stopping = atomic_load(r->stop);
		unsigned reposts = 0;
		int n = bench_qp_poll(&r->qp, wc, WC_MAX, stopping ? 0 : WAIT_MS);

		if (n < 0) {
			set_error(&r->error, r->errmsg, "polling the CQ failed: %s", strerror(-n));
			break;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				set_error(&r->error, r->errmsg,
					  "receive completion error: %s (vendor error 0x%x)",
					  ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
				goto out;
			}
			if (!(wc[i].opcode & IBV_WC_RECV))
				continue;
			r->msgs++;
			r->bytes += wc[i].byte_len;
			reposts++;
		}
		if (reposts && bench_qp_post_recv(&r->qp, reposts, r->size)) {
			set_error(&r->error, r->errmsg, "ibv_post_recv failed");
			break;
		}
		if (stopping && n == 0)
			break;
	}
out:
	r->cpu_ns = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	return NULL;
}

int bench_responder_start(struct bench_responder *r)
{
	int rc = pthread_create(&r->tid, NULL, responder_main, r);

	r->started = rc == 0;
	return -rc;
}

void bench_responder_join(struct bench_responder *r)
{
	if (r->started)
		pthread_join(r->tid, NULL);
	r->started = false;
}

// SPDX-License-Identifier: MIT
/* justbench sweeps on one QP: the buffer pool and the loop of the points.
 * May call: bench_sweep, bench_stats, bench_flow, libibverbs and libc. */
#include "bench_sweeprun.h"
#include "bench_err.h"

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE	   4096
#define WC_MAX	   32
#define WAIT_NS	   (10ull * 1000000000) /* for a completion */
#define SAMPLES0   4096

int bench_sweeper_setup(struct bench_sweeper *s, enum bench_mode m,
			const struct bench_sweep_cfg *c, const struct bench_flow *f,
			struct ibv_pd *pd, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	bench_samples_init(&s->cpu_clock);
	s->n = bench_sweep_points(m, c, f, s->spec);
	for (unsigned i = 0; i < s->n; i++)
		bench_point_run_init(&s->run[i]);
	s->pool_n = bench_sweep_pool(m, c, f);
	if (!s->pool_n)
		return 0;
	s->stride = ((size_t)f->size + PAGE - 1) / PAGE * PAGE;
	if ((uint64_t)s->stride * s->pool_n > BENCH_BUFFERS_MAX)
		return bench_seterr(err, errlen, -ENOMEM,
				    "flow %s: a pool of %u buffers of %zu "
				    "bytes exceeds %llu MiB",
				    f->name, s->pool_n, s->stride, BENCH_BUFFERS_MAX >> 20);
	s->pool_mem = aligned_alloc(PAGE, s->stride * s->pool_n);
	s->pool = calloc(s->pool_n, sizeof(*s->pool));
	if (!s->pool_mem || !s->pool)
		return bench_seterr(err, errlen, -ENOMEM, "flow %s: out of memory for the pool",
				    f->name);
	memset(s->pool_mem, 0, s->stride * s->pool_n);
	for (uint32_t i = 0; i < s->pool_n; i++) {
		s->pool[i] = ibv_reg_mr(pd, (char *)s->pool_mem + i * s->stride, f->size,
					IBV_ACCESS_LOCAL_WRITE);
		if (!s->pool[i])
			return bench_seterr(err, errlen, -EIO,
					    "flow %s: ibv_reg_mr of pool buffer "
					    "%u: %s",
					    f->name, i, strerror(errno));
	}
	return 0;
}

void bench_sweeper_free(struct bench_sweeper *s)
{
	for (uint32_t i = 0; s->pool && i < s->pool_n; i++)
		if (s->pool[i])
			ibv_dereg_mr(s->pool[i]);
	free(s->pool);
	free(s->pool_mem);
	for (unsigned i = 0; i < s->n; i++)
		bench_point_run_free(&s->run[i]);
	bench_samples_free(&s->cpu_clock);
	s->pool = NULL;
	s->pool_mem = NULL;
	s->n = 0;
}

static uint64_t cpu_now(void)
{
	return bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* C ns of busy computation; returns the time it took. */
static uint64_t busy(uint64_t ns)
{
	volatile uint64_t acc = 0;
	uint64_t t0, t;

	if (!ns)
		return 0;
	t0 = bench_now_ns();
	do {
		for (unsigned k = 0; k < 64; k++)
			acc += k * k;
		t = bench_now_ns();
	} while (t - t0 < ns);
	return t - t0;
}

/* One point's state on the QP. */
struct pt {
	struct bench_sweeper *s;
	const struct bench_flow *f;
	const struct bench_sweep_qp *q;
	struct bench_point_run *r;
	uint64_t posted[BENCH_WINDOW_MAX];
	uint32_t inflight;
	char *err;
	size_t errlen;
};

/* Reaps completions; with wait, busy-polls until there is one.  0 or -errno. */
static int reap(struct pt *x, bool wait)
{
	struct ibv_wc wc[WC_MAX];
	uint64_t t0 = bench_now_ns(), now;
	int n;

	do {
		n = ibv_poll_cq(x->q->cq, WC_MAX, wc);
		now = bench_now_ns();
		if (!n && wait && now - t0 > WAIT_NS)
			return bench_seterr(x->err, x->errlen, -ETIMEDOUT,
					    "no completion in %llu s", WAIT_NS / 1000000000);
	} while (!n && wait);
	if (n < 0)
		return bench_seterr(x->err, x->errlen, -EIO, "ibv_poll_cq failed (%d)", n);
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			return bench_seterr(x->err, x->errlen, -EIO,
					    "completion error: %s (vendor "
					    "error 0x%x) after %llu messages",
					    ibv_wc_status_str(wc[i].status), wc[i].vendor_err,
					    (unsigned long long)x->r->msgs);
		if (wc[i].wr_id >= x->f->window || !x->inflight)
			return bench_seterr(x->err, x->errlen, -EPROTO,
					    "unexpected completion (wr_id %llu)",
					    (unsigned long long)wc[i].wr_id);
		if (bench_samples_add(&x->r->lat, now - x->posted[wc[i].wr_id]))
			return bench_seterr(x->err, x->errlen, -ENOMEM,
					    "out of memory for samples");
		x->inflight--;
		x->r->msgs++;
		x->r->bytes += x->f->size;
	}
	return 0;
}

/* Posts message i of the point from slot; the CPU points time the call. */
static int post(struct pt *x, const struct bench_point_spec *p, uint64_t i, uint64_t *state,
		uint32_t slot)
{
	const struct bench_flow *f = x->f;
	struct ibv_sge sge = { .addr = (uintptr_t)x->q->buf, .length = f->size,
			       .lkey = x->q->lkey };
	struct ibv_send_wr wr = {
		.wr_id = slot, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	uint64_t c0 = 0;
	int rc;

	wr.opcode = f->verb == BENCH_WRITE_IMM ? IBV_WR_RDMA_WRITE_WITH_IMM :
		    f->verb == BENCH_READ      ? IBV_WR_RDMA_READ :
		    f->verb == BENCH_SEND      ? IBV_WR_SEND :
						 IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = x->q->remote_addr;
	wr.wr.rdma.rkey = x->q->rkey;
	wr.imm_data = htobe32((uint32_t)i);
	if (x->s->pool_n) {
		uint32_t b = bench_sweep_buffer(p, x->s->pool_n, i, state);

		sge.addr = (uintptr_t)x->s->pool[b]->addr;
		sge.lkey = x->s->pool[b]->lkey;
		x->r->reused += b == 0;
	} else if (f->verb != BENCH_READ && f->size <= x->q->max_inline) {
		wr.send_flags |= IBV_SEND_INLINE;
	}
	if (p->kind == BENCH_PT_CPU)
		c0 = cpu_now();
	x->posted[slot] = bench_now_ns();
	rc = ibv_post_send(x->q->qp, &wr, &bad);
	if (p->kind == BENCH_PT_CPU && bench_samples_add(&x->r->post_cpu, cpu_now() - c0))
		return bench_seterr(x->err, x->errlen, -ENOMEM, "out of memory for samples");
	if (rc)
		return bench_seterr(x->err, x->errlen, -EIO, "ibv_post_send: %s", strerror(rc));
	x->inflight++;
	return 0;
}

static int run_point(struct pt *x, unsigned k, uint64_t end, const atomic_bool *stop)
{
	const struct bench_point_spec *p = &x->s->spec[k];
	uint64_t limit = x->f->iters ? x->f->iters : UINT64_MAX, sent = 0, state = 0, t0, last;
	uint32_t slot = 0;
	int rc = 0;

	x->r = &x->s->run[k];
	x->inflight = 0;
	t0 = last = bench_now_ns();
	while (!rc && !atomic_load(stop) && sent < limit && bench_now_ns() < end) {
		if (x->inflight == x->f->window) {
			rc = reap(x, true);
			continue;
		}
		if (p->kind == BENCH_PT_COMPUTE)
			x->r->compute_ns += busy(p->x);
		rc = post(x, p, sent, &state, slot);
		if (rc)
			break;
		sent++;
		slot = (slot + 1) % x->f->window;
		if (p->kind == BENCH_PT_OVERLAP)
			x->r->compute_ns += busy(p->x);
		if (x->f->window == 1) {
			uint64_t c1 = p->kind == BENCH_PT_CPU ? cpu_now() : 0;

			rc = reap(x, true);
			if (!rc && p->kind == BENCH_PT_CPU &&
			    bench_samples_add(&x->r->poll_cpu, cpu_now() - c1))
				rc = bench_seterr(x->err, x->errlen, -ENOMEM, "out of memory");
		} else {
			rc = reap(x, false);
		}
	}
	while (!rc && x->inflight)
		rc = reap(x, true);
	if (x->r->msgs)
		last = bench_now_ns();
	x->r->elapsed_ns = last - t0;
	return rc;
}

int bench_sweeper_run(struct bench_sweeper *s, const struct bench_flow *f,
		      const struct bench_sweep_qp *q, const atomic_bool *stop, char *err,
		      size_t errlen)
{
	struct pt *x = calloc(1, sizeof(*x));
	uint64_t share, now;
	int rc = 0;

	if (!x)
		return bench_seterr(err, errlen, -ENOMEM, "out of memory");
	*x = (struct pt){ .s = s, .f = f, .q = q, .err = err, .errlen = errlen };
	for (unsigned k = 0; k < s->n; k++)
		if (bench_samples_reserve(&s->run[k].lat, SAMPLES0))
			rc = bench_seterr(err, errlen, -ENOMEM, "out of memory");
	for (unsigned k = 0; !rc && k < s->n && s->spec[k].kind == BENCH_PT_CPU; k++) {
		if (bench_samples_reserve(&s->cpu_clock, BENCH_CPU_CLOCK_SAMPLES)) {
			rc = bench_seterr(err, errlen, -ENOMEM, "out of memory");
			break;
		}
		for (unsigned i = 0; i < BENCH_CPU_CLOCK_SAMPLES; i++) {
			uint64_t a = cpu_now(), b = cpu_now();

			bench_samples_add(&s->cpu_clock, b - a); /* reserved */
		}
	}
	share = s->n ? f->duration_us * 1000 / s->n : 0;
	now = bench_now_ns();
	for (unsigned k = 0; !rc && k < s->n && !atomic_load(stop); k++)
		rc = run_point(x, k, now + (k + 1) * share, stop);
	free(x);
	return rc;
}

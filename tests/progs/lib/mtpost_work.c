// SPDX-License-Identifier: MIT
/* mtpost's workload (see mtpost.h): QP pairs between two devices, worker
 * threads that post WRITEs, READs and SENDs with a window in flight, reap
 * the pair's completions in order and verify every byte and guard.
 * May call: lib/rc (RC setup), libibverbs, pthreads and libc. */
#include "mtpost.h"

#include "rc.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *const mtpost_op_name[OP_MAX] = { "RDMA_WRITE", "RDMA_READ", "SEND" };
const char *mtpost_role = "";

void mtpost_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "mtpost%s: ", mtpost_role);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

uint64_t mtpost_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(uint64_t *rng, uint8_t *p, uint32_t len)
{
	uint32_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v = rnd(rng);

		memcpy(p + i, &v, 8);
	}
	if (i < len) {
		uint64_t v = rnd(rng);

		memcpy(p + i, &v, len - i);
	}
}


static void dev_open(struct dev *d, const char *name, int gidx)
{
	char why[128];

	d->name = name;
	if (rc_open_device(name, &d->ctx, why, sizeof(why)))
		mtpost_die("%s", why);
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		mtpost_die("%s: ibv_alloc_pd failed", name);
	if (ibv_query_gid(d->ctx, 1, gidx, &d->gid))
		mtpost_die("%s: ibv_query_gid(%d) failed", name, gidx);
}

static struct ibv_qp *make_qp(struct dev *d, struct ibv_cq *cq, uint32_t depth)
{
	struct ibv_qp_cap cap = { .max_send_wr = depth, .max_recv_wr = depth,
				  .max_send_sge = 1, .max_recv_sge = 1 };
	struct ibv_qp *qp = rc_create_qp(d->pd, cq, &cap);

	if (!qp)
		mtpost_die("%s: ibv_create_qp failed: %s", d->name, strerror(errno));
	return qp;
}

static void connect_qp(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *dgid, int gidx,
		       int timeout, const char *name)
{
	struct rc_peer p = { .qpn = dest, .gid = *dgid, .gidx = gidx,
			     .access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ,
			     .rd_atomic = 4, .timeout = (uint8_t)timeout };
	const char *step;

	if (rc_connect(qp, &p, &step))
		mtpost_die("%s: %s failed", name, step);
}

void mtpost_setup(struct run *r)
{
	const struct options *o = r->o;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	dev_open(&r->a, o->dev_a, o->gidx);
	dev_open(&r->b, o->dev_b, o->gidx);
	r->npairs = o->shared ? 1 : o->threads;
	r->pairs = calloc((size_t)r->npairs, sizeof(*r->pairs));
	r->w = calloc((size_t)o->threads, sizeof(*r->w));
	if (!r->pairs || !r->w)
		mtpost_die("out of memory");
	for (int i = 0; i < r->npairs; i++) {
		struct pair *p = &r->pairs[i];
		uint32_t depth;
		int cqe;

		p->nworkers = o->shared ? o->threads : 1;
		depth = (uint32_t)(p->nworkers * o->window + 4);
		cqe = (int)(2 * depth + 16);
		pthread_mutex_init(&p->lock, NULL);
		p->cq_a = ibv_create_cq(r->a.ctx, cqe, NULL, NULL, 0);
		p->cq_b = ibv_create_cq(r->b.ctx, cqe, NULL, NULL, 0);
		if (!p->cq_a || !p->cq_b)
			mtpost_die("ibv_create_cq failed");
		p->qp_a = make_qp(&r->a, p->cq_a, depth);
		p->qp_b = make_qp(&r->b, p->cq_b, depth);
	}
	for (int i = 0; i < r->npairs; i++) {
		struct pair *p = &r->pairs[i];

		connect_qp(p->qp_a, p->qp_b->qp_num, &r->b.gid, o->gidx, o->timeout, r->a.name);
		connect_qp(p->qp_b, p->qp_a->qp_num, &r->a.gid, o->gidx, o->timeout, r->b.name);
	}
	for (int i = 0; i < o->threads; i++) {
		struct worker *w = &r->w[i];

		w->run = r;
		w->id = i;
		w->p = &r->pairs[o->shared ? 0 : i];
		w->slot_size = o->max_size + SLOT_PAD;
		w->buf_size = ((size_t)o->window * w->slot_size + 4095) & ~(size_t)4095;
		w->buf_a = aligned_alloc(4096, w->buf_size);
		w->buf_b = aligned_alloc(4096, w->buf_size);
		if (!w->buf_a || !w->buf_b)
			mtpost_die("out of memory");
		memset(w->buf_a, 0, w->buf_size);
		memset(w->buf_b, 0, w->buf_size);
		w->mr_a = ibv_reg_mr(r->a.pd, w->buf_a, w->buf_size, access);
		w->mr_b = ibv_reg_mr(r->b.pd, w->buf_b, w->buf_size, access);
		if (!w->mr_a || !w->mr_b)
			mtpost_die("ibv_reg_mr failed: %s", strerror(errno));
		w->rng = ((o->seed ^ (strcmp(r->role, "child") ? 0 : 0x5bd1e9955bd1e995ull)) +
			  0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)) | 1;
	}
}

void mtpost_teardown(struct run *r)
{
	for (int i = 0; i < r->o->threads; i++) {
		struct worker *w = &r->w[i];

		if (ibv_dereg_mr(w->mr_a) || ibv_dereg_mr(w->mr_b))
			mtpost_die("ibv_dereg_mr failed");
		free(w->buf_a);
		free(w->buf_b);
	}
	for (int i = 0; i < r->npairs; i++) {
		struct pair *p = &r->pairs[i];

		if (ibv_destroy_qp(p->qp_a) || ibv_destroy_qp(p->qp_b) ||
		    ibv_destroy_cq(p->cq_a) || ibv_destroy_cq(p->cq_b))
			mtpost_die("cannot destroy pair %d", i);
		pthread_mutex_destroy(&p->lock);
	}
	if (ibv_dealloc_pd(r->a.pd) || ibv_dealloc_pd(r->b.pd) ||
	    ibv_close_device(r->a.ctx) || ibv_close_device(r->b.ctx))
		mtpost_die("cannot close the devices");
	free(r->pairs);
	free(r->w);
}

static uint64_t wr_id_of(uint64_t seq, int w, int s)
{
	return seq << 16 | (uint64_t)w << 8 | (uint64_t)s;
}

/* Post the message of slot @s: under the pair's lock, so that with a shared
 * QP the provider sees the WRs in sequence order. */
static void post_slot(struct worker *w, int s)
{
	struct slot *sl = &w->slot[s];
	struct pair *p = w->p;
	uint8_t *la = w->buf_a + (size_t)s * w->slot_size + sl->off;
	uint8_t *lb = w->buf_b + (size_t)s * w->slot_size + sl->off;
	struct ibv_sge sge = { .addr = (uintptr_t)la, .length = sl->len, .lkey = w->mr_a->lkey };
	struct ibv_sge rsge = { .addr = (uintptr_t)lb, .length = sl->len, .lkey = w->mr_b->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED },
			   *bad = NULL;
	struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *rbad = NULL;
	int rc;

	switch (sl->op) {
	case OP_WRITE: wr.opcode = IBV_WR_RDMA_WRITE; break;
	case OP_READ: wr.opcode = IBV_WR_RDMA_READ; break;
	default: wr.opcode = IBV_WR_SEND; break;
	}
	wr.wr.rdma.remote_addr = (uintptr_t)lb;
	wr.wr.rdma.rkey = w->mr_b->rkey;
	pthread_mutex_lock(&p->lock);
	sl->busy = 1;
	sl->sdone = 0;
	sl->rdone = sl->op != OP_SEND;
	if (sl->op == OP_SEND) {
		sl->rseq = p->next_rseq++;
		rwr.wr_id = wr_id_of(sl->rseq, w->id, s);
		rc = ibv_post_recv(p->qp_b, &rwr, &rbad);
		if (rc)
			mtpost_die("thread %d: ibv_post_recv failed: %s", w->id, strerror(rc));
	}
	sl->seq = p->next_seq++;
	wr.wr_id = wr_id_of(sl->seq, w->id, s);
	rc = ibv_post_send(p->qp_a, &wr, &bad);
	if (rc)
		mtpost_die("thread %d: ibv_post_send of %s (%u bytes) failed: %s", w->id,
			   mtpost_op_name[sl->op], sl->len, strerror(rc));
	pthread_mutex_unlock(&p->lock);
	w->wrs[sl->op]++;
	w->bytes[sl->op] += sl->len;
}

/* Prepare the next message in free slot @s: its source random, its
 * destination and the guard behind it a known pattern. */
static void prepare_slot(struct worker *w, int s)
{
	const struct options *o = w->run->o;
	struct slot *sl = &w->slot[s];
	uint8_t *src, *dst;

	do {
		uint64_t k = rnd(&w->rng) % 100;

		sl->op = k < 40 ? OP_WRITE : k < 75 ? OP_READ : OP_SEND;
	} while (!(o->ops & 1u << sl->op));
	if (rnd(&w->rng) % 4 == 0)
		sl->len = 1 + (uint32_t)(rnd(&w->rng) % (o->max_size < 8192 ? o->max_size : 8192));
	else
		sl->len = 1 + (uint32_t)(rnd(&w->rng) % o->max_size);
	sl->off = (uint32_t)(rnd(&w->rng) % (SLOT_PAD - GUARD));
	src = (sl->op == OP_READ ? w->buf_b : w->buf_a) + (size_t)s * w->slot_size + sl->off;
	dst = (sl->op == OP_READ ? w->buf_a : w->buf_b) + (size_t)s * w->slot_size + sl->off;
	fill(&w->rng, src, sl->len);
	memset(dst, GUARD_BYTE, (size_t)sl->len + GUARD);
}

static void verify_slot(struct worker *w, int s)
{
	struct slot *sl = &w->slot[s];
	const uint8_t *src, *dst;

	src = (sl->op == OP_READ ? w->buf_b : w->buf_a) + (size_t)s * w->slot_size + sl->off;
	dst = (sl->op == OP_READ ? w->buf_a : w->buf_b) + (size_t)s * w->slot_size + sl->off;
	if (memcmp(src, dst, sl->len)) {
		uint32_t i = 0;

		while (src[i] == dst[i])
			i++;
		mtpost_die("thread %d: %s of %u bytes (seq %" PRIu64 "): data mismatch at byte %u",
			   w->id, mtpost_op_name[sl->op], sl->len, sl->seq, i);
	}
	for (uint32_t i = 0; i < GUARD; i++)
		if (dst[sl->len + i] != GUARD_BYTE)
			mtpost_die("thread %d: %s of %u bytes (seq %" PRIu64 "): byte %u past its "
				   "end was overwritten",
				   w->id, mtpost_op_name[sl->op], sl->len, sl->seq, i);
}

static const enum ibv_wc_opcode wc_op[OP_MAX] = { IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
						  IBV_WC_SEND };

/* Reap one CQ of the pair: the send completions of qp_a (@recv 0), or the
 * receive completions of qp_b (@recv 1).  Under the pair's lock.  Returns
 * how many. */
static int reap_cq(struct run *r, struct pair *p, int recv)
{
	struct ibv_qp *qp = recv ? p->qp_b : p->qp_a;
	uint64_t *done = recv ? &p->done_rseq : &p->done_seq;
	struct ibv_wc wc[16];
	int n;

	n = ibv_poll_cq(recv ? p->cq_b : p->cq_a, 16, wc);
	if (n < 0)
		mtpost_die("ibv_poll_cq failed");
	for (int i = 0; i < n; i++) {
		uint64_t seq = wc[i].wr_id >> 16;
		int wi = (int)(wc[i].wr_id >> 8 & 0xff), si = (int)(wc[i].wr_id & 0xff);
		struct slot *sl;

		if (wc[i].status != IBV_WC_SUCCESS && !recv)
			mtpost_die("QP %u: completion error %s (seq %" PRIu64 ", vendor_err %u)",
				   qp->qp_num, ibv_wc_status_str(wc[i].status), seq,
				   wc[i].vendor_err);
		if (wc[i].status != IBV_WC_SUCCESS)
			mtpost_die("QP %u: receive completion error %s (seq %" PRIu64 ")",
				   qp->qp_num, ibv_wc_status_str(wc[i].status), seq);
		if (wi >= r->o->threads || si >= r->o->window || seq != *done ||
		    (recv && !(wc[i].opcode & IBV_WC_RECV))) {
			if (recv)
				mtpost_die("QP %u: receive out of order: seq %" PRIu64
					   ", expected %" PRIu64,
					   qp->qp_num, seq, *done);
			mtpost_die("QP %u: completion out of order: seq %" PRIu64
				   " (thread %d), expected %" PRIu64,
				   qp->qp_num, seq, wi, *done);
		}
		sl = &r->w[wi].slot[si];
		if (!recv && (!sl->busy || sl->seq != seq || wc[i].opcode != wc_op[sl->op]))
			mtpost_die("QP %u: completion seq %" PRIu64
				   " does not match its WR (opcode %d, %s)",
				   qp->qp_num, seq, wc[i].opcode, mtpost_op_name[sl->op]);
		if (recv && (!sl->busy || sl->op != OP_SEND || sl->rseq != seq ||
			     wc[i].byte_len != sl->len))
			mtpost_die("QP %u: receive seq %" PRIu64 " got %u bytes, the SEND had %u",
				   qp->qp_num, seq, wc[i].byte_len, sl->len);
		(*done)++;
		if (recv)
			sl->rdone = 1;
		else
			sl->sdone = 1;
	}
	return n;
}

/* Reap the pair's completions, whoever's they are.  Under the pair's lock.
 * Returns how many. */
static int reap_locked(struct run *r, struct pair *p)
{
	int n = reap_cq(r, p, 0);

	return n + reap_cq(r, p, 1);
}

static int more_to_post(struct worker *w, long posted)
{
	const struct options *o = w->run->o;

	if (atomic_load_explicit(&w->run->stop, memory_order_relaxed))
		return 0;
	if (o->seconds > 0)
		return mtpost_now_ns() < w->run->deadline_ns;
	return posted < o->msgs;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct options *o = w->run->o;
	uint64_t last = mtpost_now_ns();
	long posted = 0;
	int inflight = 0, idle = 0;

	for (;;) {
		int done[MAX_WINDOW], ndone = 0, got;

		for (int s = 0; s < o->window && more_to_post(w, posted); s++) {
			if (w->slot[s].busy)
				continue;
			prepare_slot(w, s);
			post_slot(w, s);
			posted++;
			inflight++;
		}
		if (!inflight)
			break;
		pthread_mutex_lock(&w->p->lock);
		got = reap_locked(w->run, w->p);
		for (int s = 0; s < o->window; s++)
			if (w->slot[s].busy && w->slot[s].sdone && w->slot[s].rdone)
				done[ndone++] = s;
		pthread_mutex_unlock(&w->p->lock);
		for (int i = 0; i < ndone; i++) {
			verify_slot(w, done[i]);
			w->slot[done[i]].busy = 0;
			inflight--;
			atomic_fetch_add(&w->completed, 1);
		}
		if (got || ndone) {
			last = mtpost_now_ns();
			idle = 0;
		} else if (mtpost_now_ns() - last > STALL_NS) {
			mtpost_die(
			    "thread %d: no completion for %llu s (%d in flight, QP %u: %" PRIu64
			    " posted, %" PRIu64 " completed)",
			    w->id, STALL_NS / 1000000000ull, inflight, w->p->qp_a->qp_num,
			    w->p->next_seq, w->p->done_seq);
		} else if (++idle > 64) {
			/* two vCPUs for everybody: do not hog one */
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		} else {
			sched_yield();
		}
	}
	atomic_fetch_add(&w->run->finished, 1);
	return NULL;
}

void mtpost_start_workers(struct run *r)
{
	if (r->o->seconds > 0)
		r->deadline_ns = mtpost_now_ns() + (uint64_t)(r->o->seconds * 1e9);
	for (int i = 0; i < r->o->threads; i++)
		if (pthread_create(&r->w[i].th, NULL, worker_main, &r->w[i]))
			mtpost_die("pthread_create failed");
}

/* Until every thread has completed @n messages (or all it had to). */
void mtpost_wait_completed(struct run *r, long n)
{
	if (r->o->seconds <= 0 && n > r->o->msgs)
		n = r->o->msgs;
	for (;;) {
		int all = 1;

		for (int i = 0; i < r->o->threads; i++)
			if (atomic_load(&r->w[i].completed) < n)
				all = 0;
		if (all)
			return;
		usleep(2000);
	}
}

/* With --stop FILE: until the threads are done, stop them when FILE appears. */
void mtpost_join_workers(struct run *r, const char *stop)
{
	while (stop && atomic_load(&r->finished) < r->o->threads) {
		if (access(stop, F_OK) == 0)
			atomic_store(&r->stop, 1);
		usleep(20000);
	}
	for (int i = 0; i < r->o->threads; i++)
		pthread_join(r->w[i].th, NULL);
}


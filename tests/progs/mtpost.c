// SPDX-License-Identifier: MIT
/* mtpost: several threads post RDMA WRITEs, READs and SENDs of random sizes
 * through classic ibv_post_send at the same time, each keeping a window of
 * messages in flight, and verify every completion and every byte.  The
 * robustness tests (tests/vm/cases/47-robust.sh) run it under libjustitia.so
 * with small chunks, so that the messages are really split.
 *
 *   mtpost [-a DEV] [-b DEV] [-g GID_INDEX] [-t THREADS] [-n MSGS] [-D SECONDS]
 *          [-s MAX_SIZE] [-w WINDOW] [-S SEED] [-o OPS] [-T TIMEOUT]
 *          [--shared-qp] [--fork] [--ready FILE] [--hold FILE] [--expect FILE]
 *          [--stop FILE]
 *
 * Each of THREADS threads (default 4) has its own RC QP pair -- A on -a
 * (default rxe1) posts, B on -b (default rxe0) is its peer -- with its own
 * CQs and memory regions.  With --shared-qp all threads (default 2) post on
 * ONE pair, each post and each poll under the application's own mutex.  A
 * thread keeps WINDOW messages (default 4, each in its own buffer slot) in
 * flight and posts the next as soon as one completes: -n MSGS per thread
 * (default 100), or -D: for SECONDS.  Sizes are 1..MAX_SIZE (default 1 MiB),
 * a quarter of them small; -o: the opcodes, a comma list of write, read,
 * send (default all three: 40 % WRITE, 35 % READ, 25 % SEND).  -T: the QPs'
 * local ACK timeout exponent (default 18, about 1 s: Soft-RoCE under
 * emulation answers slowly, and Linux 6.1's rxe does not survive storms of
 * retransmissions well).  It checks that the send completions of each QP
 * come back in posting order, successful and with the right opcode, that
 * the receives come in order with the right length, that every byte arrived
 * and that nothing was written past the end of a message.
 *
 *   --fork         ibv_fork_init() first; once every thread has completed
 *                  two messages, fork() while they keep posting.  The child does
 *                  not touch the parent's verbs objects: it opens its own
 *                  device contexts and runs the same workload on its own
 *                  QPs; the parent finishes its own and waits for the child
 *                  (exit 0 only if the child exited 0).
 *   --ready FILE   written (the pid) once every thread completed a message
 *   --stop FILE    post no more once FILE exists (then finish what is in
 *                  flight, verify it, exit), even before -n or -D say so
 *   --hold FILE    after the transfers, before teardown: write FILE (the
 *                  pid) and wait until someone removes it (at most 120 s)
 *   --expect FILE  what was posted on the A QPs:
 *                  {"opcodes":{"RDMA_WRITE":{"wrs":..,"bytes":..},..},
 *                   "recv":{"wrs":..,"bytes":..}}
 * The child of --fork uses FILE.child for each of these.
 * Exit 0 when everything completed and verified. */
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/rc.h"

#define MAX_WINDOW 16
#define MAX_THREADS 64
#define GUARD 64                 /* bytes after a message that must stay untouched */
#define GUARD_BYTE 0xa5
#define SLOT_PAD 4096            /* room for the random start offset and the guard */
#define STALL_NS 30000000000ull  /* no completion for this long: fail */

enum op { OP_WRITE, OP_READ, OP_SEND, OP_MAX };
static const char *const op_name[OP_MAX] = { "RDMA_WRITE", "RDMA_READ", "SEND" };

struct options {
	const char *dev_a, *dev_b, *ready, *hold, *expect, *stop;
	int gidx, threads, window, shared, fork, timeout;
	unsigned ops;                   /* bit mask of enum op */
	long msgs;
	double seconds;
	uint32_t max_size;
	uint64_t seed;
};

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
	const char *name;
};

/* One message in flight, in its own slot of the thread's buffers. */
struct slot {
	int busy;
	enum op op;
	uint32_t len, off;
	uint64_t seq, rseq;
	int sdone, rdone;  /* written under the pair's lock */
};

struct pair {
	pthread_mutex_t lock;
	struct ibv_cq *cq_a, *cq_b;
	struct ibv_qp *qp_a, *qp_b;
	uint64_t next_seq, done_seq;    /* send WRs of qp_a: posted, completed */
	uint64_t next_rseq, done_rseq;  /* receive WRs of qp_b */
	int nworkers;
};

struct run;

struct worker {
	struct run *run;
	int id;
	struct pair *p;
	uint8_t *buf_a, *buf_b;
	size_t buf_size, slot_size;
	struct ibv_mr *mr_a, *mr_b;
	uint64_t rng;
	struct slot slot[MAX_WINDOW];
	uint64_t wrs[OP_MAX], bytes[OP_MAX];
	_Atomic long completed;
	pthread_t th;
};

struct run {
	const struct options *o;
	const char *role;               /* "parent" or "child" */
	struct dev a, b;
	struct pair *pairs;
	int npairs;
	struct worker *w;
	uint64_t deadline_ns;
	_Atomic int stop;               /* --stop FILE appeared */
	_Atomic int finished;           /* threads done */
};

static const char *prog_role = "";

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "mtpost%s: ", prog_role);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static uint64_t now_ns(void)
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

/* PATH, or PATH.child (in @buf) in the child of --fork. */
static const char *role_path(const struct run *r, const char *path, char *buf, size_t len)
{
	if (!path || strcmp(r->role, "child"))
		return path;
	snprintf(buf, len, "%s.child", path);
	return buf;
}

static void write_pid_file(const char *path)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) || rename(tmp, path))
		die("cannot write %s: %s", path, strerror(errno));
}

static void dev_open(struct dev *d, const char *name, int gidx)
{
	char why[128];

	d->name = name;
	if (rc_open_device(name, &d->ctx, why, sizeof(why)))
		die("%s", why);
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		die("%s: ibv_alloc_pd failed", name);
	if (ibv_query_gid(d->ctx, 1, gidx, &d->gid))
		die("%s: ibv_query_gid(%d) failed", name, gidx);
}

static struct ibv_qp *make_qp(struct dev *d, struct ibv_cq *cq, uint32_t depth)
{
	struct ibv_qp_cap cap = { .max_send_wr = depth, .max_recv_wr = depth,
				  .max_send_sge = 1, .max_recv_sge = 1 };
	struct ibv_qp *qp = rc_create_qp(d->pd, cq, &cap);

	if (!qp)
		die("%s: ibv_create_qp failed: %s", d->name, strerror(errno));
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
		die("%s: %s failed", name, step);
}

static void setup(struct run *r)
{
	const struct options *o = r->o;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	dev_open(&r->a, o->dev_a, o->gidx);
	dev_open(&r->b, o->dev_b, o->gidx);
	r->npairs = o->shared ? 1 : o->threads;
	r->pairs = calloc((size_t)r->npairs, sizeof(*r->pairs));
	r->w = calloc((size_t)o->threads, sizeof(*r->w));
	if (!r->pairs || !r->w)
		die("out of memory");
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
			die("ibv_create_cq failed");
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
			die("out of memory");
		memset(w->buf_a, 0, w->buf_size);
		memset(w->buf_b, 0, w->buf_size);
		w->mr_a = ibv_reg_mr(r->a.pd, w->buf_a, w->buf_size, access);
		w->mr_b = ibv_reg_mr(r->b.pd, w->buf_b, w->buf_size, access);
		if (!w->mr_a || !w->mr_b)
			die("ibv_reg_mr failed: %s", strerror(errno));
		w->rng = ((o->seed ^ (strcmp(r->role, "child") ? 0 : 0x5bd1e9955bd1e995ull)) +
			  0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)) | 1;
	}
}

static void teardown(struct run *r)
{
	for (int i = 0; i < r->o->threads; i++) {
		struct worker *w = &r->w[i];

		if (ibv_dereg_mr(w->mr_a) || ibv_dereg_mr(w->mr_b))
			die("ibv_dereg_mr failed");
		free(w->buf_a);
		free(w->buf_b);
	}
	for (int i = 0; i < r->npairs; i++) {
		struct pair *p = &r->pairs[i];

		if (ibv_destroy_qp(p->qp_a) || ibv_destroy_qp(p->qp_b) ||
		    ibv_destroy_cq(p->cq_a) || ibv_destroy_cq(p->cq_b))
			die("cannot destroy pair %d", i);
		pthread_mutex_destroy(&p->lock);
	}
	if (ibv_dealloc_pd(r->a.pd) || ibv_dealloc_pd(r->b.pd) ||
	    ibv_close_device(r->a.ctx) || ibv_close_device(r->b.ctx))
		die("cannot close the devices");
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
			die("thread %d: ibv_post_recv failed: %s", w->id, strerror(rc));
	}
	sl->seq = p->next_seq++;
	wr.wr_id = wr_id_of(sl->seq, w->id, s);
	rc = ibv_post_send(p->qp_a, &wr, &bad);
	if (rc)
		die("thread %d: ibv_post_send of %s (%u bytes) failed: %s", w->id, op_name[sl->op],
		    sl->len, strerror(rc));
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
		die("thread %d: %s of %u bytes (seq %" PRIu64 "): data mismatch at byte %u",
		    w->id, op_name[sl->op], sl->len, sl->seq, i);
	}
	for (uint32_t i = 0; i < GUARD; i++)
		if (dst[sl->len + i] != GUARD_BYTE)
			die("thread %d: %s of %u bytes (seq %" PRIu64 "): byte %u past its end "
			    "was overwritten", w->id, op_name[sl->op], sl->len, sl->seq, i);
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
		die("ibv_poll_cq failed");
	for (int i = 0; i < n; i++) {
		uint64_t seq = wc[i].wr_id >> 16;
		int wi = (int)(wc[i].wr_id >> 8 & 0xff), si = (int)(wc[i].wr_id & 0xff);
		struct slot *sl;

		if (wc[i].status != IBV_WC_SUCCESS && !recv)
			die("QP %u: completion error %s (seq %" PRIu64 ", vendor_err %u)",
			    qp->qp_num, ibv_wc_status_str(wc[i].status), seq, wc[i].vendor_err);
		if (wc[i].status != IBV_WC_SUCCESS)
			die("QP %u: receive completion error %s (seq %" PRIu64 ")", qp->qp_num,
			    ibv_wc_status_str(wc[i].status), seq);
		if (wi >= r->o->threads || si >= r->o->window || seq != *done ||
		    (recv && !(wc[i].opcode & IBV_WC_RECV))) {
			if (recv)
				die("QP %u: receive out of order: seq %" PRIu64 ", expected %" PRIu64,
				    qp->qp_num, seq, *done);
			die("QP %u: completion out of order: seq %" PRIu64 " (thread %d), expected %" PRIu64,
			    qp->qp_num, seq, wi, *done);
		}
		sl = &r->w[wi].slot[si];
		if (!recv && (!sl->busy || sl->seq != seq || wc[i].opcode != wc_op[sl->op]))
			die("QP %u: completion seq %" PRIu64 " does not match its WR (opcode %d, %s)",
			    qp->qp_num, seq, wc[i].opcode, op_name[sl->op]);
		if (recv && (!sl->busy || sl->op != OP_SEND || sl->rseq != seq ||
			     wc[i].byte_len != sl->len))
			die("QP %u: receive seq %" PRIu64 " got %u bytes, the SEND had %u",
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
		return now_ns() < w->run->deadline_ns;
	return posted < o->msgs;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct options *o = w->run->o;
	uint64_t last = now_ns();
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
			last = now_ns();
			idle = 0;
		} else if (now_ns() - last > STALL_NS) {
			die("thread %d: no completion for %llu s (%d in flight, QP %u: %" PRIu64
			    " posted, %" PRIu64 " completed)", w->id, STALL_NS / 1000000000ull,
			    inflight, w->p->qp_a->qp_num, w->p->next_seq, w->p->done_seq);
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

static void start_workers(struct run *r)
{
	if (r->o->seconds > 0)
		r->deadline_ns = now_ns() + (uint64_t)(r->o->seconds * 1e9);
	for (int i = 0; i < r->o->threads; i++)
		if (pthread_create(&r->w[i].th, NULL, worker_main, &r->w[i]))
			die("pthread_create failed");
}

/* Until every thread has completed @n messages (or all it had to). */
static void wait_completed(struct run *r, long n)
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
static void join_workers(struct run *r, const char *stop)
{
	while (stop && atomic_load(&r->finished) < r->o->threads) {
		if (access(stop, F_OK) == 0)
			atomic_store(&r->stop, 1);
		usleep(20000);
	}
	for (int i = 0; i < r->o->threads; i++)
		pthread_join(r->w[i].th, NULL);
}

static void write_expect(struct run *r, const char *path)
{
	uint64_t wrs[OP_MAX] = { 0 }, bytes[OP_MAX] = { 0 };
	int first = 1;
	FILE *f;

	for (int i = 0; i < r->o->threads; i++)
		for (int op = 0; op < OP_MAX; op++) {
			wrs[op] += r->w[i].wrs[op];
			bytes[op] += r->w[i].bytes[op];
		}
	f = fopen(path, "w");
	if (!f)
		die("cannot write %s", path);
	fputs("{\"opcodes\":{", f);
	for (int op = 0; op < OP_MAX; op++) {
		if (!wrs[op])
			continue;
		fprintf(f, "%s\"%s\":{\"wrs\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", first ? "" : ",",
			op_name[op], wrs[op], bytes[op]);
		first = 0;
	}
	fprintf(f, "},\"recv\":{\"wrs\":%" PRIu64 ",\"bytes\":%" PRIu64 "}}\n", wrs[OP_SEND],
		bytes[OP_SEND]);
	if (fclose(f))
		die("cannot write %s", path);
}

static void report(struct run *r)
{
	uint64_t msgs = 0, bytes = 0;

	for (int i = 0; i < r->o->threads; i++)
		for (int op = 0; op < OP_MAX; op++) {
			msgs += r->w[i].wrs[op];
			bytes += r->w[i].bytes[op];
		}
	printf("mtpost (%s, pid %d): %d threads on %d QP pair%s, %" PRIu64 " messages, %" PRIu64
	       " bytes, all verified in order\n", r->role, (int)getpid(), r->o->threads, r->npairs,
	       r->npairs == 1 ? "" : "s", msgs, bytes);
	fflush(stdout);
}

static void hold(const char *path)
{
	uint64_t until = now_ns() + 120000000000ull;

	write_pid_file(path);
	while (access(path, F_OK) == 0 && now_ns() < until)
		usleep(20000);
}

static int run_child(const struct options *o);

/* The whole workload of one process.  Returns the exit code. */
static int run(const struct options *o, const char *role)
{
	struct run r = { .o = o, .role = role };
	char b1[4096], b2[4096], b3[4096], b4[4096];
	const char *ready = role_path(&r, o->ready, b1, sizeof(b1));
	const char *holdf = role_path(&r, o->hold, b2, sizeof(b2));
	const char *expect = role_path(&r, o->expect, b3, sizeof(b3));
	const char *stop = role_path(&r, o->stop, b4, sizeof(b4));
	pid_t child = -1;
	int rc = 0;

	setup(&r);
	start_workers(&r);
	wait_completed(&r, 1);
	if (ready)
		write_pid_file(ready);
	if (o->fork && !strcmp(role, "parent")) {
		/* fork while the threads keep posting (and the shim's progress
		 * thread works): the child gets none of them */
		wait_completed(&r, 2);
		fflush(NULL);
		child = fork();
		if (child < 0)
			die("fork: %s", strerror(errno));
		if (child == 0)
			exit(run_child(o));
		printf("mtpost (parent, pid %d): forked child %d\n", (int)getpid(), (int)child);
		fflush(stdout);
	}
	join_workers(&r, stop);
	report(&r);
	if (child > 0) {
		int st;

		if (waitpid(child, &st, 0) != child)
			die("waitpid: %s", strerror(errno));
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "mtpost (parent): the child %s %d\n",
				WIFEXITED(st) ? "exited" : "was killed by signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			rc = 1;
		} else {
			printf("mtpost (parent): the child exited 0\n");
		}
	}
	if (expect)
		write_expect(&r, expect);
	if (holdf)
		hold(holdf);
	teardown(&r);
	return rc;
}

static int run_child(const struct options *o)
{
	prog_role = " (child)";
	return run(o, "child");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "shared-qp", no_argument, NULL, 'Q' },
		{ "fork", no_argument, NULL, 'F' },
		{ "ready", required_argument, NULL, 'R' },
		{ "hold", required_argument, NULL, 'H' },
		{ "expect", required_argument, NULL, 'E' },
		{ "stop", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	struct options o = {
		.dev_a = "rxe1", .dev_b = "rxe0", .gidx = 1, .threads = 4, .window = 4, .timeout = 18,
		.msgs = 100, .max_size = 1u << 20, .seed = 0x2545f4914f6cdd1dull,
		.ops = 1u << OP_WRITE | 1u << OP_READ | 1u << OP_SEND,
	};
	char *tok, *save;
	int c, threads_set = 0;

	while ((c = getopt_long(argc, argv, "a:b:g:t:n:D:s:w:S:o:T:", lopts, NULL)) != -1) {
		switch (c) {
		case 'a': o.dev_a = optarg; break;
		case 'b': o.dev_b = optarg; break;
		case 'g': o.gidx = atoi(optarg); break;
		case 't': o.threads = atoi(optarg); threads_set = 1; break;
		case 'n': o.msgs = atol(optarg); break;
		case 'D': o.seconds = atof(optarg); break;
		case 's': o.max_size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'w': o.window = atoi(optarg); break;
		case 'S': o.seed = strtoull(optarg, NULL, 0); break;
		case 'T': o.timeout = atoi(optarg); break;
		case 'o':
			o.ops = 0;
			for (tok = strtok_r(optarg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				int k = !strcmp(tok, "write") ? OP_WRITE : !strcmp(tok, "read") ? OP_READ
					: !strcmp(tok, "send") ? OP_SEND : -1;

				if (k < 0)
					die("-o: %s is not write, read or send", tok);
				o.ops |= 1u << k;
			}
			break;
		case 'Q': o.shared = 1; break;
		case 'F': o.fork = 1; break;
		case 'R': o.ready = optarg; break;
		case 'H': o.hold = optarg; break;
		case 'E': o.expect = optarg; break;
		case 'P': o.stop = optarg; break;
		default:
			fprintf(stderr, "usage: mtpost [-a DEV] [-b DEV] [-g GID] [-t THREADS] [-n MSGS] "
					"[-D SECONDS] [-s MAX_SIZE] [-w WINDOW] [-S SEED] [-o OPS] [-T TIMEOUT] "
					"[--shared-qp] "
					"[--fork] [--ready FILE] [--hold FILE] [--expect FILE] "
					"[--stop FILE]\n");
			return 2;
		}
	}
	if (o.shared && !threads_set)
		o.threads = 2;
	if (o.threads < 1 || o.threads > MAX_THREADS || o.window < 1 || o.window > MAX_WINDOW ||
	    o.msgs < 1 || o.max_size < 1 || o.max_size > (64u << 20) || !o.ops ||
	    o.timeout < 0 || o.timeout > 31)
		die("bad arguments: 1..%d threads, window 1..%d, 1..64 MiB messages", MAX_THREADS,
		    MAX_WINDOW);
	if (o.fork) {
		/* with fork support enabled, memory registered from now on is
		 * not inherited: the child must (and does) use only what it
		 * creates itself */
		int rc = ibv_fork_init();
		enum ibv_fork_status fs;

		if (rc)
			die("ibv_fork_init failed: %s", strerror(rc));
		fs = ibv_is_fork_initialized();
		printf("mtpost: ibv_fork_init done (%s)\n",
		       fs == IBV_FORK_UNNEEDED ? "unneeded: the kernel copies pinned pages on fork"
		       : fs == IBV_FORK_ENABLED ? "enabled: registered memory is not inherited"
						: "disabled");
	}
	return run(&o, "parent");
}

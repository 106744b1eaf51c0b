/* SPDX-License-Identifier: MIT */
/* mtpost's workload (tests/progs/mtpost.c): the QP pairs, the worker
 * threads that keep a window of verified messages in flight on them, and
 * the setup and teardown of it all.  mtpost.c is the command line, the
 * fork and the files it writes. */
#ifndef JUSTITIA_PROGS_MTPOST_H
#define JUSTITIA_PROGS_MTPOST_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define MAX_WINDOW 16
#define MAX_THREADS 64
#define GUARD 64                 /* bytes after a message that must stay untouched */
#define GUARD_BYTE 0xa5
#define SLOT_PAD 4096            /* room for the random start offset and the guard */
#define STALL_NS 30000000000ull  /* no completion for this long: fail */

enum op { OP_WRITE, OP_READ, OP_SEND, OP_MAX };
extern const char *const mtpost_op_name[OP_MAX]; /* "RDMA_WRITE", ... */

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

/* " (child)" in the child of --fork, else "" */
extern const char *mtpost_role;
/* "mtpost: " (or "mtpost (child): ") and the message on stderr; exit 1. */
__attribute__((noreturn, format(printf, 1, 2))) void mtpost_die(const char *fmt, ...);
uint64_t mtpost_now_ns(void); /* CLOCK_MONOTONIC */

/* Devices, QP pairs (connected), worker buffers and their MRs for @r->o;
 * dies on failure.  mtpost_teardown() undoes it. */
void mtpost_setup(struct run *r);
void mtpost_teardown(struct run *r);
/* Start the worker threads; wait until each has completed @n messages
 * (or all it had to); join them (with @stop: stopping them when that file
 * appears). */
void mtpost_start_workers(struct run *r);
void mtpost_wait_completed(struct run *r, long n);
void mtpost_join_workers(struct run *r, const char *stop);

#endif

/* SPDX-License-Identifier: MIT */
/* integrity's modules (tests/progs/integrity.c is the command line and the
 * setup): the state of a run (integrity_state.c), drawing and placing the
 * messages (integrity_gen.c), posting them (integrity_post.c) and checking
 * their completions and bytes (integrity_wc.c).  One run per process, so
 * the state is global, as it was when integrity was one file. */
#ifndef JUSTITIA_PROGS_INTEGRITY_H
#define JUSTITIA_PROGS_INTEGRITY_H

#include "rc.h"

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_SGE 4
#define MAX_BATCH 8
#define MAX_DEPTH 256
#define GAP 4096 /* gaps before a region and between SGEs: 0..GAP-1 bytes */
#define RING_SLACK (4u << 20)
#define MAX_SHOWN 20 /* errors printed in full */
#define STALL_SECONDS 180
#define CANARY 0xa5

enum op { OP_WRITE, OP_READ, OP_SEND, OP_WRITE_IMM, OP_MAX };
extern const char *const integ_op_name[OP_MAX];  /* "RDMA_WRITE", ... */
extern const char *const integ_op_short[OP_MAX]; /* "WRITE", ... */

struct msg {
	uint64_t seq;
	enum op op;
	uint32_t len;
	int signaled, nsge, nrsge, posted, req_done, recv_done;
	struct ibv_sge sge[MAX_SGE];  /* on A: the source, or a READ's destination */
	struct ibv_sge rsge[MAX_SGE]; /* on B: a SEND's receive buffers */
	uint64_t raddr;               /* on B: WRITE destination, READ source */
	uint64_t a_need, b_need, a_pos, b_pos;
	uint32_t rtotal;              /* bytes of a SEND's receive buffers */
	uint64_t sum;                 /* checksum of the source bytes */
};

struct wc_rec {
	uint64_t wr_id;
	uint32_t byte_len;
	int opcode, status, has_len;
};

struct wc_log {
	struct wc_rec *v;
	size_t n, cap;
};

struct integ_opts {
	const char *dev_a, *dev_b, *order;
	int gidx, extended;
	unsigned depth;
	uint64_t seed, bytes;
	uint32_t max_size;
	int64_t corrupt;
	unsigned overlap;
	int timeout;
};

struct integ_stats {
	uint64_t msgs[OP_MAX], bytes[OP_MAX];
	uint64_t batches, signaled, unsignaled, multi_sge, recv_multi_sge, recvs, max_len_msgs;
	uint64_t corrupted, errors, len_differs;
};

/* Random messages take @random_budget bytes; the n_forced messages of
 * exactly max_size go first and after every random_budget/n_forced bytes. */
struct gen {
	uint64_t seq, random_bytes, random_budget;
	unsigned forced, n_forced;
};

/* ---- the state of the run (integrity_state.c) */
extern struct integ_opts opt;           /* the options, with their defaults */
extern struct rc_side A, B;             /* requester and responder */
extern struct msg fifo[MAX_DEPTH];      /* the outstanding messages, oldest first */
extern unsigned fifo_head, fifo_n;
extern struct wc_log req_log, recv_log; /* every completion, for --order */
extern int started;                     /* traffic has begun: integ_fatal writes --order */
extern struct integ_stats st;
extern uint64_t rng;                    /* the draws' PRNG state (-S) */
extern double last_progress;            /* when a completion came last (integrity_wc.c) */
extern double max_post_s;               /* the longest post call (integrity_post.c) */

uint64_t integ_rnd(void);
double integ_now_s(void);
/* "integrity: FAILED: ..." on stdout, the --order file if traffic began, exit 1. */
__attribute__((noreturn, format(printf, 1, 2))) void integ_fatal(const char *fmt, ...);
/* A verification failure: counted, printed up to MAX_SHOWN times. */
__attribute__((format(printf, 1, 2))) void integ_fail(const char *fmt, ...);
uint64_t integ_parse_size(const char *s, const char *what); /* 64, 4K, 1M, 1G */
void integ_write_order(void); /* the --order file, if asked for */

/* ---- messages (integrity_gen.c) */
void integ_gen_init(struct gen *g);
int integ_gen_done(const struct gen *g);
void integ_gen_msg(struct gen *g, struct msg *m);
struct msg *integ_fifo_at(unsigned i);
struct msg *integ_place(const struct msg *t);

/* ---- completions (integrity_wc.c) */
uint32_t integ_imm_of(uint64_t seq);
int integ_needs_recv(const struct msg *m);
void integ_wait_progress(void);

/* ---- posting (integrity_post.c) */
void integ_run(void);
void integ_run_overlap(void);

#endif

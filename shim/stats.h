/* SPDX-License-Identifier: MIT */
/* Per-QP work-request accounting and the JUSTITIA_STATS JSON report. */
#ifndef JUSTITIA_SHIM_STATS_H
#define JUSTITIA_SHIM_STATS_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

enum stats_op {
	STATS_OP_RDMA_WRITE,
	STATS_OP_RDMA_WRITE_WITH_IMM,
	STATS_OP_SEND,
	STATS_OP_SEND_WITH_IMM,
	STATS_OP_RDMA_READ,
	STATS_OP_ATOMIC_CMP_AND_SWP,
	STATS_OP_ATOMIC_FETCH_AND_ADD,
	STATS_OP_LOCAL_INV,
	STATS_OP_BIND_MW,
	STATS_OP_SEND_WITH_INV,
	STATS_OP_TSO,
	STATS_OP_ATOMIC_WRITE,
	STATS_OP_OTHER,
	STATS_OP_MAX
};

struct stats_counter {
	atomic_uint_fast64_t wrs;
	atomic_uint_fast64_t bytes;
};

/* Counters of one QP.  Updated with relaxed atomics: several threads may
 * post to one QP (verbs are thread safe), the report only needs totals. */
struct stats_qp {
	struct stats_counter op[STATS_OP_MAX];
	atomic_uint_fast64_t post_calls;   /* ibv_post_send + ibv_wr_complete calls */
	atomic_uint_fast64_t classic_wrs;  /* WRs that went through ibv_post_send */
	atomic_uint_fast64_t wr_api_wrs;   /* WRs that went through ibv_wr_* */
	atomic_uint_fast64_t failed_posts; /* post calls that returned an error */
	struct stats_counter recv;
	atomic_uint_fast64_t cqe_send;
	atomic_uint_fast64_t cqe_recv;
	atomic_uint_fast64_t cqe_recv_bytes; /* their byte_len, as the app saw it */
	atomic_uint_fast64_t cqe_error;
	/* messages split: one-sided, SEND, WRITE_WITH_IMM; two-sided ones
	 * that went whole after all (indexes: enum stats_split) */
	atomic_uint_fast64_t split[4];
	atomic_uint_fast64_t held;    /* WRs that waited in the pacer's backlog */
	atomic_uint_fast64_t window_held; /* ... for the direct window (window.h) */
	/* the grant its backlog could not bank: how much later than the bank
	 * (wrpost_burst()) a drain took its next token (drain.c) */
	atomic_uint_fast64_t tokens_lost_ns;
	/* the application's post and poll calls on a paced QP that found its
	 * lock held (by the progress thread, or another of its threads) */
	atomic_uint_fast64_t lock_waits;
};

enum stats_split { STATS_SPLIT_ONE_SIDED, STATS_SPLIT_SEND, STATS_SPLIT_WRITE_IMM,
		   STATS_SPLIT_WHOLE };

/* WRs of one ibv_wr_start .. ibv_wr_complete batch, not yet posted.  The
 * verbs API requires the application to serialise a batch per QP, so this
 * needs no atomics. */
struct stats_batch {
	uint64_t wrs[STATS_OP_MAX];
	uint64_t bytes[STATS_OP_MAX];
	int cur_op; /* op of the WR whose SGEs are being set, -1 before any */
};

/* A plain (non-atomic) copy of a QP's counters with its identity, for the
 * report and for QPs that no longer exist. */
struct stats_snapshot {
	char device[IBV_SYSFS_NAME_MAX];
	uint32_t qpn;
	enum ibv_qp_type type;
	const char *created_via; /* static string */
	int destroyed;
	struct {
		uint64_t wrs, bytes;
	} op[STATS_OP_MAX];
	uint64_t post_calls, classic_wrs, wr_api_wrs, failed_posts;
	uint64_t recv_wrs, recv_bytes;
	uint64_t cqe_send, cqe_recv, cqe_recv_bytes, cqe_error;
	uint64_t split[4];
	uint64_t held;
	uint64_t window_held;
	uint64_t tokens_lost_ns;
	uint64_t lock_waits;
};

enum stats_op stats_op_from_wr(enum ibv_wr_opcode opcode);
const char *stats_op_name(enum stats_op op);

/* Account the WRs of a classic post list.  @bad is the failing WR reported
 * by the provider (NULL when the call succeeded): WRs before it were posted. */
/* Returns the number of WRs counted as posted, their bytes in *bytes. */
uint64_t stats_account_send(struct stats_qp *st, const struct ibv_send_wr *wr,
			    const struct ibv_send_wr *bad, int rc, uint64_t *bytes);
/* The same WRs counted as classic_wrs with no post call: posted later,
 * from a paced QP's backlog, for a call stats_account_call() counted. */
uint64_t stats_account_classic(struct stats_qp *st, const struct ibv_send_wr *wr,
			       const struct ibv_send_wr *bad, int rc, uint64_t *bytes);
/* Account WRs of the ibv_wr_* API that the shim buffered and posted in
 * classic form (wrbuf.h), the WRs before @bad: counted as wr_api_wrs, with no
 * post call (the batch's ibv_wr_complete is one: stats_account_call). */
uint64_t stats_account_wr_api(struct stats_qp *st, const struct ibv_send_wr *wr,
			      const struct ibv_send_wr *bad, uint64_t *bytes);
/* One post call that returned @rc. */
void stats_account_call(struct stats_qp *st, int rc);
void stats_account_recv(struct stats_qp *st, const struct ibv_recv_wr *wr,
			const struct ibv_recv_wr *bad);
void stats_account_wc(struct stats_qp *st, const struct ibv_wc *wc);

void stats_batch_reset(struct stats_batch *b);
void stats_batch_wr(struct stats_batch *b, enum stats_op op);
void stats_batch_bytes(struct stats_batch *b, uint64_t bytes);
/* ibv_wr_complete returned @rc: on success every WR of the batch was posted. */
/* Returns the number of WRs posted, their bytes in *bytes. */
uint64_t stats_batch_commit(struct stats_qp *st, struct stats_batch *b, int rc, uint64_t *bytes);

void stats_snapshot_take(struct stats_snapshot *s, const struct stats_qp *st);
void stats_snapshot_add(struct stats_snapshot *sum, const struct stats_snapshot *s);

/* The process's pacer (pacectl.c): where its work ran. */
struct stats_pacer {
	uint64_t wakeups;        /* the progress thread woke */
	uint64_t thread_drains;  /* backlogs it serviced */
	uint64_t poll_drains;    /* backlogs the application's polls serviced */
	uint64_t kick_wakes;     /* of the wakeups: a backlog started (eventfd) */
	uint64_t timer_wakes;    /* ... its timer (a tick, a token, a guard) */
	uint64_t event_wakes;    /* ... split QPs' completion events */
	uint64_t thread_cpu_ns;  /* the progress thread's CPU time */
};

/* Write the report (@pacer may be NULL).  Returns 0 or -errno. */
int stats_write_json(FILE *f, int pid, const char *comm,
		     const struct stats_snapshot *qps, size_t n,
		     const struct stats_snapshot *overflow, uint64_t n_overflow,
		     const struct stats_pacer *pacer);

/* Expand "%p" to the pid and "%%" to "%" in a JUSTITIA_STATS path. */
int stats_expand_path(char *out, size_t len, const char *tmpl, int pid);

#endif

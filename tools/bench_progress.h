/* SPDX-License-Identifier: MIT */
/*
 * justbench --mode progress (docs/justbench.1, MODES): how long a client takes to fetch data from
 * a remote process that is busy (Jin et al., RDMA over IP with WAN delay), by a one-sided READ
 * against a two-sided SEND request answered by that process.  A point per response delay D
 * (bench_sweep.h): the server's thread computes in slices of D ns and looks at its CQ only between
 * two slices, answering every message it finds there; a READ is served by the NIC meanwhile.
 *
 * The client and the server's thread speak over the flow's own QP with SENDs of
 * BENCH_PROGRESS_MSG bytes (bench_progress_put(): magic "JP", version, operation, sequence
 * number, D in ns; big-endian):
 *
 *	SET D		the server computes in slices of D from now on; answered by an ACK
 *	REQUEST D	a fetch: the server (which takes D from it as well) answers with a SEND of
 *			the flow's size that starts with the request (when size >= 16)
 *	IDLE		the flow is over: the server stops computing and waits for events; ACK
 *	ACK		the server's answer to SET and IDLE: the message echoed
 *
 * Each point starts with a SET and its ACK, so the server never guesses D from time; a READ flow
 * sends no REQUEST.  Between a fetch's end and the next fetch the client computes (spins) for a
 * pseudo-random time, uniform in 0..D (bench_progress_gap()), so that requests land anywhere in
 * the server's slices: without it each request would arrive just after the server looked and
 * wait a whole slice (a sleep would do the same on a host whose timer ticks are coarse).  That wait is not part of the latency: a sample is the post of the READ or the REQUEST
 * to the completion of the READ or the arrival of the answer.
 */
#ifndef JUSTITIA_BENCH_PROGRESS_H
#define JUSTITIA_BENCH_PROGRESS_H

#include "bench_run.h"
#include "bench_sweeprun.h"
#include "bench_verbs.h"
#include "bench_wire.h"

#include <pthread.h>
#include <stdatomic.h>

#define BENCH_PROGRESS_MSG     16
#define BENCH_PROGRESS_SLOT    64 /* a receive slot of the server, and the client's message area */
#define BENCH_PROGRESS_RECVS   8  /* receives the server keeps posted per QP */
#define BENCH_PROGRESS_VERSION 1
#define BENCH_PROGRESS_WAIT_NS (10ull * 1000000000) /* for an answer, beyond 2 D */

enum bench_progress_op {
	BENCH_PROG_SET = 1,
	BENCH_PROG_REQUEST = 2,
	BENCH_PROG_IDLE = 3,
	BENCH_PROG_ACK = 4,
	BENCH_PROG_OP_MAX
};

struct bench_progress_msg {
	uint8_t op; /* enum bench_progress_op */
	uint32_t seq;
	uint64_t delay_ns;
};

/* Encodes m into b (BENCH_PROGRESS_MSG bytes). */
void bench_progress_put(const struct bench_progress_msg *m, uint8_t *b);
/*
 * Decodes len bytes at b: -EPROTO for another length, magic or version, an unknown operation,
 * or a delay above BENCH_RESPONSE_DELAY_MAX.
 */
int bench_progress_get(const uint8_t *b, size_t len, struct bench_progress_msg *m);

/* A pseudo-random time in 0..d-1 (0 when d is 0) from *state (any seed). */
uint64_t bench_progress_gap(uint64_t *state, uint64_t d);

/*
 * The buffers of a flow of size-byte messages: the client's, its receives at 0 (at least
 * BENCH_PROGRESS_MSG bytes long) then its message area; the server's, the data (READ source,
 * answers) at 0, its ACK area, then BENCH_PROGRESS_RECVS receive slots.
 */
uint32_t bench_progress_client_recv_len(uint32_t size);
size_t bench_progress_client_buf(uint32_t size);
size_t bench_progress_server_buf(uint32_t size);

/* Sets the client's QP configuration of flow f for this mode (buffer, depths, busy polling). */
void bench_progress_client_cfg(const struct bench_flow *f, struct bench_qp_cfg *cfg);

/*
 * The client's side on one QP (the worker's thread, points of s laid out by
 * bench_sweeper_setup()): every point of f until stop, the flow's duration shared equally among
 * them, then an IDLE.  0, or -errno with a message in err (the points done keep their numbers).
 */
int bench_progress_run(struct bench_sweeper *s, const struct bench_flow *f,
		       const struct bench_sweep_qp *q, const atomic_bool *stop, char *err,
		       size_t errlen);

/* The server's thread of one QP. */
struct bench_progress_peer {
	struct bench_qp qp;
	uint32_t size;
	const atomic_bool *stop;
	uint64_t requests, bytes, controls, cpu_ns;
	int error;
	char errmsg[BENCH_ERRMSG_MAX];
	pthread_t tid;
	bool started;
};

struct bench_progress_server {
	struct bench_progress_peer *p; /* one per QP, flow by flow */
	size_t n;
	atomic_bool stop;
};

/*
 * Checks the flows of h (latency READ or SEND, the sizes), creates and connects a QP per client
 * QP on dev (path MTU mtu, classified when classify), fills acc->qps[] and starts the threads.
 * 0, or -errno with a message in err; bench_progress_server_free() either way.
 */
int bench_progress_server_setup(struct bench_progress_server *s, struct bench_dev *dev,
				const struct bench_hello *h, int mtu, bool classify,
				struct bench_accept *acc, char *err, size_t errlen);
/*
 * Stops and joins the threads and puts each flow's numbers into res->flows[] (msgs: requests
 * answered, bytes: their answers' bytes, cpu_ns).  0, or -EIO with the first thread's error.
 */
int bench_progress_server_finish(struct bench_progress_server *s, const struct bench_hello *h,
				 struct bench_result *res, char *err, size_t errlen);
void bench_progress_server_free(struct bench_progress_server *s);

#endif

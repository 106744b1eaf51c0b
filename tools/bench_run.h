/* SPDX-License-Identifier: MIT */
/*
 * justbench traffic: one thread per QP.
 *
 * A worker drives one QP of a flow on the initiating side: from the run's common start plus the
 * flow's delay until its duration ends (or its iters are done) it keeps `window` posts in
 * flight, each post one ibv_post_send of a chain of `batch` WRs of which only the last is
 * signaled, and records for every completed post its post-to-completion time (the latency
 * sample), the messages and the bytes.  Then it stops posting and waits for what is in flight.
 * Latency flows (window 1, batch 1) thus measure one message at a time.  With rperf, each
 * latency sample is preceded by a probe: the same message from the same device to itself over a
 * loopback QP pair, whose time is subtracted from the sample.  With pollcost (--mode poll-cost,
 * latency flows only) each message also times its ibv_poll_cq calls (bench_pollcost.h).  With a
 * sweeper (--mode reuse, overhead, overlap) the worker runs the sweep's points instead
 * (bench_sweeprun.h); its counts and latency samples are then the sums over the points.
 *
 * A responder drives one QP on the other side for SEND and WRITE_IMM flows: it keeps receives
 * posted (event-driven, it never spins) and counts what arrives.  WRITE and READ flows need no
 * thread there.
 */
#ifndef JUSTITIA_BENCH_RUN_H
#define JUSTITIA_BENCH_RUN_H

#include "bench_flow.h"
#include "bench_pollcost.h"
#include "bench_stats.h"
#include "bench_sweeprun.h"
#include "bench_verbs.h"

#include <pthread.h>
#include <stdatomic.h>

#define BENCH_DRAIN_NS (10ull * 1000000000) /* for the posts in flight after the end */
#define BENCH_ERRMSG_MAX 160

/* The common start: workers wait for go, then start at t0_ns plus their flow's delay. */
struct bench_start {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool go;
	uint64_t t0_ns;
};

struct bench_worker {
	const struct bench_flow *flow; /* duration resolved (non-zero) */
	struct bench_qp qp;	       /* connected */
	struct bench_wire_qp remote;   /* the peer's buffer */
	bool rperf;
	struct bench_qp probe_a, probe_b; /* the loopback pair, with rperf */
	struct bench_wire_qp probe_remote; /* probe_b's buffer */
	bool pollcost;			   /* time each poll (bench_pollcost.h) */
	struct bench_pollcost pc;
	struct bench_sweeper *sweep;	   /* a sweeping mode (owned), or NULL */
	const atomic_bool *stop;	  /* stop posting now (signal, error) */
	struct bench_start *start;

	struct bench_samples lat, probe, corrected; /* ns */
	uint64_t msgs, posts, bytes;
	uint64_t start_ns, end_ns; /* first post, last completion */
	uint64_t cpu_ns;
	int error;
	char errmsg[BENCH_ERRMSG_MAX];
	pthread_t tid;
	bool started;
};

struct bench_responder {
	struct bench_qp qp; /* connected, receives posted */
	uint32_t size;
	const atomic_bool *stop;
	uint64_t msgs, bytes, cpu_ns;
	int error;
	char errmsg[BENCH_ERRMSG_MAX];
	pthread_t tid;
	bool started;
};

/*
 * Creates and connects w's loopback probe pair on dev (verb, size and polling of the flow).
 * Responders for the probe's receives are not needed: the worker reposts them itself.
 */
int bench_worker_setup_probe(struct bench_worker *w, struct bench_dev *dev, bool classify,
			     char *err, size_t errlen);
void bench_worker_free(struct bench_worker *w);
void bench_start_init(struct bench_start *s);
/* Lets the waiting workers go, starting lead_ns from now; returns the start. */
uint64_t bench_start_go(struct bench_start *s, uint64_t lead_ns);
void bench_start_destroy(struct bench_start *s);
int bench_worker_start(struct bench_worker *w);
void bench_worker_join(struct bench_worker *w);

int bench_responder_start(struct bench_responder *r);
void bench_responder_join(struct bench_responder *r);

/*
 * Receives the server keeps posted per QP of a SEND or WRITE_IMM flow: twice what can be in
 * flight, and at least BENCH_RECV_MIN, so that a responder thread that is late never makes the
 * QP answer RNR (Soft-RoCE then waits a timer tick, 4 ms or more, before the retry).
 */
#define BENCH_RECV_MIN 1024
uint32_t bench_recv_depth(const struct bench_flow *f);

#endif

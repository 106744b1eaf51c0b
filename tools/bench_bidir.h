/* SPDX-License-Identifier: MIT */
/*
 * justbench --mode bidir, the server's side: every flow also runs from the server to the
 * client, on the same RC QPs and at the same time as the client's, so that both directions
 * carry traffic at once (Liu et al.'s bidirectional latency and bandwidth).
 *
 * The server learns each flow from its canonical specification in HELLO (bench_flow_parse:
 * the same checks as the client's command line), creates its QPs as the client does (a worker
 * per QP, writing into or reading from the client's buffer), lets its workers go on the
 * client's GO, and reports what they did in RESULT (struct bench_wire_reverse per flow).
 * WRITE and READ flows only: no receives are kept posted on either side.
 */
#ifndef JUSTITIA_BENCH_BIDIR_H
#define JUSTITIA_BENCH_BIDIR_H

#include "bench_run.h"
#include "bench_wire.h"

struct bench_bidir {
	struct bench_flow flows[BENCH_FLOWS_MAX]; /* from the client's specifications */
	struct bench_worker *w;			   /* one per QP, flow by flow */
	size_t nw;
	struct bench_start start;
	atomic_bool stop; /* the server was interrupted: stop posting */
	bool going, inited;
};

/*
 * Creates and connects the server's QPs of hello (every flow bidir) on dev, path MTU mtu, QPs
 * classified when classify, and fills acc->qps[] with their numbers.  Then starts the workers,
 * which wait for bench_bidir_go().  0, or -errno with a message in err; bench_bidir_free()
 * either way.
 */
int bench_bidir_setup(struct bench_bidir *b, struct bench_dev *dev, const struct bench_hello *h,
		      int mtu, bool classify, struct bench_accept *acc, char *err, size_t errlen);
/* The client said GO: the workers start lead_ns from now. */
void bench_bidir_go(struct bench_bidir *b, uint64_t lead_ns);
/* Waits for the workers (stopping them first unless they went) and puts each flow's numbers
 * into res->flows[].rev. */
void bench_bidir_finish(struct bench_bidir *b, struct bench_result *res, size_t n_flows);
void bench_bidir_free(struct bench_bidir *b);

#endif

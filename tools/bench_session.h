/* SPDX-License-Identifier: MIT */
/*
 * justbench sessions: one run between a client and a server over an established TCP (or, in
 * local mode, UNIX) connection, following bench_wire.h.  The client creates its QPs, announces
 * the flows, connects to the server's QPs, runs the workers and collects the results; the server
 * creates the peer QPs in its own process and PD, keeps receives posted, and reports its counts.
 */
#ifndef JUSTITIA_BENCH_SESSION_H
#define JUSTITIA_BENCH_SESSION_H

#include "bench_report.h"

#include <stdatomic.h>

#define BENCH_SETUP_TIMEOUT_MS 30000

struct bench_end {
	const char *dev; /* NULL: the first device */
	int port;	 /* device port, 1 usually */
	int gid_index;	 /* -1: automatic */
	bool classify;	 /* call justitia_set_qp_class() when present */
};

/*
 * Runs flows[0..n) (durations resolved, bench_mode_check()ed for mode) over fd and fills
 * res->flows[] and res->n; a sweeping mode (bench_sweep.h) with the settings sweep.  stop ends
 * the flows early (they still report).  0 when the session worked (a flow may still have failed:
 * bench_results_failed()), else -errno with a message in err.
 */
int bench_client_session(const struct bench_end *e, bool rperf, enum bench_mode mode,
			 const struct bench_sweep_cfg *sweep, const struct bench_flow *flows,
			 size_t n, int fd, atomic_bool *stop, struct bench_results *res, char *err,
			 size_t errlen);

/* Serves one client on fd.  0, or -errno with a message in err. */
int bench_server_session(const struct bench_end *e, int fd, const atomic_bool *stop, char *err,
			 size_t errlen);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * justbench's server loop: accepts clients on a listening socket and serves
 * up to @clients of them at once, each session on its own thread with its
 * own verbs resources on the same device (a hot spot: several clients'
 * traffic converging on one NIC, Liu et al.).
 */
#ifndef JUSTITIA_BENCH_SERVE_H
#define JUSTITIA_BENCH_SERVE_H

#include "bench_session.h"

#include <stdio.h>

#define BENCH_SERVE_MAX 64

/*
 * Serves rounds of @clients sessions on @lfd: a round starts the sessions as their clients
 * connect and ends when the last of them is done; @persist: another round, until @stop.  Each
 * session's outcome is a line on @log.  0 when every session of the last round worked, else 1.
 */
int bench_serve(const struct bench_end *e, int lfd, unsigned clients, bool persist,
		atomic_bool *stop, FILE *log);

#endif

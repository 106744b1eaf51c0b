/* SPDX-License-Identifier: MIT */
/* State of the running daemon, main.c's.  Included by main.c and wiring.c,
 * and by the modules that still reach into it: the controller (controller.c,
 * ctrl*.c), qpwatch.c, splitq.c.  Never by ctl*.c: they get struct ctl_env. */
#ifndef JUSTITIAD_H
#define JUSTITIAD_H

#include <ev.h>
#include <stdint.h>

#include "config.h"
#include "controller.h"
#include "flows.h"
#include "version.h"

struct peer_ctx;
struct ctrl;
struct qpwatch;
struct rread;

struct daemon {
	struct ev_loop *loop;
	struct config cfg;
	const char *config_path;
	uint64_t instance;
	uint64_t start_ns;
	struct flows flows;
	struct ctrl_view ctrl;
	struct ctl *ctl;
	struct peer_ctx *peer;        /* the daemon channel (peer.c), or NULL */
	struct ctrl *controller;      /* the isolation controller (controller.c), or NULL */
	struct qpwatch *qpw;          /* the BPF QP watcher (qpwatch.c), or NULL */
	struct rread *rread;          /* remote READ control (rread.c), or NULL */
};

uint64_t daemon_now_ns(void);

#endif

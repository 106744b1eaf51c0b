/* SPDX-License-Identifier: MIT */
/* State of the running daemon, shared by its modules. */
#ifndef JUSTITIAD_H
#define JUSTITIAD_H

#include <ev.h>
#include <stdint.h>

#include "config.h"
#include "flows.h"

#define JUSTITIA_VERSION "0.1.0"

/* What the controller publishes (filled by the isolation controller; until
 * a reference flow runs, "current99_ns" stays 0 = no measurement). */
struct ctrl_view {
	int mode;                     /* enum jst_ctrl_mode */
	uint64_t current99_ns, p50_ns, p999_ns;
	uint64_t safe_util_bps;
	uint64_t samples;
	const char *ref_state;        /* "off", "connecting", "up", "down" */
	char ref_peer[96];
	char ref_error[160];
};

struct peer_ctx;
struct ctrl;
struct qpwatch;

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
};

uint64_t daemon_now_ns(void);

#endif

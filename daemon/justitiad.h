/* SPDX-License-Identifier: MIT */
/* State of the running daemon, shared by its modules. */
#ifndef JUSTITIAD_H
#define JUSTITIAD_H

#include <ev.h>
#include <stdint.h>

#include "config.h"
#include "controller.h"
#include "ctl.h"
#include "flows.h"
#include "splitq.h"
#include "version.h"

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

/* split_peer's lookups (splitq.c) through the control socket's interface. */
static inline void daemon_split_lookup(void *d, const char *gid, uint32_t qpn, ctl_split_cb cb,
				       void *arg)
{
	splitq_lookup(d, gid, qpn, cb, arg);
}

/* What the control socket sees of @d (main.c; the tests that run ctl.c). */
static inline struct ctl_env daemon_ctl_env(struct daemon *d)
{
	return (struct ctl_env){
		.loop = d->loop,
		.cfg = &d->cfg,
		.config_path = d->config_path,
		.instance = d->instance,
		.start_ns = d->start_ns,
		.flows = &d->flows,
		.ctrl = &d->ctrl,
		.controller = &d->controller,
		.qpw = &d->qpw,
		.now_ns = daemon_now_ns,
		.split_lookup = daemon_split_lookup,
		.split_ctx = d,
	};
}

#endif

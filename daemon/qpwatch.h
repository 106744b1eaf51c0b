/* SPDX-License-Identifier: MIT */
/*
 * The QP watcher: a BPF program in the kernel's RDMA core (qpwatch.bpf.c)
 * reports every user QP created or destroyed, by any process, through a ring
 * buffer that the daemon's event loop reads.  The daemon keeps them in a
 * qptable and tells which ones no registered flow manages: processes that
 * use RDMA without the shim.  See docs/qpwatch.md.
 *
 * Never fatal: without BPF permission, BTF, ib_core or a recent enough
 * kernel, or with "qpwatch": false, the watcher is off, says why once in the
 * log and in status, and the daemon works as without it.
 */
#ifndef JUSTITIAD_QPWATCH_H
#define JUSTITIAD_QPWATCH_H

#include <ev.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "qptable.h"

#define QPWATCH_GRACE_MS 1000 /* a new QP's time to be registered by its shim */

struct daemon;
struct qpwatch_bpf;
struct ring_buffer;

struct qpwatch {
	unsigned magic;
	struct daemon *d;
	struct qpwatch_bpf *skel;
	struct ring_buffer *rb;
	ev_io rb_io;
	ev_timer timer;
	struct qptable table;
	bool on;
	bool wait_ib_core;       /* off until ib_core is loaded: the timer retries */
	const char *mode;        /* "fentry" or "kprobe" while on */
	char reason[384];        /* why it is off */
	uint64_t grace_ns;
	uint64_t lost_seen;      /* records the kernel dropped, as of the last resync */
	uint64_t bad_events;     /* records rejected */
	uint64_t last_sweep_ns;
	pid_t self;              /* the daemon's own QPs (reference flow) are not listed */
};

/* Start if the configuration allows it; otherwise, or when it cannot run,
 * stay off with the reason.  Needs d->loop, d->cfg and d->flows. */
void qpwatch_init(struct qpwatch *w, struct daemon *d);
void qpwatch_fini(struct qpwatch *w);
/* After a configuration reload: start or stop as "qpwatch" now says. */
void qpwatch_reconfigure(struct qpwatch *w);

/* The "qpwatch" object of status. */
json_t *qpwatch_status_json(struct qpwatch *w);
/* counts.unmanaged of status: an integer, or null while the watcher is off. */
json_t *qpwatch_unmanaged_json(struct qpwatch *w);
/* Append one "managed": false entry per unmanaged QP to a flows array. */
void qpwatch_append_unmanaged(struct qpwatch *w, json_t *flows);

#endif

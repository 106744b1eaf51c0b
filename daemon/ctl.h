/* SPDX-License-Identifier: MIT */
/* The daemon side of the control socket (docs/protocol.md). */
#ifndef JUSTITIAD_CTL_H
#define JUSTITIAD_CTL_H

#include <ev.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

struct config;
struct ctl;
struct ctrl;
struct ctrl_view;
struct flows;
struct qpwatch;

/* The split QP of a peer's QP, or -1 with @why (split_peer). */
typedef void (*ctl_split_cb)(void *arg, int64_t split_qpn, const char *why);

/* What the control socket sees of the daemon, set up by main.c: pointers
 * into state that outlives the socket. */
struct ctl_env {
	struct ev_loop *loop;
	struct config *cfg;              /* "set" changes the running values */
	const char *config_path;
	uint64_t instance;
	uint64_t start_ns;
	struct flows *flows;
	const struct ctrl_view *ctrl;    /* what the controller publishes */
	struct ctrl *const *controller;  /* the isolation controller, or NULL */
	struct qpwatch *const *qpw;      /* the BPF QP watcher, or NULL */
	uint64_t (*now_ns)(void);
	/* the peer's split QP (splitq.c): calls @cb exactly once, now or later */
	void (*split_lookup)(void *ctx, const char *gid, uint32_t qpn, ctl_split_cb cb,
			     void *arg);
	void *split_ctx;
	/* remote READ control's state (rread.c) for status and flows: an
	 * object, or NULL (off) */
	json_t *(*remote_read)(void *ctx);
	void *remote_ctx;
};

struct ctl_client {
	unsigned magic;
	int fd;
	ev_io rw, ww;
	struct ctl *ctl;
	struct proto_linebuf in;
	char *out;
	size_t out_len, out_cap;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	struct proc *proc;            /* set by "hello" from a shim */
	int closing;                  /* close once the output is flushed */
	int admin;                    /* uid 0 or the daemon's own uid */
	int reserved;                 /* in the administrators' reserve: no hello */
	uint64_t serial;              /* to find it again for a late reply */
	uint64_t active_ns;           /* accepted, or its last complete request */
	uint64_t partial_ns;          /* an incomplete request pending since, 0: none */
	uint64_t stuck_ns;            /* unsent replies without progress since, 0: none */
	struct ctl_client *next;      /* clients, or graveyard once closed */
};

struct ctl {
	struct ctl_env env;
	int lfd;
	ev_io lw;
	char path[108];
	struct ctl_client *clients;
	size_t n_clients;
	size_t n_reserved;            /* of n_clients, in the administrators' reserve */
	size_t out_total;             /* unsent reply bytes of all clients */
	uint64_t next_serial;
	ev_timer idle_w;              /* closes idle, stalled and unread connections */
	struct {
		uint64_t last_ns;     /* last logged */
		uint64_t suppressed;  /* not logged since */
	} warn[4];                    /* rate limits of repeated warnings, per kind */
	/* closed clients, freed from reap_w once whoever closed them (a read
	 * loop in the middle of dispatching) has returned */
	struct ctl_client *graveyard;
	ev_timer reap_w;
};

/* Create the runtime dir and the socket (refusing to start if another
 * instance answers on it), and start accepting.  0 or -errno (logged). */
int ctl_open(struct ctl *c, const struct ctl_env *env);
/* Disconnect everybody, close and unlink the socket. */
void ctl_close(struct ctl *c);

#endif

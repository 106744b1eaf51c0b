/* SPDX-License-Identifier: MIT */
/* The direct window: what a QP posting straight to the provider (pace mode
 * off, libjustitia(7)) may keep in the NIC's send queue.
 *
 * Without it a lone bandwidth flow fills the send queue (ib_write_bw -s 1M:
 * 128 MiB), and a latency flow that registers later waits behind all of it,
 * unpaced, however fast the shim starts pacing the flow's next posts.  With
 * it, at most shim_window_bytes (JUSTITIA_WINDOW, 4 MiB by default) of the
 * QP's direct posts are in flight; what would exceed it waits in the QP's
 * backlog (drain.c) until the NIC has completed enough.  A paced QP in pace
 * mode share (no latency flow, flows compete) posts its whole WRs through
 * the window too, each after its token: so what it posts is what the link
 * carries, within the window (pacectl.c, decide_mode()).
 *
 * The shim learns that from tags: every shim_window_bytes / 4 bytes, one
 * WR the application posts goes out signaled with the shim's wr_id (wrpost.h
 * owns the value); its completion (in order with everything before it on
 * the send queue) comes back through the application's own poll, where the
 * shim gives the completion its wr_id back, or drops it when the
 * application had not asked for one and it succeeded (an error completion
 * is generated natively for an unsignaled WR too).  So the application's
 * CQ holds at most a few extra completions per QP (the tags in flight).
 *
 * The state is guarded by the QP's lock (registry.h).  These functions do no
 * I/O: they decide and account. */
#ifndef JUSTITIA_SHIM_WINDOW_H
#define JUSTITIA_SHIM_WINDOW_H

#include <stdatomic.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define SHIM_WINDOW_RING 16              /* tags in flight per QP, at most */
#define SHIM_WINDOW_DEFAULT (4ull << 20)
#define SHIM_WINDOW_BLIND_NS 2000000000ull /* held this long, no tag back */

struct shim_window_tag {
	uint64_t wr_id;      /* the application's */
	uint64_t at;         /* posted bytes up to and including it */
	int app_signaled;    /* the application asked for its completion */
};

struct shim_window {
	_Atomic int on;      /* this QP's direct posts are windowed */
	int blind;           /* its tags stopped coming back: not any more */
	uint64_t posted;     /* bytes posted while windowed (cumulative) */
	uint64_t done;       /* ... completed: the last tag's */
	uint64_t tagged_at;  /* posted at the last tag */
	uint64_t wait_since; /* a WR has waited since (0: none waits) */
	unsigned head, n;    /* the tags in flight, oldest first */
	struct shim_window_tag ring[SHIM_WINDOW_RING];
};

/* JUSTITIA_WINDOW: bytes, 0 = no window (preload.c). */
extern uint64_t shim_window_bytes;
/* Tags in flight in the process: the poll path looks at completions. */
extern _Atomic unsigned shim_window_tags;

/* Parse JUSTITIA_WINDOW (NULL: the default); -EINVAL for a bad value. */
int shim_window_parse(const char *s, uint64_t *out);

/* May a WR of @bytes go now?  1 yes; 0 when it must wait for a tag's
 * completion (sets wait_since).  After SHIM_WINDOW_BLIND_NS of waiting the
 * QP goes blind (1 from then on; the caller logs it). */
int shim_window_admit(struct shim_window *w, uint64_t bytes, uint64_t now);
/* Must the WR of @bytes about to go be a tag? */
int shim_window_want_tag(const struct shim_window *w, uint64_t bytes);
/* Account a WR of @bytes about to be posted (before the provider sees it:
 * its completion may be polled at once); @tag: it is one, of the
 * application's @wr_id, @app_signaled. */
void shim_window_post(struct shim_window *w, uint64_t bytes, int tag, uint64_t wr_id,
		      int app_signaled);
/* Undo shim_window_post() for a WR the provider refused. */
void shim_window_unpost(struct shim_window *w, uint64_t bytes, int tag);
/* A tag's completion: gives @wc the application's wr_id back; 1 when the
 * application must not see it. */
int shim_window_complete(struct shim_window *w, struct ibv_wc *wc);
/* The QP was reset: nothing is in flight any more, no completion comes. */
void shim_window_reset(struct shim_window *w);

#endif

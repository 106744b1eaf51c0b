/* SPDX-License-Identifier: MIT */
/* The QPs of the process that have a backlog (WRs the pacer holds back):
 * a list under its own lock, a counter the post and poll paths read without
 * it, and the eventfd that wakes the progress thread when a backlog starts.
 * The pacer's bottom module, with the timing every pacer module shares. */
#ifndef JUSTITIA_SHIM_BACKLOGS_H
#define JUSTITIA_SHIM_BACKLOGS_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdint.h>

#include "registry.h"

#define APP_POLL_NS 1000000ull       /* the app polled this recently: it paces */
#define LAZY_NS 2000000ull           /* a token due sooner: no split CQ event */
#define SPIN_POLLS 64                /* polls of one CQ by one thread ... */
#define SPIN_WITHIN_NS APP_POLL_NS   /* ... within this: it spins on that CQ */

/* QPs with a backlog; ibv_poll_cq looks at this one counter. */
extern _Atomic unsigned shim_pace_queued;

/* Whether the application advanced @q's backlog from its own
 * ibv_poll_cq within APP_POLL_NS: while it keeps doing so, the progress
 * thread neither arms @q's split CQ, nor wakes for its tokens, nor is woken
 * when its backlog starts again (paper Appendix D: enforcement where the
 * app already runs); it only looks a little after each token is due, in
 * case the application stopped polling. */
static inline int shim_app_polling(const struct shim_qp *q, uint64_t now)
{
	uint64_t t = atomic_load_explicit(&q->app_poll_ns, memory_order_relaxed);

	return t && now - t < APP_POLL_NS;
}

/* An application's ibv_poll_cq of @cq (not the shim's own): a thread that
 * polls one CQ SPIN_POLLS times within SPIN_WITHIN_NS spins on it, and is
 * noted as such (a thread-local count per poll, a clock read every
 * SPIN_POLLS polls).  A throughput flow's backlog starts and empties
 * hundreds of times a second; its application's polls drain it, but they
 * count as "polling" (shim_app_polling) only while it is there, so each
 * new backlog woke the progress thread (0.6 ms of a vCPU each under TCG:
 * 440 wakes a second took a quarter of a CPU from a 64 B flow).  An
 * application that polls once per completion event is never noted. */
void backlogs_cq_polled(const struct ibv_cq *cq);
/* Whether an application thread was noted spinning on @cq within
 * APP_POLL_NS before @now. */
int backlogs_cq_spun(const struct ibv_cq *cq, uint64_t now);

/* When the progress thread, which just serviced busy @q at @now, looks at
 * it again, given its next token is @due (0: none): @due when the
 * application does not poll; while it polls, only in case it stops, a
 * little after the token is due (APP_POLL_NS later: not every
 * APP_POLL_NS, a 1 MiB token at tens of MB/s is due every few tens of
 * ms), or after APP_POLL_NS when it waits for completions; never while it
 * spins on @q's send CQ (0: the thread's tick, every 10 ms while a QP is
 * paced, 50 ms in pace mode share, is the look in case it stops).
 * Called with q->lock held. */
uint64_t backlogs_next_look(const struct shim_qp *q, uint64_t due, uint64_t now);

/* @q's backlog started (wakes the thread unless the application polls
 * it, or spins on its send CQ) / is empty.  Called with q->lock held. */
void backlogs_add(struct shim_qp *q, uint64_t now);
void backlogs_remove(struct shim_qp *q);
/* Up to @max QPs with a backlog (those completing on @cq, unless NULL)
 * into @out; with @try_only, none when the list's lock is taken. */
size_t backlogs_list(struct shim_qp **out, size_t max, const struct ibv_cq *cq, int try_only);
/* The progress thread's round: the first @max QPs with a backlog into
 * @out; when more remain, those taken go to the end of the list, so that
 * the next round starts with the ones left out (with more than @max
 * backlogs the same @max would otherwise be served for ever). */
size_t backlogs_take_round(struct shim_qp **out, size_t max);
/* The eventfd backlogs_add() writes (-1: none). */
void backlogs_set_wake(int efd);
/* fork(): the child has no backlog and no thread. */
void backlogs_atfork_child(void);

#endif

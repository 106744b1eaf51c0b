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

/* @q's backlog started (wakes the thread unless the application polls) /
 * is empty.  Called with q->lock held. */
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

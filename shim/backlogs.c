// SPDX-License-Identifier: MIT
/* The process's QPs with a backlog (see backlogs.h): the list the progress
 * thread and the application's polls drain, its count, and the wake-up of
 * the thread when a backlog starts.  Pacer layer; may call: the per-QP
 * record (registry.h) only.  Lock order: q->lock -> this list's lock. */
#include "backlogs.h"

#include <unistd.h>

static struct {
	pthread_mutex_t lock;
	struct shim_qp *head;            /* through busy_next */
	int efd;                         /* the progress thread's eventfd, or -1 */
} bl = { .lock = PTHREAD_MUTEX_INITIALIZER, .efd = -1 };

_Atomic unsigned shim_pace_queued;

void backlogs_add(struct shim_qp *q, uint64_t now)
{
	uint64_t one = 1;

	if (q->busy)
		return;
	q->busy = 1;
	q->busy_since = now;
	q->held_since = 0;
	pthread_mutex_lock(&bl.lock);
	q->busy_next = bl.head;
	bl.head = q;
	atomic_fetch_add_explicit(&shim_pace_queued, 1, memory_order_release);
	pthread_mutex_unlock(&bl.lock);
	/* (an application that polls drains it itself; the thread looks
	 * within TICK_NS anyway) */
	if (!shim_app_polling(q, now) && bl.efd >= 0 && write(bl.efd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the thread is awake anyway */
	}
}

void backlogs_remove(struct shim_qp *q)
{
	struct shim_qp **pp;

	if (!q->busy)
		return;
	pthread_mutex_lock(&bl.lock);
	for (pp = &bl.head; *pp; pp = &(*pp)->busy_next)
		if (*pp == q) {
			*pp = q->busy_next;
			atomic_fetch_sub_explicit(&shim_pace_queued, 1, memory_order_release);
			break;
		}
	pthread_mutex_unlock(&bl.lock);
	q->busy = 0;
	q->busy_next = NULL;
}

size_t backlogs_list(struct shim_qp **out, size_t max, const struct ibv_cq *cq, int try_only)
{
	size_t n = 0;

	if (try_only) {
		if (pthread_mutex_trylock(&bl.lock))
			return 0;
	} else {
		pthread_mutex_lock(&bl.lock);
	}
	for (struct shim_qp *q = bl.head; q && n < max; q = q->busy_next)
		if (!cq || q->qp->send_cq == cq)
			out[n++] = q;
	pthread_mutex_unlock(&bl.lock);
	return n;
}

size_t backlogs_take_round(struct shim_qp **out, size_t max)
{
	struct shim_qp *q, *last = NULL;
	size_t n = 0;

	pthread_mutex_lock(&bl.lock);
	for (q = bl.head; q && n < max; q = q->busy_next) {
		out[n++] = q;
		last = q;
	}
	if (q && last) {
		/* q is the first left out: it heads the list, the n taken
		 * follow the tail */
		struct shim_qp *tail = q;

		while (tail->busy_next)
			tail = tail->busy_next;
		tail->busy_next = bl.head;
		last->busy_next = NULL;
		bl.head = q;
	}
	pthread_mutex_unlock(&bl.lock);
	return n;
}

void backlogs_set_wake(int efd)
{
	bl.efd = efd;
}

void backlogs_atfork_child(void)
{
	pthread_mutex_init(&bl.lock, NULL);
	bl.head = NULL;
	bl.efd = -1; /* the parent's, shared: leave it */
	atomic_store(&shim_pace_queued, 0);
}

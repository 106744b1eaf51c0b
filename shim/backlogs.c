// SPDX-License-Identifier: MIT
/* The process's QPs with a backlog (see backlogs.h): the list the progress
 * thread and the application's polls drain, its count, the CQs the
 * application spins on, and the wake-up of the thread when a backlog
 * starts.  Pacer layer; may call: the per-QP record (registry.h), the
 * clock.  Lock order: q->lock -> this list's lock. */
#include "backlogs.h"

#include <unistd.h>

#include "vclock.h"

static struct {
	pthread_mutex_t lock;
	struct shim_qp *head;            /* through busy_next */
	int efd;                         /* the progress thread's eventfd, or -1 */
} bl = { .lock = PTHREAD_MUTEX_INITIALIZER, .efd = -1 };

_Atomic unsigned shim_pace_queued;

/* ---- the CQs application threads spin on */

#define SPIN_SLOTS 16 /* CQs noted at once (the least recent gives way) */
#define SPIN_TL 4     /* CQs one thread counts at once (send and recv CQs) */

/* (a lost race between two threads loses a note: the progress thread is
 * then woken as without it) */
static struct {
	_Atomic(const struct ibv_cq *) cq;
	_Atomic uint64_t ns;
} spun[SPIN_SLOTS];

static __thread struct {
	const struct ibv_cq *cq;
	unsigned polls;
	uint64_t since;                  /* the last clock read (0: none) */
} tl_spin[SPIN_TL];
static __thread unsigned tl_spin_next;

static void spin_note(const struct ibv_cq *cq, uint64_t now)
{
	size_t oldest = 0;

	for (size_t i = 0; i < SPIN_SLOTS; i++) {
		if (atomic_load_explicit(&spun[i].cq, memory_order_relaxed) == cq) {
			atomic_store_explicit(&spun[i].ns, now, memory_order_relaxed);
			return;
		}
		if (atomic_load_explicit(&spun[i].ns, memory_order_relaxed) <
		    atomic_load_explicit(&spun[oldest].ns, memory_order_relaxed))
			oldest = i;
	}
	/* (the slot's time first: a reader never pairs this CQ with the
	 * old one's fresh time for long, and a stale pairing costs one wake) */
	atomic_store_explicit(&spun[oldest].ns, 0, memory_order_relaxed);
	atomic_store_explicit(&spun[oldest].cq, cq, memory_order_relaxed);
	atomic_store_explicit(&spun[oldest].ns, now, memory_order_relaxed);
}

void backlogs_cq_polled(const struct ibv_cq *cq)
{
	unsigned i;
	uint64_t now;

	for (i = 0; i < SPIN_TL && tl_spin[i].cq != cq; i++)
		;
	if (i == SPIN_TL) {
		i = tl_spin_next++ % SPIN_TL;
		tl_spin[i].cq = cq;
		tl_spin[i].polls = 0;
		tl_spin[i].since = 0;
	}
	if (++tl_spin[i].polls < SPIN_POLLS)
		return;
	tl_spin[i].polls = 0;
	now = shim_now_ns();
	if (tl_spin[i].since && now - tl_spin[i].since < SPIN_WITHIN_NS)
		spin_note(cq, now);
	tl_spin[i].since = now;
}

int backlogs_cq_spun(const struct ibv_cq *cq, uint64_t now)
{
	if (!cq)
		return 0;
	for (size_t i = 0; i < SPIN_SLOTS; i++)
		if (atomic_load_explicit(&spun[i].cq, memory_order_relaxed) == cq) {
			uint64_t t = atomic_load_explicit(&spun[i].ns, memory_order_relaxed);

			return t && now >= t && now - t < APP_POLL_NS;
		}
	return 0;
}

/* Whether @q's application spins on its send CQ. */
static int send_cq_spun(const struct shim_qp *q, uint64_t now)
{
	return q->qp && backlogs_cq_spun(q->qp->send_cq, now);
}

uint64_t backlogs_next_look(const struct shim_qp *q, uint64_t due, uint64_t now)
{
	if (!shim_app_polling(q, now))
		return due;
	if (send_cq_spun(q, now))
		return 0;
	return (due > now ? due : now) + APP_POLL_NS;
}

/* ---- the list */

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
	 * within a tick anyway) */
	if (shim_app_polling(q, now) || send_cq_spun(q, now))
		return;
	if (bl.efd >= 0 && write(bl.efd, &one, sizeof(one)) < 0) {
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

// SPDX-License-Identifier: MIT
#include "inject.h"

#include <pthread.h>
#include <stdlib.h>

struct owed {
	struct owed *next;
	struct ibv_cq *cq;
	struct ibv_wc wc;
};

_Atomic unsigned shim_inject_pending;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct owed *head, **tail = &head;

void shim_inject_wc(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	struct owed *o = malloc(sizeof(*o));

	if (!o)
		return; /* out of memory: nothing better to do */
	o->next = NULL;
	o->cq = cq;
	o->wc = *wc;
	pthread_mutex_lock(&lock);
	*tail = o;
	tail = &o->next;
	atomic_fetch_add_explicit(&shim_inject_pending, 1, memory_order_release);
	pthread_mutex_unlock(&lock);
}

int shim_inject_take(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct owed **pp, *o;
	int got = 0;

	pthread_mutex_lock(&lock);
	for (pp = &head; (o = *pp) && got < n;) {
		if (o->cq != cq) {
			pp = &o->next;
			continue;
		}
		wc[got++] = o->wc;
		*pp = o->next;
		if (tail == &o->next)
			tail = pp;
		free(o);
		atomic_fetch_sub_explicit(&shim_inject_pending, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&lock);
	return got;
}

void shim_inject_atfork_child(void)
{
	/* owed on the parent's CQs, under a lock a vanished thread may hold */
	pthread_mutex_init(&lock, NULL);
	head = NULL;
	tail = &head;
	atomic_store(&shim_inject_pending, 0);
}

// SPDX-License-Identifier: MIT
/* Completions the shim owes the application (see inject.h).
 *
 * Each owed completion waits for a marker: a zero-length signaled SEND the
 * shim posts on the application's own QP once that QP is in the error state
 * (the provider flushes it, in send-queue order, behind every WR posted
 * before).  Its flush completion is a real CQE on the application's CQ, so
 * a completion channel armed on that CQ fires, and the poll wrappers (ops.c,
 * cqex.c) replace it by the owed completion where it stands.  A QP that is
 * not in the error state cannot take a marker without side effects (a SEND
 * would reach the peer): its owed completions are ready at once and come
 * after whatever the provider returns in the same poll.
 * Per-QP state layer; may call: the record (registry.h), log. */
#include "inject.h"
#include "log.h"
#include "registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct owed {
	struct owed *next;
	struct ibv_cq *cq;
	uint64_t cookie;       /* the marker's wr_id */
	int ready;             /* no marker: deliver at the next poll */
	struct ibv_wc wc;
};

_Atomic unsigned shim_inject_pending;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct owed *head, **tail = &head;
static _Atomic uint64_t next_cookie;

/* Markers' wr_ids: a per-process random-looking sequence, so that one
 * equal to an application's wr_id on the same QP is practically impossible
 * (and both the QP and the wr_id must match). */
static uint64_t cookie(void)
{
	uint64_t x = atomic_fetch_add_explicit(&next_cookie, 1, memory_order_relaxed) +
		     ((uint64_t)getpid() << 40) + 0x4a53544a494e4a00ull;

	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dull;
	return x ^ (x >> 33);
}

/* Post the marker of @o on its QP; 0 when the provider took it. */
static int post_marker(struct ibv_cq *cq, const struct owed *o)
{
	struct shim_qp *q = shim_qp_find(cq->context, o->wc.qp_num);
	struct ibv_send_wr wr = { .wr_id = o->cookie, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad = NULL;

	/* libibverbs records the state of every successful ibv_modify_qp */
	if (!q || !q->qp || q->qp->send_cq != cq || q->qp->state != IBV_QPS_ERR)
		return -1;
	return q->sctx->post_send(q->qp, &wr, &bad) ? -1 : 0;
}

void shim_inject_wc(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	struct owed *o = malloc(sizeof(*o));

	if (!o)
		return; /* out of memory: nothing better to do */
	o->next = NULL;
	o->cq = cq;
	o->wc = *wc;
	o->cookie = cookie();
	o->ready = 0;
	/* listed before the marker is posted: a poll in another thread may
	 * see its flush at once */
	pthread_mutex_lock(&lock);
	*tail = o;
	tail = &o->next;
	atomic_fetch_add_explicit(&shim_inject_pending, 1, memory_order_release);
	pthread_mutex_unlock(&lock);
	if (post_marker(cq, o)) {
		pthread_mutex_lock(&lock);
		o->ready = 1;
		pthread_mutex_unlock(&lock);
	}
}

static void unlink_locked(struct owed **pp, struct owed *o)
{
	*pp = o->next;
	if (tail == &o->next)
		tail = pp;
	free(o);
	atomic_fetch_sub_explicit(&shim_inject_pending, 1, memory_order_relaxed);
}

int shim_inject_is_marker(struct ibv_cq *cq, uint64_t wr_id, uint32_t qp_num, struct ibv_wc *out)
{
	struct owed **pp, *o;
	int found = 0;

	pthread_mutex_lock(&lock);
	for (pp = &head; (o = *pp); pp = &o->next) {
		if (o->cq != cq || o->ready || o->cookie != wr_id || o->wc.qp_num != qp_num)
			continue;
		*out = o->wc;
		unlink_locked(pp, o);
		found = 1;
		break;
	}
	pthread_mutex_unlock(&lock);
	return found;
}

int shim_inject_fix(struct ibv_cq *cq, struct ibv_wc *wc, int got, int n)
{
	struct owed **pp, *o;

	for (int i = 0; i < got; i++)
		shim_inject_is_marker(cq, wc[i].wr_id, wc[i].qp_num, &wc[i]);
	if (got >= n)
		return got;
	pthread_mutex_lock(&lock);
	for (pp = &head; (o = *pp) && got < n;) {
		if (o->cq != cq || !o->ready) {
			pp = &o->next;
			continue;
		}
		wc[got++] = o->wc;
		unlink_locked(pp, o);
	}
	pthread_mutex_unlock(&lock);
	return got;
}

int shim_inject_take_ready(struct ibv_cq *cq, struct ibv_wc *out)
{
	struct owed **pp, *o;
	int got = 0;

	pthread_mutex_lock(&lock);
	for (pp = &head; (o = *pp); pp = &o->next) {
		if (o->cq != cq || !o->ready)
			continue;
		*out = o->wc;
		unlink_locked(pp, o);
		got = 1;
		break;
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

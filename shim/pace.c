// SPDX-License-Identifier: MIT
/* The paced post path (see pace.h): a post on a QP that is not direct
 * copies what cannot go now into the QP's backlog, in order, and returns at
 * once; the completions of the shim's own barrier and window tags come back
 * here from the application's poll.  Pacer layer, its top with pacectl.c;
 * may call: drain, wrpost, order, backlogs, the splitter's entry points
 * (splitjob_prepare), the daemon link's view (client.h), the per-QP state
 * (registry, stats, classify, window), log.
 * Locks: registry lock -> q->lock -> backlog-list lock, never the other way. */
#include "pace.h"

#include <errno.h>
#include <time.h>

#include "backlogs.h"
#include "bucket.h"
#include "vclock.h"
#include "drain.h"
#include "order.h"
#include "splitjob.h"
#include "wrpost.h"

/* Pay for @wr from the flow's bucket at @now: 0 taken, else the ns to
 * wait. */
static uint64_t take_token(struct jst_flow_stats *st, int cls, const struct jst_flow_ctl *slot,
			   const struct ibv_send_wr *wr, uint64_t now)
{
	uint64_t cost = wrpost_cost_ns(cls, slot, wrpost_bytes(wr));

	return bucket_take(&st->bucket_vtime_ns, now, cost, wrpost_post_burst(cls, cost));
}

/* q->lock for the application's own call: a wait is counted (stats.h
 * lock_waits) */
static void lock_for_app(struct shim_qp *q)
{
	if (!pthread_mutex_trylock(&q->lock))
		return;
	atomic_fetch_add_explicit(&q->st.lock_waits, 1, memory_order_relaxed);
	pthread_mutex_lock(&q->lock);
}

static int pace_post(struct shim_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad,
		     int wr_api)
{
	const struct jst_flow_ctl *slot = atomic_load_explicit(&q->slot, memory_order_acquire);
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	int cls = atomic_load_explicit(&q->cls, memory_order_relaxed);
	uint64_t now = shim_now_ns();
	struct ibv_send_wr *first;
	int rc = 0;

	*bad = NULL;
	lock_for_app(q);
	first = wr;
	if (wr_api && wrpost_app_room(q) < wrpost_count(wr)) {
		/* an ibv_wr_* batch is all or nothing */
		rc = ENOMEM;
		*bad = wr;
		wr = NULL;
	}
	for (; wr; wr = wr->next) {
		struct pend_wr *p;

		int kind = SPLITMSG_ONE_SIDED, paid = 0, win_wait = 0;
		uint32_t chunk = wrpost_split_size(q, slot, wr, &kind);
		/* (direct changes only under q->lock, held here) */
		int direct = atomic_load_explicit(&q->direct, memory_order_relaxed);
		int paced = !direct && slot && st; /* its WRs take tokens */

		/* The application may have max_send_wr WRs outstanding; the
		 * provider holds some, the backlog the others.  More than its
		 * send queue could take fails as it would natively. */
		if (!wrpost_app_room(q)) {
			rc = ENOMEM;
			*bad = wr;
			break;
		}
		/* nothing queued ahead, not split, and a token now: straight to
		 * the provider */
		if (!q->bl_head && !chunk && (!paced || !take_token(st, cls, slot, wr, now))) {
			struct ibv_send_wr one = *wr;
			uint64_t due;

			one.next = NULL;
			rc = wrpost_windowed_qp(q) ? wrpost_windowed(q, &one, wr_api, now, &due)
					  : wrpost_one(q, &one, wr_api);
			if (rc == -EAGAIN) {
				/* it waits in the backlog, below, for the
				 * window; a paced QP's token is taken */
				rc = 0;
				win_wait = 1;
				paid = paced;
			} else if (shim_no_room(rc)) {
				rc = 0; /* the same, already paid for */
				paid = 1;
			} else if (rc) {
				*bad = wr;
				break;
			} else {
				continue;
			}
		}
		p = wrpost_copy(wr);
		if (!p) {
			rc = ENOMEM;
			*bad = wr;
			break;
		}
		p->wr_api = wr_api;
		p->paid = (uint8_t)paid;
		/* (a direct QP's wait, or a paced one's for its window, is
		 * for the NIC, not for a token) */
		if (wrpost_windowed_qp(q) && direct)
			win_wait = 1;
		atomic_fetch_add_explicit(win_wait ? &q->st.window_held : &q->st.held, 1,
					  memory_order_relaxed);
		if (chunk)
			splitjob_prepare(p, chunk, kind);
		if (q->bl_tail)
			q->bl_tail->next = p;
		else
			q->bl_head = p;
		q->bl_tail = p;
		q->bl_len++;
		backlogs_add(q, now);
	}
	if (atomic_load_explicit(&q->classify.on, memory_order_relaxed))
		shim_qp_classify_post(q, first, *bad);
	/* post at once what is due now (the first chunks of a split message);
	 * the rest follows from the progress thread or the app's polling */
	if (q->bl_head)
		drain_locked(q, now);
	else
		drain_queued_locked(q, now);
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int shim_pace_post(struct shim_qp *q, struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad)
{
	int rc = pace_post(q, wr, bad, 0);

	/* one call, however many WRs and whenever they reach the provider */
	stats_account_call(&q->st, rc);
	return rc;
}

int shim_pace_post_wr_api(struct shim_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return pace_post(q, wr, bad, 1);
}

int shim_pace_when_idle(struct shim_qp *q, int (*fn)(void *), void *arg)
{
	uint64_t nap = 20000, start = shim_now_ns();
	int rc;

	pthread_mutex_lock(&q->lock);
	while (q->bl_head) {
		uint64_t now = shim_now_ns(), due, left;
		struct timespec ts = { 0, 0 };

		due = drain_service_locked(q, now);
		if (!q->bl_head)
			break;
		/* (a virtual clock does not move while we sleep) */
		if (now - start >= SHIM_IDLE_WAIT_NS || shim_vclock_virtual()) {
			pthread_mutex_unlock(&q->lock);
			return ENOMEM; /* as a full send queue: nothing posted */
		}
		pthread_mutex_unlock(&q->lock);
		left = start + SHIM_IDLE_WAIT_NS - now;
		if (nap > left)
			nap = left;
		ts.tv_nsec = (long)(due > now && due - now < nap ? due - now : nap);
		nanosleep(&ts, NULL);
		if (nap < 1000000)
			nap *= 2;
		pthread_mutex_lock(&q->lock);
	}
	rc = fn(arg);
	pthread_mutex_unlock(&q->lock);
	return rc;
}

void shim_pace_charge(struct shim_qp *q, uint64_t wrs, uint64_t bytes)
{
	const struct jst_flow_ctl *slot = atomic_load_explicit(&q->slot, memory_order_acquire);
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	int cls = atomic_load_explicit(&q->cls, memory_order_relaxed);
	uint64_t now = shim_now_ns(), cost, v, nv, floor;

	if (!slot || !st || atomic_load_explicit(&q->direct, memory_order_relaxed) || !wrs)
		return;
	cost = cls == JST_CLASS_THROUGHPUT ? wrs * wrpost_cost_ns(cls, slot, 0)
					   : wrpost_cost_ns(cls, slot, bytes);
	floor = now > WRPOST_BURST_NS ? now - WRPOST_BURST_NS : 0;
	v = atomic_load_explicit(&st->bucket_vtime_ns, memory_order_relaxed);
	do {
		nv = (v < floor ? floor : v) + cost;
	} while (!atomic_compare_exchange_weak_explicit(&st->bucket_vtime_ns, &v, nv,
							memory_order_acq_rel, memory_order_relaxed));
}

void shim_pace_send_done(struct shim_qp *q, int success)
{
	lock_for_app(q);
	shim_sq_completed(&q->sq, success);
	/* the flow's work is all done: no longer queued (a clock read only
	 * then) */
	if (q->sq.queued_since && !q->bl_head && !shim_sq_held(&q->sq))
		drain_queued_locked(q, shim_now_ns());
	pthread_mutex_unlock(&q->lock);
}

int shim_pace_barrier_done(struct shim_qp *q, const struct ibv_wc *wc)
{
	if (wc->wr_id != order_barrier_tag(q))
		return 0;
	pthread_mutex_lock(&q->lock);
	order_barrier_back(q);
	/* what waited for it goes now, from this poll */
	if (q->busy)
		drain_service_locked(q, shim_now_ns());
	pthread_mutex_unlock(&q->lock);
	return 1;
}

int shim_pace_window_done(struct shim_qp *q, struct ibv_wc *wc)
{
	int hide;

	pthread_mutex_lock(&q->lock);
	hide = shim_window_complete(&q->win, wc);
	/* what waited for it goes now, from this poll */
	if (q->busy)
		drain_service_locked(q, shim_now_ns());
	pthread_mutex_unlock(&q->lock);
	return hide;
}

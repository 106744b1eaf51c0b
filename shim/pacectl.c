// SPDX-License-Identifier: MIT
/* Pacer control (see pacectl.h): whether each QP is direct, paced or
 * windowed, from its class and the daemon's slot; the progress thread that
 * re-decides that every TICK_NS (IDLE_TICK_NS while no QP is paced), posts
 * backlogs when tokens are due and reaps split completions; and QP resets,
 * destruction and fail-open.  One progress thread per process sleeps in
 * epoll on a timerfd (next token due or next tick), an eventfd (a backlog
 * appeared) and the split QPs' completion channels: no core spins.  Pacer layer, its top with pace.c;
 * may call: drain, backlogs, wrpost (the pace mode), the daemon link
 * (client.c: poll, report a class), the per-QP state (registry, classify,
 * window, sq), log. */
#include "pacectl.h"

#include <errno.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "backlogs.h"
#include "vclock.h"
#include "client.h"
#include "drain.h"
#include "log.h"
#include "slot.h"
#include "vops.h"
#include "wrpost.h"

#define TICK_NS 10000000ull          /* re-read grants, check the daemon */
/* The tick while no QP of the process is paced and nothing is queued:
 * then the tick only notices a QP idle since a mode change (a posting QP
 * sees it on its post), a daemon that went away (direct QPs do not care)
 * or came back (looked for every second), and reports the classifier's
 * verdicts.  A wake-up costs more than it seems where the "NIC" is the
 * host's CPUs: on Soft-RoCE under TCG a lone direct 64 B ib_write_bw's
 * progress thread used 0.45-0.53 s of CPU in 8 s at 100 ticks a second
 * (0.6 ms each, with nothing to do), and 0.9-1.4 s in 20 s with no
 * daemon at all (session 21). */
#define IDLE_TICK_NS 100000000ull
/* The tick while QPs are paced in pace mode share (no latency flow to
 * protect: grants move once a 250 ms share window, and a post reads its
 * grant from the slot itself): each QP's posts and its application's
 * polls see a new pace mode themselves (shim_pace_recheck()), so the tick
 * is left the daemon's liveness, a QP that neither posts nor polls, and
 * the look at a backlog whose application spins (backlogs_next_look()).
 * On Soft-RoCE under TCG a wake-up costs about 1 ms of a vCPU, most of it
 * in the scheduler: 100 ticks a second in each of two paced processes and
 * two daemons was a fifth of a vCPU taken from the flows (session 25). */
#define SHARE_TICK_NS 50000000ull
#define EV_WAKE 1                    /* epoll tags; anything larger is a QP */
#define EV_TIMER 2

static struct {
	pid_t pid;                       /* process whose thread runs */
	int efd, tfd, ep;
	pthread_t th;
	_Atomic pid_t started;           /* pid once its thread runs */
	int external;                    /* shim_pace_set_external(): no thread */
	uint64_t next_tick;              /* the tick's work is due then */
	uint64_t armed_at;               /* the timer's expiry (the thread's) */
	_Atomic int paced;               /* the last tick found a paced QP */
	_Atomic int tick_now;            /* a QP became paced: tick at once */
} pg = { .efd = -1, .tfd = -1, .ep = -1 };

/* JUSTITIA_STATS "pacer" (stats.h) */
static _Atomic uint64_t n_wakeups, n_thread_drains, n_poll_drains;
/* what woke the thread (several at once count in each) */
static _Atomic uint64_t n_kick_wakes, n_timer_wakes, n_event_wakes;

int shim_poll_yield = 1;

static int daemon_alive(const struct jst_flow_ctl *slot)
{
	const struct jst_shm_global *g = shim_client_global();
	uint64_t hb;

	if (!g || !slot)
		return 0;
	if (!(atomic_load_explicit(&g->flags, memory_order_acquire) & JST_G_RUNNING))
		return 0;
	hb = atomic_load_explicit(&g->heartbeat_ns, memory_order_relaxed);
	/* the same age as client.c's: between 1 and 2 s of a busy daemon's
	 * silence the QPs went direct (unpaced) while the client still
	 * called it alive */
	return hb + JST_HEARTBEAT_STALE_NS > shim_now_ns();
}

/* @q's slot if the daemon manages it as a flow the shim may hold back: an
 * RC QP, not latency, the daemon alive and the slot still @q's flow's (not
 * freed or recycled for another flow, shim/slot.h); else NULL. */
static const struct jst_flow_ctl *managed_slot(struct shim_qp *q)
{
	const struct jst_flow_ctl *slot = atomic_load_explicit(&q->slot, memory_order_acquire);
	struct shim_slot_view v;

	if (!slot || atomic_load_explicit(&q->cls, memory_order_relaxed) == JST_CLASS_LATENCY ||
	    q->type != IBV_QPT_RC || !daemon_alive(slot) ||
	    shim_slot_read(slot, q->flow_id, &v) == -ESTALE)
		return NULL;
	return slot;
}

/* Paced means: managed (@slot, managed_slot()) and the daemon grants a
 * finite rate. */
static int wants_pacing(struct shim_qp *q, const struct jst_flow_ctl *slot)
{
	int cls = atomic_load_explicit(&q->cls, memory_order_relaxed);

	if (!slot)
		return 0;
	if (atomic_load_explicit(&q->split.state, memory_order_relaxed) == SPLIT_READY &&
	    (atomic_load_explicit(&slot->flags, memory_order_relaxed) & JST_F_SPLIT))
		return 1;
	if (!(atomic_load_explicit(&slot->flags, memory_order_relaxed) & JST_F_PACE))
		return 0;
	if (cls == JST_CLASS_THROUGHPUT)
		return atomic_load_explicit(&slot->ops_per_s, memory_order_relaxed) != 0;
	return atomic_load_explicit(&slot->rate_bps, memory_order_relaxed) != 0;
}

/* ------------------------------------------------------------ progress thread */

/* QPs with a class verdict to report (classify.c): reported after the
 * registry walk, as reporting takes the client's lock (lock order). */
static struct {
	struct shim_qp *q[16];
	unsigned gen[16];
	size_t n;
} verdicts;

static int reevaluate(struct shim_qp *q)
{
	if (atomic_load_explicit(&q->classify.verdict, memory_order_acquire) >= 0 &&
	    verdicts.n < 16) {
		verdicts.q[verdicts.n] = q;
		verdicts.gen[verdicts.n++] = atomic_load(&q->gen);
	}
	shim_pace_update(q);
	if (!atomic_load_explicit(&q->direct, memory_order_relaxed))
		atomic_store_explicit(&pg.paced, 1, memory_order_relaxed);
	return 0;
}

static void report_verdicts(void)
{
	for (size_t i = 0; i < verdicts.n; i++)
		if (atomic_load(&verdicts.q[i]->gen) == verdicts.gen[i]) {
			struct shim_qp *q = verdicts.q[i];
			int cls = shim_classify_tick(&q->classify, q->qp->qp_num);

			if (cls >= 0)
				shim_client_report_class(q, cls);
		}
	verdicts.n = 0;
}

static void arm(uint64_t at, uint64_t now)
{
	struct itimerspec its = { 0 };

	if (at == pg.armed_at && at > now)
		return; /* still set for then (the tick's time, say, after a kick) */
	pg.armed_at = at;
	its.it_value.tv_sec = (time_t)(at / 1000000000ull);
	its.it_value.tv_nsec = (long)(at % 1000000000ull);
	timerfd_settime(pg.tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Completions of split chunks: the thread sleeps on the channel's fd
 * (external progress: the caller saw them on the CQ). */
static void split_events(struct shim_qp *q, uint64_t now, uint64_t *next)
{
	struct shim_split *sp = &q->split;
	struct ibv_cq *cq;
	void *ctx;

	pthread_mutex_lock(&q->lock);
	/* (external progress: no channel, the CQ is polled) */
	if (pg.external ? !sp->cq : !sp->ch) {
		pthread_mutex_unlock(&q->lock);
		return;
	}
	while (sp->ch && shim_vops()->get_cq_event(sp->ch, &cq, &ctx) == 0) {
		shim_vops()->ack_cq_events(cq, 1);
		sp->armed = false; /* re-armed when needed (drain_service_locked) */
	}
	{
		uint64_t due = drain_service_locked(q, now);

		if (due && due < *next)
			*next = due;
	}
	pthread_mutex_unlock(&q->lock);
}

/* When the tick comes back after the tick's work (above). */
static uint64_t tick_interval(void)
{
	if (!atomic_load_explicit(&pg.paced, memory_order_relaxed) &&
	    !atomic_load_explicit(&shim_pace_queued, memory_order_relaxed))
		return IDLE_TICK_NS;
	return wrpost_share_mode() ? SHARE_TICK_NS : TICK_NS;
}

/* One wake-up's work at @now, after the split QPs in @evq (@nev of them)
 * had completion events: the tick's work when due, reap and drain every QP
 * with a backlog.  Returns when to come back. */
static uint64_t progress_round(uint64_t now, struct shim_qp *const *evq, int nev)
{
	struct shim_qp *list[64];
	uint64_t next;
	size_t n;

	if (now >= pg.next_tick ||
	    atomic_exchange_explicit(&pg.tick_now, 0, memory_order_acq_rel)) {
		atomic_store_explicit(&pg.paced, 0, memory_order_relaxed);
		shim_client_poll();
		shim_registry_foreach(reevaluate);
		report_verdicts();
		pg.next_tick = now + tick_interval();
	}
	next = pg.next_tick;
	for (int i = 0; i < nev; i++)
		split_events(evq[i], now, &next);
	/* take the busy QPs a handful at a time; each under its lock */
	n = backlogs_take_round(list, 64);
	for (size_t i = 0; i < n; i++) {
		uint64_t due;
		int busy;

		pthread_mutex_lock(&list[i]->lock);
		due = list[i]->busy ? drain_service_locked(list[i], now) : 0;
		busy = list[i]->busy;
		atomic_fetch_add_explicit(&n_thread_drains, 1, memory_order_relaxed);
		pthread_mutex_unlock(&list[i]->lock);
		if (busy && !pg.external)
			/* (under external progress the caller stands for a
			 * busy-polling application: it comes back when the
			 * token is due) */
			due = backlogs_next_look(list[i], due, now);
		if (due && due < next)
			next = due;
	}
	if (n == 64)
		next = now; /* more waiting: come straight back */
	return next;
}

static void *progress_main(void *arg)
{
	shim_busy = 1; /* this thread's verbs calls are the shim's own */
	for (;;) {
		struct epoll_event ev[16];
		struct shim_qp *evq[16];
		uint64_t buf, now;
		int nev, m = 0;

		nev = epoll_wait(pg.ep, ev, 16, -1);
		if (nev < 0 && errno != EINTR)
			break;
		atomic_fetch_add_explicit(&n_wakeups, 1, memory_order_relaxed);
		/* (only the fds that woke it are read: each system call
		 * costs tens of microseconds under TCG, and the thread wakes
		 * a hundred times a second while a QP is paced) */
		for (int i = 0; i < nev; i++) {
			uint64_t tag = ev[i].data.u64;

			if (tag > EV_TIMER)
				evq[m++] = (struct shim_qp *)(uintptr_t)tag;
			else if (read(tag == EV_WAKE ? pg.efd : pg.tfd, &buf, sizeof(buf)) < 0 &&
				 errno != EAGAIN) {
				/* nothing to drain / not expired after all */
			}
			atomic_fetch_add_explicit(tag == EV_WAKE    ? &n_kick_wakes
						  : tag == EV_TIMER ? &n_timer_wakes
								    : &n_event_wakes,
						  1, memory_order_relaxed);
		}
		now = shim_now_ns();
		arm(progress_round(now, evq, m), now);
	}
	return NULL;
}

void shim_pace_set_external(void)
{
	pg.external = 1;
}

uint64_t shim_pace_step(uint64_t now, struct ibv_cq *split_cq)
{
	struct shim_qp *q = split_cq ? split_cq->cq_context : NULL;
	int saved = shim_busy;
	uint64_t next;

	shim_busy = 1; /* (as the thread's) */
	atomic_fetch_add_explicit(&n_wakeups, 1, memory_order_relaxed);
	next = progress_round(now, &q, q != NULL);
	shim_busy = saved;
	return next;
}

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

static int progress_start_locked(void);

/* Start the progress thread once per process (two QPs created at once by
 * two threads must not start two). */
static int progress_start(void)
{
	int rc;

	if (pg.external || atomic_load_explicit(&pg.started, memory_order_acquire) == getpid())
		return 0;
	pthread_mutex_lock(&start_lock);
	rc = progress_start_locked();
	pthread_mutex_unlock(&start_lock);
	return rc;
}

int shim_pace_start_thread(void)
{
	return progress_start();
}

static int progress_start_locked(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t all, old;
	int rc;

	if (pg.ep >= 0 && pg.pid == getpid())
		return 0;
	pg.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pg.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	pg.ep = epoll_create1(EPOLL_CLOEXEC);
	if (pg.efd < 0 || pg.tfd < 0 || pg.ep < 0)
		goto out_close;
	ev.data.u64 = EV_WAKE;
	if (epoll_ctl(pg.ep, EPOLL_CTL_ADD, pg.efd, &ev))
		goto out_close;
	ev.data.u64 = EV_TIMER;
	if (epoll_ctl(pg.ep, EPOLL_CTL_ADD, pg.tfd, &ev))
		goto out_close;
	/* the application's signals are not ours to take */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	backlogs_set_wake(pg.efd);
	/* (before the thread: from then on only it arms the timer) */
	pg.armed_at = 0;
	arm(shim_now_ns() + TICK_NS, 0);
	rc = pthread_create(&pg.th, NULL, progress_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto out_close;
	pthread_setname_np(pg.th, "justitia-pace");
	pthread_detach(pg.th);
	pg.pid = getpid();
	atomic_store_explicit(&pg.started, pg.pid, memory_order_release);
	return 0;
out_close:
	shim_log_once("cannot start the pacing thread: QPs stay unpaced");
	if (pg.efd >= 0)
		close(pg.efd);
	if (pg.tfd >= 0)
		close(pg.tfd);
	if (pg.ep >= 0)
		close(pg.ep);
	pg.efd = pg.tfd = pg.ep = -1;
	backlogs_set_wake(-1);
	return -1;
}

int shim_pace_progress(struct ibv_cq *cq)
{
	struct shim_qp *list[8];
	size_t n = backlogs_list(list, 8, cq, 1);
	uint64_t now;
	int held = 0;

	if (!n)
		return 0;
	now = shim_now_ns();
	for (size_t i = 0; i < n; i++) {
		atomic_store_explicit(&list[i]->app_poll_ns, now, memory_order_relaxed);
		/* never wait for a lock in the application's poll */
		if (pthread_mutex_trylock(&list[i]->lock))
			continue;
		if (list[i]->busy) {
			drain_service_locked(list[i], now);
			atomic_fetch_add_explicit(&n_poll_drains, 1, memory_order_relaxed);
		}
		held |= list[i]->busy;
		pthread_mutex_unlock(&list[i]->lock);
		/* a new pace mode, for an application that only polls now
		 * (its posts are queued): locks only when the mode changed,
		 * as its post would */
		shim_pace_recheck(list[i]);
	}
	return held;
}

int shim_pace_watch(struct shim_qp *q)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uintptr_t)q };

	if (!q->split.ch)
		return 0; /* polled (external progress): nothing to watch */
	if (progress_start())
		return -EAGAIN;
	return epoll_ctl(pg.ep, EPOLL_CTL_ADD, q->split.ch->fd, &ev) ? -errno : 0;
}

void shim_pace_unwatch(struct shim_qp *q)
{
	if (q->split.ch && pg.ep >= 0 && pg.pid == getpid())
		epoll_ctl(pg.ep, EPOLL_CTL_DEL, q->split.ch->fd, NULL);
}

/* ------------------------------------------------------------ mode changes */

/* Would shim_pace_update() leave @q as it is?  The progress thread asks
 * every QP every TICK_NS, and a QP's lock is held by its application's
 * posts across the provider's call (Soft-RoCE does its packet work in it):
 * a tick waiting for the lock slept and woke at each of the application's
 * posts until it got it, and each of those posts paid a futex wake (a
 * lone 64 B ib_write_bw on Soft-RoCE, direct and windowed: the thread
 * switched 7000-9000 times a second instead of 90, and the flow lost a
 * fifth of its rate).  Only a latency QP's fast flag depends on state
 * under the lock (its backlog); every other class's is 0. */
static int mode_unchanged(struct shim_qp *q, int want, int win)
{
	return atomic_load_explicit(&q->cls, memory_order_relaxed) != JST_CLASS_LATENCY &&
	       !atomic_load_explicit(&q->fast, memory_order_relaxed) &&
	       atomic_load_explicit(&q->direct, memory_order_relaxed) == !want &&
	       atomic_load_explicit(&q->win.on, memory_order_relaxed) == win;
}

/* @q became paced (its post saw a new pace mode): the thread, perhaps at
 * the idle tick, does the tick's work at once and every TICK_NS from then
 * on (the daemon's liveness and the grants of paced QPs). */
static void tick_soon(void)
{
	uint64_t one = 1;

	if (atomic_load_explicit(&pg.paced, memory_order_relaxed))
		return; /* ticking every TICK_NS already */
	atomic_store_explicit(&pg.paced, 1, memory_order_relaxed);
	atomic_store_explicit(&pg.tick_now, 1, memory_order_release);
	if (pg.efd >= 0 && pg.pid == getpid() && write(pg.efd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the thread is awake anyway */
	}
}

/* What @q should be: paced (@want), or direct (the daemon manages the
 * flow: pace mode off), or direct and free; and windowed (@win): direct
 * and managed, or paced with no latency flow to protect (pace mode share:
 * its grant paces its posts, but with no cap on what is in flight a
 * send queue of 128 MiB runs seconds ahead of the link, the daemon counts
 * posts the link has not carried as the flow's use, and the NIC's split
 * of that queue, not the grants, decides the shares). */
static void decide_mode(struct shim_qp *q, int *want, int *win)
{
	const struct jst_flow_ctl *slot = managed_slot(q);

	*want = wants_pacing(q, slot);
	*win = slot && shim_window_bytes &&
	       (!*want || (wrpost_share_mode() &&
			   atomic_load_explicit(&q->cls, memory_order_relaxed) != JST_CLASS_LATENCY));
	/* (the window's give-up timer is the progress thread's too) */
	if ((*want || *win) && progress_start())
		*want = *win = 0;
}

void shim_pace_update(struct shim_qp *q)
{
	int want, win;

	decide_mode(q, &want, &win);
	if (mode_unchanged(q, want, win))
		return;
	pthread_mutex_lock(&q->lock);
	/* again: the slot may have changed while this waited for the lock,
	 * and a later caller's decision may already stand */
	decide_mode(q, &want, &win);
	if (atomic_load_explicit(&q->win.on, memory_order_relaxed) != win)
		q->win.wait_since = 0; /* (a wait from before paced mode is not one) */
	atomic_store_explicit(&q->win.on, win, memory_order_relaxed);
	atomic_store_explicit(&q->fast, 0, memory_order_relaxed);
	if (!want && !atomic_load_explicit(&q->direct, memory_order_relaxed)) {
		/* back to direct: what is queued goes first, unpaced */
		atomic_store_explicit(&q->direct, 1, memory_order_relaxed);
		drain_locked(q, shim_now_ns());
	} else if (want) {
		if (atomic_exchange_explicit(&q->direct, 0, memory_order_relaxed))
			tick_soon();
	}
	drain_set_fast_locked(q);
	pthread_mutex_unlock(&q->lock);
}

int shim_pace_recheck(struct shim_qp *q)
{
	const struct jst_shm_global *g = shim_client_global();
	uint32_t gen;

	if (!g || !atomic_load_explicit(&q->slot, memory_order_relaxed))
		return 0;
	gen = atomic_load_explicit(&g->mode_gen, memory_order_acquire);
	if (gen == atomic_load_explicit(&q->mode_gen, memory_order_relaxed))
		return 0;
	atomic_store_explicit(&q->mode_gen, gen, memory_order_relaxed);
	shim_pace_update(q);
	return 1;
}

/* Forget @q's backlog without completions.  Called with q->lock held. */
static void drop_backlog_locked(struct shim_qp *q)
{
	struct pend_wr *p;

	backlogs_remove(q);
	while ((p = q->bl_head)) {
		q->bl_head = p->next;
		free(p);
	}
	q->bl_tail = NULL;
	q->bl_len = 0;
	q->tw_since = 0;
}

void shim_pace_qp_reset(struct shim_qp *q)
{
	struct ibv_wc wc[16];

	pthread_mutex_lock(&q->lock);
	drop_backlog_locked(q);
	/* the split QP was reset with it: what its CQ still holds refers to
	 * the WRs just dropped */
	if (q->split.cq)
		while (q->sctx->poll_cq(q->split.cq, 16, wc) > 0) {
		}
	q->split.c_done = q->split.c_posted;
	q->split.c_since_sig = 0;
	atomic_store_explicit(&q->ord_dirty, 0, memory_order_relaxed);
	q->ord_barrier = 0;
	shim_window_reset(&q->win);
	shim_sq_reset(&q->sq);
	drain_set_fast_locked(q);
	pthread_mutex_unlock(&q->lock);
}

void shim_pace_qp_gone(struct shim_qp *q)
{
	pthread_mutex_lock(&q->lock);
	drop_backlog_locked(q);
	shim_window_reset(&q->win);
	shim_sq_fini(&q->sq);
	atomic_store_explicit(&q->win.on, 0, memory_order_relaxed);
	atomic_store_explicit(&q->direct, 1, memory_order_relaxed);
	pthread_mutex_unlock(&q->lock);
}

static int fail_open_one(struct shim_qp *q)
{
	pthread_mutex_lock(&q->lock);
	atomic_store_explicit(&q->direct, 1, memory_order_relaxed);
	atomic_store_explicit(&q->win.on, 0, memory_order_relaxed);
	if (q->bl_head)
		drain_locked(q, shim_now_ns());
	/* the daemon's memory is no longer ours to read or write */
	atomic_store_explicit(&q->slot, NULL, memory_order_release);
	atomic_store_explicit(&q->shm_stats, NULL, memory_order_release);
	q->flow_id = 0;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

void shim_pace_fail_open(void)
{
	shim_registry_foreach(fail_open_one);
}

void shim_pace_atfork_child(void)
{
	backlogs_atfork_child();
	pg.ep = pg.efd = pg.tfd = -1; /* the parent's, shared: leave them */
	pg.pid = 0;
	atomic_store(&pg.started, 0);
	pthread_mutex_init(&start_lock, NULL);
}

void shim_pace_counters(struct stats_pacer *out)
{
	clockid_t cid;
	struct timespec ts;

	out->wakeups = atomic_load_explicit(&n_wakeups, memory_order_relaxed);
	out->thread_drains = atomic_load_explicit(&n_thread_drains, memory_order_relaxed);
	out->poll_drains = atomic_load_explicit(&n_poll_drains, memory_order_relaxed);
	out->kick_wakes = atomic_load_explicit(&n_kick_wakes, memory_order_relaxed);
	out->timer_wakes = atomic_load_explicit(&n_timer_wakes, memory_order_relaxed);
	out->event_wakes = atomic_load_explicit(&n_event_wakes, memory_order_relaxed);
	out->thread_cpu_ns = 0;
	if (atomic_load_explicit(&pg.started, memory_order_acquire) == getpid() &&
	    !pthread_getcpuclockid(pg.th, &cid) && !clock_gettime(cid, &ts))
		out->thread_cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

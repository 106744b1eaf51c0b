// SPDX-License-Identifier: MIT
/* Unit tests of pacer control (shim/pacectl.c) against the fake provider
 * and fake daemon slot of fakeprov.h: a poll is told when the shim holds
 * work back; losing the daemon fails open without letting later WRs
 * overtake a split message; a fork()ed child forgets the parent's QPs; a
 * recycled slot is not obeyed; mode changes are seen on the next post or
 * draining poll; a latency QP is direct; messages queued whole are split
 * once the daemon's chunk shrinks; a QP reset drops its backlog and
 * chunks. */
#include <sys/wait.h>

#include "fakeprov.h"

/* An application polling the send CQ of a QP with a backlog is told the
 * shim holds work back (so an empty poll yields), and no longer once the
 * backlog is gone; a CQ with no paced QP on it never is. */
static void progress_says_when_work_is_held_back(void **state)
{
	struct ibv_cq other = { .context = &vctx.context };

	post_n(4, 300, 1000); /* 4 ms of tokens at 1 MB/s: most wait */
	assert_true(provider_count() < 4);
	assert_int_equal(shim_pace_progress(&cq), 1);
	assert_int_equal(shim_pace_progress(&other), 0);
	wait_for(4);
	assert_int_equal(provider_count(), 4);
	for (int i = 0; i < 200 && atomic_load(&shim_pace_queued); i++)
		usleep(1000);
	assert_int_equal(shim_pace_progress(&cq), 0);
}

static void daemon_gone_fails_open(void **state)
{
	uint64_t t0;

	post_n(4, 1, 1000000); /* would take seconds at 1 MB/s */
	t0 = mono();
	atomic_store(&gseg.g.flags, 0); /* the daemon exited */
	shim_pace_fail_open();
	assert_int_equal(provider_count(), 4);
	assert_true(mono() - t0 < 500000000);
	assert_int_equal(atomic_load(&q->direct), 1);
	assert_null(atomic_load(&q->slot));
	post_n(2, 9, 1000000); /* now straight through */
	assert_int_equal(provider_count(), 6);
}

/* A split message has chunks in flight when the daemon goes away: the WRs
 * posted next, now unpaced, still wait behind the message's last chunk. */
static void fail_open_keeps_order_behind_split(void **state)
{
	struct ibv_wc wc[4];

	use_split_qp();
	/* four data chunks on the split QP now, the (zero-length) final when
	 * they are done */
	post_one_write(7, 4000);
	assert_int_equal(provider_count(), 4);
	for (int i = 0; i < 4; i++)
		assert_ptr_equal(prov.qp[i], &split_qp);
	atomic_store(&gseg.g.flags, 0);
	shim_pace_fail_open();
	assert_int_equal(atomic_load(&q->direct), 1);
	post_n(2, 50, 100);
	assert_int_equal(provider_count(), 4); /* not ahead of the message */

	pthread_mutex_lock(&prov.lock);
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	for (int i = 0; i < 3000 && provider_count() < 7; i++) {
		ibv_poll_cq(&cq, 4, wc); /* progresses the backlog */
		usleep(1000);
	}
	assert_int_equal(provider_count(), 7);
	assert_ptr_equal(prov.qp[4], &qp);
	assert_int_equal(prov.wr_id[4], 7);
	assert_int_equal(prov.wr_id[5], 50);
	assert_int_equal(prov.wr_id[6], 51);
	post_n(1, 60, 100); /* the backlog is gone: straight through */
	assert_int_equal(provider_count(), 8);
	drop_split_qp();
}

/* RESET with chunks in flight and WRs queued: all of it is gone, as the
 * provider's WRs are, and the QP works again right away. */
static void reset_drops_backlog_and_chunks(void **state)
{
	use_split_qp();
	post_one_write(7, 4000);         /* four chunks in flight, never done */
	post_n(2, 50, 100);              /* queued behind it */
	assert_int_equal(provider_count(), 4);
	assert_true(atomic_load(&shim_pace_queued) > 0);
	shim_pace_qp_reset(q);
	assert_null(q->bl_head);
	assert_int_equal(q->bl_len, 0);
	assert_int_equal(q->busy, 0);
	assert_int_equal(atomic_load(&shim_pace_queued), 0);
	post_n(1, 60, 100);
	assert_int_equal(provider_count(), 5); /* straight through */
	assert_int_equal(prov.wr_id[4], 60);
	drop_split_qp();
}

/* A direct QP (pace mode off: no flags) notices the daemon's mode change
 * on its next post (mode_gen), with no progress thread needed. */
static void mode_change_seen_on_post(void **state)
{
	uint32_t gen = atomic_load(&gseg.g.mode_gen);

	atomic_store(&gseg.slot[0].flags, 0);
	atomic_store(&gseg.g.mode_gen, gen + 1);
	post_n(3, 1, 1000000);  /* seconds at 1 MB/s, but unpaced now */
	assert_int_equal(provider_count(), 3);
	assert_int_equal(atomic_load(&q->direct), 1);
	assert_int_equal(atomic_load(&q->st.held), 0);
	atomic_store(&gseg.slot[0].flags, JST_F_PACE);
	atomic_store(&gseg.g.mode_gen, gen + 2);
	post_n(3, 10, 1000000); /* paced again: held */
	assert_int_equal(atomic_load(&q->direct), 0);
	assert_true(provider_count() < 6);
	assert_true(atomic_load(&q->st.held) >= 2);
}

/* A paced QP whose application only polls now (what it posted waits in
 * the backlog) notices the daemon's mode change on a poll that drains it,
 * not at the progress thread's next tick. */
static void mode_change_seen_on_poll(void **state)
{
	uint32_t gen = atomic_load(&gseg.g.mode_gen);

	post_n(4, 1, 1000000); /* seconds of backlog at 1 MB/s */
	assert_true(provider_count() < 4);
	atomic_store(&gseg.slot[0].flags, 0); /* pace mode off: direct */
	atomic_store(&gseg.g.mode_gen, gen + 1);
	shim_pace_progress(&cq);
	assert_int_equal(atomic_load(&q->direct), 1);
	assert_int_equal(provider_count(), 4); /* the backlog went, unpaced */
}

/* fork() while a thread holds the QP's lock, with a backlog: the child
 * forgets the parent's QP, connection and backlog, and its own QP with the
 * same number gets a record of its own. */
static void fork_child_forgets_parent(void **state)
{
	pid_t pid;
	int st;

	post_n(4, 1, 1000000); /* seconds of backlog at 1 MB/s */
	assert_true(atomic_load(&shim_pace_queued) > 0);
	shim_registry_atfork_prepare();
	pthread_mutex_lock(&q->lock);
	pthread_mutex_lock(&q->wrb.lock); /* a thread in the middle of a batch */
	pid = fork();
	if (pid == 0) {
		struct shim_qp *n;
		int ok;

		atomic_store(&cl.global, NULL); /* not a mapping here: nothing to unmap */
		shim_registry_atfork_child();
		shim_client_atfork_child();
		shim_pace_atfork_child();
		shim_inject_atfork_child();
		ok = !shim_qp_find(&vctx.context, 21) && !atomic_load(&shim_pace_queued) &&
		     cl.fd < 0 && !shim_client_global();
		n = shim_ops_track_qp(&qp, "ibv_create_qp", 8);
		ok = ok && n && shim_qp_find(&vctx.context, 21) == n && !n->bl_head &&
		     atomic_load(&n->direct) && !pthread_mutex_trylock(&n->lock) &&
		     !pthread_mutex_trylock(&n->wrb.lock) &&
		     /* the parent's record, to be recycled: usable again */
		     !pthread_mutex_trylock(&q->lock) && !pthread_mutex_trylock(&q->wrb.lock);
		_exit(ok ? 0 : 1);
	}
	pthread_mutex_unlock(&q->wrb.lock);
	pthread_mutex_unlock(&q->lock);
	shim_registry_atfork_parent();
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* the parent's QP is untouched */
	assert_ptr_equal(shim_qp_find(&vctx.context, 21), q);
	wait_for(4);
	assert_int_equal(provider_count(), 4);
}

/* The daemon freed the flow's slot, or gave it to another flow: its rate
 * is not this QP's (the shim checks state and flow id, shim/slot.h). */
static void recycled_slot_is_not_obeyed(void **state)
{
	atomic_store(&gseg.slot[0].flow_id, 6);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 1);
	atomic_store(&gseg.slot[0].flow_id, 5);
	atomic_store(&gseg.slot[0].state, JST_SLOT_FREE);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 1);
	atomic_store(&gseg.slot[0].state, JST_SLOT_ACTIVE);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 0);
	/* a torn read (odd seq) keeps what the QP had */
	atomic_store(&gseg.slot[0].seq, 1);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 0);
	atomic_store(&gseg.slot[0].seq, 2);
}

/* The progress thread re-decides every QP each tick; when nothing changes
 * it must not wait for the QP's lock, which the application's posts hold
 * across the provider's call (a tick that waits wakes at each of them). */
static _Atomic int update_returned;

static void *update_thread(void *arg)
{
	shim_pace_update(arg);
	atomic_store(&update_returned, 1);
	return NULL;
}

static int update_returns_while_locked(void)
{
	pthread_t th;
	int done = 0;

	atomic_store(&update_returned, 0);
	/* (the daemon is alive: a second of silence would fail open) */
	atomic_store(&gseg.g.heartbeat_ns, shim_now_ns());
	pthread_mutex_lock(&q->lock); /* the application, posting */
	assert_int_equal(pthread_create(&th, NULL, update_thread, q), 0);
	for (int i = 0; i < 300 && !(done = atomic_load(&update_returned)); i++)
		usleep(1000);
	pthread_mutex_unlock(&q->lock);
	pthread_join(th, NULL);
	return done;
}

static void unchanged_mode_leaves_a_posting_qp_alone(void **state)
{
	/* paced, and still paced */
	assert_true(update_returns_while_locked());
	assert_int_equal(atomic_load(&q->direct), 0);
	/* pace mode off: direct and windowed (a change: under the lock) */
	atomic_store(&gseg.slot[0].flags, 0);
	assert_false(update_returns_while_locked());
	assert_int_equal(atomic_load(&q->direct), 1);
	assert_int_equal(atomic_load(&q->win.on), shim_window_bytes != 0);
	/* and still so */
	assert_true(update_returns_while_locked());
	/* paced again: a change */
	atomic_store(&gseg.slot[0].flags, JST_F_PACE);
	assert_false(update_returns_while_locked());
	assert_int_equal(atomic_load(&q->direct), 0);
}

static void latency_class_is_direct(void **state)
{
	atomic_store(&q->cls, JST_CLASS_LATENCY);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 1);
	post_n(20, 1, 1000000);
	assert_int_equal(provider_count(), 20);
}

/* Messages that waited whole in the backlog while the chunk was large (no
 * latency flow) are split when they reach the head after the daemon
 * published a small chunk (a latency flow registered). */
static void backlog_split_when_chunk_shrinks(void **state)
{
	static struct ibv_qp shrink_qp;
	uint32_t n_chunks, inflight;
	size_t bl_len;

	memset(&shrink_qp, 0, sizeof(shrink_qp));
	shrink_qp.context = &vctx.context;
	shrink_qp.qp_num = 22;
	shrink_qp.qp_type = IBV_QPT_RC;
	shrink_qp.send_cq = &cq;
	pthread_mutex_lock(&q->lock);
	q->split.qp = &shrink_qp;
	atomic_store(&q->split.state, SPLIT_READY);
	atomic_fetch_add(&shim_split_qps, 1);
	pthread_mutex_unlock(&q->lock);
	atomic_store(&gseg.slot[0].chunk_bytes, 1 << 20);
	atomic_store(&gseg.slot[0].flags, JST_F_PACE | JST_F_SPLIT);
	shim_pace_update(q);
	/* 64 KiB at 1 MB/s, 65 ms each: the first goes whole, three wait whole */
	post_n(4, 1, 65536);
	assert_int_equal(provider_count(), 1);
	assert_int_equal(prov.qpn[0], 21);
	assert_int_equal(prov.len[0], 65536);
	/* a latency flow registered: 4 KiB chunks, and a faster rate */
	atomic_store(&gseg.slot[0].chunk_bytes, 4096);
	atomic_store(&gseg.slot[0].rate_bps, 8000000000ull);
	/* not before the first message is known done: a barrier behind it */
	wait_for(2);
	assert_int_equal(provider_count(), 2);
	assert_int_equal(prov.qpn[1], 21);
	assert_int_equal(prov.len[1], 0);
	pthread_mutex_lock(&prov.lock);
	prov.complete_app = 1;
	pthread_mutex_unlock(&prov.lock);
	{
		struct ibv_wc wc[4];

		assert_int_equal(ibv_poll_cq(&cq, 4, wc), 1); /* the first; not the barrier */
		assert_int_equal(wc[0].wr_id, 1);
	}
	wait_for(2 + SPLIT_WINDOW);
	usleep(20000);
	/* the second message goes in chunks on the split QP, a window of them
	 * (the fake provider never completes them) */
	assert_int_equal(provider_count(), 2 + SPLIT_WINDOW);
	for (int i = 2; i < 2 + SPLIT_WINDOW; i++) {
		assert_int_equal(prov.qpn[i], 22);
		assert_int_equal(prov.len[i], 4096);
	}
	pthread_mutex_lock(&q->lock);
	n_chunks = q->bl_head ? q->bl_head->n_chunks : 0;
	inflight = q->bl_head ? q->bl_head->inflight : 0;
	bl_len = q->bl_len;
	q->split.qp = NULL;
	atomic_store(&q->split.state, SPLIT_NONE);
	atomic_fetch_sub(&shim_split_qps, 1);
	pthread_mutex_unlock(&q->lock);
	/* (asserted with the lock free: a failure must not hang the teardown) */
	assert_int_equal(n_chunks, 16 + 1); /* and the zero-length final */
	assert_int_equal(inflight, SPLIT_WINDOW);
	assert_int_equal(bl_len, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FAKEPROV_TEST(progress_says_when_work_is_held_back),
		FAKEPROV_TEST(daemon_gone_fails_open),
		FAKEPROV_TEST(fail_open_keeps_order_behind_split),
		FAKEPROV_TEST(fork_child_forgets_parent),
		FAKEPROV_TEST(recycled_slot_is_not_obeyed),
		FAKEPROV_TEST(unchanged_mode_leaves_a_posting_qp_alone),
		FAKEPROV_TEST(latency_class_is_direct),
		FAKEPROV_TEST(backlog_split_when_chunk_shrinks),
		FAKEPROV_TEST(reset_drops_backlog_and_chunks),
		FAKEPROV_TEST(mode_change_seen_on_post),
		FAKEPROV_TEST(mode_change_seen_on_poll),
	};

	return fakeprov_run_tests(tests);
}

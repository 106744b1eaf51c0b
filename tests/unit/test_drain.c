// SPDX-License-Identifier: MIT
/* Unit tests of draining a QP's backlog (shim/drain.c) against the fake
 * provider and fake daemon slot of fakeprov.h: a WR the provider refuses
 * becomes a flush completion with the WR's opcode, and so does what
 * follows it; a provider without room (ENOMEM) keeps the backlog, in order,
 * until a completion makes room; a split message's window never shrinks
 * below the chunks it has in flight; a drain later than the bank counts
 * the grant it lost; a window's hold banks the grant it held back. */
#include "fakeprov.h"

static void refused_wr_becomes_flush_completion(void **state)
{
	struct ibv_wc wc[8];
	int got = 0;

	pthread_mutex_lock(&prov.lock);
	prov.fail_from = 2; /* the provider refuses from the third WR on */
	pthread_mutex_unlock(&prov.lock);
	/* 100 ms each at 1 MB/s: the first goes at once, the others queue
	 * behind the second even if this thread is slow to post them (with
	 * 1 ms each, a busy host let the third go directly, and its refusal
	 * came back from the post call) */
	post_n(5, 40, 100000);
	for (int i = 0; i < 3000 && got < 3; i++) {
		got += ibv_poll_cq(&cq, 8 - got, wc + got);
		usleep(1000);
	}
	assert_int_equal(got, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].wr_id, 42 + i);
		assert_int_equal(wc[i].qp_num, 21);
	}
}

/* The made-up completion says what the WR was, as the provider's would. */
static void flush_completion_has_the_wr_opcode(void **state)
{
	static const struct { enum ibv_wr_opcode wr; enum ibv_wc_opcode wc; } ops[] = {
		{ IBV_WR_LOCAL_INV, IBV_WC_LOCAL_INV }, { IBV_WR_BIND_MW, IBV_WC_BIND_MW },
		{ IBV_WR_TSO, IBV_WC_TSO }, { IBV_WR_ATOMIC_WRITE, IBV_WC_ATOMIC_WRITE },
		{ IBV_WR_SEND, IBV_WC_SEND },
	};
	struct ibv_wc wc[8];
	int got = 0;

	pthread_mutex_lock(&prov.lock);
	prov.fail_from = 1; /* the first goes; the backlog behind it is refused */
	pthread_mutex_unlock(&prov.lock);
	post_n(1, 59, 1000); /* goes at once */
	for (unsigned i = 0; i < 5; i++) {
		/* 100 ms each at 1 MB/s: all queue behind the first */
		struct ibv_sge sge = { .addr = 0x1000, .length = 100000 };
		struct ibv_send_wr wr = { .wr_id = 60 + i, .sg_list = &sge, .num_sge = 1,
					  .opcode = ops[i].wr, .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad = NULL;

		assert_int_equal(ibv_post_send(&qp, &wr, &bad), 0);
	}
	for (int i = 0; i < 3000 && got < 5; i++) {
		got += ibv_poll_cq(&cq, 8 - got, wc + got);
		usleep(1000);
	}
	assert_int_equal(got, 5);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(wc[i].wr_id, 60 + i);
		assert_int_equal(wc[i].opcode, ops[i].wc);
	}
}

/* A provider with less room than the QP was said to have (or a count the
 * shim lost): its ENOMEM keeps the WR in the backlog until a completion
 * makes room; nothing queued on a healthy QP is flushed. */
static void provider_without_room_keeps_the_backlog(void **state)
{
	atomic_store(&gseg.slot[0].rate_bps, 8000000000000ull);
	pthread_mutex_lock(&prov.lock);
	prov.sq_cap = 4;
	pthread_mutex_unlock(&prov.lock);
	for (int i = 0; i < 6; i++)
		assert_int_equal(post_write_rc(10 + i, 100), 0);
	assert_int_equal(provider_count(), 4);
	assert_int_equal(q->bl_len, 2);
	for (int i = 0; i < 3000 && provider_count() < 6; i++) {
		complete_app(2);
		usleep(1000);
	}
	assert_int_equal(provider_count(), 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(prov.wr_id[i], 10 + i);
	assert_int_equal(q->bl_len, 0);
	assert_int_equal(atomic_load(&shim_inject_pending), 0);
}

/* A message's split window never shrinks: chunks posted unsignaled before a
 * token wait are followed by more up to a signaled one, even when the
 * window the rate and delay give drops meanwhile below what is in flight
 * (stopping there would wait forever for completions nobody signaled). */
static void split_window_never_shrinks_under_a_message(void **state)
{
	uint32_t inflight, unsignaled;

	use_split_qp();
	atomic_store(&gseg.slot[0].rate_bps, 8000000); /* 1000 B chunks: 1 ms each */
	/* window 1 MB/s * 14 ms + 2 = 16 (a base round trip of this epoch) */
	q->split.c_min_cur_ns = q->split.c_min_prev_ns = 14000000;
	q->split.c_epoch_ns = mono();
	pthread_mutex_lock(&prov.lock);
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	post_one_write(7, 20000);
	/* wait for five or more in flight, none signaled yet (every 8th is),
	 * looked at under the QP's lock: a test thread slow to look (a busy
	 * host) would otherwise find the 8th, signaled, just posted; the
	 * daemon stays alive meanwhile (a stale heartbeat would fail open
	 * and drain it all unpaced) */
	for (int i = 0; i < 3000; i++) {
		atomic_store(&gseg.g.heartbeat_ns, mono());
		pthread_mutex_lock(&q->lock);
		inflight = q->bl_head ? q->bl_head->inflight : 0;
		unsignaled = q->split.c_since_sig;
		if (inflight >= 5 && unsignaled >= 5) {
			/* now the window would be 4 */
			q->split.c_min_cur_ns = q->split.c_min_prev_ns = 1;
			pthread_mutex_unlock(&q->lock);
			break;
		}
		pthread_mutex_unlock(&q->lock);
		usleep(200);
	}
	/* (asserted with the lock free: a failure must not hang the teardown) */
	assert_true(inflight >= 5);
	assert_true(unsignaled >= 5);
	/* (the daemon stays alive: a stale heartbeat would fail open and
	 * drain it all unpaced) */
	for (int i = 0; i < 1000 && !provider_saw(7); i++) {
		atomic_store(&gseg.g.heartbeat_ns, mono());
		complete_app(8);
		usleep(1000);
	}
	assert_true(provider_saw(7));
	assert_int_equal(atomic_load(&q->direct), 0);
	drop_split_qp();
}

/* The split window is rate x the chunk's base round trip: the least one of
 * the last one to two seconds, not the average, which the pacer's own
 * queue in the NIC would stretch (and the window with it, up to 32). */
static void window_follows_the_base_round_trip(void **state)
{
	const struct jst_flow_ctl *slot = &gseg.slot[0];
	struct pend_wr p = { .inflight = 200 };
	struct shim_split *sp = &q->split;
	struct pend_wr *saved;
	uint64_t t = 5000000000ull, base_next_epoch = 0, base_end;
	uint32_t w_first = 0, w_end;

	use_split_qp();
	atomic_store(&gseg.slot[0].rate_bps, 8000000); /* 1 MB/s, 1000 B chunks */
	pthread_mutex_lock(&q->lock);
	saved = q->bl_head;
	q->bl_head = &p;
	sp->c_epoch_ns = 0;
	sp->c_posted = sp->c_done + 200;
	for (int i = 0; i < 60; i++) {
		/* one chunk found the NIC idle (1 ms), the others queued (10 ms);
		 * from 1.5 s on, all queued; from 2.5 s on, the round trip is
		 * 10 ms for good */
		uint64_t seq = sp->c_done + 1, at = t + (uint64_t)i * 50000000ull;
		struct ibv_wc wc = { .wr_id = seq << 3, .status = IBV_WC_SUCCESS };

		sp->c_post_ns[seq % SPLIT_WINDOW_MAX] = at;
		split_chunk_done(q, &wc, at + (i == 3 ? 1000000 : 10000000));
		if (i == 10)
			w_first = splitjob_window(q, slot, 1000, 0);
		if (i == 35)
			base_next_epoch = shim_split_base_ns(sp);
	}
	base_end = shim_split_base_ns(sp);
	w_end = splitjob_window(q, slot, 1000, 0);
	q->bl_head = saved;
	sp->c_done = sp->c_posted;
	pthread_mutex_unlock(&q->lock);
	/* (asserted with the lock free: a failure must not hang the teardown) */
	assert_int_equal(w_first, SPLIT_WINDOW);         /* 1 MB/s x 1 ms / 1000 + 2 */
	assert_int_equal(base_next_epoch, 1000000);     /* the next epoch knows the last one's */
	assert_int_equal(base_end, 10000000);
	assert_int_equal(w_end, 12);                    /* 1 MB/s x 10 ms / 1000 + 2 */
}

/* A backlog banks a little credit to catch up with (wrpost_burst(): 4 ms
 * and the token).  A drain that comes later than that after the bucket ran
 * dry loses the rest of the grant for good; tokens_lost_ns says how much,
 * counted from when the bucket ran dry or the backlog began, whichever is
 * later.  A drain in time loses none, nor does a take of nothing (the
 * next take counts that span: counted twice, the sum ran over the run). */
static void late_drain_counts_the_grant_lost(void **state)
{
	struct jst_flow_stats *st = &cseg.st[0];
	/* 1000 B at 1 MB/s: a 1 ms token, banked up to 5 ms */
	uint64_t t0 = mono(), bank = wrpost_burst(JST_CLASS_BANDWIDTH, 1000000);
	uint64_t lost[4];

	assert_int_equal(bank, 5000000);
	pthread_mutex_lock(&q->lock);
	q->busy = 1; /* (not on the thread's list: only this test drains it) */
	for (int i = 0; i < 4; i++) {
		/* the backlog began at t0; the bucket ran dry at t0, or 10 ms
		 * before it (not the backlog's: the flow was idle then); the
		 * fourth WR moves no bytes: its take takes nothing, and the
		 * span is the next take's to count, not its own too */
		struct ibv_sge sge = { .addr = 0x1000, .length = i == 3 ? 0 : 1000 };
		struct ibv_send_wr wr = { .wr_id = 80 + i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED };
		struct pend_wr *p = wrpost_copy(&wr);
		/* in time; 7 ms after the bank; the same, the bucket dry since before */
		uint64_t at = t0 + (i == 0 ? 2000000 : bank + 7000000);

		p->cost_bytes = sge.length;
		q->bl_head = q->bl_tail = p;
		q->bl_len = 1;
		q->busy_since = t0;
		atomic_store(&st->bucket_vtime_ns, i == 2 ? t0 - 10000000 : t0);
		atomic_store(&q->st.tokens_lost_ns, 0);
		drain_locked(q, at);
		lost[i] = atomic_load(&q->st.tokens_lost_ns);
		if (q->bl_head) { /* (not posted: fail below, unlocked) */
			free(q->bl_head);
			q->bl_head = q->bl_tail = NULL;
			q->bl_len = 0;
		}
		q->busy = 1;
	}
	q->busy = 0;
	pthread_mutex_unlock(&q->lock);
	assert_true(provider_saw(80) && provider_saw(81) && provider_saw(82) && provider_saw(83));
	assert_int_equal(lost[0], 0);
	assert_int_equal(lost[1], 7000000);
	assert_int_equal(lost[2], 7000000);
	assert_int_equal(lost[3], 0);
}

/* Chunks the split window held while their completions were late (a
 * software NIC not scheduled) bank that hold on top of the 4 ms, up to
 * 8 ms of it: when the completions come, the chunks go on catching up
 * with the grant, a window at a time, until a token stops them, and
 * nothing is lost.  Without it the drain 12 ms after the hold lost 7 ms
 * of the grant (9 chunks by then instead of 17). */
static void window_hold_banks_its_grant(void **state)
{
	struct jst_flow_stats *st = &cseg.st[0];
	struct ibv_sge sge = { .addr = 0x1000, .length = 40000 };
	struct ibv_send_wr wr = { .wr_id = 90, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = 0x80000, .rkey = 9 } };
	/* 1000 B chunks at 1 MB/s: 1 ms tokens, banked up to 5 ms; the
	 * window is its least, SPLIT_WINDOW */
	uint64_t t1 = mono(), t2 = t1 + 12000000, held[3], lost;
	uint32_t posted[2];
	struct pend_wr *p;

	use_split_qp();
	atomic_store(&gseg.slot[0].rate_bps, 8000000);
	q->split.c_min_cur_ns = q->split.c_min_prev_ns = 1;
	q->split.c_epoch_ns = t1;
	pthread_mutex_lock(&q->lock);
	p = wrpost_copy(&wr);
	p->cost_bytes = 40000;
	splitjob_prepare(p, 1000, SPLITMSG_ONE_SIDED);
	q->bl_head = q->bl_tail = p;
	q->bl_len = 1;
	q->busy = 1; /* (not on the thread's list: only this test drains it) */
	q->busy_since = t1;
	atomic_store(&st->bucket_vtime_ns, t1 - 5000000); /* a full bank */
	atomic_store(&q->st.tokens_lost_ns, 0);
	drain_locked(q, t1); /* a window's chunks, then their completions hold it */
	posted[0] = p->next_chunk;
	held[0] = q->held_since;
	pthread_mutex_lock(&prov.lock);
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	/* 12 ms later the completions come: a window at a time, the chunks
	 * go while the credit lasts */
	for (int i = 0; i < 10 && q->held_since; i++) {
		splitjob_reap_locked(q);
		drain_locked(q, t2);
		if (i == 0)
			held[1] = q->held_since;
	}
	posted[1] = p->next_chunk;
	held[2] = q->held_since;
	lost = atomic_load(&q->st.tokens_lost_ns);
	pthread_mutex_unlock(&q->lock);
	/* (asserted with the lock free: a failure must not hang the teardown) */
	assert_int_equal(posted[0], SPLIT_WINDOW);
	assert_int_equal(held[0], t1);
	assert_int_equal(held[1], t1); /* a window's worth again: still the hold's */
	assert_int_equal(posted[1], 17); /* 5 ms banked, 12 ms held */
	assert_int_equal(held[2], 0);    /* a token stopped it */
	assert_int_equal(lost, 0);
	pthread_mutex_lock(&prov.lock);
	prov.complete_split = 0;
	pthread_mutex_unlock(&prov.lock);
	pthread_mutex_lock(&q->lock);
	q->busy = 0;
	q->bl_head = q->bl_tail = NULL;
	q->bl_len = 0;
	pthread_mutex_unlock(&q->lock);
	free(p);
	drop_split_qp();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FAKEPROV_TEST(refused_wr_becomes_flush_completion),
		FAKEPROV_TEST(flush_completion_has_the_wr_opcode),
		FAKEPROV_TEST(split_window_never_shrinks_under_a_message),
		FAKEPROV_TEST(window_follows_the_base_round_trip),
		FAKEPROV_TEST(provider_without_room_keeps_the_backlog),
		FAKEPROV_TEST(late_drain_counts_the_grant_lost),
		FAKEPROV_TEST(window_hold_banks_its_grant),
	};

	return fakeprov_run_tests(tests);
}

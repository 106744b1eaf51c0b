// SPDX-License-Identifier: MIT
/* Unit tests of the shim's paced post path (shim/pace.c, with the WR
 * copy of shim/wrpost.c) against the fake provider and fake daemon slot of
 * fakeprov.h: the post call never blocks, the provider receives the work
 * requests in the application's order and no faster than the granted rate,
 * one ibv_post_send is one post call, inline data is copied, the send queue
 * limit holds (counting what the provider holds), and a QP in pace mode off
 * or share keeps at most its window in flight, its tags' completions unseen
 * by the application. */
#include "fakeprov.h"

static void paced_in_order_and_not_faster(void **state)
{
	uint64_t t0 = mono(), posted;

	post_n(8, 100, 1000);
	posted = mono() - t0;
	/* the post calls return at once: far less than the 7 ms the rate takes */
	assert_true(posted < 5000000);
	assert_true(provider_count() < 8);
	wait_for(8);
	assert_int_equal(provider_count(), 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(prov.wr_id[i], 100 + i);
	/* 8 x 1000 B at 1 MB/s: the last cannot leave before ~7 ms minus the burst */
	assert_true(prov.t[7] - t0 >= 6000000);
	assert_int_equal(q->st.op[STATS_OP_RDMA_WRITE].wrs, 8);
	assert_int_equal(atomic_load(&cseg.st[0].bytes), 8000);
}

/* One ibv_post_send of three WRs is one post call, however the backlog
 * hands them to the provider; a refused call is one failed post. */
static void one_call_counts_once(void **state)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 1000 };
	struct ibv_send_wr wr[3], *bad = NULL;

	for (int i = 0; i < 3; i++)
		wr[i] = (struct ibv_send_wr){ .wr_id = 40 + i, .sg_list = &sge, .num_sge = 1,
					      .opcode = IBV_WR_RDMA_WRITE,
					      .send_flags = IBV_SEND_SIGNALED,
					      .next = i < 2 ? &wr[i + 1] : NULL };
	assert_int_equal(ibv_post_send(&qp, wr, &bad), 0);
	wait_for(3);
	assert_int_equal(provider_count(), 3);
	assert_int_equal(atomic_load(&q->st.post_calls), 1);
	assert_int_equal(atomic_load(&q->st.classic_wrs), 3);
	assert_int_equal(atomic_load(&q->st.failed_posts), 0);
}

static void send_queue_limit_is_enomem(void **state)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 1000000 }; /* 1 s each */
	struct ibv_send_wr wr[12], *bad = NULL;

	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 12; i++) {
		wr[i].wr_id = i;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].next = i < 11 ? &wr[i + 1] : NULL;
	}
	/* max_send_wr 8: the first goes, seven wait, the ninth does not fit
	 * (the provider holds one of the eight: sq.h) */
	assert_int_equal(ibv_post_send(&qp, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[8]);
	assert_int_equal(q->bl_len, 7);
}

static void inline_data_is_copied(void **state)
{
	char buf[8] = "abcdefg";
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8 };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE };
	struct ibv_send_wr *bad;

	post_n(3, 1, 10000); /* 30 ms of debt at 1 MB/s: the inline WR waits */
	assert_int_equal(ibv_post_send(&qp, &wr, &bad), 0);
	/* the WR is in the shim's backlog, not yet the provider's: what
	 * follows tests the shim's copy, not the provider's */
	assert_false(provider_saw(7));
	memcpy(buf, "XXXXXXX", 8); /* allowed: inline data is the provider's once posted */
	wait_for(4);
	assert_int_equal(provider_count(), 4);
	assert_int_equal(prov.wr_id[3], 7);
	assert_memory_equal(prov.inline_seen[3], "abcdefg", 8);
}

/* max_send_wr counts what the provider holds as well as the backlog: the
 * ninth of eight fails with ENOMEM although nothing waits in the backlog,
 * and each polled completion makes room for exactly one more. */
static void send_queue_counts_what_the_provider_holds(void **state)
{
	atomic_store(&gseg.slot[0].rate_bps, 8000000000000ull); /* tokens never lack */
	for (int i = 0; i < 8; i++)
		assert_int_equal(post_write_rc(10 + i, 100), 0);
	assert_int_equal(provider_count(), 8);
	assert_int_equal(q->bl_len, 0);
	assert_int_equal(post_write_rc(18, 100), ENOMEM);
	assert_int_equal(provider_count(), 8);
	assert_int_equal(q->bl_len, 0);
	assert_int_equal(complete_app(3), 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(post_write_rc(20 + i, 100), 0);
	assert_int_equal(post_write_rc(23, 100), ENOMEM);
	assert_int_equal(provider_count(), 11);
}

/* The time the flow's work was queued reaches the daemon's counter
 * (jst_flow_stats.queued_us): from the post until the completion that
 * leaves nothing held, and not the idle time after it. */
static void queued_time_reaches_the_daemon(void **state)
{
	struct timespec ms2 = { 0, 2000000 };
	uint32_t us;

	atomic_store(&gseg.slot[0].rate_bps, 8000000000000ull); /* tokens never lack */
	assert_int_equal(atomic_load(&cseg.st[0].queued_us), 0);
	assert_int_equal(post_write_rc(10, 100), 0);
	assert_int_equal(post_write_rc(11, 100), 0);
	nanosleep(&ms2, NULL);
	assert_int_equal(complete_app(1), 1);
	/* one is still held: still queued, not yet published in full */
	nanosleep(&ms2, NULL);
	assert_int_equal(complete_app(1), 1);
	us = atomic_load(&cseg.st[0].queued_us);
	assert_true(us >= 4000);
	/* idle: nothing more is counted */
	nanosleep(&ms2, NULL);
	assert_int_equal(post_write_rc(12, 100), 0);
	assert_true(atomic_load(&cseg.st[0].queued_us) - us < 2000);
	assert_int_equal(complete_app(1), 1);
}

/* Pace mode off (no PACE, no SPLIT, no rate): the QP posts directly, but
 * keeps at most the window in flight; the rest waits until the tags'
 * completions come back through the application's poll, which does not
 * see the tags it did not ask for and sees its own WRs' wr_ids. */
static void off_mode_window_bounds_what_is_in_flight(void **state)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE, .num_sge = 1 }, *bad;
	struct ibv_sge sge = { .addr = 0x1000, .length = 1000 };
	struct ibv_wc wc[16];

	wr.sg_list = &sge;
	shim_window_bytes = 4000;
	atomic_store(&gseg.slot[0].flags, 0);
	atomic_store(&gseg.slot[0].rate_bps, 0);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 1);
	assert_int_equal(atomic_load(&q->win.on), 1);
	for (int i = 1; i <= 6; i++) {
		wr.wr_id = (uint64_t)i;
		assert_int_equal(ibv_post_send(&qp, &wr, &bad), 0);
	}
	/* 4 x 1000 B in flight, two wait; each went as a tag (1000 B apart) */
	assert_int_equal(provider_count(), 4);
	assert_int_equal(q->bl_len, 2);
	assert_int_equal(atomic_load(&q->st.window_held), 2);
	assert_int_equal(atomic_load(&q->st.held), 0); /* no token waited for */
	assert_int_equal(prov.wr_id[0], shim_pace_window_tag(q));
	assert_false(provider_saw(1));
	/* the NIC completes them: the application sees nothing it did not ask
	 * for, and the two waiting go out from its poll */
	pthread_mutex_lock(&prov.lock);
	prov.complete_app = 1;
	pthread_mutex_unlock(&prov.lock);
	assert_int_equal(ibv_poll_cq(&cq, 16, wc), 0);
	assert_int_equal(provider_count(), 6);
	assert_int_equal(q->bl_len, 0);
	assert_int_equal(ibv_poll_cq(&cq, 16, wc), 0);
	assert_int_equal(q->win.n, 0);
	/* a signaled WR that went as a tag completes with its own wr_id */
	wr.wr_id = 77;
	wr.send_flags = IBV_SEND_SIGNALED;
	assert_int_equal(ibv_post_send(&qp, &wr, &bad), 0);
	assert_int_equal(ibv_poll_cq(&cq, 16, wc), 1);
	assert_int_equal(wc[0].wr_id, 77);
	assert_int_equal(atomic_load(&shim_window_tags), 0);
	shim_window_bytes = SHIM_WINDOW_DEFAULT;
}

/* A throughput flow with no latency flow to protect (pace mode share)
 * banks a batch of WRPOST_BATCH_OPS operations: a batch within its grant
 * goes to the provider at once, none held; with a latency flow (protect)
 * it banks WRPOST_BURST_NS and the same batch is held and let out one
 * token at a time.  A bandwidth flow banks as before in both modes. */
static void throughput_batch_goes_at_once_in_share_mode(void **state)
{
	const uint64_t ms = 1000000;

	assert_int_equal(wrpost_post_burst(JST_CLASS_THROUGHPUT, ms), WRPOST_BURST_NS);
	assert_int_equal(wrpost_burst(JST_CLASS_THROUGHPUT, ms), ms + 4 * ms);
	atomic_store(&gseg.g.pace_mode, JST_PACE_SHARE);
	assert_int_equal(wrpost_post_burst(JST_CLASS_THROUGHPUT, ms), WRPOST_BATCH_OPS * ms);
	assert_int_equal(wrpost_burst(JST_CLASS_THROUGHPUT, ms), WRPOST_BATCH_OPS * ms);
	assert_int_equal(wrpost_post_burst(JST_CLASS_BANDWIDTH, ms), WRPOST_BURST_NS);
	assert_int_equal(wrpost_burst(JST_CLASS_BANDWIDTH, ms), ms + 4 * ms);
	assert_int_equal(wrpost_post_burst(JST_CLASS_THROUGHPUT, UINT64_MAX / 2), UINT64_MAX);

	/* 1000 ops/s: 1 ms an operation; a batch of 8 */
	atomic_store(&q->cls, JST_CLASS_THROUGHPUT);
	atomic_store(&gseg.slot[0].ops_per_s, 1000);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 0);
	/* a quiet bucket: vtime long past */
	atomic_store(&cseg.st[0].bucket_vtime_ns, 0);
	post_n(8, 10, 64);
	assert_int_equal(provider_count(), 8);
	assert_int_equal(atomic_load(&q->st.held), 0);

	atomic_store(&gseg.g.pace_mode, JST_PACE_PROTECT);
	atomic_store(&cseg.st[0].bucket_vtime_ns, 0);
	complete_app(8);
	post_n(8, 20, 64);
	assert_true(provider_count() < 16);
	assert_true(atomic_load(&q->st.held) > 0);
	wait_for(16);
	assert_int_equal(provider_count(), 16);
	for (int i = 0; i < 16; i++)
		assert_int_equal(prov.wr_id[i], (i < 8 ? 10 : 12) + i);
}

/* Pace mode share: a paced QP's whole WRs go through the window too (with
 * no cap in flight a send queue of 128 MiB ran seconds ahead of the link,
 * and the daemon counted posts the link had not carried as the flow's
 * use).  Each WR is paid for once, before the window or after it; with a
 * latency flow to protect (protect) the window is off. */
static void share_mode_window_bounds_a_paced_qp(void **state)
{
	const uint64_t op = 100000000; /* 10 ops/s: 100 ms an operation */
	uint64_t before, after, v;

	shim_window_bytes = 4000;
	atomic_store(&gseg.g.pace_mode, JST_PACE_SHARE);
	atomic_store(&q->cls, JST_CLASS_THROUGHPUT);
	atomic_store(&gseg.slot[0].ops_per_s, 10);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 0);
	assert_int_equal(atomic_load(&q->win.on), 1);
	/* a quiet bucket: it banks a batch (WRPOST_BATCH_OPS operations) */
	atomic_store(&cseg.st[0].bucket_vtime_ns, 0);
	before = shim_now_ns();
	post_n(6, 1, 1000);
	after = shim_now_ns();
	/* 4 x 1000 B in flight; the fifth paid and waits for the window, the
	 * sixth waits behind it (not paid yet) */
	assert_int_equal(provider_count(), 4);
	assert_int_equal(q->bl_len, 2);
	assert_int_equal(atomic_load(&q->st.window_held), 1);
	assert_int_equal(atomic_load(&q->st.held), 1);
	v = atomic_load(&cseg.st[0].bucket_vtime_ns);
	assert_true(v >= before - WRPOST_BATCH_OPS * op + 5 * op);
	assert_true(v <= after - WRPOST_BATCH_OPS * op + 5 * op);
	/* the NIC completes them: the two go from the application's poll,
	 * the fifth not charged again */
	assert_int_equal(complete_app(16), 4);
	assert_int_equal(provider_count(), 6);
	assert_int_equal(q->bl_len, 0);
	assert_int_equal(atomic_load(&cseg.st[0].bucket_vtime_ns), v + op);
	assert_int_equal(complete_app(16), 2);
	assert_int_equal(q->win.n, 0);
	assert_int_equal(atomic_load(&shim_window_tags), 0);
	/* a latency flow registers: paced, not windowed */
	atomic_store(&gseg.g.pace_mode, JST_PACE_PROTECT);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 0);
	assert_int_equal(atomic_load(&q->win.on), 0);
	shim_window_bytes = SHIM_WINDOW_DEFAULT;
}

static atomic_int lock_taken;

static void *hold_qp_lock(void *arg)
{
	struct timespec ts = { 0, 30000000 };

	pthread_mutex_lock(&q->lock);
	atomic_store(&lock_taken, 1);
	nanosleep(&ts, NULL);
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* An application's post that finds the QP's lock held (by the progress
 * thread posting a chunk, say) waits for it and counts the wait
 * (JUSTITIA_STATS lock_waits); its WR goes all the same. */
static void a_post_that_waits_for_the_lock_is_counted(void **state)
{
	uint64_t before;
	pthread_t t;

	atomic_store(&lock_taken, 0);
	assert_int_equal(pthread_create(&t, NULL, hold_qp_lock, NULL), 0);
	while (!atomic_load(&lock_taken))
		sched_yield();
	before = atomic_load(&q->st.lock_waits);
	post_n(1, 100, 1000);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(atomic_load(&q->st.lock_waits) >= before + 1);
	wait_for(1);
	assert_true(provider_saw(100));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FAKEPROV_TEST(paced_in_order_and_not_faster),
		FAKEPROV_TEST(one_call_counts_once),
		FAKEPROV_TEST(send_queue_limit_is_enomem),
		FAKEPROV_TEST(inline_data_is_copied),
		FAKEPROV_TEST(off_mode_window_bounds_what_is_in_flight),
		FAKEPROV_TEST(send_queue_counts_what_the_provider_holds),
		FAKEPROV_TEST(queued_time_reaches_the_daemon),
		FAKEPROV_TEST(throughput_batch_goes_at_once_in_share_mode),
		FAKEPROV_TEST(share_mode_window_bounds_a_paced_qp),
		FAKEPROV_TEST(a_post_that_waits_for_the_lock_is_counted),
	};

	return fakeprov_run_tests(tests);
}

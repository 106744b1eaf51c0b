// SPDX-License-Identifier: MIT
/* Unit tests of a split message's chunks (shim/splitjob.c) against the
 * fake provider and fake daemon slot of fakeprov.h: at most a window of
 * chunks on the split QP, only a few of them signaled, the final chunk on
 * the application's QP after them all; an unsignaled message leaves no
 * final chunk behind to be matched by a later WR's completion; the next
 * message's chunks follow the previous one's on the split QP while that
 * one's final waits for its completions, only where nobody can tell. */
#include "fakeprov.h"

/* An unsignaled split message never completes, so nothing of it may stay
 * to be matched: a later signaled WRITE with the same wr_id and the final
 * chunk's length completes with its own byte_len, not the old message's. */
static void unsignaled_final_is_not_remembered(void **state)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 4000 };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .wr.rdma = { .remote_addr = 0x80000, .rkey = 9 } };
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[8];
	int got = 0;

	use_split_qp();
	pthread_mutex_lock(&prov.lock);
	prov.app_like_hw = 1;
	prov.complete_app = 1;
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	assert_int_equal(ibv_post_send(&qp, &wr, &bad), 0); /* four chunks, unsignaled */
	for (int i = 0; i < 3000 && provider_count() < 5; i++) {
		assert_int_equal(ibv_poll_cq(&cq, 8, wc), 0);
		usleep(1000);
	}
	assert_int_equal(provider_count(), 5);
	assert_ptr_equal(prov.qp[4], &qp); /* the final, with no bytes */
	assert_int_equal(prov.len[4], 0);
	assert_int_equal(atomic_load(&q->split.msg.fin_len), 0);
	post_one_write(7, 1000); /* whole, signaled */
	for (int i = 0; i < 3000 && !got; i++) {
		got = ibv_poll_cq(&cq, 8, wc);
		if (!got)
			usleep(1000);
	}
	assert_int_equal(got, 1);
	assert_int_equal(wc[0].wr_id, 7);
	assert_int_equal(wc[0].byte_len, 1000);
	pthread_mutex_lock(&prov.lock);
	prov.app_like_hw = 0;
	pthread_mutex_unlock(&prov.lock);
	drop_split_qp();
}

/* A message of 20 chunks: at most a window (4 before any completion was
 * timed) on the split QP at once, only some of them signaled (every half
 * window, and the last), each completion retiring every chunk up to it;
 * the final WR (no bytes) on the application's QP after them all. */
static void split_chunks_signal_a_few_per_window(void **state)
{
	int split = 0, sig = 0, last_split = -1;

	use_split_qp();
	post_one_write(7, 20000);
	assert_int_equal(provider_count(), SPLIT_WINDOW);
	pthread_mutex_lock(&prov.lock);
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	for (int i = 0; i < 3000 && !provider_saw(7); i++) {
		complete_app(8);
		usleep(1000);
	}
	assert_true(provider_saw(7));
	pthread_mutex_lock(&prov.lock);
	for (int i = 0; i < prov.n; i++) {
		if (prov.qp[i] != &split_qp)
			continue;
		split++;
		sig += !!(prov.flags[i] & IBV_SEND_SIGNALED);
		last_split = i;
	}
	assert_int_equal(split, 20);
	assert_true(prov.flags[last_split] & IBV_SEND_SIGNALED);
	assert_true(sig <= 20 / 2 + 2);
	assert_ptr_equal(prov.qp[prov.n - 1], &qp);
	assert_int_equal(prov.wr_id[prov.n - 1], 7);
	assert_int_equal(prov.len[prov.n - 1], 0);
	pthread_mutex_unlock(&prov.lock);
	assert_int_equal(q->split.c_done, q->split.c_posted);
	drop_split_qp();
}

/* A window of 12 (1 GB/s x a 10 us round trip, + 2) for the tests below,
 * then two messages of four 1000 B chunks each, ids 7 and 8 (the second
 * with @flags, as @op). */
static void post_two_messages(enum ibv_wr_opcode op, unsigned flags)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 4000 };
	struct ibv_send_wr wr = { .wr_id = 8, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED | flags,
				  .wr.rdma = { .remote_addr = 0x90000, .rkey = 9 } };
	struct ibv_send_wr *bad = NULL;

	use_split_qp();
	pthread_mutex_lock(&q->lock);
	q->split.c_min_cur_ns = q->split.c_min_prev_ns = 10000;
	q->split.c_epoch_ns = mono();
	pthread_mutex_unlock(&q->lock);
	post_one_write(7, 4000);
	assert_int_equal(provider_count(), 4);
	assert_int_equal(ibv_post_send(&qp, &wr, &bad), 0);
}

/* Complete everything; the provider's WRs from @from on must then be: four
 * chunks of message 7 (unless @from is past them), its final, four of 8,
 * its final, as @order says ('s' split chunk, a digit: that message's
 * final, zero bytes, on the application's QP). */
static void complete_and_check(int from, const char *order)
{
	int n = from + (int)strlen(order);

	pthread_mutex_lock(&prov.lock);
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	for (int i = 0; i < 3000 && (provider_count() < n || !provider_saw(8)); i++) {
		complete_app(8);
		usleep(1000);
	}
	pthread_mutex_lock(&prov.lock);
	assert_int_equal(prov.n, n);
	for (int i = from; i < n; i++) {
		char c = order[i - from];

		if (c == 's') {
			assert_ptr_equal(prov.qp[i], &split_qp);
			continue;
		}
		assert_ptr_equal(prov.qp[i], &qp);
		assert_int_equal(prov.wr_id[i], (uint64_t)(c - '0'));
		assert_int_equal(prov.len[i], 0);
	}
	pthread_mutex_unlock(&prov.lock);
	assert_int_equal(q->split.c_done, q->split.c_posted);
	assert_null(q->bl_head);
	drop_split_qp();
}

/* Two split RDMA WRITEs: while the first one's final waits for its chunks'
 * completions, the second one's chunks go on the split QP behind them (the
 * same order at the responder; the first final moves no bytes), within
 * one window; each final still goes on the application's QP only after
 * its own chunks completed, in the application's order. */
static void next_write_follows_during_the_round_trip(void **state)
{
	post_two_messages(IBV_WR_RDMA_WRITE, 0);
	assert_int_equal(provider_count(), 8); /* no completion yet */
	pthread_mutex_lock(&prov.lock);
	for (int i = 0; i < 8; i++)
		assert_ptr_equal(prov.qp[i], &split_qp);
	/* each message's last chunk is signaled: its final needs it */
	assert_true(prov.flags[3] & IBV_SEND_SIGNALED);
	assert_true(prov.flags[7] & IBV_SEND_SIGNALED);
	pthread_mutex_unlock(&prov.lock);
	complete_and_check(8, "78");
}

/* A fenced message starts when what precedes it completed, and so do its
 * chunks: no following. */
static void fenced_message_does_not_follow(void **state)
{
	post_two_messages(IBV_WR_RDMA_WRITE, IBV_SEND_FENCE);
	usleep(20000);
	assert_int_equal(provider_count(), 4);
	complete_and_check(4, "7ssss8");
}

/* A READ after a WRITE does not follow (only messages of one opcode do). */
static void read_after_write_does_not_follow(void **state)
{
	post_two_messages(IBV_WR_RDMA_READ, 0);
	usleep(20000);
	assert_int_equal(provider_count(), 4);
	complete_and_check(4, "7ssss8");
}

/* Chunks are whole packets of the path MTU: the slot's 1000 B on a 256 B
 * MTU splits a 2048 B WRITE in 768 B chunks (three packets each, not four
 * with a partial one); an MTU above the chunk leaves the chunk as it is. */
static void chunks_are_whole_packets(void **state)
{
	use_split_qp();
	pthread_mutex_lock(&q->lock);
	q->split.mtu = 256;
	pthread_mutex_unlock(&q->lock);
	post_one_write(7, 2048);
	assert_int_equal(provider_count(), 3); /* 768 + 768 + 512 */
	pthread_mutex_lock(&prov.lock);
	assert_int_equal(prov.len[0], 768);
	assert_int_equal(prov.len[1], 768);
	assert_int_equal(prov.len[2], 512);
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	for (int i = 0; i < 3000 && !provider_saw(7); i++) {
		complete_app(8);
		usleep(1000);
	}
	assert_true(provider_saw(7)); /* the final, after the three */
	assert_int_equal(provider_count(), 4);
	drop_split_qp();
	assert_int_equal(wrpost_whole_packets(5120, 4096), 4096);
	assert_int_equal(wrpost_whole_packets(5120, 1024), 5120);
	assert_int_equal(wrpost_whole_packets(5120, 0), 5120);
	assert_int_equal(wrpost_whole_packets(1000, 4096), 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FAKEPROV_TEST(unsignaled_final_is_not_remembered),
		FAKEPROV_TEST(split_chunks_signal_a_few_per_window),
		FAKEPROV_TEST(next_write_follows_during_the_round_trip),
		FAKEPROV_TEST(fenced_message_does_not_follow),
		FAKEPROV_TEST(read_after_write_does_not_follow),
		FAKEPROV_TEST(chunks_are_whole_packets),
	};

	return fakeprov_run_tests(tests);
}

// SPDX-License-Identifier: MIT
/* Unit tests of the ordering barrier (shim/order.c) against the fake
 * provider and fake daemon slot of fakeprov.h: a split message's chunks
 * wait for a barrier behind the application QP's earlier WRs, whose
 * completion the application never sees; the barrier has the rights of the
 * message (a READ's is a READ); it never takes one of the application's
 * send queue entries; a barrier that never comes back sends messages whole
 * after ORDER_WAIT_NS, and one that comes back late gives splitting back. */
#include "fakeprov.h"

/* The ordering barrier takes an entry of the provider's send queue, never
 * one of the application's: with seven WRs outstanding and a split message
 * (the eighth, max_send_wr 8) waiting behind the barrier, the provider is
 * full; a ninth fails as natively, and after one completion a WR fits again
 * and goes behind the message, in order, nothing flushed. */
static void barrier_never_costs_the_application_an_entry(void **state)
{
	use_split_qp();
	pthread_mutex_lock(&prov.lock);
	prov.sq_cap = 8;
	pthread_mutex_unlock(&prov.lock);
	for (int i = 0; i < 7; i++)
		assert_int_equal(post_write_rc(10 + i, 100), 0);
	assert_int_equal(post_write_rc(7, 4000), 0); /* four chunks, after a barrier */
	assert_int_equal(provider_count(), 8);
	assert_ptr_equal(prov.qp[7], &qp);
	assert_int_equal(prov.len[7], 0);           /* the barrier */
	assert_int_equal(post_write_rc(30, 100), ENOMEM);
	assert_int_equal(complete_app(1), 1);
	assert_int_equal(post_write_rc(31, 100), 0); /* behind the message */
	assert_int_equal(q->bl_len, 2);
	/* the rest completes: the barrier's completion (dropped) lets the
	 * chunks go, then the message's last chunk, then 31 */
	pthread_mutex_lock(&prov.lock);
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	for (int i = 0; i < 3000 && !provider_saw(31); i++) {
		complete_app(16);
		usleep(1000);
	}
	assert_true(provider_saw(31));
	assert_int_equal(prov.wr_id[prov.n - 2], 7);
	assert_ptr_equal(prov.qp[prov.n - 2], &qp);
	assert_int_equal(prov.wr_id[prov.n - 1], 31);
	assert_int_equal(atomic_load(&q->st.split[SPLITMSG_ONE_SIDED]), 1);
	drop_split_qp();
}

/* A WR went on the application's QP before a split message: the chunks,
 * on another QP, wait for a barrier behind it to complete, whose completion
 * the application's ibv_poll_cq drops (its own comes through), then go at
 * once; the message's final chunk goes last.  (Without the barrier a small
 * WRITE then a large READ of the same bytes could read stale data.) */
static void split_waits_for_earlier_wrs(void **state)
{
	struct ibv_wc wc[8];
	int got = 0;

	use_split_qp();
	post_one_write(5, 100);   /* whole, straight to the provider */
	post_one_write(7, 4000);  /* four data chunks, then a zero-length final */
	assert_int_equal(provider_count(), 2);
	assert_ptr_equal(prov.qp[1], &qp);  /* the barrier, not a chunk */
	assert_int_equal(prov.len[1], 0);
	assert_true(prov.wr_id[1] & 1);
	usleep(20000);
	assert_int_equal(provider_count(), 2); /* nothing overtakes it */
	pthread_mutex_lock(&prov.lock);
	prov.complete_app = 1;
	pthread_mutex_unlock(&prov.lock);
	got = ibv_poll_cq(&cq, 8, wc);
	assert_int_equal(got, 1);           /* the app's WRITE; the barrier dropped */
	assert_int_equal(wc[0].wr_id, 5);
	assert_int_equal(provider_count(), 6); /* the chunks went from that poll */
	for (int i = 2; i < 6; i++)
		assert_ptr_equal(prov.qp[i], &split_qp);
	pthread_mutex_lock(&prov.lock);
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	for (int i = 0; i < 3000 && provider_count() < 7; i++) {
		got = ibv_poll_cq(&cq, 8, wc);
		usleep(1000);
	}
	assert_int_equal(provider_count(), 7);
	assert_ptr_equal(prov.qp[6], &qp);    /* the final: the app's WR, no bytes */
	assert_int_equal(prov.wr_id[6], 7);
	assert_int_equal(prov.len[6], 0);
	assert_int_equal(atomic_load(&q->st.split[SPLITMSG_ONE_SIDED]), 1);
	drop_split_qp();
}

/* The barrier of a READ message is a zero-length READ with the message's
 * rkey (which grants READ, not necessarily WRITE: Soft-RoCE failed the QP
 * on a zero-length WRITE with it); that of a WRITE a zero-length WRITE. */
static void barrier_has_the_rights_of_the_message(void **state)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 4000 };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = 0x80000, .rkey = 77 } };
	struct ibv_send_wr *bad = NULL;

	use_split_qp();
	post_one_write(5, 100);
	assert_int_equal(ibv_post_send(&qp, &wr, &bad), 0);
	assert_int_equal(provider_count(), 2);
	assert_true(prov.wr_id[1] & 1);
	assert_int_equal(prov.len[1], 0);
	assert_int_equal(prov.op[1], IBV_WR_RDMA_READ);
	assert_int_equal(prov.rkey[1], 77);
	assert_int_equal(complete_app(8), 1); /* 5; the barrier dropped */
	post_one_write(7, 4000);
	assert_true(provider_count() > 2);
	drop_split_qp();
}

/* The barrier never comes back (the application polls its CQ some other
 * way): after ORDER_WAIT_NS the message goes whole, in order, and so do
 * later ones without another wait. */
static void barrier_lost_sends_whole(void **state)
{
	use_split_qp();
	post_one_write(5, 100);
	post_one_write(7, 4000);
	assert_int_equal(provider_count(), 2);
	for (int i = 0; i < 3000 && provider_count() < 3; i++)
		usleep(1000);
	assert_int_equal(provider_count(), 3);
	assert_ptr_equal(prov.qp[2], &qp);
	assert_int_equal(prov.wr_id[2], 7);
	assert_int_equal(prov.len[2], 4000);
	post_one_write(8, 4000);
	wait_for(4);
	assert_int_equal(provider_count(), 4);
	assert_ptr_equal(prov.qp[3], &qp);
	assert_int_equal(prov.len[3], 4000);
	assert_int_equal(atomic_load(&q->st.split[SPLITMSG_ONE_SIDED]), 0);
	drop_split_qp();
}

/* A barrier that comes back after the QP gave up on it (messages went
 * whole meanwhile) gives the QP its splitting back. */
static void late_barrier_gives_splitting_back(void **state)
{
	int split = 0;

	use_split_qp();
	post_one_write(5, 100);
	post_one_write(7, 4000);
	for (int i = 0; i < 3000 && provider_count() < 3; i++)
		usleep(1000);
	assert_int_equal(provider_count(), 3); /* 7 went whole */
	assert_true(q->ord_blind);
	assert_int_equal(complete_app(8), 2); /* 5 and 7; the barrier is the shim's */
	assert_false(q->ord_blind);
	post_one_write(9, 4000);
	for (int i = 0; i < 3000 && !split; i++) {
		complete_app(8);
		pthread_mutex_lock(&prov.lock);
		for (int k = 3; k < prov.n && k < MAXW; k++)
			split |= prov.qp[k] == &split_qp;
		pthread_mutex_unlock(&prov.lock);
		usleep(1000);
	}
	assert_true(split);
	drop_split_qp();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FAKEPROV_TEST(split_waits_for_earlier_wrs),
		FAKEPROV_TEST(barrier_lost_sends_whole),
		FAKEPROV_TEST(late_barrier_gives_splitting_back),
		FAKEPROV_TEST(barrier_has_the_rights_of_the_message),
		FAKEPROV_TEST(barrier_never_costs_the_application_an_entry),
	};

	return fakeprov_run_tests(tests);
}

// SPDX-License-Identifier: MIT
/* Unit tests of the shim's pacing (shim/pace.c) against a fake provider and
 * a fake daemon slot: the post call never blocks, the provider receives the
 * work requests in the application's order and no faster than the granted
 * rate, inline data is copied, the send queue limit holds, a refused WR
 * becomes a flush completion, losing the daemon fails open without letting
 * later WRs overtake a split message, a fork()ed child forgets the parent's
 * QPs, and messages queued whole are split once the daemon's chunk shrinks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <sys/wait.h>

#include "../shim-all.h"

#define MAXW 256

static struct ibv_cq split_cq;
static struct ibv_qp split_qp;

static struct {
	pthread_mutex_t lock;
	uint64_t wr_id[MAXW], t[MAXW];
	struct ibv_qp *qp[MAXW];
	uint32_t qpn[MAXW], len[MAXW], rkey[MAXW], flags[MAXW];
	enum ibv_wr_opcode op[MAXW];
	char inline_seen[MAXW][8];
	int n, fail_from;
	int complete_split, split_done; /* chunks on split_qp: complete them? */
	int complete_app, app_done;     /* WRs on the application's QP */
	int sq_cap;                     /* the application QP's send queue (0: no limit) */
	int app_like_hw;                /* app QP: unsignaled WRs give no CQE; byte_len set */
} prov = { .lock = PTHREAD_MUTEX_INITIALIZER, .fail_from = -1 };

static struct ibv_qp qp;

/* WRs the provider holds on the application's QP (not yet polled). */
static int app_held_locked(void)
{
	int n = 0;

	for (int i = prov.app_done; i < prov.n && i < MAXW; i++)
		n += prov.qp[i] == &qp;
	return n;
}

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int fake_post_send(struct ibv_qp *to, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	pthread_mutex_lock(&prov.lock);
	for (; wr; wr = wr->next) {
		if (prov.fail_from >= 0 && prov.n >= prov.fail_from) {
			*bad = wr;
			pthread_mutex_unlock(&prov.lock);
			return EINVAL;
		}
		if (to == &qp && prov.sq_cap && app_held_locked() >= prov.sq_cap) {
			*bad = wr;
			pthread_mutex_unlock(&prov.lock);
			return ENOMEM;
		}
		if (prov.n < MAXW) {
			prov.wr_id[prov.n] = wr->wr_id;
			prov.qp[prov.n] = to;
			prov.t[prov.n] = mono();
			prov.qpn[prov.n] = to->qp_num;
			prov.op[prov.n] = wr->opcode;
			prov.flags[prov.n] = wr->send_flags;
			prov.rkey[prov.n] = wr->wr.rdma.rkey;
			prov.len[prov.n] = wr->num_sge > 0 ? wr->sg_list[0].length : 0;
			if (wr->send_flags & IBV_SEND_INLINE)
				memcpy(prov.inline_seen[prov.n], (void *)(uintptr_t)wr->sg_list[0].addr, 8);
		}
		prov.n++;
	}
	pthread_mutex_unlock(&prov.lock);
	return 0;
}

static struct ibv_cq cq;

/* The application's CQ: every WR posted on its QP completes, in order. */
static int fake_poll_app_cq(int n, struct ibv_wc *wc)
{
	int got = 0;

	pthread_mutex_lock(&prov.lock);
	for (; prov.complete_app && prov.app_done < prov.n && prov.app_done < MAXW && got < n;
	     prov.app_done++) {
		if (prov.qp[prov.app_done] != &qp)
			continue;
		if (prov.app_like_hw && !(prov.flags[prov.app_done] & IBV_SEND_SIGNALED))
			continue;
		memset(&wc[got], 0, sizeof(wc[got]));
		if (prov.app_like_hw)
			wc[got].byte_len = prov.len[prov.app_done];
		wc[got].wr_id = prov.wr_id[prov.app_done];
		wc[got].status = IBV_WC_SUCCESS;
		wc[got].opcode = IBV_WC_RDMA_WRITE;
		wc[got].qp_num = qp.qp_num;
		got++;
	}
	pthread_mutex_unlock(&prov.lock);
	return got;
}

static int fake_poll_cq(struct ibv_cq *c, int n, struct ibv_wc *wc)
{
	int got = 0;

	if (c == &cq)
		return fake_poll_app_cq(n, wc);
	if (c != &split_cq)
		return 0;
	pthread_mutex_lock(&prov.lock);
	for (; prov.complete_split && prov.split_done < prov.n && prov.split_done < MAXW &&
	       got < n; prov.split_done++) {
		/* (the split QP signals some WRs only, as sq_sig_all is 0) */
		if (prov.qp[prov.split_done] != &split_qp ||
		    !(prov.flags[prov.split_done] & IBV_SEND_SIGNALED))
			continue;
		memset(&wc[got], 0, sizeof(wc[got]));
		wc[got].wr_id = prov.wr_id[prov.split_done];
		wc[got].status = IBV_WC_SUCCESS;
		wc[got].qp_num = split_qp.qp_num;
		got++;
	}
	pthread_mutex_unlock(&prov.lock);
	return got;
}

static int provider_count(void)
{
	int n;

	pthread_mutex_lock(&prov.lock);
	n = prov.n;
	pthread_mutex_unlock(&prov.lock);
	return n;
}

/* Has the provider been given the WR with this wr_id? */
static bool provider_saw(uint64_t wr_id)
{
	bool saw = false;

	pthread_mutex_lock(&prov.lock);
	for (int i = 0; i < prov.n && i < MAXW; i++)
		saw |= prov.wr_id[i] == wr_id;
	pthread_mutex_unlock(&prov.lock);
	return saw;
}

static struct ibv_device fake_dev = { .name = "fake0" };
static struct verbs_context vctx;
static struct {
	struct jst_shm_global g;
	struct jst_flow_ctl slot[1];
} gseg;
static struct {
	struct jst_shm_client c;
	struct jst_flow_stats st[1];
} cseg;
static struct shim_qp *q;

static int ok_destroy(struct ibv_qp *x) { return 0; }
static int ok_close(struct ibv_context *c) { return 0; }

static int setup(void **state)
{
	memset(&vctx, 0, sizeof(vctx));
	vctx.sz = sizeof(vctx);
	vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	vctx.context.device = &fake_dev;
	vctx.context.ops.post_send = fake_post_send;
	vctx.context.ops.poll_cq = fake_poll_cq;
	cq.context = &vctx.context;
	memset(&qp, 0, sizeof(qp));
	qp.context = &vctx.context;
	qp.qp_num = 21;
	qp.qp_type = IBV_QPT_RC;
	qp.send_cq = &cq;
	pthread_mutex_lock(&prov.lock);
	prov.n = 0;
	prov.fail_from = -1;
	prov.complete_split = 0;
	prov.split_done = 0;
	prov.complete_app = 0;
	prov.app_done = 0;
	prov.sq_cap = 0;
	pthread_mutex_unlock(&prov.lock);
	memset(&gseg, 0, sizeof(gseg));
	memset(&cseg, 0, sizeof(cseg));
	atomic_store(&gseg.g.flags, JST_G_RUNNING);
	atomic_store(&gseg.g.heartbeat_ns, mono());
	atomic_store(&gseg.slot[0].state, JST_SLOT_ACTIVE);
	atomic_store(&gseg.slot[0].flow_id, 5);
	atomic_store(&gseg.slot[0].flags, JST_F_PACE);
	atomic_store(&gseg.slot[0].rate_bps, 8000000); /* 1 MB/s: 1000 B = 1 ms */
	q = shim_ops_track_qp(&qp, "ibv_create_qp", 8);
	assert_non_null(q);
	shim_order_barrier = 1; /* (the default; a test may turn it off) */
	/* no daemon answered registration; play the daemon from here on */
	pthread_mutex_lock(&cl.lock);
	atomic_store(&cl.global, &gseg.g);
	cl.need_fail_open = 0;
	cl.retry_at_ns = UINT64_MAX;
	pthread_mutex_unlock(&cl.lock);
	q->flow_id = 5;
	atomic_store(&q->slot, &gseg.slot[0]);
	atomic_store(&q->shm_stats, &cseg.st[0]);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 0);
	return 0;
}

static int teardown(void **state)
{
	fin_drop_all(&q->split.msg); /* (the fake split QP has no teardown) */
	shim_pace_qp_gone(q);
	shim_qp_destroy(&qp, ok_destroy);
	shim_ctx_close(&vctx.context, ok_close);
	return 0;
}

static void post_n(int n, uint64_t first_id, uint32_t len)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = { .addr = 0x1000, .length = len };
		struct ibv_send_wr wr = { .wr_id = first_id + i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad = NULL;

		assert_int_equal(ibv_post_send(&qp, &wr, &bad), 0);
	}
}

static void wait_for(int n)
{
	for (int i = 0; i < 5000 && provider_count() < n; i++)
		usleep(1000);
}

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

/* An application polling the send CQ of a QP with a backlog is told the
 * shim holds work back (so an empty poll yields), and no longer once the
 * backlog is gone; a CQ with no paced QP on it never is. */
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

static void refused_wr_becomes_flush_completion(void **state)
{
	struct ibv_wc wc[8];
	int got = 0;

	pthread_mutex_lock(&prov.lock);
	prov.fail_from = 2; /* the provider refuses from the third WR on */
	pthread_mutex_unlock(&prov.lock);
	post_n(5, 40, 1000);
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

/* Give @q a connected split QP (the fake one) and a flow split at 1000 B,
 * paced at 1 GB/s. */
static void use_split_qp(void)
{
	memset(&split_cq, 0, sizeof(split_cq));
	split_cq.context = &vctx.context;
	memset(&split_qp, 0, sizeof(split_qp));
	split_qp.context = &vctx.context;
	split_qp.qp_num = 22;
	split_qp.qp_type = IBV_QPT_RC;
	split_qp.send_cq = &split_cq;
	q->split.qp = &split_qp;
	q->split.cq = &split_cq;
	q->split.peer_split_qpn = 23;
	atomic_store(&q->split.state, SPLIT_READY);
	atomic_fetch_add(&shim_split_qps, 1); /* as shim_split_create() does */
	atomic_store(&gseg.slot[0].flags, JST_F_PACE | JST_F_SPLIT);
	atomic_store(&gseg.slot[0].chunk_bytes, 1000);
	atomic_store(&gseg.slot[0].rate_bps, 8000000000ull);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 0);
}

static void drop_split_qp(void)
{
	atomic_fetch_sub(&shim_split_qps, 1);
	pthread_mutex_lock(&q->lock);
	fin_drop_all(&q->split.msg);
	memset(&q->split, 0, sizeof(q->split));
	q->split.peer_split_qpn = -1;
	pthread_mutex_unlock(&q->lock);
}

/* One WRITE of @len bytes, id @id. */
static void post_one_write(uint64_t id, uint32_t len)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = len };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = 0x80000, .rkey = 9 } };
	struct ibv_send_wr *bad = NULL;

	assert_int_equal(ibv_post_send(&qp, &wr, &bad), 0);
}

/* Poll @n completions of the application's QP (the fake completes what it
 * holds, in order); returns how many came. */
static int complete_app(int n)
{
	struct ibv_wc wc[16];
	int got;

	pthread_mutex_lock(&prov.lock);
	prov.complete_app = 1;
	pthread_mutex_unlock(&prov.lock);
	got = ibv_poll_cq(&cq, n, wc);
	pthread_mutex_lock(&prov.lock);
	prov.complete_app = 0;
	pthread_mutex_unlock(&prov.lock);
	for (int i = 0; i < got; i++)
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
	return got;
}

static int post_write_rc(uint64_t id, uint32_t len)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = len };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = 0x80000, .rkey = 9 } };
	struct ibv_send_wr *bad = NULL;

	return ibv_post_send(&qp, &wr, &bad);
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

/* A split message has chunks in flight when the daemon goes away: the WRs
 * posted next, now unpaced, still wait behind the message's last chunk. */
static void fail_open_keeps_order_behind_split(void **state)
{
	struct ibv_wc wc[4];

	use_split_qp();
	/* four chunks: three on the split QP now, the last when they are done */
	post_one_write(7, 4000);
	assert_int_equal(provider_count(), 3);
	for (int i = 0; i < 3; i++)
		assert_ptr_equal(prov.qp[i], &split_qp);
	atomic_store(&gseg.g.flags, 0);
	shim_pace_fail_open();
	assert_int_equal(atomic_load(&q->direct), 1);
	post_n(2, 50, 100);
	assert_int_equal(provider_count(), 3); /* not ahead of the message */

	pthread_mutex_lock(&prov.lock);
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	for (int i = 0; i < 3000 && provider_count() < 6; i++) {
		ibv_poll_cq(&cq, 4, wc); /* progresses the backlog */
		usleep(1000);
	}
	assert_int_equal(provider_count(), 6);
	assert_ptr_equal(prov.qp[3], &qp);
	assert_int_equal(prov.wr_id[3], 7);
	assert_int_equal(prov.wr_id[4], 50);
	assert_int_equal(prov.wr_id[5], 51);
	post_n(1, 60, 100); /* the backlog is gone: straight through */
	assert_int_equal(provider_count(), 7);
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
	post_one_write(7, 4000);  /* four chunks */
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
	assert_int_equal(provider_count(), 5); /* the chunks went from that poll */
	for (int i = 2; i < 5; i++)
		assert_ptr_equal(prov.qp[i], &split_qp);
	pthread_mutex_lock(&prov.lock);
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	for (int i = 0; i < 3000 && provider_count() < 6; i++) {
		got = ibv_poll_cq(&cq, 8, wc);
		usleep(1000);
	}
	assert_int_equal(provider_count(), 6);
	assert_ptr_equal(prov.qp[5], &qp);
	assert_int_equal(prov.wr_id[5], 7);
	assert_int_equal(atomic_load(&q->st.split[SPLITMSG_ONE_SIDED]), 1);
	drop_split_qp();
}

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
	for (int i = 0; i < 3000 && provider_count() < 4; i++) {
		assert_int_equal(ibv_poll_cq(&cq, 8, wc), 0);
		usleep(1000);
	}
	assert_int_equal(provider_count(), 4);
	assert_ptr_equal(prov.qp[3], &qp); /* the final chunk, 1000 bytes */
	assert_int_equal(prov.len[3], 1000);
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
 * the final chunk on the application's QP after them all. */
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
	assert_int_equal(split, 19);
	assert_true(prov.flags[last_split] & IBV_SEND_SIGNALED);
	assert_true(sig <= 19 / 2 + 2);
	assert_ptr_equal(prov.qp[prov.n - 1], &qp);
	assert_int_equal(prov.wr_id[prov.n - 1], 7);
	assert_int_equal(prov.len[prov.n - 1], 1000);
	pthread_mutex_unlock(&prov.lock);
	assert_int_equal(q->split.c_done, q->split.c_posted);
	drop_split_qp();
}

/* A message's split window never shrinks: chunks posted unsignaled before a
 * token wait are followed by more up to a signaled one, even when the
 * window the rate and delay give drops meanwhile below what is in flight
 * (stopping there would wait forever for completions nobody signaled). */
static void split_window_never_shrinks_under_a_message(void **state)
{
	use_split_qp();
	atomic_store(&gseg.slot[0].rate_bps, 8000000); /* 1000 B chunks: 1 ms each */
	q->split.c_delay_ns = 14000000;                /* window 1 MB/s * 14 ms + 2 = 16 */
	pthread_mutex_lock(&prov.lock);
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	post_one_write(7, 20000);
	for (int i = 0; i < 3000 && provider_count() < 6; i++)
		usleep(1000);
	/* five or more in flight, none signaled yet (every 8th is) */
	pthread_mutex_lock(&q->lock);
	assert_true(q->bl_head && q->bl_head->inflight >= 5);
	assert_true(q->split.c_since_sig >= 5);
	q->split.c_delay_ns = 1; /* now the window would be 4 */
	pthread_mutex_unlock(&q->lock);
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

/* RESET with chunks in flight and WRs queued: all of it is gone, as the
 * provider's WRs are, and the QP works again right away. */
static void reset_drops_backlog_and_chunks(void **state)
{
	use_split_qp();
	post_one_write(7, 4000);         /* three chunks in flight, never done */
	post_n(2, 50, 100);              /* queued behind it */
	assert_int_equal(provider_count(), 3);
	assert_true(atomic_load(&shim_pace_queued) > 0);
	shim_pace_qp_reset(q);
	assert_null(q->bl_head);
	assert_int_equal(q->bl_len, 0);
	assert_int_equal(q->busy, 0);
	assert_int_equal(atomic_load(&shim_pace_queued), 0);
	post_n(1, 60, 100);
	assert_int_equal(provider_count(), 4); /* straight through */
	assert_int_equal(prov.wr_id[3], 60);
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
	assert_int_equal(q->bl_head->n_chunks, 16);
	assert_int_equal(q->bl_head->inflight, SPLIT_WINDOW);
	assert_int_equal(q->bl_len, 3);
	q->split.qp = NULL;
	atomic_store(&q->split.state, SPLIT_NONE);
	atomic_fetch_sub(&shim_split_qps, 1);
	pthread_mutex_unlock(&q->lock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(paced_in_order_and_not_faster, setup, teardown),
		cmocka_unit_test_setup_teardown(one_call_counts_once, setup, teardown),
		cmocka_unit_test_setup_teardown(progress_says_when_work_is_held_back, setup, teardown),
		cmocka_unit_test_setup_teardown(send_queue_limit_is_enomem, setup, teardown),
		cmocka_unit_test_setup_teardown(inline_data_is_copied, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_wr_becomes_flush_completion, setup, teardown),
		cmocka_unit_test_setup_teardown(daemon_gone_fails_open, setup, teardown),
		cmocka_unit_test_setup_teardown(fail_open_keeps_order_behind_split, setup, teardown),
		cmocka_unit_test_setup_teardown(fork_child_forgets_parent, setup, teardown),
		cmocka_unit_test_setup_teardown(recycled_slot_is_not_obeyed, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_completion_has_the_wr_opcode, setup, teardown),
		cmocka_unit_test_setup_teardown(off_mode_window_bounds_what_is_in_flight, setup,
						teardown),
		cmocka_unit_test_setup_teardown(latency_class_is_direct, setup, teardown),
		cmocka_unit_test_setup_teardown(backlog_split_when_chunk_shrinks, setup, teardown),
		cmocka_unit_test_setup_teardown(split_waits_for_earlier_wrs, setup, teardown),
		cmocka_unit_test_setup_teardown(barrier_lost_sends_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(late_barrier_gives_splitting_back, setup, teardown),
		cmocka_unit_test_setup_teardown(barrier_has_the_rights_of_the_message, setup,
						teardown),
		cmocka_unit_test_setup_teardown(unsignaled_final_is_not_remembered, setup, teardown),
		cmocka_unit_test_setup_teardown(split_chunks_signal_a_few_per_window, setup,
						teardown),
		cmocka_unit_test_setup_teardown(split_window_never_shrinks_under_a_message, setup,
						teardown),
		cmocka_unit_test_setup_teardown(reset_drops_backlog_and_chunks, setup, teardown),
		cmocka_unit_test_setup_teardown(mode_change_seen_on_post, setup, teardown),
		cmocka_unit_test_setup_teardown(send_queue_counts_what_the_provider_holds, setup,
						teardown),
		cmocka_unit_test_setup_teardown(barrier_never_costs_the_application_an_entry, setup,
						teardown),
		cmocka_unit_test_setup_teardown(provider_without_room_keeps_the_backlog, setup,
						teardown),
	};

	setenv("JUSTITIA_SOCKET", "/nonexistent/justitiad.sock", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

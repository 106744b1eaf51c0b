/* SPDX-License-Identifier: MIT */
/* The fake provider and fake daemon slot of the pacer's unit tests
 * (test_pace.c, test_drain.c, test_order.c, test_splitjob.c,
 * test_pacectl.c).  A test file includes this header only, once: it brings
 * cmocka and every shim module (../shim-all.h, so tests reach statics).
 *
 * The provider records each WR it is given (prov), refuses from prov.fail_from
 * on, holds at most prov.sq_cap WRs on the application's QP, and completes
 * what it holds in order when asked (complete_app, complete_split).  The
 * daemon's segments (gseg, cseg) give flow 5 one active slot, paced at
 * 1 MB/s; setup() tracks the application's QP (qp, 21, max_send_wr 8) as
 * q, managed by that slot.  use_split_qp() adds a connected split QP (22).
 *
 * Everything is static: each test file is one translation unit.  The
 * helpers a test may call are static inline, so that a file that does not
 * use one of them builds without warnings. */
#ifndef JST_TESTS_UNIT_FAKEPROV_H
#define JST_TESTS_UNIT_FAKEPROV_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>

#include "../shim-all.h"

#define MAXW 256 /* WRs the provider records */

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
				memcpy(prov.inline_seen[prov.n],
				       (void *)(uintptr_t)wr->sg_list[0].addr, 8);
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

static inline int provider_count(void)
{
	int n;

	pthread_mutex_lock(&prov.lock);
	n = prov.n;
	pthread_mutex_unlock(&prov.lock);
	return n;
}

/* Has the provider been given the WR with this wr_id? */
static inline bool provider_saw(uint64_t wr_id)
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

/* A fresh RC QP @x of the fake context, number @qpn, sending to @send_cq. */
static void fake_rc_qp(struct ibv_qp *x, uint32_t qpn, struct ibv_cq *send_cq)
{
	memset(x, 0, sizeof(*x));
	x->context = &vctx.context;
	x->qp_num = qpn;
	x->qp_type = IBV_QPT_RC;
	x->send_cq = send_cq;
}

/* A fresh provider and daemon: q paced at 1 MB/s by slot 0 of flow 5, the
 * ordering barrier on, no daemon connection to lose. */
static int setup(void **state)
{
	memset(&vctx, 0, sizeof(vctx));
	vctx.sz = sizeof(vctx);
	vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	vctx.context.device = &fake_dev;
	vctx.context.ops.post_send = fake_post_send;
	vctx.context.ops.poll_cq = fake_poll_cq;
	cq.context = &vctx.context;
	fake_rc_qp(&qp, 21, &cq);
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
	atomic_store(&gseg.g.heartbeat_ns, shim_now_ns()); /* (the shim's clock: vclock.h) */
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

/* @n signaled WRITEs of @len bytes, ids from @first_id, one post each. */
static inline void post_n(int n, uint64_t first_id, uint32_t len)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = { .addr = 0x1000, .length = len };
		struct ibv_send_wr wr = { .wr_id = first_id + i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad = NULL;

		assert_int_equal(ibv_post_send(&qp, &wr, &bad), 0);
	}
}

/* Wait (5 s at most) until the provider was given @n WRs in all. */
static inline void wait_for(int n)
{
	for (int i = 0; i < 5000 && provider_count() < n; i++)
		usleep(1000);
}

/* Give @q a connected split QP (the fake one) and a flow split at 1000 B,
 * paced at 1 GB/s. */
static inline void use_split_qp(void)
{
	memset(&split_cq, 0, sizeof(split_cq));
	split_cq.context = &vctx.context;
	fake_rc_qp(&split_qp, 22, &split_cq);
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

static inline void drop_split_qp(void)
{
	atomic_fetch_sub(&shim_split_qps, 1);
	pthread_mutex_lock(&q->lock);
	fin_drop_all(&q->split.msg);
	memset(&q->split, 0, sizeof(q->split));
	q->split.peer_split_qpn = -1;
	pthread_mutex_unlock(&q->lock);
}

/* One WRITE of @len bytes, id @id: what ibv_post_send returns. */
static inline int post_write_rc(uint64_t id, uint32_t len)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = len };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = 0x80000, .rkey = 9 } };
	struct ibv_send_wr *bad = NULL;

	return ibv_post_send(&qp, &wr, &bad);
}

/* Poll @n completions of the application's QP (the fake completes what it
 * holds, in order); returns how many came. */
static inline int complete_app(int n)
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

/* One WRITE of @len bytes, id @id, which the shim takes. */
static inline void post_one_write(uint64_t id, uint32_t len)
{
	assert_int_equal(post_write_rc(id, len), 0);
}

/* One test, with the fake provider set up before it and torn down after. */
#define FAKEPROV_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* Run @tests (an array of FAKEPROV_TEST) with no daemon to find: the
 * tests play the daemon through gseg and cseg. */
#define fakeprov_run_tests(tests) \
	(setenv("JUSTITIA_SOCKET", "/nonexistent/justitiad.sock", 1), \
	 cmocka_run_group_tests(tests, NULL, NULL))

#endif /* JST_TESTS_UNIT_FAKEPROV_H */

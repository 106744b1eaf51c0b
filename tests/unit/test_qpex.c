// SPDX-License-Identifier: MIT
/* Unit tests of the ibv_wr_* wrappers (shim/qpex.c) on a paced QP, against
 * a fake provider and a fake daemon slot: a batch is buffered and reaches
 * the provider through its classic post_send only, behind the backlog that
 * classic posts left, paced and split like them and counted as wr_api; abort
 * discards it; the way a batch goes is fixed at ibv_wr_start; a batch the
 * backlog cannot hold fails whole; a batch holding an ATOMIC_WRITE waits for
 * the backlog and then goes through the provider's own functions, for at
 * most SHIM_IDLE_WAIT_NS (then ENOMEM); a direct
 * QP is passed through as before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>

#include "../shim-all.h"

#define MAXW 256

static struct ibv_qp qp, split_qp;
static struct ibv_cq cq, split_cq;

/* What the provider received: through post_send (on which QP) or through
 * its own ibv_wr_* functions (ex = 1). */
struct seen {
	struct ibv_qp *qp;
	uint64_t wr_id, t, len;
	int ex;
};

static struct {
	pthread_mutex_t lock;
	struct seen w[MAXW];
	int n;
	uint64_t split_done[MAXW]; /* split chunks to complete */
	int n_split, split_polled;
	char trace[512];
} prov = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void record(struct ibv_qp *x, uint64_t wr_id, uint64_t len, int ex)
{
	if (prov.n < MAXW)
		prov.w[prov.n] = (struct seen){ x, wr_id, mono(), len, ex };
	prov.n++;
}

static int fake_post_send(struct ibv_qp *x, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	pthread_mutex_lock(&prov.lock);
	for (; wr; wr = wr->next) {
		uint64_t len = 0;

		for (int i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		record(x, wr->wr_id, len, 0);
		if (x == &split_qp && prov.n_split < MAXW)
			prov.split_done[prov.n_split++] = wr->wr_id;
	}
	pthread_mutex_unlock(&prov.lock);
	return 0;
}

/* Split chunks complete as soon as they are polled for. */
static int fake_poll_cq(struct ibv_cq *c, int n, struct ibv_wc *wc)
{
	int got = 0;

	if (c != &split_cq)
		return 0;
	pthread_mutex_lock(&prov.lock);
	while (got < n && prov.split_polled < prov.n_split) {
		wc[got] = (struct ibv_wc){ .wr_id = prov.split_done[prov.split_polled++],
					   .status = IBV_WC_SUCCESS, .qp_num = split_qp.qp_num };
		got++;
	}
	pthread_mutex_unlock(&prov.lock);
	return got;
}

static void tr(const char *s)
{
	pthread_mutex_lock(&prov.lock);
	strncat(prov.trace, s, sizeof(prov.trace) - strlen(prov.trace) - 1);
	pthread_mutex_unlock(&prov.lock);
}

static void f_start(struct ibv_qp_ex *x) { tr("start;"); }
static int f_complete(struct ibv_qp_ex *x) { tr("complete;"); return 0; }
static void f_abort(struct ibv_qp_ex *x) { tr("abort;"); }
static void f_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t ra)
{
	tr("write;");
	pthread_mutex_lock(&prov.lock);
	record(&qp, x->wr_id, 0, 1);
	pthread_mutex_unlock(&prov.lock);
}
static void f_atomic_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t ra, const void *v)
{
	tr("awrite;");
	pthread_mutex_lock(&prov.lock);
	record(&qp, x->wr_id, 8, 1);
	pthread_mutex_unlock(&prov.lock);
}
static void f_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t a, uint32_t len) { tr("sge;"); }

static int provider_count(void)
{
	int n;

	pthread_mutex_lock(&prov.lock);
	n = prov.n;
	pthread_mutex_unlock(&prov.lock);
	return n;
}

static struct ibv_device fake_dev = { .name = "fake0" };
static struct verbs_context vctx;
static struct ibv_qp_ex qx;
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
	struct ibv_qp_init_attr_ex attr = {
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_WRITE,
	};

	memset(&vctx, 0, sizeof(vctx));
	vctx.sz = sizeof(vctx);
	vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	vctx.context.device = &fake_dev;
	vctx.context.ops.post_send = fake_post_send;
	vctx.context.ops.poll_cq = fake_poll_cq;
	cq.context = split_cq.context = &vctx.context;
	memset(&qp, 0, sizeof(qp));
	qp.context = &vctx.context;
	qp.qp_num = 31;
	qp.qp_type = IBV_QPT_RC;
	qp.send_cq = &cq;
	split_qp = (struct ibv_qp){ .context = &vctx.context, .qp_num = 32, .qp_type = IBV_QPT_RC };
	pthread_mutex_lock(&prov.lock);
	prov.n = prov.n_split = prov.split_polled = 0;
	prov.trace[0] = 0;
	pthread_mutex_unlock(&prov.lock);
	memset(&gseg, 0, sizeof(gseg));
	memset(&cseg, 0, sizeof(cseg));
	atomic_store(&gseg.g.flags, JST_G_RUNNING);
	atomic_store(&gseg.g.heartbeat_ns, mono());
	atomic_store(&gseg.slot[0].state, JST_SLOT_ACTIVE);
	atomic_store(&gseg.slot[0].flow_id, 5);
	atomic_store(&gseg.slot[0].flags, JST_F_PACE);
	atomic_store(&gseg.slot[0].rate_bps, 8000000); /* 1 MB/s: 1000 B = 1 ms */
	q = shim_ops_track_qp(&qp, "ibv_create_qp_ex", 8);
	assert_non_null(q);
	wrbuf_allow(&q->wrb, &attr);
	pthread_mutex_lock(&cl.lock);
	atomic_store(&cl.global, &gseg.g);
	cl.need_fail_open = 0;
	cl.retry_at_ns = UINT64_MAX;
	pthread_mutex_unlock(&cl.lock);
	q->flow_id = 5; /* the slot's flow (shim/slot.h) */
	atomic_store(&q->slot, &gseg.slot[0]);
	atomic_store(&q->shm_stats, &cseg.st[0]);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 0);

	memset(&qx, 0, sizeof(qx));
	qx.qp_base = qp;
	qx.wr_start = f_start;
	qx.wr_complete = f_complete;
	qx.wr_abort = f_abort;
	qx.wr_rdma_write = f_write;
	qx.wr_atomic_write = f_atomic_write;
	qx.wr_set_sge = f_sge;
	shim_qpex_wrap(q, &qx);
	return 0;
}

static int teardown(void **state)
{
	fin_drop_all(&q->split.msg); /* (the fake split QP has no teardown) */
	shim_pace_qp_gone(q);
	memset(&q->split, 0, sizeof(q->split));
	shim_qp_destroy(&qp, ok_destroy);
	shim_ctx_close(&vctx.context, ok_close);
	return 0;
}

static void wait_for(int n)
{
	for (int i = 0; i < 5000 && provider_count() < n; i++) {
		struct ibv_wc wc;

		ibv_poll_cq(&cq, 1, &wc); /* progress split messages, as applications do */
		usleep(1000);
	}
}

static void classic_writes(int n, uint64_t first_id, uint32_t len)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = { .addr = 0x1000, .length = len };
		struct ibv_send_wr wr = { .wr_id = first_id + i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE }, *bad;

		assert_int_equal(ibv_post_send(&qp, &wr, &bad), 0);
	}
}

static void ex_writes(int n, uint64_t first_id, uint32_t len)
{
	ibv_wr_start(&qx);
	for (int i = 0; i < n; i++) {
		qx.wr_id = first_id + i;
		qx.wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(&qx, 1, 0x8000);
		ibv_wr_set_sge(&qx, 2, 0x1000, len);
	}
}

static void batch_is_buffered_paced_and_in_order(void **state)
{
	uint64_t t0 = mono();

	classic_writes(3, 10, 1000); /* the bucket in debt: these queue */
	ex_writes(2, 20, 1000);
	pthread_mutex_lock(&prov.lock);
	for (int i = 0; i < prov.n; i++)
		assert_true(prov.w[i].wr_id < 20); /* nothing of the batch yet */
	pthread_mutex_unlock(&prov.lock);
	assert_int_equal(ibv_wr_complete(&qx), 0);
	assert_true(provider_count() < 5); /* complete did not wait for tokens */
	wait_for(5);
	assert_int_equal(provider_count(), 5);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(prov.w[i].wr_id, i < 3 ? 10 + i : 20 + i - 3);
		assert_int_equal(prov.w[i].ex, 0); /* classic post_send, never wr_* */
	}
	assert_true(prov.w[4].t - t0 >= 3000000); /* 5 x 1 ms, minus the burst */
	assert_string_equal(prov.trace, "");
	assert_int_equal(q->st.classic_wrs, 3);
	assert_int_equal(q->st.wr_api_wrs, 2);
	assert_int_equal(q->st.op[STATS_OP_RDMA_WRITE].wrs, 5);
	assert_int_equal(q->st.op[STATS_OP_RDMA_WRITE].bytes, 5000);
	assert_int_equal(atomic_load(&cseg.st[0].ops), 5);
	/* post calls: one per classic WR the backlog posted, one per complete */
	assert_int_equal(q->st.post_calls, 3 + 1);
}

static void abort_discards_and_decision_holds(void **state)
{
	ex_writes(2, 1, 1000);
	ibv_wr_abort(&qx);
	assert_int_equal(provider_count(), 0);
	assert_int_equal(q->st.post_calls, 0);
	/* buffered at start: stays buffered although the QP turns direct */
	ex_writes(1, 5, 1000);
	atomic_store(&q->cls, JST_CLASS_LATENCY);
	shim_pace_update(q);
	assert_int_equal(atomic_load(&q->direct), 1);
	assert_int_equal(ibv_wr_complete(&qx), 0);
	assert_int_equal(provider_count(), 1);
	assert_int_equal(prov.w[0].ex, 0);
	/* and the next batch is passed through, zero copy */
	ex_writes(1, 6, 1000);
	assert_int_equal(ibv_wr_complete(&qx), 0);
	assert_string_equal(prov.trace, "start;write;sge;complete;");
	assert_int_equal(q->st.wr_api_wrs, 2);
	assert_int_equal(q->st.post_calls, 2);
}

static void batch_without_room_fails_whole(void **state)
{
	/* 1 s each: one goes, six queue; max_send_wr 8 leaves room for one
	 * (the provider holds the first: shim/sq.h) */
	classic_writes(7, 1, 1000000);
	ex_writes(2, 20, 100);
	assert_int_equal(ibv_wr_complete(&qx), ENOMEM);
	assert_int_equal(q->bl_len, 6);
	ex_writes(1, 30, 100);
	assert_int_equal(ibv_wr_complete(&qx), 0);
	assert_int_equal(q->bl_len, 7);
	assert_int_equal(q->st.failed_posts, 1);
	/* a setter before any builder fails the batch: nothing posted */
	ibv_wr_start(&qx);
	ibv_wr_set_sge(&qx, 1, 0x1000, 10);
	qx.wr_id = 40;
	ibv_wr_rdma_write(&qx, 1, 0x8000);
	assert_int_equal(ibv_wr_complete(&qx), EINVAL);
	assert_int_equal(q->bl_len, 7);
	assert_int_equal(q->st.failed_posts, 2);
}

static void atomic_write_waits_for_backlog_then_replays(void **state)
{
	uint64_t v = 1, t0 = mono(), t;

	classic_writes(4, 1, 1000); /* ~3 ms of backlog */
	ibv_wr_start(&qx);
	qx.wr_id = 50;
	ibv_wr_rdma_write(&qx, 1, 0x8000);
	ibv_wr_set_sge(&qx, 2, 0x1000, 100);
	qx.wr_id = 51;
	ibv_wr_atomic_write(&qx, 1, 0x9000, &v);
	qx.wr_id = 99;
	assert_int_equal(ibv_wr_complete(&qx), 0);
	t = mono();
	assert_true(t - t0 >= 2000000); /* it waited for the backlog */
	assert_int_equal(provider_count(), 6);
	for (int i = 0; i < 4; i++)
		assert_int_equal(prov.w[i].ex, 0);
	assert_int_equal(prov.w[4].wr_id, 50);
	assert_int_equal(prov.w[4].ex, 1);
	assert_int_equal(prov.w[5].wr_id, 51);
	assert_string_equal(prov.trace, "start;write;sge;awrite;complete;");
	assert_int_equal(qx.wr_id, 99);
	assert_int_equal(q->st.wr_api_wrs, 2);
	assert_int_equal(q->st.op[STATS_OP_ATOMIC_WRITE].wrs, 1);
	assert_int_equal(q->st.op[STATS_OP_RDMA_WRITE].bytes, 4000 + 100);
}

/* A backlog that needs longer than SHIM_IDLE_WAIT_NS: ibv_wr_complete does
 * not wait for it but fails the batch whole with ENOMEM, as a full send queue
 * would; once the backlog is gone, the same batch goes through. */
static void atomic_write_wait_is_bounded(void **state)
{
	uint64_t v = 1, t0 = mono(), t;
	int rc, tries = 0;

	classic_writes(8, 1, 5000); /* ~39 ms of backlog */
	ibv_wr_start(&qx);
	qx.wr_id = 51;
	ibv_wr_atomic_write(&qx, 1, 0x9000, &v);
	assert_int_equal(ibv_wr_complete(&qx), ENOMEM);
	t = mono();
	assert_true(t - t0 >= SHIM_IDLE_WAIT_NS);
	assert_true(t - t0 < 35000000); /* it did not wait for the whole backlog */
	assert_non_null(q->bl_head);
	assert_int_equal(q->st.failed_posts, 1);
	assert_null(strstr(prov.trace, "awrite"));
	for (int i = 0; i < provider_count(); i++)
		assert_int_equal(prov.w[i].ex, 0);
	/* the application retries, as after a full send queue */
	do {
		ibv_wr_start(&qx);
		qx.wr_id = 52;
		ibv_wr_atomic_write(&qx, 1, 0x9000, &v);
		rc = ibv_wr_complete(&qx);
	} while (rc == ENOMEM && ++tries < 100);
	assert_int_equal(rc, 0);
	assert_null(q->bl_head);
	assert_int_equal(provider_count(), 9);
	assert_int_equal(prov.w[8].wr_id, 52);
	assert_int_equal(prov.w[8].ex, 1);
	assert_string_equal(prov.trace, "start;awrite;complete;");
}

static void large_write_is_split(void **state)
{
	q->split.qp = &split_qp;
	q->split.cq = &split_cq;
	atomic_store(&q->split.state, SPLIT_READY);
	atomic_store(&gseg.slot[0].flags, JST_F_PACE | JST_F_SPLIT);
	atomic_store(&gseg.slot[0].chunk_bytes, 1000);
	atomic_store(&gseg.slot[0].rate_bps, 8000000000ull); /* no waiting here */
	ex_writes(1, 70, 3500);
	assert_int_equal(ibv_wr_complete(&qx), 0);
	wait_for(5);
	assert_int_equal(provider_count(), 5);
	for (int i = 0; i < 4; i++) {
		assert_ptr_equal(prov.w[i].qp, &split_qp);
		assert_int_equal(prov.w[i].len, i < 3 ? 1000 : 500);
	}
	/* the final, as the application's WR, with no bytes */
	assert_ptr_equal(prov.w[4].qp, &qp);
	assert_int_equal(prov.w[4].wr_id, 70);
	assert_int_equal(prov.w[4].len, 0);
	assert_int_equal(atomic_load(&cseg.st[0].chunks), 5);
	/* counted once, whole, under its API */
	assert_int_equal(q->st.wr_api_wrs, 1);
	assert_int_equal(q->st.classic_wrs, 0);
	assert_int_equal(q->st.op[STATS_OP_RDMA_WRITE].bytes, 3500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(batch_is_buffered_paced_and_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(abort_discards_and_decision_holds, setup, teardown),
		cmocka_unit_test_setup_teardown(batch_without_room_fails_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(atomic_write_waits_for_backlog_then_replays, setup,
						teardown),
		cmocka_unit_test_setup_teardown(atomic_write_wait_is_bounded, setup,
						teardown),
		cmocka_unit_test_setup_teardown(large_write_is_split, setup, teardown),
	};

	setenv("JUSTITIA_SOCKET", "/nonexistent/justitiad.sock", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

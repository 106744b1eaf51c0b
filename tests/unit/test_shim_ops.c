// SPDX-License-Identifier: MIT
/* Unit tests of the shim's interception (shim/ops.c, shim/qpex.c,
 * shim/registry.c) against a fake provider context: no RDMA device needed.
 * The point: the shim must pass every call through unchanged (arguments,
 * return codes, bad_wr, completions) and count exactly what was posted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>

#include "../shim-all.h"

/* ------------------------------------------------------------ fake provider */
static struct {
	int post_send_rc, post_recv_rc, send_calls, recv_calls;
	struct ibv_send_wr *bad_send_at;
	struct ibv_send_wr last_send;
	struct ibv_wc wcs[4];
	int n_wcs;
	char trace[256];
	struct ibv_qp created;
} fake;

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	fake.send_calls++;
	fake.last_send = *wr;
	if (fake.post_send_rc)
		*bad = fake.bad_send_at;
	return fake.post_send_rc;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	fake.recv_calls++;
	if (fake.post_recv_rc)
		*bad = wr;
	return fake.post_recv_rc;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int got = n < fake.n_wcs ? n : fake.n_wcs;

	memcpy(wc, fake.wcs, got * sizeof(*wc));
	return got;
}

static struct ibv_qp *fake_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	fake.created.context = ctx;
	fake.created.qp_num = 99;
	fake.created.qp_type = a->qp_type;
	return &fake.created;
}

static void trace(const char *s)
{
	strncat(fake.trace, s, sizeof(fake.trace) - strlen(fake.trace) - 1);
}

static void f_start(struct ibv_qp_ex *q) { trace("start;"); }
static int f_complete(struct ibv_qp_ex *q) { trace("complete;"); return fake.post_send_rc; }
static void f_abort(struct ibv_qp_ex *q) { trace("abort;"); }
static void f_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
	char b[64];

	snprintf(b, sizeof(b), "write(%u,%llu);", rkey, (unsigned long long)addr);
	trace(b);
}
static void f_send(struct ibv_qp_ex *q) { trace("send;"); }
static void f_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t len)
{
	char b[64];

	snprintf(b, sizeof(b), "sge(%u,%u);", lkey, len);
	trace(b);
}
static void f_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *sg) { trace("sgl;"); }

/* a fake extended CQ: the provider's completions are fake.wcs */
static struct {
	struct ibv_cq_ex cq;
	int at, ends;
} fcq;

static int fx_load(struct ibv_cq_ex *cq)
{
	if (fcq.at >= fake.n_wcs)
		return ENOENT;
	cq->wr_id = fake.wcs[fcq.at].wr_id;
	cq->status = fake.wcs[fcq.at].status;
	return 0;
}
static int fx_start(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *a)
{
	fcq.at = 0;
	return fx_load(cq);
}
static int fx_next(struct ibv_cq_ex *cq) { fcq.at++; return fx_load(cq); }
static void fx_end(struct ibv_cq_ex *cq) { fcq.ends++; fake.n_wcs = 0; }
static enum ibv_wc_opcode fx_opcode(struct ibv_cq_ex *cq) { return fake.wcs[fcq.at].opcode; }
static uint32_t fx_len(struct ibv_cq_ex *cq) { return fake.wcs[fcq.at].byte_len; }
static uint32_t fx_qpn(struct ibv_cq_ex *cq) { return fake.wcs[fcq.at].qp_num; }
static unsigned fx_wc_flags;

static struct ibv_cq_ex *fake_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a)
{
	memset(&fcq, 0, sizeof(fcq));
	fx_wc_flags = (unsigned)a->wc_flags;
	fcq.cq.context = c;
	fcq.cq.start_poll = fx_start;
	fcq.cq.next_poll = fx_next;
	fcq.cq.end_poll = fx_end;
	fcq.cq.read_opcode = fx_opcode;
	if (a->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		fcq.cq.read_byte_len = fx_len;
	if (a->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		fcq.cq.read_qp_num = fx_qpn;
	return &fcq.cq;
}

static struct ibv_device fake_dev = { .name = "fake0" };
static struct verbs_context vctx;
static struct ibv_context *ctx;
static struct ibv_qp qp;

static int setup(void **state)
{
	memset(&fake, 0, sizeof(fake));
	memset(&vctx, 0, sizeof(vctx));
	vctx.sz = sizeof(vctx);
	vctx.create_qp_ex = fake_create_qp_ex;
	vctx.create_cq_ex = fake_create_cq_ex;
	ctx = &vctx.context;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->device = &fake_dev;
	ctx->ops.post_send = fake_post_send;
	ctx->ops.post_recv = fake_post_recv;
	ctx->ops.poll_cq = fake_poll_cq;
	shim_count_all = 1; /* as with JUSTITIA_STATS: count every QP */
	memset(&qp, 0, sizeof(qp));
	qp.context = ctx;
	qp.qp_num = 7;
	qp.qp_type = IBV_QPT_RC;
	assert_non_null(shim_ops_track_qp(&qp, "ibv_create_qp", 64));
	return 0;
}

static int ok_destroy(struct ibv_qp *q) { return 0; }
static int busy_destroy(struct ibv_qp *q) { return EBUSY; }
static int ok_close(struct ibv_context *c) { return 0; }

static int teardown(void **state)
{
	shim_qp_destroy(&qp, ok_destroy);
	shim_qp_destroy(&fake.created, ok_destroy);
	shim_ctx_close(ctx, ok_close);
	return 0;
}

/* ------------------------------------------------------------ tests */
static void attach_patches_every_pointer(void **state)
{
	assert_ptr_equal(ctx->ops.post_send, shim_post_send);
	assert_ptr_equal(ctx->ops.post_recv, shim_post_recv);
	assert_ptr_equal(ctx->ops.poll_cq, shim_poll_cq);
	assert_ptr_equal(vctx.create_qp_ex, shim_create_qp_ex);
	/* idempotent: a second attach keeps the provider's originals */
	assert_non_null(shim_ops_attach(ctx));
	assert_ptr_equal(shim_ctx_find(ctx)->post_send, fake_post_send);
	assert_string_equal(shim_ctx_find(ctx)->device, "fake0");
}

static void post_send_passes_through(void **state)
{
	struct ibv_sge sg = { 0, 1000, 0 };
	struct ibv_send_wr w[2] = { { .next = &w[1], .sg_list = &sg, .num_sge = 1,
				      .opcode = IBV_WR_RDMA_WRITE },
				    { .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE } };
	struct ibv_send_wr *bad = (void *)1;
	struct shim_qp *q = shim_qp_find(ctx, 7);

	assert_int_equal(ibv_post_send(&qp, w, &bad), 0);
	assert_int_equal(fake.send_calls, 1);
	assert_int_equal(q->st.op[STATS_OP_RDMA_WRITE].wrs, 2);
	assert_int_equal(q->st.op[STATS_OP_RDMA_WRITE].bytes, 2000);

	/* the provider's error and bad_wr come back untouched */
	fake.post_send_rc = ENOMEM;
	fake.bad_send_at = &w[1];
	assert_int_equal(ibv_post_send(&qp, w, &bad), ENOMEM);
	assert_ptr_equal(bad, &w[1]);
	assert_int_equal(q->st.op[STATS_OP_RDMA_WRITE].wrs, 3);
	assert_int_equal(q->st.failed_posts, 1);
}

/* No daemon, no JUSTITIA_STATS: nobody reads the counters, so the shim
 * does not keep them -- a post and a poll cost little more than the
 * latency fast path. */
static void unmanaged_and_unreported_is_not_counted(void **state)
{
	struct ibv_sge sg = { 0, 1000, 0 };
	struct ibv_send_wr w = { .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE };
	struct ibv_send_wr *bad = NULL;
	struct ibv_cq cq = { .context = ctx };
	struct ibv_wc wc[2];
	struct shim_qp *q = shim_qp_find(ctx, 7);

	shim_count_all = 0;
	assert_int_equal(ibv_post_send(&qp, &w, &bad), 0);
	assert_int_equal(fake.send_calls, 1);
	assert_int_equal(q->st.op[STATS_OP_RDMA_WRITE].wrs, 0);
	fake.n_wcs = 1;
	fake.wcs[0] = (struct ibv_wc){ .wr_id = 12, .qp_num = 7, .opcode = IBV_WC_RDMA_WRITE };
	assert_int_equal(ibv_poll_cq(&cq, 2, wc), 1);
	assert_int_equal(wc[0].wr_id, 12);
	assert_int_equal(q->st.cqe_send, 0);
	shim_count_all = 1;
}

static void post_recv_and_poll_pass_through(void **state)
{
	struct ibv_sge sg = { 0, 64, 0 };
	struct ibv_recv_wr r = { .sg_list = &sg, .num_sge = 1 }, *bad = NULL;
	struct ibv_cq cq = { .context = ctx };
	struct ibv_wc wc[4];
	struct shim_qp *q = shim_qp_find(ctx, 7);

	assert_int_equal(ibv_post_recv(&qp, &r, &bad), 0);
	fake.post_recv_rc = EINVAL;
	assert_int_equal(ibv_post_recv(&qp, &r, &bad), EINVAL);
	assert_ptr_equal(bad, &r);
	assert_int_equal(q->st.recv.wrs, 1);

	fake.n_wcs = 3;
	fake.wcs[0] = (struct ibv_wc){ .wr_id = 11, .qp_num = 7, .opcode = IBV_WC_RECV,
				       .byte_len = 64 };
	fake.wcs[1] = (struct ibv_wc){ .wr_id = 12, .qp_num = 7, .opcode = IBV_WC_RDMA_WRITE };
	fake.wcs[2] = (struct ibv_wc){ .wr_id = 13, .qp_num = 1234,
				       .status = IBV_WC_REM_ACCESS_ERR };
	assert_int_equal(ibv_poll_cq(&cq, 4, wc), 3);
	assert_memory_equal(wc, fake.wcs, 3 * sizeof(*wc));
	assert_int_equal(q->st.cqe_recv, 1);
	assert_int_equal(q->st.cqe_send, 1);
	assert_int_equal(q->st.cqe_error, 0); /* unknown QP 1234: not ours */
}

/* A completion the shim owes (a failed split message) on a QP it moved to
 * the error state: the provider gets a marker WR, whose flush completion
 * (a real CQE: it wakes a completion channel) becomes the owed completion,
 * after the completions of WRs posted before it, not ahead of them. */
static void injected_completion_comes_in_order(void **state)
{
	struct ibv_cq cq = { .context = ctx };
	struct ibv_wc owed = { .wr_id = 77, .qp_num = 7, .status = IBV_WC_REM_ACCESS_ERR,
			       .opcode = IBV_WC_RDMA_WRITE };
	struct ibv_wc wc[4];

	qp.send_cq = &cq;
	qp.state = IBV_QPS_ERR;
	shim_inject_wc(&cq, &owed);
	assert_int_equal(fake.send_calls, 1);
	assert_int_equal(fake.last_send.num_sge, 0);
	assert_true(fake.last_send.send_flags & IBV_SEND_SIGNALED);
	/* nothing to return before the provider flushes the marker */
	fake.n_wcs = 1;
	fake.wcs[0] = (struct ibv_wc){ .wr_id = 12, .qp_num = 7, .opcode = IBV_WC_RDMA_WRITE };
	assert_int_equal(ibv_poll_cq(&cq, 4, wc), 1);
	assert_int_equal(wc[0].wr_id, 12);
	fake.n_wcs = 2;
	fake.wcs[0] = (struct ibv_wc){ .wr_id = 13, .qp_num = 7, .status = IBV_WC_WR_FLUSH_ERR };
	fake.wcs[1] = (struct ibv_wc){ .wr_id = fake.last_send.wr_id, .qp_num = 7,
				       .status = IBV_WC_WR_FLUSH_ERR };
	assert_int_equal(ibv_poll_cq(&cq, 4, wc), 2);
	assert_int_equal(wc[0].wr_id, 13);
	assert_memory_equal(&wc[1], &owed, sizeof(owed));
	assert_int_equal(atomic_load(&shim_inject_pending), 0);

	/* a QP not in the error state takes no marker: the owed completion
	 * comes after what the provider returns in the same poll */
	qp.state = IBV_QPS_RTS;
	shim_inject_wc(&cq, &owed);
	assert_int_equal(fake.send_calls, 1);
	fake.n_wcs = 1;
	fake.wcs[0] = (struct ibv_wc){ .wr_id = 14, .qp_num = 7, .opcode = IBV_WC_RDMA_WRITE };
	assert_int_equal(ibv_poll_cq(&cq, 4, wc), 2);
	assert_int_equal(wc[0].wr_id, 14);
	assert_int_equal(wc[1].wr_id, 77);
	assert_int_equal(atomic_load(&shim_inject_pending), 0);
	qp.send_cq = NULL;
	qp.state = IBV_QPS_RESET;
}

/* The same through the extended poll API (ibv_start_poll & co.), which
 * the shim sees only by wrapping the CQ's function pointers. */
static void extended_poll_gets_injected_completions(void **state)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 16, .wc_flags = 0 };
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_wc owed = { .wr_id = 77, .qp_num = 7, .status = IBV_WC_REM_ACCESS_ERR,
			       .opcode = IBV_WC_RDMA_WRITE };
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &a);

	assert_ptr_equal(cq, &fcq.cq);
	/* asked for what the shim needs to know of every completion */
	assert_true(fx_wc_flags & IBV_WC_EX_WITH_QP_NUM);
	qp.send_cq = ibv_cq_ex_to_cq(cq);
	qp.state = IBV_QPS_ERR;
	shim_inject_wc(qp.send_cq, &owed);
	assert_int_equal(fake.send_calls, 1);
	fake.n_wcs = 2;
	fake.wcs[0] = (struct ibv_wc){ .wr_id = 12, .qp_num = 7, .opcode = IBV_WC_RDMA_WRITE };
	fake.wcs[1] = (struct ibv_wc){ .wr_id = fake.last_send.wr_id, .qp_num = 7,
				       .status = IBV_WC_WR_FLUSH_ERR, .opcode = IBV_WC_SEND };
	assert_int_equal(ibv_start_poll(cq, &pa), 0);
	assert_int_equal(cq->wr_id, 12);
	assert_int_equal(ibv_next_poll(cq), 0);
	assert_int_equal(cq->wr_id, 77);
	assert_int_equal(cq->status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(ibv_wc_read_opcode(cq), IBV_WC_RDMA_WRITE);
	assert_int_equal(ibv_wc_read_qp_num(cq), 7);
	assert_int_equal(ibv_next_poll(cq), ENOENT);
	ibv_end_poll(cq);
	assert_int_equal(fcq.ends, 1);
	assert_int_equal(atomic_load(&shim_inject_pending), 0);

	/* no marker (QP not in error): returned when the provider has none,
	 * and the provider's poll, never opened, is not closed either */
	qp.state = IBV_QPS_RTS;
	shim_inject_wc(qp.send_cq, &owed);
	assert_int_equal(ibv_start_poll(cq, &pa), 0);
	assert_int_equal(cq->wr_id, 77);
	assert_int_equal(ibv_next_poll(cq), ENOENT);
	ibv_end_poll(cq);
	assert_int_equal(fcq.ends, 1);
	assert_int_equal(ibv_start_poll(cq, &pa), ENOENT);
	qp.send_cq = NULL;
	qp.state = IBV_QPS_RESET;
}

/* ---- re-registration does not hold the registry lock while it waits */
static struct {
	int sock;
	_Atomic int asked, go;
} fd_daemon;

static void *slow_daemon(void *arg)
{
	static const char reply[] =
		"{\"v\":1,\"ok\":true,\"flow\":3,\"app_slot\":0,\"slot\":0,"
		"\"class\":\"latency\"}\n";
	char buf[4096];
	ssize_t n = read(fd_daemon.sock, buf, sizeof(buf)); /* register_qp */

	atomic_store(&fd_daemon.asked, n > 0);
	while (!atomic_load(&fd_daemon.go))
		usleep(1000);
	if (write(fd_daemon.sock, reply, sizeof(reply) - 1) < 0)
		return NULL;
	return NULL;
}

static void *reregister(void *arg)
{
	pthread_mutex_lock(&cl.lock);
	register_all();
	pthread_mutex_unlock(&cl.lock);
	return NULL;
}

static void reregistration_leaves_the_registry_free(void **state)
{
	static struct {
		struct jst_shm_global g;
		struct jst_flow_ctl slot[1];
	} gs;
	static struct {
		struct jst_shm_client c;
		struct jst_flow_stats st[1];
	} cs;
	pthread_t d, r;
	int sv[2], free_meanwhile;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fd_daemon.sock = sv[1];
	atomic_store(&fd_daemon.asked, 0);
	atomic_store(&fd_daemon.go, 0);
	gs.g.n_slots = 1;
	cs.c.n_slots = 1;
	pthread_mutex_lock(&cl.lock);
	cl.fd = sv[0];
	cl.pid = getpid();
	atomic_store(&cl.global, &gs.g);
	cl.global_size = sizeof(gs);
	cl.client = &cs.c;
	cl.client_size = sizeof(cs);
	pthread_mutex_unlock(&cl.lock);
	pthread_create(&d, NULL, slow_daemon, NULL);
	pthread_create(&r, NULL, reregister, NULL);
	while (!atomic_load(&fd_daemon.asked))
		usleep(1000);
	/* the daemon has not answered: fork() and QP creation must not wait */
	free_meanwhile = !pthread_mutex_trylock(&reg_lock);
	if (free_meanwhile)
		pthread_mutex_unlock(&reg_lock);
	atomic_store(&fd_daemon.go, 1);
	pthread_join(r, NULL);
	pthread_join(d, NULL);
	assert_true(free_meanwhile);
	assert_int_equal(shim_qp_find(ctx, 7)->flow_id, 3);
	pthread_mutex_lock(&cl.lock);
	cl.fd = -1;
	cl.pid = 0;
	atomic_store(&cl.global, NULL);
	cl.client = NULL;
	pthread_mutex_unlock(&cl.lock);
	atomic_store(&shim_qp_find(ctx, 7)->slot, NULL);
	atomic_store(&shim_qp_find(ctx, 7)->shm_stats, NULL);
	shim_qp_find(ctx, 7)->flow_id = 0;
	close(sv[0]);
	close(sv[1]);
}

static void create_qp_ex_is_tracked(void **state)
{
	struct ibv_qp_init_attr_ex a = { .qp_type = IBV_QPT_RC,
					 .comp_mask = IBV_QP_INIT_ATTR_PD |
						      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS };
	struct ibv_qp *n = ibv_create_qp_ex(ctx, &a);
	struct shim_qp *q;

	assert_ptr_equal(n, &fake.created);
	q = shim_qp_find(ctx, 99);
	assert_non_null(q);
	assert_string_equal(q->created_via, "ibv_create_qp_ex");
}

static void wr_api_is_wrapped_and_counted(void **state)
{
	struct ibv_qp_ex qx;
	struct ibv_sge sgl[2] = { { 0, 10, 1 }, { 0, 10, 1 } };
	struct shim_qp *q = shim_qp_find(ctx, 7);

	memset(&qx, 0, sizeof(qx));
	qx.qp_base = qp;
	qx.wr_start = f_start;
	qx.wr_complete = f_complete;
	qx.wr_abort = f_abort;
	qx.wr_rdma_write = f_write;
	qx.wr_send = f_send;
	qx.wr_set_sge = f_sge;
	qx.wr_set_sge_list = f_sge_list;
	shim_qpex_wrap(q, &qx);
	shim_qpex_wrap(q, &qx); /* idempotent */
	assert_ptr_equal(q->orig.wr_start, f_start);
	assert_null(qx.wr_rdma_read); /* unsupported stays unsupported */

	ibv_wr_start(&qx);
	ibv_wr_rdma_write(&qx, 5, 4096);
	ibv_wr_set_sge(&qx, 3, 0, 300);
	ibv_wr_send(&qx);
	ibv_wr_set_sge_list(&qx, 2, sgl);
	assert_int_equal(ibv_wr_complete(&qx), 0);
	assert_string_equal(fake.trace, "start;write(5,4096);sge(3,300);send;sgl;complete;");
	assert_int_equal(q->st.op[STATS_OP_RDMA_WRITE].bytes, 300);
	assert_int_equal(q->st.op[STATS_OP_SEND].bytes, 20);
	assert_int_equal(q->st.wr_api_wrs, 2);

	/* aborted and failed batches count nothing */
	ibv_wr_start(&qx);
	ibv_wr_send(&qx);
	ibv_wr_abort(&qx);
	fake.post_send_rc = EINVAL;
	ibv_wr_start(&qx);
	ibv_wr_send(&qx);
	assert_int_equal(ibv_wr_complete(&qx), EINVAL);
	assert_int_equal(q->st.wr_api_wrs, 2);
	assert_int_equal(q->st.failed_posts, 1);
}

static void destroy_retires_and_failure_keeps(void **state)
{
	struct stats_snapshot *s, ov;
	uint64_t n_ov;
	size_t n, before;
	struct ibv_qp other = { .context = ctx, .qp_num = 8, .qp_type = IBV_QPT_UD };

	s = shim_registry_snapshot(&before, &ov, &n_ov);
	free(s);
	assert_non_null(shim_ops_track_qp(&other, "ibv_create_qp", 64));
	assert_int_equal(shim_qp_destroy(&other, busy_destroy), EBUSY);
	assert_non_null(shim_qp_find(ctx, 8));
	assert_int_equal(shim_qp_destroy(&other, ok_destroy), 0);
	assert_null(shim_qp_find(ctx, 8));
	s = shim_registry_snapshot(&n, &ov, &n_ov);
	assert_int_equal(n, before + 1);
	{
		int found = 0;

		for (size_t i = 0; i < n; i++)
			if (s[i].qpn == 8 && s[i].destroyed && s[i].type == IBV_QPT_UD)
				found++;
		assert_int_equal(found, 1);
	}
	free(s);
}

/* Readers hammer one live QP while a writer creates and destroys others in
 * the same table: a lookup of the live QP must never return another record,
 * and find_sure must never miss it. */
static atomic_bool stop;
static struct ibv_qp live = { .qp_num = 5000, .qp_type = IBV_QPT_RC };

static void *reader(void *arg)
{
	long misses = 0;

	while (!atomic_load(&stop)) {
		struct shim_qp *q = shim_qp_find(ctx, live.qp_num);

		if (!q)
			misses++;
		else if (atomic_load(&q->qpn) != live.qp_num || atomic_load(&q->ctx) != ctx)
			return (void *)-1L;
		if (!shim_qp_find_sure(ctx, live.qp_num))
			return (void *)-2L;
	}
	return (void *)misses;
}

static void lock_free_lookup_under_churn(void **state)
{
	pthread_t t[2];
	void *rv;

	live.context = ctx;
	assert_non_null(shim_ops_track_qp(&live, "ibv_create_qp", 64));
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, reader, NULL);
	for (int round = 0; round < 20000; round++) {
		struct ibv_qp tmp = { .context = ctx, .qp_num = 6000 + round % 300 };

		assert_non_null(shim_ops_track_qp(&tmp, "ibv_create_qp", 64));
		assert_int_equal(shim_qp_destroy(&tmp, ok_destroy), 0);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], &rv);
		assert_true((long)rv >= 0);
	}
	assert_int_equal(shim_qp_destroy(&live, ok_destroy), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	/* no daemon: registration must fail open, quietly */
	setenv("JUSTITIA_SOCKET", "/nonexistent/justitiad.sock", 1);
	const struct CMUnitTest tests[] = {
		T(attach_patches_every_pointer),
		T(post_send_passes_through),
		T(unmanaged_and_unreported_is_not_counted),
		T(post_recv_and_poll_pass_through),
		T(injected_completion_comes_in_order),
		T(extended_poll_gets_injected_completions),
		T(reregistration_leaves_the_registry_free),
		T(create_qp_ex_is_tracked),
		T(wr_api_is_wrapped_and_counted),
		T(destroy_retires_and_failure_keeps),
		T(lock_free_lookup_under_churn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

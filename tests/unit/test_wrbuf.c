// SPDX-License-Identifier: MIT
/* Unit tests of the ibv_wr_* batch buffer (shim/wrbuf.c): every builder and
 * setter becomes the classic work request it stands for, what the setters
 * are given is copied, a setter without a WR fails the batch, storage may
 * move while a batch grows, special batches replay through the provider's
 * functions exactly as the application called them, and the critical region
 * admits one batch at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "../../shim/wrbuf.c"

static struct wrbuf b;

static int setup(void **state)
{
	wrbuf_init(&b);
	wrbuf_enter(&b);
	return 0;
}

static int teardown(void **state)
{
	wrbuf_leave(&b);
	wrbuf_recycle(&b);
	return 0;
}

static void builders_make_classic_wrs(void **state)
{
	struct ibv_sge two[2] = { { 0x1000, 100, 7 }, { 0x2000, 50, 8 } };
	struct ibv_mw_bind_info bi = { .addr = 0x3000, .length = 64, .mw_access_flags = 1 };
	struct ibv_mw mw;
	struct ibv_send_wr *w, *l;
	char text[8] = "payload";
	struct ibv_data_buf inl = { text, 8 };

	w = wrbuf_add(&b, IBV_WR_RDMA_WRITE, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	w->wr.rdma.rkey = 5;
	w->wr.rdma.remote_addr = 0x9000;
	wrbuf_set_sge(&b, 3, 0x1000, 4096);
	w = wrbuf_add(&b, IBV_WR_RDMA_WRITE_WITH_IMM, 2, 0);
	w->imm_data = htobe32(0x1234);
	wrbuf_set_sge_list(&b, 2, two);
	two[0].length = 999; /* the application may reuse its list at once */
	wrbuf_add(&b, IBV_WR_SEND, 3, IBV_SEND_SOLICITED);
	wrbuf_set_inline(&b, 1, &inl, 0);
	memcpy(text, "XXXXXXX", 8); /* ... and its inline data */
	wrbuf_add(&b, IBV_WR_RDMA_READ, 4, 0);
	wrbuf_set_sge(&b, 3, 0x5000, 0); /* empty: no SGE at all */
	w = wrbuf_add(&b, IBV_WR_BIND_MW, 5, 0);
	w->bind_mw.mw = &mw;
	w->bind_mw.bind_info = bi;
	assert_int_equal(b.err, 0);
	assert_int_equal(b.special, 0);

	l = wrbuf_list(&b);
	assert_non_null(l);
	/* write: flags as given but INLINE, which the ex API says by setter */
	assert_int_equal(l->wr_id, 1);
	assert_int_equal(l->opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(l->send_flags, IBV_SEND_SIGNALED);
	assert_int_equal(l->num_sge, 1);
	assert_int_equal(l->sg_list[0].length, 4096);
	assert_int_equal(l->sg_list[0].lkey, 3);
	assert_int_equal(l->wr.rdma.rkey, 5);
	l = l->next;
	assert_int_equal(l->opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
	assert_int_equal(l->imm_data, htobe32(0x1234));
	assert_int_equal(l->num_sge, 2);
	assert_int_equal(l->sg_list[0].length, 100);
	assert_int_equal(l->sg_list[1].addr, 0x2000);
	l = l->next;
	assert_int_equal(l->opcode, IBV_WR_SEND);
	assert_int_equal(l->send_flags, IBV_SEND_SOLICITED | IBV_SEND_INLINE);
	assert_int_equal(l->num_sge, 1);
	assert_int_equal(l->sg_list[0].length, 8);
	assert_memory_equal((void *)(uintptr_t)l->sg_list[0].addr, "payload", 8);
	l = l->next;
	assert_int_equal(l->opcode, IBV_WR_RDMA_READ);
	assert_int_equal(l->num_sge, 0);
	l = l->next;
	assert_int_equal(l->opcode, IBV_WR_BIND_MW);
	assert_ptr_equal(l->bind_mw.mw, &mw);
	assert_int_equal(l->bind_mw.bind_info.length, 64);
	assert_int_equal(l->num_sge, 0);
	assert_null(l->next);
	/* listing twice gives the same list (inline offsets converted once) */
	l = wrbuf_list(&b)->next->next;
	assert_memory_equal((void *)(uintptr_t)l->sg_list[0].addr, "payload", 8);
}

static void setter_without_wr_fails_the_batch(void **state)
{
	wrbuf_set_sge(&b, 1, 0x1000, 10);
	assert_int_equal(b.err, EINVAL);
	assert_null(wrbuf_add(&b, IBV_WR_SEND, 1, 0));
	assert_null(wrbuf_list(&b));
	/* the next batch starts clean */
	wrbuf_leave(&b);
	wrbuf_enter(&b);
	assert_int_equal(b.err, 0);
	assert_non_null(wrbuf_add(&b, IBV_WR_SEND, 1, 0));
}

static void storage_may_move_while_growing(void **state)
{
	enum { N = 3000 };
	struct ibv_sge sg[3] = { { 0, 1, 1 }, { 0, 2, 1 }, { 0, 3, 1 } };
	struct ibv_send_wr *l;
	int i = 0;

	for (int k = 0; k < N; k++) {
		char d[4];
		struct ibv_data_buf db = { d, sizeof(d) };

		wrbuf_add(&b, k % 2 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE, (uint64_t)k, 0);
		if (k % 2) {
			snprintf(d, sizeof(d), "%03u", (unsigned)k % 1000);
			wrbuf_set_inline(&b, 1, &db, 0);
		} else {
			sg[0].addr = (uint64_t)k;
			wrbuf_set_sge_list(&b, 3, sg);
		}
	}
	assert_int_equal(b.err, 0);
	for (l = wrbuf_list(&b); l; l = l->next, i++) {
		assert_int_equal(l->wr_id, i);
		if (i % 2) {
			char want[4];

			snprintf(want, sizeof(want), "%03u", (unsigned)i % 1000);
			assert_memory_equal((void *)(uintptr_t)l->sg_list[0].addr, want, 4);
		} else {
			assert_int_equal(l->num_sge, 3);
			assert_int_equal(l->sg_list[0].addr, i);
			assert_int_equal(l->sg_list[2].length, 3);
		}
	}
	assert_int_equal(i, N);
	/* a big batch's storage is not kept */
	wrbuf_leave(&b);
	assert_null(b.ent);
	wrbuf_enter(&b);
}

/* ------------------------------------------------------------ replay */
static char trace[512];

static void tr(const char *fmt, ...)
{
	va_list ap;
	size_t n = strlen(trace);

	va_start(ap, fmt);
	vsnprintf(trace + n, sizeof(trace) - n, fmt, ap);
	va_end(ap);
}

static void f_start(struct ibv_qp_ex *q) { tr("start;"); }
static int f_complete(struct ibv_qp_ex *q) { tr("complete;"); return 0; }
static void f_abort(struct ibv_qp_ex *q) { tr("abort;"); }
static void f_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t ra)
{
	tr("write(%llu,%u,%#x,%llu);", (unsigned long long)q->wr_id, rkey, q->wr_flags,
	   (unsigned long long)ra);
}
static void f_send(struct ibv_qp_ex *q) { tr("send(%llu);", (unsigned long long)q->wr_id); }
static void f_atomic_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t ra, const void *v)
{
	uint64_t x;

	memcpy(&x, v, 8);
	tr("awrite(%llu,%u,%llx);", (unsigned long long)q->wr_id, rkey, (unsigned long long)x);
}
static void f_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t a, uint32_t len)
{
	tr("sge(%u,%u);", lkey, len);
}
static void f_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *sg)
{
	tr("sgl(%zu,%u,%u);", n, sg[0].length, sg[n - 1].length);
}
static void f_inline_list(struct ibv_qp_ex *q, size_t n, const struct ibv_data_buf *d)
{
	tr("inl(%zu,%.*s,%.*s);", n, (int)d[0].length, (char *)d[0].addr, (int)d[1].length,
	   (char *)d[1].addr);
}
static void f_tso(struct ibv_qp_ex *q, void *hdr, uint16_t sz, uint16_t mss)
{
	tr("tso(%.*s,%u);", (int)sz, (char *)hdr, mss);
}

static void special_batch_replays_as_called(void **state)
{
	struct shim_qpex_orig o = { .wr_start = f_start, .wr_complete = f_complete,
				    .wr_abort = f_abort, .wr_rdma_write = f_write,
				    .wr_send = f_send, .wr_atomic_write = f_atomic_write,
				    .wr_set_sge = f_sge, .wr_set_sge_list = f_sge_list,
				    .wr_set_inline_data_list = f_inline_list,
				    .wr_send_tso = f_tso };
	struct ibv_qp_ex qx = { .wr_id = 77, .wr_flags = 9 };
	struct ibv_sge sg[2] = { { 0, 10, 1 }, { 0, 20, 1 } };
	char a[3] = "ab", c[3] = "cd", hdr[4] = "HDR";
	struct ibv_data_buf bufs[2] = { { a, 2 }, { c, 2 } };
	uint64_t val = 0xabcdef;
	struct ibv_send_wr *w;

	w = wrbuf_add(&b, IBV_WR_RDMA_WRITE, 1, IBV_SEND_SIGNALED);
	w->wr.rdma.rkey = 4;
	w->wr.rdma.remote_addr = 4096;
	wrbuf_set_sge_list(&b, 2, sg);
	wrbuf_atomic_write(&b, 2, 0, 6, 8192, &val);
	val = 0; /* copied */
	wrbuf_add(&b, IBV_WR_SEND, 3, 0);
	wrbuf_set_inline(&b, 2, bufs, 1);
	memcpy(a, "zz", 2);
	wrbuf_send_tso(&b, 4, 0, hdr, 3, 1400);
	memcpy(hdr, "xxx", 3);
	wrbuf_set_sge(&b, 2, 0x100, 5000);
	assert_int_equal(b.special, 1);
	assert_int_equal(wrbuf_replay(&b, &qx, &o), 0);
	assert_string_equal(trace, "start;write(1,4,0x2,4096);sgl(2,10,20);awrite(2,6,abcdef);"
				   "send(3);inl(2,ab,cd);tso(HDR,1400);sge(2,5000);complete;");
	/* the application's values are back */
	assert_int_equal(qx.wr_id, 77);
	assert_int_equal(qx.wr_flags, 9);
	/* an operation the provider lacks aborts the replay */
	trace[0] = 0;
	wrbuf_leave(&b);
	wrbuf_enter(&b);
	wrbuf_add(&b, IBV_WR_RDMA_READ, 1, 0);
	assert_int_equal(wrbuf_replay(&b, &qx, &o), EOPNOTSUPP);
	assert_string_equal(trace, "start;abort;");
}

static void allowed_only_with_known_ops(void **state)
{
	struct ibv_qp_init_attr_ex a = { .comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
					 .send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
							   IBV_QP_EX_WITH_ATOMIC_WRITE };

	wrbuf_allow(&b, &a);
	assert_int_equal(b.allowed, 1);
	a.send_ops_flags |= 1ull << 11; /* IBV_QP_EX_WITH_FLUSH, in newer libibverbs */
	wrbuf_allow(&b, &a);
	assert_int_equal(b.allowed, 0);
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	wrbuf_allow(&b, &a);
	assert_int_equal(b.allowed, 0);
	a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	wrbuf_allow(&b, &a);
	assert_int_equal(b.allowed, 1);
	wrbuf_recycle(&b);
	assert_int_equal(b.allowed, 0);
	wrbuf_enter(&b);
}

static atomic_int entered, trying, other_tid;

static void *other_batch(void *arg)
{
	atomic_store(&other_tid, gettid());
	atomic_store(&trying, 1);
	wrbuf_enter(&b);
	atomic_store(&entered, 1);
	wrbuf_leave(&b);
	return NULL;
}

/* The scheduler state of thread @tid ('R', 'S', ...). */
static char thread_state(int tid)
{
	char path[64], line[256], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	p = fgets(line, sizeof(line), f);
	fclose(f);
	p = p ? strrchr(line, ')') : NULL;
	return p && p[1] == ' ' ? p[2] : '?';
}

/* Another thread that opens the region while we hold it goes to sleep in
 * wrbuf_enter() (its only blocking call after it said it is trying) and
 * gets in only when we leave.  No timing: we wait until it either got in
 * (wrong) or sleeps. */
static void one_batch_at_a_time(void **state)
{
	pthread_t t;

	atomic_store(&entered, 0);
	atomic_store(&trying, 0);
	pthread_create(&t, NULL, other_batch, NULL);
	while (!atomic_load(&trying))
		sched_yield();
	while (!atomic_load(&entered) && thread_state(atomic_load(&other_tid)) != 'S')
		sched_yield();
	assert_int_equal(atomic_load(&entered), 0); /* we hold the region */
	wrbuf_leave(&b);
	pthread_join(t, NULL);
	assert_int_equal(atomic_load(&entered), 1);
	wrbuf_enter(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(builders_make_classic_wrs, setup, teardown),
		cmocka_unit_test_setup_teardown(setter_without_wr_fails_the_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(storage_may_move_while_growing, setup, teardown),
		cmocka_unit_test_setup_teardown(special_batch_replays_as_called, setup, teardown),
		cmocka_unit_test_setup_teardown(allowed_only_with_known_ops, setup, teardown),
		cmocka_unit_test_setup_teardown(one_batch_at_a_time, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

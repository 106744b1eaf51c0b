// SPDX-License-Identifier: MIT
/* Unit tests of shim/classify.c: what JUSTITIA_CLASS=auto makes of
 * perftest-like posting patterns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../shim/classify.c"
#include "../../shim/registry.h"
#include "../../shim/log.c"

static int reported = -1;
static char log_path[] = "/tmp/test_classify.XXXXXX";

/* How often @what appears in the shim's log (JUSTITIA_LOG=log_path) since
 * the last call; the log is emptied. */
static int logged(const char *what)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(log_path, "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	assert_int_equal(truncate(log_path, 0), 0);
	return n;
}

/* One post call, as the post paths sample it (registry.h) */
static void sample(struct shim_qp *q, const struct ibv_send_wr *wr, const struct ibv_send_wr *bad)
{
	shim_classify_post(&q->classify, atomic_load(&q->st.cqe_send), atomic_load(&q->cls), wr,
			   bad);
}

/* The progress thread's tick: what the classifier decided goes to the
 * daemon (the daemon's answer sets the class). */
static void tick(struct shim_qp *q)
{
	int cls = shim_classify_tick(&q->classify, q->qp->qp_num);

	if (cls >= 0) {
		atomic_store(&q->cls, cls);
		reported = cls;
	}
}

static struct shim_qp *new_qp(void)
{
	static struct ibv_qp qp = { .qp_num = 17 };
	struct shim_qp *q = calloc(1, sizeof(*q));

	assert_non_null(q);
	q->qp = &qp;
	atomic_store(&q->cls, JST_CLASS_BANDWIDTH);
	atomic_store(&q->classify.on, 1);
	atomic_store(&q->classify.verdict, -1);
	reported = -1;
	return q;
}

/* @calls post calls of @per_call WRs of @size bytes, signaled; @wait: the
 * application polls every completion before posting again */
static void post(struct shim_qp *q, int calls, int per_call, uint32_t size, int wait)
{
	struct ibv_sge sg = { .length = size };
	struct ibv_send_wr w[8];

	for (int i = 0; i < per_call; i++)
		w[i] = (struct ibv_send_wr){ .next = i + 1 < per_call ? &w[i + 1] : NULL,
					     .sg_list = &sg, .num_sge = 1,
					     .send_flags = IBV_SEND_SIGNALED };
	for (int c = 0; c < calls; c++) {
		sample(q, w, NULL);
		if (wait)
			atomic_fetch_add(&q->st.cqe_send, (uint64_t)per_call);
	}
	tick(q);
}

static void ping_pong_is_latency(void **state)
{
	struct shim_qp *q = new_qp();

	post(q, CLASSIFY_WINDOW, 1, 2, 1);
	assert_int_equal(reported, -1); /* one window is not enough */
	post(q, CLASSIFY_WINDOW, 1, 2, 1);
	assert_int_equal(reported, JST_CLASS_LATENCY);
	free(q);
}

static void pipelined_small_is_throughput(void **state)
{
	struct shim_qp *q = new_qp();

	post(q, 2 * CLASSIFY_WINDOW, 1, 64, 0); /* ib_write_bw -s 64: tx_depth in flight */
	assert_int_equal(reported, JST_CLASS_THROUGHPUT);
	free(q);
}

/* ib_write_bw's CQ moderation: every 100th WR signaled, up to 128 in
 * flight; the application polls when it must */
static void moderated_pipeline_is_throughput(void **state)
{
	struct shim_qp *q = new_qp();
	struct ibv_sge sg = { .length = 64 };
	struct ibv_send_wr w = { .sg_list = &sg, .num_sge = 1 };

	for (int i = 1; i <= 2 * CLASSIFY_WINDOW; i++) {
		w.send_flags = i % 100 ? 0 : IBV_SEND_SIGNALED;
		sample(q, &w, NULL);
		if (i % 100 == 28) /* the completion of WR i - 28 */
			atomic_fetch_add(&q->st.cqe_send, 1);
	}
	tick(q);
	assert_int_equal(reported, JST_CLASS_THROUGHPUT);
	free(q);
}

static void post_lists_are_throughput(void **state)
{
	struct shim_qp *q = new_qp();

	post(q, 2 * CLASSIFY_WINDOW, 4, 512, 1);
	assert_int_equal(reported, JST_CLASS_THROUGHPUT);
	free(q);
}

static void large_messages_are_bandwidth(void **state)
{
	struct shim_qp *q = new_qp();

	atomic_store(&q->cls, JST_CLASS_LATENCY);
	post(q, 2 * CLASSIFY_WINDOW, 1, 1 << 20, 1);
	assert_int_equal(reported, JST_CLASS_BANDWIDTH);
	free(q);
}

/* A QP that posts like the class it has is judged, keeps its class,
 * tells the daemon nothing, and says so once in the log. */
static void same_class_reports_nothing(void **state)
{
	struct shim_qp *q = new_qp();

	logged("");
	post(q, CLASSIFY_WINDOW - 1, 1, 65536, 0);
	assert_int_equal(logged("posts like"), 0); /* not judged yet */
	post(q, 1, 1, 65536, 0);
	assert_int_equal(logged("QP 17: posts like a bandwidth flow: class kept"), 1);
	post(q, 4 * CLASSIFY_WINDOW, 1, 65536, 0);
	assert_int_equal(logged("posts like"), 0); /* once per QP */
	assert_int_equal(reported, -1);
	assert_int_equal(atomic_load(&q->cls), JST_CLASS_BANDWIDTH);
	free(q);
}

/* A kept class does not hide a change that follows. */
static void kept_then_changed(void **state)
{
	struct shim_qp *q = new_qp();

	logged("");
	post(q, CLASSIFY_WINDOW, 1, 1 << 20, 1);
	assert_int_equal(logged("class kept"), 1);
	post(q, 2 * CLASSIFY_WINDOW, 1, 2, 1);
	assert_int_equal(reported, JST_CLASS_LATENCY);
	assert_int_equal(logged("QP 17: posts like a latency flow: reclassified"), 1);
	free(q);
}

static void flapping_needs_a_streak(void **state)
{
	struct shim_qp *q = new_qp();

	/* one window small, one large, ...: never two small ones in a row */
	for (int i = 0; i < 4; i++) {
		post(q, CLASSIFY_WINDOW, 1, 2, 1);
		post(q, CLASSIFY_WINDOW, 1, 1 << 20, 1);
	}
	assert_int_equal(reported, -1);
	free(q);
}

static void off_reports_nothing(void **state)
{
	struct shim_qp *q = new_qp();

	post(q, CLASSIFY_WINDOW, 1, 2, 1);
	atomic_store(&q->classify.on, 0); /* justitia_set_qp_class() came */
	post(q, CLASSIFY_WINDOW, 1, 2, 1);
	assert_int_equal(reported, -1);
	free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ping_pong_is_latency),
		cmocka_unit_test(pipelined_small_is_throughput),
		cmocka_unit_test(moderated_pipeline_is_throughput),
		cmocka_unit_test(post_lists_are_throughput),
		cmocka_unit_test(large_messages_are_bandwidth),
		cmocka_unit_test(same_class_reports_nothing),
		cmocka_unit_test(kept_then_changed),
		cmocka_unit_test(flapping_needs_a_streak),
		cmocka_unit_test(off_reports_nothing),
	};

	int fd = mkstemp(log_path), rc;

	if (fd < 0)
		return 1;
	close(fd);
	setenv("JUSTITIA_LOG", log_path, 1);
	shim_log_init();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(log_path);
	return rc;
}

// SPDX-License-Identifier: MIT
/*
 * Unit tests of tools/bench_pollcost.c against a fake verbs context (ibv_poll_cq and
 * ibv_post_send are the context's ops): which calls become empty, in-flight and hit samples,
 * the latency, every error, and the statistics (merge, summary, clock samples).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../tools/bench_pollcost.c"
#include "../../tools/bench_stats.c"

/* The fake: after a post, `empties` polls return nothing, then one returns the completion. */
static struct {
	int posted, polls, empties, post_rc, poll_rc;
	bool early; /* a completion before any post */
	enum ibv_wc_status status;
} fake;

static int fake_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq;
	assert_int_equal(n, 1);
	fake.polls++;
	if (fake.poll_rc)
		return fake.poll_rc;
	if (fake.early || (fake.posted && fake.empties-- == 0)) {
		memset(wc, 0, sizeof(*wc));
		wc->status = fake.status;
		wc->wr_id = 7;
		fake.posted = 0;
		fake.early = false;
		return 1;
	}
	return 0;
}

static int fake_post(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	(void)wr;
	if (fake.post_rc) {
		*bad = wr;
		return fake.post_rc;
	}
	fake.posted = 1;
	return 0;
}

static struct ibv_context ctx;
static struct ibv_cq cq = { .context = &ctx };
static struct ibv_qp qp = { .context = &ctx };
static struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };

static int setup(void **state)
{
	(void)state;
	memset(&fake, 0, sizeof(fake));
	ctx.ops.poll_cq = fake_poll;
	ctx.ops.post_send = fake_post;
	return 0;
}

static void messages(void **state)
{
	struct bench_pollcost pc;
	uint64_t lat = 0;
	char err[128];

	(void)state;
	bench_pollcost_init(&pc);
	/* completes after 3 empty polls: 1 idle empty poll, 1 in-flight (the last), 1 hit */
	fake.empties = 3;
	assert_int_equal(bench_pollcost_message(&pc, &qp, &cq, &wr, 1000000000, &lat, err,
						sizeof(err)),
			 0);
	assert_int_equal(fake.polls, 1 + 3 + 1);
	assert_int_equal(pc.empty.n, 1);
	assert_int_equal(pc.inflight.n, 1);
	assert_int_equal(pc.hit.n, 1);
	assert_true(lat > 0 && lat >= pc.hit.v[0]);
	/* completes at the first poll: no in-flight empty poll */
	fake.empties = 0;
	assert_int_equal(bench_pollcost_message(&pc, &qp, &cq, &wr, 1000000000, &lat, err,
						sizeof(err)),
			 0);
	assert_int_equal(pc.empty.n, 2);
	assert_int_equal(pc.inflight.n, 1);
	assert_int_equal(pc.hit.n, 2);
	bench_pollcost_free(&pc);
}

static void errors(void **state)
{
	struct bench_pollcost pc;
	uint64_t lat = 0;
	char err[128];

	(void)state;
	bench_pollcost_init(&pc);
	fake.early = true;
	assert_int_equal(bench_pollcost_message(&pc, &qp, &cq, &wr, 1000000000, &lat, err,
						sizeof(err)),
			 -EPROTO);
	assert_string_equal(err, "a completion with nothing in flight");
	fake.post_rc = ENOMEM;
	assert_int_equal(bench_pollcost_message(&pc, &qp, &cq, &wr, 1000000000, &lat, err,
						sizeof(err)),
			 -EIO);
	assert_string_equal(err, "ibv_post_send: Cannot allocate memory");
	fake.post_rc = 0;
	fake.status = IBV_WC_RETRY_EXC_ERR;
	fake.empties = 1;
	assert_int_equal(bench_pollcost_message(&pc, &qp, &cq, &wr, 1000000000, &lat, err,
						sizeof(err)),
			 -EIO);
	assert_true(strncmp(err, "completion error: ", 18) == 0);
	fake.status = IBV_WC_SUCCESS;
	fake.empties = 1 << 30; /* never */
	assert_int_equal(bench_pollcost_message(&pc, &qp, &cq, &wr, 2000000, &lat, err,
						sizeof(err)),
			 -ETIMEDOUT);
	assert_string_equal(err, "no completion in 2 ms");
	fake.posted = 0;
	fake.poll_rc = -1;
	assert_int_equal(bench_pollcost_message(&pc, &qp, &cq, &wr, 2000000, &lat, err,
						sizeof(err)),
			 -EIO);
	assert_string_equal(err, "ibv_poll_cq failed (-1)");
	/* errors leave no hit sample */
	assert_int_equal(pc.hit.n, 0);
	bench_pollcost_free(&pc);
}

static void statistics(void **state)
{
	struct bench_pollcost a, b;
	struct bench_pollcost_summary s;

	(void)state;
	bench_pollcost_init(&a);
	bench_pollcost_init(&b);
	assert_int_equal(bench_pollcost_clock(&a, 1000), 0);
	assert_int_equal(a.clock.n, 1000);
	for (uint64_t i = 1; i <= 100; i++) {
		assert_int_equal(bench_samples_add(&a.empty, i), 0);
		assert_int_equal(bench_samples_add(&b.empty, 100 + i), 0);
		assert_int_equal(bench_samples_add(&b.hit, 1000 * i), 0);
	}
	assert_int_equal(bench_pollcost_merge(&a, &b), 0);
	bench_pollcost_summarize(&a, &s);
	assert_int_equal(s.clock.count, 1000);
	assert_true(s.clock.min <= s.clock.p50 && s.clock.p50 <= s.clock.p99);
	assert_int_equal(s.empty.count, 200);
	assert_int_equal(s.empty.p50, 100);
	assert_int_equal(s.empty.p99, 198);
	assert_int_equal(s.empty.min, 1);
	assert_int_equal(s.hit.count, 100);
	assert_int_equal(s.hit.p50, 50000);
	assert_int_equal(s.hit.p99, 99000);
	assert_int_equal(s.inflight.count, 0);
	assert_int_equal(s.inflight.p50, 0);
	bench_pollcost_free(&a);
	bench_pollcost_free(&b);
	assert_null(a.empty.v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(messages, setup),
		cmocka_unit_test_setup(errors, setup),
		cmocka_unit_test_setup(statistics, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/* Unit tests of the list of QPs with a backlog (shim/backlogs.c), alone:
 * no provider, no progress thread that could take the records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <sys/eventfd.h>

#include "../../shim/backlogs.c"
#include "../../shim/vclock.c"

static uint64_t vnow = 1000000000ull;

static uint64_t vclock(void)
{
	return vnow;
}

/* More QPs with a backlog than a progress round takes: every one is
 * served within two rounds, none twice in a row before the others (the
 * round took the list's first 64 every time, and justsim's 1024 flows
 * starved all but those). */
static void every_backlog_gets_its_round(void **state)
{
	enum { N = 100, ROUND = 64 };
	struct shim_qp *rec = calloc(N, sizeof(*rec)), *got[ROUND];
	int seen[N] = { 0 };
	size_t n;

	assert_non_null(rec);
	for (int i = 0; i < N; i++)
		backlogs_add(&rec[i], 0);
	assert_int_equal(atomic_load(&shim_pace_queued), N);
	n = backlogs_take_round(got, ROUND);
	assert_int_equal(n, ROUND);
	for (size_t i = 0; i < n; i++)
		seen[got[i] - rec]++;
	n = backlogs_take_round(got, ROUND);
	assert_int_equal(n, ROUND);
	for (size_t i = 0; i < N - ROUND; i++)
		assert_int_equal(seen[got[i] - rec], 0); /* the ones left out first */
	for (size_t i = 0; i < n; i++)
		seen[got[i] - rec]++;
	for (int i = 0; i < N; i++)
		assert_true(seen[i] >= 1);
	/* nothing lost or duplicated in the list */
	n = backlogs_take_round(got, ROUND);
	assert_int_equal(n, ROUND);
	for (int i = 0; i < N; i++)
		backlogs_remove(&rec[i]);
	assert_int_equal(atomic_load(&shim_pace_queued), 0);
	assert_int_equal(backlogs_take_round(got, ROUND), 0);
	free(rec);
}

/* @n polls of @cq, @step_ns apart */
static void polls(const struct ibv_cq *cq, int n, uint64_t step_ns)
{
	for (int i = 0; i < n; i++) {
		backlogs_cq_polled(cq);
		vnow += step_ns;
	}
}

/* Whether the progress thread's eventfd was written (and empty it). */
static int kicked(int efd)
{
	uint64_t v;

	if (read(efd, &v, sizeof(v)) == sizeof(v))
		return 1;
	assert_int_equal(errno, EAGAIN);
	return 0;
}

/* A backlog starting on a QP whose send CQ the application spins on does
 * not wake the progress thread (its next poll drains it); one starting
 * while the application polls once per completion event, or after it
 * stopped spinning, does. */
static void spinning_application_is_not_woken_for(void **state)
{
	struct ibv_cq cq_spin = { 0 }, cq_event = { 0 }, cq_other = { 0 };
	struct ibv_qp qp_spin = { .send_cq = &cq_spin }, qp_event = { .send_cq = &cq_event };
	struct shim_qp q_spin = { .qp = &qp_spin }, q_event = { .qp = &qp_event };
	int efd = eventfd(0, EFD_NONBLOCK);

	(void)state;
	assert_true(efd >= 0);
	shim_vclock_set(vclock);
	backlogs_set_wake(efd);

	/* never polled: woken */
	backlogs_add(&q_spin, vnow);
	assert_true(kicked(efd));
	backlogs_remove(&q_spin);

	/* a busy poller: 2 x SPIN_POLLS polls 1 us apart, its send and
	 * receive CQs in turn */
	for (int i = 0; i < 2 * SPIN_POLLS; i++) {
		polls(&cq_spin, 1, 500);
		polls(&cq_other, 1, 500);
	}
	assert_true(backlogs_cq_spun(&cq_spin, vnow));
	assert_true(backlogs_cq_spun(&cq_other, vnow));
	backlogs_add(&q_spin, vnow);
	assert_false(kicked(efd));
	backlogs_remove(&q_spin);

	/* event-driven: two polls per completion event, one event every
	 * 100 us, for 50 ms: never a spinner */
	for (int i = 0; i < 500; i++)
		polls(&cq_event, 2, 50000);
	assert_false(backlogs_cq_spun(&cq_event, vnow));
	backlogs_add(&q_event, vnow);
	assert_true(kicked(efd));
	backlogs_remove(&q_event);

	/* the spinner stopped APP_POLL_NS ago: woken again */
	vnow += APP_POLL_NS;
	assert_false(backlogs_cq_spun(&cq_spin, vnow));
	backlogs_add(&q_spin, vnow);
	assert_true(kicked(efd));
	backlogs_remove(&q_spin);

	/* the shim's own QP record without a QP (a test's): woken */
	backlogs_add(&(struct shim_qp){ 0 }, vnow);
	assert_true(kicked(efd));
	atomic_store(&shim_pace_queued, 0);
	backlogs_atfork_child();
	shim_vclock_set(NULL);
	close(efd);
}

/* More CQs spun on than the table holds: the least recent give way, the
 * latest are all known. */
static void spin_table_keeps_the_latest(void **state)
{
	struct ibv_cq cq[SPIN_SLOTS + 4];

	(void)state;
	shim_vclock_set(vclock);
	for (size_t k = 0; k < sizeof(cq) / sizeof(cq[0]); k++)
		polls(&cq[k], 2 * SPIN_POLLS, 100);
	for (size_t k = 4; k < sizeof(cq) / sizeof(cq[0]); k++)
		assert_true(backlogs_cq_spun(&cq[k], vnow));
	assert_false(backlogs_cq_spun(&cq[0], vnow));
	assert_false(backlogs_cq_spun(NULL, vnow));
	shim_vclock_set(NULL);
}

/* The progress thread's next look at a busy QP: its token when the
 * application does not poll; APP_POLL_NS after the token (or now) while
 * it polls now and then; none of its own (the tick) while it spins. */
static void next_look_follows_the_application(void **state)
{
	struct ibv_cq cq = { 0 };
	struct ibv_qp qp = { .send_cq = &cq };
	struct shim_qp q = { .qp = &qp };
	uint64_t due;

	(void)state;
	shim_vclock_set(vclock);
	vnow += 10 * APP_POLL_NS;
	due = vnow + 300000;
	assert_int_equal(backlogs_next_look(&q, due, vnow), due);
	assert_int_equal(backlogs_next_look(&q, 0, vnow), 0);
	/* one poll (an event-driven application's) */
	atomic_store(&q.app_poll_ns, vnow);
	polls(&cq, 2, 100000);
	assert_int_equal(backlogs_next_look(&q, due, vnow), due + APP_POLL_NS);
	assert_int_equal(backlogs_next_look(&q, 0, vnow), vnow + APP_POLL_NS);
	/* spinning on its send CQ */
	polls(&cq, 2 * SPIN_POLLS, 1000);
	atomic_store(&q.app_poll_ns, vnow);
	assert_int_equal(backlogs_next_look(&q, due, vnow), 0);
	/* it stopped: the thread takes over at the token again */
	vnow += APP_POLL_NS;
	assert_int_equal(backlogs_next_look(&q, due, vnow), due);
	shim_vclock_set(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_backlog_gets_its_round),
		cmocka_unit_test(spinning_application_is_not_woken_for),
		cmocka_unit_test(spin_table_keeps_the_latest),
		cmocka_unit_test(next_look_follows_the_application),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

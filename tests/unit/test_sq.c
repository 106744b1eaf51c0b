// SPDX-License-Identifier: MIT
/* Unit tests of shim/sq.c: what an application QP's send queue holds.  A
 * signaled WR's completion frees it and every unsignaled WR before it; an
 * error completion, a completion nobody signaled, more signaled WRs than
 * the queue holds, or a post that bypassed the count make it unknown until
 * the QP is reset; a QP is watched (its completions looked at) only once
 * its first post was counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../shim/sq.c"

static void signaled_completion_frees_what_came_before(void **state)
{
	struct shim_sq sq = { 0 };

	(void)state;
	assert_int_equal(shim_sq_init(&sq, 16), 0);
	assert_true(shim_sq_known(&sq));
	assert_int_equal(atomic_load(&shim_sq_watched), 0); /* nothing posted yet */
	shim_sq_posted(&sq, 0);
	assert_int_equal(atomic_load(&shim_sq_watched), 1);
	shim_sq_posted(&sq, 0);
	shim_sq_posted(&sq, 1);
	shim_sq_posted(&sq, 0);
	shim_sq_posted(&sq, 1);
	assert_int_equal(shim_sq_held(&sq), 5);
	shim_sq_completed(&sq, 1);       /* the third: it and the two before */
	assert_int_equal(shim_sq_held(&sq), 2);
	shim_sq_completed(&sq, 1);
	assert_int_equal(shim_sq_held(&sq), 0);
	assert_true(shim_sq_known(&sq));
	/* a completion nobody signaled: no longer known */
	shim_sq_completed(&sq, 1);
	assert_false(shim_sq_known(&sq));
	assert_int_equal(atomic_load(&shim_sq_watched), 0);
	shim_sq_fini(&sq);
	free(sq.sig);
}

static void error_and_bypass_are_unknown_until_reset(void **state)
{
	struct shim_sq sq = { 0 };

	(void)state;
	assert_int_equal(shim_sq_init(&sq, 4), 0);
	shim_sq_posted(&sq, 1);
	shim_sq_completed(&sq, 0);       /* flushes follow, signaled or not */
	assert_false(shim_sq_known(&sq));
	shim_sq_posted(&sq, 1);          /* ignored */
	assert_int_equal(sq.posted, 1);
	shim_sq_reset(&sq);
	assert_true(shim_sq_known(&sq));
	assert_int_equal(shim_sq_held(&sq), 0);
	shim_sq_posted(&sq, 1);
	assert_int_equal(atomic_load(&shim_sq_watched), 1);
	shim_sq_lost(&sq);               /* a post the count did not see */
	shim_sq_lost(&sq);               /* (once) */
	assert_false(shim_sq_known(&sq));
	assert_int_equal(atomic_load(&shim_sq_watched), 0);
	/* more signaled WRs outstanding than the ring holds */
	shim_sq_reset(&sq);
	for (uint32_t i = 0; i < sq.sig_size; i++)
		shim_sq_posted(&sq, 1);
	assert_true(shim_sq_known(&sq));
	shim_sq_posted(&sq, 1);
	assert_false(shim_sq_known(&sq));
	assert_int_equal(atomic_load(&shim_sq_watched), 0);
	shim_sq_fini(&sq);
	free(sq.sig);
}

/* The time it held work, or its caller's backlog did: from the call that
 * found some to the call that found none, summed; a period during which
 * the count got lost is dropped. */
static void queued_time_is_summed_while_known(void **state)
{
	struct shim_sq sq = { 0 };

	(void)state;
	assert_int_equal(shim_sq_init(&sq, 8), 0);
	shim_sq_queued(&sq, 100, 0);      /* idle */
	shim_sq_posted(&sq, 1);
	shim_sq_queued(&sq, 1000, 0);     /* the post: queued from now */
	shim_sq_queued(&sq, 1500, 0);     /* still: 500 so far */
	assert_int_equal(sq.queued_ns, 500);
	shim_sq_completed(&sq, 1);
	shim_sq_queued(&sq, 3000, 0);     /* done: 2000 in all */
	assert_int_equal(sq.queued_ns, 2000);
	shim_sq_queued(&sq, 5000, 0);     /* idle time is not counted */
	assert_int_equal(sq.queued_ns, 2000);
	shim_sq_queued(&sq, 6000, 1);     /* the backlog holds work */
	shim_sq_queued(&sq, 6500, 0);
	assert_int_equal(sq.queued_ns, 2500);
	/* lost meanwhile: that period is dropped, and none is counted */
	shim_sq_posted(&sq, 1);
	shim_sq_queued(&sq, 7000, 0);
	shim_sq_lost(&sq);
	shim_sq_queued(&sq, 9000, 1);
	shim_sq_queued(&sq, 9500, 1);
	assert_int_equal(sq.queued_ns, 2500);
	assert_int_equal(sq.queued_since, 0);
	/* a RESET counts again */
	shim_sq_reset(&sq);
	shim_sq_queued(&sq, 10000, 1);
	shim_sq_queued(&sq, 10400, 0);
	assert_int_equal(sq.queued_ns, 2900);
	shim_sq_fini(&sq);
	free(sq.sig);
}

static void unknown_size_is_never_known(void **state)
{
	struct shim_sq sq = { 0 };

	(void)state;
	assert_int_equal(shim_sq_init(&sq, 0), 0);
	assert_false(shim_sq_known(&sq));
	shim_sq_reset(&sq);
	assert_false(shim_sq_known(&sq));
	/* a recycled record keeps a large enough ring */
	assert_int_equal(shim_sq_init(&sq, 32), 0);
	{
		uint64_t *ring = sq.sig;

		assert_int_equal(shim_sq_init(&sq, 8), 0);
		assert_ptr_equal(sq.sig, ring);
		assert_int_equal(sq.cap, 8);
	}
	shim_sq_fini(&sq);
	free(sq.sig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(signaled_completion_frees_what_came_before),
		cmocka_unit_test(error_and_bypass_are_unknown_until_reset),
		cmocka_unit_test(queued_time_is_summed_while_known),
		cmocka_unit_test(unknown_size_is_never_known),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/* Unit tests of the list of QPs with a backlog (shim/backlogs.c), alone:
 * no provider, no progress thread that could take the records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../shim/backlogs.c"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_backlog_gets_its_round),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/* Unit tests of shim/inject.c: owed completions come back per CQ in the
 * order they were owed, no more than asked for, the pending count follows,
 * and a fork()ed child owes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../shim/inject.c"

static struct ibv_cq cq1, cq2;

static void owe(struct ibv_cq *cq, uint64_t id)
{
	struct ibv_wc wc = { .wr_id = id, .status = IBV_WC_WR_FLUSH_ERR };

	shim_inject_wc(cq, &wc);
}

static void per_cq_in_order(void **state)
{
	struct ibv_wc wc[8];

	owe(&cq1, 1);
	owe(&cq2, 100);
	owe(&cq1, 2);
	owe(&cq2, 101);
	owe(&cq1, 3);
	assert_int_equal(atomic_load(&shim_inject_pending), 5);
	assert_int_equal(shim_inject_take(&cq1, 2, wc), 2); /* no more than asked */
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(atomic_load(&shim_inject_pending), 3);
	assert_int_equal(shim_inject_take(&cq1, 8, wc), 1);
	assert_int_equal(wc[0].wr_id, 3);
	assert_int_equal(shim_inject_take(&cq1, 8, wc), 0);
	/* the last was taken: owing more appends behind the other CQ's */
	owe(&cq1, 4);
	owe(&cq2, 102);
	assert_int_equal(shim_inject_take(&cq2, 8, wc), 3);
	assert_int_equal(wc[0].wr_id, 100);
	assert_int_equal(wc[1].wr_id, 101);
	assert_int_equal(wc[2].wr_id, 102);
	assert_int_equal(shim_inject_take(&cq1, 8, wc), 1);
	assert_int_equal(wc[0].wr_id, 4);
	assert_int_equal(atomic_load(&shim_inject_pending), 0);
	/* and after everything was taken, the list starts over */
	owe(&cq2, 103);
	assert_int_equal(shim_inject_take(&cq2, 0, wc), 0);
	assert_int_equal(shim_inject_take(&cq2, 1, wc), 1);
	assert_int_equal(wc[0].wr_id, 103);
}

static void child_owes_nothing(void **state)
{
	struct ibv_wc wc[2];

	struct owed *parents;

	owe(&cq1, 7);
	parents = head;
	shim_inject_atfork_child(); /* (the entries are the parent's: left alone) */
	free(parents);
	assert_int_equal(atomic_load(&shim_inject_pending), 0);
	assert_int_equal(shim_inject_take(&cq1, 2, wc), 0);
	owe(&cq1, 8);
	assert_int_equal(shim_inject_take(&cq1, 2, wc), 1);
	assert_int_equal(wc[0].wr_id, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(per_cq_in_order),
		cmocka_unit_test(child_owes_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

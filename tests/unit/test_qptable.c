// SPDX-License-Identifier: MIT
/* Unit tests of daemon/qptable.c, the table of kernel-seen user QPs: add,
 * find, remove, growth, matching with registered flows, a warning once per
 * process, resync, type names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../daemon/qptable.c"

#define UNUSED __attribute__((unused))
#define MS 1000000ull

/* ---------------------------------------------------------------- qptable */

static void table_add_find_remove(void **state UNUSED)
{
	struct qptable t;
	struct qpt_qp *q;

	assert_int_equal(qpt_init(&t, 100), 0);
	assert_int_equal(qpt_add(&t, "rxe0", 17, 100, "ib_write_bw", 2, QPT_SRC_BPF, 10), 0);
	/* the same QP number on another device is another QP */
	assert_int_equal(qpt_add(&t, "rxe1", 17, 101, "ib_write_bw", 2, QPT_SRC_BPF, 20), 0);
	assert_int_equal(t.n, 2);
	q = qpt_find(&t, "rxe0", 17);
	assert_non_null(q);
	assert_int_equal(q->proc->pid, 100);
	assert_string_equal(q->proc->comm, "ib_write_bw");
	assert_int_equal(q->seen_ns, 10);
	assert_int_equal(qpt_find(&t, "rxe1", 17)->proc->pid, 101);
	assert_null(qpt_find(&t, "rxe0", 18));
	assert_null(qpt_find(&t, "rxe", 17));

	/* seen again by the same process: keeps its first-seen time */
	assert_int_equal(qpt_add(&t, "rxe0", 17, 100, "renamed", 2, QPT_SRC_NETLINK, 50), 0);
	q = qpt_find(&t, "rxe0", 17);
	assert_int_equal(q->seen_ns, 10);
	assert_int_equal(q->src, QPT_SRC_NETLINK);
	assert_string_equal(q->proc->comm, "renamed");
	/* a reused number in another process: a new QP */
	assert_int_equal(qpt_add(&t, "rxe0", 17, 200, "other", 3, QPT_SRC_BPF, 60), 0);
	q = qpt_find(&t, "rxe0", 17);
	assert_int_equal(q->proc->pid, 200);
	assert_int_equal(q->seen_ns, 60);
	assert_int_equal(q->qp_type, 3);
	assert_int_equal(t.n, 2);

	assert_int_equal(qpt_remove(&t, "rxe0", 17), 0);
	assert_int_equal(qpt_remove(&t, "rxe0", 17), -ENOENT);
	assert_int_equal(qpt_remove(&t, "", 17), -ENOENT);
	assert_null(qpt_find(&t, "rxe0", 17));
	assert_int_equal(t.n, 1);
	qpt_fini(&t);
}

static void table_rejects(void **state UNUSED)
{
	char long_name[QPT_DEV_LEN + 1];
	struct qptable t;

	memset(long_name, 'a', QPT_DEV_LEN);
	long_name[QPT_DEV_LEN] = 0;
	assert_int_equal(qpt_init(&t, 2), 0);
	assert_int_equal(qpt_add(&t, "", 1, 1, "a", 2, QPT_SRC_BPF, 0), -EINVAL);
	assert_int_equal(qpt_add(&t, "rx e0", 1, 1, "a", 2, QPT_SRC_BPF, 0), -EINVAL);
	assert_int_equal(qpt_add(&t, "rxe\n", 1, 1, "a", 2, QPT_SRC_BPF, 0), -EINVAL);
	assert_int_equal(qpt_add(&t, long_name, 1, 1, "a", 2, QPT_SRC_BPF, 0), -EINVAL);
	assert_int_equal(qpt_add(&t, "rxe0", 0x1000000, 1, "a", 2, QPT_SRC_BPF, 0), -EINVAL);
	long_name[QPT_DEV_LEN - 1] = 0; /* 63 bytes: the longest name */
	assert_int_equal(qpt_add(&t, long_name, 0xffffff, 1, "a", 2, QPT_SRC_BPF, 0), 0);
	assert_int_equal(qpt_add(&t, "rxe0", 1, 1, NULL, 2, QPT_SRC_BPF, 0), 0);
	/* full: counted, not stored; replacing an existing key still works */
	assert_int_equal(qpt_add(&t, "rxe0", 2, 1, "a", 2, QPT_SRC_BPF, 0), -ENOSPC);
	assert_int_equal(qpt_add(&t, "rxe0", 3, 1, "a", 2, QPT_SRC_BPF, 0), -ENOSPC);
	assert_int_equal(t.untracked, 2);
	assert_int_equal(qpt_add(&t, "rxe0", 1, 2, "b", 2, QPT_SRC_BPF, 0), 0);
	assert_int_equal(t.n, 2);
	qpt_fini(&t);
}

/* Many QPs: the buckets grow, every QP is found and iterated exactly once,
 * and the per-process counts follow. */
static void table_grows(void **state UNUSED)
{
	enum { N = 5000 };
	static unsigned char seen[2][N];
	struct qptable t;
	size_t n = 0;

	assert_int_equal(qpt_init(&t, 1 << 20), 0);
	for (uint32_t i = 0; i < N; i++) {
		assert_int_equal(qpt_add(&t, "mlx5_0", i, 10 + i % 7, "app", 2, QPT_SRC_BPF, i), 0);
		assert_int_equal(qpt_add(&t, "mlx5_1", i, 10 + i % 7, "app", 2, QPT_SRC_BPF, i), 0);
	}
	assert_int_equal(t.n, 2 * N);
	assert_true(t.n_buckets >= 2 * N);
	for (const struct qpt_qp *q = qpt_next(&t, NULL); q; q = qpt_next(&t, q)) {
		int d = !strcmp(q->dev, "mlx5_1");

		assert_int_equal(seen[d][q->qpn]++, 0);
		n++;
	}
	assert_int_equal(n, 2 * N);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(qpt_find(&t, "mlx5_1", i)->seen_ns, i);
	for (const struct qpt_proc *p = t.procs; p; p = p->next)
		assert_true(p->n_qps == 2 * (N / 7) || p->n_qps == 2 * (N / 7 + 1));
	for (uint32_t i = 0; i < N; i += 2)
		assert_int_equal(qpt_remove(&t, "mlx5_0", i), 0);
	assert_int_equal(t.n, 2 * N - N / 2);
	qpt_clear(&t);
	assert_int_equal(t.n, 0);
	assert_null(qpt_next(&t, NULL));
	for (const struct qpt_proc *p = t.procs; p; p = p->next)
		assert_int_equal(p->n_qps, 0);
	qpt_fini(&t);
}

static void table_matching(void **state UNUSED)
{
	struct qptable t;

	assert_int_equal(qpt_init(&t, 100), 0);
	qpt_add(&t, "rxe0", 17, 100, "a", 2, QPT_SRC_BPF, 0);
	qpt_add(&t, "rxe1", 17, 100, "a", 2, QPT_SRC_BPF, 0);
	qpt_add(&t, "rxe0", 18, 200, "b", 2, QPT_SRC_BPF, 500 * MS);

	qpt_match_begin(&t);
	assert_true(qpt_match(&t, "rxe0", 17, 100));
	assert_false(qpt_match(&t, "rxe0", 18, 100));  /* the QP is pid 200's */
	assert_false(qpt_match(&t, "rxe2", 17, 100));  /* no such QP */
	assert_false(qpt_match(&t, "bad name", 17, 100));
	assert_true(qpt_managed(&t, qpt_find(&t, "rxe0", 17)));
	assert_false(qpt_managed(&t, qpt_find(&t, "rxe1", 17)));
	/* grace: rxe0/18 was seen at 500 ms, so it is unmanaged from 1500 ms */
	assert_int_equal(qpt_count_unmanaged(&t, 1000 * MS, 1000 * MS), 1);
	assert_false(qpt_unmanaged(&t, qpt_find(&t, "rxe0", 18), 1499 * MS, 1000 * MS));
	assert_true(qpt_unmanaged(&t, qpt_find(&t, "rxe0", 18), 1500 * MS, 1000 * MS));
	assert_int_equal(qpt_count_unmanaged(&t, 1500 * MS, 1000 * MS), 2);
	/* a clock before the first sighting never counts */
	assert_int_equal(qpt_count_unmanaged(&t, 0, 0), 1);
	/* a new pass forgets the old matches */
	qpt_match_begin(&t);
	assert_false(qpt_managed(&t, qpt_find(&t, "rxe0", 17)));
	assert_int_equal(qpt_count_unmanaged(&t, 1500 * MS, 1000 * MS), 3);
	qpt_fini(&t);
}

/* The shim unregisters a flow, then destroys its QP: in between the QP is
 * not unmanaged, it gets a new grace period from when its flow went away. */
static void table_flow_goes_away(void **state UNUSED)
{
	struct qptable t;
	struct qpt_qp *q;

	assert_int_equal(qpt_init(&t, 100), 0);
	qpt_add(&t, "rxe0", 17, 100, "a", 2, QPT_SRC_BPF, 0);
	q = qpt_find(&t, "rxe0", 17);
	qpt_match_begin(&t);
	assert_true(qpt_match(&t, "rxe0", 17, 100));
	qpt_match_end(&t, 5000 * MS);
	assert_int_equal(q->seen_ns, 0);
	assert_int_equal(qpt_count_unmanaged(&t, 5000 * MS, 1000 * MS), 0);
	/* unregistered */
	qpt_match_begin(&t);
	qpt_match_end(&t, 6000 * MS);
	assert_int_equal(q->seen_ns, 6000 * MS);
	assert_int_equal(qpt_count_unmanaged(&t, 6999 * MS, 1000 * MS), 0);
	assert_int_equal(qpt_count_unmanaged(&t, 7000 * MS, 1000 * MS), 1);
	/* a later pass without a flow does not restart it again */
	qpt_match_begin(&t);
	qpt_match_end(&t, 8000 * MS);
	assert_int_equal(q->seen_ns, 6000 * MS);
	qpt_fini(&t);
}

static size_t n_warned;
static pid_t warned_pid[8];

static void count_warning(void *arg, const struct qpt_qp *q)
{
	(void)arg;
	if (n_warned < 8)
		warned_pid[n_warned] = q->proc->pid;
	n_warned++;
}

static bool always_gone(pid_t pid)
{
	return true;
}

static bool never_gone(pid_t pid)
{
	return false;
}

static void table_warns_once_per_process(void **state UNUSED)
{
	struct qptable t;

	n_warned = 0;
	assert_int_equal(qpt_init(&t, 100), 0);
	qpt_add(&t, "rxe0", 17, 100, "a", 2, QPT_SRC_BPF, 0);
	qpt_add(&t, "rxe0", 18, 100, "a", 2, QPT_SRC_BPF, 0);
	qpt_add(&t, "rxe0", 19, 200, "b", 2, QPT_SRC_BPF, 0);
	qpt_add(&t, "rxe0", 20, 300, "c", 2, QPT_SRC_BPF, 0); /* managed */
	qpt_match_begin(&t);
	qpt_match(&t, "rxe0", 20, 300);
	/* within the grace period: nobody */
	assert_int_equal(qpt_warn_unmanaged(&t, 999 * MS, 1000 * MS, count_warning, NULL), 0);
	assert_int_equal(qpt_warn_unmanaged(&t, 1000 * MS, 1000 * MS, count_warning, NULL), 2);
	assert_int_equal(n_warned, 2);
	assert_true((warned_pid[0] == 100 && warned_pid[1] == 200) ||
		    (warned_pid[0] == 200 && warned_pid[1] == 100));
	/* again, and a new QP of a warned process: still nothing */
	qpt_add(&t, "rxe1", 17, 100, "a", 2, QPT_SRC_BPF, 0);
	assert_int_equal(qpt_warn_unmanaged(&t, 5000 * MS, 1000 * MS, count_warning, NULL), 0);
	/* the process closes everything but lives on: its record stays */
	qpt_remove(&t, "rxe0", 17);
	qpt_remove(&t, "rxe0", 18);
	qpt_remove(&t, "rxe1", 17);
	qpt_forget_procs(&t, never_gone);
	qpt_add(&t, "rxe0", 21, 100, "a", 2, QPT_SRC_BPF, 0);
	assert_int_equal(qpt_warn_unmanaged(&t, 5000 * MS, 1000 * MS, count_warning, NULL), 0);
	/* a process that is gone is forgotten once it has no QP left: its pid,
	 * reused by a new process, is warned about again */
	qpt_remove(&t, "rxe0", 21);
	qpt_forget_procs(&t, always_gone);
	for (const struct qpt_proc *p = t.procs; p; p = p->next)
		assert_int_not_equal(p->pid, 100);
	qpt_add(&t, "rxe0", 22, 100, "new", 2, QPT_SRC_BPF, 0);
	assert_int_equal(qpt_warn_unmanaged(&t, 5000 * MS, 1000 * MS, count_warning, NULL), 1);
	assert_int_equal(warned_pid[2], 100);
	qpt_fini(&t);
}

static void table_resync(void **state UNUSED)
{
	struct qptable t;

	assert_int_equal(qpt_init(&t, 100), 0);
	qpt_add(&t, "rxe0", 17, 100, "a", 2, QPT_SRC_BPF, 10);
	qpt_add(&t, "rxe0", 18, 100, "a", 2, QPT_SRC_BPF, 10);
	qpt_add(&t, "rxe0", 19, 100, "a", 2, QPT_SRC_BPF, 10);
	qpt_sync_begin(&t);
	qpt_add(&t, "rxe0", 17, 100, "a", 2, QPT_SRC_NETLINK, 99); /* still there */
	qpt_add(&t, "rxe0", 19, 300, "c", 2, QPT_SRC_NETLINK, 99); /* reused */
	qpt_add(&t, "rxe1", 1, 300, "c", 4, QPT_SRC_NETLINK, 99);  /* missed */
	assert_int_equal(qpt_sync_end(&t), 1);
	assert_int_equal(t.n, 3);
	assert_null(qpt_find(&t, "rxe0", 18));
	assert_int_equal(qpt_find(&t, "rxe0", 17)->seen_ns, 10);
	assert_int_equal(qpt_find(&t, "rxe0", 19)->seen_ns, 99);
	assert_int_equal(qpt_find(&t, "rxe1", 1)->proc->pid, 300);
	qpt_fini(&t);
}

static void type_names(void **state UNUSED)
{
	assert_string_equal(qpt_type_name(2), "RC");
	assert_string_equal(qpt_type_name(3), "UC");
	assert_string_equal(qpt_type_name(4), "UD");
	assert_string_equal(qpt_type_name(1), "GSI");
	assert_string_equal(qpt_type_name(8), "RAW_PACKET");
	assert_string_equal(qpt_type_name(9), "XRC_SEND");
	assert_string_equal(qpt_type_name(10), "XRC_RECV");
	assert_string_equal(qpt_type_name(255), "DRIVER");
	assert_string_equal(qpt_type_name(7), "OTHER");
	assert_string_equal(qpt_type_name(11), "OTHER");
	assert_string_equal(qpt_type_name(4096), "OTHER");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_add_find_remove),
		cmocka_unit_test(table_rejects),
		cmocka_unit_test(table_grows),
		cmocka_unit_test(table_matching),
		cmocka_unit_test(table_flow_goes_away),
		cmocka_unit_test(table_warns_once_per_process),
		cmocka_unit_test(table_resync),
		cmocka_unit_test(type_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

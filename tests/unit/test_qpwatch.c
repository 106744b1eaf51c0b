// SPDX-License-Identifier: MIT
/*
 * Unit tests of the QP watcher's pure parts and of its degraded start:
 * daemon/qptable.c (the table, matching with flows, warn once per process,
 * resync), daemon/qpwatch.c (ring-buffer record decoding, events against a
 * fake flow registry, the JSON it adds to status and flows, starting on a
 * host without RDMA) and daemon/rdmanl.c (RDMA netlink replies built here).
 * The BPF program itself only runs in the VM (tests/vm/cases/60-qpwatch.sh).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../daemon/qptable.c"
#include "../../daemon/rdmanl.c"
#include "../../daemon/qpwatch.c"
#include "../../common/log.c"

#include <dirent.h>
#include <pthread.h>

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

/* ---------------------------------------------------------------- records */

static struct qpw_event record(uint32_t kind, uint32_t pid, const char *dev, uint32_t qpn)
{
	struct qpw_event e;

	memset(&e, 0, sizeof(e));
	e.kind = kind;
	e.pid = pid;
	e.tid = pid;
	e.qpn = qpn;
	e.qp_type = 2;
	snprintf(e.dev, sizeof(e.dev), "%s", dev);
	snprintf(e.comm, sizeof(e.comm), "app%u", pid);
	return e;
}

static void decode_records(void **state UNUSED)
{
	struct qpw_event in = record(QPW_EV_CREATE, 42, "mlx5_0", 0x1234), out;
	unsigned char big[sizeof(in) + 8] = { 0 };

	assert_int_equal(qpw_decode(&in, sizeof(in), &out), 0);
	assert_int_equal(out.kind, QPW_EV_CREATE);
	assert_int_equal(out.pid, 42);
	assert_int_equal(out.qpn, 0x1234);
	assert_string_equal(out.dev, "mlx5_0");
	assert_string_equal(out.comm, "app42");
	/* sizes other than the record's */
	assert_int_equal(qpw_decode(&in, sizeof(in) - 1, &out), -EINVAL);
	memcpy(big, &in, sizeof(in));
	assert_int_equal(qpw_decode(big, sizeof(big), &out), -EINVAL);
	assert_int_equal(qpw_decode(&in, 0, &out), -EINVAL);
	/* kinds, QP numbers, device names */
	in.kind = 0;
	assert_int_equal(qpw_decode(&in, sizeof(in), &out), -EINVAL);
	in.kind = 3;
	assert_int_equal(qpw_decode(&in, sizeof(in), &out), -EINVAL);
	in.kind = QPW_EV_DESTROY;
	assert_int_equal(qpw_decode(&in, sizeof(in), &out), 0);
	in.qpn = 0x1000000;
	assert_int_equal(qpw_decode(&in, sizeof(in), &out), -EINVAL);
	in.qpn = 1;
	in.dev[0] = 0;
	assert_int_equal(qpw_decode(&in, sizeof(in), &out), -EINVAL);
	/* unterminated strings are cut; control characters in comm masked */
	memset(in.dev, 'd', sizeof(in.dev));
	memset(in.comm, 'c', sizeof(in.comm));
	in.comm[2] = '\033';
	in.comm[3] = 0x7f;
	assert_int_equal(qpw_decode(&in, sizeof(in), &out), 0);
	assert_int_equal(strlen(out.dev), sizeof(out.dev) - 1);
	assert_string_equal(out.comm, "cc??ccccccccccc");
}

/* ---------------------------------------------------------------- the watcher */

struct fake {
	struct daemon d;
	struct proc p;
	struct flow f;
	struct qpwatch w;
};

/* A watcher that is "on" without a BPF program, over a registry with one
 * shimmed process (pid 100: flow rxe0/17 with split QP rxe0/18). */
static void fake_init(struct fake *x)
{
	memset(x, 0, sizeof(*x));
	x->d.loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(x->d.loop);
	x->d.cfg.qpwatch = true;
	x->p.pid = 100;
	snprintf(x->p.comm, sizeof(x->p.comm), "shimmed");
	x->f.proc = &x->p;
	snprintf(x->f.device, sizeof(x->f.device), "rxe0");
	x->f.qpn = 17;
	x->f.split_qpn = 18;
	x->p.flows = &x->f;
	x->d.flows.procs = &x->p;
	x->w.magic = QPW_MAGIC;
	x->w.d = &x->d;
	x->w.on = true;
	x->w.mode = "fentry";
	x->w.self = 1;
	assert_int_equal(qpt_init(&x->w.table, 100), 0);
}

static void fake_fini(struct fake *x)
{
	qpt_fini(&x->w.table);
	ev_loop_destroy(x->d.loop);
}

static void events_against_flows(void **state UNUSED)
{
	struct fake x;
	struct qpw_event e;
	json_t *arr, *j;

	fake_init(&x);
	e = record(QPW_EV_CREATE, 100, "rxe0", 17); /* the registered flow */
	qpw_handle(&x.w, &e, 0);
	e = record(QPW_EV_CREATE, 100, "rxe0", 18); /* its split QP */
	qpw_handle(&x.w, &e, 0);
	e = record(QPW_EV_CREATE, 100, "rxe1", 17); /* not registered */
	qpw_handle(&x.w, &e, 0);
	e = record(QPW_EV_CREATE, 200, "rxe0", 19); /* a process without the shim */
	qpw_handle(&x.w, &e, 0);
	e = record(QPW_EV_CREATE, 1, "rxe0", 20);   /* the daemon's own QP */
	qpw_handle(&x.w, &e, 0);
	e = record(QPW_EV_CREATE, 300, "rxe0", 21); /* created and destroyed */
	qpw_handle(&x.w, &e, 0);
	e = record(QPW_EV_DESTROY, 300, "rxe0", 21);
	qpw_handle(&x.w, &e, 0);
	e = record(QPW_EV_DESTROY, 300, "rxe0", 99); /* never seen: ignored */
	qpw_handle(&x.w, &e, 0);
	assert_int_equal(x.w.table.n, 4);
	assert_null(qpt_find(&x.w.table, "rxe0", 20));

	j = qpwatch_unmanaged_json(&x.w);
	assert_int_equal(json_integer_value(j), 2);
	json_decref(j);
	arr = json_array();
	qpwatch_append_unmanaged(&x.w, arr);
	assert_int_equal(json_array_size(arr), 2);
	/* sorted by pid: 100's rxe1/17, then 200's rxe0/19 */
	j = json_array_get(arr, 0);
	assert_int_equal(json_integer_value(json_object_get(j, "pid")), 100);
	assert_string_equal(json_string_value(json_object_get(j, "device")), "rxe1");
	assert_int_equal(json_integer_value(json_object_get(j, "qpn")), 17);
	assert_string_equal(json_string_value(json_object_get(j, "qp_type")), "RC");
	assert_string_equal(json_string_value(json_object_get(j, "comm")), "app100");
	assert_true(json_is_false(json_object_get(j, "managed")));
	assert_true(json_is_null(json_object_get(j, "id")));
	assert_true(json_is_null(json_object_get(j, "class")));
	assert_string_equal(json_string_value(json_object_get(j, "seen_by")), "bpf");
	j = json_array_get(arr, 1);
	assert_int_equal(json_integer_value(json_object_get(j, "pid")), 200);
	assert_int_equal(json_integer_value(json_object_get(j, "qpn")), 19);
	json_decref(arr);

	j = qpwatch_status_json(&x.w);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "on");
	assert_string_equal(json_string_value(json_object_get(j, "mode")), "fentry");
	assert_true(json_is_null(json_object_get(j, "reason")));
	assert_int_equal(json_integer_value(json_object_get(j, "qps")), 4);
	assert_int_equal(json_integer_value(json_object_get(j, "unmanaged")), 2);
	assert_int_equal(json_integer_value(json_object_get(j, "grace_ms")), QPWATCH_GRACE_MS);
	json_decref(j);

	/* the shim unregisters its flow: both of its QPs become unmanaged */
	x.p.flows = NULL;
	j = qpwatch_unmanaged_json(&x.w);
	assert_int_equal(json_integer_value(j), 4);
	json_decref(j);
	fake_fini(&x);
}

/* With devices in the configuration, the QPs of other devices (another
 * daemon's, in the test VM) are not this daemon's business. */
static void device_filter(void **state UNUSED)
{
	struct config_device devs[1] = { { .name = "rxe0" } };
	struct fake x;
	struct qpw_event e;

	fake_init(&x);
	x.d.cfg.devices = devs;
	x.d.cfg.n_devices = 1;
	e = record(QPW_EV_CREATE, 200, "rxe1", 17);
	qpw_handle(&x.w, &e, 0);
	e = record(QPW_EV_CREATE, 200, "rxe0", 17);
	qpw_handle(&x.w, &e, 0);
	assert_int_equal(x.w.table.n, 1);
	assert_non_null(qpt_find(&x.w.table, "rxe0", 17));
	/* and what netlink lists goes through the same door */
	{
		struct rdmanl_qp q = { .dev = "rxe1", .qpn = 18, .qp_type = 2, .pid = 1 };
		struct nl_ctx c = { .w = &x.w };

		nl_qp(&c, &q);
		assert_int_equal(x.w.table.n, 1);
	}
	fake_fini(&x);
}

/* Within the grace period a new QP is neither listed nor counted; once
 * the period has passed it is both. */
static void grace_period(void **state UNUSED)
{
	struct fake x;
	struct qpw_event fresh = record(QPW_EV_CREATE, 200, "rxe0", 19);
	struct qpw_event old = record(QPW_EV_CREATE, 201, "rxe0", 20);
	json_t *arr = json_array(), *j;
	uint64_t t0 = clock_now_ns(); /* since boot: at least seconds */

	fake_init(&x);
	x.w.grace_ns = t0 / 2;
	qpw_handle(&x.w, &fresh, t0);
	qpw_handle(&x.w, &old, 0); /* seen at boot */
	assert_int_equal(x.w.table.n, 2);
	qpwatch_append_unmanaged(&x.w, arr);
	assert_int_equal(json_array_size(arr), 1);
	j = json_array_get(arr, 0);
	assert_int_equal(json_integer_value(json_object_get(j, "qpn")), 20);
	assert_true(json_integer_value(json_object_get(j, "age_ms")) >= (json_int_t)(t0 / MS));
	j = qpwatch_unmanaged_json(&x.w);
	assert_int_equal(json_integer_value(j), 1);
	json_decref(j);
	json_decref(arr);
	/* without a grace period the fresh QP counts at once */
	x.w.grace_ns = 0;
	j = qpwatch_unmanaged_json(&x.w);
	assert_int_equal(json_integer_value(j), 2);
	json_decref(j);
	fake_fini(&x);
}

/* What RDMA netlink reports: kernel QPs are skipped, a thread id becomes
 * its process, and /proc gives the name. */
static pid_t thread_tid;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int thread_state; /* 1: tid known, 2: may exit */

static void *thread_main(void *arg)
{
	pthread_mutex_lock(&mu);
	thread_tid = gettid();
	thread_state = 1;
	pthread_cond_broadcast(&cv);
	while (thread_state != 2)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return arg;
}

static void netlink_entries(void **state UNUSED)
{
	struct rdmanl_qp q = { .dev_index = 1, .dev = "rxe0", .qp_type = 2 };
	struct fake x;
	struct nl_ctx c;
	pthread_t th;
	char comm[16];
	FILE *f;

	fake_init(&x);
	x.w.self = 0;
	c = (struct nl_ctx){ .w = &x.w, .now = 5 };
	f = fopen("/proc/self/comm", "r");
	assert_non_null(f);
	assert_non_null(fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;

	q.qpn = 1;
	q.kernel = true; /* ib_core's GSI QP */
	nl_qp(&c, &q);
	q.kernel = false;
	q.qpn = 2;
	q.pid = 0; /* the creator is a zombie */
	nl_qp(&c, &q);
	assert_int_equal(x.w.table.n, 0);

	q.qpn = 17;
	q.pid = (uint32_t)getpid();
	nl_qp(&c, &q);
	assert_int_equal(qpt_find(&x.w.table, "rxe0", 17)->proc->pid, getpid());
	assert_string_equal(qpt_find(&x.w.table, "rxe0", 17)->proc->comm, comm);
	assert_int_equal(qpt_find(&x.w.table, "rxe0", 17)->src, QPT_SRC_NETLINK);

	assert_int_equal(pthread_create(&th, NULL, thread_main, NULL), 0);
	pthread_mutex_lock(&mu);
	while (thread_state != 1)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	assert_int_not_equal(thread_tid, getpid());
	q.qpn = 18;
	q.pid = (uint32_t)thread_tid;
	nl_qp(&c, &q);
	assert_int_equal(qpt_find(&x.w.table, "rxe0", 18)->proc->pid, getpid());
	pthread_mutex_lock(&mu);
	thread_state = 2;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	assert_int_equal(c.n, 2);
	fake_fini(&x);
}

/* On a machine without RDMA (the build hosts), or with "qpwatch": false,
 * the watcher is off with a reason and everything it adds says so. */
static void starts_off_cleanly(void **state UNUSED)
{
	struct daemon d;
	struct qpwatch w;
	json_t *j, *arr;

	memset(&d, 0, sizeof(d));
	d.loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(d.loop);
	d.cfg.qpwatch = false;
	qpwatch_init(&w, &d);
	assert_false(w.on);
	assert_string_equal(w.reason, "disabled in the configuration (\"qpwatch\": false)");
	j = qpwatch_status_json(&w);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "off");
	assert_true(json_is_null(json_object_get(j, "mode")));
	assert_true(json_is_null(json_object_get(j, "unmanaged")));
	assert_string_equal(json_string_value(json_object_get(j, "reason")), w.reason);
	json_decref(j);
	j = qpwatch_unmanaged_json(&w);
	assert_true(json_is_null(j));
	json_decref(j);
	arr = json_array();
	qpwatch_append_unmanaged(&w, arr);
	assert_int_equal(json_array_size(arr), 0);

	/* reload with the watcher enabled */
	d.cfg.qpwatch = true;
	qpwatch_reconfigure(&w);
	if (access("/sys/module/ib_core", F_OK)) {
		/* the build hosts: no RDMA, so off until ib_core appears */
		assert_false(w.on);
		assert_true(w.wait_ib_core);
		assert_string_equal(w.reason, "ib_core is not loaded (no RDMA in this kernel yet)");
	} else {
		/* a machine with RDMA: on, or off with a reason (permissions) */
		assert_true(w.on ? w.mode != NULL && !w.reason[0] : w.reason[0] != 0);
	}
	qpwatch_append_unmanaged(&w, arr);
	if (!w.on)
		assert_int_equal(json_array_size(arr), 0);
	json_decref(arr);
	/* and disabled again */
	d.cfg.qpwatch = false;
	qpwatch_reconfigure(&w);
	assert_false(w.on);
	assert_false(w.wait_ib_core);
	assert_null(w.skel);
	assert_string_equal(w.reason, "disabled in the configuration (\"qpwatch\": false)");
	qpwatch_fini(&w);
	qpwatch_fini(&w); /* twice is harmless */
	ev_loop_destroy(d.loop);
}

/* ---------------------------------------------------------------- rdmanl */

struct nlbuf {
	uint32_t b[2048]; /* aligned like a socket buffer */
	size_t len, msg, nest[4];
	int depth;
};

static unsigned char *at(struct nlbuf *n, size_t off)
{
	return (unsigned char *)n->b + off;
}

static void msg_begin(struct nlbuf *n, uint16_t type, uint32_t seq)
{
	struct nlmsghdr h = { .nlmsg_type = type, .nlmsg_flags = NLM_F_MULTI, .nlmsg_seq = seq };

	n->msg = n->len;
	memcpy(at(n, n->len), &h, sizeof(h));
	n->len += NLMSG_HDRLEN;
}

static void msg_end(struct nlbuf *n)
{
	uint32_t l = (uint32_t)(n->len - n->msg);

	memcpy(at(n, n->msg), &l, sizeof(l));
	n->len = NLMSG_ALIGN(n->len);
}

static void attr(struct nlbuf *n, uint16_t type, const void *data, size_t len)
{
	struct nlattr a = { .nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type };

	memcpy(at(n, n->len), &a, sizeof(a));
	memcpy(at(n, n->len + NLA_HDRLEN), data, len);
	memset(at(n, n->len + NLA_HDRLEN + len), 0, NLA_ALIGN(len) - len);
	n->len += NLA_HDRLEN + NLA_ALIGN(len);
}

static void attr_u32(struct nlbuf *n, uint16_t type, uint32_t v)
{
	attr(n, type, &v, sizeof(v));
}

static void attr_str(struct nlbuf *n, uint16_t type, const char *s)
{
	attr(n, type, s, strlen(s) + 1);
}

static void nest_begin(struct nlbuf *n, uint16_t type)
{
	struct nlattr a = { .nla_type = type | NLA_F_NESTED };

	n->nest[n->depth++] = n->len;
	memcpy(at(n, n->len), &a, sizeof(a));
	n->len += NLA_HDRLEN;
}

static void nest_end(struct nlbuf *n)
{
	size_t start = n->nest[--n->depth];
	uint16_t l = (uint16_t)(n->len - start);

	memcpy(at(n, start), &l, sizeof(l));
}

static void done(struct nlbuf *n, uint32_t seq)
{
	int zero = 0;

	msg_begin(n, NLMSG_DONE, seq);
	memcpy(at(n, n->len), &zero, sizeof(zero));
	n->len += sizeof(zero);
	msg_end(n);
}

static void qp_entry_attrs(struct nlbuf *n, uint32_t qpn, uint8_t type, uint32_t pid,
			   const char *kern)
{
	nest_begin(n, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	attr_u32(n, RDMA_NLDEV_ATTR_RES_LQPN, qpn);
	attr(n, RDMA_NLDEV_ATTR_RES_TYPE, &type, 1);
	if (kern)
		attr_str(n, RDMA_NLDEV_ATTR_RES_KERN_NAME, kern);
	else
		attr_u32(n, RDMA_NLDEV_ATTR_RES_PID, pid);
	nest_end(n);
}

static struct rdmanl_qp got[8];
static size_t n_got;

static void collect(void *arg, const struct rdmanl_qp *q)
{
	(void)arg;
	if (n_got < 8)
		got[n_got] = *q;
	n_got++;
}

struct all_ctx {
	struct rdmanl_qp *q;
	size_t max, *n;
};

static void collect_all(void *arg, const struct rdmanl_qp *q)
{
	struct all_ctx *c = arg;

	if (*c->n < c->max)
		c->q[*c->n] = *q;
	(*c->n)++;
}

static void netlink_devices(void **state UNUSED)
{
	struct rdmanl_dev devs[2];
	static struct nlbuf n;
	size_t nd = 0;

	memset(&n, 0, sizeof(n));
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 7);
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	attr_str(&n, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0");
	msg_end(&n);
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 6); /* not ours */
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 9);
	attr_str(&n, RDMA_NLDEV_ATTR_DEV_NAME, "old");
	msg_end(&n);
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 7);
	attr_str(&n, RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0");
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 4);
	msg_end(&n);
	assert_int_equal(rdmanl_parse_devs(n.b, n.len, 7, devs, 2, &nd), 0);
	assert_int_equal(nd, 2);
	assert_int_equal(devs[0].index, 3);
	assert_string_equal(devs[0].name, "rxe0");
	assert_int_equal(devs[1].index, 4);
	assert_string_equal(devs[1].name, "mlx5_0");
	/* the end of the dump, in the next buffer; more devices than room */
	memset(&n, 0, sizeof(n));
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 7);
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 5);
	attr_str(&n, RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_1");
	msg_end(&n);
	done(&n, 7);
	assert_int_equal(rdmanl_parse_devs(n.b, n.len, 7, devs, 2, &nd), 1);
	assert_int_equal(nd, 2);
	/* a device without a name is malformed */
	memset(&n, 0, sizeof(n));
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 7);
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 5);
	msg_end(&n);
	nd = 0;
	assert_int_equal(rdmanl_parse_devs(n.b, n.len, 7, devs, 2, &nd), -EPROTO);
}

static void netlink_qps(void **state UNUSED)
{
	static struct nlbuf n;
	struct nlmsgerr err = { .error = -EOPNOTSUPP };
	size_t full;

	memset(&n, 0, sizeof(n));
	n_got = 0;
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET), 9);
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	attr_str(&n, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0");
	nest_begin(&n, RDMA_NLDEV_ATTR_RES_QP);
	qp_entry_attrs(&n, 1, 1, 0, "ib_core");
	qp_entry_attrs(&n, 17, 2, 4242, NULL);
	qp_entry_attrs(&n, 0x123456, 4, 77, NULL);
	nest_end(&n);
	msg_end(&n);
	full = n.len;
	done(&n, 9);
	assert_int_equal(rdmanl_parse_qps(n.b, n.len, 9, collect, NULL), 1);
	assert_int_equal(n_got, 3);
	assert_true(got[0].kernel);
	assert_int_equal(got[0].qpn, 1);
	assert_false(got[1].kernel);
	assert_int_equal(got[1].qpn, 17);
	assert_int_equal(got[1].qp_type, 2);
	assert_int_equal(got[1].pid, 4242);
	assert_string_equal(got[1].dev, "rxe0");
	assert_int_equal(got[1].dev_index, 3);
	assert_int_equal(got[2].qpn, 0x123456);
	assert_int_equal(got[2].qp_type, 4);

	/* without the DONE message: more to come */
	n_got = 0;
	assert_int_equal(rdmanl_parse_qps(n.b, full, 9, collect, NULL), 0);
	assert_int_equal(n_got, 3);
	/* cut anywhere inside: malformed, never read past the end */
	for (size_t cut = NLMSG_HDRLEN + 1; cut < full; cut += 3)
		assert_int_equal(rdmanl_parse_qps(n.b, cut, 9, collect, NULL), -EPROTO);

	/* the kernel's error */
	memset(&n, 0, sizeof(n));
	msg_begin(&n, NLMSG_ERROR, 9);
	memcpy(at(&n, n.len), &err, sizeof(err));
	n.len += sizeof(err);
	msg_end(&n);
	assert_int_equal(rdmanl_parse_qps(n.b, n.len, 9, collect, NULL), -EOPNOTSUPP);

	/* an entry without a QP number, a name without its NUL */
	memset(&n, 0, sizeof(n));
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET), 9);
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	attr_str(&n, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0");
	nest_begin(&n, RDMA_NLDEV_ATTR_RES_QP);
	nest_begin(&n, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	attr_u32(&n, RDMA_NLDEV_ATTR_RES_PID, 1);
	nest_end(&n);
	nest_end(&n);
	msg_end(&n);
	assert_int_equal(rdmanl_parse_qps(n.b, n.len, 9, collect, NULL), -EPROTO);
	memset(&n, 0, sizeof(n));
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET), 9);
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	attr(&n, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0", 4);
	msg_end(&n);
	assert_int_equal(rdmanl_parse_qps(n.b, n.len, 9, collect, NULL), -EPROTO);
}

/* Is this process in the initial PID namespace?  The kernel lists its own
 * QPs (ib_core's GSI QP) only there. */
static bool in_init_pid_ns(void)
{
	char l[64];
	ssize_t n = readlink("/proc/self/ns/pid", l, sizeof(l) - 1);

	if (n <= 0)
		return false;
	l[n] = 0;
	return !strcmp(l, "pid:[4026531836]"); /* PROC_PID_INIT_INO */
}

/* Without ib_core the kernel has no RDMA netlink family: the dump fails
 * with the socket's error and reports nothing.  With it (the test VM, a
 * machine with RDMA) the dump succeeds, every QP it reports belongs to a
 * device in /sys/class/infiniband, and in the initial PID namespace each
 * InfiniBand/RoCE device (node type CA) shows its kernel GSI QP, QP 1. */
static void netlink_live(void **state UNUSED)
{
	static struct rdmanl_qp all[256];
	size_t n_all = 0;
	int rc;

	rc = rdmanl_dump_qps(collect_all, &(struct all_ctx){ all, 256, &n_all });
	if (access("/sys/module/ib_core", F_OK)) {
		assert_int_equal(rc, -EPROTONOSUPPORT);
		assert_int_equal(n_all, 0);
		return;
	}
	assert_int_equal(rc, 0);
	for (size_t i = 0; i < n_all && i < 256; i++) {
		char p[128];

		snprintf(p, sizeof(p), "/sys/class/infiniband/%s", all[i].dev);
		assert_int_equal(access(p, F_OK), 0);
	}
	if (in_init_pid_ns()) {
		DIR *d = opendir("/sys/class/infiniband");
		struct dirent *de;
		int n_ca = 0;

		assert_true(n_all < 256);
		while (d && (de = readdir(d))) {
			char p[300], t[16] = "";
			bool gsi = false;
			FILE *f;

			if (de->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "/sys/class/infiniband/%s/node_type", de->d_name);
			f = fopen(p, "r");
			if (!f || !fgets(t, sizeof(t), f) || strncmp(t, "1:", 2)) {
				if (f)
					fclose(f);
				continue; /* not a CA (iWARP has no GSI QP) */
			}
			fclose(f);
			for (size_t i = 0; i < n_all; i++)
				gsi |= all[i].kernel && all[i].qpn == 1 &&
				       !strcmp(all[i].dev, de->d_name);
			assert_true(gsi);
			n_ca++;
		}
		if (d)
			closedir(d);
		print_message("netlink_live: %zu QPs, %d CA devices\n", n_all, n_ca);
	}
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
		cmocka_unit_test(decode_records),
		cmocka_unit_test(events_against_flows),
		cmocka_unit_test(device_filter),
		cmocka_unit_test(grace_period),
		cmocka_unit_test(netlink_entries),
		cmocka_unit_test(starts_off_cleanly),
		cmocka_unit_test(netlink_devices),
		cmocka_unit_test(netlink_qps),
		cmocka_unit_test(netlink_live),
	};

	log_init("test_qpwatch", LOG_LVL_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

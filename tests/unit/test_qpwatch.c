// SPDX-License-Identifier: MIT
/*
 * Unit tests of the QP watcher's pure parts and of its degraded start:
 * daemon/qpwatch.c (ring-buffer record decoding, events against a fake flow
 * registry, the JSON it adds to status and flows, starting on a host without
 * RDMA), with qptable.c and rdmanl.c (their own tests: test_qptable.c,
 * test_rdmanl.c).  The BPF program itself only runs in the VM
 * (tests/vm/cases/60-qpwatch.sh).
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decode_records),
		cmocka_unit_test(events_against_flows),
		cmocka_unit_test(device_filter),
		cmocka_unit_test(grace_period),
		cmocka_unit_test(netlink_entries),
		cmocka_unit_test(starts_off_cleanly),
	};

	log_init("test_qpwatch", LOG_LVL_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT OR GPL-2.0-only
/* qpwatch: report every user QP the kernel's RDMA core creates or destroys,
 * whichever process and provider (mlx5, rxe, ...), into a ring buffer.
 * Runs in the kernel; the daemon's qpwatch.c loads it.
 * May call: BPF helpers only (qpwatch_event.h is the ring's record). */
#include "qpwatch.vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "qpwatch_event.h"

/*
 * Hook points (docs/qpwatch.md): the two exported ib_core functions every
 * user QP passes, whichever uverbs entry (write() or ioctl()) it came from:
 *   ib_create_qp_user()   returns the new struct ib_qp (or an ERR_PTR)
 *   ib_destroy_qp_user()  frees it; returns 0 on success
 * Two program sets do the same thing, the daemon loads one of them:
 *   fentry/fexit          BPF trampolines, BTF-typed (preferred)
 *   kprobe/kretprobe      perf-event kprobes, the fallback (fewer capabilities
 *                         when kernel.perf_event_paranoid <= 2, no trampoline)
 *
 * Built with clang -target bpf, linked by `bpftool gen object`, embedded by
 * `bpftool gen skeleton` (Makefile).  Types come from qpwatch.vmlinux.h and
 * are relocated at load time (CO-RE).
 */

#define MAX_ERRNO 4095

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* What a destroy's entry saw, by thread, until its return says whether the
 * QP is really gone (the QP is freed by then, so it cannot be read later). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct qpw_event);
} pending SEC(".maps");

/* Records lost because the ring buffer was full; the daemon reads it through
 * the skeleton's .bss and resynchronises when it grows. */
__u64 n_dropped;

static __always_inline bool is_err_or_null(const void *p)
{
	return !p || (unsigned long)p >= (unsigned long)-MAX_ERRNO;
}

static __always_inline void fill(struct qpw_event *e, __u32 kind, struct ib_qp *qp)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();

	__builtin_memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->qpn = BPF_CORE_READ(qp, qp_num);
	e->qp_type = BPF_CORE_READ(qp, qp_type);
	e->dev_index = BPF_CORE_READ(qp, device, index);
	e->ts_ns = bpf_ktime_get_ns();
	BPF_CORE_READ_STR_INTO(&e->dev, qp, device, name);
	BPF_CORE_READ_STR_INTO(&e->comm, task, group_leader, comm);
}

static __always_inline int created(struct ib_qp *qp)
{
	struct qpw_event *e;

	if (is_err_or_null(qp))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&n_dropped, 1);
		return 0;
	}
	fill(e, QPW_EV_CREATE, qp);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static __always_inline int destroy_entry(struct ib_qp *qp)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct qpw_event e;

	if (is_err_or_null(qp))
		return 0;
	fill(&e, QPW_EV_DESTROY, qp);
	bpf_map_update_elem(&pending, &id, &e, BPF_ANY);
	return 0;
}

static __always_inline int destroy_exit(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct qpw_event *e = bpf_map_lookup_elem(&pending, &id);

	if (!e)
		return 0;
	if (ret == 0 && bpf_ringbuf_output(&events, e, sizeof(*e), 0))
		__sync_fetch_and_add(&n_dropped, 1);
	bpf_map_delete_elem(&pending, &id);
	return 0;
}

/* ---------------------------------------------------------------- fentry/fexit */

SEC("fexit/ib_create_qp_user")
int BPF_PROG(fexit_create_qp, struct ib_device *dev, void *pd, void *attr, void *udata,
	     void *uobj, const char *caller, struct ib_qp *ret)
{
	return created(ret);
}

SEC("fentry/ib_destroy_qp_user")
int BPF_PROG(fentry_destroy_qp, struct ib_qp *qp, void *udata)
{
	return destroy_entry(qp);
}

SEC("fexit/ib_destroy_qp_user")
int BPF_PROG(fexit_destroy_qp, struct ib_qp *qp, void *udata, int ret)
{
	return destroy_exit(ret);
}

/* ---------------------------------------------------------------- kprobes */

SEC("kretprobe/ib_create_qp_user")
int BPF_KRETPROBE(kretprobe_create_qp, struct ib_qp *ret)
{
	return created(ret);
}

SEC("kprobe/ib_destroy_qp_user")
int BPF_KPROBE(kprobe_destroy_qp, struct ib_qp *qp)
{
	return destroy_entry(qp);
}

SEC("kretprobe/ib_destroy_qp_user")
int BPF_KRETPROBE(kretprobe_destroy_qp, int ret)
{
	return destroy_exit(ret);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

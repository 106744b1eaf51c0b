/* SPDX-License-Identifier: MIT */
/* The record the QP watcher's BPF program (qpwatch.bpf.c) puts into its ring
 * buffer, one per QP created or destroyed in the kernel's RDMA core.  Shared
 * by the BPF side (types from qpwatch.vmlinux.h) and the daemon (from
 * <linux/types.h>).  Both are built from this tree into one binary, so the
 * layout needs no version; the daemon still checks the size and kind of
 * every record. */
#ifndef JUSTITIAD_QPWATCH_EVENT_H
#define JUSTITIAD_QPWATCH_EVENT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define QPW_EV_CREATE 1  /* ib_create_qp_user() returned a QP */
#define QPW_EV_DESTROY 2 /* ib_destroy_qp_user() returned 0 */

#define QPW_COMM_LEN 16  /* TASK_COMM_LEN */
#define QPW_DEV_LEN 64   /* IB_DEVICE_NAME_MAX */

struct qpw_event {
	__u32 kind;              /* QPW_EV_* */
	__u32 pid;               /* thread group (process) id, initial PID namespace */
	__u32 tid;               /* the calling thread */
	__u32 qpn;               /* ib_qp.qp_num */
	__u32 qp_type;           /* enum ib_qp_type (kernel numbering) */
	__u32 dev_index;         /* ib_device.index */
	__u64 ts_ns;             /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	char comm[QPW_COMM_LEN]; /* the process's (thread group leader's) comm */
	char dev[QPW_DEV_LEN];   /* ib_device.name */
};

#endif

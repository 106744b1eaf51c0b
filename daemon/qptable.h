/* SPDX-License-Identifier: MIT */
/*
 * The table of user QPs the kernel has (as the QP watcher saw them created,
 * or as RDMA netlink listed them), and whether a registered flow manages
 * each.  Pure bookkeeping: no I/O, no clock; callers pass the time.
 *
 * A QP is identified by (device name, QP number): QP numbers are unique per
 * device while the QP lives, and reused after it is destroyed.  It is
 * "managed" when a flow registered by a shim has the same device, QP number
 * and pid.  It is "unmanaged" when no flow matches and it is older than a
 * grace period (the shim registers a QP only after the kernel created it).
 *
 * Int functions return 0 or a negative errno.
 */
#ifndef JUSTITIAD_QPTABLE_H
#define JUSTITIAD_QPTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define QPT_DEV_LEN 64  /* IB_DEVICE_NAME_MAX, NUL included */
#define QPT_COMM_LEN 16 /* TASK_COMM_LEN, NUL included */

/* Where an entry came from. */
enum qpt_source { QPT_SRC_BPF, QPT_SRC_NETLINK };

struct qpt_proc {
	pid_t pid;
	char comm[QPT_COMM_LEN];
	size_t n_qps;
	bool warned;             /* "created QPs without the shim" was logged */
	struct qpt_proc *next;
};

struct qpt_qp {
	char dev[QPT_DEV_LEN];
	uint32_t qpn;
	uint32_t qp_type;        /* enum ib_qp_type, kernel numbering */
	uint64_t seen_ns;        /* first seen, or when its flow went away (caller's clock) */
	uint64_t match_gen;      /* == table gen: a flow matched it in this pass */
	bool matched;            /* a flow matched it in the last completed pass */
	enum qpt_source src;
	bool stale;              /* not confirmed by the current resync */
	struct qpt_proc *proc;
	struct qpt_qp *next;     /* hash chain */
};

struct qptable {
	struct qpt_qp **buckets;
	size_t n_buckets;        /* a power of two */
	size_t n;                /* QPs in the table */
	size_t max;              /* at most this many; more are counted in .untracked */
	uint64_t untracked;
	uint64_t gen;            /* current matching pass */
	struct qpt_proc *procs;
};

int qpt_init(struct qptable *t, size_t max);
void qpt_fini(struct qptable *t);
/* Forget every QP (process records and their warned flags stay). */
void qpt_clear(struct qptable *t);

/* A QP appeared: insert it, or replace what the table had under the same
 * (dev, qpn), which the kernel must have destroyed unseen.  The same QP
 * seen again (same pid) keeps its first-seen time.  -EINVAL for a device
 * name that is empty, too long or not printable ASCII, or a QP number over
 * 24 bits; -ENOSPC when the table is full; -ENOMEM. */
int qpt_add(struct qptable *t, const char *dev, uint32_t qpn, pid_t pid, const char *comm,
	    uint32_t qp_type, enum qpt_source src, uint64_t now_ns);
/* The QP is gone: 0, or -ENOENT if the table did not have it. */
int qpt_remove(struct qptable *t, const char *dev, uint32_t qpn);
struct qpt_qp *qpt_find(const struct qptable *t, const char *dev, uint32_t qpn);

/* Resynchronisation with a complete list: qpt_sync_begin(), qpt_add() for
 * every QP of the list, then qpt_sync_end() drops the QPs the list did not
 * have and returns how many. */
void qpt_sync_begin(struct qptable *t);
size_t qpt_sync_end(struct qptable *t);

/* Matching pass: qpt_match_begin(), then qpt_match() for every registered
 * flow (device, QP number, owner pid), which is true if it named a QP of the
 * table, then qpt_match_end().  Until the next qpt_match_begin(),
 * qpt_managed() tells which QPs matched.  A QP whose flow went away (the shim
 * unregisters before it destroys the QP) starts a new grace period at
 * qpt_match_end(), so that its destruction does not make it unmanaged. */
void qpt_match_begin(struct qptable *t);
bool qpt_match(struct qptable *t, const char *dev, uint32_t qpn, pid_t pid);
void qpt_match_end(struct qptable *t, uint64_t now_ns);
bool qpt_managed(const struct qptable *t, const struct qpt_qp *q);
/* Not managed, and seen at least grace_ns before now_ns. */
bool qpt_unmanaged(const struct qptable *t, const struct qpt_qp *q, uint64_t now_ns,
		   uint64_t grace_ns);
size_t qpt_count_unmanaged(const struct qptable *t, uint64_t now_ns, uint64_t grace_ns);

/* After a matching pass: call warn() for the first unmanaged QP of every
 * process that has not been warned about yet, and mark it warned.  Returns
 * the number of warn() calls. */
size_t qpt_warn_unmanaged(struct qptable *t, uint64_t now_ns, uint64_t grace_ns,
			  void (*warn)(void *arg, const struct qpt_qp *q), void *arg);

/* Drop the records of processes without QPs for which gone(pid) is true. */
void qpt_forget_procs(struct qptable *t, bool (*gone)(pid_t pid));

/* Every QP, in no particular order: start with q = NULL. */
struct qpt_qp *qpt_next(const struct qptable *t, const struct qpt_qp *q);

/* "RC", "UC", "UD", "XRC_SEND", ... as the shim names them (libibverbs'
 * names; the kernel's XRC_INI/XRC_TGT are XRC_SEND/XRC_RECV there). */
const char *qpt_type_name(uint32_t qp_type);

#endif

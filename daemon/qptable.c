// SPDX-License-Identifier: MIT
/* The table of kernel-seen user QPs and their matching with registered
 * flows (qptable.h).
 * May call: libc only (flows are passed in). */
#include "qptable.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INITIAL_BUCKETS 256

static uint64_t hash(const char *dev, uint32_t qpn)
{
	uint64_t h = 14695981039346656037ull; /* FNV-1a */

	for (; *dev; dev++)
		h = (h ^ (unsigned char)*dev) * 1099511628211ull;
	for (int i = 0; i < 4; i++, qpn >>= 8)
		h = (h ^ (qpn & 0xff)) * 1099511628211ull;
	return h;
}

static bool valid_dev(const char *dev)
{
	size_t n = strnlen(dev, QPT_DEV_LEN);

	if (n == 0 || n == QPT_DEV_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)dev[i] < 0x21 || (unsigned char)dev[i] > 0x7e)
			return false;
	return true;
}

int qpt_init(struct qptable *t, size_t max)
{
	memset(t, 0, sizeof(*t));
	t->buckets = calloc(INITIAL_BUCKETS, sizeof(*t->buckets));
	if (!t->buckets)
		return -ENOMEM;
	t->n_buckets = INITIAL_BUCKETS;
	t->max = max;
	t->gen = 1;
	return 0;
}

static void proc_put(struct qpt_proc *p)
{
	p->n_qps--;
}

static struct qpt_proc *proc_get(struct qptable *t, pid_t pid, const char *comm)
{
	struct qpt_proc *p;

	for (p = t->procs; p; p = p->next)
		if (p->pid == pid)
			break;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->pid = pid;
		p->next = t->procs;
		t->procs = p;
	}
	/* the newest name wins: a pid record may outlive an exec */
	if (comm && *comm)
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	p->n_qps++;
	return p;
}

void qpt_clear(struct qptable *t)
{
	for (size_t b = 0; b < t->n_buckets; b++) {
		while (t->buckets[b]) {
			struct qpt_qp *q = t->buckets[b];

			t->buckets[b] = q->next;
			proc_put(q->proc);
			free(q);
		}
	}
	t->n = 0;
}

void qpt_fini(struct qptable *t)
{
	if (t->buckets)
		qpt_clear(t);
	while (t->procs) {
		struct qpt_proc *p = t->procs;

		t->procs = p->next;
		free(p);
	}
	free(t->buckets);
	t->buckets = NULL;
	t->n_buckets = 0;
}

static struct qpt_qp **slot(const struct qptable *t, const char *dev, uint32_t qpn)
{
	struct qpt_qp **pp = &t->buckets[hash(dev, qpn) & (t->n_buckets - 1)];

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->qpn == qpn && !strcmp((*pp)->dev, dev))
			break;
	return pp;
}

struct qpt_qp *qpt_find(const struct qptable *t, const char *dev, uint32_t qpn)
{
	return *slot(t, dev, qpn);
}

/* Double the buckets when the chains get long; failing that is harmless. */
static void grow(struct qptable *t)
{
	size_t nb = t->n_buckets * 2;
	struct qpt_qp **b = calloc(nb, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < t->n_buckets; i++) {
		while (t->buckets[i]) {
			struct qpt_qp *q = t->buckets[i];
			struct qpt_qp **head = &b[hash(q->dev, q->qpn) & (nb - 1)];

			t->buckets[i] = q->next;
			q->next = *head;
			*head = q;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->n_buckets = nb;
}

int qpt_add(struct qptable *t, const char *dev, uint32_t qpn, pid_t pid, const char *comm,
	    uint32_t qp_type, enum qpt_source src, uint64_t now_ns)
{
	struct qpt_qp **pp, *q;
	struct qpt_proc *p;

	if (!valid_dev(dev) || qpn > 0xffffff)
		return -EINVAL;
	pp = slot(t, dev, qpn);
	q = *pp;
	if (!q && t->n >= t->max) {
		t->untracked++;
		return -ENOSPC;
	}
	p = proc_get(t, pid, comm);
	if (!p)
		return -ENOMEM;
	if (q) {
		/* the same QP again (a resync), or a reused QP number whose
		 * old QP was destroyed unseen */
		if (q->proc->pid != pid)
			q->seen_ns = now_ns;
		proc_put(q->proc);
	} else {
		q = calloc(1, sizeof(*q));
		if (!q) {
			proc_put(p);
			return -ENOMEM;
		}
		snprintf(q->dev, sizeof(q->dev), "%s", dev);
		q->qpn = qpn;
		q->seen_ns = now_ns;
		*pp = q;
		t->n++;
	}
	q->proc = p;
	q->qp_type = qp_type;
	q->match_gen = 0;
	q->matched = false;
	q->src = src;
	q->stale = false;
	if (t->n > t->n_buckets)
		grow(t);
	return 0;
}

int qpt_remove(struct qptable *t, const char *dev, uint32_t qpn)
{
	struct qpt_qp **pp, *q;

	if (!valid_dev(dev))
		return -ENOENT;
	pp = slot(t, dev, qpn);
	q = *pp;
	if (!q)
		return -ENOENT;
	*pp = q->next;
	proc_put(q->proc);
	free(q);
	t->n--;
	return 0;
}

void qpt_sync_begin(struct qptable *t)
{
	for (struct qpt_qp *q = qpt_next(t, NULL); q; q = qpt_next(t, q))
		q->stale = true;
}

size_t qpt_sync_end(struct qptable *t)
{
	size_t n = 0;

	for (size_t b = 0; b < t->n_buckets; b++) {
		struct qpt_qp **pp = &t->buckets[b];

		while (*pp) {
			struct qpt_qp *q = *pp;

			if (!q->stale) {
				pp = &q->next;
				continue;
			}
			*pp = q->next;
			proc_put(q->proc);
			free(q);
			t->n--;
			n++;
		}
	}
	return n;
}

void qpt_match_begin(struct qptable *t)
{
	t->gen++;
}

bool qpt_match(struct qptable *t, const char *dev, uint32_t qpn, pid_t pid)
{
	struct qpt_qp *q;

	if (!valid_dev(dev))
		return false;
	q = qpt_find(t, dev, qpn);
	if (!q || q->proc->pid != pid)
		return false;
	q->match_gen = t->gen;
	return true;
}

void qpt_match_end(struct qptable *t, uint64_t now_ns)
{
	for (struct qpt_qp *q = qpt_next(t, NULL); q; q = qpt_next(t, q)) {
		bool m = q->match_gen == t->gen;

		if (q->matched && !m)
			q->seen_ns = now_ns;
		q->matched = m;
	}
}

bool qpt_managed(const struct qptable *t, const struct qpt_qp *q)
{
	return q->match_gen == t->gen;
}

bool qpt_unmanaged(const struct qptable *t, const struct qpt_qp *q, uint64_t now_ns,
		   uint64_t grace_ns)
{
	return !qpt_managed(t, q) && now_ns >= q->seen_ns && now_ns - q->seen_ns >= grace_ns;
}

struct qpt_qp *qpt_next(const struct qptable *t, const struct qpt_qp *q)
{
	size_t b = 0;

	if (q) {
		if (q->next)
			return q->next;
		b = (hash(q->dev, q->qpn) & (t->n_buckets - 1)) + 1;
	}
	for (; b < t->n_buckets; b++)
		if (t->buckets[b])
			return t->buckets[b];
	return NULL;
}

size_t qpt_count_unmanaged(const struct qptable *t, uint64_t now_ns, uint64_t grace_ns)
{
	size_t n = 0;

	for (const struct qpt_qp *q = qpt_next(t, NULL); q; q = qpt_next(t, q))
		n += qpt_unmanaged(t, q, now_ns, grace_ns);
	return n;
}

size_t qpt_warn_unmanaged(struct qptable *t, uint64_t now_ns, uint64_t grace_ns,
			  void (*warn)(void *arg, const struct qpt_qp *q), void *arg)
{
	size_t n = 0;

	for (struct qpt_qp *q = qpt_next(t, NULL); q; q = qpt_next(t, q)) {
		if (q->proc->warned || !qpt_unmanaged(t, q, now_ns, grace_ns))
			continue;
		q->proc->warned = true;
		warn(arg, q);
		n++;
	}
	return n;
}

void qpt_forget_procs(struct qptable *t, bool (*gone)(pid_t pid))
{
	struct qpt_proc **pp = &t->procs;

	while (*pp) {
		struct qpt_proc *p = *pp;

		if (!p->n_qps && gone(p->pid)) {
			*pp = p->next;
			free(p);
		} else {
			pp = &p->next;
		}
	}
}

const char *qpt_type_name(uint32_t qp_type)
{
	static const char *const names[] = {
		[0] = "SMI", [1] = "GSI", [2] = "RC", [3] = "UC", [4] = "UD",
		[5] = "RAW_IPV6", [6] = "RAW_ETHERTYPE", [8] = "RAW_PACKET",
		[9] = "XRC_SEND",  /* the kernel's XRC_INI */
		[10] = "XRC_RECV", /* the kernel's XRC_TGT */
	};

	if (qp_type == 255)
		return "DRIVER";
	if (qp_type < sizeof(names) / sizeof(names[0]) && names[qp_type])
		return names[qp_type];
	return "OTHER";
}

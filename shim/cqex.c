// SPDX-License-Identifier: MIT
/* The extended poll API (ibv_start_poll, ibv_next_poll, ibv_end_poll and
 * the ibv_wc_read_* accessors): static inlines that call the ibv_cq_ex's
 * own function pointers, which the shim wraps when the CQ is created, so
 * that an application polling this way gets what ibv_poll_cq gives:
 *   - the completions the shim owes (inject.h), in place of their markers
 *     or, when none waits for a marker, after the provider's;
 *   - split messages with their full byte_len (splitmsg.h), receives
 *     tracked, completions counted (ops.c, shim_ops_wc).
 * The poll of one CQ is serialised by the application (ibv_start_poll(3)),
 * so a CQ's current completion is kept in its record without a lock.
 * Interposition layer; may call: the pacer (pacectl: progress from the
 * poll), ops.c (shim_ops_wc), the per-QP state (inject), log. */
#include "shim.h"
#include "inject.h"
#include "log.h"
#include "backlogs.h"
#include "pacectl.h"

#include <errno.h>
#include <stdlib.h>

#define CQX_BUCKETS 256 /* power of two; records are never freed */

struct cqx {
	struct cqx *_Atomic next;
	struct ibv_cq_ex *_Atomic cq;
	int (*start_poll)(struct ibv_cq_ex *, struct ibv_poll_cq_attr *);
	int (*next_poll)(struct ibv_cq_ex *);
	void (*end_poll)(struct ibv_cq_ex *);
	enum ibv_wc_opcode (*read_opcode)(struct ibv_cq_ex *);
	uint32_t (*read_vendor_err)(struct ibv_cq_ex *);
	uint32_t (*read_byte_len)(struct ibv_cq_ex *);
	__be32 (*read_imm_data)(struct ibv_cq_ex *);
	uint32_t (*read_qp_num)(struct ibv_cq_ex *);
	uint32_t (*read_src_qp)(struct ibv_cq_ex *);
	unsigned int (*read_wc_flags)(struct ibv_cq_ex *);
	int prov;              /* the provider's poll is open (end_poll owed) */
	int own;               /* the current completion is the shim's */
	struct ibv_wc cur;     /* the current completion as the shim sees it */
};

static struct cqx *_Atomic buckets[CQX_BUCKETS];
static pthread_mutex_t wrap_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned bucket(const struct ibv_cq_ex *cq)
{
	uint64_t h = (uint64_t)(uintptr_t)cq * 0x9e3779b97f4a7c15ull;

	return (unsigned)(h >> 40) & (CQX_BUCKETS - 1);
}

static struct cqx *find(const struct ibv_cq_ex *cq)
{
	struct cqx *x = atomic_load_explicit(&buckets[bucket(cq)], memory_order_acquire);

	for (; x; x = atomic_load_explicit(&x->next, memory_order_acquire))
		if (atomic_load_explicit(&x->cq, memory_order_relaxed) == cq)
			return x;
	return NULL;
}

/* The provider's current completion: the shim's own in place of a marker,
 * else passed through (its length shown whole, counted).  Returns 1 when
 * it is the shim's ordering barrier (order.h): the caller moves past it. */
static int provider_current(struct cqx *x, struct ibv_cq_ex *cq)
{
	struct ibv_cq *base = ibv_cq_ex_to_cq(cq);
	struct ibv_wc wc = { .wr_id = cq->wr_id, .status = cq->status };

	x->own = 0;
	wc.qp_num = x->read_qp_num(cq);
	if (__builtin_expect(atomic_load_explicit(&shim_inject_pending, memory_order_acquire), 0) &&
	    shim_inject_is_marker(base, wc.wr_id, wc.qp_num, &x->cur)) {
		x->own = 1;
		cq->wr_id = x->cur.wr_id;
		cq->status = x->cur.status;
		shim_ops_wc(cq->context, &x->cur);
		return 0;
	}
	wc.opcode = x->read_opcode(cq);
	wc.byte_len = x->read_byte_len(cq);
	if (shim_ops_wc(cq->context, &wc))
		return 1;
	cq->wr_id = wc.wr_id; /* a window tag's is the application's again */
	x->cur = wc;
	return 0;
}

/* One owed completion that waits for no marker, as the current one. */
static int own_current(struct cqx *x, struct ibv_cq_ex *cq)
{
	if (!atomic_load_explicit(&shim_inject_pending, memory_order_acquire) ||
	    !shim_inject_take_ready(ibv_cq_ex_to_cq(cq), &x->cur))
		return ENOENT;
	x->own = 1;
	cq->wr_id = x->cur.wr_id;
	cq->status = x->cur.status;
	shim_ops_wc(cq->context, &x->cur);
	return 0;
}

static int w_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	struct cqx *x = find(cq);
	int rc;

	if (!x)
		return EINVAL; /* cannot happen: the CQ was wrapped */
	if (!shim_busy)
		backlogs_cq_polled(ibv_cq_ex_to_cq(cq));
	if (__builtin_expect(atomic_load_explicit(&shim_pace_queued, memory_order_relaxed), 0))
		shim_pace_progress(ibv_cq_ex_to_cq(cq));
	x->own = 0;
	rc = x->start_poll(cq, attr);
	if (!rc) {
		while (!rc && provider_current(x, cq))
			rc = x->next_poll(cq); /* past the shim's barrier */
		if (!rc) {
			x->prov = 1;
			return 0;
		}
		/* it held the barrier alone: close the provider's poll */
		x->end_poll(cq);
	}
	x->prov = 0;
	/* nothing from the provider: its poll is not open (no end_poll) */
	return rc == ENOENT ? own_current(x, cq) : rc;
}

static int w_next_poll(struct ibv_cq_ex *cq)
{
	struct cqx *x = find(cq);
	int rc;

	if (!x)
		return EINVAL;
	if (x->prov) {
		rc = x->next_poll(cq);
		while (!rc && provider_current(x, cq))
			rc = x->next_poll(cq); /* past the shim's barrier */
		if (!rc)
			return 0;
		if (rc != ENOENT)
			return rc;
	}
	return own_current(x, cq);
}

static void w_end_poll(struct ibv_cq_ex *cq)
{
	struct cqx *x = find(cq);

	if (!x)
		return;
	if (x->prov)
		x->end_poll(cq);
	x->prov = 0;
	x->own = 0;
}

static enum ibv_wc_opcode w_read_opcode(struct ibv_cq_ex *cq)
{
	struct cqx *x = find(cq);

	return x->own ? x->cur.opcode : x->read_opcode(cq);
}

static uint32_t w_read_vendor_err(struct ibv_cq_ex *cq)
{
	struct cqx *x = find(cq);

	return x->own ? x->cur.vendor_err : x->read_vendor_err(cq);
}

static uint32_t w_read_byte_len(struct ibv_cq_ex *cq)
{
	struct cqx *x = find(cq);

	/* the split message's full length (shim_ops_wc) */
	return x->cur.byte_len;
}

static __be32 w_read_imm_data(struct ibv_cq_ex *cq)
{
	struct cqx *x = find(cq);

	return x->own ? x->cur.imm_data : x->read_imm_data(cq);
}

static uint32_t w_read_qp_num(struct ibv_cq_ex *cq)
{
	struct cqx *x = find(cq);

	return x->cur.qp_num;
}

static uint32_t w_read_src_qp(struct ibv_cq_ex *cq)
{
	struct cqx *x = find(cq);

	return x->own ? x->cur.src_qp : x->read_src_qp(cq);
}

static unsigned int w_read_wc_flags(struct ibv_cq_ex *cq)
{
	struct cqx *x = find(cq);

	return x->own ? x->cur.wc_flags : x->read_wc_flags(cq);
}

void shim_cqex_wrap(struct ibv_cq_ex *cq)
{
	struct cqx *x;

	if (cq->start_poll == w_start_poll)
		return; /* wrapped already */
	if (!cq->start_poll || !cq->next_poll || !cq->end_poll || !cq->read_opcode ||
	    !cq->read_qp_num || !cq->read_byte_len) {
		shim_log_once("an extended CQ without the standard readers: left unwrapped");
		return;
	}
	pthread_mutex_lock(&wrap_lock);
	x = find(cq); /* a destroyed CQ's address, reused */
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x) {
			pthread_mutex_unlock(&wrap_lock);
			shim_log_once("out of memory: extended CQ left unwrapped");
			return;
		}
		atomic_store_explicit(&x->cq, cq, memory_order_relaxed);
		atomic_store_explicit(&x->next, atomic_load(&buckets[bucket(cq)]),
				      memory_order_relaxed);
		atomic_store_explicit(&buckets[bucket(cq)], x, memory_order_release);
	}
	x->prov = x->own = 0;
	x->start_poll = cq->start_poll;
	x->next_poll = cq->next_poll;
	x->end_poll = cq->end_poll;
	x->read_opcode = cq->read_opcode;
	x->read_vendor_err = cq->read_vendor_err;
	x->read_byte_len = cq->read_byte_len;
	x->read_imm_data = cq->read_imm_data;
	x->read_qp_num = cq->read_qp_num;
	x->read_src_qp = cq->read_src_qp;
	x->read_wc_flags = cq->read_wc_flags;
	pthread_mutex_unlock(&wrap_lock);
	cq->start_poll = w_start_poll;
	cq->next_poll = w_next_poll;
	cq->end_poll = w_end_poll;
	cq->read_opcode = w_read_opcode;
	cq->read_byte_len = w_read_byte_len;
	cq->read_qp_num = w_read_qp_num;
	/* the others only when the application asked for them */
	if (cq->read_vendor_err)
		cq->read_vendor_err = w_read_vendor_err;
	if (cq->read_imm_data)
		cq->read_imm_data = w_read_imm_data;
	if (cq->read_src_qp)
		cq->read_src_qp = w_read_src_qp;
	if (cq->read_wc_flags)
		cq->read_wc_flags = w_read_wc_flags;
}

// SPDX-License-Identifier: MIT
/* ibv_wr_* batches kept as classic work requests (see wrbuf.h).
 *
 * Storage grows by doubling and is kept from one batch to the next (up to
 * KEEP_* entries and bytes), so a steady flow of batches allocates nothing.
 * The arrays move when they grow, so entries refer to their SGEs and data by
 * index; wrbuf_list() turns the indices into pointers once the batch is
 * complete.  Errors are positive errno values, as ibv_wr_complete returns.
 * Per-QP state layer; may call: the provider's own ibv_qp_ex functions
 * it is given (wrbuf_replay), nothing of the shim. */
#include "wrbuf.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define KEEP_ENTS 1024
#define KEEP_BYTES (1u << 20)

void wrbuf_init(struct wrbuf *b)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
}

static void wb_release(struct wrbuf *b)
{
	free(b->ent);
	free(b->sge);
	free(b->data);
	b->ent = NULL;
	b->sge = NULL;
	b->data = NULL;
	b->cap = b->cap_sge = b->cap_data = 0;
}

static void wb_empty(struct wrbuf *b)
{
	b->on = 0;
	b->err = 0;
	b->special = 0;
	b->n = b->n_sge = b->n_data = 0;
}

void wrbuf_recycle(struct wrbuf *b)
{
	pthread_mutex_lock(&b->lock);
	b->busy = 0;
	pthread_mutex_unlock(&b->lock);
	b->allowed = 0;
	wb_empty(b);
	wb_release(b);
}

void wrbuf_allow(struct wrbuf *b, const struct ibv_qp_init_attr_ex *attr)
{
	b->allowed = (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
		     !(attr->send_ops_flags & ~(uint64_t)WRBUF_KNOWN_OPS);
}

void wrbuf_enter(struct wrbuf *b)
{
	pthread_mutex_lock(&b->lock);
	while (b->busy)
		pthread_cond_wait(&b->cond, &b->lock);
	b->busy = 1;
	pthread_mutex_unlock(&b->lock);
	wb_empty(b);
}

void wrbuf_leave(struct wrbuf *b)
{
	wb_empty(b);
	if (b->cap > KEEP_ENTS || b->cap_sge > KEEP_ENTS || b->cap_data > KEEP_BYTES)
		wb_release(b);
	/* signalled, not just unlocked: the region may be left by another
	 * thread than the one that entered it (a thread domain's user may
	 * hand a batch over) */
	pthread_mutex_lock(&b->lock);
	b->busy = 0;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static int wb_fail(struct wrbuf *b, int err)
{
	if (!b->err)
		b->err = err;
	return err;
}

/* Make room for @need elements of @size in *@p (capacity *@cap). */
static int wb_grow(struct wrbuf *b, void **p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 8;
	void *np;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2 / size)
			return wb_fail(b, ENOMEM);
		c *= 2;
	}
	np = realloc(*p, c * size);
	if (!np)
		return wb_fail(b, ENOMEM);
	*p = np;
	*cap = c;
	return 0;
}

static struct wrbuf_ent *wb_add(struct wrbuf *b, enum ibv_wr_opcode op, uint64_t wr_id,
			     unsigned int wr_flags)
{
	void *p = b->ent;
	struct wrbuf_ent *e;

	if (b->err || wb_grow(b, &p, &b->cap, b->n + 1, sizeof(*e)))
		return NULL;
	b->ent = p;
	e = &b->ent[b->n++];
	memset(e, 0, sizeof(*e));
	e->wr.wr_id = wr_id;
	e->wr.opcode = op;
	/* the extended API says inline by its setter, not by a flag */
	e->wr.send_flags = wr_flags & ~(unsigned int)IBV_SEND_INLINE;
	e->wr_flags = wr_flags;
	return e;
}

struct ibv_send_wr *wrbuf_add(struct wrbuf *b, enum ibv_wr_opcode op, uint64_t wr_id,
			      unsigned int wr_flags)
{
	struct wrbuf_ent *e = wb_add(b, op, wr_id, wr_flags);

	return e ? &e->wr : NULL;
}

/* Append @n SGEs (NULL: uninitialised) and @len bytes of data (NULL: none);
 * their first indices in *@sge and *@data. */
static int wb_append(struct wrbuf *b, const struct ibv_sge *sg, size_t n, const void *buf,
		  size_t len, size_t *sge, size_t *data)
{
	void *p = b->sge, *d = b->data;

	if (n > SIZE_MAX - b->n_sge || len > SIZE_MAX - b->n_data)
		return wb_fail(b, ENOMEM);
	if (wb_grow(b, &p, &b->cap_sge, b->n_sge + n, sizeof(*sg)))
		return b->err;
	b->sge = p;
	if (wb_grow(b, &d, &b->cap_data, b->n_data + len, 1))
		return b->err;
	b->data = d;
	*sge = b->n_sge;
	*data = b->n_data;
	if (sg && n)
		memcpy(&b->sge[b->n_sge], sg, n * sizeof(*sg));
	if (buf && len)
		memcpy(&b->data[b->n_data], buf, len);
	b->n_sge += n;
	b->n_data += len;
	return 0;
}

void wrbuf_atomic_write(struct wrbuf *b, uint64_t wr_id, unsigned int wr_flags, uint32_t rkey,
			uint64_t raddr, const void *val)
{
	struct wrbuf_ent *e = wb_add(b, IBV_WR_ATOMIC_WRITE, wr_id, wr_flags);

	if (!e)
		return;
	e->wr.wr.rdma.rkey = rkey;
	e->wr.wr.rdma.remote_addr = raddr;
	memcpy(e->atomic_wr, val, sizeof(e->atomic_wr));
	b->special = 1;
}

void wrbuf_send_tso(struct wrbuf *b, uint64_t wr_id, unsigned int wr_flags, const void *hdr,
		    uint16_t hdr_sz, uint16_t mss)
{
	struct wrbuf_ent *e = wb_add(b, IBV_WR_TSO, wr_id, wr_flags);
	size_t unused;

	if (!e)
		return;
	if (wb_append(b, NULL, 0, hdr, hdr_sz, &unused, &e->hdr))
		return;
	e->wr.tso.hdr_sz = hdr_sz;
	e->wr.tso.mss = mss;
	b->special = 1;
}

/* The WR the setters apply to. */
static struct wrbuf_ent *wb_last(struct wrbuf *b)
{
	if (b->err)
		return NULL;
	if (!b->n) {
		wb_fail(b, EINVAL);
		return NULL;
	}
	return &b->ent[b->n - 1];
}

static void wb_set_sges(struct wrbuf *b, size_t n, const struct ibv_sge *sg, enum wrbuf_set how)
{
	struct wrbuf_ent *e = wb_last(b);
	size_t first, unused;

	if (!e)
		return;
	if (n > INT_MAX) {
		wb_fail(b, EINVAL);
		return;
	}
	if (wb_append(b, sg, n, NULL, 0, &first, &unused))
		return;
	e->set = how;
	e->sge = first;
	e->wr.num_sge = (int)n;
	e->wr.send_flags &= ~(unsigned int)IBV_SEND_INLINE;
}

void wrbuf_set_sge(struct wrbuf *b, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sg = { .addr = addr, .length = length, .lkey = lkey };

	wb_set_sges(b, 1, &sg, WRBUF_SET_SGE);
	/* one empty SGE means no data (kept for a replay) */
	if (!b->err && !length)
		b->ent[b->n - 1].wr.num_sge = 0;
}

void wrbuf_set_sge_list(struct wrbuf *b, size_t n, const struct ibv_sge *sg)
{
	wb_set_sges(b, n, sg, WRBUF_SET_SGE_LIST);
}

void wrbuf_set_inline(struct wrbuf *b, size_t n, const struct ibv_data_buf *bufs, int list)
{
	struct wrbuf_ent *e = wb_last(b);
	size_t first, off;

	if (!e)
		return;
	if (n > INT_MAX) {
		wb_fail(b, EINVAL);
		return;
	}
	/* one SGE per buffer, its addr the offset of the buffer's copy */
	if (wb_append(b, NULL, n, NULL, 0, &first, &off))
		return;
	for (size_t i = 0; i < n; i++) {
		size_t unused, at;

		if (bufs[i].length > UINT32_MAX) {
			wb_fail(b, EINVAL);
			return;
		}
		if (wb_append(b, NULL, 0, bufs[i].addr, bufs[i].length, &unused, &at))
			return;
		b->sge[first + i] = (struct ibv_sge){ .addr = at, .length = (uint32_t)bufs[i].length };
	}
	e->set = list ? WRBUF_SET_INLINE_LIST : WRBUF_SET_INLINE;
	e->offsets = 1;
	e->sge = first;
	e->wr.num_sge = (int)n;
	e->wr.send_flags |= IBV_SEND_INLINE;
}

void wrbuf_set_ud_addr(struct wrbuf *b, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct wrbuf_ent *e = wb_last(b);

	if (!e)
		return;
	e->wr.wr.ud.ah = ah;
	e->wr.wr.ud.remote_qpn = qpn;
	e->wr.wr.ud.remote_qkey = qkey;
	e->ud = 1;
}

void wrbuf_set_xrc_srqn(struct wrbuf *b, uint32_t srqn)
{
	struct wrbuf_ent *e = wb_last(b);

	if (!e)
		return;
	e->wr.qp_type.xrc.remote_srqn = srqn;
	e->xrc = 1;
}

struct ibv_send_wr *wrbuf_list(struct wrbuf *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct wrbuf_ent *e = &b->ent[i];

		e->wr.next = i + 1 < b->n ? &b->ent[i + 1].wr : NULL;
		e->wr.sg_list = e->set == WRBUF_SET_NONE ? NULL : &b->sge[e->sge];
		if (e->wr.opcode == IBV_WR_TSO)
			e->wr.tso.hdr = &b->data[e->hdr];
		/* inline data: offsets to addresses, once (the data no longer moves) */
		for (int k = 0; e->offsets && k < e->wr.num_sge; k++)
			e->wr.sg_list[k].addr = (uintptr_t)&b->data[e->wr.sg_list[k].addr];
		e->offsets = 0;
	}
	return b->n ? &b->ent[0].wr : NULL;
}

/* Inline data as the list of buffers the application gave: 0 or errno. */
static int wb_replay_inline_list(struct ibv_qp_ex *qpx, const struct shim_qpex_orig *o,
			      const struct ibv_sge *sg, size_t n)
{
	struct ibv_data_buf few[16], *bufs;

	if (!o->wr_set_inline_data_list)
		return EOPNOTSUPP;
	bufs = n <= 16 ? few : calloc(n, sizeof(*bufs));
	if (!bufs)
		return ENOMEM;
	for (size_t k = 0; k < n; k++)
		bufs[k] = (struct ibv_data_buf){ (void *)(uintptr_t)sg[k].addr, sg[k].length };
	o->wr_set_inline_data_list(qpx, n, bufs);
	if (bufs != few)
		free(bufs);
	return 0;
}

/* One WR through the provider's builder and setters: 0, or EOPNOTSUPP if the
 * provider has no such function (then the application could not have called
 * it), or ENOMEM. */
static int wb_replay_one(const struct wrbuf_ent *e, struct ibv_qp_ex *qpx,
		      const struct shim_qpex_orig *o)
{
	const struct ibv_send_wr *w = &e->wr;
	const struct ibv_sge *sg = w->sg_list;

#define CALL(fn, ...)                                                                   \
	do {                                                                            \
		if (!o->fn)                                                             \
			return EOPNOTSUPP;                                              \
		o->fn(qpx, __VA_ARGS__);                                                \
	} while (0)

	qpx->wr_id = w->wr_id;
	qpx->wr_flags = e->wr_flags;
	switch (w->opcode) {
	case IBV_WR_RDMA_WRITE: CALL(wr_rdma_write, w->wr.rdma.rkey, w->wr.rdma.remote_addr); break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		CALL(wr_rdma_write_imm, w->wr.rdma.rkey, w->wr.rdma.remote_addr, w->imm_data);
		break;
	case IBV_WR_RDMA_READ: CALL(wr_rdma_read, w->wr.rdma.rkey, w->wr.rdma.remote_addr); break;
	case IBV_WR_SEND:
		if (!o->wr_send)
			return EOPNOTSUPP;
		o->wr_send(qpx);
		break;
	case IBV_WR_SEND_WITH_IMM: CALL(wr_send_imm, w->imm_data); break;
	case IBV_WR_SEND_WITH_INV: CALL(wr_send_inv, w->invalidate_rkey); break;
	case IBV_WR_TSO: CALL(wr_send_tso, w->tso.hdr, w->tso.hdr_sz, w->tso.mss); break;
	case IBV_WR_LOCAL_INV: CALL(wr_local_inv, w->invalidate_rkey); break;
	case IBV_WR_BIND_MW:
		CALL(wr_bind_mw, w->bind_mw.mw, w->bind_mw.rkey, &w->bind_mw.bind_info);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		CALL(wr_atomic_cmp_swp, w->wr.atomic.rkey, w->wr.atomic.remote_addr,
		     w->wr.atomic.compare_add, w->wr.atomic.swap);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		CALL(wr_atomic_fetch_add, w->wr.atomic.rkey, w->wr.atomic.remote_addr,
		     w->wr.atomic.compare_add);
		break;
	case IBV_WR_ATOMIC_WRITE:
		CALL(wr_atomic_write, w->wr.rdma.rkey, w->wr.rdma.remote_addr, e->atomic_wr);
		break;
	default:
		return EOPNOTSUPP;
	}
	switch (e->set) {
	case WRBUF_SET_NONE: break;
	case WRBUF_SET_SGE: CALL(wr_set_sge, sg[0].lkey, sg[0].addr, sg[0].length); break;
	case WRBUF_SET_SGE_LIST: CALL(wr_set_sge_list, (size_t)w->num_sge, sg); break;
	case WRBUF_SET_INLINE:
		CALL(wr_set_inline_data, (void *)(uintptr_t)sg[0].addr, sg[0].length);
		break;
	case WRBUF_SET_INLINE_LIST: {
		int rc = wb_replay_inline_list(qpx, o, sg, (size_t)w->num_sge);

		if (rc)
			return rc;
		break;
	}
	}
	if (e->ud)
		CALL(wr_set_ud_addr, w->wr.ud.ah, w->wr.ud.remote_qpn, w->wr.ud.remote_qkey);
	if (e->xrc)
		CALL(wr_set_xrc_srqn, w->qp_type.xrc.remote_srqn);
	return 0;
#undef CALL
}

int wrbuf_replay(struct wrbuf *b, struct ibv_qp_ex *qpx, const struct shim_qpex_orig *o)
{
	uint64_t wr_id = qpx->wr_id;
	unsigned int wr_flags = qpx->wr_flags;
	int rc = b->err;

	if (rc)
		return rc;
	wrbuf_list(b);
	o->wr_start(qpx);
	for (size_t i = 0; i < b->n && !rc; i++)
		rc = wb_replay_one(&b->ent[i], qpx, o);
	if (rc)
		o->wr_abort(qpx);
	else
		rc = o->wr_complete(qpx);
	qpx->wr_id = wr_id;
	qpx->wr_flags = wr_flags;
	return rc;
}

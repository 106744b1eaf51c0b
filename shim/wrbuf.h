/* SPDX-License-Identifier: MIT */
/* The batch of one ibv_wr_start .. ibv_wr_complete critical region, kept as
 * classic work requests.  On a paced QP the ibv_wr_* wrappers (qpex.c) build
 * the batch here instead of in the provider's send queue, and hand it at
 * ibv_wr_complete to the paced post path (pace.c, drain.c), which splits and paces
 * it behind whatever the QP's backlog already holds.
 *
 * Setters copy what they are given (SGE lists, inline data, a TSO header),
 * since the application may reuse it as soon as the setter returns.  Two
 * operations have no classic form that could wait in a backlog: ATOMIC_WRITE
 * (its value travels in the WR) and TSO (its header is a pointer).  They are
 * kept too, and mark the batch "special": wrbuf_replay() then hands the whole
 * batch to the provider's own ibv_wr_* functions.
 *
 * The critical region itself (wrbuf_enter .. wrbuf_leave) is the shim's, not
 * the provider's, as the provider never sees a buffered batch start: it keeps
 * one batch per QP at a time, as the verbs API promises. */
#ifndef JUSTITIA_SHIM_WRBUF_H
#define JUSTITIA_SHIM_WRBUF_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* send_ops_flags whose ibv_wr_* builders the shim wraps: a QP created with
 * any other (a newer libibverbs' ibv_wr_flush, ...) is never buffered. */
#define WRBUF_KNOWN_OPS                                                                   \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND | \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                          \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |          \
	 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV | \
	 IBV_QP_EX_WITH_TSO | IBV_QP_EX_WITH_ATOMIC_WRITE)

/* Which data setter built a WR, so that a replay calls the same one. */
enum wrbuf_set { WRBUF_SET_NONE, WRBUF_SET_SGE, WRBUF_SET_SGE_LIST, WRBUF_SET_INLINE,
		 WRBUF_SET_INLINE_LIST };

/* Provider originals of the ibv_qp_ex function pointers the shim wraps. */
struct shim_qpex_orig {
	void (*wr_atomic_cmp_swp)(struct ibv_qp_ex *, uint32_t, uint64_t, uint64_t, uint64_t);
	void (*wr_atomic_fetch_add)(struct ibv_qp_ex *, uint32_t, uint64_t, uint64_t);
	void (*wr_bind_mw)(struct ibv_qp_ex *, struct ibv_mw *, uint32_t,
			   const struct ibv_mw_bind_info *);
	void (*wr_local_inv)(struct ibv_qp_ex *, uint32_t);
	void (*wr_rdma_read)(struct ibv_qp_ex *, uint32_t, uint64_t);
	void (*wr_rdma_write)(struct ibv_qp_ex *, uint32_t, uint64_t);
	void (*wr_rdma_write_imm)(struct ibv_qp_ex *, uint32_t, uint64_t, __be32);
	void (*wr_send)(struct ibv_qp_ex *);
	void (*wr_send_imm)(struct ibv_qp_ex *, __be32);
	void (*wr_send_inv)(struct ibv_qp_ex *, uint32_t);
	void (*wr_send_tso)(struct ibv_qp_ex *, void *, uint16_t, uint16_t);
	void (*wr_set_inline_data)(struct ibv_qp_ex *, void *, size_t);
	void (*wr_set_inline_data_list)(struct ibv_qp_ex *, size_t, const struct ibv_data_buf *);
	void (*wr_set_sge)(struct ibv_qp_ex *, uint32_t, uint64_t, uint32_t);
	void (*wr_set_sge_list)(struct ibv_qp_ex *, size_t, const struct ibv_sge *);
	void (*wr_start)(struct ibv_qp_ex *);
	int (*wr_complete)(struct ibv_qp_ex *);
	void (*wr_abort)(struct ibv_qp_ex *);
	void (*wr_atomic_write)(struct ibv_qp_ex *, uint32_t, uint64_t, const void *);
	void (*wr_set_ud_addr)(struct ibv_qp_ex *, struct ibv_ah *, uint32_t, uint32_t);
	void (*wr_set_xrc_srqn)(struct ibv_qp_ex *, uint32_t);
};

struct wrbuf_ent {
	struct ibv_send_wr wr;      /* sg_list, next (and tso.hdr): wrbuf_list() */
	unsigned int wr_flags;      /* the application's, before INLINE was added */
	enum wrbuf_set set;
	size_t sge;                 /* first of its wr.num_sge SGEs in wrbuf.sge */
	size_t hdr;                 /* TSO: its header's copy in wrbuf.data */
	uint8_t atomic_wr[8];       /* ATOMIC_WRITE: the value */
	int offsets;                /* inline: SGE addrs are offsets in wrbuf.data */
	int ud, xrc;                /* wr_set_ud_addr / wr_set_xrc_srqn called */
};

struct wrbuf {
	pthread_mutex_t lock;       /* guards busy */
	pthread_cond_t cond;
	int busy;                   /* a batch is open (wrbuf_enter) */
	int allowed;                /* this QP may be buffered (wrbuf_allow) */
	int on;                     /* this batch is buffered (fixed at ibv_wr_start) */
	int err;                    /* first error: the batch fails as a whole */
	int special;                /* holds an ATOMIC_WRITE or TSO */
	struct wrbuf_ent *ent;
	size_t n, cap;
	struct ibv_sge *sge;        /* inline data: addr is an offset in data */
	size_t n_sge, cap_sge;
	unsigned char *data;
	size_t n_data, cap_data;
};

/* Once per record (the registry's records are never freed). */
void wrbuf_init(struct wrbuf *b);
/* The record now belongs to a new QP: no batch, not allowed, no storage. */
void wrbuf_recycle(struct wrbuf *b);
/* The QP was created with @attr: allow buffering if the shim knows every
 * operation it may post. */
void wrbuf_allow(struct wrbuf *b, const struct ibv_qp_init_attr_ex *attr);

/* Open the critical region (waits while another thread has it open) with an
 * empty batch; close it again, dropping the batch. */
void wrbuf_enter(struct wrbuf *b);
void wrbuf_leave(struct wrbuf *b);

/* Builders: append a WR for @op with the application's wr_id and wr_flags.
 * They return it to fill in, or NULL once the batch has failed. */
struct ibv_send_wr *wrbuf_add(struct wrbuf *b, enum ibv_wr_opcode op, uint64_t wr_id,
			      unsigned int wr_flags);
void wrbuf_atomic_write(struct wrbuf *b, uint64_t wr_id, unsigned int wr_flags, uint32_t rkey,
			uint64_t raddr, const void *val);
void wrbuf_send_tso(struct wrbuf *b, uint64_t wr_id, unsigned int wr_flags, const void *hdr,
		    uint16_t hdr_sz, uint16_t mss);
/* Setters: they apply to the last WR (none: the batch fails with EINVAL). */
void wrbuf_set_sge(struct wrbuf *b, uint32_t lkey, uint64_t addr, uint32_t length);
void wrbuf_set_sge_list(struct wrbuf *b, size_t n, const struct ibv_sge *sg);
void wrbuf_set_inline(struct wrbuf *b, size_t n, const struct ibv_data_buf *bufs, int list);
void wrbuf_set_ud_addr(struct wrbuf *b, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey);
void wrbuf_set_xrc_srqn(struct wrbuf *b, uint32_t srqn);

/* The batch as a classic WR list (NULL if empty), valid until wrbuf_leave. */
struct ibv_send_wr *wrbuf_list(struct wrbuf *b);
/* Post the batch through the provider's own ibv_wr_* functions @o, as the
 * application would have; qpx->wr_id and wr_flags are restored.  Returns
 * what the provider's wr_complete returned. */
int wrbuf_replay(struct wrbuf *b, struct ibv_qp_ex *qpx, const struct shim_qpex_orig *o);

#endif

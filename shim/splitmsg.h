/* SPDX-License-Identifier: MIT */
/* Two-sided split messages: SEND (with or without immediate) and RDMA
 * WRITE_WITH_IMM.
 *
 * Their data lands in (SEND), or announces itself through (WRITE_WITH_IMM),
 * a receive that the PEER application posted, so the peer's shim takes
 * part.  The shims talk over their split QPs through control slots that
 * each keeps posted on its split QP's receive queue.  No data ever uses
 * those queues, so the slots are interchangeable and need no ordering:
 *
 *   sender shim                          receiver shim
 *   HDR {seq, opcode, length, chunk} ->  finds the seq-th receive the app
 *                                        posted on its QP (counted since the
 *                                        QP was last reset)
 *                                    <-  READY {seq, GO, segments}
 *                                        or READY {seq, WHOLE}
 *   SEND: chunks 1..n-1 as RDMA WRITEs into the segments, memory regions
 *   the receiver registered over exactly those bytes of the application's
 *   buffer; then chunk 0 as the application's SEND on its own QP.
 *   WRITE_WITH_IMM: chunks 0..n-2 as RDMA WRITEs, then the last, with the
 *   immediate, on the application's QP.
 *   Either way the receiving application gets one completion, and its shim
 *   reports the message's full length in it (ibv_poll_cq).
 *
 * WHOLE (that receive is not posted yet, shared receive queue, buffer too
 * short or too scattered, no memory, another protocol version): the sender
 * posts the message unsplit, paced whole, which keeps every native
 * behaviour (RNR retries, length errors).  A READY that does not come in
 * SPLITMSG_TIMEOUT_NS also means WHOLE (and no more two-sided splitting on
 * that QP); that is safe because the receiver only ever records the
 * message's true length. */
#ifndef JUSTITIA_SHIM_SPLITMSG_H
#define JUSTITIA_SHIM_SPLITMSG_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdint.h>

#define SPLITMSG_SLOTS 8              /* control receives kept posted */
#define SPLITMSG_SLOT_SIZE 256
#define SPLITMSG_MAX_SEG 8            /* receive buffer segments per message */
#define SPLITMSG_RX_MAX 65536         /* receives tracked per QP */
#define SPLITMSG_TIMEOUT_NS 2000000000ull

/* wr_id tags on the split QP; data chunks carry their pend_wr (8-aligned) */
#define SPLITMSG_TAG_MASK 7u
#define SPLITMSG_TAG_SEND 1u
#define SPLITMSG_TAG_RECV 2u

enum splitmsg_kind {
	SPLITMSG_ONE_SIDED,     /* RDMA WRITE / READ: no help needed */
	SPLITMSG_SEND,
	SPLITMSG_WRITE_IMM,
};

enum splitmsg_phase {
	SPLITMSG_HDR,           /* HDR not sent yet */
	SPLITMSG_WAIT,          /* waiting for READY */
	SPLITMSG_DATA,          /* READY came: chunks go */
};

struct splitmsg_seg {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

/* One receive the application posted on a QP that has a split QP. */
struct splitmsg_rx {
	struct splitmsg_rx *next;
	uint64_t idx;
	uint64_t total;         /* bytes its SGEs hold */
	uint64_t full_len;      /* 0, or the length of the split message it gets */
	int nmr;
	struct ibv_mr *mr[SPLITMSG_MAX_SEG];
	int nsge;
	struct ibv_sge sge[];
};

/* The final chunk of a split message, posted on the application's QP: its
 * completion must report the message's length (an RDMA READ's byte_len
 * is the bytes read), not the chunk's. */
struct splitmsg_fin {
	struct splitmsg_fin *next;
	uint64_t wr_id;
	uint64_t full_len;
	uint32_t piece;
	int opcode;             /* enum ibv_wc_opcode */
};

/* Per split QP (struct shim_split).  Guarded by the QP's lock. */
struct splitmsg_state {
	struct ibv_mr *mr;      /* control slots: SLOTS receive, SLOTS send */
	uint8_t *buf;
	unsigned send_next;
	struct splitmsg_rx *rx_head, *rx_tail;
	uint64_t rx_next;       /* index the next posted receive gets */
	size_t rx_len;
	int rx_off;             /* answer WHOLE: SRQ, untracked receives */
	int tx_off;             /* the peer did not answer once: no more */
	int slots_posted;
	uint64_t tx_base;       /* receive-consuming sends before the last reset */
	struct splitmsg_fin *fin_head, *fin_tail;
	_Atomic unsigned fin_len;
};

struct shim_qp;
struct pend_wr;

/* Set up / tear down the control slots of @q's split QP (q->split.qp). */
int splitmsg_setup(struct shim_qp *q);
void splitmsg_teardown(struct shim_qp *q);
/* The split QP reached INIT: post the control receives. */
void splitmsg_post_slots(struct shim_qp *q);
/* The application's QP went to RESET / was set up again: counts restart. */
void splitmsg_reset(struct shim_qp *q);

/* Which kind of split @wr would be, or -1 when it cannot be split. */
int splitmsg_kind_of(const struct shim_qp *q, const struct ibv_send_wr *wr);

/* Sender: send @p's HDR (p->phase HDR -> WAIT).  0 or an errno. */
int splitmsg_send_hdr(struct shim_qp *q, struct pend_wr *p, uint64_t now);
/* Sender: give up splitting @p, it goes whole. */
void splitmsg_make_whole(struct shim_qp *q, struct pend_wr *p);

/* Sender: the final chunk of a split message was posted on the app's QP. */
void splitmsg_tx_final(struct shim_qp *q, uint64_t wr_id, int wc_opcode, uint32_t piece,
		       uint64_t full_len);
/* Sender: that post failed after all: forget it. */
void splitmsg_tx_unfinal(struct shim_qp *q);
/* Sender: a successful send completion of @q's QP, polled by the
 * application: a split message's shows its full length (q->lock held). */
void splitmsg_tx_done(struct shim_qp *q, struct ibv_wc *wc);

/* A completion on the split QP with a control tag (q->lock held). */
void splitmsg_on_wc(struct shim_qp *q, const struct ibv_wc *wc);

/* Receiver: the application posted @wr.. (up to @bad, exclusive) on @q
 * (q->lock held). */
void splitmsg_rx_posted(struct shim_qp *q, const struct ibv_recv_wr *wr,
			const struct ibv_recv_wr *bad);
/* Receiver: a successful receive completion of @q's QP, polled by the
 * application: restore the split message's length (q->lock held). */
void splitmsg_rx_done(struct shim_qp *q, struct ibv_wc *wc);

#endif

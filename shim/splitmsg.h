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
#include <stdint.h>

#include "splitstate.h"

struct shim_qp;
struct pend_wr;

/* Set up / tear down the control slots of @q's split QP (q->split.qp). */
/* fork() waits for the shim's memory registrations in progress (the
 * pthread_atfork handlers; the child's lock is new). */
void splitmsg_atfork_prepare(void);
void splitmsg_atfork_parent(void);
void splitmsg_atfork_child(void);

int splitmsg_setup(struct shim_qp *q);
void splitmsg_teardown(struct shim_qp *q);
/* The split QP reached INIT: post the control receives. */
void splitmsg_post_slots(struct shim_qp *q);
/* The application's QP went to RESET / was set up again: counts restart. */
void splitmsg_reset(struct shim_qp *q);
/* The split QP (in RTR) to RTS, once (q->lock held): at the application
 * QP's RTS with its retransmission timeout, retry count and access flags
 * (@app, @mask: what the application gave; NULL: SPLIT_TIMEOUT_DEFAULT),
 * or before the first control message of an application QP that stays in
 * RTR.  0 or the provider's error. */
int splitmsg_qp_rts_locked(struct shim_qp *q, const struct ibv_qp_attr *app, int mask);

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

// SPDX-License-Identifier: MIT
/* Unit tests of the two-sided split protocol (shim/splitmsg.c): the control
 * messages' wire format, which arrives from the peer's shim, and the
 * exchange between two shims (tests/splitfake.h) -- a SEND's receiver
 * exposes exactly the bytes after the first chunk of the receive the
 * message will consume, a WRITE_WITH_IMM needs no segments, everything the
 * receiver cannot serve goes WHOLE, a READY that does not add up or does
 * not belong to the message waiting sends nothing split, malformed
 * messages are ignored and their slot is posted again, and the completions
 * show the whole message's length. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <semaphore.h>

#include "../splitfake.h"

static int setup(void **state)
{
	return sf_init();
}

static int teardown(void **state)
{
	sf_fini();
	assert_int_equal(sf_mrs, 0); /* every registration undone */
	return 0;
}

/* ------------------------------------------------------------ the wire format */

static struct wire hdr(uint64_t seq, uint8_t kind, uint64_t length, uint32_t chunk)
{
	return (struct wire){ .type = WIRE_HDR, .arg = kind, .seq = seq, .length = length,
			      .chunk = chunk };
}

static void wire_round_trip(void **state)
{
	uint8_t b[SPLITMSG_SLOT_SIZE];
	struct wire w = { .type = WIRE_READY, .arg = VERDICT_GO, .nseg = SPLITMSG_MAX_SEG,
			  .seq = 0x0102030405060708ull }, r;
	size_t n;

	for (unsigned i = 0; i < SPLITMSG_MAX_SEG; i++)
		w.seg[i] = (struct splitmsg_seg){ .addr = 0xf000000000ull + i, .rkey = 0x100 + i,
						  .len = 1000 + i };
	n = wire_encode(b, &w);
	assert_int_equal(n, WIRE_FIXED + SPLITMSG_MAX_SEG * WIRE_SEG);
	/* little endian on the wire, whatever the host */
	assert_int_equal(b[0], 0x4c);
	assert_int_equal(b[3], 0x4a);
	assert_int_equal(b[8], 0x08);
	assert_int_equal(b[15], 0x01);
	memset(&r, 0xa5, sizeof(r));
	assert_int_equal(wire_decode(b, n, &r), 0);
	assert_int_equal(r.type, WIRE_READY);
	assert_int_equal(r.arg, VERDICT_GO);
	assert_int_equal(r.nseg, SPLITMSG_MAX_SEG);
	assert_int_equal(r.seq, w.seq);
	assert_memory_equal(r.seg, w.seg, sizeof(w.seg));

	w = hdr(7, SPLITMSG_SEND, SPLITMSG_MAX_LEN, 4096);
	n = wire_encode(b, &w);
	assert_int_equal(n, WIRE_FIXED);
	assert_int_equal(wire_decode(b, n, &r), 0);
	assert_int_equal(r.type, WIRE_HDR);
	assert_int_equal(r.arg, SPLITMSG_SEND);
	assert_int_equal(r.seq, 7);
	assert_int_equal(r.length, SPLITMSG_MAX_LEN);
	assert_int_equal(r.chunk, 4096);
	assert_int_equal(r.nseg, 0);
}

/* Encode @w, apply @edit at byte @at, decode: the result. */
static int decode_edited(struct wire w, size_t at, uint8_t v)
{
	uint8_t b[SPLITMSG_SLOT_SIZE];
	struct wire r;
	size_t n = wire_encode(b, &w);

	b[at] = v;
	return wire_decode(b, n, &r);
}

static void wire_rejects_what_no_shim_sends(void **state)
{
	uint8_t b[SPLITMSG_SLOT_SIZE] = { 0 };
	struct wire go = { .type = WIRE_READY, .arg = VERDICT_GO, .nseg = 2 }, r;
	struct wire h = hdr(1, SPLITMSG_WRITE_IMM, 10000, 1000);
	size_t n = wire_encode(b, &go);

	/* too short, at every length: the fixed part, then the segments */
	for (size_t cut = 0; cut < n; cut++)
		assert_int_equal(wire_decode(b, cut, &r), -EPROTO);
	assert_int_equal(wire_decode(b, n, &r), 0);
	/* magic, version, reserved word */
	assert_int_equal(decode_edited(h, 0, 0x4d), -EPROTO);
	assert_int_equal(decode_edited(h, 4, 2), -EPROTO);
	assert_int_equal(decode_edited(h, 31, 1), -EPROTO);
	/* types, kinds and verdicts that do not exist */
	assert_int_equal(decode_edited(h, 5, 0), -EPROTO);
	assert_int_equal(decode_edited(h, 5, 3), -EPROTO);
	assert_int_equal(decode_edited(h, 6, SPLITMSG_ONE_SIDED), -EPROTO);
	assert_int_equal(decode_edited(h, 6, 3), -EPROTO);
	assert_int_equal(decode_edited(go, 6, 2), -EPROTO);
	/* more segments than a READY may carry (in a buffer long enough for
	 * them: not the length check's doing), or than were received */
	n = wire_encode(b, &go);
	b[7] = SPLITMSG_MAX_SEG + 1;
	assert_true(WIRE_FIXED + (SPLITMSG_MAX_SEG + 1) * WIRE_SEG <= sizeof(b));
	assert_int_equal(wire_decode(b, WIRE_FIXED + (SPLITMSG_MAX_SEG + 1) * WIRE_SEG, &r),
			 -EPROTO);
	b[7] = SPLITMSG_MAX_SEG;
	assert_int_equal(wire_decode(b, WIRE_FIXED + SPLITMSG_MAX_SEG * WIRE_SEG, &r), 0);
	assert_int_equal(decode_edited(go, 7, SPLITMSG_MAX_SEG + 1), -EPROTO);
	assert_int_equal(decode_edited(go, 7, 255), -EPROTO);
	assert_int_equal(decode_edited(go, 7, 3), -EPROTO);
	/* segments where none belong */
	assert_int_equal(decode_edited(h, 7, 1), -EPROTO); /* (and too short) */
	n = wire_encode(b, &(struct wire){ .type = WIRE_READY, .arg = VERDICT_WHOLE });
	b[7] = 1;
	assert_int_equal(wire_decode(b, n + WIRE_SEG, &r), -EPROTO);
	n = wire_encode(b, &h);
	b[7] = 1;
	assert_int_equal(wire_decode(b, n + WIRE_SEG, &r), -EPROTO);
	/* a READY with a length or a chunk */
	assert_int_equal(decode_edited(go, 16, 1), -EPROTO);
	assert_int_equal(decode_edited(go, 24, 1), -EPROTO);
	/* a HDR whose chunk is not inside the message, or a message longer
	 * than RDMA allows */
	assert_int_equal(decode_edited(hdr(1, SPLITMSG_SEND, 1000, 0), 0, 0x4c), -EPROTO);
	assert_int_equal(decode_edited(hdr(1, SPLITMSG_SEND, 1000, 1000), 0, 0x4c), -EPROTO);
	assert_int_equal(decode_edited(hdr(1, SPLITMSG_SEND, 1000, 999), 0, 0x4c), 0);
	assert_int_equal(decode_edited(hdr(1, SPLITMSG_SEND, SPLITMSG_MAX_LEN + 1, 999), 0, 0x4c),
			 -EPROTO);
}

/* ------------------------------------------------------------ the exchange */

/* A SEND of 3000 bytes in chunks of 1000 into a receive of 1500 + 2000
 * bytes: the receiver registers bytes [1000, 1500) of the first buffer and
 * [0, 1500) of the second, the sender gets them as two segments. */
static void send_exposes_the_bytes_after_the_first_chunk(void **state)
{
	static const uint32_t lens[] = { 1500, 2000 };
	uint64_t base = 0x7f0000000000ull;
	struct splitmsg_rx *e;
	struct pend_wr *p;
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV, .byte_len = 1000 };
	int mrs = sf_mrs;

	sf_app_recv(&sf_b, base, lens, 2);
	p = sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000);
	assert_non_null(p);
	assert_int_equal(p->phase, SPLITMSG_WAIT);
	assert_int_equal(sf_deliver(&sf_a), 1);   /* HDR */
	assert_int_equal(sf_mrs, mrs + 2);
	e = sf_b.q->split.msg.rx_head;
	assert_int_equal(e->full_len, 3000);
	assert_int_equal(e->nmr, 2);
	assert_ptr_equal(e->mr[0]->addr, (void *)(uintptr_t)(base + 1000));
	assert_int_equal(e->mr[0]->length, 500);
	assert_ptr_equal(e->mr[1]->addr, (void *)(uintptr_t)(base + 0x10000));
	assert_int_equal(e->mr[1]->length, 1500);
	assert_int_equal(sf_deliver(&sf_b), 1);   /* READY */
	assert_int_equal(p->phase, SPLITMSG_DATA);
	assert_int_equal(p->nseg, 2);
	assert_int_equal(p->seg[0].addr, base + 1000);
	assert_int_equal(p->seg[0].len, 500);
	assert_int_equal(p->seg[0].rkey, e->mr[0]->rkey);
	assert_int_equal(p->seg[1].addr, base + 0x10000);
	assert_int_equal(p->seg[1].len, 1500);
	assert_int_equal(p->seg[1].rkey, e->mr[1]->rkey);
	assert_int_equal(p->went_whole, 0);
	/* the application's completion (of chunk 0) shows the whole message,
	 * and the registrations go with it */
	splitmsg_rx_done(sf_b.q, &wc);
	assert_int_equal(wc.byte_len, 3000);
	assert_int_equal(sf_mrs, mrs);
	assert_null(sf_b.q->split.msg.rx_head);
	/* every control slot is posted again */
	assert_int_equal(sf_a.n_posted, SPLITMSG_SLOTS);
	assert_int_equal(sf_b.n_posted, SPLITMSG_SLOTS);
}

static void write_imm_needs_no_segments(void **state)
{
	static const uint32_t lens[] = { 16 };
	struct pend_wr *p;

	sf_app_recv(&sf_b, 0x1000, lens, 1); /* the immediate's receive: any size */
	p = sf_app_send(&sf_a, SPLITMSG_WRITE_IMM, 1 << 20, 65536);
	assert_int_equal(sf_deliver(&sf_a), 1);
	assert_int_equal(sf_b.q->split.msg.rx_head->full_len, 1 << 20);
	assert_int_equal(sf_b.q->split.msg.rx_head->nmr, 0);
	assert_int_equal(sf_deliver(&sf_b), 1);
	assert_int_equal(p->phase, SPLITMSG_DATA);
	assert_int_equal(p->nseg, 0);
	assert_int_equal(p->kind, SPLITMSG_WRITE_IMM);
}

/* Deliver a's HDR, b's answer: did the message go whole? */
static int went_whole(struct pend_wr *p)
{
	assert_int_equal(sf_deliver(&sf_a), 1);
	assert_int_equal(sf_deliver(&sf_b), 1);
	return p->went_whole && p->kind == SPLITMSG_ONE_SIDED && p->phase == SPLITMSG_DATA &&
	       p->n_chunks == 1 && p->chunk == 0;
}

static void no_receive_goes_whole(void **state)
{
	assert_true(went_whole(sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000)));
	assert_int_equal(atomic_load(&sf_a.q->st.split[STATS_SPLIT_WHOLE]), 1);
}

static void short_receive_goes_whole(void **state)
{
	static const uint32_t lens[] = { 2999 };

	sf_app_recv(&sf_b, 0x1000, lens, 1);
	assert_true(went_whole(sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000)));
	assert_int_equal(sf_b.q->split.msg.rx_head->full_len, 0); /* native error stays */
	assert_int_equal(sf_mrs, 2);
}

static void scattered_receive_goes_whole(void **state)
{
	static const uint32_t lens[SPLITMSG_MAX_SEG + 2] = { 100, 100, 100, 100, 100,
							    100, 100, 100, 100, 100 };

	sf_app_recv(&sf_b, 0x1000, lens, SPLITMSG_MAX_SEG + 2);
	/* bytes [100, 1000) lie in nine buffers: one more than a READY holds */
	assert_true(went_whole(sf_app_send(&sf_a, SPLITMSG_SEND, 1000, 100)));
	assert_int_equal(sf_mrs, 2);
}

static void registration_failure_goes_whole(void **state)
{
	static const uint32_t lens[] = { 1500, 2000 };

	sf_app_recv(&sf_b, 0x1000, lens, 2);
	sf_mr_fail_after = 1; /* the second of the two fails */
	assert_true(went_whole(sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000)));
	assert_int_equal(sf_mrs, 2); /* the first was undone */
	assert_int_equal(sf_b.q->split.msg.rx_head->full_len, 0);
}

/* fork() (its pthread_atfork prepare handler) waits for a registration
 * another thread of the shim is inside: libibverbs' lock would stay held
 * in the child, whose first registration would hang (47-robust's fork). */
static sem_t mr_entered;
static atomic_int mr_inside;

static void slow_registration(void)
{
	atomic_store(&mr_inside, 1);
	sem_post(&mr_entered);
	usleep(100000);
	atomic_store(&mr_inside, 0);
}

static void *register_once(void *arg)
{
	mr_dereg(mr_reg(NULL, arg, 64, IBV_ACCESS_LOCAL_WRITE));
	return NULL;
}

static void fork_waits_for_a_registration(void **state)
{
	static char buf[64];
	pthread_t t;

	assert_int_equal(sem_init(&mr_entered, 0, 0), 0);
	sf_mr_hook = slow_registration;
	assert_int_equal(pthread_create(&t, NULL, register_once, buf), 0);
	sem_wait(&mr_entered);
	splitmsg_atfork_prepare();
	assert_int_equal(atomic_load(&mr_inside), 0);
	splitmsg_atfork_parent();
	pthread_join(t, NULL);
	sf_mr_hook = NULL;
	/* the child's lock is free whatever the parent's threads did */
	splitmsg_atfork_prepare();
	splitmsg_atfork_child();
	register_once(buf);
	sem_destroy(&mr_entered);
}

/* A receive is granted once: a second HDR for it is answered WHOLE. */
static void a_receive_is_granted_once(void **state)
{
	static const uint32_t lens[] = { 4096 };
	struct pend_wr *p;

	sf_app_recv(&sf_b, 0x1000, lens, 1);
	p = sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000);
	assert_false(went_whole(p));
	sf_a.q->bl_head = p->next; /* (the message is sent) */
	free(p);
	p = sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000); /* the same seq again */
	assert_true(went_whole(p));
	assert_int_equal(sf_mrs, 3);
}

/* The receiver is not tracking receives (SRQ, or it lost count). */
static void receiver_off_goes_whole(void **state)
{
	static const uint32_t lens[] = { 4096 };

	sf_app_recv(&sf_b, 0x1000, lens, 1);
	sf_b.q->split.msg.rx_off = 1;
	assert_true(went_whole(sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000)));
}

/* The split QP's transitions (shim_split_follow), as the provider got them. */
static struct {
	struct ibv_qp *qp;
	struct ibv_qp_attr attr;
	int mask, n;
} mod;

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	mod.qp = qp;
	mod.attr = *attr;
	mod.mask = mask;
	mod.n++;
	return 0;
}

/* The split QP grants the peer what the application's QP grants, no more,
 * at whichever transition the application gives its access flags; without
 * REMOTE_WRITE the peer's SENDs, which would write into regions the
 * receiver exposes, go whole. */
static void split_qp_grants_what_the_app_qp_grants(void **state)
{
	static const uint32_t lens[] = { 4096 };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
						    IBV_ACCESS_REMOTE_READ };

	memset(&mod, 0, sizeof(mod));
	shim_split_follow(sf_b.q, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, -1);
	assert_int_equal(mod.n, 1);
	assert_ptr_equal(mod.qp, &sf_b.split_qp);
	assert_true(mod.mask & IBV_QP_ACCESS_FLAGS);
	assert_int_equal(mod.attr.qp_access_flags,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	sf_app_recv(&sf_b, 0x1000, lens, 1);
	assert_true(went_whole(sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000)));
	assert_int_equal(sf_mrs, 2); /* nothing exposed */
	/* REMOTE_WRITE given at RTS: the split QP (already in RTS) gets it */
	sf_b.q->split.peer_split_qpn = 5;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS,
				  .qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
						     IBV_ACCESS_REMOTE_WRITE };
	shim_split_follow(sf_b.q, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, 5);
	assert_int_equal(mod.n, 2);
	assert_int_equal(mod.attr.qp_state, IBV_QPS_RTS);
	assert_int_equal(mod.mask, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS);
	assert_int_equal(mod.attr.qp_access_flags,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_false(sf_b.q->split.no_remote_write);
	/* RESET takes no access flags */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET };
	shim_split_follow(sf_b.q, &a, IBV_QP_STATE, -1);
	assert_int_equal(mod.n, 3);
	assert_int_equal(mod.mask, IBV_QP_STATE);
}

/* The split QP carries the application's data: at the application's RTS it
 * takes the application QP's retransmission timeout and retry count (a
 * shorter timeout retransmitted its chunks spuriously on a slow responder),
 * or SPLIT_TIMEOUT_DEFAULT when the application gives none; once. */
static void split_qp_takes_the_app_timeout_at_rts(void **state)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .timeout = 18, .retry_cnt = 5,
				 .rnr_retry = 3, .max_rd_atomic = 16, .sq_psn = 77 };
	const int rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_SQ_PSN;

	memset(&mod, 0, sizeof(mod));
	sf_b.q->split.rts = false; /* in RTR */
	sf_b.q->split.peer_split_qpn = 5;
	atomic_store(&sf_b.q->split.state, SPLIT_CREATED);
	shim_split_follow(sf_b.q, &a, rts, 5);
	assert_int_equal(mod.n, 1);
	assert_ptr_equal(mod.qp, &sf_b.split_qp);
	assert_int_equal(mod.mask, rts);
	assert_int_equal(mod.attr.qp_state, IBV_QPS_RTS);
	assert_int_equal(mod.attr.timeout, 18);
	assert_int_equal(mod.attr.retry_cnt, 5);
	/* its own: control slots are always posted, both ends at PSN 0, the
	 * READs the device allows */
	assert_int_equal(mod.attr.rnr_retry, 7);
	assert_int_equal(mod.attr.sq_psn, 0);
	assert_int_equal(mod.attr.max_rd_atomic, sf_b.q->split.init_rd_atom);
	assert_true(sf_b.q->split.rts);
	assert_int_equal(atomic_load(&sf_b.q->split.state), SPLIT_READY);
	/* RTS -> RTS without new access flags: nothing to mirror */
	shim_split_follow(sf_b.q, &a, IBV_QP_STATE, 5);
	assert_int_equal(mod.n, 1);
	/* after a RESET, an RTS that names no timeout: the default */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET };
	shim_split_follow(sf_b.q, &a, IBV_QP_STATE, -1);
	assert_false(sf_b.q->split.rts);
	sf_b.q->split.peer_split_qpn = 5;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 18 };
	shim_split_follow(sf_b.q, &a, IBV_QP_STATE, 5);
	assert_int_equal(mod.n, 3);
	assert_int_equal(mod.attr.timeout, SPLIT_TIMEOUT_DEFAULT);
	assert_int_equal(mod.attr.retry_cnt, 7);
}

/* An application QP that stays in RTR (it only receives): its split QP goes
 * to RTS for its first answer to the peer, and the application's later RTS
 * does not move it again. */
static void receive_only_qp_answers_from_rts(void **state)
{
	static const uint32_t lens[] = { 4096 };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .timeout = 18 };
	struct pend_wr *p;

	memset(&mod, 0, sizeof(mod));
	sf_b.q->split.rts = false;
	sf_b.q->split.peer_split_qpn = 5;
	sf_app_recv(&sf_b, 0x1000, lens, 1);
	p = sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000);
	assert_int_equal(mod.n, 0); /* (a's split QP is in RTS) */
	assert_int_equal(sf_deliver(&sf_a), 1); /* the HDR: b answers */
	assert_int_equal(mod.n, 1);
	assert_ptr_equal(mod.qp, &sf_b.split_qp);
	assert_int_equal(mod.attr.qp_state, IBV_QPS_RTS);
	assert_int_equal(mod.attr.timeout, SPLIT_TIMEOUT_DEFAULT);
	assert_true(sf_b.q->split.rts);
	assert_int_equal(sf_deliver(&sf_b), 1); /* READY */
	assert_int_equal(p->phase, SPLITMSG_DATA);
	assert_false(p->went_whole);
	shim_split_follow(sf_b.q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT, 5);
	assert_int_equal(mod.n, 1);
}

/* Hand @w to a as if b had sent it. */
static void ready_from_b(const struct wire *w)
{
	uint8_t b[SPLITMSG_SLOT_SIZE];

	assert_int_equal(sf_receive(&sf_a, b, (uint32_t)wire_encode(b, w)), 0);
}

/* READYs that do not belong to the message waiting change nothing; one
 * whose segments do not add up to the message makes it go whole. */
static void hostile_ready(void **state)
{
	struct wire w = { .type = WIRE_READY, .arg = VERDICT_GO, .nseg = 1,
			  .seg[0] = { .addr = 0x1000, .rkey = 1, .len = 2000 } };
	struct pend_wr *p = sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000);

	sf_a.n_out = 0;
	w.seq = 1; /* another message's */
	ready_from_b(&w);
	assert_int_equal(p->phase, SPLITMSG_WAIT);
	w.seq = 0;
	w.seg[0].len = 1999; /* one byte short */
	ready_from_b(&w);
	assert_int_equal(p->phase, SPLITMSG_DATA);
	assert_true(p->went_whole);
	assert_int_equal(p->nseg, 0);

	sf_a.q->bl_head = p->next;
	free(p);
	p = sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000);
	w.nseg = 0; /* GO without segments */
	ready_from_b(&w);
	assert_true(p->went_whole);

	sf_a.q->bl_head = p->next;
	free(p);
	p = sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000);
	sf_a.n_out = 0; /* (its HDR) */
	w.nseg = 2; /* adds up only modulo 2^32 */
	w.seg[0].len = 0xffffffffu;
	w.seg[1].len = 2001;
	ready_from_b(&w);
	assert_true(p->went_whole);
	/* and a late READY for a message already gone whole changes nothing */
	w.nseg = 1;
	w.seg[0].len = 2000;
	ready_from_b(&w);
	assert_int_equal(p->nseg, 0);
	assert_int_equal(sf_a.n_out, 0); /* a never answers a READY */
}

/* Bytes that are no control message of ours: ignored, nothing answered,
 * the slot posted again. */
static void malformed_messages_are_ignored(void **state)
{
	static const uint32_t lens[] = { 4096 };
	uint8_t junk[SPLITMSG_SLOT_SIZE];
	uint8_t b[SPLITMSG_SLOT_SIZE];
	struct wire h = hdr(0, SPLITMSG_SEND, 3000, 1000);
	size_t n = wire_encode(b, &h);

	sf_app_recv(&sf_b, 0x1000, lens, 1);
	memset(junk, 0xff, sizeof(junk));
	assert_int_equal(sf_receive(&sf_b, junk, sizeof(junk)), 0);
	assert_int_equal(sf_receive(&sf_b, junk, 0), 0);
	assert_int_equal(sf_receive(&sf_b, b, (uint32_t)n - 1), 0);
	b[28] = 1;
	assert_int_equal(sf_receive(&sf_b, b, (uint32_t)n), 0);
	assert_int_equal(sf_b.n_out, 0);
	assert_int_equal(sf_b.n_posted, SPLITMSG_SLOTS);
	assert_int_equal(sf_b.q->split.msg.rx_head->full_len, 0);
	assert_int_equal(sf_mrs, 2);
	/* a flushed or foreign completion is not read at all */
	{
		struct ibv_wc wc = { .wr_id = ((uint64_t)sf_b.posted[0] << 3) | SPLITMSG_TAG_RECV,
				     .status = IBV_WC_WR_FLUSH_ERR };

		splitmsg_on_wc(sf_b.q, &wc);
		wc.status = IBV_WC_SUCCESS;
		wc.wr_id = ((uint64_t)SPLITMSG_SLOTS << 3) | SPLITMSG_TAG_RECV;
		splitmsg_on_wc(sf_b.q, &wc);
		assert_int_equal(sf_b.n_out, 0);
	}
	/* the real thing still works */
	b[28] = 0;
	assert_int_equal(sf_receive(&sf_b, b, (uint32_t)n), 0);
	assert_int_equal(sf_b.n_out, 1);
	assert_int_equal(sf_b.q->split.msg.rx_head->full_len, 3000);
}

/* The sender's control SEND fails: no more two-sided splitting, and the
 * message waiting goes whole. */
static void failed_control_send_turns_splitting_off(void **state)
{
	struct pend_wr *p = sf_app_send(&sf_a, SPLITMSG_SEND, 3000, 1000);
	struct ibv_wc wc = { .wr_id = SPLITMSG_TAG_SEND, .status = IBV_WC_RETRY_EXC_ERR };
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND };

	assert_int_equal(splitmsg_kind_of(sf_a.q, &wr), SPLITMSG_SEND);
	splitmsg_on_wc(sf_a.q, &wc);
	assert_true(p->went_whole);
	assert_int_equal(splitmsg_kind_of(sf_a.q, &wr), -1);
	wr.opcode = IBV_WR_RDMA_WRITE;
	assert_int_equal(splitmsg_kind_of(sf_a.q, &wr), SPLITMSG_ONE_SIDED);
}

/* The final chunk's completion shows the message's length; finals ahead
 * of it that never complete successfully (flushed) are forgotten with it. */
static void final_completion_shows_the_message(void **state)
{
	struct ibv_wc wc = { .wr_id = 9, .opcode = IBV_WC_SEND, .byte_len = 1000 };

	splitmsg_tx_final(sf_a.q, 8, IBV_WC_SEND, 1000, 5000); /* flushed */
	splitmsg_tx_final(sf_a.q, 9, IBV_WC_SEND, 1000, 3000);
	splitmsg_tx_final(sf_a.q, 10, IBV_WC_RDMA_WRITE, 64, 4096);
	splitmsg_tx_done(sf_a.q, &wc);
	assert_int_equal(wc.byte_len, 3000);
	assert_int_equal(atomic_load(&sf_a.q->split.msg.fin_len), 1);
	wc = (struct ibv_wc){ .wr_id = 10, .opcode = IBV_WC_RDMA_WRITE, .byte_len = 63 };
	splitmsg_tx_done(sf_a.q, &wc); /* not the final's length: someone else's */
	assert_int_equal(wc.byte_len, 63);
	splitmsg_tx_unfinal(sf_a.q);
	assert_int_equal(atomic_load(&sf_a.q->split.msg.fin_len), 0);
	assert_null(sf_a.q->split.msg.fin_tail);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(wire_round_trip),
		T(wire_rejects_what_no_shim_sends),
		T(send_exposes_the_bytes_after_the_first_chunk),
		T(write_imm_needs_no_segments),
		T(no_receive_goes_whole),
		T(short_receive_goes_whole),
		T(scattered_receive_goes_whole),
		T(registration_failure_goes_whole),
		T(fork_waits_for_a_registration),
		T(a_receive_is_granted_once),
		T(receiver_off_goes_whole),
		T(split_qp_grants_what_the_app_qp_grants),
		T(split_qp_takes_the_app_timeout_at_rts),
		T(receive_only_qp_answers_from_rts),
		T(hostile_ready),
		T(malformed_messages_are_ignored),
		T(failed_control_send_turns_splitting_off),
		T(final_completion_shows_the_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

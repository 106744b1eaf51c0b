/* SPDX-License-Identifier: MIT */
/* The splitter's part of the per-QP record (registry.h): the split QP's
 * state (split.c, splitjob.c) and the two-sided protocol's (splitmsg.c).
 * The backlog's entries (struct pend_wr: a WR waiting for tokens, with its
 * split progress) are here too.
 * Types and constants only, so that the record can hold them without the
 * per-QP state layer including the splitter above it (docs/architecture.md).
 * Includes only system headers. */
#ifndef JUSTITIA_SHIM_SPLITSTATE_H
#define JUSTITIA_SHIM_SPLITSTATE_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define SPLITMSG_SLOTS 8              /* control receives kept posted */
#define SPLITMSG_SLOT_SIZE 256
#define SPLITMSG_MAX_SEG 8            /* receive buffer segments per message */
#define SPLITMSG_RX_MAX 65536         /* receives tracked per QP */
#define SPLITMSG_TIMEOUT_NS 2000000000ull

/* wr_id tags on the split QP; data chunks carry their sequence number << 3 */
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

#define SPLIT_MAX_SGE 8    /* messages with more SGEs are not split */
/* The split QP's retransmission timeout (4.096 us << 14: 67 ms) when the
 * application's QP gives none at RTS; otherwise it takes the application's
 * (splitmsg_qp_rts_locked): its chunks are the application's data, and a
 * shorter timeout than the application chose retransmits them spuriously
 * whenever the responder is slower than that (a busy Soft-RoCE guest). */
#define SPLIT_TIMEOUT_DEFAULT 14
/* Split chunks in flight per QP: what the granted rate moves in a chunk's
 * completion time, in these bounds (splitjob.c, split_window()). */
#define SPLIT_WINDOW 4
#define SPLIT_WINDOW_MAX 32
/* the chunk round trip is the least one seen in the last one or two of
 * these (a windowed minimum: queueing, its own included, is not in it) */
#define SPLIT_BASE_EPOCH_NS 1000000000ull

enum split_state {
	SPLIT_NONE,        /* no split QP */
	SPLIT_CREATED,     /* split QP exists, not connected yet */
	SPLIT_READY,       /* connected to the peer's split QP: split */
	SPLIT_PACE_ONLY,   /* the peer has none: pace whole messages */
};

struct shim_split {
	_Atomic int state;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int peer_split_qpn;    /* -1 until known */
	/* the application QP's path MTU in bytes (0: not told): chunks are
	 * whole packets of it (wrpost_split_size) */
	uint32_t mtu;
	bool armed;            /* cq raises its next completion event (q->lock) */
	bool rts;              /* the split QP is in RTS (q->lock) */
	/* the application's QP grants no REMOTE_WRITE, so neither does the
	 * split QP: the peer's SENDs to it go whole (splitmsg.c) */
	bool no_remote_write;
	uint8_t rd_atom, init_rd_atom; /* READ chunks in flight: as responder, requester */
	/* data chunks (splitjob.c): each has a sequence number, its wr_id << 3;
	 * only some are signaled, and a completion (or an error's) says every
	 * chunk up to it is done */
	uint64_t c_posted, c_done;
	uint64_t c_post_ns[SPLIT_WINDOW_MAX];
	uint32_t c_since_sig;      /* chunks posted since the last signaled one */
	/* the least post-to-completion times of this epoch and the last one
	 * (SPLIT_BASE_EPOCH_NS), since c_epoch_ns: shim_split_base_ns() */
	uint64_t c_min_cur_ns, c_min_prev_ns, c_epoch_ns;
	struct splitmsg_state msg; /* SEND / WRITE_WITH_IMM (splitmsg.c) */
};

/* A chunk's post-to-completion time without queueing: the least of this
 * epoch's and the last one's. */
static inline uint64_t shim_split_base_ns(const struct shim_split *sp)
{
	return sp->c_min_cur_ns < sp->c_min_prev_ns ? sp->c_min_cur_ns : sp->c_min_prev_ns;
}

/* A copy of one send WR (and of its inline data) waiting for tokens; for a
 * message being split, also its progress. */
struct pend_wr {
	struct pend_wr *next;
	uint64_t cost_bytes;
	uint32_t chunk;        /* 0: goes whole; else the split size */
	uint32_t n_chunks;
	uint32_t next_chunk;   /* next chunk to post */
	uint32_t inflight;     /* chunks posted on the split QP, not completed */
	int failed;            /* 0, or 1 + the enum ibv_wc_status of a failed chunk */
	/* two-sided splits (splitmsg.h) */
	uint8_t kind;          /* enum splitmsg_kind */
	uint8_t phase;         /* enum splitmsg_phase */
	uint8_t nseg;
	uint8_t went_whole;    /* the receiver said WHOLE: never split it again */
	uint8_t paid;          /* its next post's tokens are taken (the provider
				* had no room for it: shim_no_room()) */
	uint8_t window;        /* its split window so far: it never shrinks
				* (splitjob.c, "split window") */
	uint8_t zfin;          /* one-sided: every byte goes in data chunks, the
				* final WR on the application's QP moves none
				* (splitjob.c, "zero-length final") */
	uint64_t seq;          /* which of the peer's receives it consumes */
	uint64_t deadline_ns;  /* READY due by then */
	struct splitmsg_seg seg[SPLITMSG_MAX_SEG];
	int wr_api;            /* built with ibv_wr_* (wrbuf.h): counted as such */
	struct ibv_send_wr wr;
	struct ibv_sge sge[];
};

#endif

// SPDX-License-Identifier: MIT
/* integrity: move a seeded random mix of RDMA messages between two devices
 * in one process and verify every byte, every receive length and the order
 * of every completion.
 *
 *   integrity [-a DEV] [-b DEV] [-g GID_INDEX] [-S SEED] [--api classic|ex]
 *             [--bytes TOTAL] [--max-size MAX] [--depth N] [--order FILE]
 *             [--corrupt SEQ] [--overlap ROUNDS] [-T TIMEOUT]
 *
 * QP A (on -a, default rxe1) is the requester; QP B (on -b, default rxe0)
 * is its RC responder.  A seeded PRNG (-S, default 1) draws each message:
 * RDMA WRITE, RDMA READ, SEND or RDMA WRITE_WITH_IMM, a log-uniform size of
 * 1 B..MAX (--max-size, default 64M), 1..4 local SGEs with random split
 * points and random gaps between them, at random byte offsets in two rings
 * of 2 MAX + 4 MiB registered per side.  A SEND's receive buffer (1..4 SGEs,
 * posted just before it) may be larger than the message; its spare bytes
 * hold a canary that must survive.  Messages go in batches of 1..8 (at most
 * MAX bytes together, unless one message is larger) as one ibv_post_send WR
 * list (--api classic, the default) or one ibv_wr_start..ibv_wr_complete
 * batch on an ibv_qp_ex (--api ex); sq_sig_all is 0, the last WR of a batch
 * is signaled, the others are with probability 1/2.  At most N (--depth,
 * default 8) messages are outstanding.  F messages are exactly MAX bytes,
 * a WRITE, a READ and, when TOTAL (--bytes, default 512M) >= 6 MAX, a SEND
 * and a WRITE_WITH_IMM (F = 4, else 2): the first message and the first
 * after every 1/F of the random messages' bytes; the random messages stop
 * at TOTAL - F MAX bytes (TOTAL/2 if that is less), so that the run moves
 * about TOTAL bytes.  Sizes take K, M and G suffixes (powers of 1024).
 *
 * Checked: each completion succeeds; requester completions carry the
 * signaled WRs' wr_ids in post order (an unsignaled WR counts as done when a
 * later one completes), with the right opcode, and an RDMA READ's byte_len
 * is its full length; receive completions come in post order with byte_len
 * the full message length, and WRITE_WITH_IMM's with the right imm_data.
 * A 64-bit checksum of each message's source bytes, taken when they are
 * filled with seeded pseudo-random data, must equal that of every
 * destination byte; when it differs, a byte compare counts the corrupted
 * bytes and reports the first bad offset.  On the send queue, byte_len
 * is the bytes an RDMA READ transferred (mlx4 and mlx5 set it from the CQE
 * for READ and atomics only; rxe for every opcode), so for WRITE,
 * WRITE_WITH_IMM and SEND completions a byte_len other than the message
 * length is only counted (send_byte_len_differs=) and not in --order.
 *
 * With --order FILE, the completions are written there: '#' lines, then one
 * line "wr_id opcode status byte_len" per requester completion (byte_len
 * "-" but for RDMA READ), then one per receive completion.  A run under
 * libjustitia.so with the same options must write the same file as a run
 * without it.
 *
 * --corrupt SEQ tests the checker itself: one byte in the middle of message
 * SEQ's destination (SEQ counts from 0) is flipped before it is verified,
 * so the run must fail with "corrupted=1".
 *
 * --overlap ROUNDS checks the order of overlapping accesses instead (a
 * split message's chunks travel on another QP than the WRs before it): each
 * round posts, as one batch, a 4 KiB RDMA WRITE of fresh bytes to the start
 * of B's region followed by an RDMA READ of MAX bytes of that region, which
 * must read the WRITE's bytes; then a 4 KiB WRITE followed by a WRITE of MAX
 * fresh bytes to the same region, which must leave the large WRITE's bytes.
 * The small WRITEs are unsignaled.  "integrity: overlap rounds=R
 * stale_reads=N overwritten=N" and OK only when both are 0.
 *
 * rxe's ibv_wr_set_sge_list (rdma-core up to at least v44) takes num_sge
 * times the first SGE's length as the message length, so with --api ex
 * the SGEs of one message have equal lengths.
 *
 * -T: the QPs' local ACK timeout exponent (default 14, 67 ms).  Several
 * integrity processes at once on Soft-RoCE under emulation need more (18,
 * about 1 s): with 14 they fail even without the shim (retransmission
 * storms that Linux 6.1's rxe does not survive).
 *
 * When the program runs under libjustitia.so, it prints what the shim says
 * about QP A (justitia_qp_status).  Errors are printed as they are found
 * ("integrity: error: seq N OPCODE len L ...", the first 20).  At the end,
 * "integrity: api=..." has the counts (per opcode messages/bytes),
 * corrupted bytes, errors, elapsed seconds and MB/s (10^6 bytes per second,
 * from the first post to the last completion), and the last line is
 * "integrity: OK" or "integrity: FAILED ..." (also after a failed
 * completion or a stall, which end the run).  Exit 0 only when everything
 * was verified. */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "justitia.h"
#include "lib/rc.h"

#define MAX_SGE 4
#define MAX_BATCH 8
#define MAX_DEPTH 256
#define GAP 4096 /* gaps before a region and between SGEs: 0..GAP-1 bytes */
#define RING_SLACK (4u << 20)
#define MAX_SHOWN 20 /* errors printed in full */
#define STALL_SECONDS 180
#define CANARY 0xa5

enum op { OP_WRITE, OP_READ, OP_SEND, OP_WRITE_IMM, OP_MAX };
static const char *const op_name[OP_MAX] = { "RDMA_WRITE", "RDMA_READ", "SEND",
					     "RDMA_WRITE_WITH_IMM" };
static const char *const op_short[OP_MAX] = { "WRITE", "READ", "SEND", "WRITE_IMM" };

struct msg {
	uint64_t seq;
	enum op op;
	uint32_t len;
	int signaled, nsge, nrsge, posted, req_done, recv_done;
	struct ibv_sge sge[MAX_SGE];  /* on A: the source, or a READ's destination */
	struct ibv_sge rsge[MAX_SGE]; /* on B: a SEND's receive buffers */
	uint64_t raddr;               /* on B: WRITE destination, READ source */
	uint64_t a_need, b_need, a_pos, b_pos;
	uint32_t rtotal;              /* bytes of a SEND's receive buffers */
	uint64_t sum;                 /* checksum of the source bytes */
};

struct wc_rec {
	uint64_t wr_id;
	uint32_t byte_len;
	int opcode, status, has_len;
};

struct wc_log {
	struct wc_rec *v;
	size_t n, cap;
};

static struct {
	const char *dev_a, *dev_b, *order;
	int gidx, extended;
	unsigned depth;
	uint64_t seed, bytes;
	uint32_t max_size;
	int64_t corrupt;
	unsigned overlap;
	int timeout;
} opt = { "rxe1", "rxe0", NULL, 1, 0, 8, 1, 512ull << 20, 64u << 20, -1, 0, 14 };

static struct rc_side A, B;
static struct msg fifo[MAX_DEPTH];
static unsigned fifo_head, fifo_n;
static struct wc_log req_log, recv_log;
static int started;

static struct {
	uint64_t msgs[OP_MAX], bytes[OP_MAX];
	uint64_t batches, signaled, unsignaled, multi_sge, recv_multi_sge, recvs, max_len_msgs;
	uint64_t corrupted, errors, len_differs;
} st;

/* ------------------------------------------------------------ utilities */

static uint64_t rng;

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rnd(void)
{
	return splitmix(&rng);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_order(void);

static void fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("integrity: FAILED: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	if (started)
		write_order();
	fflush(stdout);
	exit(1);
}

/* A verification failure: counted, printed up to MAX_SHOWN times. */
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (st.errors++ >= MAX_SHOWN)
		return;
	va_start(ap, fmt);
	fputs("integrity: error: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
}

static uint64_t parse_size(const char *s, const char *what)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (end == s || *end)
		fatal("%s: bad size '%s'", what, s);
	return v;
}

/* ------------------------------------------------------------ checksum */

/* A streaming 64-bit checksum of a byte sequence, independent of how the
 * sequence is cut into pieces: each 8-byte word goes through a bijective
 * step, so any single changed word changes the result. */
struct ck {
	uint64_t h, total;
	uint8_t t[8];
	unsigned n;
};

static const struct ck ck_start = { 0x6a09e667f3bcc908ULL, 0, { 0 }, 0 };

static void ck_word(struct ck *c, uint64_t w)
{
	c->h = (c->h ^ w) * 0x9e3779b97f4a7c15ULL;
	c->h ^= c->h >> 32;
}

static void ck_feed(struct ck *c, const uint8_t *p, size_t len)
{
	uint64_t w;

	c->total += len;
	if (c->n) {
		while (c->n < 8 && len) {
			c->t[c->n++] = *p++;
			len--;
		}
		if (c->n < 8)
			return;
		memcpy(&w, c->t, 8);
		ck_word(c, w);
		c->n = 0;
	}
	for (; len >= 8; len -= 8, p += 8) {
		memcpy(&w, p, 8);
		ck_word(c, w);
	}
	memcpy(c->t, p, len);
	c->n = (unsigned)len;
}

static uint64_t ck_end(struct ck *c)
{
	if (c->n) {
		uint64_t w = 0;

		memcpy(&w, c->t, c->n);
		ck_word(c, w);
	}
	ck_word(c, c->total);
	return c->h;
}

static uint64_t ck_list(const struct ibv_sge *sg, int n, uint64_t len)
{
	struct ck c = ck_start;

	for (int i = 0; i < n && len; i++) {
		uint64_t l = sg[i].length < len ? sg[i].length : len;

		ck_feed(&c, (const uint8_t *)(uintptr_t)sg[i].addr, l);
		len -= l;
	}
	return ck_end(&c);
}

/* Compare @len bytes of two scatter lists: the number of differing bytes,
 * and the offset of the first in *first. */
static uint64_t cmp_lists(const struct ibv_sge *want, int nw, const struct ibv_sge *got, int ng,
			  uint64_t len, uint64_t *first)
{
	uint64_t pos = 0, bad = 0, oi = 0, oj = 0;
	int i = 0, j = 0;

	while (pos < len && i < nw && j < ng) {
		uint64_t k = want[i].length - oi, kj = got[j].length - oj;
		const uint8_t *p = (const uint8_t *)(uintptr_t)want[i].addr + oi;
		const uint8_t *q = (const uint8_t *)(uintptr_t)got[j].addr + oj;

		if (kj < k)
			k = kj;
		if (len - pos < k)
			k = len - pos;
		if (memcmp(p, q, k))
			for (uint64_t x = 0; x < k; x++)
				if (p[x] != q[x] && !bad++)
					*first = pos + x;
		pos += k;
		oi += k;
		oj += k;
		if (oi == want[i].length) {
			i++;
			oi = 0;
		}
		if (oj == got[j].length) {
			j++;
			oj = 0;
		}
	}
	return bad;
}

static uint8_t *sg_byte(const struct ibv_sge *sg, int n, uint64_t off)
{
	for (int i = 0; i < n; i++) {
		if (off < sg[i].length)
			return (uint8_t *)(uintptr_t)sg[i].addr + off;
		off -= sg[i].length;
	}
	return NULL;
}

/* ------------------------------------------------------------ data */

/* Fill a scatter list with the message's own pseudo-random stream and
 * return the checksum of what was written. */
static uint64_t fill_list(const struct ibv_sge *sg, int n, uint64_t seq)
{
	struct ck c = ck_start;
	uint64_t x = opt.seed * 0xd1342543de82ef95ULL + seq, s = splitmix(&x) | 1;

	for (int i = 0; i < n; i++) {
		uint8_t *p = (uint8_t *)(uintptr_t)sg[i].addr;
		uint32_t len = sg[i].length;

		while (len) {
			uint32_t blk = len < 65536 ? len : 65536, k = 0;

			for (; k + 8 <= blk; k += 8) {
				s ^= s << 13;
				s ^= s >> 7;
				s ^= s << 17;
				memcpy(p + k, &s, 8);
			}
			if (k < blk) {
				s ^= s << 13;
				s ^= s >> 7;
				s ^= s << 17;
				memcpy(p + k, &s, blk - k);
			}
			ck_feed(&c, p, blk);
			p += blk;
			len -= blk;
		}
	}
	return ck_end(&c);
}

/* ------------------------------------------------------------ verbs setup */

static void setup(struct rc_side *s, const char *dev, int extended)
{
	struct ibv_qp_cap cap = { .max_send_wr = opt.depth, .max_recv_wr = opt.depth,
				  .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE };
	uint64_t size = ((2ull * opt.max_size + RING_SLACK) + 4095) & ~4095ull;
	char why[256];

	if (rc_side_open(s, dev, opt.gidx, (int)(2 * opt.depth + 8), size, &cap, extended, why,
			 sizeof(why)))
		fatal("%s", why);
}

static void connect_qp(struct rc_side *s, const struct rc_side *peer)
{
	struct rc_peer p = { .qpn = peer->qp->qp_num, .gid = peer->gid, .gidx = opt.gidx,
			     .access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ,
			     .rd_atomic = 4, .timeout = (uint8_t)opt.timeout };
	const char *step;

	if (rc_connect(s->qp, &p, &step))
		fatal("%s: %s failed", s->name, step);
}

/* ------------------------------------------------------------ drawing messages */

static uint32_t draw_len(void)
{
	unsigned bits = 32 - (unsigned)__builtin_clz(opt.max_size);
	uint32_t len;

	do {
		unsigned e = (unsigned)(rnd() % bits);

		len = (1u << e) + (uint32_t)(rnd() % (1u << e));
	} while (len > opt.max_size);
	return len;
}

static uint32_t gap(void)
{
	return rnd() % 4 ? (uint32_t)(rnd() % GAP) : 0;
}

/* Cut @total bytes into 1..MAX_SGE pieces at random points (equal pieces
 * if @equal), laid out with random gaps from offset 0.  Returns the number
 * of pieces; *need is the span including the gaps. */
static int draw_list(struct ibv_sge *sg, uint32_t total, int equal, uint64_t *need)
{
	uint32_t cut[MAX_SGE + 1], prev = 0;
	int n = 1 + (int)(rnd() % MAX_SGE), k = 0;
	uint64_t off = gap();

	if ((uint32_t)n > total)
		n = (int)total;
	if (equal) {
		while (total % (uint32_t)n)
			n--;
		for (int i = 1; i < n; i++)
			cut[k++] = total / (uint32_t)n * (uint32_t)i;
	} else {
		for (int i = 1; i < n; i++) {
			uint32_t c = 1 + (uint32_t)(rnd() % (total - 1)), j = (uint32_t)k;

			while (j > 0 && cut[j - 1] > c) { /* insertion sort */
				cut[j] = cut[j - 1];
				j--;
			}
			cut[j] = c;
			k++;
		}
	}
	cut[k++] = total;
	n = 0;
	for (int i = 0; i < k; i++) {
		if (cut[i] == prev)
			continue; /* two equal cut points */
		if (n)
			off += gap();
		sg[n].addr = off;
		sg[n].length = cut[i] - prev;
		off += sg[n].length;
		prev = cut[i];
		n++;
	}
	*need = off;
	return n;
}

/* Random messages take @random_budget bytes; the n_forced messages of
 * exactly max_size go first and after every random_budget/n_forced bytes. */
struct gen {
	uint64_t seq, random_bytes, random_budget;
	unsigned forced, n_forced;
};

static void gen_init(struct gen *g)
{
	uint64_t max = opt.max_size;

	memset(g, 0, sizeof(*g));
	g->n_forced = opt.bytes >= 6 * max ? 4 : 2;
	g->random_budget = opt.bytes > g->n_forced * max ? opt.bytes - g->n_forced * max
							 : opt.bytes / 2;
}

static int gen_done(const struct gen *g)
{
	return g->random_bytes >= g->random_budget && g->forced >= g->n_forced;
}

static void gen_msg(struct gen *g, struct msg *m)
{
	static const enum op forced_op[OP_MAX] = { OP_WRITE, OP_READ, OP_SEND, OP_WRITE_IMM };

	memset(m, 0, sizeof(*m));
	m->seq = g->seq++;
	if (g->forced < g->n_forced &&
	    g->random_bytes >= g->random_budget / g->n_forced * g->forced) {
		m->op = forced_op[g->forced++ % OP_MAX];
		m->len = opt.max_size;
	} else {
		m->op = (enum op)(rnd() % OP_MAX);
		m->len = draw_len();
		g->random_bytes += m->len;
	}
	m->nsge = draw_list(m->sge, m->len, opt.extended, &m->a_need);
	if (m->op == OP_SEND) {
		m->rtotal = m->len + (rnd() % 2 ? (uint32_t)(rnd() % GAP) : 0);
		m->nrsge = draw_list(m->rsge, m->rtotal, 0, &m->b_need);
	} else {
		m->raddr = gap();
		m->b_need = m->raddr + m->len;
	}
}

/* ------------------------------------------------------------ rings */

static struct msg *fifo_at(unsigned i)
{
	return &fifo[(fifo_head + i) % MAX_DEPTH];
}

/* Where @need bytes fit in @s's ring (-1: not now).  In use is everything
 * from the oldest outstanding message's region to head, in ring order. */
static int64_t ring_fit(const struct rc_side *s, int64_t oldest, uint64_t need)
{
	uint64_t h = s->head;

	if (oldest < 0)
		return h + need <= s->size ? (int64_t)h : 0;
	if ((uint64_t)oldest < h) {
		if (h + need <= s->size)
			return (int64_t)h;
		return need <= (uint64_t)oldest ? 0 : -1;
	}
	if ((uint64_t)oldest > h && h + need <= (uint64_t)oldest)
		return (int64_t)h;
	return -1;
}

/* ------------------------------------------------------------ completions */

static void log_wc(struct wc_log *l, const struct ibv_wc *wc, int has_len)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			fatal("out of memory");
	}
	l->v[l->n++] = (struct wc_rec){ wc->wr_id, wc->byte_len, (int)wc->opcode, (int)wc->status,
					has_len };
}

static uint32_t imm_of(uint64_t seq)
{
	return (uint32_t)(seq * 2654435761u) ^ 0xc0ffee;
}

static int needs_recv(const struct msg *m)
{
	return m->op == OP_SEND || m->op == OP_WRITE_IMM;
}

static const char *desc(const struct msg *m)
{
	static char b[96];

	snprintf(b, sizeof(b), "seq %" PRIu64 " %s len %u (%d SGE%s, %ssignaled)", m->seq,
		 op_name[m->op], m->len, m->nsge, m->nsge > 1 ? "s" : "",
		 m->signaled ? "" : "un");
	return b;
}

static void on_req_wc(const struct ibv_wc *wc)
{
	static const enum ibv_wc_opcode want_op[OP_MAX] = { IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
							    IBV_WC_SEND, IBV_WC_RDMA_WRITE };
	struct msg *m = NULL;
	unsigned i, skipped = 0;

	log_wc(&req_log, wc, wc->opcode == IBV_WC_RDMA_READ);
	if (wc->status != IBV_WC_SUCCESS)
		fatal("requester completion of wr_id %" PRIu64 ": %s (vendor_err %u)", wc->wr_id,
		      ibv_wc_status_str(wc->status), wc->vendor_err);
	for (i = 0; i < fifo_n; i++) {
		struct msg *x = fifo_at(i);

		if (!x->posted)
			break;
		if (x->req_done)
			continue;
		if (x->seq == wc->wr_id) {
			m = x;
			break;
		}
		if (x->signaled)
			skipped++;
	}
	if (!m) {
		fail("requester completion with wr_id %" PRIu64 ", which is not outstanding",
		     wc->wr_id);
		return;
	}
	if (skipped)
		fail("requester completion of %s arrived before %u earlier signaled WR%s",
		     desc(m), skipped, skipped > 1 ? "s" : "");
	if (!m->signaled)
		fail("requester completion of the unsignaled %s", desc(m));
	if (wc->opcode != want_op[m->op])
		fail("requester completion of %s has opcode %d, want %d", desc(m), wc->opcode,
		     want_op[m->op]);
	else if (m->op == OP_READ && wc->byte_len != m->len)
		fail("requester completion of %s has byte_len %u, want %u", desc(m), wc->byte_len,
		     m->len);
	else if (m->op != OP_READ && wc->byte_len != m->len)
		st.len_differs++;
	for (unsigned j = 0; j <= i; j++)
		fifo_at(j)->req_done = 1;
}

static void on_recv_wc(const struct ibv_wc *wc)
{
	struct msg *m = NULL;
	unsigned i, skipped = 0;

	log_wc(&recv_log, wc, 1);
	if (wc->status != IBV_WC_SUCCESS)
		fatal("receive completion of wr_id %" PRIu64 ": %s (vendor_err %u)", wc->wr_id,
		      ibv_wc_status_str(wc->status), wc->vendor_err);
	for (i = 0; i < fifo_n; i++) {
		struct msg *x = fifo_at(i);

		if (!needs_recv(x) || x->recv_done)
			continue;
		if (x->seq == wc->wr_id) {
			m = x;
			break;
		}
		skipped++;
	}
	if (!m) {
		fail("receive completion with wr_id %" PRIu64 ", which is not outstanding", wc->wr_id);
		return;
	}
	m->recv_done = 1;
	if (skipped)
		fail("receive completion of %s arrived before %u earlier receive%s", desc(m), skipped,
		     skipped > 1 ? "s" : "");
	if (wc->byte_len != m->len)
		fail("receive completion of %s has byte_len %u, want %u", desc(m), wc->byte_len,
		     m->len);
	if (m->op == OP_SEND && (wc->opcode != IBV_WC_RECV || (wc->wc_flags & IBV_WC_WITH_IMM)))
		fail("receive completion of %s has opcode %d flags %#x, want RECV", desc(m),
		     wc->opcode, wc->wc_flags);
	if (m->op == OP_WRITE_IMM) {
		if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc->wc_flags & IBV_WC_WITH_IMM))
			fail("receive completion of %s has opcode %d flags %#x, want "
			     "RECV_RDMA_WITH_IMM", desc(m), wc->opcode, wc->wc_flags);
		else if (be32toh(wc->imm_data) != imm_of(m->seq))
			fail("receive completion of %s has imm_data %#x, want %#x", desc(m),
			     be32toh(wc->imm_data), imm_of(m->seq));
	}
}

/* Every byte of a completed message's destination. */
static void verify(const struct msg *m)
{
	struct ibv_sge rem = { .addr = m->raddr, .length = m->len };
	const struct ibv_sge *src = m->sge, *dst = &rem;
	int ns = m->nsge, nd = 1;
	uint64_t first = 0, bad;

	if (m->op == OP_READ) {
		src = &rem;
		ns = 1;
		dst = m->sge;
		nd = m->nsge;
	} else if (m->op == OP_SEND) {
		dst = m->rsge;
		nd = m->nrsge;
	}
	if ((int64_t)m->seq == opt.corrupt)
		*sg_byte(dst, nd, m->len / 2) ^= 0x40;
	if (ck_list(dst, nd, m->len) != m->sum) {
		bad = cmp_lists(src, ns, dst, nd, m->len, &first);
		st.corrupted += bad;
		if (bad)
			fail("%s: checksum differs: %" PRIu64 " corrupted bytes, the first at offset "
			     "%" PRIu64, desc(m), bad, first);
		else
			fail("%s: checksum differs but the bytes compare equal (source changed?)",
			     desc(m));
	}
	if (m->op == OP_SEND) {
		uint64_t spoiled = 0;

		for (uint64_t o = m->len; o < m->rtotal; o++)
			if (*sg_byte(m->rsge, m->nrsge, o) != CANARY)
				spoiled++;
		if (spoiled) {
			st.corrupted += spoiled;
			fail("%s: %" PRIu64 " of the %u receive bytes past the message were written",
			     desc(m), spoiled, m->rtotal - m->len);
		}
	}
}

static double last_progress;

/* Poll both CQs once, retire what is complete; returns completions seen. */
static int poll_once(void)
{
	struct ibv_wc wc[16];
	int n, got = 0;

	n = ibv_poll_cq(A.cq, 16, wc);
	if (n < 0)
		fatal("%s: ibv_poll_cq failed", A.name);
	for (int i = 0; i < n; i++)
		on_req_wc(&wc[i]);
	got += n;
	n = ibv_poll_cq(B.cq, 16, wc);
	if (n < 0)
		fatal("%s: ibv_poll_cq failed", B.name);
	for (int i = 0; i < n; i++) {
		if (wc[i].opcode & IBV_WC_RECV)
			on_recv_wc(&wc[i]);
		else
			fatal("%s: unexpected send completion on the responder", B.name);
	}
	got += n;
	while (fifo_n) {
		struct msg *m = fifo_at(0);

		if (!m->req_done || (needs_recv(m) && !m->recv_done))
			break;
		verify(m);
		fifo_head = (fifo_head + 1) % MAX_DEPTH;
		fifo_n--;
	}
	return got;
}

/* Wait for at least one completion (or a stall). */
static void wait_progress(void)
{
	unsigned idle = 0;
	int posted = 0;

	for (unsigned i = 0; i < fifo_n; i++)
		posted |= fifo_at(i)->posted;
	if (!posted)
		fatal("internal: waiting with nothing posted");
	while (!poll_once()) {
		if (++idle % 64)
			continue;
		sched_yield();
		if (idle % 4096 == 0 && now_s() - last_progress > STALL_SECONDS) {
			const struct msg *m = fifo_at(0);

			fatal("no completion for %d s; %u messages outstanding, the oldest %s%s%s",
			      STALL_SECONDS, fifo_n, desc(m), m->req_done ? " (requester done)" : "",
			      m->recv_done ? " (received)" : "");
		}
	}
	last_progress = now_s();
}

/* ------------------------------------------------------------ posting */

/* Place @t in both rings (waiting for room), fill its source, post its
 * receive; it becomes the newest outstanding message. */
static struct msg *place(const struct msg *t)
{
	struct msg *m;
	int64_t pa, pb;

	for (;;) {
		int64_t oa = fifo_n ? (int64_t)fifo_at(0)->a_pos : -1;
		int64_t ob = fifo_n ? (int64_t)fifo_at(0)->b_pos : -1;

		pa = ring_fit(&A, oa, t->a_need);
		pb = ring_fit(&B, ob, t->b_need);
		if (pa >= 0 && pb >= 0)
			break;
		wait_progress();
	}
	m = fifo_at(fifo_n++);
	*m = *t;
	m->a_pos = (uint64_t)pa;
	m->b_pos = (uint64_t)pb;
	A.head = m->a_pos + m->a_need;
	B.head = m->b_pos + m->b_need;
	for (int i = 0; i < m->nsge; i++) {
		m->sge[i].addr += (uintptr_t)A.buf + m->a_pos;
		m->sge[i].lkey = A.mr->lkey;
	}
	for (int i = 0; i < m->nrsge; i++) {
		m->rsge[i].addr += (uintptr_t)B.buf + m->b_pos;
		m->rsge[i].lkey = B.mr->lkey;
	}
	if (m->op == OP_SEND) {
		for (uint64_t o = m->len; o < m->rtotal; o++)
			*sg_byte(m->rsge, m->nrsge, o) = CANARY;
	} else {
		m->raddr += (uintptr_t)B.buf + m->b_pos;
	}
	if (m->op == OP_READ) {
		struct ibv_sge rem = { .addr = m->raddr, .length = m->len };

		m->sum = fill_list(&rem, 1, m->seq);
	} else {
		m->sum = fill_list(m->sge, m->nsge, m->seq);
	}
	if (needs_recv(m)) {
		struct ibv_recv_wr wr = { .wr_id = m->seq, .sg_list = m->rsge,
					  .num_sge = m->op == OP_SEND ? m->nrsge : 0 }, *bad;

		if (ibv_post_recv(B.qp, &wr, &bad))
			fatal("%s: ibv_post_recv failed", B.name);
		st.recvs++;
		st.recv_multi_sge += m->nrsge > 1;
	}
	return m;
}

/* The longest post call (ibv_post_send, or ibv_wr_start to
 * ibv_wr_complete): a post must never wait long, whatever the shim or its
 * daemon do (max_post_ms= in the summary). */
static double max_post_s;

static void post_took(double t0)
{
	double d = now_s() - t0;

	if (d > max_post_s)
		max_post_s = d;
}

static void post_classic(struct msg **b, int n)
{
	static const enum ibv_wr_opcode map[OP_MAX] = { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
							IBV_WR_SEND, IBV_WR_RDMA_WRITE_WITH_IMM };
	struct ibv_send_wr wr[MAX_BATCH], *bad = NULL;
	double t0;
	int rc;

	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < n; i++) {
		wr[i].wr_id = b[i]->seq;
		wr[i].opcode = map[b[i]->op];
		wr[i].send_flags = b[i]->signaled ? IBV_SEND_SIGNALED : 0;
		wr[i].sg_list = b[i]->sge;
		wr[i].num_sge = b[i]->nsge;
		wr[i].wr.rdma.remote_addr = b[i]->raddr;
		wr[i].wr.rdma.rkey = B.mr->rkey;
		if (b[i]->op == OP_WRITE_IMM)
			wr[i].imm_data = htobe32(imm_of(b[i]->seq));
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	t0 = now_s();
	rc = ibv_post_send(A.qp, wr, &bad);
	post_took(t0);
	if (rc)
		fatal("ibv_post_send of %d WRs: %s (bad_wr is WR %d)", n, strerror(rc),
		      bad ? (int)(bad - wr) : -1);
}

static void post_ex(struct msg **b, int n)
{
	struct ibv_qp_ex *qx = A.qpx;
	double t0 = now_s();
	int rc;

	ibv_wr_start(qx);
	for (int i = 0; i < n; i++) {
		const struct msg *m = b[i];

		qx->wr_id = m->seq;
		qx->wr_flags = m->signaled ? IBV_SEND_SIGNALED : 0;
		switch (m->op) {
		case OP_WRITE: ibv_wr_rdma_write(qx, B.mr->rkey, m->raddr); break;
		case OP_READ: ibv_wr_rdma_read(qx, B.mr->rkey, m->raddr); break;
		case OP_SEND: ibv_wr_send(qx); break;
		case OP_WRITE_IMM:
			ibv_wr_rdma_write_imm(qx, B.mr->rkey, m->raddr, htobe32(imm_of(m->seq)));
			break;
		default: break;
		}
		if (m->nsge == 1)
			ibv_wr_set_sge(qx, m->sge[0].lkey, m->sge[0].addr, m->sge[0].length);
		else
			ibv_wr_set_sge_list(qx, (size_t)m->nsge, m->sge);
	}
	rc = ibv_wr_complete(qx);
	post_took(t0);
	if (rc)
		fatal("ibv_wr_complete of %d WRs: %s", n, strerror(rc));
}

static void run(void)
{
	unsigned kmax = opt.depth < MAX_BATCH ? opt.depth : MAX_BATCH;
	struct msg pend, batch[MAX_BATCH];
	int have_pend = 0;
	struct gen g;

	gen_init(&g);
	last_progress = now_s();
	for (;;) {
		unsigned k = 1 + (unsigned)(rnd() % kmax), n = 0;
		struct msg *b[MAX_BATCH];
		uint64_t sum = 0;

		while (n < k) {
			if (!have_pend) {
				if (gen_done(&g))
					break;
				gen_msg(&g, &pend);
				have_pend = 1;
			}
			if (n && sum + pend.len > opt.max_size)
				break;
			sum += pend.len;
			batch[n++] = pend;
			have_pend = 0;
		}
		if (!n)
			break;
		for (unsigned i = 0; i < n; i++)
			batch[i].signaled = i + 1 == n || rnd() % 2;
		while (fifo_n + n > opt.depth)
			wait_progress();
		for (unsigned i = 0; i < n; i++)
			b[i] = place(&batch[i]);
		if (opt.extended)
			post_ex(b, (int)n);
		else
			post_classic(b, (int)n);
		st.batches++;
		for (unsigned i = 0; i < n; i++) {
			const struct msg *m = b[i];

			b[i]->posted = 1;
			st.msgs[m->op]++;
			st.bytes[m->op] += m->len;
			st.signaled += m->signaled;
			st.unsignaled += !m->signaled;
			st.multi_sge += m->nsge > 1;
			st.max_len_msgs += m->len == opt.max_size;
		}
	}
	while (fifo_n)
		wait_progress();
}

/* ------------------------------------------------------------ overlap */

#define OVL_SMALL 4096u

/* Post @n WRs (@op[i] of @len[i] bytes from A's @src[i] to / from B's region
 * start), the last signaled, as one batch; wait for its completion. */
static void ovl_batch(int n, const enum ibv_wr_opcode *op, uint8_t *const *src,
		      const uint32_t *len, uint64_t id)
{
	struct ibv_sge sg[2];
	struct ibv_wc wc;
	double t0 = now_s();
	int got;

	for (int i = 0; i < n; i++)
		sg[i] = (struct ibv_sge){ .addr = (uintptr_t)src[i], .length = len[i],
					  .lkey = A.mr->lkey };
	if (opt.extended) {
		ibv_wr_start(A.qpx);
		for (int i = 0; i < n; i++) {
			A.qpx->wr_id = id + (uint64_t)i;
			A.qpx->wr_flags = i + 1 == n ? IBV_SEND_SIGNALED : 0;
			if (op[i] == IBV_WR_RDMA_READ)
				ibv_wr_rdma_read(A.qpx, B.mr->rkey, (uintptr_t)B.buf);
			else
				ibv_wr_rdma_write(A.qpx, B.mr->rkey, (uintptr_t)B.buf);
			ibv_wr_set_sge(A.qpx, sg[i].lkey, sg[i].addr, sg[i].length);
		}
		if (ibv_wr_complete(A.qpx))
			fatal("overlap: ibv_wr_complete failed");
	} else {
		struct ibv_send_wr wr[2], *bad = NULL;

		memset(wr, 0, sizeof(wr));
		for (int i = 0; i < n; i++) {
			wr[i].wr_id = id + (uint64_t)i;
			wr[i].opcode = op[i];
			wr[i].send_flags = i + 1 == n ? IBV_SEND_SIGNALED : 0;
			wr[i].sg_list = &sg[i];
			wr[i].num_sge = 1;
			wr[i].wr.rdma.remote_addr = (uintptr_t)B.buf;
			wr[i].wr.rdma.rkey = B.mr->rkey;
			wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		}
		if (ibv_post_send(A.qp, wr, &bad))
			fatal("overlap: ibv_post_send failed");
	}
	while (!(got = ibv_poll_cq(A.cq, 1, &wc))) {
		if (now_s() - t0 > STALL_SECONDS)
			fatal("overlap: no completion for %d s", STALL_SECONDS);
		sched_yield();
	}
	if (got < 0 || wc.status != IBV_WC_SUCCESS || wc.wr_id != id + (uint64_t)n - 1)
		fatal("overlap: completion %s, wr_id %" PRIu64 ", want %" PRIu64,
		      got < 0 ? "failed" : ibv_wc_status_str(wc.status), wc.wr_id,
		      id + (uint64_t)n - 1);
}

/* Fill @len bytes at @p from the PRNG. */
static void ovl_fill(uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t w = rnd();

		memcpy(p + i, &w, len - i < 8 ? len - i : 8);
	}
}

static void run_overlap(void)
{
	uint8_t *small = A.buf, *big = A.buf + opt.max_size;
	uint64_t stale = 0, overwritten = 0;
	uint32_t len[2] = { OVL_SMALL, opt.max_size };

	if (opt.max_size < 2 * OVL_SMALL)
		fatal("--overlap needs --max-size of at least %u", 2 * OVL_SMALL);
	for (unsigned r = 0; r < opt.overlap; r++) {
		static const enum ibv_wr_opcode wr_rd[2] = { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ };
		static const enum ibv_wr_opcode wr_wr[2] = { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE };
		uint8_t *src[2] = { small, big };

		/* a small WRITE, then a large READ of the same bytes */
		ovl_fill(small, OVL_SMALL);
		ovl_fill(B.buf, opt.max_size);
		memset(big, 0, opt.max_size);
		ovl_batch(2, wr_rd, src, len, 4ull * r);
		if (memcmp(big, small, OVL_SMALL) ||
		    memcmp(big + OVL_SMALL, B.buf + OVL_SMALL, opt.max_size - OVL_SMALL))
			stale++;
		/* a small WRITE, then a large WRITE of the same bytes */
		ovl_fill(small, OVL_SMALL);
		ovl_fill(big, opt.max_size);
		ovl_batch(2, wr_wr, src, len, 4ull * r + 2);
		if (memcmp(B.buf, big, opt.max_size))
			overwritten++;
	}
	printf("integrity: overlap api=%s rounds=%u max_size=%u stale_reads=%" PRIu64
	       " overwritten=%" PRIu64 "\n", opt.extended ? "ex" : "classic", opt.overlap,
	       opt.max_size, stale, overwritten);
	st.errors += stale + overwritten;
}

/* ------------------------------------------------------------ reporting */

static const char *wc_op_name(int op)
{
	static char b[24];

	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: snprintf(b, sizeof(b), "OPCODE_%d", op); return b;
	}
}

static void write_log(FILE *f, const struct wc_log *l)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct wc_rec *r = &l->v[i];
		char status[64];

		snprintf(status, sizeof(status), "%s", ibv_wc_status_str((enum ibv_wc_status)r->status));
		for (char *p = status; *p; p++)
			if (*p == ' ')
				*p = '_';
		if (r->has_len)
			fprintf(f, "%" PRIu64 " %s %s %u\n", r->wr_id, wc_op_name(r->opcode), status,
				r->byte_len);
		else
			fprintf(f, "%" PRIu64 " %s %s -\n", r->wr_id, wc_op_name(r->opcode), status);
	}
}

static void write_order(void)
{
	FILE *f;

	if (!opt.order)
		return;
	f = fopen(opt.order, "w");
	if (!f) {
		printf("integrity: cannot write %s\n", opt.order);
		return;
	}
	fprintf(f, "# integrity --api %s -S %" PRIu64 " --bytes %" PRIu64 " --max-size %u "
		"--depth %u\n# requester completions: wr_id opcode status byte_len\n",
		opt.extended ? "ex" : "classic", opt.seed, opt.bytes, opt.max_size, opt.depth);
	write_log(f, &req_log);
	fputs("# receive completions: wr_id opcode status byte_len\n", f);
	write_log(f, &recv_log);
	if (fclose(f))
		printf("integrity: cannot write %s\n", opt.order);
}

static void usage(void)
{
	fprintf(stderr, "usage: integrity [-a DEV] [-b DEV] [-g GID_INDEX] [-S SEED] "
			"[--api classic|ex] [--bytes TOTAL] [--max-size MAX] [--depth N] "
			"[--order FILE] [--corrupt SEQ] [--overlap ROUNDS] [-T TIMEOUT]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "api", required_argument, NULL, 'A' },
		{ "bytes", required_argument, NULL, 'B' },
		{ "max-size", required_argument, NULL, 'M' },
		{ "depth", required_argument, NULL, 'D' },
		{ "order", required_argument, NULL, 'O' },
		{ "corrupt", required_argument, NULL, 'C' },
		{ "overlap", required_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v, total = 0;
	double t0, el;
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "a:b:g:S:T:h", opts, NULL)) != -1) {
		switch (c) {
		case 'a': opt.dev_a = optarg; break;
		case 'b': opt.dev_b = optarg; break;
		case 'g': opt.gidx = atoi(optarg); break;
		case 'S': opt.seed = strtoull(optarg, NULL, 0); break;
		case 'T':
			opt.timeout = atoi(optarg);
			if (opt.timeout < 1 || opt.timeout > 31)
				fatal("-T must be 1..31");
			break;
		case 'A':
			if (!strcmp(optarg, "ex"))
				opt.extended = 1;
			else if (!strcmp(optarg, "classic"))
				opt.extended = 0;
			else
				fatal("--api must be classic or ex");
			break;
		case 'B': opt.bytes = parse_size(optarg, "--bytes"); break;
		case 'M':
			v = parse_size(optarg, "--max-size");
			if (v < 16 || v > (1u << 30))
				fatal("--max-size must be 16..1G");
			opt.max_size = (uint32_t)v;
			break;
		case 'D':
			opt.depth = (unsigned)atoi(optarg);
			if (opt.depth < 1 || opt.depth > MAX_DEPTH)
				fatal("--depth must be 1..%d", MAX_DEPTH);
			break;
		case 'O': opt.order = optarg; break;
		case 'C': opt.corrupt = strtoll(optarg, NULL, 0); break;
		case 'V': opt.overlap = (unsigned)atoi(optarg); break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	rng = opt.seed;

	setup(&A, opt.dev_a, opt.extended);
	setup(&B, opt.dev_b, 0);
	connect_qp(&A, &B);
	connect_qp(&B, &A);
	if (justitia_qp_status) {
		struct justitia_qp_status js;

		if (!justitia_qp_status(A.qp, &js))
			printf("integrity: shim: QP %u managed=%d class=%d split=%d chunk_bytes=%u "
			       "rate_bps=%llu%s%s\n", A.qp->qp_num, js.managed, js.cls, js.split,
			       js.chunk_bytes, js.rate_bps, js.warning[0] ? " warning: " : "",
			       js.warning);
		else
			printf("integrity: shim: QP %u not known to the shim\n", A.qp->qp_num);
	}

	started = 1;
	t0 = now_s();
	if (opt.overlap)
		run_overlap();
	else
		run();
	el = now_s() - t0;
	write_order();

	for (int op = 0; op < OP_MAX; op++)
		total += st.bytes[op];
	printf("integrity: api=%s seed=%" PRIu64 " max_size=%u depth=%u msgs=%" PRIu64,
	       opt.extended ? "ex" : "classic", opt.seed, opt.max_size, opt.depth,
	       st.msgs[0] + st.msgs[1] + st.msgs[2] + st.msgs[3]);
	for (int op = 0; op < OP_MAX; op++)
		printf(" %s=%" PRIu64 "/%" PRIu64, op_short[op], st.msgs[op], st.bytes[op]);
	printf(" bytes=%" PRIu64 " max_len_msgs=%" PRIu64 " batches=%" PRIu64 " signaled=%" PRIu64
	       " unsignaled=%" PRIu64 " multi_sge=%" PRIu64 " recvs=%" PRIu64
	       " recv_multi_sge=%" PRIu64 " req_wcs=%zu recv_wcs=%zu send_byte_len_differs=%"
	       PRIu64 " corrupted=%" PRIu64 " errors=%" PRIu64 " elapsed=%.2f MBps=%.1f"
	       " max_post_ms=%.1f\n",
	       total, st.max_len_msgs, st.batches, st.signaled, st.unsignaled, st.multi_sge,
	       st.recvs, st.recv_multi_sge, req_log.n, recv_log.n, st.len_differs, st.corrupted,
	       st.errors, el, el > 0 ? (double)total / el / 1e6 : 0.0, max_post_s * 1e3);
	if (st.errors || st.corrupted || req_log.n != st.signaled || recv_log.n != st.recvs) {
		printf("integrity: FAILED (%" PRIu64 " errors, %" PRIu64 " corrupted bytes)\n",
		       st.errors, st.corrupted);
		return 1;
	}
	printf("integrity: OK\n");

	rc_side_close(&A);
	rc_side_close(&B);
	free(req_log.v);
	free(recv_log.v);
	return 0;
}

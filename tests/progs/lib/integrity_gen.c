// SPDX-License-Identifier: MIT
/* integrity's messages (see integrity.h): each drawn from the seeded PRNG
 * (opcode, size, scatter lists, the forced messages of --max-size bytes),
 * placed in the two sides' rings and filled, its receive posted.
 * May call: integrity_state, integrity_wc (waiting for room), lib/sgl,
 * libibverbs and libc. */
#include "integrity.h"

#include "sgl.h"

#include <string.h>

/* ------------------------------------------------------------ drawing messages */

static uint32_t draw_len(void)
{
	unsigned bits = 32 - (unsigned)__builtin_clz(opt.max_size);
	uint32_t len;

	do {
		unsigned e = (unsigned)(integ_rnd() % bits);

		len = (1u << e) + (uint32_t)(integ_rnd() % (1u << e));
	} while (len > opt.max_size);
	return len;
}

static uint32_t gap(void)
{
	return integ_rnd() % 4 ? (uint32_t)(integ_rnd() % GAP) : 0;
}

/* Cut @total bytes into 1..MAX_SGE pieces at random points (equal pieces
 * if @equal), laid out with random gaps from offset 0.  Returns the number
 * of pieces; *need is the span including the gaps. */
static int draw_list(struct ibv_sge *sg, uint32_t total, int equal, uint64_t *need)
{
	uint32_t cut[MAX_SGE + 1], prev = 0;
	int n = 1 + (int)(integ_rnd() % MAX_SGE), k = 0;
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
			uint32_t c = 1 + (uint32_t)(integ_rnd() % (total - 1)), j = (uint32_t)k;

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

void integ_gen_init(struct gen *g)
{
	uint64_t max = opt.max_size;

	memset(g, 0, sizeof(*g));
	g->n_forced = opt.bytes >= 6 * max ? 4 : 2;
	g->random_budget = opt.bytes > g->n_forced * max ? opt.bytes - g->n_forced * max
							 : opt.bytes / 2;
}

int integ_gen_done(const struct gen *g)
{
	return g->random_bytes >= g->random_budget && g->forced >= g->n_forced;
}

void integ_gen_msg(struct gen *g, struct msg *m)
{
	static const enum op forced_op[OP_MAX] = { OP_WRITE, OP_READ, OP_SEND, OP_WRITE_IMM };

	memset(m, 0, sizeof(*m));
	m->seq = g->seq++;
	if (g->forced < g->n_forced &&
	    g->random_bytes >= g->random_budget / g->n_forced * g->forced) {
		m->op = forced_op[g->forced++ % OP_MAX];
		m->len = opt.max_size;
	} else {
		m->op = (enum op)(integ_rnd() % OP_MAX);
		m->len = draw_len();
		g->random_bytes += m->len;
	}
	m->nsge = draw_list(m->sge, m->len, opt.extended, &m->a_need);
	if (m->op == OP_SEND) {
		m->rtotal = m->len + (integ_rnd() % 2 ? (uint32_t)(integ_rnd() % GAP) : 0);
		m->nrsge = draw_list(m->rsge, m->rtotal, 0, &m->b_need);
	} else {
		m->raddr = gap();
		m->b_need = m->raddr + m->len;
	}
}

/* ------------------------------------------------------------ rings */

struct msg *integ_fifo_at(unsigned i)
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

/* ------------------------------------------------------------ posting */

/* Place @t in both rings (waiting for room), fill its source, post its
 * receive; it becomes the newest outstanding message. */
struct msg *integ_place(const struct msg *t)
{
	struct msg *m;
	int64_t pa, pb;

	for (;;) {
		int64_t oa = fifo_n ? (int64_t)integ_fifo_at(0)->a_pos : -1;
		int64_t ob = fifo_n ? (int64_t)integ_fifo_at(0)->b_pos : -1;

		pa = ring_fit(&A, oa, t->a_need);
		pb = ring_fit(&B, ob, t->b_need);
		if (pa >= 0 && pb >= 0)
			break;
		integ_wait_progress();
	}
	m = integ_fifo_at(fifo_n++);
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
			*sgl_byte(m->rsge, m->nrsge, o) = CANARY;
	} else {
		m->raddr += (uintptr_t)B.buf + m->b_pos;
	}
	if (m->op == OP_READ) {
		struct ibv_sge rem = { .addr = m->raddr, .length = m->len };

		m->sum = sgl_fill(&rem, 1, opt.seed, m->seq);
	} else {
		m->sum = sgl_fill(m->sge, m->nsge, opt.seed, m->seq);
	}
	if (integ_needs_recv(m)) {
		struct ibv_recv_wr wr = { .wr_id = m->seq, .sg_list = m->rsge,
					  .num_sge = m->op == OP_SEND ? m->nrsge : 0 }, *bad;

		if (ibv_post_recv(B.qp, &wr, &bad))
			integ_fatal("%s: ibv_post_recv failed", B.name);
		st.recvs++;
		st.recv_multi_sge += m->nrsge > 1;
	}
	return m;
}

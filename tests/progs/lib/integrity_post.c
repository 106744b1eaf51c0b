// SPDX-License-Identifier: MIT
/* integrity's posting (see integrity.h): batches of messages as one
 * ibv_post_send WR list or one ibv_wr_* batch, the main loop of a run, and
 * the --overlap rounds.
 * May call: integrity_state, integrity_gen, integrity_wc, libibverbs and
 * libc. */
#include "integrity.h"

#include <endian.h>
#include <inttypes.h>
#include <sched.h>
#include <string.h>

/* ------------------------------------------------------------ posting */

/* The longest post call (ibv_post_send, or ibv_wr_start to
 * ibv_wr_complete): a post must never wait long, whatever the shim or its
 * daemon do (max_post_ms= in the summary). */
double max_post_s;

static void post_took(double t0)
{
	double d = integ_now_s() - t0;

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
			wr[i].imm_data = htobe32(integ_imm_of(b[i]->seq));
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	t0 = integ_now_s();
	rc = ibv_post_send(A.qp, wr, &bad);
	post_took(t0);
	if (rc)
		integ_fatal("ibv_post_send of %d WRs: %s (bad_wr is WR %d)", n, strerror(rc),
			    bad ? (int)(bad - wr) : -1);
}

static void post_ex(struct msg **b, int n)
{
	struct ibv_qp_ex *qx = A.qpx;
	double t0 = integ_now_s();
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
			ibv_wr_rdma_write_imm(qx, B.mr->rkey, m->raddr, htobe32(integ_imm_of(m->seq)));
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
		integ_fatal("ibv_wr_complete of %d WRs: %s", n, strerror(rc));
}

void integ_run(void)
{
	unsigned kmax = opt.depth < MAX_BATCH ? opt.depth : MAX_BATCH;
	struct msg pend, batch[MAX_BATCH];
	int have_pend = 0;
	struct gen g;

	integ_gen_init(&g);
	last_progress = integ_now_s();
	for (;;) {
		unsigned k = 1 + (unsigned)(integ_rnd() % kmax), n = 0;
		struct msg *b[MAX_BATCH];
		uint64_t sum = 0;

		while (n < k) {
			if (!have_pend) {
				if (integ_gen_done(&g))
					break;
				integ_gen_msg(&g, &pend);
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
			batch[i].signaled = i + 1 == n || integ_rnd() % 2;
		while (fifo_n + n > opt.depth)
			integ_wait_progress();
		for (unsigned i = 0; i < n; i++)
			b[i] = integ_place(&batch[i]);
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
		integ_wait_progress();
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
	double t0 = integ_now_s();
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
			integ_fatal("overlap: ibv_wr_complete failed");
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
			integ_fatal("overlap: ibv_post_send failed");
	}
	while (!(got = ibv_poll_cq(A.cq, 1, &wc))) {
		if (integ_now_s() - t0 > STALL_SECONDS)
			integ_fatal("overlap: no completion for %d s", STALL_SECONDS);
		sched_yield();
	}
	if (got < 0 || wc.status != IBV_WC_SUCCESS || wc.wr_id != id + (uint64_t)n - 1)
		integ_fatal("overlap: completion %s, wr_id %" PRIu64 ", want %" PRIu64,
			    got < 0 ? "failed" : ibv_wc_status_str(wc.status), wc.wr_id,
			    id + (uint64_t)n - 1);
}

/* Fill @len bytes at @p from the PRNG. */
static void ovl_fill(uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t w = integ_rnd();

		memcpy(p + i, &w, len - i < 8 ? len - i : 8);
	}
}

void integ_run_overlap(void)
{
	uint8_t *small = A.buf, *big = A.buf + opt.max_size;
	uint64_t stale = 0, overwritten = 0;
	uint32_t len[2] = { OVL_SMALL, opt.max_size };

	if (opt.max_size < 2 * OVL_SMALL)
		integ_fatal("--overlap needs --max-size of at least %u", 2 * OVL_SMALL);
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

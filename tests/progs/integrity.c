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
 * was verified.
 * May call: lib/integrity_* (the run), lib/rc, include/justitia.h,
 * libibverbs and libc. */
#include <getopt.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "justitia.h"
#include "lib/integrity.h"

/* ------------------------------------------------------------ verbs setup */

static void setup(struct rc_side *s, const char *dev, int extended)
{
	struct ibv_qp_cap cap = { .max_send_wr = opt.depth, .max_recv_wr = opt.depth,
				  .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE };
	uint64_t size = ((2ull * opt.max_size + RING_SLACK) + 4095) & ~4095ull;
	char why[256];

	if (rc_side_open(s, dev, opt.gidx, (int)(2 * opt.depth + 8), size, &cap, extended, why,
			 sizeof(why)))
		integ_fatal("%s", why);
}

static void connect_qp(struct rc_side *s, const struct rc_side *peer)
{
	struct rc_peer p = { .qpn = peer->qp->qp_num, .gid = peer->gid, .gidx = opt.gidx,
			     .access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ,
			     .rd_atomic = 4, .timeout = (uint8_t)opt.timeout };
	const char *step;

	if (rc_connect(s->qp, &p, &step))
		integ_fatal("%s: %s failed", s->name, step);
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
				integ_fatal("-T must be 1..31");
			break;
		case 'A':
			if (!strcmp(optarg, "ex"))
				opt.extended = 1;
			else if (!strcmp(optarg, "classic"))
				opt.extended = 0;
			else
				integ_fatal("--api must be classic or ex");
			break;
		case 'B': opt.bytes = integ_parse_size(optarg, "--bytes"); break;
		case 'M':
			v = integ_parse_size(optarg, "--max-size");
			if (v < 16 || v > (1u << 30))
				integ_fatal("--max-size must be 16..1G");
			opt.max_size = (uint32_t)v;
			break;
		case 'D':
			opt.depth = (unsigned)atoi(optarg);
			if (opt.depth < 1 || opt.depth > MAX_DEPTH)
				integ_fatal("--depth must be 1..%d", MAX_DEPTH);
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
	t0 = integ_now_s();
	if (opt.overlap)
		integ_run_overlap();
	else
		integ_run();
	el = integ_now_s() - t0;
	integ_write_order();

	for (int op = 0; op < OP_MAX; op++)
		total += st.bytes[op];
	printf("integrity: api=%s seed=%" PRIu64 " max_size=%u depth=%u msgs=%" PRIu64,
	       opt.extended ? "ex" : "classic", opt.seed, opt.max_size, opt.depth,
	       st.msgs[0] + st.msgs[1] + st.msgs[2] + st.msgs[3]);
	for (int op = 0; op < OP_MAX; op++)
		printf(" %s=%" PRIu64 "/%" PRIu64, integ_op_short[op], st.msgs[op], st.bytes[op]);
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

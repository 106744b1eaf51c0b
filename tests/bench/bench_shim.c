// SPDX-License-Identifier: MIT
/* bench_shim: the shim's own cost on the post path, measured on the host
 * against a fake provider context, so that the NIC is out of the picture.
 *
 *   bench_shim [ITERATIONS]
 *
 * Prints ns per ibv_post_send for: the fake provider called directly (the
 * baseline), a latency-class QP through the shim (target: one predictable
 * branch), an unpaced bandwidth QP (counting only), and a paced bandwidth
 * QP whose tokens are always there (token take + bookkeeping + post: the
 * per-chunk cost; target <= 100 ns, so one core could pace 400 Gbit/s in
 * 5 KB chunks), and a bandwidth QP the daemon manages in pace mode off
 * (direct, through the window: what a lone flow pays; the window is made
 * too large to fill, so this is a post between two tags), with the poll
 * path once such a QP exists (its send queue is counted).  Run it under
 * `valgrind --tool=callgrind --toggle-collect=run_latency` for instruction
 * counts (see make bench).
 * Numbers, never pass/fail: these machines are noisy. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../shim-all.h"

static unsigned long sink;

__attribute__((noinline)) static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
						 struct ibv_send_wr **bad)
{
	sink += wr->wr_id;
	return 0;
}

/* one successful send completion of the unmanaged bandwidth QP per poll */
__attribute__((noinline)) static int fake_poll_cq(struct ibv_cq *c, int n, struct ibv_wc *wc)
{
	wc->wr_id = sink++;
	wc->status = IBV_WC_SUCCESS;
	wc->opcode = IBV_WC_RDMA_WRITE;
	wc->qp_num = 2;
	wc->byte_len = 0;
	return 1;
}

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct ibv_device dev = { .name = "fake0" };
static struct verbs_context vctx;
static struct ibv_cq cq;
static struct ibv_qp qp_lat, qp_bw, qp_paced, qp_off;
static struct {
	struct jst_shm_global g;
	struct jst_flow_ctl slot[2];
} gseg;
static struct {
	struct jst_shm_client c;
	struct jst_flow_stats st[2];
} cseg;

/* The baseline calls the provider through a pointer, as ibv_post_send does. */
static int (*volatile provider)(struct ibv_qp *, struct ibv_send_wr *,
				struct ibv_send_wr **) = fake_post_send;

/* Separate, non-inlined loops so callgrind can attribute each. */
__attribute__((noinline)) static void run_direct(struct ibv_send_wr *wr, long n)
{
	struct ibv_send_wr *bad;

	for (long i = 0; i < n; i++)
		provider(&qp_lat, wr, &bad);
}

__attribute__((noinline)) static void run_latency(struct ibv_send_wr *wr, long n)
{
	struct ibv_send_wr *bad;

	for (long i = 0; i < n; i++)
		ibv_post_send(&qp_lat, wr, &bad);
}

__attribute__((noinline)) static void run_counted(struct ibv_send_wr *wr, long n)
{
	struct ibv_send_wr *bad;

	for (long i = 0; i < n; i++)
		ibv_post_send(&qp_bw, wr, &bad);
}

/* the same QP with JUSTITIA_STATS set (run with shim_count_all = 1) */
__attribute__((noinline)) static void run_stats(struct ibv_send_wr *wr, long n)
{
	struct ibv_send_wr *bad;

	for (long i = 0; i < n; i++)
		ibv_post_send(&qp_bw, wr, &bad);
}

__attribute__((noinline)) static void run_paced(struct ibv_send_wr *wr, long n)
{
	struct ibv_send_wr *bad;

	for (long i = 0; i < n; i++)
		ibv_post_send(&qp_paced, wr, &bad);
}

/* a managed QP in pace mode off: direct, windowed */
__attribute__((noinline)) static void run_off(struct ibv_send_wr *wr, long n)
{
	struct ibv_send_wr *bad;

	for (long i = 0; i < n; i++)
		ibv_post_send(&qp_off, wr, &bad);
}

static int (*volatile provider_poll)(struct ibv_cq *, int, struct ibv_wc *) = fake_poll_cq;

__attribute__((noinline)) static void run_poll_direct(struct ibv_send_wr *wr, long n)
{
	struct ibv_wc wc;

	for (long i = 0; i < n; i++)
		provider_poll(&cq, 1, &wc);
}

__attribute__((noinline)) static void run_poll(struct ibv_send_wr *wr, long n)
{
	struct ibv_wc wc;

	for (long i = 0; i < n; i++)
		ibv_poll_cq(&cq, 1, &wc);
}

__attribute__((noinline)) static void run_poll_stats(struct ibv_send_wr *wr, long n)
{
	struct ibv_wc wc;

	for (long i = 0; i < n; i++)
		ibv_poll_cq(&cq, 1, &wc);
}

/* once a managed QP's send queue is counted (shim_sq_watched) */
__attribute__((noinline)) static void run_poll_managed(struct ibv_send_wr *wr, long n)
{
	struct ibv_wc wc;

	for (long i = 0; i < n; i++)
		ibv_poll_cq(&cq, 1, &wc);
}

static void qp_init(struct ibv_qp *qp, uint32_t qpn)
{
	qp->context = &vctx.context;
	qp->qp_num = qpn;
	qp->qp_type = IBV_QPT_RC;
	qp->send_cq = &cq;
}

/* Play the daemon for @q: flow @flow_id in slot @i with @flags, and let
 * the shim decide its mode from it. */
static void manage(struct shim_qp *q, int i, uint32_t flow_id, uint32_t flags)
{
	atomic_store(&gseg.slot[i].state, JST_SLOT_ACTIVE);
	atomic_store(&gseg.slot[i].flow_id, flow_id);
	atomic_store(&gseg.slot[i].flags, flags);
	q->flow_id = flow_id;
	atomic_store(&q->slot, &gseg.slot[i]);
	atomic_store(&q->shm_stats, &cseg.st[i]);
	shim_pace_update(q);
}

static double per_op(void (*fn)(struct ibv_send_wr *, long), struct ibv_send_wr *wr, long n)
{
	uint64_t t0 = mono();

	fn(wr, n);
	return (double)(mono() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000000;
	struct ibv_sge sge = { .addr = 0x1000, .length = 5120 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE };
	struct shim_qp *q;
	double base, lat, cnt, stats, paced, off, pbase, poll, pstats, pmanaged;

	setenv("JUSTITIA_SOCKET", "/nonexistent", 1);
	vctx.sz = sizeof(vctx);
	vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	vctx.context.device = &dev;
	vctx.context.ops.post_send = fake_post_send;
	vctx.context.ops.poll_cq = fake_poll_cq;
	cq.context = &vctx.context;
	qp_init(&qp_lat, 1);
	qp_init(&qp_bw, 2);
	qp_init(&qp_paced, 3);
	qp_init(&qp_off, 4);

	q = shim_ops_track_qp(&qp_lat, "ibv_create_qp", 128);
	atomic_store(&q->cls, JST_CLASS_LATENCY);
	shim_pace_update(q);
	shim_ops_track_qp(&qp_bw, "ibv_create_qp", 128);
	q = shim_ops_track_qp(&qp_paced, "ibv_create_qp", 128);
	/* play the daemon: a rate so high that a token is always there */
	pthread_mutex_lock(&cl.lock);
	atomic_store(&cl.global, &gseg.g);
	cl.need_fail_open = 0;
	cl.retry_at_ns = UINT64_MAX;
	pthread_mutex_unlock(&cl.lock);
	atomic_store(&gseg.g.flags, JST_G_RUNNING);
	atomic_store(&gseg.g.heartbeat_ns, mono() + 3600ull * 1000000000ull);
	atomic_store(&gseg.slot[0].rate_bps, 1000000000000000ull); /* 1 Pbit/s */
	manage(q, 0, 5, JST_F_PACE);
	if (atomic_load(&q->direct)) {
		fprintf(stderr, "bench_shim: the paced QP did not switch to pacing\n");
		return 1;
	}

	base = per_op(run_direct, &wr, n);
	lat = per_op(run_latency, &wr, n);
	cnt = per_op(run_counted, &wr, n);
	paced = per_op(run_paced, &wr, n);
	pbase = per_op(run_poll_direct, &wr, n);
	poll = per_op(run_poll, &wr, n);
	shim_count_all = 1; /* JUSTITIA_STATS: every QP counted */
	stats = per_op(run_stats, &wr, n);
	pstats = per_op(run_poll_stats, &wr, n);
	shim_count_all = 0;
	/* last, as it changes the poll path for every CQ: a QP the daemon
	 * manages in pace mode off */
	shim_window_bytes = 1ull << 50;
	q = shim_ops_track_qp(&qp_off, "ibv_create_qp", 128);
	manage(q, 1, 6, 0);
	if (!atomic_load(&q->direct) || !atomic_load(&q->win.on)) {
		fprintf(stderr, "bench_shim: the managed QP is not direct and windowed\n");
		return 1;
	}
	off = per_op(run_off, &wr, n);
	pmanaged = per_op(run_poll_managed, &wr, n);
	printf("post path cost per ibv_post_send, %ld iterations (fake provider):\n", n);
	printf("  provider called directly          %6.1f ns\n", base);
	printf("  latency QP through the shim       %6.1f ns  (+%.1f ns)\n", lat, lat - base);
	printf("  bandwidth QP, no daemon           %6.1f ns  (+%.1f ns)\n", cnt, cnt - base);
	printf("  the same, JUSTITIA_STATS set      %6.1f ns  (+%.1f ns)\n", stats, stats - base);
	printf("  bandwidth QP, paced (per chunk)   %6.1f ns  (+%.1f ns)\n", paced, paced - base);
	printf("  bandwidth QP, managed, mode off   %6.1f ns  (+%.1f ns)\n", off, off - base);
	printf("poll path cost per ibv_poll_cq returning one completion:\n");
	printf("  provider called directly          %6.1f ns\n", pbase);
	printf("  through the shim (no daemon)      %6.1f ns  (+%.1f ns)\n", poll, poll - pbase);
	printf("  the same, JUSTITIA_STATS set      %6.1f ns  (+%.1f ns)\n", pstats, pstats - pbase);
	printf("  with a managed QP in the process  %6.1f ns  (+%.1f ns)\n", pmanaged,
	       pmanaged - pbase);
	printf("  => one core paces %.0f Gbit/s in 5 KB chunks\n",
	       5120.0 * 8 / (paced > 0 ? paced : 1));
	return sink == 0;
}

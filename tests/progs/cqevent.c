// SPDX-License-Identifier: MIT
/* cqevent: an application that waits for its completions with a
 * completion channel, as event-driven applications do.
 *
 *   cqevent [-a DEV] [-b DEV] [-g GID_INDEX] [--ex] [--len BYTES] [--mr BYTES]
 *
 * One RC QP pair in one process, A on -a (default rxe1) posting to B on -b
 * (default rxe0).  A posts one RDMA WRITE of --len bytes (default 1 MiB)
 * into a region of B of --mr bytes (default 512 KiB): natively it fails
 * whole (remote access error); split by Justitia, its first chunks land and
 * a later one fails, and the shim makes up the application's completion.
 * A arms its CQ, then waits on the channel's descriptor (up to 30 s: a
 * deadline for a hang, not a measurement), takes the event and polls --
 * with ibv_poll_cq, or with ibv_start_poll & co. on an ibv_create_cq_ex CQ
 * (--ex).  Prints "event wr_id=W status=S" and exits 0 when the completion
 * of the WRITE came with an event; 1 if no event came, 2 on setup errors.
 * May call: lib/rc (RC setup), libibverbs and libc. */
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/rc.h"

#define WR_ID 0x4242

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "cqevent: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

struct dev {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
};

static void dev_open(struct dev *d, const char *name, int gidx)
{
	char why[128];

	d->name = name;
	if (rc_open_device(name, &d->ctx, why, sizeof(why)))
		die("cannot open device %s", name);
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd || ibv_query_gid(d->ctx, 1, gidx, &d->gid))
		die("%s: no PD or GID %d", name, gidx);
}

static struct ibv_qp *make_qp(struct dev *d, struct ibv_cq *cq)
{
	struct ibv_qp_cap cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				  .max_recv_sge = 1 };
	struct ibv_qp *qp = rc_create_qp(d->pd, cq, &cap);

	if (!qp)
		die("%s: ibv_create_qp: %s", d->name, strerror(errno));
	return qp;
}

static void connect_qp(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *dgid, int gidx)
{
	struct rc_peer p = { .qpn = dest, .gid = *dgid, .gidx = gidx,
			     .access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			     .rd_atomic = 1, .timeout = 14 };
	const char *step;

	if (rc_connect(qp, &p, &step))
		die("%s failed", step);
}

/* Poll A's CQ for the WRITE's completion; 1 when found (*status set). */
static int reap(struct ibv_cq *cq, struct ibv_cq_ex *cqx, int *status)
{
	if (cqx) {
		struct ibv_poll_cq_attr pa = { 0 };
		int found = 0, rc = ibv_start_poll(cqx, &pa);

		if (rc == ENOENT)
			return 0;
		if (rc)
			die("ibv_start_poll: %s", strerror(rc));
		do {
			printf("completion wr_id=%#llx status=%s opcode=%d\n",
			       (unsigned long long)cqx->wr_id, ibv_wc_status_str(cqx->status),
			       (int)ibv_wc_read_opcode(cqx));
			if (cqx->wr_id == WR_ID) {
				*status = cqx->status;
				found = 1;
			}
		} while (!ibv_next_poll(cqx));
		ibv_end_poll(cqx);
		return found;
	}
	for (;;) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			die("ibv_poll_cq failed");
		if (!n)
			return 0;
		printf("completion wr_id=%#llx status=%s opcode=%d\n", (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status), (int)wc.opcode);
		if (wc.wr_id == WR_ID) {
			*status = wc.status;
			return 1;
		}
	}
}

int main(int argc, char **argv)
{
	const char *dev_a = "rxe1", *dev_b = "rxe0";
	size_t len = 1 << 20, mr_len = 512 << 10;
	int gidx = 1, ex = 0, status = -1, found = 0, c;
	static const struct option lo[] = { { "ex", no_argument, NULL, 'x' },
					     { "len", required_argument, NULL, 'l' },
					     { "mr", required_argument, NULL, 'm' },
					     { NULL, 0, NULL, 0 } };
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq_a, *cq_b;
	struct ibv_cq_ex *cqx = NULL;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mra, *mrb;
	struct dev a, b;
	char *buf_a, *buf_b;

	while ((c = getopt_long(argc, argv, "a:b:g:", lo, NULL)) != -1) {
		switch (c) {
		case 'a': dev_a = optarg; break;
		case 'b': dev_b = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'x': ex = 1; break;
		case 'l': len = strtoul(optarg, NULL, 0); break;
		case 'm': mr_len = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: cqevent [-a DEV] [-b DEV] [-g GID] [--ex] "
					"[--len BYTES] [--mr BYTES]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	dev_open(&a, dev_a, gidx);
	dev_open(&b, dev_b, gidx);
	ch = ibv_create_comp_channel(a.ctx);
	if (!ch)
		die("ibv_create_comp_channel failed");
	if (ex) {
		struct ibv_cq_init_attr_ex ca = { .cqe = 64, .channel = ch,
						  .wc_flags = IBV_WC_STANDARD_FLAGS };

		cqx = ibv_create_cq_ex(a.ctx, &ca);
		if (!cqx)
			die("ibv_create_cq_ex: %s", strerror(errno));
		cq_a = ibv_cq_ex_to_cq(cqx);
	} else {
		cq_a = ibv_create_cq(a.ctx, 64, NULL, ch, 0);
	}
	cq_b = ibv_create_cq(b.ctx, 64, NULL, NULL, 0);
	if (!cq_a || !cq_b)
		die("ibv_create_cq failed");
	qa = make_qp(&a, cq_a);
	qb = make_qp(&b, cq_b);
	buf_a = calloc(1, len);
	buf_b = calloc(1, mr_len);
	mra = ibv_reg_mr(a.pd, buf_a, len, IBV_ACCESS_LOCAL_WRITE);
	mrb = ibv_reg_mr(b.pd, buf_b, mr_len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!buf_a || !buf_b || !mra || !mrb)
		die("memory registration failed");
	connect_qp(qb, qa->qp_num, &a.gid, gidx);
	connect_qp(qa, qb->qp_num, &b.gid, gidx);

	if (ibv_req_notify_cq(cq_a, 0))
		die("ibv_req_notify_cq failed");
	{
		struct ibv_sge sge = { .addr = (uintptr_t)buf_a, .length = (uint32_t)len,
				       .lkey = mra->lkey };
		struct ibv_send_wr wr = { .wr_id = WR_ID, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED,
					  .wr.rdma = { .remote_addr = (uintptr_t)buf_b,
						       .rkey = mrb->rkey } },
				    *bad = NULL;

		if (ibv_post_send(qa, &wr, &bad))
			die("ibv_post_send failed");
	}
	/* the application sleeps until the channel says there is something */
	for (int waited = 0; !found && waited < 30;) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		int n = poll(&pfd, 1, 1000);

		if (n < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (n <= 0) {
			waited++;
			continue;
		}
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
			die("ibv_get_cq_event failed");
		ibv_ack_cq_events(ev_cq, 1);
		if (ibv_req_notify_cq(cq_a, 0))
			die("ibv_req_notify_cq failed");
		found = reap(cq_a, cqx, &status);
	}
	if (!found) {
		int late = reap(cq_a, cqx, &status);

		printf("no event in 30 s%s\n", late ? " (the completion was there: polled, not signalled)"
						   : "");
		return 1;
	}
	printf("event wr_id=%#x status=%s\n", WR_ID, ibv_wc_status_str((enum ibv_wc_status)status));
	/* teardown errors do not matter here: the process ends */
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	return 0;
}

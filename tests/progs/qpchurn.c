// SPDX-License-Identifier: MIT
/* qpchurn: create and destroy many RC QPs, as short-lived applications do
 * (for the daemon's churn test, tests/vm/cases/57-churn.sh).
 *
 *   qpchurn -d DEVICE [-n QPS] [-k KEEP]
 *
 * Opens DEVICE (default rxe0), then N times (default 200): creates an RC QP,
 * moves it to INIT (port 1), and destroys it once KEEP (default 4) newer
 * ones exist, so that a few QPs are alive at once; the last KEEP are
 * destroyed before it exits.  Run it under the shim: each QP is registered
 * with justitiad and unregistered again (and, in the bandwidth class, gets
 * and loses a split QP).  Prints "churned N QPs" and exits 0, or says what
 * failed and exits 1.
 * May call: lib/rc (device, QP, INIT), libibverbs and libc. */
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/rc.h"

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_cap cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				  .max_recv_sge = 1 };
	struct ibv_qp *qp = rc_create_qp(pd, cq, &cap);

	if (!qp) {
		fprintf(stderr, "qpchurn: ibv_create_qp: %s\n", strerror(errno));
		return NULL;
	}
	errno = -rc_init(qp, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (errno) {
		fprintf(stderr, "qpchurn: ibv_modify_qp to INIT: %s\n", strerror(errno));
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

int main(int argc, char **argv)
{
	const char *dev = "rxe0";
	long n = 200, keep = 4, made = 0;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp **ring = NULL;
	char why[128];
	int c, rc = 1;

	while ((c = getopt(argc, argv, "d:n:k:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'n': n = strtol(optarg, NULL, 10); break;
		case 'k': keep = strtol(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: qpchurn -d DEVICE [-n QPS] [-k KEEP]\n");
			return 2;
		}
	}
	if (n < 1 || keep < 1 || keep > 1024) {
		fprintf(stderr, "qpchurn: QPS and KEEP (1..1024) must be positive\n");
		return 2;
	}
	if (rc_open_device(dev, &ctx, why, sizeof(why))) {
		fprintf(stderr, "qpchurn: cannot open %s\n", dev);
		goto out;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	ring = calloc((size_t)keep, sizeof(*ring));
	if (!pd || !cq || !ring) {
		fprintf(stderr, "qpchurn: PD, CQ or memory: %s\n", strerror(errno));
		goto out;
	}
	for (; made < n; made++) {
		struct ibv_qp **slot = &ring[made % keep];

		if (*slot) {
			if (ibv_destroy_qp(*slot)) {
				fprintf(stderr, "qpchurn: ibv_destroy_qp failed\n");
				goto out;
			}
			*slot = NULL;
		}
		*slot = make_qp(pd, cq);
		if (!*slot)
			goto out;
	}
	rc = 0;
out:
	for (long i = 0; ring && i < keep; i++)
		if (ring[i] && ibv_destroy_qp(ring[i]))
			rc = 1;
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	free(ring);
	if (!rc)
		printf("churned %ld QPs\n", made);
	return rc;
}

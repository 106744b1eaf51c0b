// SPDX-License-Identifier: MIT
/* RC queue pairs for the test programs (see rc.h): device by name, QP
 * creation, INIT -> RTR -> RTS.  The one copy of what every program that
 * connects two devices in one process did for itself.
 * May call: libibverbs and libc only; never prints, never exits. */
#include "rc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rc_open_device(const char *name, struct ibv_context **ctx, char *why, size_t len)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	*ctx = NULL;
	if (!list) {
		snprintf(why, len, "no RDMA devices");
		return -ENXIO;
	}
	for (int i = 0; list[i] && !*ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			*ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!*ctx) {
		snprintf(why, len, "cannot open device %s", name);
		return -ENODEV;
	}
	return 0;
}

struct ibv_qp *rc_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, const struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				      .cap = *cap, .sq_sig_all = 0 };

	return ibv_create_qp(pd, &a);
}

int rc_create_qp_ex(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
		    const struct ibv_qp_cap *cap, struct ibv_qp **qp, struct ibv_qp_ex **qpx)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .cap = *cap,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				  IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ,
	};

	*qpx = NULL;
	*qp = ibv_create_qp_ex(ctx, &a);
	if (!*qp)
		return errno ? -errno : -EINVAL;
	*qpx = ibv_qp_to_qp_ex(*qp);
	return *qpx ? 0 : -EINVAL;
}

int rc_init(struct ibv_qp *qp, int access)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = (unsigned)access };

	return -ibv_modify_qp(qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int rc_connect(struct ibv_qp *qp, const struct rc_peer *peer, const char **step)
{
	struct ibv_qp_attr a;
	int rc;

	*step = "INIT";
	rc = rc_init(qp, peer->access);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qpn;
	a.max_dest_rd_atomic = peer->rd_atomic;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)peer->gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	*step = "RTR";
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return -rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = peer->timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = peer->rd_atomic;
	*step = "RTS";
	return -ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int rc_side_open(struct rc_side *s, const char *dev, int gidx, int cqe, uint64_t size,
		 const struct ibv_qp_cap *cap, int extended, char *why, size_t len)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	s->name = dev;
	if (rc_open_device(dev, &s->ctx, why, len))
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, cqe, NULL, NULL, 0);
	s->size = size;
	s->buf = aligned_alloc(4096, size);
	if (!s->pd || !s->cq || !s->buf) {
		snprintf(why, len, "%s: setup failed", dev);
		return -1;
	}
	s->mr = ibv_reg_mr(s->pd, s->buf, size, access);
	if (!s->mr) {
		snprintf(why, len, "%s: ibv_reg_mr of %" PRIu64 " bytes failed", dev, size);
		return -1;
	}
	if (ibv_query_gid(s->ctx, 1, gidx, &s->gid)) {
		snprintf(why, len, "%s: ibv_query_gid(%d) failed", dev, gidx);
		return -1;
	}
	if (extended) {
		if (rc_create_qp_ex(s->ctx, s->pd, s->cq, cap, &s->qp, &s->qpx)) {
			snprintf(why, len, "%s: ibv_create_qp_ex/ibv_qp_to_qp_ex failed", dev);
			return -1;
		}
	} else {
		s->qp = rc_create_qp(s->pd, s->cq, cap);
		if (!s->qp) {
			snprintf(why, len, "%s: ibv_create_qp failed", dev);
			return -1;
		}
	}
	return 0;
}

void rc_side_close(struct rc_side *s)
{
	ibv_destroy_qp(s->qp);
	ibv_dereg_mr(s->mr);
	ibv_destroy_cq(s->cq);
	ibv_dealloc_pd(s->pd);
	ibv_close_device(s->ctx);
	free(s->buf);
}

// SPDX-License-Identifier: MIT
/* justbench verbs resources: devices, QPs with their CQ and buffer, connection, completions.
 * May call: bench_wire (endpoint descriptions), include/justitia.h (the shim's
 * optional API), libibverbs and libc. */
#include "bench_verbs.h"
#include "bench_err.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#if defined(__has_include)
#if __has_include("justitia.h")
#include "justitia.h"
#define BENCH_HAVE_JUSTITIA_H 1
#endif
#endif
#ifndef BENCH_HAVE_JUSTITIA_H
/* libjustitia's public call, present only when the shim is preloaded. */
extern int justitia_set_qp_class(struct ibv_qp *qp, int cls) __attribute__((weak));
#endif

#define PAGE	      4096
#define RD_ATOMIC_MAX 16

bool bench_classify_available(void)
{
	return justitia_set_qp_class != NULL;
}

static bool gid_is_ipv4(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g->raw, prefix, sizeof(prefix)) == 0;
}

static int pick_gid(struct bench_dev *d)
{
	int v2 = -1;

	for (int i = 0; i < d->port.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(d->ctx, d->port_num, (uint32_t)i, &e, 0))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (gid_is_ipv4(&e.gid))
			return i;
		if (v2 < 0)
			v2 = i;
	}
	return v2 < 0 ? 0 : v2;
}

int bench_dev_open(struct bench_dev *d, const char *name, int port, int gid_index, char *err,
		   size_t errlen)
{
	struct ibv_device **list;
	int n = 0, rc;

	memset(d, 0, sizeof(*d));
	list = ibv_get_device_list(&n);
	if (!list)
		return bench_seterr(err, errlen, -errno, "cannot list RDMA devices: %s",
				    strerror(errno));
	for (int i = 0; i < n && !d->ctx; i++) {
		if (name && strcmp(ibv_get_device_name(list[i]), name) != 0)
			continue;
		snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(list[i]));
		d->ctx = ibv_open_device(list[i]);
		if (!d->ctx) {
			rc = -errno;
			ibv_free_device_list(list);
			return bench_seterr(err, errlen, rc ? rc : -ENODEV, "%s: cannot open: %s",
					    d->name, strerror(rc ? -rc : ENODEV));
		}
	}
	ibv_free_device_list(list);
	if (!d->ctx)
		return bench_seterr(err, errlen, -ENODEV,
				    name ? "%s: no such RDMA device" : "%sno RDMA device",
				    name ? name : "");
	d->port_num = (uint8_t)port;
	if (ibv_query_device(d->ctx, &d->attr)) {
		rc = bench_seterr(err, errlen, -EIO, "%s: ibv_query_device failed", d->name);
		goto out_close;
	}
	if (ibv_query_port(d->ctx, d->port_num, &d->port)) {
		rc = bench_seterr(err, errlen, -EINVAL, "%s: no port %d", d->name, port);
		goto out_close;
	}
	if (d->port.state != IBV_PORT_ACTIVE) {
		rc = bench_seterr(err, errlen, -ENETDOWN, "%s: port %d is not active", d->name,
				  port);
		goto out_close;
	}
	d->gid_index = gid_index >= 0 ? gid_index : pick_gid(d);
	if (d->gid_index >= d->port.gid_tbl_len ||
	    ibv_query_gid(d->ctx, d->port_num, d->gid_index, &d->gid)) {
		rc = bench_seterr(err, errlen, -EINVAL, "%s: no GID index %d on port %d", d->name,
				  d->gid_index, port);
		goto out_close;
	}
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd) {
		rc = bench_seterr(err, errlen, -ENOMEM, "%s: cannot allocate a PD", d->name);
		goto out_close;
	}
	return 0;
out_close:
	ibv_close_device(d->ctx);
	d->ctx = NULL;
	return rc;
}

void bench_dev_close(struct bench_dev *d)
{
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->ctx)
		ibv_close_device(d->ctx);
	memset(d, 0, sizeof(*d));
}

static uint32_t clamp_u32(uint32_t v, int max)
{
	return max > 0 && v > (uint32_t)max ? (uint32_t)max : v;
}

int bench_qp_create(struct bench_qp *q, struct bench_dev *d, const struct bench_qp_cfg *cfg,
		    char *err, size_t errlen)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC };
	uint32_t psn;
	int rc, flags;

	memset(q, 0, sizeof(*q));
	q->len = (cfg->buf_len + PAGE - 1) / PAGE * PAGE;
	q->buf = aligned_alloc(PAGE, q->len);
	if (!q->buf)
		return bench_seterr(err, errlen, -ENOMEM, "out of memory for a %zu-byte buffer",
				    q->len);
	memset(q->buf, 0x5a, q->len);
	q->mr =
	    ibv_reg_mr(d->pd, q->buf, q->len,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!q->mr) {
		rc = bench_seterr(err, errlen, -errno, "%s: cannot register %zu bytes: %s", d->name,
				  q->len, strerror(errno));
		goto out_free;
	}
	if (cfg->event) {
		q->ch = ibv_create_comp_channel(d->ctx);
		if (!q->ch) {
			rc = bench_seterr(err, errlen, -EIO,
					  "%s: cannot create a completion channel", d->name);
			goto out_dereg;
		}
		flags = fcntl(q->ch->fd, F_GETFL);
		if (flags < 0 || fcntl(q->ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
			rc = bench_seterr(err, errlen, -errno, "completion channel: %s",
					  strerror(errno));
			goto out_channel;
		}
	}
	q->cq = ibv_create_cq(d->ctx, (int)clamp_u32(cfg->cq_depth + 8, d->attr.max_cqe), NULL,
			      q->ch, 0);
	if (!q->cq) {
		rc = bench_seterr(err, errlen, -EIO, "%s: cannot create a CQ of %u entries",
				  d->name, cfg->cq_depth + 8);
		goto out_channel;
	}
	ia.send_cq = q->cq;
	ia.recv_cq = q->cq;
	ia.cap.max_send_wr = clamp_u32(cfg->send_depth + 1, d->attr.max_qp_wr);
	ia.cap.max_recv_wr = clamp_u32(cfg->recv_depth ? cfg->recv_depth : 1, d->attr.max_qp_wr);
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = cfg->inline_size;
	q->qp = ibv_create_qp(d->pd, &ia);
	if (!q->qp && cfg->inline_size) {
		ia.cap.max_inline_data = 0;
		q->qp = ibv_create_qp(d->pd, &ia);
	}
	if (!q->qp) {
		rc = bench_seterr(err, errlen, -errno ? -errno : -EIO,
				  "%s: cannot create a QP (%u send, %u receive entries): %s",
				  d->name, ia.cap.max_send_wr, ia.cap.max_recv_wr,
				  strerror(errno ? errno : EIO));
		goto out_cq;
	}
	if (ia.cap.max_send_wr < cfg->send_depth) {
		rc = bench_seterr(err, errlen, -EINVAL,
				  "%s: %u messages in flight per QP, at most %u", d->name,
				  cfg->send_depth, ia.cap.max_send_wr);
		goto out_qp;
	}
	q->max_inline = ia.cap.max_inline_data;
	q->max_recv = ia.cap.max_recv_wr;
	if (getrandom(&psn, sizeof(psn), 0) != sizeof(psn))
		psn = (uint32_t)(uintptr_t)q;
	q->psn = psn & 0xffffff;
	if (cfg->cls >= 0 && justitia_set_qp_class) {
		/* 0, or an errno value (justitia.h); take either sign */
		rc = justitia_set_qp_class(q->qp, cfg->cls);
		q->classified = rc == 0 ? 1 : rc > 0 ? -rc : rc;
	}
	return 0;
out_qp:
	ibv_destroy_qp(q->qp);
out_cq:
	ibv_destroy_cq(q->cq);
out_channel:
	if (q->ch)
		ibv_destroy_comp_channel(q->ch);
out_dereg:
	ibv_dereg_mr(q->mr);
out_free:
	free(q->buf);
	memset(q, 0, sizeof(*q));
	return rc;
}

void bench_qp_destroy(struct bench_qp *q)
{
	if (q->qp)
		ibv_destroy_qp(q->qp);
	if (q->cq) {
		if (q->unacked)
			ibv_ack_cq_events(q->cq, q->unacked);
		ibv_destroy_cq(q->cq);
	}
	if (q->ch)
		ibv_destroy_comp_channel(q->ch);
	if (q->mr)
		ibv_dereg_mr(q->mr);
	free(q->buf);
	memset(q, 0, sizeof(*q));
}

void bench_qp_local(const struct bench_qp *q, const struct bench_dev *d, struct bench_wire_qp *out)
{
	memset(out, 0, sizeof(*out));
	out->qpn = q->qp->qp_num;
	out->psn = q->psn;
	out->lid = d->port.lid;
	memcpy(out->gid, d->gid.raw, sizeof(out->gid));
	out->rkey = q->mr->rkey;
	out->addr = (uintptr_t)q->buf;
	out->len = (uint32_t)(q->len > UINT32_MAX ? UINT32_MAX : q->len);
}

int bench_qp_connect(struct bench_qp *q, const struct bench_dev *d,
		     const struct bench_wire_qp *remote, int mtu, char *err, size_t errlen)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = d->port_num,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	int rc;

	rc = ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					      IBV_QP_ACCESS_FLAGS);
	if (rc)
		return bench_seterr(err, errlen, -rc, "%s: QP %u to INIT: %s", d->name,
				    q->qp->qp_num, strerror(rc));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)(mtu < (int)d->port.active_mtu ? mtu : (int)d->port.active_mtu);
	a.dest_qp_num = remote->qpn;
	a.rq_psn = remote->psn;
	a.max_dest_rd_atomic = (uint8_t)clamp_u32(RD_ATOMIC_MAX, d->attr.max_qp_rd_atom);
	a.min_rnr_timer = 1; /* 0.01 ms */
	a.ah_attr.port_num = d->port_num;
	a.ah_attr.dlid = remote->lid;
	if (d->port.link_layer == IBV_LINK_LAYER_ETHERNET || d->port.lid == 0) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, remote->gid, sizeof(remote->gid));
		a.ah_attr.grh.sgid_index = (uint8_t)d->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	rc = ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return bench_seterr(err, errlen, -rc, "%s: QP %u to RTR (peer QP %u): %s", d->name,
				    q->qp->qp_num, remote->qpn, strerror(rc));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14; /* 67 ms */
	a.retry_cnt = 7;
	a.rnr_retry = 7; /* forever */
	a.sq_psn = q->psn;
	a.max_rd_atomic = (uint8_t)clamp_u32(RD_ATOMIC_MAX, d->attr.max_qp_init_rd_atom);
	rc = ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					      IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc)
		return bench_seterr(err, errlen, -rc, "%s: QP %u to RTS: %s", d->name,
				    q->qp->qp_num, strerror(rc));
	return 0;
}

int bench_qp_post_recv(struct bench_qp *q, unsigned n, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)q->buf, .length = len, .lkey = q->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	for (unsigned i = 0; i < n; i++) {
		int rc = ibv_post_recv(q->qp, &wr, &bad);

		if (rc)
			return -rc;
	}
	return 0;
}

int bench_qp_poll(struct bench_qp *q, struct ibv_wc *wc, int max, int timeout_ms)
{
	struct pollfd pfd;
	struct ibv_cq *cq;
	void *cq_ctx;
	int n, rc;

	n = ibv_poll_cq(q->cq, max, wc);
	if (n || !q->ch)
		return n < 0 ? -EIO : n;
	if (!q->armed) {
		if (ibv_req_notify_cq(q->cq, 0))
			return -EIO;
		q->armed = true;
		/* a completion that came before the arming raises no event */
		n = ibv_poll_cq(q->cq, max, wc);
		if (n)
			return n < 0 ? -EIO : n;
	}
	pfd.fd = q->ch->fd;
	pfd.events = POLLIN;
	rc = poll(&pfd, 1, timeout_ms);
	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	if (rc == 0)
		return 0;
	if (ibv_get_cq_event(q->ch, &cq, &cq_ctx) == 0) {
		q->armed = false;
		if (++q->unacked >= 64) {
			ibv_ack_cq_events(q->cq, q->unacked);
			q->unacked = 0;
		}
	}
	n = ibv_poll_cq(q->cq, max, wc);
	return n < 0 ? -EIO : n;
}

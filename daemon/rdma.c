// SPDX-License-Identifier: MIT
/* The daemon's own verbs resources (see rdma.h): a device and port, RC
 * endpoints for the reference flow, their wire descriptions.
 * May call: libibverbs only. */
#include "rdma.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define RC_TIMEOUT 16      /* 4.096 us * 2^16 = 268 ms per try */
#define RC_RETRY 7
#define RNR_RETRY 7

uint64_t rdma_link_bps(uint8_t speed, uint8_t width)
{
	/* nominal lane rates as ibv_devinfo prints them; RoCE ports map their
	 * Ethernet speed onto these (10 GbE = FDR10 x1, 100 GbE = EDR x4) */
	static const struct {
		uint8_t code;
		uint64_t bps;
	} speeds[] = {
		{ 1, 2500000000ull },   /* SDR */
		{ 2, 5000000000ull },   /* DDR */
		{ 4, 10000000000ull },  /* QDR */
		{ 8, 10000000000ull },  /* FDR10 */
		{ 16, 14000000000ull }, /* FDR */
		{ 32, 25000000000ull }, /* EDR */
		{ 64, 50000000000ull }, /* HDR */
		{ 128, 100000000000ull }, /* NDR */
	}, widths[] = { { 1, 1 }, { 2, 4 }, { 4, 8 }, { 8, 12 }, { 16, 2 } };
	uint64_t lane = 0, lanes = 0;

	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i].code == speed)
			lane = speeds[i].bps;
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
		if (widths[i].code == width)
			lanes = widths[i].bps;
	return lane * lanes;
}

uint64_t rdma_dev_link_bps(struct rdma_dev *d)
{
	struct ibv_port_attr pa;

	if (d->ctx && !ibv_query_port(d->ctx, (uint8_t)d->port, &pa))
		d->link_bps = rdma_link_bps(pa.active_speed, pa.active_width);
	return d->link_bps;
}

static bool gid_zero(const union ibv_gid *g)
{
	static const union ibv_gid zero;

	return !memcmp(g, &zero, sizeof(zero));
}

static bool gid_v4mapped(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, pfx, sizeof(pfx));
}

/* -1: the RoCE v2 IPv4-mapped GID, else RoCE v2, else the first valid one. */
static int pick_gid(struct rdma_dev *d, int want)
{
	struct ibv_port_attr pa;
	int best = -1, rank = 0;

	if (ibv_query_port(d->ctx, (uint8_t)d->port, &pa))
		return -errno;
	if (want >= 0) {
		if (want >= pa.gid_tbl_len)
			return -ERANGE;
		return want;
	}
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		int r;

		if (ibv_query_gid_ex(d->ctx, d->port, (uint32_t)i, &e, 0) || gid_zero(&e.gid))
			continue;
		r = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? (gid_v4mapped(&e.gid) ? 3 : 2) : 1;
		if (r > rank) {
			rank = r;
			best = i;
		}
	}
	return best >= 0 ? best : 0;
}

static bool port_active(struct ibv_context *ctx, unsigned port)
{
	struct ibv_port_attr pa;

	return !ibv_query_port(ctx, (uint8_t)port, &pa) && pa.state == IBV_PORT_ACTIVE;
}

int rdma_dev_open(struct rdma_dev *d, const char *name, unsigned port, int gid_index, char *err,
		  size_t errlen)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	int n, rc = -ENODEV;

	memset(d, 0, sizeof(*d));
	list = ibv_get_device_list(&n);
	if (!list) {
		snprintf(err, errlen, "no RDMA devices: %s", strerror(errno));
		return -ENODEV;
	}
	for (int i = 0; i < n && !d->ctx; i++) {
		struct ibv_device_attr da;
		unsigned p;

		if (name && *name && strcmp(ibv_get_device_name(list[i]), name))
			continue;
		d->ctx = ibv_open_device(list[i]);
		if (!d->ctx)
			continue;
		p = port;
		if (!p && !ibv_query_device(d->ctx, &da))
			for (unsigned k = 1; k <= da.phys_port_cnt && !p; k++)
				if (port_active(d->ctx, k))
					p = k;
		if ((name && *name) || (p && port_active(d->ctx, p))) {
			snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(list[i]));
			d->port = p ? p : 1;
			break;
		}
		ibv_close_device(d->ctx);
		d->ctx = NULL;
	}
	ibv_free_device_list(list);
	if (!d->ctx) {
		snprintf(err, errlen, "%s", name && *name ? "no such RDMA device"
							  : "no RDMA device with an active port");
		return -ENODEV;
	}
	if (ibv_query_port(d->ctx, (uint8_t)d->port, &pa)) {
		rc = -errno;
		snprintf(err, errlen, "%s port %u: %s", d->name, d->port, strerror(errno));
		goto out_close;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		rc = -ENETDOWN;
		snprintf(err, errlen, "%s port %u is not active", d->name, d->port);
		goto out_close;
	}
	d->lid = pa.lid;
	d->mtu = pa.active_mtu;
	d->link_layer = pa.link_layer;
	d->link_bps = rdma_link_bps(pa.active_speed, pa.active_width);
	d->gid_index = pick_gid(d, gid_index);
	if (d->gid_index < 0 || ibv_query_gid(d->ctx, (uint8_t)d->port, d->gid_index, &d->gid)) {
		rc = d->gid_index < 0 ? d->gid_index : -errno;
		snprintf(err, errlen, "%s port %u: no GID %d", d->name, d->port, gid_index);
		goto out_close;
	}
	d->pd = ibv_alloc_pd(d->ctx);
	d->chan = d->pd ? ibv_create_comp_channel(d->ctx) : NULL;
	if (!d->chan) {
		rc = -errno ? -errno : -ENOMEM;
		snprintf(err, errlen, "%s: cannot allocate a PD or completion channel", d->name);
		goto out_close;
	}
	if (fcntl(d->chan->fd, F_SETFL, fcntl(d->chan->fd, F_GETFL) | O_NONBLOCK)) {
		rc = -errno;
		snprintf(err, errlen, "%s: completion channel: %s", d->name, strerror(errno));
		goto out_close;
	}
	return 0;
out_close:
	rdma_dev_close(d);
	return rc;
}

void rdma_dev_close(struct rdma_dev *d)
{
	if (d->chan)
		ibv_destroy_comp_channel(d->chan);
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->ctx)
		ibv_close_device(d->ctx);
	memset(d, 0, sizeof(*d));
}

int rdma_dev_address(const char *name, unsigned port, int gid_index, char *out, size_t outlen,
		     char *err, size_t errlen)
{
	struct rdma_dev d;
	char dev_err[160];
	int rc;

	rc = rdma_dev_open(&d, name, port, gid_index, dev_err, sizeof(dev_err));
	if (rc) {
		snprintf(err, errlen, "the reference device: %s", dev_err);
		return rc;
	}
	if (gid_v4mapped(&d.gid)) {
		inet_ntop(AF_INET, d.gid.raw + 12, out, (socklen_t)outlen);
	} else if (d.link_layer == IBV_LINK_LAYER_ETHERNET && d.gid.raw[0] != 0xfe) {
		inet_ntop(AF_INET6, d.gid.raw, out, (socklen_t)outlen);
	} else {
		snprintf(err, errlen, "%s port %u GID %d is no routable IP address", d.name, d.port,
			 d.gid_index);
		rc = -EADDRNOTAVAIL;
	}
	rdma_dev_close(&d);
	return rc;
}

int rdma_ep_create(struct rdma_ep *e, struct rdma_dev *d, size_t len, bool target, unsigned depth,
		   bool notify, char *err, size_t errlen)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
		.cap = { .max_send_wr = depth, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = (uint8_t)d->port,
				 .qp_access_flags = target ? IBV_ACCESS_REMOTE_WRITE : 0 };
	int rc;

	memset(e, 0, sizeof(*e));
	e->dev = d;
	e->len = len ? len : 64;
	e->depth = depth;
	e->buf = aligned_alloc(4096, (e->len + 4095) & ~(size_t)4095);
	if (!e->buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memset(e->buf, 0, e->len);
	e->mr = ibv_reg_mr(d->pd, e->buf, e->len,
			   IBV_ACCESS_LOCAL_WRITE | (target ? IBV_ACCESS_REMOTE_WRITE : 0));
	e->cq = e->mr ? ibv_create_cq(d->ctx, (int)depth + 1, e, notify ? d->chan : NULL, 0) : NULL;
	if (!e->cq) {
		rc = -(errno ? errno : ENOMEM);
		snprintf(err, errlen, "%s: MR or CQ: %s", d->name, strerror(-rc));
		goto out_destroy;
	}
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(d->pd, &ia);
	if (!e->qp) { /* the provider may not do inline data */
		ia.cap.max_inline_data = 0;
		e->qp = ibv_create_qp(d->pd, &ia);
	}
	if (!e->qp) {
		rc = -(errno ? errno : ENOMEM);
		snprintf(err, errlen, "%s: create QP: %s", d->name, strerror(-rc));
		goto out_destroy;
	}
	e->max_inline = ia.cap.max_inline_data;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					     IBV_QP_ACCESS_FLAGS)) {
		rc = -errno;
		snprintf(err, errlen, "%s: QP to INIT: %s", d->name, strerror(errno));
		goto out_destroy;
	}
	if (getrandom(&e->psn, sizeof(e->psn), 0) != sizeof(e->psn))
		e->psn = (uint32_t)(uintptr_t)e;
	e->psn &= 0xffffff;
	if (notify) {
		rc = rdma_ep_arm(e);
		if (rc) {
			snprintf(err, errlen, "%s: arm CQ: %s", d->name, strerror(-rc));
			goto out_destroy;
		}
		e->notify = true;
	}
	return 0;
out_destroy:
	rdma_ep_destroy(e);
	return rc;
}

int rdma_ep_arm(struct rdma_ep *e)
{
	int rc = ibv_req_notify_cq(e->cq, 0);

	return rc ? -rc : 0;
}

int rdma_ep_connect(struct rdma_ep *e, const struct rdma_remote *r, char *err, size_t errlen)
{
	struct rdma_dev *d = e->dev;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = r->mtu < d->mtu ? r->mtu : d->mtu,
		.dest_qp_num = r->qpn,
		.rq_psn = r->psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .dlid = r->lid, .port_num = (uint8_t)d->port,
			     .grh = { .dgid = r->gid, .sgid_index = (uint8_t)d->gid_index,
				      .hop_limit = 64 } },
	};

	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		snprintf(err, errlen, "QP to RTR: %s", strerror(errno));
		return -errno;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = RC_TIMEOUT;
	a.retry_cnt = RC_RETRY;
	a.rnr_retry = RNR_RETRY;
	a.sq_psn = e->psn;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					     IBV_QP_MAX_QP_RD_ATOMIC)) {
		snprintf(err, errlen, "QP to RTS: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

void rdma_ep_destroy(struct rdma_ep *e)
{
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->cq) /* the owner acknowledged every event of it (ibv_ack_cq_events) */
		ibv_destroy_cq(e->cq);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

json_t *rdma_ep_info(const struct rdma_ep *e, bool target)
{
	char gid[INET6_ADDRSTRLEN];
	json_t *j;

	inet_ntop(AF_INET6, e->dev->gid.raw, gid, sizeof(gid));
	j = json_pack("{s:I, s:I, s:s, s:i, s:i}", "qpn", (json_int_t)e->qp->qp_num, "psn",
		      (json_int_t)e->psn, "gid", gid, "lid", (int)e->dev->lid, "mtu",
		      (int)e->dev->mtu);
	if (j && target) {
		json_object_set_new(j, "addr", json_integer((json_int_t)(uintptr_t)e->buf));
		json_object_set_new(j, "rkey", json_integer((json_int_t)e->mr->rkey));
		json_object_set_new(j, "len", json_integer((json_int_t)e->len));
	}
	return j;
}

int rdma_remote_parse(json_t *j, bool target, struct rdma_remote *r, char *err, size_t errlen)
{
	json_int_t qpn, psn, addr = 0, rkey = 0, len = 0, lid, mtu; /* "i" would wrap 2^32+1 to 1 */
	const char *gid;
	json_error_t je;
	int rc;

	memset(r, 0, sizeof(*r));
	if (target)
		rc = json_unpack_ex(j, &je, JSON_STRICT, "{s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I}",
				    "qpn", &qpn, "psn", &psn, "gid", &gid, "lid", &lid, "mtu",
				    &mtu, "addr", &addr, "rkey", &rkey, "len", &len);
	else
		rc = json_unpack_ex(j, &je, JSON_STRICT, "{s:I, s:I, s:s, s:I, s:I}", "qpn", &qpn,
				    "psn", &psn, "gid", &gid, "lid", &lid, "mtu", &mtu);
	if (rc) {
		snprintf(err, errlen, "endpoint: %s", je.text);
		return -EINVAL;
	}
	if (qpn <= 0 || qpn > 0xffffff || psn < 0 || psn > 0xffffff || lid < 0 || lid > 0xffff ||
	    mtu < IBV_MTU_256 || mtu > IBV_MTU_4096 || rkey < 0 || rkey > UINT32_MAX ||
	    len < 0 || inet_pton(AF_INET6, gid, r->gid.raw) != 1) {
		snprintf(err, errlen, "endpoint: a value is out of range");
		return -EINVAL;
	}
	r->qpn = (uint32_t)qpn;
	r->psn = (uint32_t)psn;
	r->lid = (uint16_t)lid;
	r->mtu = (enum ibv_mtu)mtu;
	r->addr = (uint64_t)addr;
	r->rkey = (uint32_t)rkey;
	r->len = (uint64_t)len;
	return 0;
}

int rdma_post_write(struct rdma_ep *e, const struct rdma_remote *r, uint64_t wr_id, size_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf, .length = (uint32_t)len,
			       .lkey = e->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED | (len <= e->max_inline ? IBV_SEND_INLINE : 0),
		.wr = { .rdma = { .remote_addr = r->addr, .rkey = r->rkey } },
	}, *bad;

	if (len > e->len || len > r->len)
		return -EINVAL;
	return -ibv_post_send(e->qp, &wr, &bad);
}

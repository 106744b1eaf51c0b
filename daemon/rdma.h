/* SPDX-License-Identifier: MIT */
/* The daemon's own verbs resources (not through the shim): an opened device
 * port, and RC endpoints (QP, CQ, registered buffer) connected to an
 * endpoint of the peer daemon.  Used by the reference flow, its responder
 * and calibration. */
#ifndef JUSTITIAD_RDMA_H
#define JUSTITIAD_RDMA_H

#include <infiniband/verbs.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rdma_dev {
	char name[64];
	unsigned port;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;   /* one for every CQ of the device */
	int gid_index;
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu mtu;                /* active MTU */
	uint8_t link_layer;
	uint64_t link_bps;               /* active_speed x active_width, 0: unknown */
};

/* Where the peer's endpoint is; the MR part only for a responder. */
struct rdma_remote {
	uint32_t qpn, psn;
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu mtu;
	uint64_t addr;
	uint32_t rkey;
	uint64_t len;
};

struct rdma_ep {
	struct rdma_dev *dev;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	void *buf;
	size_t len;
	uint32_t psn;
	uint32_t max_inline;
	unsigned depth;                  /* send queue depth */
	bool notify;                     /* CQ armed on the completion channel */
};

/* Open @name (NULL or "": the first device with an active port) port @port
 * (0: the first active one), GID @gid_index (-1: the RoCE v2 IPv4 GID if
 * there is one, else RoCE v2, else index 0).  0 or -errno, reason in @err. */
int rdma_dev_open(struct rdma_dev *d, const char *name, unsigned port, int gid_index, char *err,
		  size_t errlen);
void rdma_dev_close(struct rdma_dev *d);
/* The IP address behind a port's GID (as rdma_dev_open picks it): the
 * IPv4 address of an IPv4-mapped RoCE v2 GID, else the IPv6 address of a
 * global one.  0, or -errno with the reason in @err (no device, or a GID
 * that is no routable IP address: InfiniBand, link-local). */
int rdma_dev_address(const char *name, unsigned port, int gid_index, char *out, size_t outlen,
		     char *err, size_t errlen);
/* Port speed from ibv_port_attr (IBV_SPEED_* x IBV_WIDTH_*), bit/s; 0 when
 * not known. */
uint64_t rdma_link_bps(uint8_t active_speed, uint8_t active_width);
/* Re-read the port's speed (it may change while the daemon runs). */
uint64_t rdma_dev_link_bps(struct rdma_dev *d);

/* An RC endpoint with a @len-byte buffer (remote-writable if @target) and a
 * send queue of @depth; its CQ is armed on the device's channel if
 * @notify.  0 or -errno, reason in @err. */
int rdma_ep_create(struct rdma_ep *e, struct rdma_dev *d, size_t len, bool target, unsigned depth,
		   bool notify, char *err, size_t errlen);
/* INIT -> RTR -> RTS towards @r. */
int rdma_ep_connect(struct rdma_ep *e, const struct rdma_remote *r, char *err, size_t errlen);
void rdma_ep_destroy(struct rdma_ep *e);
/* {"qpn","psn","gid","lid","mtu"} plus {"addr","rkey","len"} for a target. */
json_t *rdma_ep_info(const struct rdma_ep *e, bool target);
/* The other side's endpoint from such an object (strict). */
int rdma_remote_parse(json_t *j, bool target, struct rdma_remote *r, char *err, size_t errlen);
/* Post a signalled RDMA WRITE of @len bytes of our buffer (at 0) to the
 * remote buffer (at 0), inline when it fits.  0 or -errno. */
int rdma_post_write(struct rdma_ep *e, const struct rdma_remote *r, uint64_t wr_id, size_t len);
/* Re-arm the CQ after an event; returns 0 or -errno. */
int rdma_ep_arm(struct rdma_ep *e);

#endif

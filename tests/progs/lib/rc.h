/* SPDX-License-Identifier: MIT */
/* RC queue pairs for the test programs (tests/progs/): open a device by
 * name, create an RC QP (classic, or for the ibv_wr_* API), and take it
 * through INIT, RTR and RTS to a peer QP on port 1.  The helpers never
 * print and never exit: each program says what failed in its own words. */
#ifndef JUSTITIA_PROGS_RC_H
#define JUSTITIA_PROGS_RC_H

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

/* The device named @name: 0 with *ctx set, -ENXIO when the device list
 * cannot be had ("no RDMA devices" in @why), -ENODEV when none of that
 * name opens ("cannot open device NAME"). */
int rc_open_device(const char *name, struct ibv_context **ctx, char *why, size_t len);

/* An RC QP with @cq for both queues and the given capabilities (a
 * signaled WR only when it asks, sq_sig_all 0); NULL with errno set. */
struct ibv_qp *rc_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, const struct ibv_qp_cap *cap);
/* The same for the ibv_wr_* API (RDMA WRITE, WRITE_WITH_IMM, SEND, READ):
 * 0 with *qp and *qpx set, or -EINVAL/-errno (*qp may be set, *qpx NULL). */
int rc_create_qp_ex(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
		    const struct ibv_qp_cap *cap, struct ibv_qp **qp, struct ibv_qp_ex **qpx);

/* INIT on port 1 with the remote access flags @access: 0 or -errno. */
int rc_init(struct ibv_qp *qp, int access);

/* Where and how a QP is connected. */
struct rc_peer {
	uint32_t qpn;         /* the peer QP's number */
	union ibv_gid gid;    /* the peer's GID */
	int gidx;             /* our GID index */
	int access;           /* remote access flags of our QP */
	uint8_t rd_atomic;    /* max_dest_rd_atomic and max_rd_atomic */
	uint8_t timeout;      /* local ACK timeout exponent */
};

/* INIT (rc_init), RTR (MTU 1024, min RNR timer 12, hop limit 64) and RTS
 * (7 retries, 7 RNR retries): 0, or -errno with *step the state that
 * could not be reached ("INIT", "RTR" or "RTS"). */
int rc_connect(struct ibv_qp *qp, const struct rc_peer *peer, const char **step);

/* One end of a pair that a program connects in one process: a device's
 * context, PD, CQ, RC QP and one registered buffer. */
struct rc_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx; /* for the ibv_wr_* API, else NULL */
	struct ibv_mr *mr;
	uint8_t *buf;
	uint64_t size;         /* of buf */
	uint64_t head;         /* the program's own (integrity: its ring's head) */
	union ibv_gid gid;
	const char *name;
};

/* Open device @dev and set @s up: a PD, a CQ of @cqe entries, @size bytes
 * (page-aligned) registered for local and remote reads and writes, GID
 * @gidx of port 1, an RC QP with @cap (for the ibv_wr_* API if @extended).
 * 0, or -1 with what failed in @why ("DEV: ibv_create_qp failed"). */
int rc_side_open(struct rc_side *s, const char *dev, int gidx, int cqe, uint64_t size,
		 const struct ibv_qp_cap *cap, int extended, char *why, size_t len);
/* Destroy and free what rc_side_open() made. */
void rc_side_close(struct rc_side *s);

#endif

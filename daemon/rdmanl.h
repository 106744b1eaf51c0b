/* SPDX-License-Identifier: MIT */
/*
 * The QPs that exist right now, from the kernel's RDMA netlink resource
 * tracking (what `rdma resource show qp` prints): RDMA_NLDEV_CMD_GET lists the
 * devices, RDMA_NLDEV_CMD_RES_QP_GET dumps each one's QPs.  The QP watcher
 * uses it to learn the QPs created before it was attached.  Needs no
 * capability; the kernel lists the QPs of processes visible in the caller's
 * PID namespace.
 *
 * Int functions return 0 or a negative errno.
 */
#ifndef JUSTITIAD_RDMANL_H
#define JUSTITIAD_RDMANL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RDMANL_DEV_LEN 64
#define RDMANL_MAX_DEVS 256

struct rdmanl_dev {
	uint32_t index;
	char name[RDMANL_DEV_LEN];
};

struct rdmanl_qp {
	uint32_t dev_index;
	char dev[RDMANL_DEV_LEN];
	uint32_t qpn;
	uint32_t qp_type;   /* enum ib_qp_type */
	uint32_t pid;       /* the creating thread (0: unknown); kernel QPs have none */
	bool kernel;        /* created by a kernel user (ib_core's GSI QP, IPoIB...) */
};

typedef void (*rdmanl_qp_fn)(void *arg, const struct rdmanl_qp *qp);

/* Every QP of every device, to fn().  -errno when RDMA netlink does not
 * answer (no ib_core, no permission, timeout after 2 s). */
int rdmanl_dump_qps(rdmanl_qp_fn fn, void *arg);

/*
 * Parsers of one received buffer (one or more netlink messages) of a dump
 * with sequence number seq; messages of another sequence are skipped.
 * Return 1 when the buffer held the end of the dump (NLMSG_DONE), 0 when
 * more is to come, -EPROTO for a malformed message, or the kernel's error.
 */
int rdmanl_parse_devs(const void *buf, size_t len, uint32_t seq, struct rdmanl_dev *devs,
		      size_t max, size_t *n);
int rdmanl_parse_qps(const void *buf, size_t len, uint32_t seq, rdmanl_qp_fn fn, void *arg);

#endif

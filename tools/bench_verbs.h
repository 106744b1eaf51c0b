/* SPDX-License-Identifier: MIT */
/*
 * justbench verbs resources: a device (context, PD, port, GID) and a benchmark QP (its own CQ,
 * an optional completion channel for event-driven completions, one registered buffer), RC
 * connection setup from the peer's numbers, and waiting for completions.  QPs are classified
 * for libjustitia through justitia_set_qp_class() when a preloaded shim provides it.
 */
#ifndef JUSTITIA_BENCH_VERBS_H
#define JUSTITIA_BENCH_VERBS_H

#include "bench_wire.h"

#include <infiniband/verbs.h>
#include <stdbool.h>

struct bench_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	struct ibv_port_attr port;
	uint8_t port_num;
	int gid_index;
	union ibv_gid gid;
	char name[IBV_SYSFS_NAME_MAX];
};

struct bench_qp_cfg {
	size_t buf_len;	      /* registered buffer */
	uint32_t send_depth;  /* send queue entries */
	uint32_t cq_depth;    /* completions in flight (signaled sends + receives) */
	uint32_t recv_depth;  /* receive queue entries (0: the minimum) */
	uint32_t inline_size; /* wanted max_inline_data (0: none) */
	bool event;	      /* completion channel: wait in poll() instead of spinning */
	int cls;	      /* justitia class; -1: do not classify */
};

struct bench_qp {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	void *buf;
	size_t len;
	uint32_t psn;
	uint32_t max_inline;
	uint32_t max_recv; /* receive queue entries granted */
	unsigned unacked; /* CQ events not acknowledged yet */
	bool armed;
	int classified; /* 1 done, 0 no shim, -errno the shim refused */
};

/*
 * Opens device name (NULL: the first one), port, GID index gid_index (-1: the first RoCE v2
 * IPv4 GID, else the first RoCE v2 GID, else 0) and allocates a PD.
 */
int bench_dev_open(struct bench_dev *d, const char *name, int port, int gid_index, char *err,
		   size_t errlen);
void bench_dev_close(struct bench_dev *d);

int bench_qp_create(struct bench_qp *q, struct bench_dev *d, const struct bench_qp_cfg *cfg,
		    char *err, size_t errlen);
void bench_qp_destroy(struct bench_qp *q);
/* This end's numbers for the peer (with the buffer's rkey, address and length). */
void bench_qp_local(const struct bench_qp *q, const struct bench_dev *d, struct bench_wire_qp *out);
/* INIT, RTR, RTS towards remote with path MTU mtu (an enum ibv_mtu). */
int bench_qp_connect(struct bench_qp *q, const struct bench_dev *d,
		     const struct bench_wire_qp *remote, int mtu, char *err, size_t errlen);
/* Posts n receives of len bytes each into the buffer (all at offset 0). */
int bench_qp_post_recv(struct bench_qp *q, unsigned n, uint32_t len);
/*
 * Polls up to max completions.  With a channel, sleeps up to timeout_ms for one when there is
 * none; without one returns at once.  Returns how many (0: none), or -errno.
 */
int bench_qp_poll(struct bench_qp *q, struct ibv_wc *wc, int max, int timeout_ms);

/* Whether libjustitia's justitia_set_qp_class() is present in the process. */
bool bench_classify_available(void);

#endif

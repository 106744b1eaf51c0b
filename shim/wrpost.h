/* SPDX-License-Identifier: MIT */
/* One WR on its way through the pacer: its cost in the flow's token bucket,
 * its split size, the application's room, and its post to the provider
 * (alone, or through the direct window).  The pacer's lowest module: the
 * post path (pace.c) and the drain (drain.c) build on it. */
#ifndef JUSTITIA_SHIM_WRPOST_H
#define JUSTITIA_SHIM_WRPOST_H

#include <infiniband/verbs.h>
#include <stdint.h>

#include "registry.h"
#include "shm_abi.h"

#define WRPOST_BURST_NS 200000ull    /* tokens a quiet flow may bank */
#define WRPOST_BATCH_OPS 128         /* ... a throughput flow's batch, with no
                                      * latency flow to protect */

/* The wr_id of @q's window tags (window.h): odd, and no other QP's. */
static inline uint64_t shim_pace_window_tag(const struct shim_qp *q)
{
	return (uintptr_t)q | 3u;
}
/* How many WRs the list @wr holds; the bytes of one WR's SGEs. */
size_t wrpost_count(const struct ibv_send_wr *wr);
uint64_t wrpost_bytes(const struct ibv_send_wr *wr);
/* What one WR of @bytes costs in the bucket of a flow of class @cls, in ns
 * at the rate its @slot grants. */
uint64_t wrpost_cost_ns(int cls, const struct jst_flow_ctl *slot, uint64_t bytes);
/* @chunk rounded down to whole packets of @mtu bytes (0: unknown). */
uint32_t wrpost_whole_packets(uint32_t chunk, uint32_t mtu);
/* The split size for @wr on @q (0: it goes whole); *kind: enum
 * splitmsg_kind. */
uint32_t wrpost_split_size(struct shim_qp *q, const struct jst_flow_ctl *slot,
			   const struct ibv_send_wr *wr, int *kind);
/* The credit a backlog of a flow of class @cls may bank for a take of
 * @cost. */
uint64_t wrpost_burst(int cls, uint64_t cost);
/* ... and a post that finds no backlog. */
uint64_t wrpost_post_burst(int cls, uint64_t cost);
/* A copy of @wr (and of its inline data) for the backlog; NULL: no memory. */
struct pend_wr *wrpost_copy(const struct ibv_send_wr *wr);
/* How many more WRs the application may post on @q. */
size_t wrpost_app_room(const struct shim_qp *q);
/* Post @wr alone on @q's QP for the application, counted. */
int wrpost_one(struct shim_qp *q, struct ibv_send_wr *wr, int wr_api);
/* Pace mode share (no latency flow to protect, flows compete). */
int wrpost_share_mode(void);
/* Whether @q's whole WRs go through its window (window.h): direct in
 * pace mode off, paced in pace mode share. */
int wrpost_windowed_qp(const struct shim_qp *q);
/* Post @wr through @q's window if it fits: 0 posted, -EAGAIN it waits
 * (*due: until then at most), else the provider's error. */
int wrpost_windowed(struct shim_qp *q, const struct ibv_send_wr *wr, int wr_api, uint64_t now,
		    uint64_t *due);

#endif

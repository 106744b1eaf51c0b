/* SPDX-License-Identifier: MIT */
/* The shim's connection to justitiad: registration of the process and its
 * QPs as flows, and the shared-memory segments that come with it.
 *
 * Everything here runs on the application's control path (QP creation,
 * modification, destruction), never on the post path, and fails open: no
 * daemon, a daemon that does not answer within its timeout, or shared
 * memory that does not validate leave the QPs unmanaged, logged once when
 * JUSTITIA_LOG asks, and the shim tries again later with backoff. */
#ifndef JUSTITIA_SHIM_CLIENT_H
#define JUSTITIA_SHIM_CLIENT_H

#include <infiniband/verbs.h>

#include "registry.h"
#include "shm_abi.h"

/* What the daemon link tells the layers above it.  It never calls the
 * pacer or the splitter itself: wiring.c fills this in. */
struct shim_client_hooks {
	/* @q's slot or class changed: re-decide how it posts */
	void (*flow_changed)(struct shim_qp *q);
	/* the daemon is gone: every QP posts unpaced */
	void (*daemon_lost)(void);
	/* a flow is managed: start the thread that also polls the daemon */
	int (*start_thread)(void);
	/* the daemon wants @q split: its split QP's number, or -errno */
	int (*split_create)(struct shim_qp *q);
	/* @q moved as @attr/@mask say: its split QP follows (@peer_split:
	 * the peer's split QP, -1: none) */
	void (*split_follow)(struct shim_qp *q, const struct ibv_qp_attr *attr, int mask,
			     int peer_split);
};
extern const struct shim_client_hooks shim_client_hooks;

void shim_client_init(void);
/* A QP was created: register it (connecting first if needed). */
void shim_client_qp_created(struct shim_qp *q, struct ibv_qp *qp);
/* ibv_modify_qp succeeded: tell the daemon the port, state and peer. */
void shim_client_qp_modified(struct shim_qp *q, const struct ibv_qp_attr *attr, int mask);
/* The QP is about to be destroyed: unregister it. */
void shim_client_qp_destroyed(struct shim_qp *q);
/* Use @g as the daemon's global segment, without a socket: the shim never
 * connects to justitiad from now on (justsim, tests; shim_attach_flow(),
 * attach.h, then gives QPs their slots).  Before the first QP. */
void shim_client_attach(struct jst_shm_global *g);
/* The daemon's global segment (read-only), or NULL when not connected. */
const struct jst_shm_global *shim_client_global(void);
/* From the progress thread, every few ms: notice a dead daemon (then fail
 * open) and reconnect to a returned one (with backoff). */
void shim_client_poll(void);
/* justitia_set_qp_class(): remember and tell the daemon; EPERM when its
 * tenants policy does not allow @cls (the QP keeps its class). */
int shim_client_set_class(struct shim_qp *q, int cls);
/* Copy the daemon's warning about @q (registration writes it, under the
 * client's lock) into @buf. */
void shim_client_qp_warning(struct shim_qp *q, char *buf, size_t len);
/* The shim classified @q itself (JUSTITIA_CLASS=auto): tell the daemon.
 * Blocks on the daemon's socket: never from a post path. */
int shim_client_report_class(struct shim_qp *q, int cls);
/* Add posted WRs to the flow's counters in the daemon's shared memory, and
 * say once that the flow posts RDMA READs (JST_FS_READ). */
static inline void shim_client_publish(struct shim_qp *q, uint64_t wrs, uint64_t bytes)
{
	struct jst_flow_stats *s = atomic_load_explicit(&q->shm_stats, memory_order_acquire);

	if (s && wrs) {
		atomic_fetch_add_explicit(&s->ops, wrs, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->bytes, bytes, memory_order_relaxed);
		/* the daemon registers a READ flow with the responder's daemon
		 * (remote READ control): said once, read on a line just written */
		if (!(atomic_load_explicit(&s->flags, memory_order_relaxed) & JST_FS_READ) &&
		    atomic_load_explicit(&q->st.op[STATS_OP_RDMA_READ].wrs, memory_order_relaxed))
			atomic_fetch_or_explicit(&s->flags, JST_FS_READ, memory_order_relaxed);
	}
}
/* fork(): the child must not talk on the parent's connection. */
void shim_client_atfork_child(void);

#endif

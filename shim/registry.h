/* SPDX-License-Identifier: MIT */
/* The shim's view of the application's verbs objects: one record per opened
 * device context (with the provider's original ops) and one per QP (with its
 * counters), found from the hot path without locks. */
#ifndef JUSTITIA_SHIM_REGISTRY_H
#define JUSTITIA_SHIM_REGISTRY_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>

#include "shm_abi.h"
#include "classify.h"
#include "splitstate.h"
#include "sq.h"
#include "stats.h"
#include "window.h"
#include "wrbuf.h"

struct pend_wr; /* a WR in the backlog (splitjob.h) */

typedef int (*post_send_fn)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **);
typedef int (*post_recv_fn)(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **);
typedef int (*poll_cq_fn)(struct ibv_cq *, int, struct ibv_wc *);
typedef struct ibv_qp *(*create_qp_ex_fn)(struct ibv_context *, struct ibv_qp_init_attr_ex *);
typedef struct ibv_cq_ex *(*create_cq_ex_fn)(struct ibv_context *, struct ibv_cq_init_attr_ex *);

struct shim_ctx {
	struct shim_ctx *_Atomic next;        /* all records; never freed */
	struct ibv_context *_Atomic ctx;      /* NULL: closed, reusable */
	post_send_fn post_send;               /* provider originals */
	post_recv_fn post_recv;
	poll_cq_fn poll_cq;
	create_qp_ex_fn create_qp_ex;         /* NULL if the provider has none */
	create_cq_ex_fn create_cq_ex;         /* the same */
	char device[IBV_SYSFS_NAME_MAX];
};

struct shim_qp {
	struct shim_qp *_Atomic next;         /* hash chain */
	_Atomic unsigned gen;                 /* odd while the key changes */
	struct ibv_context *_Atomic ctx;      /* key part 1; NULL: free record */
	_Atomic uint32_t qpn;                 /* key part 2 */
	struct shim_ctx *sctx;
	enum ibv_qp_type type;
	const char *created_via;              /* "ibv_create_qp", ... (static) */
	struct stats_qp st;
	struct ibv_qp_ex *_Atomic qpx;        /* set once its wr_* are wrapped */
	struct shim_qpex_orig orig;
	struct stats_batch batch;             /* a batch passed through */
	struct wrbuf wrb;                     /* a batch buffered (wrbuf.h) */
	/* registration with justitiad (client.c) */
	_Atomic unsigned port;
	_Atomic uint32_t flow_id;             /* 0: not registered */
	struct jst_flow_stats *_Atomic shm_stats; /* our counter slot, or NULL */
	const struct jst_flow_ctl *_Atomic slot;  /* the daemon's slot, or NULL */
	char warning[160];
	void *known;                          /* json_t: state, peer (client.c) */
	/* data path (pace.c, drain.c, pacectl.c) */
	struct ibv_qp *qp;
	_Atomic int cls;                      /* enum jst_flow_class */
	int cls_from_api;                     /* set by justitia_set_qp_class() */
	_Atomic int direct;                   /* 1: post straight to the provider */
	_Atomic int fast;                     /* latency class, uncounted: one branch */
	_Atomic uint32_t mode_gen;            /* the daemon's mode_gen last seen */
	uint32_t max_send_wr;
	struct shim_sq sq;                    /* what its send queue holds (sq.h) */
	pthread_mutex_t lock;                 /* backlog; initialised once */
	struct pend_wr *bl_head, *bl_tail;
	size_t bl_len;
	/* its backlog's head waits for a token since then (0: it does not)
	 * until the token is due; the waits add up in
	 * jst_flow_stats.token_wait_ns */
	uint64_t tw_since, tw_due;
	uint64_t tw_start;                    /* the last drain stopped for a token then */
	_Atomic uint64_t app_poll_ns;         /* the application's poll drained it then */
	/* ordering of split chunks behind the application QP's own WRs
	 * (order.h): anything posted on it since the last barrier
	 * completed; a barrier in flight; give up waiting for it then */
	_Atomic int ord_dirty;
	int ord_barrier;
	int ord_blind;                        /* a barrier never came back */
	uint64_t ord_deadline_ns;
	int busy;                             /* on the progress thread's list */
	uint64_t busy_since;                  /* ... since then (backlogs.c) */
	/* its drains stop for the split window's completions since then,
	 * none for a token (0: not held; drain.c, backlog_take()) */
	uint64_t held_since;
	struct shim_window win;               /* direct posts in flight (window.h) */
	struct shim_split split;              /* split.c */
	struct classify_state classify;       /* classify.c */
	struct shim_qp *busy_next;
	struct shim_qp *free_next;
};

/* Set while the shim itself calls into verbs, so that its own work is
 * neither counted nor intercepted again (every layer makes such calls). */
extern __thread int shim_busy;
/* Set when JUSTITIA_STATS asks for exact counts of every QP. */
extern int shim_count_all;

/* Whether the provider completes @wr on @q with a CQE. */
static inline int shim_qp_signaled(const struct shim_qp *q, const struct ibv_send_wr *wr)
{
	return q->classify.sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
}

/* Post @wr alone on the application's QP, counted in its send queue. */
static inline int shim_qp_post_app(struct shim_qp *q, struct ibv_send_wr *wr,
				   struct ibv_send_wr **bad)
{
	int rc = q->sctx->post_send(q->qp, wr, bad);

	if (!rc)
		shim_sq_posted(&q->sq, shim_qp_signaled(q, wr));
	return rc;
}

/* The provider has no room on the application's QP now (its send queue
 * holds the shim's barrier as well, or the application's count is not
 * known): the WR waits in the backlog for a completion to free an entry,
 * and nothing queued on a healthy QP is flushed. */
static inline int shim_no_room(int rc)
{
	return rc == ENOMEM || rc == -ENOMEM;
}

/* JUSTITIA_CLASS=auto: one post call on @q as a sample (classify.h);
 * called with q->lock held. */
static inline void shim_qp_classify_post(struct shim_qp *q, const struct ibv_send_wr *wr,
					 const struct ibv_send_wr *bad)
{
	uint64_t cqes = atomic_load_explicit(&q->st.cqe_send, memory_order_relaxed) +
			atomic_load_explicit(&q->st.cqe_error, memory_order_relaxed);

	shim_classify_post(&q->classify, cqes, atomic_load_explicit(&q->cls, memory_order_relaxed),
			   wr, bad);
}

/* Context records.  shim_ctx_find() is lock free. */
struct shim_ctx *shim_ctx_find(const struct ibv_context *ctx);
/* Find or create the record of @ctx; the caller then patches the ops. */
struct shim_ctx *shim_ctx_get(struct ibv_context *ctx, int *created);
/* Close @ctx with @close_fn and forget its record, atomically w.r.t. opens. */
int shim_ctx_close(struct ibv_context *ctx, int (*close_fn)(struct ibv_context *));

/* QP records, keyed by (context, QP number).  shim_qp_find() is lock free;
 * a lookup racing with the destruction of another QP may miss (the caller
 * then passes the call through uncounted), it never returns a wrong record. */
struct shim_qp *shim_qp_find(const struct ibv_context *ctx, uint32_t qpn);
/* Same, but never misses a live QP (takes the lock after a lock-free miss). */
struct shim_qp *shim_qp_find_sure(const struct ibv_context *ctx, uint32_t qpn);
struct shim_qp *shim_qp_add(struct shim_ctx *sctx, struct ibv_qp *qp,
			    const char *created_via);
/* Bumped whenever a QP record is retired: per-thread lookup caches compare
 * it to know they are still valid. */
extern _Atomic unsigned shim_qp_epoch;
/* Destroy @qp with @destroy and, if that worked, forget its record (its
 * counters are kept for the report).  Returns what @destroy returned. */
int shim_qp_destroy(struct ibv_qp *qp, int (*destroy)(struct ibv_qp *));

/* Snapshots of every QP seen (live and destroyed), for the report.  Returns
 * a malloc'ed array (caller frees) and its length, or NULL. */
struct stats_snapshot *shim_registry_snapshot(size_t *n, struct stats_snapshot *overflow,
					      uint64_t *n_overflow);

/* Call @fn for every live QP record, under the registry lock. */
void shim_registry_foreach(int (*fn)(struct shim_qp *q));

/* The live QP records and their generations, taken under the registry
 * lock, for work that must not hold it (a record whose generation changed
 * since was recycled).  Returns how many (0 and NULLs when none or out of
 * memory); the caller frees both arrays.  Records are never freed. */
size_t shim_registry_list(struct shim_qp ***out, unsigned **gens);

/* fork(): keep the registry lock consistent; the child forgets the
 * parent's QPs. */
void shim_registry_atfork_prepare(void);
void shim_registry_atfork_parent(void);
void shim_registry_atfork_child(void);

#endif

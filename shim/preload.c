// SPDX-License-Identifier: MIT
/* libjustitia.so entry points: the exported libibverbs symbols the shim
 * interposes when it is LD_PRELOADed.
 *
 *   ibv_open_device    @IBVERBS_1.1  patch the new context's ops
 *   ibv_close_device   @IBVERBS_1.1  forget the context
 *   ibv_create_qp      @IBVERBS_1.1  track the QP
 *   ibv_destroy_qp     @IBVERBS_1.1  unregister the flow, retire the QP's record
 *   ibv_modify_qp      @IBVERBS_1.1  tell the daemon the QP's port, state, peer
 *   ibv_qp_to_qp_ex    @IBVERBS_1.6  wrap the QP's ibv_wr_* pointers
 *   and the @IBVERBS_1.0 compat versions of the first four, which take the
 *   pre-1.1 ABI structures: they are passed straight through, untouched.
 *
 * The real functions are looked up once with dlvsym(RTLD_NEXT).  If that
 * fails, every entry point fails the way libibverbs would (errno ENOSYS)
 * rather than crash.  Environment (read with secure_getenv):
 *   JUSTITIA_STATS=PATH  write per-QP counters as JSON at exit ("%p" = pid)
 *   JUSTITIA_LOG=...     see log.h
 *   JUSTITIA_SOCKET=PATH the daemon's control socket
 *   JUSTITIA_CLASS=lat|tput|bw|auto  class of this process's QPs (client.c)
 *   JUSTITIA_POLL_YIELD=0  never yield the CPU in an empty ibv_poll_cq (pace.h)
 *   JUSTITIA_ORDER=barrier split chunks wait for an ordering barrier (order.c)
 *   JUSTITIA_WINDOW=BYTES  what a direct QP may keep in flight (window.h)
 * Interposition layer, the top: it wires the others at load time; may
 * call: every module below it. */
#include "shim.h"
#include "client.h"
#include "inject.h"
#include "log.h"
#include "order.h"
#include "pacectl.h"
#include "split.h"
#include "splitmsg.h"
#include "window.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef void *(*compat_fn)(void *);
typedef int (*compat_int_fn)(void *);

static struct {
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*close_device)(struct ibv_context *);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*destroy_qp)(struct ibv_qp *);
	struct ibv_qp_ex *(*qp_to_qp_ex)(struct ibv_qp *);
	int (*modify_qp)(struct ibv_qp *, struct ibv_qp_attr *, int);
	compat_fn open_device_1_0;
	compat_int_fn close_device_1_0;
	void *(*create_qp_1_0)(void *, void *);
	compat_int_fn destroy_qp_1_0;
	int (*modify_qp_1_0)(void *, void *, int);
} real;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static char *stats_path; /* template from JUSTITIA_STATS */
static atomic_bool used_verbs; /* a report only from processes that used verbs */

static void *lookup(const char *name, const char *version)
{
	void *p = dlvsym(RTLD_NEXT, name, version);

	if (!p)
		shim_log("cannot find %s@%s: %s", name, version, dlerror());
	return p;
}

/* fork() waits until no thread of the shim is inside the registry or a
 * memory registration (whose locks the child could never take again) */
static void atfork_prepare(void)
{
	shim_registry_atfork_prepare();
	splitmsg_atfork_prepare();
}

static void atfork_parent(void)
{
	splitmsg_atfork_parent();
	shim_registry_atfork_parent();
}

static void atfork_child(void)
{
	splitmsg_atfork_child();
	shim_registry_atfork_child();
	shim_client_atfork_child();
	shim_pace_atfork_child();
	shim_split_atfork_child();
	shim_inject_atfork_child();
	/* a child that uses no verbs itself writes no report (it would
	 * clobber the parent's when JUSTITIA_STATS has no %p) */
	atomic_store(&used_verbs, false);
}

static void shim_init(void)
{
	const char *s;

	shim_log_init();
	real.open_device = lookup("ibv_open_device", "IBVERBS_1.1");
	real.close_device = lookup("ibv_close_device", "IBVERBS_1.1");
	real.create_qp = lookup("ibv_create_qp", "IBVERBS_1.1");
	real.destroy_qp = lookup("ibv_destroy_qp", "IBVERBS_1.1");
	real.qp_to_qp_ex = lookup("ibv_qp_to_qp_ex", "IBVERBS_1.6");
	real.modify_qp = lookup("ibv_modify_qp", "IBVERBS_1.1");
	real.modify_qp_1_0 = (int (*)(void *, void *, int))lookup("ibv_modify_qp", "IBVERBS_1.0");
	real.open_device_1_0 = (compat_fn)lookup("ibv_open_device", "IBVERBS_1.0");
	real.close_device_1_0 = (compat_int_fn)lookup("ibv_close_device", "IBVERBS_1.0");
	real.create_qp_1_0 = (void *(*)(void *, void *))lookup("ibv_create_qp", "IBVERBS_1.0");
	real.destroy_qp_1_0 = (compat_int_fn)lookup("ibv_destroy_qp", "IBVERBS_1.0");
	s = secure_getenv("JUSTITIA_STATS");
	if (s && *s) {
		stats_path = strdup(s);
		shim_count_all = 1;
	}
	s = secure_getenv("JUSTITIA_POLL_YIELD");
	if (s && !strcmp(s, "0"))
		shim_poll_yield = 0;
	s = secure_getenv("JUSTITIA_ORDER");
	if (s && !strcmp(s, "none"))
		shim_order_barrier = 0;
	s = secure_getenv("JUSTITIA_WINDOW");
	if (shim_window_parse(s, &shim_window_bytes)) {
		shim_log("JUSTITIA_WINDOW=%s is not BYTES[k|m|g]: the default, %llu", s,
			 (unsigned long long)SHIM_WINDOW_DEFAULT);
		shim_window_bytes = SHIM_WINDOW_DEFAULT;
	}
	shim_client_init();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	shim_log("loaded");
}

static inline void init(void)
{
	pthread_once(&init_once, shim_init);
}

__attribute__((constructor)) static void shim_ctor(void)
{
	init();
}

/* ------------------------------------------------------------ IBVERBS_1.1 */

EXPORT struct ibv_context *jst_open_device(struct ibv_device *dev);
__asm__(".symver jst_open_device, ibv_open_device@@IBVERBS_1.1");
struct ibv_context *jst_open_device(struct ibv_device *dev)
{
	struct ibv_context *ctx;

	init();
	if (!real.open_device) {
		errno = ENOSYS;
		return NULL;
	}
	ctx = real.open_device(dev);
	if (ctx && !shim_busy) {
		atomic_store(&used_verbs, true);
		shim_ops_attach(ctx);
	}
	return ctx;
}

EXPORT int jst_close_device(struct ibv_context *ctx);
__asm__(".symver jst_close_device, ibv_close_device@@IBVERBS_1.1");
int jst_close_device(struct ibv_context *ctx)
{
	init();
	if (!real.close_device)
		return ENOSYS;
	return shim_ctx_close(ctx, real.close_device);
}

EXPORT struct ibv_qp *jst_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
__asm__(".symver jst_create_qp, ibv_create_qp@@IBVERBS_1.1");
struct ibv_qp *jst_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp *qp;

	init();
	if (!real.create_qp) {
		errno = ENOSYS;
		return NULL;
	}
	qp = real.create_qp(pd, attr);
	if (qp && !shim_busy) {
		atomic_store(&used_verbs, true);
		struct shim_qp *q = shim_ops_track_qp(qp, "ibv_create_qp", attr->cap.max_send_wr);

		if (q)
			q->classify.sq_sig_all = attr->sq_sig_all;
	}
	return qp;
}

EXPORT int jst_destroy_qp(struct ibv_qp *qp);
__asm__(".symver jst_destroy_qp, ibv_destroy_qp@@IBVERBS_1.1");
int jst_destroy_qp(struct ibv_qp *qp)
{
	struct shim_qp *q;

	init();
	if (!real.destroy_qp)
		return ENOSYS;
	/* the shim's own QP (a split QP): never recorded, and its destroyer
	 * may hold the registry lock (re-registration after a reconnect) */
	if (shim_busy)
		return real.destroy_qp(qp);
	q = shim_qp_find_sure(qp->context, qp->qp_num);
	if (q) {
		shim_pace_qp_gone(q);
		shim_split_destroy(q);
		shim_client_qp_destroyed(q);
	}
	return shim_qp_destroy(qp, real.destroy_qp);
}

EXPORT int jst_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
__asm__(".symver jst_modify_qp, ibv_modify_qp@@IBVERBS_1.1");
int jst_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct shim_qp *q;
	int rc;

	init();
	if (!real.modify_qp)
		return ENOSYS;
	rc = real.modify_qp(qp, attr, mask);
	if (rc || shim_busy)
		return rc;
	q = shim_qp_find_sure(qp->context, qp->qp_num);
	if (q) {
		shim_client_qp_modified(q, attr, mask);
		/* natively RESET discards every outstanding WR; ERR
		 * flushes them all, signaled or not (sq.h) */
		if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET)
			shim_pace_qp_reset(q);
		else if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_ERR)
			shim_sq_lost(&q->sq);
	}
	return rc;
}

EXPORT struct ibv_qp_ex *jst_qp_to_qp_ex(struct ibv_qp *qp);
__asm__(".symver jst_qp_to_qp_ex, ibv_qp_to_qp_ex@@IBVERBS_1.6");
struct ibv_qp_ex *jst_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct ibv_qp_ex *qpx;
	struct shim_qp *q;

	init();
	if (!real.qp_to_qp_ex) {
		errno = ENOSYS;
		return NULL;
	}
	qpx = real.qp_to_qp_ex(qp);
	if (!qpx || shim_busy)
		return qpx;
	q = shim_qp_find_sure(qp->context, qp->qp_num);
	if (!q)
		q = shim_ops_track_qp(qp, "unknown", 0);
	if (q)
		shim_qpex_wrap(q, qpx);
	return qpx;
}

/* ------------------------------------------------- IBVERBS_1.0 (compat) */

EXPORT void *jst_open_device_1_0(void *dev);
__asm__(".symver jst_open_device_1_0, ibv_open_device@IBVERBS_1.0");
void *jst_open_device_1_0(void *dev)
{
	init();
	if (!real.open_device_1_0) {
		errno = ENOSYS;
		return NULL;
	}
	shim_log_once("IBVERBS_1.0 application: passed through unmanaged");
	return real.open_device_1_0(dev);
}

EXPORT int jst_close_device_1_0(void *ctx);
__asm__(".symver jst_close_device_1_0, ibv_close_device@IBVERBS_1.0");
int jst_close_device_1_0(void *ctx)
{
	init();
	return real.close_device_1_0 ? real.close_device_1_0(ctx) : ENOSYS;
}

EXPORT void *jst_create_qp_1_0(void *pd, void *attr);
__asm__(".symver jst_create_qp_1_0, ibv_create_qp@IBVERBS_1.0");
void *jst_create_qp_1_0(void *pd, void *attr)
{
	init();
	if (!real.create_qp_1_0) {
		errno = ENOSYS;
		return NULL;
	}
	return real.create_qp_1_0(pd, attr);
}

EXPORT int jst_destroy_qp_1_0(void *qp);
__asm__(".symver jst_destroy_qp_1_0, ibv_destroy_qp@IBVERBS_1.0");
int jst_destroy_qp_1_0(void *qp)
{
	init();
	return real.destroy_qp_1_0 ? real.destroy_qp_1_0(qp) : ENOSYS;
}

EXPORT int jst_modify_qp_1_0(void *qp, void *attr, int mask);
__asm__(".symver jst_modify_qp_1_0, ibv_modify_qp@IBVERBS_1.0");
int jst_modify_qp_1_0(void *qp, void *attr, int mask)
{
	init();
	return real.modify_qp_1_0 ? real.modify_qp_1_0(qp, attr, mask) : ENOSYS;
}

/* ------------------------------------------------------------ the report */

static void write_report(void)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	struct stats_snapshot overflow, *snaps;
	struct stats_pacer pacer;
	uint64_t n_overflow;
	size_t n;
	FILE *f;
	int rc;

	/* Processes that never used verbs (a wrapper such as timeout(1) that
	 * inherited LD_PRELOAD) write nothing, so they cannot clobber the
	 * report of the RDMA program they started. */
	if (stats_path == NULL || !atomic_load(&used_verbs))
		return;
	if (stats_expand_path(path, sizeof(path), stats_path, (int)getpid())) {
		shim_log("JUSTITIA_STATS path too long");
		return;
	}
	memset(&overflow, 0, sizeof(overflow));
	snaps = shim_registry_snapshot(&n, &overflow, &n_overflow);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	f = fopen(tmp, "we");
	if (!f) {
		shim_log("cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	shim_pace_counters(&pacer);
	rc = stats_write_json(f, (int)getpid(), program_invocation_short_name,
			      snaps ? snaps : &overflow, snaps ? n : 0, &overflow, n_overflow,
			      &pacer);
	if (fclose(f) || rc) {
		shim_log("cannot write %s", tmp);
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path)) {
		shim_log("cannot rename %s to %s: %s", tmp, path, strerror(errno));
		unlink(tmp);
	}
out:
	free(snaps);
}

__attribute__((destructor)) static void shim_dtor(void)
{
	write_report();
}

// SPDX-License-Identifier: MIT
/* The shim's connection to justitiad (see client.h).
 *
 * One connection per process, opened lazily on the first QP; its lifetime
 * is the process's registration (the daemon frees every flow of the process
 * when it closes, however the process ends).  Calls are serialised by one
 * mutex of our own and bounded by timeouts.  After a failure the shim waits
 * (1 s, doubling up to 30 s) before it tries again, and on reconnecting it
 * registers every live QP anew.
 * Daemon link layer, a side module: it publishes what it learns through
 * the QPs' slots and calls up only through shim_client_hooks (wiring.c);
 * may call: segment.c, the per-QP state (registry, classify), common
 * (proto), log. */
#include "client.h"
#include "classify.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vclock.h"
#include "log.h"
#include "proto.h"
#include "segment.h"
#include "shm_abi.h"

#define CONNECT_TIMEOUT_MS 200
/* a reply within the protocol's budget, the slowest answer included */
#define CALL_TIMEOUT_MS PROTO_REPLY_MS
_Static_assert(CALL_TIMEOUT_MS > PROTO_PEER_LOOKUP_MS,
	       "a slow peer lookup must not look like a dead daemon");
#define UNREACHABLE_RETRY_NS 1000000000ull
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010 /* Linux 5.1 */
#endif
#define BACKOFF_MIN_NS 1000000000ull
#define BACKOFF_MAX_NS 30000000000ull

static struct {
	pthread_mutex_t lock;
	int fd;                       /* -1: not connected */
	pid_t pid;                    /* process that owns fd */
	uint64_t retry_at_ns, backoff_ns;
	struct jst_shm_global *_Atomic global;
	size_t global_size;
	struct jst_shm_client *client;
	size_t client_size;
	const char *cls_hint;         /* from JUSTITIA_CLASS, NULL = let the daemon decide */
	int need_fail_open;           /* lost the daemon: QPs must stop pacing */
	char refused[32];             /* the error code of the last refused call */
} cl = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

void shim_client_init(void)
{
	/* the class names (in enum order) and their short forms */
	static const char *const names[] = { JST_CLASS_NAME_LIST };
	static const char *const short_names[] = { "lat", "tput", "bw" };
	const char *c = secure_getenv("JUSTITIA_CLASS");

	_Static_assert(sizeof(names) / sizeof(names[0]) == JST_CLASS_COUNT &&
			       sizeof(short_names) / sizeof(short_names[0]) == JST_CLASS_COUNT,
		       "a short name per class");
	cl.cls_hint = NULL;
	if (!c || !*c)
		return;
	if (!strcmp(c, "auto")) {
		shim_classify_auto = 1;
		return;
	}
	for (int i = 0; i < JST_CLASS_COUNT; i++)
		if (!strcmp(c, short_names[i]) || !strcmp(c, names[i]))
			cl.cls_hint = names[i];
	if (!cl.cls_hint)
		shim_log("JUSTITIA_CLASS=%s is not lat|tput|bw|auto: ignored", c);
}

/* Forget the connection and the daemon's segments (shim_segment_retire()). */
static void disconnect(int failed)
{
	if (cl.fd >= 0 && cl.pid == getpid())
		close(cl.fd);
	cl.fd = -1;
	/* only a daemon we were registered with can have paced a QP: a
	 * daemon that never answered leaves nothing to fail open */
	if (atomic_load(&cl.global)) {
		cl.need_fail_open = 1;
		if (cl.pid == getpid()) {
			shim_segment_retire(atomic_load(&cl.global), cl.global_size);
			shim_segment_retire(cl.client, cl.client_size);
		}
	}
	atomic_store(&cl.global, NULL);
	cl.client = NULL;
	if (failed) {
		cl.backoff_ns = cl.backoff_ns ? cl.backoff_ns * 2 : BACKOFF_MIN_NS;
		if (cl.backoff_ns > BACKOFF_MAX_NS)
			cl.backoff_ns = BACKOFF_MAX_NS;
		cl.retry_at_ns = shim_now_ns() + cl.backoff_ns;
	}
}

static json_t *call(json_t *req, int *fds, int *nfds)
{
	json_t *r;
	int err = 0;

	r = proto_call(cl.fd, req, CALL_TIMEOUT_MS, fds, nfds, fds ? PROTO_MAX_FDS : 0, &err);
	json_decref(req);
	if (!r) {
		shim_log("justitiad did not answer: %s", strerror(-err));
		disconnect(1);
		return NULL;
	}
	if (!json_is_true(json_object_get(r, "ok"))) {
		json_t *e = json_object_get(r, "error");
		const char *code = json_string_value(json_object_get(e, "code")) ?: "?";

		shim_log("justitiad refused %s: %s", code,
			 json_string_value(json_object_get(e, "message")) ?: "?");
		snprintf(cl.refused, sizeof(cl.refused), "%s", code);
		json_decref(r);
		return NULL;
	}
	return r;
}

static int hello(void)
{
	int fds[PROTO_MAX_FDS], nfds = 0, rc = -EPROTO;
	size_t gsize = 0, csize = 0;
	void *g = NULL, *c = NULL;
	json_t *r;

	r = call(json_pack("{s:i, s:s, s:i, s:s, s:s}", "v", PROTO_VERSION, "cmd", "hello", "pid",
			   (int)getpid(), "comm", program_invocation_short_name, "role", "shim"),
		 fds, &nfds);
	if (!r)
		return -ECONNREFUSED;
	json_decref(r);
	if (nfds == 2) {
		g = shim_segment_map(fds[0], PROT_READ, F_SEAL_FUTURE_WRITE, &gsize);
		c = shim_segment_map(fds[1], PROT_READ | PROT_WRITE, 0, &csize);
		rc = g && c ? shim_segment_validate(g, gsize, c, csize) : -ENOMEM;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	if (rc) {
		shim_log_once("justitiad's shared memory does not validate: running unmanaged");
		if (g)
			munmap(g, gsize);
		if (c)
			munmap(c, csize);
		disconnect(1);
		return rc;
	}
	atomic_store(&cl.global, g);
	cl.global_size = gsize;
	cl.client = c;
	cl.client_size = csize;
	return 0;
}

static int register_locked(struct shim_qp *q);

/* Register every live QP anew (the daemon is new).  Each call waits for
 * the daemon: not under the registry lock, which fork() and every QP
 * creation and destruction need.  A QP destroyed meanwhile cannot be
 * unregistered before we are done (that needs cl.lock, held); a record
 * recycled meanwhile is skipped (its new QP registers itself, also after
 * us). */
static void register_all(void)
{
	struct shim_qp **qs;
	unsigned *gens;
	size_t n = shim_registry_list(&qs, &gens);

	for (size_t i = 0; i < n; i++)
		if (atomic_load(&qs[i]->gen) == gens[i] && atomic_load(&qs[i]->ctx))
			register_locked(qs[i]);
	free(qs);
	free(gens);
}

/* Connect if needed and allowed now.  Called with the lock held. */
static int ensure_connected(void)
{
	int fd;

	if (cl.fd >= 0 && cl.pid == getpid())
		return 0;
	if (cl.fd >= 0)
		disconnect(0); /* inherited across fork: not ours */
	if (shim_now_ns() < cl.retry_at_ns)
		return -EAGAIN;
	fd = proto_connect(NULL, CONNECT_TIMEOUT_MS);
	if (fd < 0) {
		shim_log_once("cannot reach justitiad (%s): running unmanaged, will retry",
			      strerror(-fd));
		disconnect(0);
		/* no daemon listening: cheap to ask again soon, so that a
		 * daemon started after the application takes over within
		 * UNREACHABLE_RETRY_NS (a daemon that answers badly backs
		 * off, 1 s doubling to 30 s) */
		cl.retry_at_ns = shim_now_ns() + UNREACHABLE_RETRY_NS;
		return fd;
	}
	cl.fd = fd;
	cl.pid = getpid();
	if (hello())
		return -ECONNREFUSED;
	cl.backoff_ns = 0;
	shim_log("registered with justitiad");
	/* the QPs still point into the lost daemon's memory: let go of it
	 * before registering them anew (lock order: cl.lock, then the
	 * registry's), so that no later fail-open unregisters them */
	if (cl.need_fail_open) {
		cl.need_fail_open = 0;
		shim_client_hooks.daemon_lost();
	}
	/* a new daemon knows none of our QPs yet */
	register_all();
	return 0;
}

static const char *const class_names[] = { JST_CLASS_NAME_LIST };

static int class_from_name(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (s && !strcmp(s, class_names[i]))
			return i;
	return -1;
}

static int register_locked(struct shim_qp *q)
{
	const char *type = q->type == IBV_QPT_RC ? "RC" : q->type == IBV_QPT_UC ? "UC"
			 : q->type == IBV_QPT_UD ? "UD" : "OTHER";
	struct jst_shm_global *g = atomic_load(&cl.global);
	json_int_t flow, cslot, gslot;
	const char *warn;
	json_t *req, *r;
	int cls;

	if (cl.fd < 0 || !g)
		return -ENOTCONN;
	req = json_pack("{s:i, s:s, s:s, s:i, s:I, s:s}", "v", PROTO_VERSION, "cmd", "register_qp",
			"device", q->sctx ? q->sctx->device : "?", "port", (int)q->port,
			"qpn", (json_int_t)atomic_load(&q->qpn), "qp_type", type);
	/* the application's own word beats the daemon's rules, which beat
	 * the environment */
	if (q->split.qp)
		json_object_set_new(req, "split_qpn", json_integer(q->split.qp->qp_num));
	if (q->cls_from_api)
		json_object_set_new(req, "class", json_string(class_names[atomic_load(&q->cls)]));
	else if (cl.cls_hint)
		json_object_set_new(req, "class_hint", json_string(cl.cls_hint));
	r = call(req, NULL, NULL);
	if (!r)
		return -EPROTO;
	flow = json_integer_value(json_object_get(r, "flow"));
	cslot = json_integer_value(json_object_get(r, "app_slot"));
	gslot = json_integer_value(json_object_get(r, "slot"));
	cls = class_from_name(json_string_value(json_object_get(r, "class")));
	{
		const char *src = json_string_value(json_object_get(r, "class_source"));

		/* nobody decided: JUSTITIA_CLASS=auto watches what it posts */
		atomic_store(&q->classify.on, shim_classify_auto && !q->cls_from_api && src &&
						      !strcmp(src, "default"));
	}
	warn = json_string_value(json_object_get(r, "warning"));
	snprintf(q->warning, sizeof(q->warning), "%s", warn ? warn : "");
	if (warn)
		shim_log("QP %u: %s", atomic_load(&q->qpn), warn);
	json_decref(r);
	if (flow <= 0 || cslot < 0 || (uint64_t)cslot >= cl.client->n_slots ||
	    jst_shm_client_size((uint32_t)cslot + 1) > cl.client_size || gslot < 0 ||
	    (uint64_t)gslot >= g->n_slots || jst_shm_global_size((uint32_t)gslot + 1) > cl.global_size ||
	    cls < 0) {
		shim_log_once("justitiad's registration reply does not validate: QP unmanaged");
		return -EPROTO;
	}
	q->flow_id = (uint32_t)flow;
	if (!q->cls_from_api)
		atomic_store(&q->cls, cls);
	atomic_store_explicit(&q->shm_stats, jst_shm_client_slot(cl.client, (uint32_t)cslot),
			      memory_order_release);
	atomic_store_explicit(&q->slot, jst_shm_global_slot(g, (uint32_t)gslot),
			      memory_order_release);
	/* a bandwidth RC QP gets its split QP now, before the application
	 * exchanges QP numbers with its peer, so the peer's shim finds it */
	if (atomic_load(&q->cls) == JST_CLASS_BANDWIDTH && q->type == IBV_QPT_RC &&
	    atomic_load(&q->split.state) == SPLIT_NONE) {
		int sq = shim_client_hooks.split_create(q);

		if (sq >= 0) {
			r = call(json_pack("{s:i, s:s, s:I, s:i}", "v", PROTO_VERSION, "cmd",
					   "update_qp", "flow", (json_int_t)q->flow_id, "split_qpn", sq),
				 NULL, NULL);
			json_decref(r);
		}
	} else if (q->known) {
		/* registered anew (the daemon restarted): what it knew before */
		int st = atomic_load(&q->split.state);

		req = json_deep_copy(q->known);
		if (req) {
			json_object_set_new(req, "flow", json_integer(q->flow_id));
			if (st == SPLIT_READY || st == SPLIT_PACE_ONLY)
				json_object_set_new(req, "split",
						    json_string(st == SPLIT_READY ? "split" : "pace_only"));
			json_decref(call(req, NULL, NULL));
		}
	}
	shim_client_hooks.flow_changed(q);
	return 0;
}

void shim_client_attach(struct jst_shm_global *g)
{
	pthread_mutex_lock(&cl.lock);
	atomic_store(&cl.global, g);
	cl.need_fail_open = 0;
	cl.retry_at_ns = UINT64_MAX; /* never the socket */
	pthread_mutex_unlock(&cl.lock);
}

const struct jst_shm_global *shim_client_global(void)
{
	return atomic_load_explicit(&cl.global, memory_order_acquire);
}

/* Is the daemon still there?  Its connection must not be readable (EOF or
 * stray bytes) and its heartbeat must be fresh. */
static int daemon_gone(void)
{
	struct jst_shm_global *g = atomic_load(&cl.global);
	struct pollfd pfd = { .fd = cl.fd, .events = POLLIN };

	if (!g || !(atomic_load_explicit(&g->flags, memory_order_acquire) & JST_G_RUNNING))
		return 1;
	if (poll(&pfd, 1, 0) > 0)
		return 1;
	return atomic_load_explicit(&g->heartbeat_ns, memory_order_relaxed) + JST_HEARTBEAT_STALE_NS <
	       shim_now_ns();
}

void shim_client_poll(void)
{
	int gone;

	pthread_mutex_lock(&cl.lock);
	if (cl.fd >= 0 && cl.pid == getpid() && daemon_gone()) {
		shim_log("justitiad went away: running unmanaged until it is back");
		disconnect(1);
	}
	gone = cl.need_fail_open;
	cl.need_fail_open = 0;
	pthread_mutex_unlock(&cl.lock);
	if (gone)
		shim_client_hooks.daemon_lost();
	/* reconnecting registers every QP anew (and may need the registry
	 * lock, which fail-open took and released above) */
	pthread_mutex_lock(&cl.lock);
	if (cl.fd < 0 || cl.pid != getpid())
		ensure_connected();
	pthread_mutex_unlock(&cl.lock);
}

void shim_client_qp_warning(struct shim_qp *q, char *buf, size_t len)
{
	pthread_mutex_lock(&cl.lock);
	snprintf(buf, len, "%s", q->warning);
	pthread_mutex_unlock(&cl.lock);
}

int shim_client_set_class(struct shim_qp *q, int cls)
{
	q->cls_from_api = 1;
	atomic_store(&q->classify.on, 0);
	return shim_client_report_class(q, cls);
}

int shim_client_report_class(struct shim_qp *q, int cls)
{
	int rc = 0;
	json_t *r;

	pthread_mutex_lock(&cl.lock);
	if (q->flow_id && cl.fd >= 0 && cl.pid == getpid()) {
		cl.refused[0] = 0;
		r = call(json_pack("{s:i, s:s, s:I, s:s}", "v", PROTO_VERSION, "cmd", "update_qp",
				   "flow", (json_int_t)q->flow_id, "class", class_names[cls]),
			 NULL, NULL);
		/* the operator's policy does not allow it (justitiad.json(5),
		 * "tenants"): the flow keeps the class the daemon gave it */
		if (!r && !strcmp(cl.refused, PROTO_E_PERMISSION))
			rc = EPERM;
		json_decref(r);
	}
	pthread_mutex_unlock(&cl.lock);
	if (rc)
		return rc;
	atomic_store(&q->cls, cls);
	shim_client_hooks.flow_changed(q);
	return 0;
}

void shim_client_qp_created(struct shim_qp *q, struct ibv_qp *qp)
{
	int connected;

	pthread_mutex_lock(&cl.lock);
	/* connecting registers every known QP, this one included */
	if (cl.fd < 0 || cl.pid != getpid())
		ensure_connected();
	else
		register_locked(q);
	connected = cl.fd >= 0;
	pthread_mutex_unlock(&cl.lock);
	/* no daemon yet: the progress thread keeps asking (shim_client_poll),
	 * so that one started later manages this QP without a restart */
	if (!connected)
		shim_client_hooks.start_thread();
}

static const char *state_name(enum ibv_qp_state s)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

static void format_gid(const uint8_t *g, char *out, size_t len)
{
	/* the format of /sys/class/infiniband/<dev>/ports/<p>/gids/<i> */
	snprintf(out, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12],
		 g[13], g[14], g[15]);
}

/* The peer's split QP, from the daemons; -1 when the peer has none. */
static int split_peer_locked(struct shim_qp *q, const struct ibv_qp_attr *attr)
{
	json_t *r, *v;
	char gid[48];
	int split = -1;

	if (!attr->ah_attr.is_global || !q->flow_id)
		return -1; /* only GID-addressed peers (RoCE, IB with GRH) can be found */
	format_gid(attr->ah_attr.grh.dgid.raw, gid, sizeof(gid));
	r = call(json_pack("{s:i, s:s, s:I, s:I, s:s}", "v", PROTO_VERSION, "cmd", "split_peer",
			   "flow", (json_int_t)q->flow_id, "peer_qpn", (json_int_t)attr->dest_qp_num,
			   "peer_gid", gid),
		 NULL, NULL);
	v = json_object_get(r, "split_qpn");
	if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 0xffffff)
		split = (int)json_integer_value(v);
	json_decref(r);
	return split;
}

void shim_client_qp_modified(struct shim_qp *q, const struct ibv_qp_attr *attr, int mask)
{
	int to_rtr = (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR;
	int peer_split = -1;
	json_t *req, *r;

	if (mask & IBV_QP_PORT)
		q->port = attr->port_num;
	pthread_mutex_lock(&cl.lock);
	if (ensure_connected() || !q->flow_id)
		goto out;
	req = json_pack("{s:i, s:s, s:I}", "v", PROTO_VERSION, "cmd", "update_qp", "flow",
			(json_int_t)q->flow_id);
	if (mask & IBV_QP_PORT)
		json_object_set_new(req, "port", json_integer(attr->port_num));
	if (mask & IBV_QP_STATE)
		json_object_set_new(req, "state", json_string(state_name(attr->qp_state)));
	if (mask & IBV_QP_DEST_QPN)
		json_object_set_new(req, "peer_qpn", json_integer(attr->dest_qp_num));
	if ((mask & IBV_QP_AV) && attr->ah_attr.is_global) {
		union ibv_gid own;
		char gid[48];

		format_gid(attr->ah_attr.grh.dgid.raw, gid, sizeof(gid));
		json_object_set_new(req, "peer_gid", json_string(gid));
		if (q->port && !ibv_query_gid(q->qp->context, (uint8_t)q->port,
					      attr->ah_attr.grh.sgid_index, &own)) {
			format_gid(own.raw, gid, sizeof(gid));
			json_object_set_new(req, "local_gid", json_string(gid));
		}
	}
	/* remembered: a restarted daemon learns it again (register_locked) */
	if (!q->known)
		q->known = json_object();
	if (q->known)
		json_object_update(q->known, req);
	r = call(req, NULL, NULL);
	json_decref(r);
	if (to_rtr && atomic_load(&q->split.state) == SPLIT_CREATED)
		peer_split = split_peer_locked(q, attr);
out:
	pthread_mutex_unlock(&cl.lock);
	if (q->split.qp) {
		int before = atomic_load(&q->split.state);

		shim_client_hooks.split_follow(q, attr, mask, peer_split);
		if (atomic_load(&q->split.state) != before && q->flow_id) {
			int now = atomic_load(&q->split.state);

			pthread_mutex_lock(&cl.lock);
			if (cl.fd >= 0 && (now == SPLIT_READY || now == SPLIT_PACE_ONLY)) {
				r = call(json_pack("{s:i, s:s, s:I, s:s}", "v", PROTO_VERSION, "cmd",
						   "update_qp", "flow", (json_int_t)q->flow_id, "split",
						   now == SPLIT_READY ? "split" : "pace_only"),
					 NULL, NULL);
				json_decref(r);
			}
			pthread_mutex_unlock(&cl.lock);
			if (now == SPLIT_PACE_ONLY)
				shim_log("QP %u: the peer has no Justitia split QP: pacing whole messages",
					 q->qp->qp_num);
			shim_client_hooks.flow_changed(q);
		}
	}
}

void shim_client_qp_destroyed(struct shim_qp *q)
{
	struct jst_flow_stats *st = atomic_load_explicit(&q->shm_stats, memory_order_acquire);
	json_t *r;

	if (st && q->flow_id)
		shim_log("QP %u: flow %u done: %llu WRs, %llu bytes, %llu split chunks",
			 atomic_load(&q->qpn), q->flow_id,
			 (unsigned long long)atomic_load_explicit(&st->ops, memory_order_relaxed),
			 (unsigned long long)atomic_load_explicit(&st->bytes, memory_order_relaxed),
			 (unsigned long long)atomic_load_explicit(&st->chunks, memory_order_relaxed));
	atomic_store_explicit(&q->shm_stats, NULL, memory_order_release);
	pthread_mutex_lock(&cl.lock);
	if (q->flow_id && cl.fd >= 0 && cl.pid == getpid()) {
		r = call(json_pack("{s:i, s:s, s:I}", "v", PROTO_VERSION, "cmd", "unregister_qp",
				   "flow", (json_int_t)q->flow_id),
			 NULL, NULL);
		json_decref(r);
	}
	q->flow_id = 0;
	json_decref(q->known);
	q->known = NULL;
	pthread_mutex_unlock(&cl.lock);
}

void shim_client_atfork_child(void)
{
	/* The lock may have been held by a thread that does not exist here. */
	pthread_mutex_init(&cl.lock, NULL);
	/* The connection is the parent's registration: the daemon frees the
	 * parent's flows when it closes, so the child must not hold it open
	 * (a child that outlives the parent would keep them), nor talk on it.
	 * The fd is still the socket: the application has not run yet.  The
	 * child forgot the parent's QPs (registry.c) and connects anew on its
	 * first QP. */
	if (cl.fd >= 0)
		close(cl.fd);
	cl.fd = -1;
	cl.pid = 0;
	if (atomic_load(&cl.global))
		munmap(atomic_load(&cl.global), cl.global_size);
	if (cl.client)
		munmap(cl.client, cl.client_size);
	atomic_store(&cl.global, NULL);
	cl.client = NULL;
	cl.need_fail_open = 0;
	cl.retry_at_ns = 0;
	cl.backoff_ns = 0;
}

// SPDX-License-Identifier: MIT
/* The flow registry.  Everything a shim sends is validated here before it
 * reaches a slot; counters it writes are read back as untrusted input.
 * May call: shm (segments, slots), config, proto, clock, log. */
#include "flows.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "tenant.h"
#include "proto.h"

int flows_init(struct flows *fl, const struct config *cfg, uint64_t instance)
{
	int rc;

	memset(fl, 0, sizeof(*fl));
	fl->cfg = cfg;
	fl->instance = instance;
	fl->n_gslots = cfg->limits.max_flows;
	fl->next_id = 1;
	fl->by_gslot = calloc(fl->n_gslots, sizeof(*fl->by_gslot));
	if (!fl->by_gslot)
		return -ENOMEM;
	for (fl->id_mask = 1; fl->id_mask < 2 * fl->n_gslots; fl->id_mask <<= 1)
		;
	fl->by_id = calloc(fl->id_mask, sizeof(*fl->by_id));
	fl->id_mask--;
	if (!fl->by_id) {
		free(fl->by_gslot);
		fl->by_gslot = NULL;
		return -ENOMEM;
	}
	rc = shm_global_create(&fl->global, fl->n_gslots, instance);
	if (rc) {
		free(fl->by_gslot);
		fl->by_gslot = NULL;
		free(fl->by_id);
		fl->by_id = NULL;
		return rc;
	}
	log_debug(LOG_SS_SHM, "global segment: %u slots, %zu bytes", fl->n_gslots,
		  fl->global.size);
	return 0;
}

void flows_fini(struct flows *fl)
{
	while (fl->procs)
		flows_proc_free(fl, fl->procs);
	if (fl->global.base) {
		struct jst_shm_global *g = fl->global.base;

		/* tell the shims that still map it that nobody is home */
		atomic_store_explicit(&g->flags, 0, memory_order_release);
	}
	shm_seg_destroy(&fl->global);
	free(fl->by_gslot);
	fl->by_gslot = NULL;
	free(fl->by_id);
	fl->by_id = NULL;
}

/* ---------------------------------------------------------------- the id index
 * Linear probing on the id (ids are sequential, so id & mask spreads them);
 * at most n_gslots of 2 * n_gslots or more buckets are used.  Removal shifts
 * back the entries of the run after the hole, so a lookup stops at the
 * first empty bucket. */
static void id_insert(struct flows *fl, struct flow *f)
{
	uint32_t i = f->id & fl->id_mask;

	while (fl->by_id[i])
		i = (i + 1) & fl->id_mask;
	fl->by_id[i] = f;
}

static void id_remove(struct flows *fl, const struct flow *f)
{
	uint32_t i = f->id & fl->id_mask, j, home;

	while (fl->by_id[i] != f) {
		if (!fl->by_id[i])
			return;
		i = (i + 1) & fl->id_mask;
	}
	fl->by_id[i] = NULL;
	for (j = (i + 1) & fl->id_mask; fl->by_id[j]; j = (j + 1) & fl->id_mask) {
		home = fl->by_id[j]->id & fl->id_mask;
		/* move it into the hole unless its home lies cyclically in (i, j] */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			fl->by_id[i] = fl->by_id[j];
			fl->by_id[j] = NULL;
			i = j;
		}
	}
}

static const struct config_app_rule *app_rule(const struct config *cfg, const char *comm)
{
	for (size_t i = 0; i < cfg->n_apps; i++)
		if (!strcmp(cfg->apps[i].comm, comm))
			return &cfg->apps[i];
	return NULL;
}

static const struct config_device *device_conf(const struct config *cfg, const char *dev,
					       unsigned port)
{
	for (size_t i = 0; i < cfg->n_devices; i++)
		if (!strcmp(cfg->devices[i].name, dev) &&
		    (!port || cfg->devices[i].port == port))
			return &cfg->devices[i];
	return NULL;
}

/* Class and weight the config decides where the shim did not ask. */
static void derive_policy(const struct flows *fl, struct flow *f)
{
	const struct config_app_rule *r = app_rule(fl->cfg, f->proc->comm);

	/* strongest first: the application's call, the config's rule for
	 * the executable, JUSTITIA_CLASS, the paper's default (bandwidth) */
	if (!f->class_from_app)
		f->cls = r && r->has_class ? r->cls
			 : f->class_hint >= 0 ? (enum flow_class)f->class_hint
					      : FLOW_CLASS_BANDWIDTH;
	if (!f->weight_from_app)
		f->weight = r ? r->weight : 1;
	/* whatever asked, the operator's tenants policy has the last word */
	if (tenant_enforce(tenant_rule(fl->cfg, f->proc->uid, f->proc->gid), &f->cls, &f->weight,
			   f->warning, sizeof(f->warning)))
		log_info("flow %u (pid %d): %s", f->id, (int)f->proc->pid, f->warning);
}

const char *flows_class_source(const struct flows *fl, const struct flow *f)
{
	const struct config_app_rule *r = app_rule(fl->cfg, f->proc->comm);

	return f->class_from_app ? "app" : r && r->has_class ? "rule"
		: f->class_hint >= 0 ? "hint" : "default";
}

/* What a flow is told depends on the pace mode of its device (the
 * controller's, common/shm_abi.h): OFF, nothing (it posts directly); SHARE,
 * paced with large tokens, bandwidth flows split at the large chunk
 * (paper §5.1); PROTECT (latency flows registered), bandwidth flows split
 * at the small chunk, so a small message waits behind one chunk at most
 * (§5.2).  Rates are the controller's. */
void flows_publish_counted(struct flows *fl, struct flow *f, size_t n_latency)
{
	const struct config_device *d = device_conf(fl->cfg, f->device, f->port);
	uint32_t chunk, flags = 0;
	int mode = n_latency || fl->cfg->controller.pace_mode == CONFIG_PACE_PROTECT
		   ? JST_PACE_PROTECT : fl->pace_mode;

	chunk = mode == JST_PACE_PROTECT ? (d ? d->chunk_latency : 5120)
					 : (d ? d->chunk_default : 1048576);
	/* the other end protects a latency flow: its NIC sends our READs'
	 * responses (or receives our WRITEs) in chunks no larger (rread.c) */
	if (f->remote.state == FLOW_REMOTE_REGISTERED && f->remote.chunk && f->remote.chunk < chunk)
		chunk = f->remote.chunk;
	/* a READ flow the responder's daemon limits is paced whatever the
	 * mode here (rread.c: its rate is the lower grant) */
	if (mode != JST_PACE_OFF || (f->remote.grant_bps && f->cls == FLOW_CLASS_BANDWIDTH) ||
	    (f->remote.grant_ops && f->cls == FLOW_CLASS_THROUGHPUT)) {
		if (f->cls == FLOW_CLASS_BANDWIDTH)
			flags = JST_F_PACE | JST_F_SPLIT;
		else if (f->cls == FLOW_CLASS_THROUGHPUT)
			flags = JST_F_PACE;
	}
	shm_slot_publish(jst_shm_global_slot(fl->global.base, f->gslot), JST_SLOT_ACTIVE, f->id,
			  (uint32_t)f->proc->pid, (uint32_t)f->cls, flags, chunk, f->weight,
			  f->rate_bps, f->ops_per_s, f->wait_ns);
}

/* The slot carries enum jst_flow_class: the configuration's enum is the same. */
_Static_assert((int)FLOW_CLASS_LATENCY == (int)JST_CLASS_LATENCY &&
		       (int)FLOW_CLASS_THROUGHPUT == (int)JST_CLASS_THROUGHPUT &&
		       (int)FLOW_CLASS_BANDWIDTH == (int)JST_CLASS_BANDWIDTH,
	       "enum flow_class is enum jst_flow_class");

void flows_publish(struct flows *fl, struct flow *f)
{
	struct flows_counts c;

	flows_count(fl, &c);
	flows_publish_counted(fl, f, c.by_class[FLOW_CLASS_LATENCY]);
}

/* The chunk size depends on whether any latency flow exists: republish
 * every slot when that changes (counting once, not once per slot). */
void flows_publish_all(struct flows *fl)
{
	struct flows_counts c;

	flows_count(fl, &c);
	for (struct proc *p = fl->procs; p; p = p->next)
		for (struct flow *f = p->flows; f; f = f->next)
			flows_publish_counted(fl, f, c.by_class[FLOW_CLASS_LATENCY]);
}

void flows_reconfigure(struct flows *fl, const struct config *cfg)
{
	fl->cfg = cfg;
	for (struct proc *p = fl->procs; p; p = p->next)
		for (struct flow *f = p->flows; f; f = f->next)
			derive_policy(fl, f);
	/* once all classes are derived: counted once, not once per flow */
	flows_publish_all(fl);
}

struct proc *flows_proc_new(struct flows *fl, pid_t pid, uid_t uid, const char *comm, int *err)
{
	struct proc *p = calloc(1, sizeof(*p));
	int rc;

	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	p->pid = pid;
	p->uid = uid;
	p->gid = (gid_t)-1; /* set by the caller (ctlcmd.c) */
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	p->n_cslots = fl->cfg->limits.max_flows_per_client;
	p->by_cslot = calloc(p->n_cslots, sizeof(*p->by_cslot));
	if (!p->by_cslot) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = shm_client_create(&p->seg, p->n_cslots, (uint32_t)pid, fl->instance);
	if (rc)
		goto out_free;
	p->next = fl->procs;
	fl->procs = p;
	log_debug(LOG_SS_FLOW, "process %d (%s) registered", (int)pid, p->comm);
	return p;
out_free:
	free(p->by_cslot);
	free(p);
	*err = rc;
	return NULL;
}

static void flow_free(struct flows *fl, struct flow *f)
{
	if (fl->on_free)
		fl->on_free(fl->on_free_arg, f);
	shm_slot_publish(jst_shm_global_slot(fl->global.base, f->gslot), JST_SLOT_FREE, 0, 0, 0,
			 0, 0, 0, 0, 0, 0);
	fl->by_gslot[f->gslot] = NULL;
	id_remove(fl, f);
	f->proc->by_cslot[f->cslot] = NULL;
	f->proc->n_flows--;
	log_debug(LOG_SS_FLOW, "flow %u (pid %d qpn %u) freed", f->id, (int)f->proc->pid, f->qpn);
	free(f);
}

void flows_proc_free(struct flows *fl, struct proc *p)
{
	struct proc **pp;

	while (p->flows) {
		struct flow *f = p->flows;

		p->flows = f->next;
		flow_free(fl, f);
	}
	for (pp = &fl->procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	log_debug(LOG_SS_FLOW, "process %d (%s) gone", (int)p->pid, p->comm);
	shm_seg_destroy(&p->seg);
	free(p->by_cslot);
	free(p);
	flows_publish_all(fl);
}

static int valid_name(const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	if (n == 0 || n >= max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return 0;
	return 1;
}

struct flow *flows_register(struct flows *fl, struct proc *p, const struct flow_req *req,
			    const char **code, char *msg, size_t msglen)
{
	struct flow *f;
	uint32_t g, c;

	*code = PROTO_E_BAD_REQUEST;
	if (!valid_name(req->device, sizeof(f->device))) {
		snprintf(msg, msglen, "invalid device name");
		return NULL;
	}
	if (!valid_name(req->qp_type, sizeof(f->qp_type))) {
		snprintf(msg, msglen, "invalid qp_type");
		return NULL;
	}
	if (req->port > 255 || req->qpn > 0xffffff || req->weight > 1000) {
		snprintf(msg, msglen, "port, qpn or weight out of range");
		return NULL;
	}
	*code = PROTO_E_LIMIT;
	if (p->n_flows >= p->n_cslots) {
		snprintf(msg, msglen, "too many flows for this process (max_flows_per_client %u)",
			 p->n_cslots);
		return NULL;
	}
	for (g = 0; g < fl->n_gslots && fl->by_gslot[g]; g++)
		;
	if (g == fl->n_gslots) {
		snprintf(msg, msglen, "too many flows (max_flows %u)", fl->n_gslots);
		return NULL;
	}
	for (c = 0; c < p->n_cslots && p->by_cslot[c]; c++)
		;
	*code = PROTO_E_INTERNAL;
	f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(msg, msglen, "out of memory");
		return NULL;
	}
	f->id = fl->next_id++;
	if (!fl->next_id)
		fl->next_id = 1;
	f->gslot = g;
	f->cslot = c;
	f->proc = p;
	snprintf(f->device, sizeof(f->device), "%s", req->device);
	snprintf(f->qp_type, sizeof(f->qp_type), "%s", req->qp_type);
	snprintf(f->state, sizeof(f->state), "RESET");
	f->port = req->port;
	f->qpn = req->qpn;
	f->peer_qpn = -1;
	f->split_qpn = req->split_qpn >= 0 && req->split_qpn <= 0xffffff ? req->split_qpn : -1;
	snprintf(f->split, sizeof(f->split), "none");
	f->class_hint = -1;
	if (req->cls_hint && strcmp(req->cls_hint, "auto")) {
		enum flow_class hint;

		if (config_class_parse(req->cls_hint, &hint)) {
			*code = PROTO_E_BAD_REQUEST;
			snprintf(msg, msglen, "unknown class_hint \"%.32s\"", req->cls_hint);
			free(f);
			return NULL;
		}
		f->class_hint = (int)hint;
	}
	if (req->cls && strcmp(req->cls, "auto")) {
		enum flow_class cls;

		if (config_class_parse(req->cls, &cls)) {
			*code = PROTO_E_BAD_REQUEST;
			snprintf(msg, msglen, "unknown class \"%.32s\"", req->cls);
			free(f);
			return NULL;
		}
		f->cls = cls;
		f->class_from_app = 1;
	}
	if (req->weight) {
		f->weight = req->weight;
		f->weight_from_app = 1;
	}
	derive_policy(fl, f);
	/* reset the counter slot the shim will write for this flow */
	memset(jst_shm_client_slot(p->seg.base, c), 0, sizeof(struct jst_flow_stats));
	f->read_ns = clock_now_ns();
	fl->by_gslot[g] = f;
	id_insert(fl, f);
	p->by_cslot[c] = f;
	f->next = p->flows;
	p->flows = f;
	p->n_flows++;
	if (f->cls == FLOW_CLASS_LATENCY)
		flows_publish_all(fl);
	else
		flows_publish(fl, f);
	log_debug(LOG_SS_FLOW, "flow %u: pid %d %s %s:%u qpn %u class %s weight %u slot %u/%u",
		  f->id, (int)p->pid, p->comm, f->device, f->port, f->qpn,
		  config_class_name(f->cls), f->weight, g, c);
	return f;
}

struct flow *flows_find(struct flows *fl, uint32_t id)
{
	for (uint32_t i = id & fl->id_mask; fl->by_id[i]; i = (i + 1) & fl->id_mask)
		if (fl->by_id[i]->id == id)
			return fl->by_id[i];
	return NULL;
}

/* Does RDMA device @dev have GID @gid (sysfs format) on any port?  Read
 * from sysfs, so it holds before the QP's own RTR told us its GID. */
static int device_has_gid(const char *dev, const char *gid)
{
	char pattern[160];
	glob_t g;
	int found = 0;

	snprintf(pattern, sizeof(pattern), "/sys/class/infiniband/%s/ports/*/gids/*", dev);
	if (glob(pattern, 0, NULL, &g))
		return 0;
	for (size_t i = 0; i < g.gl_pathc && !found; i++) {
		char buf[64] = "";
		FILE *f = fopen(g.gl_pathv[i], "re");

		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f))
			found = !strncmp(buf, gid, strlen(gid)) && strlen(gid) >= 39;
		fclose(f);
	}
	globfree(&g);
	return found;
}

int64_t flows_split_of(struct flows *fl, const char *gid, uint32_t qpn)
{
	for (struct proc *p = fl->procs; p; p = p->next)
		for (struct flow *f = p->flows; f; f = f->next)
			if (f->qpn == qpn && (!strcmp(f->local_gid, gid) ||
					      device_has_gid(f->device, gid)))
				return f->split_qpn;
	return -1;
}

void flows_unregister(struct flows *fl, struct flow *f)
{
	int was_latency = f->cls == FLOW_CLASS_LATENCY;
	struct flow **pp;

	for (pp = &f->proc->flows; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	flow_free(fl, f);
	if (was_latency)
		flows_publish_all(fl);
}

void flows_poll_counters(struct flows *fl)
{
	uint64_t t = clock_now_ns();

	for (struct proc *p = fl->procs; p; p = p->next) {
		for (struct flow *f = p->flows; f; f = f->next) {
			struct shm_counters now;
			uint64_t dt = t > f->read_ns ? t - f->read_ns : 0;

			/* a flow whose shim wrote the impossible is fenced: its
			 * counters stay what they were (it looks idle) */
			if (f->scribbled)
				continue;
			f->read_ns = t;
			if (shm_read_counters(jst_shm_client_slot(p->seg.base, f->cslot), &f->last,
					      &now, dt)) {
				f->scribbled = 1;
				if (!p->scribbler)
					log_warnx("pid %d (%s) wrote impossible counters (flow %u, "
						  "and maybe more): its flows' counters are no "
						  "longer read", (int)p->pid, p->comm, f->id);
				p->scribbler = true;
				continue;
			}
			/* a split message counts its bytes and op when its last
			 * chunk goes: at a low rate a big message takes longer
			 * than the activity window, so its chunks count too (or
			 * the throttled flow would look idle, the floor would
			 * drop to nothing and SafeUtil with it); so does the time
			 * its work waited in the send queue (a whole 1 MiB READ
			 * at 40 Mbit/s is in flight for 200 ms) */
			if (atomic_load_explicit(&jst_shm_client_slot(p->seg.base, f->cslot)->flags,
						 memory_order_relaxed) & JST_FS_READ)
				f->reads = true;
			if (now.bytes != f->last.bytes || now.ops != f->last.ops ||
			    now.chunks != f->last.chunks || now.token_wait_ns != f->last.token_wait_ns ||
			    now.queued_us != f->last.queued_us)
				f->grew_ns = t;
			f->last = now;
		}
	}
}

void flows_count(const struct flows *fl, struct flows_counts *c)
{
	memset(c, 0, sizeof(*c));
	for (const struct proc *p = fl->procs; p; p = p->next) {
		c->procs++;
		for (const struct flow *f = p->flows; f; f = f->next) {
			c->flows++;
			c->by_class[f->cls]++;
		}
	}
}

int flows_set_weight_pid(struct flows *fl, pid_t pid, uint32_t weight)
{
	struct flows_counts c;
	int n = 0;

	flows_count(fl, &c); /* once: a weight does not change the classes */
	for (struct proc *p = fl->procs; p; p = p->next) {
		if (p->pid != pid)
			continue;
		for (struct flow *f = p->flows; f; f = f->next) {
			f->weight = weight;
			f->weight_from_app = 1;
			flows_publish_counted(fl, f, c.by_class[FLOW_CLASS_LATENCY]);
			n++;
		}
	}
	return n ? n : -ENOENT;
}

int flows_set_weight_flow(struct flows *fl, uint32_t id, uint32_t weight)
{
	struct flow *f = flows_find(fl, id);

	if (!f)
		return -ENOENT;
	f->weight = weight;
	f->weight_from_app = 1;
	flows_publish(fl, f);
	return 0;
}

// SPDX-License-Identifier: MIT
/* The control socket's commands that act: dispatch of a request line to
 * its handler; set (root), calibrate, and the shims' hello, register_qp,
 * update_qp, unregister_qp and split_peer (answered later, maybe).
 * May call: ctlview (read-only commands), ctlconn (replies), flows,
 * controller, config, proto; the split lookup only through ctl_env. */
#include "ctlcmd.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller.h"
#include "ctlconn.h"
#include "ctlview.h"
#include "flows.h"
#include "log.h"
#include "rate.h"
#include "tenant.h"

static json_t *cmd_set(struct ctl_client *cl, json_t *req)
{
	const struct ctl_env *e = &cl->ctl->env;
	json_t *target = NULL, *rate = NULL, *policy = NULL, *weight = NULL, *pid = NULL;
	json_t *flow = NULL, *dev = NULL, *id = NULL, *changed, *r;
	json_error_t err;
	const char *cmd;
	int v, n;

	if (cl->uid != 0)
		return proto_reply_error(req, PROTO_E_PERMISSION, "set needs root (uid 0), you are %u",
					 (unsigned)cl->uid);
	if (json_unpack_ex(req, &err, JSON_STRICT, "{s:i, s:s, s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o}",
			   "v", &v, "cmd", &cmd, "id", &id, "target99_us", &target,
			   "max_rate", &rate, "device", &dev, "policy", &policy, "weight", &weight,
			   "pid", &pid, "flow", &flow))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "%s", err.text);
	n = !!target + !!rate + !!policy + !!weight;
	if (n != 1)
		return proto_reply_error(req, PROTO_E_BAD_REQUEST,
					 "set takes exactly one of target99_us, max_rate, policy, weight");
	changed = json_object();
	if (target) {
		json_int_t us = json_is_integer(target) ? json_integer_value(target) : -1;

		if (us < 1 || us > 10000000) {
			json_decref(changed);
			return proto_reply_error(req, PROTO_E_BAD_REQUEST,
						 "target99_us must be an integer in 1..10000000");
		}
		e->cfg->controller.target99_us = (uint32_t)us;
		json_object_set_new(changed, "target99_us", json_integer(us));
	} else if (rate) {
		uint64_t bps = 0;
		size_t hit = 0;

		if (json_is_integer(rate) && json_integer_value(rate) > 0)
			bps = (uint64_t)json_integer_value(rate);
		else if (json_is_string(rate) && config_parse_rate(json_string_value(rate), &bps))
			bps = 0;
		if (bps < RATE_MIN_BPS || bps > RATE_MAX_BPS || (dev && !json_is_string(dev))) {
			json_decref(changed);
			return proto_reply_error(req, PROTO_E_BAD_REQUEST,
						 "max_rate must be 1Mbit..1.6Tbit (bits/s or \"25Gbit\")");
		}
		for (size_t i = 0; i < e->cfg->n_devices; i++) {
			if (dev && strcmp(e->cfg->devices[i].name, json_string_value(dev)))
				continue;
			e->cfg->devices[i].max_rate_bps = bps;
			hit++;
		}
		if (!hit) {
			json_decref(changed);
			return proto_reply_error(req, PROTO_E_NOT_FOUND, "no such managed device");
		}
		json_object_set_new(changed, "max_rate_bps", json_integer((json_int_t)bps));
		json_object_set_new(changed, "devices", json_integer((json_int_t)hit));
	} else if (policy) {
		const char *p = json_string_value(policy);

		if (!p || (strcmp(p, "keep") && strcmp(p, "ignore_latency"))) {
			json_decref(changed);
			return proto_reply_error(req, PROTO_E_BAD_REQUEST,
						 "policy must be \"keep\" or \"ignore_latency\"");
		}
		e->cfg->controller.unattainable_policy = !strcmp(p, "keep") ? CONFIG_UNATTAINABLE_KEEP
								: CONFIG_UNATTAINABLE_IGNORE_LATENCY;
		json_object_set_new(changed, "policy", json_string(p));
	} else {
		json_int_t w = json_is_integer(weight) ? json_integer_value(weight) : 0;
		int rc;

		if (w < 1 || w > 1000 || !!pid == !!flow || (pid && !json_is_integer(pid)) ||
		    (flow && !json_is_integer(flow))) {
			json_decref(changed);
			return proto_reply_error(req, PROTO_E_BAD_REQUEST,
						 "weight 1..1000 with exactly one of pid or flow");
		}
		rc = pid ? flows_set_weight_pid(e->flows, (pid_t)json_integer_value(pid),
						(uint32_t)w)
			 : flows_set_weight_flow(e->flows, (uint32_t)json_integer_value(flow),
						 (uint32_t)w);
		if (rc < 0) {
			json_decref(changed);
			return proto_reply_error(req, PROTO_E_NOT_FOUND, "no such %s",
						 pid ? "registered pid" : "flow");
		}
		json_object_set_new(changed, "weight", json_integer(w));
		json_object_set_new(changed, "flows", json_integer(pid ? rc : 1));
	}
	{
		char *txt = json_dumps(changed, JSON_COMPACT);

		log_info("set by uid %u (pid %d): %s", (unsigned)cl->uid, (int)cl->pid,
			 txt ? txt : "?");
		free(txt);
	}
	r = proto_reply_ok(req);
	json_object_set_new(r, "changed", changed);
	return r;
}

/* Measure MaxRate against the reference peer (controller.c, calib.c); the
 * reply comes at once, the result in status. */
static json_t *cmd_calibrate(struct ctl_client *cl, json_t *req)
{
	if (cl->uid != 0)
		return proto_reply_error(req, PROTO_E_PERMISSION,
					 "calibrate needs root (uid 0), you are %u", (unsigned)cl->uid);
	if (!*cl->ctl->env.controller)
		return proto_reply_error(req, PROTO_E_INTERNAL, "the controller is not running");
	return ctrl_calibrate(*cl->ctl->env.controller, req);
}

static json_t *cmd_hello(struct ctl_client *cl, json_t *req, int *fds, int *nfds)
{
	const struct ctl_env *e = &cl->ctl->env;
	const char *cmd, *comm, *role;
	json_t *id = NULL, *r;
	json_error_t err;
	json_int_t pid;
	int v, rc;

	if (json_unpack_ex(req, &err, JSON_STRICT, "{s:i, s:s, s?o, s:I, s:s, s:s}", "v", &v,
			   "cmd", &cmd, "id", &id, "pid", &pid, "comm", &comm, "role", &role))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "%s", err.text);
	if (strcmp(role, "shim"))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "unknown role");
	if (cl->proc || cl->out_len)
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "hello must come first, once");
	if (cl->reserved)
		return proto_reply_error(req, PROTO_E_LIMIT,
					 "too many clients (max_clients %u): this connection holds "
					 "one of the administrators' reserved slots, which register "
					 "no flows", cl->ctl->env.cfg->limits.max_clients);
	if (pid != cl->pid)
		log_debug(LOG_SS_CTL, "hello claims pid %lld, socket says %d: using %d", (long long)pid,
			  (int)cl->pid, (int)cl->pid);
	cl->proc = flows_proc_new(e->flows, cl->pid, cl->uid, comm, &rc);
	if (!cl->proc)
		return proto_reply_error(req, PROTO_E_INTERNAL, "cannot create shared memory: %s",
					 strerror(-rc));
	cl->proc->gid = cl->gid; /* (tenant.h) */
	fds[0] = shm_seg_open_ro(&e->flows->global);
	if (fds[0] < 0)
		return proto_reply_error(req, PROTO_E_INTERNAL, "cannot share memory: %s",
					 strerror(-fds[0]));
	fds[1] = cl->proc->seg.fd;
	*nfds = 2;
	r = proto_reply_ok(req);
	json_object_set_new(r, "instance", json_integer((json_int_t)(e->instance >> 1)));
	json_object_set_new(r, "shm", json_pack("{s:I, s:I}", "global_size",
						(json_int_t)e->flows->global.size, "client_size",
						(json_int_t)cl->proc->seg.size));
	return r;
}

static json_t *cmd_register(struct ctl_client *cl, json_t *req)
{
	struct flow_req fr = { .split_qpn = -1 };
	const char *cmd, *code;
	json_int_t qpn;
	json_t *id = NULL, *r;
	json_error_t err;
	struct flow *f;
	char msg[160];
	json_int_t port = 0, weight = 0; /* "I": "i" would cut 4294967297 to 1 */
	int v;

	if (!cl->proc)
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "hello first");
	if (json_unpack_ex(req, &err, JSON_STRICT,
			   "{s:i, s:s, s?o, s:s, s?I, s:I, s:s, s?s, s?s, s?I, s?I}", "v", &v, "cmd",
			   &cmd, "id", &id, "device", &fr.device, "port", &port, "qpn", &qpn, "qp_type",
			   &fr.qp_type, "class", &fr.cls, "class_hint", &fr.cls_hint, "weight", &weight,
			   "split_qpn", &fr.split_qpn))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "%s", err.text);
	if (port < 0 || port > 255 || weight < 0 || weight > 1000 || qpn < 0 || qpn > 0xffffff)
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "port, qpn or weight out of range");
	fr.port = (unsigned)port;
	fr.qpn = (uint32_t)qpn;
	fr.weight = (uint32_t)weight;
	f = flows_register(cl->ctl->env.flows, cl->proc, &fr, &code, msg, sizeof(msg));
	if (!f)
		return proto_reply_error(req, code, "%s", msg);
	if (*cl->ctl->env.controller) /* admission warning, its rate at once */
		ctrl_flow_registered(*cl->ctl->env.controller, f);
	r = proto_reply_ok(req);
	json_object_set_new(r, "flow", json_integer(f->id));
	json_object_set_new(r, "slot", json_integer(f->gslot));
	json_object_set_new(r, "app_slot", json_integer(f->cslot));
	json_object_set_new(r, "class", json_string(config_class_name(f->cls)));
	json_object_set_new(r, "class_source",
			    json_string(flows_class_source(cl->ctl->env.flows, f)));
	json_object_set_new(r, "warning", f->warning[0] ? json_string(f->warning) : json_null());
	return r;
}

static struct flow *own_flow(struct ctl_client *cl, json_int_t id)
{
	struct flow *f = id > 0 && id <= UINT32_MAX ? flows_find(cl->ctl->env.flows, (uint32_t)id)
						    : NULL;

	return f && f->proc == cl->proc ? f : NULL;
}

static json_t *cmd_update(struct ctl_client *cl, json_t *req)
{
	const char *cmd, *cls = NULL, *gid = NULL, *state = NULL, *split = NULL, *lgid = NULL;
	json_int_t fid, peer = -1, split_qpn = -1, port = -1;
	json_t *id = NULL;
	json_error_t err;
	struct flow *f;
	int v;

	if (json_unpack_ex(req, &err, JSON_STRICT,
			   "{s:i, s:s, s?o, s:I, s?s, s?I, s?s, s?s, s?I, s?I, s?s, s?s}", "v", &v,
			   "cmd", &cmd, "id", &id, "flow", &fid, "class", &cls, "peer_qpn", &peer,
			   "peer_gid", &gid, "state", &state, "port", &port, "split_qpn", &split_qpn,
			   "split", &split, "local_gid", &lgid))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "%s", err.text);
	f = own_flow(cl, fid);
	if (!f)
		return proto_reply_error(req, PROTO_E_NOT_FOUND, "no flow %lld of yours",
					 (long long)fid);
	if (cls) {
		enum flow_class c;

		if (config_class_parse(cls, &c))
			return proto_reply_error(req, PROTO_E_BAD_REQUEST, "unknown class");
		if (!tenant_allows(tenant_rule(cl->ctl->env.cfg, cl->uid, cl->gid), c))
			return proto_reply_error(req, PROTO_E_PERMISSION,
						 "class %s is not allowed for uid %u (tenants policy)",
						 cls, (unsigned)cl->uid);
		f->cls = c;
		f->class_from_app = 1;
	}
	if (peer >= 0 && peer <= 0xffffff)
		f->peer_qpn = peer;
	if (port >= 1 && port <= 255)
		f->port = (unsigned)port;
	if (gid && strlen(gid) < sizeof(f->peer_gid))
		snprintf(f->peer_gid, sizeof(f->peer_gid), "%s", gid);
	if (lgid && strlen(lgid) < sizeof(f->local_gid))
		snprintf(f->local_gid, sizeof(f->local_gid), "%s", lgid);
	if (state && strlen(state) < sizeof(f->state))
		snprintf(f->state, sizeof(f->state), "%s", state);
	if (split_qpn >= 0 && split_qpn <= 0xffffff)
		f->split_qpn = split_qpn;
	if (split && (!strcmp(split, "none") || !strcmp(split, "split") || !strcmp(split, "pace_only")))
		snprintf(f->split, sizeof(f->split), "%s", split);
	if (cls)
		flows_publish_all(cl->ctl->env.flows);
	else
		flows_publish(cl->ctl->env.flows, f);
	return proto_reply_ok(req);
}

/* A reply that comes later (split_peer): the request's id and the client,
 * which may be gone by then. */
struct late_reply {
	struct ctl *ctl;
	uint64_t serial;
	json_t *req;
};

static void split_peer_done(void *arg, int64_t split, const char *why)
{
	struct late_reply *lr = arg;
	struct ctl_client *cl = ctlconn_by_serial(lr->ctl, lr->serial);

	if (cl) {
		json_t *r = proto_reply_ok(lr->req);

		json_object_set_new(r, "split_qpn", split >= 0 ? json_integer(split) : json_null());
		if (split < 0)
			json_object_set_new(r, "reason", json_string(why ? why : "unknown"));
		ctlconn_reply(cl, r, NULL, 0);
	}
	json_decref(lr->req);
	free(lr);
}

/* The split QP of our peer's QP, so that the shim can connect its own split
 * QP to it (never guessed): from our registry, or from the peer's daemon
 * (splitq.c).  The reply may come later; NULL means "not yet". */
static json_t *cmd_split_peer(struct ctl_client *cl, json_t *req)
{
	const char *cmd, *gid;
	json_int_t fid, peer;
	json_t *id = NULL;
	json_error_t err;
	struct late_reply *lr;
	int v;

	if (json_unpack_ex(req, &err, JSON_STRICT, "{s:i, s:s, s?o, s:I, s:I, s:s}", "v", &v,
			   "cmd", &cmd, "id", &id, "flow", &fid, "peer_qpn", &peer, "peer_gid", &gid))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "%s", err.text);
	if (!own_flow(cl, fid))
		return proto_reply_error(req, PROTO_E_NOT_FOUND, "no flow %lld of yours",
					 (long long)fid);
	if (peer < 0 || peer > 0xffffff || strlen(gid) > 63)
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "peer_qpn or peer_gid invalid");
	lr = malloc(sizeof(*lr));
	if (!lr)
		return proto_reply_error(req, PROTO_E_INTERNAL, "out of memory");
	lr->ctl = cl->ctl;
	lr->serial = cl->serial;
	lr->req = json_incref(req);
	cl->ctl->env.split_lookup(cl->ctl->env.split_ctx, gid, (uint32_t)peer, split_peer_done, lr);
	return NULL;
}

static json_t *cmd_unregister(struct ctl_client *cl, json_t *req)
{
	const char *cmd;
	json_int_t fid;
	json_t *id = NULL;
	json_error_t err;
	struct flow *f;
	int v;

	if (json_unpack_ex(req, &err, JSON_STRICT, "{s:i, s:s, s?o, s:I}", "v", &v, "cmd", &cmd,
			   "id", &id, "flow", &fid))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "%s", err.text);
	f = own_flow(cl, fid);
	if (!f)
		return proto_reply_error(req, PROTO_E_NOT_FOUND, "no flow %lld of yours",
					 (long long)fid);
	flows_unregister(cl->ctl->env.flows, f);
	return proto_reply_ok(req);
}

void ctlcmd_dispatch(struct ctl_client *cl, const char *line, size_t len)
{
	int fds[PROTO_MAX_FDS], nfds = 0, ro_fd = -1;
	const char *cmd, *code;
	char msg[256];
	json_t *req, *r;

	req = proto_parse_request(line, len, &cmd, &code, msg, sizeof(msg));
	if (!req) {
		log_debug(LOG_SS_CTL, "pid %d: %s: %s", (int)cl->pid, code, msg);
		ctlconn_reply(cl, proto_reply_invalid(line, len, code, msg), NULL, 0);
		return;
	}
	log_debug(LOG_SS_CTL, "pid %d uid %u: %s", (int)cl->pid, (unsigned)cl->uid, cmd);
	cl->active_ns = cl->ctl->env.now_ns();
	if (!strcmp(cmd, "version"))
		r = ctlview_version(cl, req);
	else if (!strcmp(cmd, "status"))
		r = ctlview_status(cl, req);
	else if (!strcmp(cmd, "flows"))
		r = ctlview_flows(cl, req);
	else if (!strcmp(cmd, "set"))
		r = cmd_set(cl, req);
	else if (!strcmp(cmd, "hello"))
		r = cmd_hello(cl, req, fds, &nfds);
	else if (!strcmp(cmd, "register_qp"))
		r = cmd_register(cl, req);
	else if (!strcmp(cmd, "update_qp"))
		r = cmd_update(cl, req);
	else if (!strcmp(cmd, "unregister_qp"))
		r = cmd_unregister(cl, req);
	else if (!strcmp(cmd, "split_peer"))
		r = cmd_split_peer(cl, req);
	else if (!strcmp(cmd, "calibrate"))
		r = cmd_calibrate(cl, req);
	else
		r = proto_reply_error(req, PROTO_E_UNKNOWN_COMMAND, "unknown command \"%.64s\"", cmd);
	if (nfds)
		ro_fd = fds[0];
	json_decref(req);
	if (r) /* NULL: answered later (split_peer) */
		ctlconn_reply(cl, r, fds, nfds);
	if (ro_fd >= 0)
		close(ro_fd); /* the client has its own copy now */
}

// SPDX-License-Identifier: MIT
/* The daemon side of the control socket.
 *
 * Hygiene (OpenSMTPD/lldpd/chrony): the socket lives in a directory that is
 * not world-accessible; a live socket at the path means another instance
 * runs (we refuse to start), a dead one is stale (unlinked); the umask is
 * tightened before bind(); SO_PEERCRED is read on every accept; mutating
 * commands need uid 0; clients, request size and buffered output are
 * bounded, and a misbehaving client is disconnected, never trusted. */
#include "ctl.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "controller.h"
#include "flows.h"
#include "log.h"
#include "qpwatch.h"
#include "rate.h"
#include "version.h"

#define CLIENT_MAGIC 0x4354434cu /* "CTCL" */
#define OUT_MAX (1u << 20)       /* buffered replies per client */
#define READ_CHUNK 16384
#define ADMIN_RESERVE 8          /* connections beyond max_clients for administrators */
#define OUT_TOTAL_MAX (32u << 20) /* buffered replies of all clients together */
#define ACCEPT_BURST 64          /* connections accepted per wake-up */
#define WARN_EVERY_NS 10000000000ull /* a repeated warning at most once per 10 s */

enum { W_REFUSED, W_UNREAD, W_TOO_LARGE, W_TIMEOUT };
#define FLOWS_PAGE_MAX 500       /* flows per reply: about 250 KiB, far below OUT_MAX */

static void client_close(struct ctl_client *cl);

/* A warning that clients can cause over and over: logged at once, then at
 * most once per 10 s with the number of those not logged meanwhile. */
static void warn_limited(struct ctl *c, int kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void warn_limited(struct ctl *c, int kind, const char *fmt, ...)
{
	uint64_t now = c->env.now_ns();
	char msg[256];
	va_list ap;

	if (c->warn[kind].last_ns && now - c->warn[kind].last_ns < WARN_EVERY_NS) {
		c->warn[kind].suppressed++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->warn[kind].suppressed)
		log_warnx("%s (and %llu more like it in the last %llu s)", msg,
			  (unsigned long long)c->warn[kind].suppressed,
			  (unsigned long long)((now - c->warn[kind].last_ns) / 1000000000ull));
	else
		log_warnx("%s", msg);
	c->warn[kind].last_ns = now;
	c->warn[kind].suppressed = 0;
}

/* ------------------------------------------------------------ output */

static void client_flush(struct ctl_client *cl)
{
	size_t before = cl->out_len;
	int rc = proto_out_flush(cl->fd, cl->out, &cl->out_len);

	if (cl->out_len != before) {
		cl->ctl->out_total -= before - cl->out_len;
		cl->stuck_ns = 0; /* progress */
	}
	if (rc < 0) {
		log_debug(LOG_SS_CTL, "pid %d: send: %s", (int)cl->pid, strerror(-rc));
		client_close(cl);
		return;
	}
	if (cl->out_len) {
		if (!cl->stuck_ns)
			cl->stuck_ns = cl->ctl->env.now_ns();
		ev_io_start(cl->ctl->env.loop, &cl->ww);
	} else {
		cl->stuck_ns = 0;
		ev_io_stop(cl->ctl->env.loop, &cl->ww);
		if (cl->closing)
			client_close(cl);
	}
}

/* Queue a reply (consumes @msg).  Descriptors, if any, travel with its
 * first byte, which needs an empty output queue. */
static void client_reply(struct ctl_client *cl, json_t *msg, const int *fds, int nfds)
{
	size_t len, off = 0;
	char *line = proto_encode(msg, &len);
	int rc;

	json_decref(msg);
	if (!line) {
		client_close(cl);
		return;
	}
	if (nfds) {
		ssize_t n = proto_send_once(cl->fd, line, len, fds, nfds);

		if (n <= 0) {
			log_debug(LOG_SS_CTL, "pid %d: sendmsg: %s", (int)cl->pid,
				  strerror(n ? (int)-n : EIO));
			free(line);
			client_close(cl);
			return;
		}
		off = (size_t)n;
	}
	rc = cl->ctl->out_total + len - off > OUT_TOTAL_MAX
		     ? -ENOBUFS
		     : proto_out_append(&cl->out, &cl->out_len, &cl->out_cap, line + off, len - off,
					OUT_MAX);
	free(line);
	if (rc == -ENOBUFS)
		warn_limited(cl->ctl, W_UNREAD,
			     "pid %d (uid %u) does not read its replies (%zu bytes unsent); "
			     "disconnecting", (int)cl->pid, (unsigned)cl->uid, cl->out_len);
	if (rc) {
		client_close(cl);
		return;
	}
	cl->ctl->out_total += len - off;
	client_flush(cl);
}

/* ------------------------------------------------------------ commands */

/* Commands without arguments still reject unknown members. */
static json_t *no_args(json_t *req)
{
	json_error_t err;
	json_t *id = NULL;
	const char *cmd;
	int v;

	if (json_unpack_ex(req, &err, JSON_STRICT, "{s:i, s:s, s?o}", "v", &v, "cmd", &cmd, "id",
			   &id))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "%s", err.text);
	return NULL;
}

static json_t *cmd_version(struct ctl_client *cl, json_t *req)
{
	json_t *r = no_args(req);

	if (r)
		return r;
	r = proto_reply_ok(req);

	json_object_set_new(r, "version", json_string(JUSTITIA_VERSION));
	json_object_set_new(r, "protocol", json_integer(PROTO_VERSION));
	return r;
}

static json_t *jnum_or_null(uint64_t v)
{
	return v ? json_integer((json_int_t)v) : json_null();
}

static json_t *cmd_status(struct ctl_client *cl, json_t *req)
{
	const struct ctl_env *e = &cl->ctl->env;
	const struct ctrl_view *cv = e->ctrl;
	struct flows_counts fc;
	json_t *r = no_args(req), *devs;
	uint64_t max_rate = 0;

	if (r)
		return r;
	r = proto_reply_ok(req);
	devs = json_array();

	for (size_t i = 0; i < e->cfg->n_devices; i++) {
		const struct config_device *dv = &e->cfg->devices[i];
		uint64_t rate = *e->controller ? ctrl_device_max_rate(*e->controller, dv)
					      : dv->max_rate_bps;

		max_rate += rate;
		json_array_append_new(devs, json_pack("{s:s, s:i, s:i, s:o, s:I}", "name", dv->name,
						      "port", (int)dv->port, "gid_index", dv->gid_index,
						      "max_rate_bps", jnum_or_null(rate),
						      "chunk_bytes", (json_int_t)dv->chunk_default));
	}
	flows_count(e->flows, &fc);
	json_object_set_new(r, "daemon", json_pack("{s:s, s:i, s:I, s:s, s:s, s:I}",
						   "version", JUSTITIA_VERSION, "pid", (int)getpid(),
						   "uptime_ms",
						   (json_int_t)((e->now_ns() - e->start_ns) / 1000000),
						   "config", e->config_path, "socket", cl->ctl->path,
						   "instance", (json_int_t)(e->instance >> 1)));
	json_object_set_new(r, "controller", json_pack(
		"{s:s, s:I, s:o, s:o, s:o, s:o, s:o, s:{s:s, s:o, s:o, s:I}}",
		"mode", cv->mode ? "unattainable" : "normal",
		"target99_ns", (json_int_t)e->cfg->controller.target99_us * 1000,
		"current99_ns", jnum_or_null(cv->current99_ns), "p50_ns", jnum_or_null(cv->p50_ns),
		"p999_ns", jnum_or_null(cv->p999_ns),
		"safe_util_bps", jnum_or_null(cv->safe_util_bps ? cv->safe_util_bps : max_rate),
		"max_rate_bps", jnum_or_null(max_rate),
		"reference", "state", cv->ref_state ? cv->ref_state : "off",
		"peer", cv->ref_peer[0] ? json_string(cv->ref_peer) : json_null(),
		"error", cv->ref_error[0] ? json_string(cv->ref_error) : json_null(),
		"samples", (json_int_t)cv->samples));
	if (*e->controller)
		ctrl_status(*e->controller, json_object_get(r, "controller"));
	json_object_set_new(r, "devices", devs);
	json_object_set_new(r, "counts", json_pack("{s:I, s:I, s:I, s:I, s:I}",
						   "clients", (json_int_t)cl->ctl->n_clients,
						   "flows", (json_int_t)fc.flows,
						   "latency", (json_int_t)fc.by_class[FLOW_CLASS_LATENCY],
						   "throughput",
						   (json_int_t)fc.by_class[FLOW_CLASS_THROUGHPUT],
						   "bandwidth",
						   (json_int_t)fc.by_class[FLOW_CLASS_BANDWIDTH]));
	json_object_set_new(r, "limits", json_pack("{s:I, s:I, s:I}",
						   "max_clients", (json_int_t)e->cfg->limits.max_clients,
						   "max_flows", (json_int_t)e->cfg->limits.max_flows,
						   "max_flows_per_client",
						   (json_int_t)e->cfg->limits.max_flows_per_client));
	if (*e->qpw) {
		json_object_set_new(json_object_get(r, "counts"), "unmanaged",
				    qpwatch_unmanaged_json(*e->qpw));
		json_object_set_new(r, "qpwatch", qpwatch_status_json(*e->qpw));
	}
	return r;
}

static int cmp_flow_id(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "id"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "id"));

	return (x > y) - (x < y);
}

/* One page of the flows: registered flows by id after "after", then (with
 * "all") unmanaged QPs from index "unmanaged_from"; at most "limit"
 * entries, so that a reply stays far below OUT_MAX whatever max_flows is.
 * "next" holds what the following request adds, null on the last page. */
static json_t *cmd_flows(struct ctl_client *cl, json_t *req)
{
	const struct ctl_env *e = &cl->ctl->env;
	json_int_t after = 0, um_from = -1, limit = FLOWS_PAGE_MAX;
	json_t *id = NULL, *all_flows, *page, *next = json_null(), *r;
	json_error_t err;
	int v, all = 0;
	const char *cmd;
	size_t n, i;

	if (json_unpack_ex(req, &err, JSON_STRICT, "{s:i, s:s, s?o, s?b, s?I, s?I, s?I}", "v", &v,
			   "cmd", &cmd, "id", &id, "all", &all, "after", &after, "unmanaged_from",
			   &um_from, "limit", &limit))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST, "%s", err.text);
	if (after < 0 || after > UINT32_MAX || limit < 1 || limit > FLOWS_PAGE_MAX ||
	    (json_object_get(req, "unmanaged_from") && (um_from < 0 || !all)))
		return proto_reply_error(req, PROTO_E_BAD_REQUEST,
					 "after 0..4294967295, limit 1..%d, unmanaged_from >= 0 "
					 "(with all)", FLOWS_PAGE_MAX);
	page = json_array();
	if (um_from < 0) { /* the registered flows, in the order of their ids */
		all_flows = flows_to_json(e->flows);
		n = json_array_size(all_flows);
		{
			json_t **byid = calloc(n ? n : 1, sizeof(*byid));

			if (!byid) {
				json_decref(all_flows);
				json_decref(page);
				return proto_reply_error(req, PROTO_E_INTERNAL, "out of memory");
			}
			for (i = 0; i < n; i++)
				byid[i] = json_array_get(all_flows, i);
			qsort(byid, n, sizeof(*byid), cmp_flow_id);
			for (i = 0; i < n; i++) {
				json_int_t fid = json_integer_value(json_object_get(byid[i], "id"));

				if (fid <= after)
					continue;
				if ((json_int_t)json_array_size(page) == limit) {
					json_int_t last = json_integer_value(json_object_get(
						json_array_get(page, json_array_size(page) - 1), "id"));

					next = json_pack("{s:I}", "after", last);
					break;
				}
				json_array_append(page, byid[i]);
			}
			free(byid);
		}
		json_decref(all_flows);
		um_from = 0;
	}
	if (json_is_null(next) && all && *e->qpw) {
		json_t *um = json_array();

		qpwatch_append_unmanaged(*e->qpw, um);
		n = json_array_size(um);
		for (i = (size_t)um_from; i < n; i++) {
			if ((json_int_t)json_array_size(page) == limit) {
				next = json_pack("{s:I}", "unmanaged_from", (json_int_t)i);
				break;
			}
			json_array_append(page, json_array_get(um, i));
		}
		json_decref(um);
	}
	r = proto_reply_ok(req);
	json_object_set_new(r, "flows", page);
	json_object_set_new(r, "next", next);
	return r;
}

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

static struct ctl_client *client_by_serial(struct ctl *c, uint64_t serial)
{
	for (struct ctl_client *cl = c->clients; cl; cl = cl->next)
		if (cl->serial == serial && cl->magic == CLIENT_MAGIC)
			return cl;
	return NULL;
}

static void split_peer_done(void *arg, int64_t split, const char *why)
{
	struct late_reply *lr = arg;
	struct ctl_client *cl = client_by_serial(lr->ctl, lr->serial);

	if (cl) {
		json_t *r = proto_reply_ok(lr->req);

		json_object_set_new(r, "split_qpn", split >= 0 ? json_integer(split) : json_null());
		if (split < 0)
			json_object_set_new(r, "reason", json_string(why ? why : "unknown"));
		client_reply(cl, r, NULL, 0);
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

static void dispatch(struct ctl_client *cl, const char *line, size_t len)
{
	int fds[PROTO_MAX_FDS], nfds = 0, ro_fd = -1;
	const char *cmd, *code;
	char msg[256];
	json_t *req, *r;

	req = proto_parse_request(line, len, &cmd, &code, msg, sizeof(msg));
	if (!req) {
		log_debug(LOG_SS_CTL, "pid %d: %s: %s", (int)cl->pid, code, msg);
		client_reply(cl, proto_reply_invalid(line, len, code, msg), NULL, 0);
		return;
	}
	log_debug(LOG_SS_CTL, "pid %d uid %u: %s", (int)cl->pid, (unsigned)cl->uid, cmd);
	cl->active_ns = cl->ctl->env.now_ns();
	if (!strcmp(cmd, "version"))
		r = cmd_version(cl, req);
	else if (!strcmp(cmd, "status"))
		r = cmd_status(cl, req);
	else if (!strcmp(cmd, "flows"))
		r = cmd_flows(cl, req);
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
		client_reply(cl, r, fds, nfds);
	if (ro_fd >= 0)
		close(ro_fd); /* the client has its own copy now */
}

/* ------------------------------------------------------------ connections */

static void client_close(struct ctl_client *cl)
{
	struct ctl *c = cl->ctl;
	struct ctl_client **pp;

	if (cl->magic != CLIENT_MAGIC)
		return;
	ev_io_stop(c->env.loop, &cl->rw);
	ev_io_stop(c->env.loop, &cl->ww);
	for (pp = &c->clients; *pp; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
	c->n_clients--;
	c->n_reserved -= cl->reserved ? 1 : 0;
	c->out_total -= cl->out_len;
	if (cl->proc) {
		log_debug(LOG_SS_FLOW, "pid %d disconnected: freeing %zu flows", (int)cl->pid,
			  cl->proc->n_flows);
		flows_proc_free(c->env.flows, cl->proc);
	}
	close(cl->fd);
	cl->fd = -1;
	proto_linebuf_free(&cl->in);
	free(cl->out);
	cl->out = NULL;
	cl->out_len = cl->out_cap = 0;
	/* not freed here: the caller may be client_read_cb's loop, which looks
	 * at cl->magic after each request (two requests in one write, the first
	 * reply failing); reap_cb frees it once the callback has returned */
	cl->magic = 0;
	cl->next = c->graveyard;
	c->graveyard = cl;
	ev_timer_set(&c->reap_w, 0, 0);
	ev_timer_start(c->env.loop, &c->reap_w);
}

static void reap(struct ctl *c)
{
	while (c->graveyard) {
		struct ctl_client *cl = c->graveyard;

		c->graveyard = cl->next;
		free(cl);
	}
}

static void reap_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	reap(w->data);
}

static void client_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl_client *cl = w->data;
	char buf[READ_CHUNK], *line;
	size_t len;
	ssize_t n;
	int rc;

	if (cl->magic != CLIENT_MAGIC)
		return;
	n = recv(cl->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(cl);
		return;
	}
	if (cl->closing)
		return; /* ignore input after a fatal error */
	rc = proto_linebuf_feed(&cl->in, buf, (size_t)n);
	/* answer the complete requests first; client_reply may close the
	 * client, so re-check the magic each round */
	while (cl->magic == CLIENT_MAGIC && !cl->closing &&
	       proto_linebuf_next(&cl->in, &line, &len) == 1) {
		dispatch(cl, line, len);
		free(line);
	}
	if (cl->magic == CLIENT_MAGIC) /* half a line waiting: since when */
		cl->partial_ns = cl->in.len > cl->in.tail
					 ? (cl->partial_ns ? cl->partial_ns : cl->ctl->env.now_ns())
					 : 0;
	if (rc == -EMSGSIZE && cl->magic == CLIENT_MAGIC && !cl->closing) {
		warn_limited(cl->ctl, W_TOO_LARGE,
			     "pid %d (uid %u) sent a request over %zu bytes; disconnecting",
			     (int)cl->pid, (unsigned)cl->uid, cl->in.max);
		cl->closing = 1;
		ev_io_stop(loop, &cl->rw);
		client_reply(cl, proto_reply_error(NULL, PROTO_E_TOO_LARGE,
						   "request longer than %zu bytes", cl->in.max),
			     NULL, 0);
	}
}

static void client_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl_client *cl = w->data;

	if (cl->magic == CLIENT_MAGIC)
		client_flush(cl);
}

/* Refuse a connection: one limit error without id, then close. */
static void refuse(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void refuse(int fd, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	json_t *e;
	size_t l;
	char *line;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e = proto_reply_error(NULL, PROTO_E_LIMIT, "%s", msg);
	line = proto_encode(e, &l);
	json_decref(e);
	if (line && send(fd, line, l, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* best effort: the client learns why from the reply */
	}
	free(line);
	close(fd);
}

/* Which slot a new connection of @uid gets: 0 a normal one, 1 one of the
 * administrators' reserve (after closing the reserved connection idle
 * longest if they are all taken), -1 none (the reason in @why). */
static int admit(struct ctl *c, uid_t uid, bool admin, char *why, size_t n)
{
	const struct config_limits *lim = &c->env.cfg->limits;
	struct ctl_client *oldest = NULL;
	size_t of_uid = 0;

	for (struct ctl_client *cl = c->clients; cl; cl = cl->next) {
		of_uid += cl->uid == uid && !cl->reserved;
		if (cl->reserved && !cl->closing && (!oldest || cl->active_ns < oldest->active_ns))
			oldest = cl;
	}
	if (c->n_clients - c->n_reserved < lim->max_clients && of_uid < lim->max_clients_per_uid)
		return 0;
	if (c->n_clients - c->n_reserved >= lim->max_clients)
		snprintf(why, n, "too many clients (max_clients %u)", lim->max_clients);
	else
		snprintf(why, n, "too many clients of uid %u (max_clients_per_uid %u)",
			 (unsigned)uid, lim->max_clients_per_uid);
	if (!admin)
		return -1;
	if (c->n_reserved >= ADMIN_RESERVE) {
		if (!oldest)
			return -1;
		log_info("administrators' reserve full: closing the connection of pid %d idle "
			 "longest", (int)oldest->pid);
		oldest->closing = 1;
		client_reply(oldest, proto_reply_error(NULL, PROTO_E_LIMIT,
						       "closed: another administrator needed "
						       "this reserved connection"),
			     NULL, 0);
		client_close(oldest); /* now, flushed or not: its slot is needed */
	}
	return 1;
}

static void accept_one(struct ctl *c, struct ev_loop *loop, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct ctl_client *cl;
	char why[160];
	bool admin;
	int slot;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		log_warn("SO_PEERCRED");
		close(fd);
		return;
	}
	/* root and the daemon's own user always get an answer: a reserve of
	 * connections beyond max_clients that no shim may hold */
	admin = cred.uid == 0 || cred.uid == geteuid();
	slot = admit(c, cred.uid, admin, why, sizeof(why));
	if (slot < 0) {
		warn_limited(c, W_REFUSED, "refusing pid %d uid %u: %s", (int)cred.pid,
			     (unsigned)cred.uid, why);
		refuse(fd, "%s", why);
		return;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		close(fd);
		return;
	}
	cl->magic = CLIENT_MAGIC;
	cl->serial = ++c->next_serial;
	cl->fd = fd;
	cl->ctl = c;
	cl->pid = cred.pid;
	cl->uid = cred.uid;
	cl->gid = cred.gid;
	cl->admin = admin;
	cl->reserved = slot == 1;
	cl->active_ns = c->env.now_ns();
	proto_linebuf_init(&cl->in, c->env.cfg->limits.max_request_bytes);
	ev_io_init(&cl->rw, client_read_cb, fd, EV_READ);
	ev_io_init(&cl->ww, client_write_cb, fd, EV_WRITE);
	cl->rw.data = cl;
	cl->ww.data = cl;
	ev_io_start(loop, &cl->rw);
	cl->next = c->clients;
	c->clients = cl;
	c->n_clients++;
	c->n_reserved += cl->reserved ? 1 : 0;
	log_debug(LOG_SS_CTL, "connection from pid %d uid %u%s", (int)cred.pid, (unsigned)cred.uid,
		  cl->reserved ? " (administrators' reserve)" : "");
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl *c = w->data;

	for (int i = 0; i < ACCEPT_BURST; i++) {
		int fd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn("accept");
			return;
		}
		accept_one(c, loop, fd);
	}
}

/* Once a second: close what waits too long.  A connection without hello
 * (not a shim) that sends no complete request, any connection with half a
 * request, or unread replies, for limits.idle_timeout_ms. */
static void idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ctl *c = w->data;
	uint64_t now = c->env.now_ns(), lim = c->env.cfg->limits.idle_timeout_ms * 1000000ull;
	struct ctl_client *cl, *next;

	for (cl = c->clients; cl; cl = next) {
		const char *why = NULL;

		next = cl->next;
		if (cl->closing)
			continue;
		if (cl->stuck_ns && now - cl->stuck_ns > lim) {
			warn_limited(c, W_TIMEOUT, "pid %d (uid %u) has not read its replies for "
				     "%u ms; disconnecting", (int)cl->pid, (unsigned)cl->uid,
				     c->env.cfg->limits.idle_timeout_ms);
			client_close(cl);
			continue;
		}
		if (cl->partial_ns && now - cl->partial_ns > lim)
			why = "request incomplete";
		else if (!cl->proc && !cl->out_len && now - cl->active_ns > lim)
			why = "no request";
		if (!why)
			continue;
		warn_limited(c, W_TIMEOUT, "pid %d (uid %u): %s for %u ms; disconnecting",
			     (int)cl->pid, (unsigned)cl->uid, why, c->env.cfg->limits.idle_timeout_ms);
		cl->closing = 1;
		ev_io_stop(loop, &cl->rw);
		client_reply(cl, proto_reply_error(NULL, PROTO_E_TIMEOUT, "%s for %u ms: closing",
						   why, c->env.cfg->limits.idle_timeout_ms),
			     NULL, 0);
		if (cl->magic == CLIENT_MAGIC && cl->out_len) /* cannot even take that */
			client_close(cl);
	}
}

/* ------------------------------------------------------------ setup */

/* Does @dir hold anything but @keep (the socket's name)?  1, 0 or -errno. */
static int has_other_entries(const char *dir, const char *keep)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	int other = 0;

	if (!dp)
		return -errno;
	while (!other && (e = readdir(dp)))
		other = strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
			(!keep || strcmp(e->d_name, keep));
	closedir(dp);
	return other;
}

/* The directory of the socket.  One the daemon creates, or finds holding
 * nothing but its socket, is its own: 0750 root:<socket_group>, 0700
 * without a group.  A directory with other files in it ("/run") is shared:
 * its mode and group are left alone (the socket itself is 0660).  One that
 * everybody may write to ("/tmp") or that is not ours disables the socket. */
static int secure_dir(const char *dir, gid_t gid, const char *keep)
{
	struct stat st;
	int own = 1;

	if (mkdir(dir, 0700)) {
		if (errno != EEXIST) {
			log_warn("cannot create %s", dir);
			return -errno;
		}
		own = 0;
	}
	if (lstat(dir, &st)) {
		log_warn("%s", dir);
		return -errno;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		log_warnx("%s is not a directory owned by uid %u: control socket disabled", dir,
			  (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & S_IWOTH) {
		log_warnx("%s is writable by everybody (mode %04o): control socket disabled; "
			  "use a directory of its own", dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	if (!own) {
		own = has_other_entries(dir, keep);
		if (own < 0) {
			log_warn("cannot read %s", dir);
			return own;
		}
		own = !own;
	}
	if (!own) {
		log_info("%s holds other files: its mode (%04o) and group are left as they are",
			 dir, (unsigned)(st.st_mode & 07777));
		return 0;
	}
	if (chown(dir, (uid_t)-1, gid) || chmod(dir, gid != (gid_t)-1 ? 0750 : 0700)) {
		log_warn("cannot secure %s", dir);
		return -errno;
	}
	return 0;
}

static int stale_check(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (lstat(path, &st)) {
		return errno == ENOENT ? 0 : -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		log_warnx("%s exists and is not a socket; not touching it", path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (rc == 0) {
		log_warnx("another justitiad answers on %s", path);
		return -EADDRINUSE;
	}
	if (errno != ECONNREFUSED) {
		log_warn("probing %s", path);
		return -errno;
	}
	log_info("removing stale socket %s", path);
	return unlink(path) ? -errno : 0;
}

int ctl_open(struct ctl *c, const struct ctl_env *env)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	gid_t gid = (gid_t)-1;
	char dir[sizeof(c->path)], *slash;
	const char *base;
	mode_t old;
	int rc;

	memset(c, 0, sizeof(*c));
	c->env = *env;
	c->lfd = -1;
	ev_init(&c->reap_w, reap_cb);
	c->reap_w.data = c;
	snprintf(c->path, sizeof(c->path), "%s", env->cfg->socket);
	if (env->cfg->socket_group[0]) {
		struct group *g = getgrnam(env->cfg->socket_group);

		if (!g) {
			log_warnx("socket_group \"%s\" does not exist", env->cfg->socket_group);
			return -ENOENT;
		}
		gid = g->gr_gid;
	}
	snprintf(dir, sizeof(dir), "%s", c->path);
	slash = strrchr(dir, '/');
	base = slash ? slash + 1 : dir;
	if (slash && slash != dir)
		*slash = 0;
	rc = secure_dir(env->cfg->runtime_dir, gid,
			strcmp(dir, env->cfg->runtime_dir) ? NULL : base);
	if (rc)
		return rc;
	if (slash && slash != dir) {
		if (strcmp(dir, env->cfg->runtime_dir)) {
			rc = secure_dir(dir, gid, base);
			if (rc)
				return rc;
		}
	}
	rc = stale_check(c->path);
	if (rc)
		return rc;
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->lfd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->path);
	old = umask(0117); /* socket 0660 from the start: no window */
	rc = bind(c->lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc) {
		rc = -errno;
		log_warn("bind %s", c->path);
		goto out_close;
	}
	if (gid != (gid_t)-1 && chown(c->path, (uid_t)-1, gid)) {
		rc = -errno;
		log_warn("chown %s", c->path);
		goto out_unlink;
	}
	if (listen(c->lfd, SOMAXCONN)) {
		rc = -errno;
		goto out_unlink;
	}
	ev_io_init(&c->lw, accept_cb, c->lfd, EV_READ);
	c->lw.data = c;
	ev_io_start(env->loop, &c->lw);
	ev_timer_init(&c->idle_w, idle_cb, 1.0, env->cfg->limits.idle_timeout_ms < 2000
							? env->cfg->limits.idle_timeout_ms / 2000.0
							: 1.0);
	c->idle_w.data = c;
	ev_timer_start(env->loop, &c->idle_w);
	log_info("listening on %s", c->path);
	return 0;
out_unlink:
	unlink(c->path);
out_close:
	close(c->lfd);
	c->lfd = -1;
	return rc;
}

void ctl_close(struct ctl *c)
{
	while (c->clients)
		client_close(c->clients);
	ev_timer_stop(c->env.loop, &c->reap_w);
	ev_timer_stop(c->env.loop, &c->idle_w);
	reap(c);
	if (c->lfd >= 0) {
		ev_io_stop(c->env.loop, &c->lw);
		close(c->lfd);
		unlink(c->path);
		c->lfd = -1;
	}
}

// SPDX-License-Identifier: MIT
/* The control socket's read-only commands: version, status (the daemon,
 * the controller's view, devices, counts, limits, the QP watcher) and
 * flows in pages (registered flows by id, then unmanaged QPs).
 * May call: flows, controller (status), qpwatch, proto; not ctl.c or
 * ctlconn.c (the caller sends the reply). */
#include "ctlview.h"

#include <stdlib.h>
#include <unistd.h>

#include "controller.h"
#include "flows.h"
#include "qpwatch.h"
#include "version.h"

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

json_t *ctlview_version(struct ctl_client *cl, json_t *req)
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

/* a quantile of the latency window: null until there is one */
static json_t *measured(const struct ctrl_view *cv, uint64_t v)
{
	return cv->measured ? json_integer((json_int_t)v) : json_null();
}

json_t *ctlview_status(struct ctl_client *cl, json_t *req)
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
	/* the configured target; a running controller's ctrl_status() below
	 * replaces it with the one in force (over the base, say) */
	json_object_set_new(r, "controller", json_pack(
		"{s:s, s:I, s:o, s:o, s:o, s:o, s:o, s:{s:s, s:o, s:o, s:I}}",
		"mode", cv->mode ? "unattainable" : "normal",
		"target99_ns", (json_int_t)e->cfg->controller.target99_us * 1000,
		"current99_ns", measured(cv, cv->current99_ns), "p50_ns", measured(cv, cv->p50_ns),
		"p999_ns", measured(cv, cv->p999_ns),
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
	if (e->remote_read) {
		json_t *rr = e->remote_read(e->remote_ctx);

		if (rr)
			json_object_set_new(r, "remote_read", rr);
	}
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
json_t *ctlview_flows(struct ctl_client *cl, json_t *req)
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
	/* the first page: the READ flows other hosts registered here */
	if (!after && !json_object_get(req, "unmanaged_from") && e->remote_read) {
		json_t *rr = e->remote_read(e->remote_ctx);
		json_t *ent = json_object_get(json_object_get(rr, "served"), "entries");

		json_object_set_new(r, "remote", ent ? json_incref(ent) : json_array());
		json_decref(rr);
	}
	return r;
}


// SPDX-License-Identifier: MIT
/* justctl's replies as text (see ctl_show.h): status, flows, set, version,
 * calibrate and error replies, each written to any FILE *.
 * May call: ctl_text (fields, tables), common/proto.h (PROTO_VERSION),
 * jansson and libc; never the socket. */
#include "ctl_show.h"

#include "ctl_text.h"
#include "proto.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ status */

/* The daemon's QP watcher (docs/qpwatch.md), when the reply has one. */
static void show_qpwatch(const json_t *qw, const json_t *cnt, FILE *out)
{
	char *a, *b, *e, *f;
	uint64_t lost;

	if (!json_is_object(qw))
		return;
	a = ctl_field_str(qw, "state");
	if (ctl_jstr(qw, "reason")) {
		ctl_kv(out, "qpwatch:", ctl_xasprintf("%s: %s", a, ctl_jstr(qw, "reason")));
		free(a);
		return;
	}
	b = ctl_field_str(qw, "mode");
	e = ctl_field(qw, "qps", ctl_fmt_plain);
	f = ctl_field(cnt, "unmanaged", ctl_fmt_plain);
	ctl_kv(out, "qpwatch:",
	       ctl_xasprintf("%s (%s), %s user QPs, %s unmanaged%s", a, b, e, f,
			     ctl_juint(qw, "lost", &lost) && lost ? ", records lost" : ""));
	free(a);
	free(b);
	free(e);
	free(f);
}

/* The isolation controller's port, MaxRate, floor, trace and calibration,
 * when the reply has them. */
static void show_controller(const json_t *c, FILE *out)
{
	const json_t *dev = json_object_get(c, "device"), *trace = json_object_get(c, "trace");
	const json_t *cal = json_object_get(c, "calibration"), *e;
	uint64_t lo = UINT64_MAX, hi = 0, v, t0 = 0, t1 = 0;
	char *a, *b, *d;
	size_t i;

	if (!json_object_get(c, "max_rate_source"))
		return;
	a = ctl_field(dev, "port", ctl_fmt_plain);
	b = ctl_field(c, "floor_bps", ctl_fmt_rate);
	d = ctl_field_str(c, "action");
	ctl_kv(out, "controller:",
	       ctl_xasprintf("%s/%s, max rate from %s, floor %s, last step: %s%s",
			     ctl_or_dash(ctl_jstr(dev, "name")), a,
			     ctl_or_dash(ctl_jstr(c, "max_rate_source")), b, d,
			     json_is_true(json_object_get(c, "unattainable"))
				 ? ", target unattainable"
				 : ""));
	free(a);
	free(b);
	free(d);
	json_array_foreach(trace, i, e) {
		if (ctl_juint(e, "min_bps", &v) && v < lo)
			lo = v;
		if (ctl_juint(e, "max_bps", &v) && v > hi)
			hi = v;
		if (ctl_juint(e, "t_ms", &v)) {
			t0 = i ? t0 : v;
			t1 = v;
		}
	}
	if (json_array_size(trace) && lo <= hi) {
		a = ctl_fmt_rate(lo);
		b = ctl_fmt_rate(hi);
		ctl_kv(out, "trace:",
		       ctl_xasprintf("safe util %s .. %s over the last %.1f s", a, b,
				     (double)(t1 - t0) / 1000));
		free(a);
		free(b);
	}
	if (json_is_object(cal)) {
		a = ctl_field_str(cal, "state");
		b = ctl_field(cal, "max_rate_bps", ctl_fmt_rate);
		d = ctl_jstr(cal, "error") ? ctl_xasprintf(", error: %s", ctl_jstr(cal, "error"))
				       : ctl_xasprintf("%s", "");
		if (json_is_integer(json_object_get(cal, "qps"))) {
			char *q = ctl_field(cal, "qps", ctl_fmt_plain);

			ctl_kv(out, "calibration:",
			       ctl_xasprintf("%s, measured %s over %s QPs%s", a, b, q, d));
			free(q);
		} else {
			ctl_kv(out, "calibration:", ctl_xasprintf("%s, measured %s%s", a, b, d));
		}
		free(a);
		free(b);
		free(d);
	}
}

/* The daemon channel: where it listens and how it is protected. */
static void show_channel(const json_t *ch, FILE *out)
{
	const char *listen = ctl_jstr(ch, "listen"), *enc = ctl_jstr(ch, "encryption");
	const char *err = ctl_jstr(ch, "error");
	char *where, *port;

	if (!ch)
		return;
	port = ctl_field(ch, "port", ctl_fmt_plain);
	where = listen ? ctl_xasprintf("%s port %s", listen, port)
		       : ctl_xasprintf("%s", "not listening");
	ctl_kv(out, "channel:",
	       ctl_xasprintf("%s, %s%s%s", where,
			     enc ? "authenticated, encrypted (" : "in the clear (no secret_file)",
			     enc ? enc : "", enc ? ")" : ""));
	if (err)
		ctl_kv(out, "channel error:", ctl_xasprintf("%s", err));
	free(where);
	free(port);
}

/* Remote READ control and receiver-side views: the flows served here,
 * ours registered elsewhere. */
static void show_remote_status(const json_t *rr, FILE *out)
{
	const json_t *sv = json_object_get(rr, "served"), *rq = json_object_get(rr, "requested");
	const json_t *in = json_object_get(sv, "incoming");
	uint64_t all = 0, lat = 0, bw = 0;
	char *b, *c, *d;

	if (!rr)
		return;
	ctl_juint(sv, "flows", &all);
	ctl_juint(in, "latency", &lat);
	ctl_juint(in, "bandwidth", &bw);
	b = ctl_field(sv, "refused", ctl_fmt_plain);
	c = ctl_field(rq, "registered", ctl_fmt_plain);
	d = ctl_field(rq, "unmanaged", ctl_fmt_plain);
	ctl_kv(out, "remote READ:", ctl_xasprintf("serving %" PRIu64 " flows of other hosts (%s "
						  "refused); ours: %s registered, %s unmanaged",
						  all >= lat + bw ? all - lat - bw : 0, b, c, d));
	if (in)
		ctl_kv(out, "incoming:", ctl_xasprintf("%" PRIu64 " latency, %" PRIu64 " bandwidth "
						       "flows of other hosts arrive here "
						       "(receiver-side views)", lat, bw));
	free(b);
	free(c);
	free(d);
}

void ctl_show_status(const json_t *reply, FILE *out)
{
	static const char *const head[] = { "DEVICE", "PORT", "GID", "MAX RATE", "CHUNK" };
	static const bool right[] = { false, true, true, true, true };
	const json_t *d = json_object_get(reply, "daemon");
	const json_t *c = json_object_get(reply, "controller");
	const json_t *ref = json_object_get(c, "reference");
	const json_t *cnt = json_object_get(reply, "counts");
	const json_t *lim = json_object_get(reply, "limits");
	const json_t *devs = json_object_get(reply, "devices");
	struct ctl_table t = { .ncols = 5, .head = head, .right = right };
	char *a, *b, *e, *f;
	const json_t *dev;
	size_t i;
	uint64_t v;

	a = ctl_field(d, "pid", ctl_fmt_plain);
	b = ctl_field(d, "uptime_ms", ctl_fmt_uptime);
	e = ctl_field_str(d, "version");
	ctl_kv(out, "daemon:", ctl_xasprintf("justitiad %s, pid %s, up %s", e, a, b));
	free(a);
	free(b);
	free(e);
	ctl_kv(out, "config:", ctl_field_str(d, "config"));
	ctl_kv(out, "socket:", ctl_field_str(d, "socket"));
	ctl_kv(out, "instance:", ctl_field_scalar(d, "instance"));

	ctl_kv(out, "mode:", ctl_field_str(c, "mode"));
	ctl_kv(out, "target p99:", ctl_field(c, "target99_ns", ctl_fmt_ns));
	if (ctl_juint(c, "current99_ns", &v)) {
		a = ctl_fmt_ns(v);
		b = ctl_field(c, "p50_ns", ctl_fmt_ns);
		e = ctl_field(c, "p999_ns", ctl_fmt_ns);
		if (ctl_juint(ref, "uncorrected99_ns", &v)) {
			char *u = ctl_fmt_ns(v);

			ctl_kv(out, "latency:",
			       ctl_xasprintf("p99 %s (p50 %s, p99.9 %s; %s before the loopback "
					     "correction)", a, b, e, u));
			free(u);
		} else {
			ctl_kv(out, "latency:", ctl_xasprintf("p99 %s (p50 %s, p99.9 %s)", a, b, e));
		}
		free(a);
		free(b);
		free(e);
	} else {
		ctl_kv(out, "latency:", ctl_xasprintf("no measurement yet"));
	}
	a = ctl_field(c, "safe_util_bps", ctl_fmt_rate);
	b = ctl_field(c, "max_rate_bps", ctl_fmt_rate);
	ctl_kv(out, "safe util:", ctl_xasprintf("%s of %s", a, b));
	free(a);
	free(b);
	a = ctl_field_str(ref, "state");
	b = ctl_field_str(ref, "peer");
	e = ctl_field(ref, "samples", ctl_fmt_plain);
	f = ctl_jstr(ref, "error") ? ctl_xasprintf(", error: %s", ctl_jstr(ref, "error")) : ctl_xasprintf("%s", "");
	ctl_kv(out, "reference:", ctl_xasprintf("%s, peer %s, %s samples%s", a, b, e, f));
	free(a);
	free(b);
	free(e);
	free(f);
	show_channel(json_object_get(ref, "channel"), out);
	show_controller(c, out);

	a = ctl_field(cnt, "clients", ctl_fmt_plain);
	b = ctl_field(lim, "max_clients", ctl_fmt_plain);
	ctl_kv(out, "clients:", ctl_xasprintf("%s (max %s)", a, b));
	free(a);
	free(b);
	a = ctl_field(cnt, "flows", ctl_fmt_plain);
	b = ctl_field(lim, "max_flows", ctl_fmt_plain);
	e = ctl_field(lim, "max_flows_per_client", ctl_fmt_plain);
	ctl_kv(out, "flows:", ctl_xasprintf("%s (max %s, %s per client)", a, b, e));
	free(a);
	free(b);
	free(e);
	a = ctl_field(cnt, "latency", ctl_fmt_plain);
	b = ctl_field(cnt, "throughput", ctl_fmt_plain);
	e = ctl_field(cnt, "bandwidth", ctl_fmt_plain);
	ctl_kv(out, "classes:", ctl_xasprintf("latency %s, throughput %s, bandwidth %s", a, b, e));
	free(a);
	free(b);
	free(e);
	show_qpwatch(json_object_get(reply, "qpwatch"), cnt, out);
	show_remote_status(json_object_get(reply, "remote_read"), out);

	fputc('\n', out);
	if (!json_array_size(devs)) {
		fputs("no devices\n", out);
		return;
	}
	json_array_foreach(devs, i, dev) {
		ctl_table_add(&t, ctl_field_str(dev, "name"));
		ctl_table_add(&t, ctl_field(dev, "port", ctl_fmt_plain));
		ctl_table_add(&t, ctl_field(dev, "gid_index", ctl_fmt_plain));
		ctl_table_add(&t, ctl_field(dev, "max_rate_bps", ctl_fmt_rate));
		ctl_table_add(&t, ctl_field(dev, "chunk_bytes", ctl_fmt_bytes));
	}
	ctl_table_print(&t, out);
}

/* ------------------------------------------------------------ flows */

/* A READ flow's word from its responder's daemon (remote READ control),
 * or a flow's from its receiver's (receiver-side view), after the flow's
 * own warning. */
static char *remote_note(const json_t *rm, const char *warn)
{
	const char *rw = ctl_jstr(rm, "warning"), *peer = ctl_jstr(rm, "peer");
	const char *kind = ctl_jstr(rm, "kind");
	const char *what = kind && !strcmp(kind, "recv") ? "receiver" : "remote READ";
	uint64_t g;
	char *r, *gs;

	if (!json_is_object(rm))
		return ctl_xasprintf("%s", ctl_or_dash(warn));
	if (rw)
		return ctl_xasprintf("%s%s%s", warn ? warn : "", warn ? "; " : "", rw);
	if (ctl_juint(rm, "grant_bps", &g) || ctl_juint(rm, "grant_ops_per_s", &g)) {
		/* (a throughput READ flow's grant is in ops/s) */
		gs = json_is_integer(json_object_get(rm, "grant_ops_per_s")) ? ctl_fmt_ops(g)
									      : ctl_fmt_rate(g);
		r = ctl_xasprintf("%s%s%s: %s grants %s", warn ? warn : "", warn ? "; " : "", what,
				  ctl_or_dash(peer), gs);
		free(gs);
		return r;
	}
	return ctl_xasprintf("%s%s%s: %s %s", warn ? warn : "", warn ? "; " : "", what,
			     ctl_or_dash(ctl_jstr(rm, "state")), ctl_or_dash(peer));
}

/* The flows of @kind other hosts' daemons registered here: READ flows
 * (this NIC sends their data) or incoming ones (it receives it). */
static void show_remote_kind(const json_t *remote, const char *kind, FILE *out)
{
	static const char *const head[] = { "PEER", "FLOW", "QPN", "LOCAL QPN", "CLASS", "WEIGHT",
					    "ACTIVE", "SHARE" };
	static const bool right[] = { false, true, true, true, false, true, false, true };
	struct ctl_table t = { .ncols = 8, .head = head, .right = right };
	const json_t *e;
	size_t i;

	json_array_foreach(remote, i, e) {
		const char *k = ctl_jstr(e, "kind");

		if (strcmp(k ? k : "read", kind))
			continue;
		if (!t.ncells)
			fputs(!strcmp(kind, "read")
				      ? "\nremote READ flows served here (their data leaves this "
					"host's NIC):\n"
				      : "\nincoming flows served here (receiver-side views: "
					"their data arrives at this host; SHARE: its "
					"receiver-side grant):\n",
			      out);
		ctl_table_add(&t, ctl_field_str(e, "peer"));
		ctl_table_add(&t, ctl_field(e, "flow", ctl_fmt_plain));
		ctl_table_add(&t, ctl_field(e, "qpn", ctl_fmt_plain));
		ctl_table_add(&t, ctl_field(e, "local_qpn", ctl_fmt_plain));
		ctl_table_add(&t, ctl_field_str(e, "class"));
		ctl_table_add(&t, ctl_field(e, "weight", ctl_fmt_plain));
		ctl_table_add(&t, ctl_xasprintf("%s", json_is_true(json_object_get(e, "active"))
							      ? "yes" : "no"));
		/* a throughput READ flow's share is in ops/s */
		ctl_table_add(&t, json_is_integer(json_object_get(e, "share_ops_per_s"))
					  ? ctl_field(e, "share_ops_per_s", ctl_fmt_ops)
					  : ctl_field(e, "share_bps", ctl_fmt_rate));
	}
	if (t.ncells)
		ctl_table_print(&t, out);
}

static void show_remote(const json_t *remote, FILE *out)
{
	show_remote_kind(remote, "read", out);
	show_remote_kind(remote, "recv", out);
}

void ctl_show_flows(const json_t *reply, FILE *out)
{
	static const char *const head[] = { "ID",    "PID", "COMM",   "CLASS", "DEVICE", "QPN",
					    "BYTES", "OPS", "TOKENS", "RATE",  "WARN" };
	static const bool right[] = { true, true, false, false, false, true,
				      true, true, true,  true,  false };
	const json_t *flows = json_object_get(reply, "flows"), *fl;
	struct ctl_table t = { .ncols = 11, .head = head, .right = right };
	const char *warn;
	uint64_t port, ops;
	size_t i;

	if (!json_array_size(flows)) {
		fputs("no flows\n", out);
		show_remote(json_object_get(reply, "remote"), out);
		return;
	}
	json_array_foreach(flows, i, fl) {
		ctl_table_add(&t, ctl_field(fl, "id", ctl_fmt_plain));
		ctl_table_add(&t, ctl_field(fl, "pid", ctl_fmt_plain));
		ctl_table_add(&t, ctl_field_str(fl, "comm"));
		ctl_table_add(&t, ctl_field_str(fl, "class"));
		if (ctl_juint(fl, "port", &port))
			ctl_table_add(&t, ctl_xasprintf("%s/%" PRIu64, ctl_or_dash(ctl_jstr(fl, "device")), port));
		else
			ctl_table_add(&t, ctl_field_str(fl, "device"));
		ctl_table_add(&t, ctl_field(fl, "qpn", ctl_fmt_plain));
		ctl_table_add(&t, ctl_field(fl, "bytes", ctl_fmt_bytes));
		ctl_table_add(&t, ctl_field(fl, "ops", ctl_fmt_plain));
		ctl_table_add(&t, ctl_field(fl, "tokens", ctl_fmt_plain));
		if (ctl_juint(fl, "paced_ops_per_s", &ops) && ops)
			ctl_table_add(&t, ctl_fmt_ops(ops));
		else
			ctl_table_add(&t, ctl_field(fl, "paced_rate_bps", ctl_fmt_rate));
		warn = ctl_jstr(fl, "warning");
		if (json_is_false(json_object_get(fl, "managed")))
			ctl_table_add(
			    &t, ctl_xasprintf("unmanaged%s%s", warn ? "; " : "", warn ? warn : ""));
		else
			ctl_table_add(&t, remote_note(json_object_get(fl, "remote"), warn));
	}
	ctl_table_print(&t, out);
	show_remote(json_object_get(reply, "remote"), out);
}

/* ------------------------------------------------------------ set, version */

void ctl_show_set(const json_t *reply, FILE *out)
{
	const json_t *changed = json_object_get(reply, "changed"), *val;
	const char *key;
	char *s, *k;

	if (!json_object_size(changed)) {
		fputs("nothing changed\n", out);
		return;
	}
	json_object_foreach((json_t *)changed, key, val) {
		size_t kl = strlen(key);
		uint64_t v;

		if (json_is_string(val))
			s = ctl_xasprintf("%s", json_string_value(val));
		else if (ctl_juint(changed, key, &v) && kl > 4 && !strcmp(key + kl - 4, "_bps"))
			s = ctl_fmt_rate(v);
		else if (!(s = json_dumps(val, JSON_COMPACT | JSON_ENCODE_ANY)))
			ctl_oom();
		k = ctl_sanitize(ctl_xasprintf("%s", key));
		fprintf(out, "%s: %s\n", k, ctl_sanitize(s));
		free(k);
		free(s);
	}
}

void ctl_show_version(const json_t *reply, FILE *out)
{
	uint64_t proto;
	char *v = ctl_field_str(reply, "version");

	fprintf(out, "justctl %s (protocol %d)\n", JUSTITIA_VERSION, PROTO_VERSION);
	if (ctl_juint(reply, "protocol", &proto))
		fprintf(out, "justitiad %s (protocol %" PRIu64 ")\n", v, proto);
	else
		fprintf(out, "justitiad %s\n", v);
	free(v);
}

void ctl_show_calibrate(const json_t *reply, FILE *out)
{
	const json_t *cal = json_object_get(reply, "calibration");
	char *ms = ctl_field(cal, "duration_ms", ctl_fmt_plain);
	char *qps = ctl_field(cal, "qps", ctl_fmt_plain);
	bool have_qps = json_is_integer(json_object_get(cal, "qps"));

	fprintf(out, "calibrating against the reference peer for %s ms%s%s%s...\n", ms,
		have_qps ? " over " : "", have_qps ? qps : "", have_qps ? " QPs" : "");
	free(ms);
	free(qps);
	fflush(out);
}

/* Print an error reply ("justctl: set: permission_denied: ...") */
void ctl_show_error(const char *cmd, const json_t *reply, FILE *err)
{
	const json_t *e = json_object_get(reply, "error");
	char *code = ctl_field_str(e, "code"), *msg = ctl_field_str(e, "message");

	fprintf(err, "justctl: %s: %s: %s\n", cmd, code, msg);
	free(code);
	free(msg);
}

// SPDX-License-Identifier: MIT
/* justctl metrics (see ctl_metrics.h).  Names follow Prometheus' rules:
 * prefix justitia_, base units (seconds, bytes; rates in bits per second
 * as the daemon keeps them), counters end in _total, one HELP and TYPE per
 * family before its samples, every family's samples together.  Label values
 * (a process's comm is its own choice) are escaped as the format says.
 * May call: common/shm_abi.h (class names), jansson and libc; never the socket. */
#include "ctl_metrics.h"

#include "shm_abi.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

static const json_t *at(const json_t *o, const char *path)
{
	char key[64];

	while (o && *path) {
		size_t n = strcspn(path, ".");

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = 0;
		o = json_object_get(o, key);
		path += n + (path[n] == '.');
	}
	return o;
}

static bool get_u64(const json_t *o, const char *path, uint64_t *v)
{
	const json_t *j = at(o, path);

	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return false;
	*v = (uint64_t)json_integer_value(j);
	return true;
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One family with one unlabelled sample, if the reply has the value. */
static void one(FILE *out, const json_t *st, const char *path, const char *name, const char *type,
		const char *help, double scale)
{
	uint64_t v;

	if (!get_u64(st, path, &v))
		return;
	family(out, name, type, help);
	if (scale == 1)
		fprintf(out, "%s %" PRIu64 "\n", name, v);
	else
		fprintf(out, "%s %.9g\n", name, (double)v * scale);
}

static void one_bool(FILE *out, const json_t *st, const char *path, const char *name,
		     const char *help)
{
	const json_t *j = at(st, path);

	if (!json_is_boolean(j))
		return;
	family(out, name, "gauge", help);
	fprintf(out, "%s %d\n", name, json_is_true(j));
}

/* A label value: \, " and newline escaped; other control bytes become '?'. */
static void label(FILE *out, const char *name, const char *val, bool first)
{
	fprintf(out, "%s%s=\"", first ? "" : ",", name);
	for (const unsigned char *p = (const unsigned char *)(val ? val : ""); *p; p++) {
		if (*p == '\\' || *p == '"')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p < 0x20 || *p == 0x7f)
			fputc('?', out);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static void flow_labels(FILE *out, const json_t *f)
{
	uint64_t id = 0, pid = 0, port = 0;
	char n[24];

	get_u64(f, "id", &id);
	get_u64(f, "pid", &pid);
	get_u64(f, "port", &port);
	fputc('{', out);
	snprintf(n, sizeof(n), "%" PRIu64, id);
	label(out, "flow", n, true);
	snprintf(n, sizeof(n), "%" PRIu64, pid);
	label(out, "pid", n, false);
	label(out, "comm", json_string_value(json_object_get(f, "comm")), false);
	label(out, "class", json_string_value(json_object_get(f, "class")), false);
	label(out, "device", json_string_value(json_object_get(f, "device")), false);
	snprintf(n, sizeof(n), "%" PRIu64, port);
	label(out, "port", n, false);
	fputc('}', out);
}

static const struct {
	const char *key, *name, *type, *help;
} flow_series[] = {
	{ "bytes", "justitia_flow_sent_bytes_total", "counter",
	  "Bytes the flow's application posted (latency flows: only with JUSTITIA_STATS)." },
	{ "ops", "justitia_flow_ops_total", "counter", "Work requests the flow posted." },
	{ "chunks", "justitia_flow_chunks_total", "counter", "Split chunks the flow posted." },
	{ "paced_rate_bps", "justitia_flow_paced_rate_bits_per_second", "gauge",
	  "Rate granted to a bandwidth flow (absent: not paced)." },
	{ "paced_ops_per_s", "justitia_flow_paced_ops_per_second", "gauge",
	  "Operation rate granted to a throughput flow (absent: not paced)." },
	{ "weight", "justitia_flow_weight", "gauge", "The flow's weight." },
	{ "tokens", "justitia_flow_tokens", "gauge", "Tokens currently granted to the flow." },
};

static void per_flow(FILE *out, const json_t *flows)
{
	for (size_t k = 0; k < sizeof(flow_series) / sizeof(flow_series[0]); k++) {
		bool header = false;
		const json_t *f;
		uint64_t v;
		size_t i;

		json_array_foreach(flows, i, f) {
			if (json_is_false(json_object_get(f, "managed")) ||
			    !get_u64(f, flow_series[k].key, &v))
				continue;
			if (!header)
				family(out, flow_series[k].name, flow_series[k].type,
				       flow_series[k].help);
			header = true;
			fputs(flow_series[k].name, out);
			flow_labels(out, f);
			fprintf(out, " %" PRIu64 "\n", v);
		}
	}
	{
		bool header = false;
		const json_t *f, *a;
		size_t i;

		json_array_foreach(flows, i, f) {
			a = json_object_get(f, "active");
			if (json_is_false(json_object_get(f, "managed")) || !json_is_boolean(a))
				continue;
			if (!header)
				family(out, "justitia_flow_active", "gauge",
				       "1 while the flow takes part in the token distribution.");
			header = true;
			fputs("justitia_flow_active", out);
			flow_labels(out, f);
			fprintf(out, " %d\n", json_is_true(a));
		}
	}
}

/* One family whose samples are members of the object at path, one per
 * key, labelled name=key (a member missing or not a count is left out). */
static void labelled(FILE *out, const json_t *st, const char *path, const char *name,
		     const char *type, const char *help, const char *lname,
		     const char *const *keys, size_t n)
{
	const json_t *o = at(st, path);
	bool header = false;
	uint64_t v;

	if (!json_is_object(o))
		return;
	for (size_t i = 0; i < n; i++) {
		if (!get_u64(o, keys[i], &v))
			continue;
		if (!header)
			family(out, name, type, help);
		header = true;
		fprintf(out, "%s{", name);
		label(out, lname, keys[i], true);
		fprintf(out, "} %" PRIu64 "\n", v);
	}
}

/* remote READ control and receiver-side views (status remote_read,
 * docs/protocol.md; absent from a daemon without them) */
static void remote_read(FILE *out, const json_t *st)
{
	static const char *const incoming[] = { "latency", "bandwidth" };
	static const char *const states[] = { "registered", "pending", "unmanaged", "refused" };
	static const char *const msgs[] = { "open", "close", "grants" };

	if (!json_is_object(at(st, "remote_read")))
		return;
	one(out, st, "remote_read.served.flows", "justitia_remote_served_flows", "gauge",
	    "Flows other hosts' daemons registered here (remote READs and incoming flows).", 1);
	labelled(out, st, "remote_read.served.incoming", "justitia_remote_incoming_flows", "gauge",
		 "Flows other hosts send here, registered by their daemons, by class.", "class",
		 incoming, 2);
	one(out, st, "remote_read.served.opened", "justitia_remote_served_opened_total",
	    "counter", "Registrations accepted from other daemons.", 1);
	one(out, st, "remote_read.served.closed", "justitia_remote_served_closed_total",
	    "counter", "Registrations their daemons closed.", 1);
	one(out, st, "remote_read.served.dropped", "justitia_remote_served_dropped_total",
	    "counter", "Registrations dropped with their daemon's connection.", 1);
	one(out, st, "remote_read.served.refused", "justitia_remote_served_refused_total",
	    "counter", "Registrations refused (over a limit).", 1);
	one(out, st, "remote_read.served.grants_sent", "justitia_remote_grants_sent_total",
	    "counter", "remote_grants messages sent to other daemons.", 1);
	labelled(out, st, "remote_read.requested", "justitia_remote_requested_flows", "gauge",
		 "This host's flows registered with their peer's daemon, by state.", "state",
		 states, 4);
	labelled(out, st, "remote_read.messages.sent", "justitia_remote_messages_sent_total",
		 "counter", "Daemon channel requests sent, by type.", "type", msgs, 3);
	labelled(out, st, "remote_read.messages.received",
		 "justitia_remote_messages_received_total", "counter",
		 "Daemon channel requests received, by type.", "type", msgs, 3);
	one(out, st, "remote_read.messages.received.grants_applied",
	    "justitia_remote_grant_entries_applied_total", "counter",
	    "Grant entries applied to this host's flows.", 1);
	one(out, st, "remote_read.messages.received.grants_ignored",
	    "justitia_remote_grant_entries_ignored_total", "counter",
	    "Grant entries for flows not registered on their connection.", 1);
}

void ctl_metrics_write(const json_t *st, const json_t *flows, bool with_flows, FILE *out)
{
	static const char *const classes[] = { JST_CLASS_NAME_LIST };
	const char *s;
	uint64_t v;

	family(out, "justitia_up", "gauge", "1 if justitiad answered on its control socket.");
	fprintf(out, "justitia_up %d\n", st != NULL);
	if (!st)
		return;
	s = json_string_value(at(st, "daemon.version"));
	if (s) {
		family(out, "justitia_build_info", "gauge", "The daemon's version, as a label.");
		fputs("justitia_build_info{", out);
		label(out, "version", s, true);
		fputs("} 1\n", out);
	}
	if (get_u64(st, "daemon.uptime_ms", &v)) {
		family(out, "justitia_uptime_seconds", "gauge", "Seconds since the daemon started.");
		fprintf(out, "justitia_uptime_seconds %.3f\n", (double)v / 1e3);
	}
	one(out, st, "controller.safe_util_bps", "justitia_safe_util_bits_per_second", "gauge",
	    "SafeUtil: what the controller lets the resource-hungry flows use.", 1);
	one(out, st, "controller.max_rate_bps", "justitia_max_rate_bits_per_second", "gauge",
	    "MaxRate of the controlled port.", 1);
	one(out, st, "controller.floor_bps", "justitia_safe_util_floor_bits_per_second", "gauge",
	    "The floor SafeUtil is never halved below.", 1);
	one(out, st, "controller.current99_ns", "justitia_latency_p99_seconds", "gauge",
	    "Current99: measured p99 of the reference flow's window (absent: no measurement).",
	    1e-9);
	one(out, st, "controller.target99_ns", "justitia_latency_target_p99_seconds", "gauge",
	    "Target99: the p99 latency target of latency-sensitive flows.", 1e-9);
	one(out, st, "controller.p50_ns", "justitia_latency_p50_seconds", "gauge",
	    "Measured median of the reference flow's window.", 1e-9);
	one(out, st, "controller.p999_ns", "justitia_latency_p999_seconds", "gauge",
	    "Measured p99.9 of the reference flow's window.", 1e-9);
	one_bool(out, st, "controller.unattainable", "justitia_target_unattainable",
		 "1 while the target has been missed for unattainable_delta_ms.");
	one_bool(out, st, "controller.violating", "justitia_target_violating",
		 "1 if a measurement missed the target recently.");
	one_bool(out, st, "controller.stale", "justitia_reference_stale",
		 "1 while no reference sample arrived for stale_ms.");
	one(out, st, "controller.steps", "justitia_controller_steps_total", "counter",
	    "Controller periods run.", 1);
	one(out, st, "controller.decreases", "justitia_controller_decreases_total", "counter",
	    "Controller periods that halved SafeUtil.", 1);
	one(out, st, "controller.increases", "justitia_controller_increases_total", "counter",
	    "Controller periods that increased SafeUtil.", 1);
	s = json_string_value(at(st, "controller.reference.state"));
	if (s) {
		static const char *const states[] = { "off", "connecting", "up", "down" };

		family(out, "justitia_reference_state", "gauge",
		       "State of the reference latency flow (1 for the current one).");
		for (size_t i = 0; i < 4; i++) {
			fputs("justitia_reference_state{", out);
			label(out, "state", states[i], true);
			fprintf(out, "} %d\n", !strcmp(s, states[i]));
		}
	}
	one(out, st, "controller.reference.samples", "justitia_reference_samples_total", "counter",
	    "Reference latency samples taken.", 1);
	one(out, st, "controller.reference.polled", "justitia_reference_polled_total", "counter",
	    "Reference samples whose completion was polled for right after the post.", 1);
	one(out, st, "controller.reference.skipped", "justitia_reference_skipped_total", "counter",
	    "Periods without a probe: the previous one was still outstanding (lost or late).", 1);
	one(out, st, "controller.reference.errors", "justitia_reference_errors_total", "counter",
	    "Times the reference session failed and was set up again.", 1);
	one(out, st, "controller.reference.responders", "justitia_reference_responders", "gauge",
	    "Endpoints this daemon serves for other daemons' reference flows.", 1);
	one(out, st, "counts.clients", "justitia_clients", "gauge",
	    "Clients connected to the control socket.", 1);
	labelled(out, st, "counts", "justitia_flows", "gauge", "Registered flows by class.",
		 "class", classes, 3);
	one(out, st, "limits.max_clients", "justitia_limit_clients", "gauge",
	    "limits.max_clients.", 1);
	one(out, st, "limits.max_flows", "justitia_limit_flows", "gauge", "limits.max_flows.", 1);
	s = json_string_value(at(st, "qpwatch.state"));
	if (s) {
		family(out, "justitia_qpwatch_up", "gauge", "1 while the BPF QP watcher runs.");
		fprintf(out, "justitia_qpwatch_up %d\n", !strcmp(s, "on"));
	}
	one(out, st, "counts.unmanaged", "justitia_unmanaged_qps", "gauge",
	    "QPs the QP watcher saw that no registered flow manages (absent: watcher off).", 1);
	one(out, st, "qpwatch.qps", "justitia_qpwatch_qps", "gauge",
	    "User QPs in the kernel as the QP watcher knows them.", 1);
	one(out, st, "qpwatch.lost", "justitia_qpwatch_lost_total", "counter",
	    "QP records the kernel could not queue.", 1);
	remote_read(out, st);
	if (with_flows && json_is_array(flows))
		per_flow(out, flows);
}

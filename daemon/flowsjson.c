// SPDX-License-Identifier: MIT
/* The flow registry as JSON (flows.h): what `justctl flows` and the
 * status's flow list show of each flow, counters as the shim wrote them
 * (untrusted: clamped to jansson's signed integers).
 * May call: flows (counters), shm (slots), config (class names), rreadmsg
 * (remote kinds). */
#include "flows.h"

#include <stdatomic.h>

#include "rreadmsg.h"

/* jansson integers are signed 64-bit: clamp what an app wrote. */
static json_t *juint(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* What the controller grants the flow, as the slot holds it (null: not
 * paced), and whether it counts as active. */
static void add_grant(json_t *o, const struct flow *f, const struct jst_flow_ctl *s)
{
	uint64_t r = atomic_load(&s->rate_bps), ops = atomic_load(&s->ops_per_s);

	if (!o)
		return;
	json_object_set_new(o, "paced_rate_bps", r ? juint(r) : json_null());
	json_object_set_new(o, "paced_ops_per_s", ops ? juint(ops) : json_null());
	json_object_set_new(o, "wait_ns", juint(atomic_load(&s->wait_ns)));
	json_object_set_new(o, "active", json_boolean(f->active));
}

static const char *const remote_state_names[] = {
	[FLOW_REMOTE_NONE] = "none", [FLOW_REMOTE_PENDING] = "pending",
	[FLOW_REMOTE_REGISTERED] = "registered", [FLOW_REMOTE_UNMANAGED] = "unmanaged",
	[FLOW_REMOTE_REFUSED] = "refused",
};

/* A READ flow (kind read) or a flow to a peer's host (recv): what that
 * daemon grants it (rread.c); null for the others. */
static void add_remote(json_t *o, const struct flow *f)
{
	int st = f->remote.state;

	if (!o)
		return;
	if (st == FLOW_REMOTE_NONE) {
		json_object_set_new(o, "remote", json_null());
		return;
	}
	json_object_set_new(o, "remote", json_pack(
		"{s:s, s:s, s:o, s:o, s:o, s:o}", "kind", rreadmsg_kind_name(f->remote.sent.kind),
		"state", (unsigned)st < sizeof(remote_state_names) / sizeof(remote_state_names[0])
				 ? remote_state_names[st] : "?",
		"peer", f->remote.peer[0] ? json_string(f->remote.peer) : json_null(),
		"grant_bps", f->remote.grant_bps ? juint(f->remote.grant_bps) : json_null(),
		"grant_ops_per_s", f->remote.grant_ops ? juint(f->remote.grant_ops) : json_null(),
		"warning", f->remote.why[0] ? json_string(f->remote.why) : json_null()));
}

json_t *flows_to_json(struct flows *fl)
{
	json_t *arr = json_array();

	flows_poll_counters(fl);
	for (struct proc *p = fl->procs; p; p = p->next) {
		for (struct flow *f = p->flows; f; f = f->next) {
			const struct jst_flow_ctl *s = jst_shm_global_slot(fl->global.base, f->gslot);
			size_t before = json_array_size(arr);

			json_array_append_new(arr, json_pack(
				"{s:I, s:i, s:s, s:s, s:s, s:i, s:I, s:s, s:i, s:o, s:s, s:o, s:o, "
				"s:o, s:o, s:o, s:o, s:b, s:s, s:o}",
				"id", (json_int_t)f->id, "pid", (int)p->pid, "comm", p->comm,
				"class", config_class_name(f->cls), "device", f->device,
				"port", (int)f->port, "qpn", (json_int_t)f->qpn, "qp_type", f->qp_type,
				"weight", (int)f->weight,
				"peer_qpn", f->peer_qpn < 0 ? json_null() : json_integer(f->peer_qpn),
				"split", f->split,
				"bytes", juint(f->last.bytes), "ops", juint(f->last.ops),
				"tokens", juint(f->last.tokens_bytes),
				"paced_rate_bps", juint(atomic_load(&s->rate_bps)),
				"warning", f->warning[0] ? json_string(f->warning) : json_null(),
				"counters_valid", f->scribbled ? json_false() : json_true(),
				"managed", 1, "state", f->state, "chunks", juint(f->last.chunks)));
			if (json_array_size(arr) > before) {
				add_grant(json_array_get(arr, before), f, s);
				add_remote(json_array_get(arr, before), f);
			}
		}
	}
	return arr;
}

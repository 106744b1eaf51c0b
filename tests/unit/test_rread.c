// SPDX-License-Identifier: MIT
/* Unit tests of daemon/rread.c, remote READ control over a real daemon
 * channel: two daemons on the loopback interface (no secret: loopback
 * peers need none), B the requester with a READ flow whose peer GID is
 * A's address, A the responder.  B registers the flow with A (counted in
 * A's table), A's shares reach B (the flow's rate is the lower grant, and
 * it is paced even with nothing to pace here), a weight change updates the
 * registration, a QP connected to another host moves it, the flow going away closes it, a channel that drops takes
 * A's entries with it and leaves B's flow unconstrained, a requester with
 * no responder daemon is warned, malformed requests are refused, and
 * grants for flows not registered on that connection change nothing.
 * Receiver-side views (kind recv): B's WRITE and latency flows to A are
 * registered with A, counted on A's receive side only, A's shares reach B
 * (min of the two), a channel drop clears them, B registers them again.
 * Throughput READ flows: registered as such, granted ops/s in their own
 * entry form, a grant in the other unit ignored.
 * #includes rread.c and links the daemon's other objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <time.h>
#include <unistd.h>

#include "../../daemon/rread.c"

#define GID_LOCAL "0000:0000:0000:0000:0000:ffff:7f00:0001"
#define GID_OTHER "0000:0000:0000:0000:0000:ffff:0a00:0009"

uint64_t daemon_now_ns(void)
{
	return clock_now_ns();
}

static struct ev_loop *loop;

struct box {
	struct config cfg;
	struct peer_ctx pc;
	struct daemon d;
	struct rread rr;
};

static void box_init(struct box *b, uint64_t node)
{
	memset(b, 0, sizeof(*b));
	config_init_defaults(&b->cfg);
	b->cfg.limits.max_flows = 64;
	b->cfg.limits.max_flows_per_client = 16;
	snprintf(b->cfg.reference.listen_address, sizeof(b->cfg.reference.listen_address),
		 "127.0.0.1");
	b->cfg.reference.listen_port = 0;
	assert_int_equal(peer_ctx_init(&b->pc, loop, &b->cfg, node, NULL), 0);
	b->d.loop = loop;
	b->d.peer = &b->pc;
	b->d.cfg = b->cfg;
	assert_int_equal(flows_init(&b->d.flows, &b->d.cfg, node), 0);
	assert_int_equal(rread_init(&b->rr, &b->d), 0);
	b->d.rread = &b->rr;
}

static void set_peer(struct box *b, const char *address, uint16_t port)
{
	free(b->cfg.peers);
	b->cfg.peers = calloc(1, sizeof(*b->cfg.peers));
	b->cfg.n_peers = 1;
	snprintf(b->cfg.peers[0].address, sizeof(b->cfg.peers[0].address), "%s", address);
	b->cfg.peers[0].port = port;
	b->d.cfg.peers = b->cfg.peers;
	b->d.cfg.n_peers = 1;
	peer_ctx_reconfigure(&b->pc, &b->cfg);
}

static void box_fini(struct box *b)
{
	peer_ctx_fini(&b->pc);
	rread_fini(&b->rr);
	flows_fini(&b->d.flows);
	free(b->cfg.peers);
}

static bool up(struct box *b)
{
	struct peer *p = peer_outgoing(&b->pc, 0);

	return p && p->state == PEER_UP;
}

static void pump(int ms)
{
	for (int i = 0; i < ms; i++) {
		ev_run(loop, EVRUN_NOWAIT);
		usleep(1000);
	}
}

static bool pump_until(bool (*cond)(void *), void *arg)
{
	for (int i = 0; i < 5000; i++) {
		if (cond(arg))
			return true;
		ev_run(loop, EVRUN_NOWAIT);
		usleep(1000);
	}
	return cond(arg);
}

static bool both_up(void *arg)
{
	struct box *ab = arg;

	return up(&ab[0]) && up(&ab[1]);
}

static struct flow *read_flow_cls(struct box *b, uint32_t qpn, const char *peer_gid,
				  const char *cls)
{
	struct flow_req fr = { .device = "tst0", .port = 1, .qpn = qpn, .qp_type = "RC",
			       .cls = cls, .split_qpn = -1 };
	struct proc *p = b->d.flows.procs;
	const char *code;
	char msg[160];
	struct flow *f;
	int err;

	if (!p)
		p = flows_proc_new(&b->d.flows, 4242, 0, "reader", &err);
	assert_non_null(p);
	f = flows_register(&b->d.flows, p, &fr, &code, msg, sizeof(msg));
	assert_non_null(f);
	f->peer_qpn = qpn + 1;
	snprintf(f->peer_gid, sizeof(f->peer_gid), "%s", peer_gid);
	f->reads = true; /* (the shim's JST_FS_READ, read by flows_poll_counters) */
	f->active = true;
	return f;
}

static struct flow *read_flow(struct box *b, uint32_t qpn, const char *peer_gid)
{
	return read_flow_cls(b, qpn, peer_gid, "bandwidth");
}

static struct box ab[2]; /* A responder, B requester */
#define A (&ab[0])
#define B (&ab[1])

static bool registered(void *arg)
{
	struct flow *f = arg;

	return f->remote.state == FLOW_REMOTE_REGISTERED;
}

static bool a_counts(void *arg)
{
	return A->rr.tab.total == (size_t)(uintptr_t)arg;
}

static bool granted(void *arg)
{
	return ((struct flow *)arg)->remote.grant_bps != 0;
}

static void sync_now(struct box *b)
{
	b->rr.last_sync_ns = 0;
	rread_sync(&b->rr, clock_now_ns());
}

static int setup(void **state)
{
	box_init(A, 100);
	box_init(B, 101);
	set_peer(B, "127.0.0.1", A->pc.listen_port);
	set_peer(A, "127.0.0.1", B->pc.listen_port);
	assert_true(pump_until(both_up, ab));
	return 0;
}

static int teardown(void **state)
{
	box_fini(B);
	box_fini(A);
	return 0;
}

/* Register, count, grant, enforce, update, close. */
static void register_grant_close(void **state)
{
	struct tokens_flow tf[4];
	struct aimd_flow af[4];
	struct aimd_counts n;
	struct flow *f = read_flow(B, 17, GID_LOCAL);
	const struct jst_flow_ctl *slot = jst_shm_global_slot(B->d.flows.global.base, f->gslot);

	sync_now(B);
	assert_true(pump_until(registered, f));
	assert_true(pump_until(a_counts, (void *)1));
	assert_int_equal(B->rr.tx.open, 1);
	assert_int_equal(A->rr.rx.open, 1);
	assert_int_equal(f->remote.grant_bps, 0);
	assert_int_equal(rread_cap(f, 5000), 5000); /* no grant yet: its own */
	/* A counts it as an active bandwidth flow of its own application */
	assert_int_equal(rread_fill(&A->rr, tf, af, 7), 1);
	assert_int_equal(tf[0].cls, FLOW_CLASS_BANDWIDTH);
	assert_true(tf[0].active);
	assert_int_equal(tf[0].app, 7);
	aimd_count(af, 1, false, &n);
	assert_int_equal(n.bw, 1);
	/* A's share reaches B: the lower of the two grants is the rate */
	tf[0].rate_bps = 300000000;
	rread_after_step(&A->rr, tf, 1, clock_now_ns(), 500000);
	assert_int_equal(A->rr.tx.grants, 1);
	assert_true(pump_until(granted, f));
	assert_int_equal(f->remote.grant_bps, 300000000);
	assert_int_equal(rread_cap(f, 0), 300000000);
	assert_int_equal(rread_cap(f, 100000000), 100000000);
	assert_int_equal(rread_cap(f, 900000000), 300000000);
	assert_true(rread_sync(&B->rr, clock_now_ns())); /* the shims must look again */
	/* paced and split whatever B's own pace mode (off here) */
	assert_int_equal(atomic_load(&slot->flags), JST_F_PACE | JST_F_SPLIT);
	/* nothing changed: no new message, however many steps */
	for (int i = 0; i < 10; i++)
		rread_after_step(&A->rr, tf, 1, clock_now_ns() + (uint64_t)i * 10000000, 500000);
	pump(20);
	assert_int_equal(A->rr.tx.grants, 1);
	/* a change within 1/32 is not news; a larger one is, after the minimum interval */
	tf[0].rate_bps = 305000000;
	rread_after_step(&A->rr, tf, 1, clock_now_ns() + 200000000, 500000);
	assert_int_equal(A->rr.tx.grants, 1);
	tf[0].rate_bps = 150000000;
	rread_after_step(&A->rr, tf, 1, clock_now_ns() + 300000000, 500000);
	assert_int_equal(A->rr.tx.grants, 2);
	pump(50);
	assert_int_equal(f->remote.grant_bps, 150000000);
	/* A protects a latency flow: its chunk comes with the grant (a change
	 * of chunk is news at once), and B splits the READs no larger */
	assert_int_equal(atomic_load(&slot->chunk_bytes), 1048576);
	rread_set_chunk(&A->rr, 5120);
	rread_after_step(&A->rr, tf, 1, clock_now_ns() + 400000000, 500000);
	assert_int_equal(A->rr.tx.grants, 3);
	pump(50);
	assert_int_equal(f->remote.chunk, 5120);
	assert_int_equal(atomic_load(&slot->chunk_bytes), 5120);
	assert_int_equal(f->remote.grant_bps, 150000000);
	/* and no more once it stops protecting */
	rread_set_chunk(&A->rr, 0);
	rread_after_step(&A->rr, tf, 1, clock_now_ns() + 500000000, 500000);
	pump(50);
	assert_int_equal(f->remote.chunk, 0);
	assert_int_equal(atomic_load(&slot->chunk_bytes), 1048576);
	/* a weight change is an update of the registration, not a second flow */
	f->weight = 5;
	sync_now(B);
	pump(50);
	assert_int_equal(A->rr.tab.total, 1);
	assert_int_equal(A->rr.tab.conns[0]->e[0].o.weight, 5);
	assert_int_equal(B->rr.tx.open, 2);
	/* the QP goes away: A stops counting it */
	flows_unregister(&B->d.flows, f);
	assert_true(pump_until(a_counts, (void *)0));
	assert_int_equal(A->rr.tab.closed, 1);
	assert_int_equal(B->rr.tx.close, 1);
}

static bool b_down(void *arg)
{
	return !up(B);
}

/* The channel drops: A forgets B's flows, B's flow is unconstrained and
 * warned; when it is back, B registers again. */
static void channel_drop(void **state)
{
	struct flow *f = read_flow(B, 30, GID_LOCAL);
	struct tokens_flow tf[1] = { { .rate_bps = 200000000 } };
	json_t *st;

	sync_now(B);
	assert_true(pump_until(registered, f));
	assert_true(pump_until(a_counts, (void *)1));
	rread_after_step(&A->rr, tf, 1, clock_now_ns(), 500000);
	assert_true(pump_until(granted, f));
	/* B's daemon forgets its peer (as a reload without it, or a crash) */
	set_peer(B, "127.0.0.2", 9);
	set_peer(A, "127.0.0.2", 9);
	assert_true(pump_until(a_counts, (void *)0));
	assert_int_equal(A->rr.tab.dropped, 1);
	assert_int_equal(f->remote.state, FLOW_REMOTE_UNMANAGED);
	assert_int_equal(f->remote.grant_bps, 0);
	assert_int_equal(rread_cap(f, 0), 0);
	assert_non_null(strstr(f->remote.why, "responder not managed"));
	(void)b_down;
	/* shown in status and in the flow's "remote" */
	st = rread_status(&B->rr, clock_now_ns());
	assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "requested"),
							    "unmanaged")), 1);
	json_decref(st);
	st = flows_to_json(&B->d.flows);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
				    json_array_get(st, 0), "remote"), "state")), "unmanaged");
	json_decref(st);
	/* back: registered again */
	set_peer(B, "127.0.0.1", A->pc.listen_port);
	set_peer(A, "127.0.0.1", B->pc.listen_port);
	assert_true(pump_until(both_up, ab));
	sync_now(B);
	assert_true(pump_until(registered, f));
	assert_true(pump_until(a_counts, (void *)1));
}

/* The QP is connected to another host: the registration moves. */
static void peer_changes(void **state)
{
	struct flow *f = read_flow(B, 60, GID_LOCAL);

	sync_now(B);
	assert_true(pump_until(registered, f));
	assert_true(pump_until(a_counts, (void *)1));
	snprintf(f->peer_gid, sizeof(f->peer_gid), "%s", GID_OTHER);
	sync_now(B);
	assert_true(pump_until(a_counts, (void *)0));
	assert_int_equal(f->remote.state, FLOW_REMOTE_NONE);
	sync_now(B); /* nobody's GID: unconstrained */
	assert_int_equal(f->remote.state, FLOW_REMOTE_UNMANAGED);
}

/* The peer GID is no configured daemon's: unconstrained, warned. */
static void responder_not_managed(void **state)
{
	struct flow *f = read_flow(B, 40, GID_OTHER);
	struct flow *g = read_flow(B, 41, GID_OTHER);

	g->reads = false; /* a WRITE flow to a host without a daemon: nothing to register */
	sync_now(B);
	pump(20);
	assert_int_equal(f->remote.state, FLOW_REMOTE_UNMANAGED);
	assert_non_null(strstr(f->remote.why, "remote: responder not managed"));
	assert_int_equal(g->remote.state, FLOW_REMOTE_NONE);
	assert_int_equal(A->rr.tab.total, 0);
	assert_int_equal(B->rr.tx.open, 0);
}

static struct flow *class_flow(struct box *b, uint32_t qpn, const char *cls)
{
	struct flow_req fr = { .device = "tst0", .port = 1, .qpn = qpn, .qp_type = "RC",
			       .cls = cls, .split_qpn = -1 };
	const char *code;
	char msg[160];
	struct flow *f;

	f = flows_register(&b->d.flows, b->d.flows.procs, &fr, &code, msg, sizeof(msg));
	assert_non_null(f);
	f->peer_qpn = qpn + 1;
	snprintf(f->peer_gid, sizeof(f->peer_gid), "%s", GID_LOCAL);
	f->active = true;
	return f;
}

static bool recv_granted(void *arg)
{
	return ((struct flow *)arg)->remote.grant_bps == 400000000;
}

/* Incast, the receiver's side: B's WRITE flow and latency flow to A. */
static void incast_recv(void **state)
{
	struct flow *w = read_flow(B, 70, GID_LOCAL), *l;
	struct tokens_flow tf[4];
	struct aimd_flow af[4];
	struct aimd_counts n;
	json_t *st;

	w->reads = false; /* it WRITEs: A receives its data */
	l = class_flow(B, 72, "latency");
	sync_now(B);
	assert_true(pump_until(registered, w));
	assert_true(pump_until(registered, l));
	assert_true(pump_until(a_counts, (void *)2));
	assert_int_equal(w->remote.sent.kind, RREAD_RECV);
	assert_int_equal(l->remote.sent.kind, RREAD_RECV);
	/* on A: not in the token distribution (A's NIC does not send it) ... */
	assert_int_equal(rread_fill(&A->rr, tf, af, 0), 0);
	/* ... but the incoming latency flow is L' for A's controller */
	assert_int_equal(rread_fill_recv(&A->rr, af, 0), 2);
	aimd_count(af, 2, false, &n);
	assert_int_equal(n.lat, 1);
	assert_int_equal(n.bw, 1);
	/* A protects it: the WRITE flow gets SafeUtil (it is the only one) */
	rread_set_recv(&A->rr, 400000000, 1000000000);
	rread_after_step(&A->rr, tf, 0, clock_now_ns(), 500000);
	assert_int_equal(A->rr.tx.grants, 1); /* one message for both */
	assert_true(pump_until(recv_granted, w));
	assert_int_equal(l->remote.grant_bps, 0);
	assert_int_equal(rread_cap(w, 900000000), 400000000);
	assert_int_equal(rread_cap(w, 100000000), 100000000);
	assert_int_equal(rread_cap(l, 0), 0);
	/* unchanged: nothing sent again */
	rread_set_recv(&A->rr, 400000000, 1000000000);
	rread_after_step(&A->rr, tf, 0, clock_now_ns() + 100000000, 500000);
	assert_int_equal(A->rr.tx.grants, 1);
	st = rread_status(&A->rr, clock_now_ns());
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(
				 st, "served"), "incoming"), "latency")), 1);
	json_decref(st);
	st = flows_to_json(&B->d.flows);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
				    json_array_get(st, 0), "remote"), "kind")), "recv");
	json_decref(st);
	/* the channel drops: A forgets them, B's flows are unconstrained */
	set_peer(B, "127.0.0.2", 9);
	set_peer(A, "127.0.0.2", 9);
	assert_true(pump_until(a_counts, (void *)0));
	assert_int_equal(w->remote.grant_bps, 0);
	assert_int_equal(rread_cap(w, 0), 0);
	assert_int_equal(w->remote.state, FLOW_REMOTE_UNMANAGED);
	/* back: registered again, as kind recv */
	set_peer(B, "127.0.0.1", A->pc.listen_port);
	set_peer(A, "127.0.0.1", B->pc.listen_port);
	assert_true(pump_until(both_up, ab));
	sync_now(B);
	assert_true(pump_until(a_counts, (void *)2));
	assert_int_equal(A->rr.tab.conns[0]->e[0].o.kind, RREAD_RECV);
	/* the flow starts READing: the same registration, kind read now */
	assert_true(pump_until(registered, w));
	w->reads = true;
	sync_now(B);
	pump(50);
	assert_int_equal(A->rr.tab.total, 2);
	assert_int_equal(w->remote.sent.kind, RREAD_READ);
	assert_int_equal(rread_fill(&A->rr, tf, af, 0), 1);
	/* gone: closed with its kind */
	flows_unregister(&B->d.flows, w);
	flows_unregister(&B->d.flows, l);
	assert_true(pump_until(a_counts, (void *)0));
}

struct answer {
	bool done;
	char code[32];
	json_t *result;
};

static void answered(struct peer_ctx *pc, struct peer *p, json_t *result, const char *code,
		     const char *msg, void *arg)
{
	struct answer *a = arg;

	a->done = true;
	snprintf(a->code, sizeof(a->code), "%s", result ? "ok" : code);
	a->result = result ? json_incref(result) : NULL;
}

static bool is_done(void *arg)
{
	return ((struct answer *)arg)->done;
}

static const char *ask(const char *op, const char *args)
{
	static struct answer a;
	json_t *j = json_loads(args, 0, NULL);

	assert_non_null(j);
	json_decref(a.result);
	memset(&a, 0, sizeof(a));
	assert_int_equal(peer_request(peer_outgoing(&B->pc, 0), op, j, answered, &a, 1000), 0);
	assert_true(pump_until(is_done, &a));
	return a.code;
}

/* Whatever a peer sends is checked; what it may change is its own. */
static void malformed_refused(void **state)
{
	struct flow *f = read_flow(A, 50, GID_LOCAL);

	f->remote.state = FLOW_REMOTE_REGISTERED; /* registered ... on no connection of B's */
	f->remote.serial = 999999;
	assert_string_equal(ask("remote_open", "{}"), "bad_request");
	assert_string_equal(ask("remote_open", "{\"kind\":\"read\",\"flow\":0,\"class\":\"bandwidth\","
					       "\"qpn\":1,\"peer_qpn\":2,\"weight\":1,\"active\":true}"),
			    "bad_request");
	assert_string_equal(ask("remote_open", "{\"kind\":\"write\",\"flow\":1,\"class\":\"bandwidth\","
					       "\"qpn\":1,\"peer_qpn\":2,\"weight\":1,\"active\":true}"),
			    "bad_request");
	assert_string_equal(ask("remote_open", "{\"kind\":\"read\",\"flow\":1,\"class\":\"latency\","
					       "\"qpn\":1,\"peer_qpn\":2,\"weight\":1,\"active\":true}"),
			    "bad_request");
	assert_string_equal(ask("remote_open", "{\"kind\":\"read\",\"flow\":1,\"class\":\"bandwidth\","
					       "\"qpn\":16777216,\"peer_qpn\":2,\"weight\":1,"
					       "\"active\":true}"),
			    "bad_request");
	assert_string_equal(ask("remote_open", "{\"kind\":\"read\",\"flow\":1,\"class\":\"bandwidth\","
					       "\"qpn\":1,\"peer_qpn\":2,\"weight\":1001,\"active\":true}"),
			    "bad_request");
	assert_string_equal(ask("remote_open", "{\"kind\":\"read\",\"flow\":1,\"class\":\"bandwidth\","
					       "\"qpn\":1,\"peer_qpn\":2,\"weight\":1,\"active\":1}"),
			    "bad_request");
	assert_string_equal(ask("remote_open", "{\"kind\":\"read\",\"flow\":1,\"class\":\"bandwidth\","
					       "\"qpn\":1,\"peer_qpn\":2,\"weight\":1,\"active\":true,"
					       "\"extra\":0}"),
			    "bad_request");
	assert_int_equal(A->rr.tab.total, 0);
	assert_string_equal(ask("remote_close", "{\"kind\":\"read\",\"flow\":77}"), "not_found");
	assert_string_equal(ask("remote_close", "{\"kind\":\"read\",\"flow\":-1}"), "bad_request");
	assert_string_equal(ask("remote_grants", "{\"kind\":\"read\",\"grants\":[[1]]}"),
			    "bad_request");
	assert_string_equal(ask("remote_grants", "{\"kind\":\"read\",\"grants\":[[1,-5]]}"),
			    "bad_request");
	assert_string_equal(ask("remote_grants", "{\"kind\":\"read\",\"grants\":[[1,10000000000001]]}"),
			    "bad_request");
	/* well-formed, but for a flow B did not register on this connection: ignored */
	{
		char args[96];

		snprintf(args, sizeof(args), "{\"kind\":\"read\",\"grants\":[[%u,1000]]}", f->id);
		assert_string_equal(ask("remote_grants", args), "ok");
	}
	assert_int_equal(f->remote.grant_bps, 0);
	assert_int_equal(A->rr.rx.grants_ignored, 1);
	/* kind recv: latency or bandwidth only; a grant of the other kind is
	 * ignored even on the flow's own connection */
	assert_string_equal(ask("remote_open", "{\"kind\":\"recv\",\"flow\":1,\"class\":\"throughput\","
					       "\"qpn\":1,\"peer_qpn\":2,\"weight\":1,\"active\":true}"),
			    "bad_request");
	assert_string_equal(ask("remote_close", "{\"kind\":\"recv\",\"flow\":77}"), "not_found");
	{
		struct peer *pa = A->pc.in;
		char args[96];

		assert_non_null(pa);
		f->remote.serial = pa->serial; /* as if A registered it with B as kind read */
		f->remote.sent.kind = RREAD_READ;
		snprintf(args, sizeof(args), "{\"kind\":\"recv\",\"grants\":[[%u,1000]]}", f->id);
		assert_string_equal(ask("remote_grants", args), "ok");
		assert_int_equal(f->remote.grant_bps, 0);
		assert_int_equal(A->rr.rx.grants_ignored, 2);
		/* (the same grant as kind read is taken: the kind was the reason) */
		snprintf(args, sizeof(args), "{\"kind\":\"read\",\"grants\":[[%u,1000]]}", f->id);
		assert_string_equal(ask("remote_grants", args), "ok");
		assert_int_equal(f->remote.grant_bps, 1000);
		f->remote.grant_bps = 0;
		f->remote.serial = 999999;
	}
	/* the channel survived every one of them */
	assert_true(up(A) && up(B));
	/* a valid one is taken */
	assert_string_equal(ask("remote_open", "{\"kind\":\"read\",\"flow\":1,\"class\":\"bandwidth\","
					       "\"qpn\":1,\"peer_qpn\":2,\"weight\":1,\"active\":true}"),
			    "ok");
	assert_int_equal(A->rr.tab.total, 1);
}

static bool ops_granted(void *arg)
{
	return ((struct flow *)arg)->remote.grant_ops != 0;
}

/* A throughput flow that READs (64 B GETs in batches) registers as class
 * throughput; A counts it in T' and grants it ops/s ([flow, ops, 0, "ops"]);
 * B publishes the lower ops grant, paced (not split) whatever its mode; a
 * grant in the other unit is ignored; a responder of the previous version
 * (class must be "bandwidth") leaves it unmanaged, said why. */
static void throughput_read(void **state)
{
	struct flow *f = read_flow_cls(B, 60, GID_LOCAL, "throughput"), *fa;
	const struct jst_flow_ctl *slot = jst_shm_global_slot(B->d.flows.global.base, f->gslot);
	struct tokens_flow tf[2];
	struct aimd_flow af[2];
	struct aimd_counts n;
	char args[128];
	json_t *st, *e;

	sync_now(B);
	assert_true(pump_until(registered, f));
	assert_true(pump_until(a_counts, (void *)1));
	assert_int_equal(A->rr.tab.conns[0]->e[0].o.cls, FLOW_CLASS_THROUGHPUT);
	assert_int_equal(rread_fill(&A->rr, tf, af, 3), 1);
	assert_int_equal(tf[0].cls, FLOW_CLASS_THROUGHPUT);
	aimd_count(af, 1, false, &n);
	assert_int_equal(n.tput, 1); /* T' */
	assert_int_equal(n.bw, 0);
	/* the token distribution's ops share goes out as ops/s */
	tf[0].rate_bps = 0;
	tf[0].ops_per_s = 200000;
	rread_set_chunk(&A->rr, 5120);
	rread_after_step(&A->rr, tf, 1, clock_now_ns(), 500000);
	assert_int_equal(A->rr.tx.grants, 1);
	assert_true(pump_until(ops_granted, f));
	assert_int_equal(f->remote.grant_ops, 200000);
	assert_int_equal(f->remote.grant_bps, 0);
	assert_int_equal(f->remote.chunk, 0); /* not split: A says nothing of chunks */
	assert_int_equal(rread_cap_ops(f, 0), 200000);
	assert_int_equal(rread_cap_ops(f, 100000), 100000);
	assert_int_equal(rread_cap_ops(f, 900000), 200000);
	assert_int_equal(rread_cap(f, 0), 0);
	assert_true(rread_sync(&B->rr, clock_now_ns()));
	assert_int_equal(atomic_load(&slot->flags), JST_F_PACE);
	/* shown with its unit on both sides */
	st = flows_to_json(&B->d.flows);
	e = json_object_get(json_array_get(st, 0), "remote");
	assert_int_equal(json_integer_value(json_object_get(e, "grant_ops_per_s")), 200000);
	assert_true(json_is_null(json_object_get(e, "grant_bps")));
	json_decref(st);
	st = rread_status(&A->rr, clock_now_ns());
	e = json_array_get(json_object_get(json_object_get(st, "served"), "entries"), 0);
	assert_string_equal(json_string_value(json_object_get(e, "class")), "throughput");
	assert_int_equal(json_integer_value(json_object_get(e, "share_ops_per_s")), 200000);
	assert_true(json_is_null(json_object_get(e, "share_bps")));
	json_decref(st);
	flows_unregister(&B->d.flows, f);
	assert_true(pump_until(a_counts, (void *)0));

	/* B -> A: grants in the wrong unit for what A registered are ignored */
	fa = read_flow_cls(A, 61, GID_LOCAL, "throughput");
	assert_non_null(A->pc.in);
	fa->remote.state = FLOW_REMOTE_REGISTERED;
	fa->remote.serial = A->pc.in->serial;
	fa->remote.sent = (struct rread_open){ .kind = RREAD_READ, .flow = fa->id,
					       .cls = FLOW_CLASS_THROUGHPUT };
	snprintf(args, sizeof(args), "{\"kind\":\"read\",\"grants\":[[%u,1000]]}", fa->id);
	assert_string_equal(ask("remote_grants", args), "ok");
	assert_int_equal(fa->remote.grant_ops, 0);
	assert_int_equal(fa->remote.grant_bps, 0);
	assert_int_equal(A->rr.rx.grants_ignored, 1);
	snprintf(args, sizeof(args), "{\"kind\":\"read\",\"grants\":[[%u,1000,0,\"ops\"]]}",
		 fa->id);
	assert_string_equal(ask("remote_grants", args), "ok");
	assert_int_equal(fa->remote.grant_ops, 1000);
	/* ... and an ops grant for a bandwidth flow */
	fa->remote.sent.cls = FLOW_CLASS_BANDWIDTH;
	fa->cls = FLOW_CLASS_BANDWIDTH;
	fa->remote.grant_ops = 0;
	assert_string_equal(ask("remote_grants", args), "ok");
	assert_int_equal(fa->remote.grant_ops, 0);
	assert_int_equal(fa->remote.grant_bps, 0);
	assert_int_equal(A->rr.rx.grants_ignored, 2);
	assert_string_equal(ask("remote_grants", "{\"kind\":\"read\",\"grants\":"
						 "[[1,1000,0,\"bps\"]]}"), "bad_request");

	/* a responder before throughput READs refuses the class: unmanaged */
	{
		struct flow *g = read_flow_cls(B, 62, GID_LOCAL, "throughput");
		struct rread_call *call = calloc(1, sizeof(*call));

		assert_non_null(call);
		*call = (struct rread_call){ .rr = &B->rr, .serial = 1, .flow = g->id,
					     .o = { .kind = RREAD_READ, .flow = g->id,
						    .cls = FLOW_CLASS_THROUGHPUT } };
		g->remote.busy = true;
		open_replied(&B->pc, NULL, NULL, "bad_request",
			     "remote_open: class must be \"bandwidth\"", call);
		assert_int_equal(g->remote.state, FLOW_REMOTE_UNMANAGED);
		assert_non_null(strstr(g->remote.why, "no throughput READ control"));
		assert_true(g->remote.retry_ns > clock_now_ns() + RREAD_RETRY_NS);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(register_grant_close, setup, teardown),
		cmocka_unit_test_setup_teardown(channel_drop, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(responder_not_managed, setup, teardown),
		cmocka_unit_test_setup_teardown(malformed_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(incast_recv, setup, teardown),
		cmocka_unit_test_setup_teardown(throughput_read, setup, teardown),
	};

	loop = ev_loop_new(EVFLAG_AUTO);
	log_init("test_rread", LOG_LVL_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

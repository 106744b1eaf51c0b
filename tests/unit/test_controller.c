// SPDX-License-Identifier: MIT
/* Unit tests of daemon/controller.c (and ctrl*.c), the glue between the flow registry, the
 * AIMD step, the token distribution and the shared memory: linked with the
 * daemon's objects (not main.o), without a peer channel or an RDMA device.
 * Activity from the shims' counters, L/B/T, the floor, SafeUtil halving on
 * a violating window, the rates in the flows' slots and the global header
 * a shim reads, flows on another port, soft admission control, the trace,
 * the status object, MaxRate sources, calibrate's argument checks, the
 * relaxed step reading the counters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../daemon/controller.h"
#include "../../daemon/justitiad.h"
#include "../../daemon/rread.h"
#include "bucket.h"
#include "clock.h"
#include "log.h"

#define MAXRATE 10000000000ull

uint64_t daemon_now_ns(void)
{
	return clock_now_ns();
}

static struct daemon d;
static struct ctrl c;

static int setup(void **state)
{
	memset(&d, 0, sizeof(d));
	memset(&c, 0, sizeof(c));
	config_init_defaults(&d.cfg);
	d.cfg.limits.max_flows = 64;
	d.cfg.limits.max_flows_per_client = 16;
	d.cfg.devices = calloc(1, sizeof(*d.cfg.devices));
	d.cfg.n_devices = 1;
	d.cfg.devices[0] = (struct config_device){ .name = "tst0", .port = 1, .gid_index = -1,
						   .max_rate_bps = MAXRATE, .chunk_latency = 4096,
						   .chunk_default = 1 << 20 };
	d.cfg.controller.target99_us = 100;
	d.loop = ev_loop_new(EVFLAG_AUTO);
	d.start_ns = daemon_now_ns();
	assert_int_equal(flows_init(&d.flows, &d.cfg, 7), 0);
	assert_int_equal(ctrl_init(&c, &d), 0);
	d.controller = &c;
	return 0;
}

static int teardown(void **state)
{
	ctrl_fini(&c);
	flows_fini(&d.flows);
	config_free(&d.cfg);
	ev_loop_destroy(d.loop);
	return 0;
}

static struct flow *reg(struct proc *p, const char *dev, const char *cls, uint32_t qpn,
			uint32_t weight)
{
	struct flow_req fr = { .device = dev, .port = 1, .qpn = qpn, .qp_type = "RC",
			       .cls = cls, .weight = weight, .split_qpn = -1 };
	const char *code;
	char msg[160];
	struct flow *f = flows_register(&d.flows, p, &fr, &code, msg, sizeof(msg));

	assert_non_null(f);
	ctrl_flow_registered(&c, f);
	return f;
}

static void post(struct flow *f, uint64_t bytes)
{
	struct jst_flow_stats *s = jst_shm_client_slot(f->proc->seg.base, f->cslot);

	atomic_fetch_add(&s->bytes, bytes);
	atomic_fetch_add(&s->ops, 1);
}

static const struct jst_flow_ctl *slot(const struct flow *f)
{
	return jst_shm_global_slot(d.flows.global.base, f->gslot);
}

static const struct jst_shm_global *global(void)
{
	return d.flows.global.base;
}

/* The controller's clock in these tests: periods of 500 us, never behind
 * the real clock (registrations step with the real one). */
static uint64_t sim_now;

/* A reference sample taken now (the later of the two clocks the test's
 * steps use: samples older than reference.max_age_ms leave the window). */
static void sample(uint64_t v)
{
	uint64_t t = daemon_now_ns();

	quantile_add_at(&c.win, v, sim_now > t ? sim_now : t);
}

static uint64_t periods(uint64_t now, int n)
{
	if (sim_now < daemon_now_ns())
		sim_now = daemon_now_ns();
	for (int i = 0; i < n; i++) {
		sim_now += 500000;
		ctrl_step(&c, sim_now);
	}
	return sim_now;
}

static void nothing_registered(void **state)
{
	uint64_t now = daemon_now_ns();

	periods(now, 4);
	assert_int_equal(c.max_rate_bps, MAXRATE);
	assert_string_equal(c.max_rate_src, "config");
	assert_int_equal(c.aimd.safe_util_bps, MAXRATE);
	assert_true(c.idle);
	assert_int_equal(atomic_load(&global()->safe_util_bps), MAXRATE);
	assert_int_equal(atomic_load(&global()->max_rate_bps), MAXRATE);
	assert_int_equal(atomic_load(&global()->flags), JST_G_RUNNING);
	assert_int_equal(atomic_load(&global()->chunk_bytes), 1 << 20);
	assert_int_equal(atomic_load(&global()->token_bytes), 1 << 20);
	assert_int_equal(atomic_load(&global()->alpha_permille), 500);
	assert_int_equal(atomic_load(&global()->current99_ns), 0);
	/* no peer channel: the reference flow says so */
	assert_string_equal(d.ctrl.ref_error, "no peer channel");
}

/* Only bandwidth flows (shares, no reference flow): the controller steps
 * relaxed, every CTRL_RELAXED_S, and reads the shims' counters at each of
 * those steps, so a flow that posts between two of them stays active
 * (the activity window is two relaxed steps); then a latency flow
 * brings the RefPeriod back at once. */
static void relaxed_steps_read_counters(void **state)
{
	int err;
	struct proc *p;
	struct flow *b1;
	uint64_t every = (uint64_t)(CTRL_RELAXED_S * 1e9);

	while (d.flows.procs) /* (the earlier tests' flows) */
		flows_proc_free(&d.flows, d.flows.procs);
	p = flows_proc_new(&d.flows, 900, 0, "bw", &err);
	b1 = reg(p, "tst0", "bandwidth", 2, 1);

	assert_true(every >= 20000000); /* (what this is about: no 10 ms steps) */
	ctrl_step(&c, daemon_now_ns());
	assert_false(c.idle);
	assert_true(c.step_w.repeat == CTRL_RELAXED_S);
	/* (real time: the counters' growth is stamped with the real clock) */
	for (int i = 0; i < 3 * CTRL_POLL_PERIODS; i++) {
		post(b1, 65536);
		usleep((useconds_t)(every / 1000));
		ctrl_step(&c, daemon_now_ns());
		assert_true(b1->active);
	}
	/* it stops posting: inactive within the window */
	for (int i = 0; i < 3; i++) {
		usleep((useconds_t)(every / 1000));
		ctrl_step(&c, daemon_now_ns());
	}
	assert_false(b1->active);
	reg(p, "tst0", "latency", 3, 1);
	assert_true(c.step_w.repeat < CTRL_RELAXED_S);
	flows_proc_free(&d.flows, p);
}

/* With no local flow at all (it runs second): an incoming latency flow (a
 * latency READ served here, a ping-pong answered from here) puts this
 * host in pace mode protect, small chunk, as a local latency flow does;
 * gone with its connection, the mode is off again. */
static void incoming_latency_protects(void **state)
{
	static struct rread rr;
	struct rread_open l = { .kind = RREAD_RECV, .flow = 3, .cls = FLOW_CLASS_LATENCY,
				.qpn = 5, .peer_qpn = 6, .weight = 1, .active = true };
	uint64_t now = periods(daemon_now_ns(), 2);
	char why[160];

	assert_int_equal(c.n.lat, 0);
	assert_int_equal(c.pace_mode, JST_PACE_OFF);
	assert_int_equal(rread_init(&rr, &d), 0);
	d.rread = &rr;
	assert_int_equal(rreadtab_open(&rr.tab, 9, NULL, "s1:7471", &l, now, why, sizeof(why)), 0);
	now = periods(now, 2);
	assert_int_equal(c.n.lat, 1);
	assert_int_equal(c.pace_mode, JST_PACE_PROTECT);
	assert_int_equal(d.flows.pace_mode, JST_PACE_PROTECT);
	assert_int_equal(atomic_load(&global()->chunk_bytes), 4096);
	assert_int_equal(rreadtab_drop(&rr.tab, 9), 1);
	now = periods(now, 2);
	assert_int_equal(c.n.lat, 0);
	assert_int_equal(c.pace_mode, JST_PACE_OFF);
	assert_int_equal(atomic_load(&global()->chunk_bytes), 1 << 20);
	rread_fini(&rr);
	d.rread = NULL;
}

/* Two incoming bandwidth flows and no latency flow anywhere: the receiver
 * limits neither (a split of MaxRate would cap them below what the link
 * carries although nobody is protected); with an incoming latency flow it
 * shares SafeUtil among them. */
static void incoming_unlimited_without_latency(void **state)
{
	static struct rread rr;
	struct rread_open b = { .kind = RREAD_RECV, .flow = 1, .cls = FLOW_CLASS_BANDWIDTH,
				.qpn = 5, .peer_qpn = 6, .weight = 1, .active = true };
	struct rread_open l = b;
	uint64_t now = periods(daemon_now_ns(), 2);
	char why[160];

	assert_int_equal(rread_init(&rr, &d), 0);
	d.rread = &rr;
	assert_int_equal(rreadtab_open(&rr.tab, 9, NULL, "s1:7471", &b, now, why, sizeof(why)), 0);
	b.flow = 2;
	b.qpn = 7;
	assert_int_equal(rreadtab_open(&rr.tab, 9, NULL, "s1:7471", &b, now, why, sizeof(why)), 0);
	now = periods(now, 2);
	assert_int_equal(c.n.lat, 0);
	assert_int_equal(rr.tab.conns[0]->e[0].rate_bps, 0);
	assert_int_equal(rr.tab.conns[0]->e[1].rate_bps, 0);
	l.flow = 3;
	l.qpn = 9;
	l.cls = FLOW_CLASS_LATENCY;
	assert_int_equal(rreadtab_open(&rr.tab, 9, NULL, "s1:7471", &l, now, why, sizeof(why)), 0);
	now = periods(now, 2);
	assert_int_equal(c.n.lat, 1);
	assert_true(rr.tab.conns[0]->e[0].rate_bps > 0);
	assert_true(rr.tab.conns[0]->e[0].rate_bps <= c.aimd.safe_util_bps / 2 + 1);
	assert_int_equal(rreadtab_drop(&rr.tab, 9), 3);
	rread_fini(&rr);
	d.rread = NULL;
}

static void flows_and_rates(void **state)
{
	int err;
	struct proc *a = flows_proc_new(&d.flows, 100, 0, "lat", &err);
	struct proc *b = flows_proc_new(&d.flows, 101, 0, "bw", &err);
	struct flow *l, *b1, *b2, *other;
	uint64_t now = daemon_now_ns();

	l = reg(a, "tst0", "latency", 1, 1);
	b1 = reg(b, "tst0", "bandwidth", 2, 1);
	b2 = reg(b, "tst0", "bandwidth", 3, 3);
	other = reg(b, "other9", "bandwidth", 4, 1);
	assert_false(c.idle);
	assert_string_equal(other->warning, "not paced: justitiad controls tst0 port 1 only");
	assert_string_equal(l->warning, ""); /* no measurement: no admission warning */

	/* nothing posted yet: idle flows get what they would get if they started */
	now = periods(now, 4);
	assert_int_equal(c.n.lat, 1);
	assert_int_equal(c.n.bw, 0);
	assert_false(b1->active);
	assert_int_equal(atomic_load(&slot(b1)->rate_bps), MAXRATE);
	assert_int_equal(atomic_load(&slot(l)->rate_bps), 0);
	assert_int_equal(atomic_load(&slot(other)->rate_bps), 0);
	assert_int_equal(atomic_load(&global()->flags), JST_G_RUNNING | JST_G_LATENCY);
	assert_int_equal(atomic_load(&global()->chunk_bytes), 4096);

	/* both bandwidth flows post: active, weighted shares 1:3 */
	for (int i = 0; i < 8; i++) {
		post(b1, 65536);
		post(b2, 65536);
		now = periods(now, 1);
		if (i >= 4) { /* every step, also the ones that read the counters */
			assert_true(b1->active && b2->active);
			assert_int_equal(c.n.bw, 2);
		}
	}
	/* with the real clock, as the timer steps: the counters are read after
	 * the step's clock was taken, the growth is "in the future" */
	for (int i = 0; i < 2 * CTRL_POLL_PERIODS; i++) {
		post(b1, 1);
		ctrl_step(&c, daemon_now_ns());
		assert_true(b1->active);
	}
	assert_int_equal(c.aimd.floor_bps, MAXRATE * 2 / 3);
	assert_int_equal(atomic_load(&slot(b1)->rate_bps), c.aimd.safe_util_bps / 4);
	assert_int_equal(atomic_load(&slot(b2)->rate_bps), c.aimd.safe_util_bps * 3 / 4);
	assert_int_equal(atomic_load(&slot(b1)->flags), JST_F_PACE | JST_F_SPLIT);
	assert_int_equal(atomic_load(&slot(b1)->chunk_bytes), 4096);
	/* Appendix D: alpha * chunk / rate */
	assert_int_equal(atomic_load(&slot(b1)->wait_ns),
			 bucket_cost_ns(4096, atomic_load(&slot(b1)->rate_bps)) / 2);

	/* a flow whose big messages go in chunks is active while its chunks
	 * go, though its bytes and ops grow only when a message is complete
	 * (real time: the counters' growth is stamped with the real clock) */
	for (int i = 0; i < 6; i++) {
		struct jst_flow_stats *s = jst_shm_client_slot(b2->proc->seg.base, b2->cslot);

		post(b1, 1);
		atomic_fetch_add(&s->chunks, 1);
		usleep(30000); /* 6 x 30 ms outlast the 100 ms window */
		for (int k = 0; k < CTRL_POLL_PERIODS; k++) {
			sample(10000); /* on target, not stale */
			ctrl_step(&c, daemon_now_ns());
		}
		assert_true(b2->active);
	}
	assert_int_equal(c.n.bw, 2);

	/* a window above the target halves SafeUtil, never below the floor */
	for (int i = 0; i < 100; i++)
		sample(500000);
	now = periods(now, 1);
	assert_int_equal(c.aimd.action, AIMD_DECREASE);
	assert_int_equal(c.aimd.safe_util_bps, MAXRATE * 2 / 3); /* max(max/2, 2/3 max) */
	assert_int_equal(atomic_load(&global()->safe_util_bps), MAXRATE * 2 / 3);
	assert_int_equal(atomic_load(&global()->current99_ns), 500000);
	assert_int_equal(atomic_load(&slot(b2)->rate_bps), MAXRATE * 2 / 3 * 3 / 4);
	assert_int_equal(c.decreases, 1);

	/* soft admission control: a latency flow registering now is warned
	 * (the reference flow is up in real life; here we say so) */
	c.ref.state = REF_UP;
	c.ref.wanted = true;
	{
		struct flow *l2 = reg(a, "tst0", "latency", 5, 1);

		assert_non_null(strstr(l2->warning, "exceeds the target (100 us)"));
		assert_non_null(strstr(l2->warning, "500.0 us"));
	}
	c.ref.state = REF_OFF;
	c.ref.wanted = false;

	/* the window meets the target again: the auto step climbs back to
	 * MaxRate within 100 ms of periods */
	quantile_reset(&c.win);
	for (int i = 0; i < 200 && c.aimd.safe_util_bps < MAXRATE; i++) {
		sample(10000);
		post(b1, 1);
		post(b2, 1);
		now = periods(now, 1);
	}
	assert_int_equal(c.aimd.safe_util_bps, MAXRATE);

	/* a violation leaves the window after reference.max_age_ms (1 s),
	 * though the window holds 10000 samples: 100 of 2200 would be its
	 * p99 for as long as they stayed */
	quantile_reset(&c.win);
	for (int i = 0; i < 100; i++)
		sample(500000);
	now = periods(now, 1);
	assert_int_equal(c.current99_ns, 500000);
	for (int i = 0; i < 2100; i++) {
		sample(10000);
		post(b1, 1);
		now = periods(now, 1);
	}
	assert_int_equal(c.current99_ns, 10000);
	assert_int_equal(quantile_count(&c.win), 2000);
}

/* A long path (10 ms of base latency, as over a WAN): with an absolute
 * Target99 of 100 us SafeUtil halves on every window although nothing
 * competes; with target99_over_base the target is base + 100 us, so only a
 * rise above the base counts. */
static void target_over_base(void **state)
{
	int err;
	struct proc *a = flows_proc_new(&d.flows, 200, 0, "lat", &err);
	struct proc *b = flows_proc_new(&d.flows, 201, 0, "bw", &err);
	struct flow *l, *bw;
	uint64_t now = daemon_now_ns();

	l = reg(a, "tst0", "latency", 11, 1);
	bw = reg(b, "tst0", "bandwidth", 12, 1);
	(void)l;
	for (int i = 0; i < 2 * CTRL_POLL_PERIODS; i++) {
		post(bw, 65536);
		now = periods(now, 1);
	}
	assert_true(c.n.lat >= 1);
	/* a new path: the earlier tests' 10 us samples are not its base */
	c.base_ns = c.base_cur_ns = c.base_prev_ns = c.base_epoch_ns = 0;

	/* absolute: 10 ms is a violation */
	for (int i = 0; i < 200; i++)
		sample(10000000 + (uint64_t)(i % 50) * 1000);
	now = periods(now, 1);
	assert_int_equal(c.target99_ns, 100000);
	assert_int_equal(c.aimd.action, AIMD_DECREASE);
	assert_true(c.aimd.safe_util_bps < MAXRATE);
	assert_int_equal(c.base_ns, 10000000);

	/* over the base: the same path meets a target of base + 100 us, and
	 * SafeUtil climbs back */
	d.cfg.controller.target99_over_base = true;
	for (int k = 0; k < 400; k++) {
		for (int i = 0; i < 5; i++)
			sample(10000000 + (uint64_t)((k + i) % 50) * 1000);
		post(bw, 65536);
		now = periods(now, 1);
		assert_int_not_equal(c.aimd.action, AIMD_DECREASE);
	}
	assert_int_equal(c.target99_ns, 10100000);
	assert_int_equal(c.aimd.safe_util_bps, MAXRATE);
	{
		json_t *o = json_object();

		ctrl_status(&c, o);
		assert_int_equal(json_integer_value(json_object_get(o, "target99_ns")), 10100000);
		assert_int_equal(json_integer_value(json_object_get(o, "base_ns")), 10000000);
		assert_true(json_is_true(json_object_get(o, "target99_over_base")));
		json_decref(o);
	}
	/* a rise of 0.5 ms above the base is a violation again */
	for (int i = 0; i < 200; i++)
		sample(10500000);
	now = periods(now, 1);
	assert_int_equal(c.aimd.action, AIMD_DECREASE);
	d.cfg.controller.target99_over_base = false;
}

static void status_object(void **state)
{
	json_t *o = json_pack("{s:s, s:{s:s}}", "mode", "normal", "reference", "state", "off");
	json_t *t;

	ctrl_status(&c, o);
	assert_int_equal(json_integer_value(json_object_get(o, "max_rate_bps")), MAXRATE);
	assert_string_equal(json_string_value(json_object_get(o, "max_rate_source")), "config");
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "device"),
							      "name")),
			    "tst0");
	assert_int_equal(json_integer_value(json_object_get(o, "token_ops")), (1 << 20) / 64);
	assert_int_equal(json_integer_value(json_object_get(o, "tau_ns")),
			 bucket_cost_ns(1 << 20, c.aimd.safe_util_bps));
	t = json_object_get(o, "trace");
	assert_true(json_is_array(t));
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "calibration"),
							      "state")),
			    "idle");
	json_decref(o);
	/* MaxRate for the status' devices[]: the configured one */
	assert_int_equal(ctrl_device_max_rate(&c, &d.cfg.devices[0]), MAXRATE);
}

/* The trace: one entry per 25 ms, with the interval's min, max and floor. */
static void trace(void **state)
{
	uint64_t now = daemon_now_ns() + 10 * 1000000000ull;
	size_t before = c.trace_n;

	for (int i = 0; i < 60; i++) /* 30 ms */
		now = periods(now, 1);
	assert_true(c.trace_n > before);
	{
		const struct ctrl_trace *e = &c.trace[(c.trace_head + CTRL_TRACE - 1) % CTRL_TRACE];

		assert_true(e->min_bps <= e->safe_util_bps && e->safe_util_bps <= e->max_bps);
		assert_true(e->floor_bps <= e->min_bps);
	}
}

/* calibrate with @req (consumed) fails with error @code, its message
 * containing @msg (unless NULL) */
static void calibrate_fails(json_t *req, const char *code, const char *msg)
{
	json_t *r = ctrl_calibrate(&c, req);
	json_t *e = json_object_get(r, "error");

	assert_string_equal(json_string_value(json_object_get(e, "code")), code);
	if (msg)
		assert_non_null(strstr(json_string_value(json_object_get(e, "message")), msg));
	json_decref(r);
	json_decref(req);
}

static void calibrate_arguments(void **state)
{
	calibrate_fails(json_pack("{s:i, s:s, s:i}", "v", 1, "cmd", "calibrate", "duration_ms", 5),
			"bad_request", NULL);
	calibrate_fails(json_pack("{s:i, s:s, s:i}", "v", 1, "cmd", "calibrate", "bogus", 5),
			"bad_request", NULL);
	/* qps: 1..CALIB_MAX_QPS */
	for (int i = 0; i < 3; i++) {
		static const int bad[] = { 0, CALIB_MAX_QPS + 1, -1 };

		calibrate_fails(json_pack("{s:i, s:s, s:i}", "v", 1, "cmd", "calibrate", "qps",
					  bad[i]),
				"bad_request", "qps must be 1..16");
	}
	calibrate_fails(json_pack("{s:i, s:s, s:s}", "v", 1, "cmd", "calibrate", "qps", "8"),
			"bad_request", NULL);
	/* no peer channel at all (a valid qps gets that far) */
	calibrate_fails(json_pack("{s:i, s:s, s:i}", "v", 1, "cmd", "calibrate", "qps", 1),
			"not_found", NULL);
	calibrate_fails(json_pack("{s:i, s:s}", "v", 1, "cmd", "calibrate"), "not_found", NULL);
}

/* MaxRate "auto": the calibration file, then the link speed (none here). */
static void max_rate_sources(void **state)
{
	char dir[] = "/tmp/test_controller.XXXXXX";
	uint64_t bps;
	time_t when;
	unsigned qps;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(calib_load(dir, "tst0", 1, &bps, &when, &qps), -ENOENT);
	assert_int_equal(calib_save(dir, "tst0", 1, 3000000000ull, 1700000000, "peer:1", 1), 0);
	assert_int_equal(calib_save(dir, "tst1", 2, 5000000000ull, 1700000001, "peer:2", 8), 0);
	assert_int_equal(calib_save(dir, "tst0", 1, 4000000000ull, 1700000002, "peer:1", 4), 0);
	assert_int_equal(calib_load(dir, "tst0", 1, &bps, &when, &qps), 0);
	assert_int_equal(bps, 4000000000ull);
	assert_int_equal(when, 1700000002);
	assert_int_equal(qps, 4);
	assert_int_equal(calib_load(dir, "tst1", 2, &bps, &when, NULL), 0);
	assert_int_equal(bps, 5000000000ull);
	assert_int_equal(calib_load(dir, "tst1", 1, &bps, &when, &qps), 0);
	assert_int_equal(bps, 0);
	assert_int_equal(qps, 0);

	snprintf(d.cfg.state_dir, sizeof(d.cfg.state_dir), "%s", dir);
	d.cfg.devices[0].max_rate_bps = 0; /* "auto" */
	ctrl_reconfigure(&c);
	assert_int_equal(c.max_rate_bps, 4000000000ull);
	assert_string_equal(c.max_rate_src, "calibrated");
	assert_int_equal(c.calib_qps, 4);
	{
		json_t *o = json_object(), *cal;

		ctrl_status(&c, o);
		cal = json_object_get(o, "calibration");
		assert_int_equal(json_integer_value(json_object_get(cal, "qps")), 4);
		assert_int_equal(json_integer_value(json_object_get(cal, "max_rate_bps")),
				 4000000000ll);
		json_decref(o);
	}
	assert_int_equal(ctrl_device_max_rate(&c, &d.cfg.devices[0]), 4000000000ull);
	d.cfg.devices[0].max_rate_bps = MAXRATE;
	ctrl_reconfigure(&c);
	assert_string_equal(c.max_rate_src, "config");
	{
		char path[64];

		snprintf(path, sizeof(path), "%s/calibration.json", dir);
		unlink(path);
		rmdir(dir);
	}
}

/* Remote READ control in the step (rread.h): the READ flows another host's
 * daemon registered here count in L'/B'/T' and get their share of the
 * tokens next to the local flows; gone with their connection, they count
 * no more.  A local flow its responder limits is published at the lower
 * rate, and paced whatever the pace mode. */
static void remote_read_counted(void **state)
{
	static struct rread rr;
	struct rread_open o1 = { .flow = 1, .cls = FLOW_CLASS_BANDWIDTH, .qpn = 5, .peer_qpn = 6,
				 .weight = 1, .active = true };
	struct rread_open o2 = o1;
	uint64_t now = daemon_now_ns(), sum = 0;
	uint32_t bw0;
	char why[160];
	int err;
	struct proc *p = flows_proc_new(&d.flows, 300, 0, "reader", &err);
	struct flow *f;

	assert_int_equal(rread_init(&rr, &d), 0);
	d.rread = &rr;
	now = periods(now, 2);
	bw0 = c.n.bw;
	o2.flow = 2;
	o2.active = false;
	assert_int_equal(rreadtab_open(&rr.tab, 9, NULL, "b:7471", &o1, now, why, sizeof(why)), 0);
	assert_int_equal(rreadtab_open(&rr.tab, 9, NULL, "b:7471", &o2, now, why, sizeof(why)), 0);
	now = periods(now, 2);
	assert_int_equal(c.n_remote, 2);
	assert_int_equal(c.n.bw, bw0 + 1); /* the active one counts in B' */
	for (size_t i = 0; i < 2; i++) {
		uint64_t r = rr.tab.conns[0]->e[i].rate_bps;

		if (c.pace_mode == JST_PACE_OFF) {
			assert_int_equal(r, 0);
		} else {
			assert_true(r > 0 && r <= MAXRATE + 1);
		}
	}
	/* the active flows' shares, local and remote, stay within SafeUtil */
	if (c.pace_mode == JST_PACE_PROTECT) {
		for (size_t i = 0; i < c.cap && c.fp && i < d.flows.n_gslots; i++) {
			struct flow *g = d.flows.by_gslot[i];

			if (g && g->active && g->cls == FLOW_CLASS_BANDWIDTH)
				sum += g->rate_bps;
		}
		sum += rr.tab.conns[0]->e[0].rate_bps;
		assert_true(sum <= c.aimd.safe_util_bps + 2);
	}
	/* the connection goes: they count no more */
	assert_int_equal(rreadtab_drop(&rr.tab, 9), 2);
	now = periods(now, 2);
	assert_int_equal(c.n_remote, 0);
	assert_int_equal(c.n.bw, bw0);

	/* requester: a READ flow its responder grants 1 Mbit/s */
	f = reg(p, "tst0", "bandwidth", 77, 1);
	f->reads = true;
	f->remote.state = FLOW_REMOTE_REGISTERED;
	f->remote.serial = 1;
	f->remote.grant_bps = 1000000;
	flows_publish(&d.flows, f);
	/* (no channel here: the registrations' sync would find no responder) */
	rr.last_sync_ns = sim_now > daemon_now_ns() ? sim_now : daemon_now_ns();
	now = periods(now, 2);
	assert_int_equal(atomic_load(&slot(f)->rate_bps), 1000000);
	assert_int_equal(atomic_load(&slot(f)->flags), JST_F_PACE | JST_F_SPLIT);
	f->remote.state = FLOW_REMOTE_UNMANAGED;
	f->remote.grant_bps = 0;
	now = periods(now, 2);
	assert_true(atomic_load(&slot(f)->rate_bps) != 1000000);
	rread_fini(&rr);
	d.rread = NULL;
}

/* A file written before "qps" (version 1 without it) still gives its rate;
 * its QPs are unknown (0, null in status). */
static void old_calibration_file(void **state)
{
	char dir[] = "/tmp/test_controller.XXXXXX", path[64];
	uint64_t bps;
	time_t when;
	unsigned qps = 99;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/calibration.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"version\": 1, \"devices\": [{\"name\": \"tst0\", \"port\": 1,"
	      " \"max_rate_bps\": 326400000, \"measured_at\": 1700000000,"
	      " \"peer\": \"10.0.0.1:7471\"}]}\n", f);
	fclose(f);
	assert_int_equal(calib_load(dir, "tst0", 1, &bps, &when, &qps), 0);
	assert_int_equal(bps, 326400000);
	assert_int_equal(when, 1700000000);
	assert_int_equal(qps, 0);
	/* saving another port keeps the old entry as it was */
	assert_int_equal(calib_save(dir, "tst0", 2, 1000000000ull, 1700000005, "p", 8), 0);
	assert_int_equal(calib_load(dir, "tst0", 1, &bps, &when, &qps), 0);
	assert_int_equal(bps, 326400000);
	assert_int_equal(qps, 0);
	assert_int_equal(calib_load(dir, "tst0", 2, &bps, &when, &qps), 0);
	assert_int_equal(qps, 8);
	/* a version this daemon does not know is not read */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"version\": 2, \"devices\": []}\n", f);
	fclose(f);
	assert_int_equal(calib_load(dir, "tst0", 1, &bps, &when, &qps), -EINVAL);
	unlink(path);
	rmdir(dir);
}

/* The WRITEs outstanding per QP and the rate over the span. */
static void calibration_arithmetic(void **state)
{
	assert_int_equal(calib_depth(1), CALIB_DEPTH);
	assert_int_equal(calib_depth(2), 4);
	assert_int_equal(calib_depth(3), 3);
	assert_int_equal(calib_depth(4), 2);
	assert_int_equal(calib_depth(8), 2);
	assert_int_equal(calib_depth(CALIB_MAX_QPS), 2);
	assert_int_equal(calib_depth(0), CALIB_DEPTH);
	for (unsigned n = 1; n <= CALIB_MAX_QPS; n++) {
		assert_true(calib_depth(n) * n >= CALIB_DEPTH);
		assert_true(calib_depth(n) >= 2);
	}
	assert_int_equal(calib_rate_bps(1000, 0), 0);
	assert_int_equal(calib_rate_bps(125000000, 1000000000ull), 1000000000ull);
	/* 52.9 Mbit/s: 6.6125 MB in one second */
	assert_int_equal(calib_rate_bps(6612500, 1000000000ull), 52900000);
	/* no overflow: 16 QPs x 2 MiB at 1.6 Tbit/s for 10 s */
	assert_int_equal(calib_rate_bps(2000000000000ull, 10000000000ull), 1600000000000ull);
	assert_int_equal(calib_rate_bps(UINT64_MAX, 1), UINT64_MAX);
}

/* Receiver-side views (kind recv) in the step: incoming flows stay out of
 * the token distribution; an incoming latency flow is L' (the reference
 * flow is wanted); the incoming bandwidth flows get SafeUtil * w / W with
 * it, MaxRate * w / W without; gone with their connection, nothing. */
static void incoming_counted(void **state)
{
	static struct rread rr;
	struct rread_open b1 = { .kind = RREAD_RECV, .flow = 1, .cls = FLOW_CLASS_BANDWIDTH,
				 .qpn = 5, .peer_qpn = 6, .weight = 1, .active = true };
	struct rread_open b2 = b1, l = b1;
	uint64_t now = daemon_now_ns();
	uint32_t lat0, bw0;
	char why[160];

	assert_int_equal(rread_init(&rr, &d), 0);
	d.rread = &rr;
	now = periods(now, 2);
	lat0 = c.n.lat;
	bw0 = c.n.bw;
	b2.flow = 2;
	b2.weight = 3;
	assert_int_equal(rreadtab_open(&rr.tab, 9, NULL, "s1:7471", &b1, now, why, sizeof(why)), 0);
	assert_int_equal(rreadtab_open(&rr.tab, 10, NULL, "s2:7471", &b2, now, why, sizeof(why)),
			 0);
	now = periods(now, 2);
	assert_int_equal(c.n_remote, 0); /* not in the token distribution */
	assert_int_equal(c.n_recv, 2);
	assert_int_equal(c.n.bw, bw0 + 2);
	if (c.max_rate_bps && !lat0) {
		assert_int_equal(rr.tab.conns[0]->e[0].rate_bps, c.max_rate_bps / 4);
		assert_int_equal(rr.tab.conns[1]->e[0].rate_bps, c.max_rate_bps / 4 * 3 +
								 c.max_rate_bps % 4 * 3 / 4);
	}
	/* an incoming latency flow: protected, and this host's own flows are
	 * paced and split small as for a local latency flow */
	l.flow = 3;
	l.cls = FLOW_CLASS_LATENCY;
	assert_int_equal(rreadtab_open(&rr.tab, 9, NULL, "s1:7471", &l, now, why, sizeof(why)), 0);
	now = periods(now, 2);
	assert_int_equal(c.n.lat, lat0 + 1);
	assert_true(c.wanted);
	if (c.max_rate_bps) {
		uint64_t su = c.aimd.safe_util_bps;

		assert_int_equal(rr.tab.conns[0]->e[0].rate_bps,
				 su / 4 < AIMD_MIN_BPS ? AIMD_MIN_BPS : su / 4);
		assert_int_equal(rr.tab.conns[0]->e[1].rate_bps, 0);
	}
	assert_int_equal(rreadtab_drop(&rr.tab, 9), 2);
	assert_int_equal(rreadtab_drop(&rr.tab, 10), 1);
	now = periods(now, 2);
	assert_int_equal(c.n_recv, 0);
	assert_int_equal(c.n.lat, lat0);
	assert_int_equal(c.n.bw, bw0);
	rread_fini(&rr);
	d.rread = NULL;
}

/* A throughput-class READ flow another host's daemon registered here (a
 * key-value GET pattern: small READs in batches) counts in T' and gets an
 * ops share as a local throughput flow of its weight does, in pace modes
 * protect (the token distribution) and share (its weighted share of
 * MaxRate, in ops); its grant goes out in ops/s.  A local throughput READ
 * flow its responder limits is published at the lower ops grant, paced
 * whatever the pace mode.  (A daemon of its own: it runs last.) */
static void remote_throughput_read(void **state)
{
	static struct rread rr;
	struct rread_open o = { .kind = RREAD_READ, .flow = 4, .cls = FLOW_CLASS_THROUGHPUT,
				.qpn = 5, .peer_qpn = 6, .weight = 1, .active = true };
	struct rread_grant g[RREAD_GRANTS_MAX];
	uint64_t now, want;
	size_t from = 0;
	double opb;
	char why[160];
	int err;
	struct proc *p;
	struct flow *lt, *f;

	teardown(state);
	setup(state);
	sim_now = 0; /* (ahead of the real clock after the others: activity is real-time) */
	p = flows_proc_new(&d.flows, 301, 0, "kv", &err);
	assert_non_null(p);
	assert_int_equal(rread_init(&rr, &d), 0);
	d.rread = &rr;
	d.cfg.controller.pace_mode = CONFIG_PACE_PROTECT;
	lt = reg(p, "tst0", "throughput", 80, 1);
	now = periods(daemon_now_ns(), 1);
	assert_int_equal(rreadtab_open(&rr.tab, 9, NULL, "b:7471", &o, now, why, sizeof(why)), 0);
	for (int i = 0; i < 8; i++) {
		post(lt, 64);
		now = periods(now, 1);
	}
	assert_int_equal(c.pace_mode, JST_PACE_PROTECT);
	assert_true(lt->active);
	assert_int_equal(c.n_remote, 1);
	assert_int_equal(c.n.tput, 2); /* T': the local one and the remote one */
	/* protect: the same ops share as the local flow of the same weight */
	assert_true(lt->ops_per_s > 0);
	assert_int_equal(rr.tab.conns[0]->e[0].rate_bps, lt->ops_per_s);
	rreadtab_set_chunk(&rr.tab, 4096);
	assert_int_equal(rreadtab_grants(rr.tab.conns[0], RREAD_READ, &from, g), 1);
	assert_true(g[0].flow == 4 && g[0].ops && g[0].rate_bps == lt->ops_per_s);
	assert_int_equal(g[0].chunk, 0); /* not split: no say */
	{
		json_t *st = rread_status(&rr, now), *e;

		e = json_array_get(json_object_get(json_object_get(st, "served"), "entries"), 0);
		assert_string_equal(json_string_value(json_object_get(e, "class")), "throughput");
		assert_int_equal(json_integer_value(json_object_get(e, "share_ops_per_s")),
				 (json_int_t)lt->ops_per_s);
		assert_true(json_is_null(json_object_get(e, "share_bps")));
		json_decref(st);
	}
	/* share: its weighted share of MaxRate next to the local competing
	 * flow, in ops as the local flows' */
	d.cfg.controller.pace_mode = CONFIG_PACE_SHARE;
	for (int i = 0; i < 8; i++) {
		post(lt, 64);
		now = periods(now, 1);
	}
	assert_int_equal(c.pace_mode, JST_PACE_SHARE);
	opb = (double)c.token_ops / (8.0 * (double)d.cfg.tokens.bytes);
	want = (uint64_t)((double)MAXRATE / 2 * opb) + 1;
	assert_true(rr.tab.conns[0]->e[0].rate_bps + 1 >= want &&
		    rr.tab.conns[0]->e[0].rate_bps <= want + 1);
	/* (the step's arrays: the local flow, then the remote one) */
	assert_int_equal(c.tf[1].rate_bps, 0); /* no bit/s for it */
	assert_int_equal(c.tf[1].ops_per_s, rr.tab.conns[0]->e[0].rate_bps);
	assert_int_equal(rreadtab_drop(&rr.tab, 9), 1);

	/* requester: a throughput READ flow its responder grants 1000 ops/s */
	f = reg(p, "tst0", "throughput", 81, 1);
	f->reads = true;
	f->remote.state = FLOW_REMOTE_REGISTERED;
	f->remote.serial = 1;
	f->remote.sent.cls = FLOW_CLASS_THROUGHPUT;
	f->remote.grant_ops = 1000;
	flows_publish(&d.flows, f);
	rr.last_sync_ns = sim_now > daemon_now_ns() ? sim_now : daemon_now_ns();
	now = periods(now, 2);
	assert_int_equal(atomic_load(&slot(f)->ops_per_s), 1000); /* the lower grant */
	assert_int_equal(atomic_load(&slot(f)->rate_bps), 0);
	assert_int_equal(f->ops_per_s, 1000);
	assert_int_equal(rread_cap_ops(f, 500), 500);
	assert_int_equal(rread_cap_ops(f, 0), 1000);
	assert_int_equal(rread_cap(f, 7), 7); /* a bit/s grant is not its */
	/* paced with nothing competing here, while the responder limits it */
	d.cfg.controller.pace_mode = CONFIG_PACE_AUTO;
	now = periods(now, 2);
	assert_int_equal(atomic_load(&slot(f)->ops_per_s), 1000);
	assert_int_equal(atomic_load(&slot(f)->flags), JST_F_PACE);
	f->remote.state = FLOW_REMOTE_UNMANAGED;
	f->remote.grant_ops = 0;
	now = periods(now, 2);
	assert_true(atomic_load(&slot(f)->ops_per_s) != 1000);
	rread_fini(&rr);
	d.rread = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nothing_registered),
		cmocka_unit_test(incoming_latency_protects),
		cmocka_unit_test(incoming_unlimited_without_latency),
		cmocka_unit_test(flows_and_rates),
		cmocka_unit_test(target_over_base),
		cmocka_unit_test(status_object),
		cmocka_unit_test(trace),
		cmocka_unit_test(calibrate_arguments),
		cmocka_unit_test(max_rate_sources),
		cmocka_unit_test(remote_read_counted),
		cmocka_unit_test(old_calibration_file),
		cmocka_unit_test(calibration_arithmetic),
		cmocka_unit_test(incoming_counted),
		cmocka_unit_test(remote_throughput_read),
		cmocka_unit_test(relaxed_steps_read_counters),
	};

	log_init("test_controller", LOG_LVL_ERROR, 0);
	return cmocka_run_group_tests(tests, setup, teardown);
}

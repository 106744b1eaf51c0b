// SPDX-License-Identifier: MIT
/* Unit tests of the RNIC model (tests/sim/) and of the daemon's controller
 * modules running on it in virtual time.  Directions and structure only:
 * the numbers are justsim's (docs/results.md).  Each run is a few ms of
 * virtual time, so the whole file takes about a second. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "tests/sim/sim_run.h"
#include "tests/sim/sim_scen.h"
#include "tests/sim/sim_verbs.h"
#include "tests/sim/sim_view.h"

#define MiB (1024u * 1024u)

/* ------------------------------------------------- the model alone */
struct ctxs {
	struct sim_evq q;
	struct sim_net *net;
	struct ibv_context *ctx[3];
	struct ibv_cq *cq[3];
	int polled;
};

static void setup_net(struct ctxs *c, const struct sim_nic_params *p, unsigned hosts)
{
	memset(c, 0, sizeof(*c));
	sim_evq_init(&c->q);
	c->net = sim_net_new(&c->q, p, hosts, 7);
	for (unsigned h = 0; h < hosts; h++) {
		c->ctx[h] = sim_verbs_open(c->net, h);
		c->cq[h] = sim_verbs_create_cq(c->ctx[h], 64);
	}
}

static void teardown_net(struct ctxs *c, unsigned hosts)
{
	for (unsigned h = 0; h < hosts; h++) {
		sim_verbs_destroy_cq(c->cq[h]);
		sim_verbs_close(c->ctx[h]);
	}
	sim_net_free(c->net);
	sim_evq_fini(&c->q);
}

static struct ibv_qp *qp(struct ctxs *c, unsigned h)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_RC, .send_cq = c->cq[h], .recv_cq = c->cq[h],
		.cap = { .max_send_wr = 8, .max_recv_wr = 8 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
	};

	return ibv_create_qp_ex(c->ctx[h], &a);
}

static int post(struct ibv_qp *q, enum ibv_wr_opcode op, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = { .length = len };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad = NULL;

	return ibv_post_send(q, &wr, &bad);
}

/* The provider is a verbs context: the inline verbs reach the model. */
static void verbs_ops_reach_the_model(void **state)
{
	struct sim_nic_params p;
	struct ctxs c;
	struct ibv_qp *a, *b;
	struct ibv_wc wc[4];
	uint64_t ser, t0;

	sim_nic_params_default(&p);
	setup_net(&c, &p, 2);
	a = qp(&c, 0);
	b = qp(&c, 1);
	assert_non_null(a);
	assert_ptr_equal(a->context, c.ctx[0]);
	assert_int_equal(post(a, IBV_WR_RDMA_WRITE, 10, 1), ENOTCONN);
	sim_verbs_connect(a, b);
	assert_int_equal(post(a, IBV_WR_RDMA_WRITE, MiB, 1), 0);
	assert_int_equal(post(a, IBV_WR_ATOMIC_CMP_AND_SWP, 8, 2), EINVAL);
	sim_evq_run(&c.q, 1000000);
	assert_int_equal(ibv_poll_cq(c.cq[0], 4, wc), 1);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(wc[0].qp_num, a->qp_num);
	/* nothing runs before its time: a 1 MiB WRITE cannot finish before
	 * its bytes went through the line, and finished well within 1 ms */
	ser = (uint64_t)MiB * 8 * 1000000000ull / p.line_bps;
	t0 = c.q.now;
	assert_int_equal(post(a, IBV_WR_RDMA_WRITE, MiB, 3), 0);
	sim_evq_run(&c.q, t0 + ser);
	assert_int_equal(ibv_poll_cq(c.cq[0], 4, wc), 0);
	sim_evq_run(&c.q, t0 + 2 * ser);
	assert_int_equal(ibv_poll_cq(c.cq[0], 4, wc), 1);
	/* READ completes at the requester; SEND needs a receive */
	assert_int_equal(post(a, IBV_WR_RDMA_READ, 100000, 4), 0);
	assert_int_equal(post(a, IBV_WR_SEND, 64, 5), 0);
	sim_evq_run(&c.q, c.q.now + 1000000);
	assert_int_equal(ibv_poll_cq(c.cq[0], 4, wc), 2);
	assert_int_equal(wc[0].opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].status, IBV_WC_RNR_RETRY_EXC_ERR);
	{
		struct ibv_recv_wr rw = { .wr_id = 77 }, *bad;

		assert_int_equal(ibv_post_recv(b, &rw, &bad), 0);
	}
	assert_int_equal(post(a, IBV_WR_SEND, 64, 6), 0);
	sim_evq_run(&c.q, c.q.now + 1000000);
	assert_int_equal(ibv_poll_cq(c.cq[1], 4, wc), 1);
	assert_int_equal(wc[0].opcode, IBV_WC_RECV);
	assert_int_equal(wc[0].wr_id, 77);
	assert_int_equal(wc[0].byte_len, 64);
	assert_int_equal(ibv_poll_cq(c.cq[0], 4, wc), 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	sim_verbs_destroy_qp(a);
	sim_verbs_destroy_qp(b);
	teardown_net(&c, 2);
}

/* Completion times of two QPs' two 1 MiB WRITEs each, posted together. */
static void interleave(enum sim_arb arb, uint64_t *first_done, int *order)
{
	struct sim_nic_params p;
	struct ctxs c;
	struct ibv_qp *a[2], *b[2];
	struct ibv_wc wc;
	int k = 0;

	sim_nic_params_default(&p);
	p.arb = arb;
	p.burst_pkts = 1;
	p.fetch_jitter_ns = 0;
	setup_net(&c, &p, 2);
	for (int i = 0; i < 2; i++) {
		a[i] = qp(&c, 0);
		b[i] = qp(&c, 1);
		sim_verbs_connect(a[i], b[i]);
	}
	for (int m = 0; m < 2; m++)
		for (int i = 0; i < 2; i++)
			assert_int_equal(post(a[i], IBV_WR_RDMA_WRITE, MiB, (uint64_t)(10 * i + m)), 0);
	*first_done = 0;
	while (k < 4) {
		sim_evq_run(&c.q, c.q.now + 1000);
		while (ibv_poll_cq(c.cq[0], 1, &wc) == 1) {
			if (!k)
				*first_done = c.q.now;
			order[k++] = (int)wc.wr_id;
		}
	}
	for (int i = 0; i < 2; i++) {
		sim_verbs_destroy_qp(a[i]);
		sim_verbs_destroy_qp(b[i]);
	}
	teardown_net(&c, 2);
}

static void arbiter_policies(void **state)
{
	uint64_t t_wqe, t_burst;
	int o_wqe[4], o_burst[4];

	interleave(SIM_ARB_WQE, &t_wqe, o_wqe);
	interleave(SIM_ARB_BURST, &t_burst, o_burst);
	/* per WQE: QP 0's first WQE goes whole, then QP 1's, then QP 0's... */
	assert_int_equal(o_wqe[0], 0);
	assert_int_equal(o_wqe[1], 10);
	assert_int_equal(o_wqe[2], 1);
	assert_int_equal(o_wqe[3], 11);
	/* per packet: both first WQEs share the line, so the first completion
	 * comes later than with per-WQE arbitration */
	assert_true(t_burst > t_wqe + t_wqe / 2);
}

/* Deterministic from the seed; another seed changes the jitter. */
static void deterministic(void **state)
{
	struct sim_params p;
	struct sim_flow_cfg f[2];
	struct sim_result r1, r2, r3;
	const struct sim_scen *s = sim_scen_find("lat-elephant");

	sim_params_default(&p);
	p.warmup_ns = 2000000;
	p.duration_ns = 5000000;
	assert_int_equal(s->flows(f, 2), 2);
	assert_int_equal(sim_run(&p, f, 2, true, &r1), 0);
	assert_int_equal(sim_run(&p, f, 2, true, &r2), 0);
	p.seed = 2;
	assert_int_equal(sim_run(&p, f, 2, true, &r3), 0);
	assert_int_equal(r1.lat.n, r2.lat.n);
	assert_int_equal(r1.lat.p99, r2.lat.p99);
	assert_int_equal(r1.bw_sum_bps, r2.bw_sum_bps);
	assert_int_equal(r1.events, r2.events);
	assert_true(r1.events != r3.events || r1.lat.p50 != r3.lat.p50);
	sim_result_free(&r1);
	sim_result_free(&r2);
	sim_result_free(&r3);
}

/* ------------------------------------------------- Justitia on the model */
static void run(const char *name, bool justitia, struct sim_result *r)
{
	struct sim_params p;
	struct sim_flow_cfg f[64];
	const struct sim_scen *s = sim_scen_find(name);
	uint32_t n;

	assert_non_null(s);
	sim_params_default(&p);
	p.warmup_ns = 5000000;
	p.duration_ns = 20000000;
	if (s->hosts)
		p.hosts = s->hosts;
	n = s->flows(f, 64);
	assert_int_equal(sim_run(&p, f, n, justitia, r), 0);
	assert_int_equal(r->errors, 0);
}

static void isolation_directions(void **state)
{
	struct sim_result alone, plain, just;
	uint64_t floor_bps;

	run("lat-alone", false, &alone);
	run("lat-elephant", false, &plain);
	run("lat-elephant", true, &just);
	assert_true(alone.lat.n > 1000);
	/* the elephant hurts the latency flow; Justitia takes most of it back */
	assert_true(alone.lat.p99 < plain.lat.p99);
	assert_true(just.lat.p99 < plain.lat.p99);
	assert_true(just.lat.p50 < plain.lat.p50);
	/* and the elephant keeps at least its floor: B/(L+B) of MaxRate */
	floor_bps = 100000000000ull / 2;
	assert_true(just.bw_sum_bps >= floor_bps);
	assert_true(just.steps > 0);
	assert_true(just.safe_util_avg_bps >= floor_bps);
	sim_result_free(&alone);
	sim_result_free(&plain);
	sim_result_free(&just);
}

static void fairness_directions(void **state)
{
	struct sim_result plain, just;

	run("bw-1m-10m", false, &plain);
	run("bw-1m-10m", true, &just);
	/* per-WQE arbitration favours the 10 MiB flow; tokens even it out */
	assert_int_equal(just.n_bw, 2);
	assert_true(plain.bw_bps[1] > 2 * plain.bw_bps[0]);
	assert_true(just.jain > plain.jain);
	sim_result_free(&plain);
	sim_result_free(&just);
}

static void throughput_directions(void **state)
{
	struct sim_result alone, plain, just;

	run("tput-alone", false, &alone);
	run("tput-elephant", false, &plain);
	run("tput-elephant", true, &just);
	assert_true(plain.tput_mops < alone.tput_mops);
	assert_true(just.tput_mops > plain.tput_mops);
	sim_result_free(&alone);
	sim_result_free(&plain);
	sim_result_free(&just);
}

/* A lone flow is left alone (pace mode OFF): the same bytes as plain. */
static void lone_flow_untouched(void **state)
{
	struct sim_result plain, just;

	run("bw-alone", false, &plain);
	run("bw-alone", true, &just);
	assert_int_equal(just.bw_sum_bps, plain.bw_sum_bps);
	assert_true(just.stream_avg_bps == 100000000000ull); /* OFF counts as MaxRate */
	sim_result_free(&plain);
	sim_result_free(&just);
}

/* READ responses come from the responder's NIC: a latency flow leaving
 * that host waits behind them. */
static void read_responses_use_the_responder(void **state)
{
	struct sim_result alone, read;

	run("lat-alone", false, &alone);
	run("read-elephant", false, &read);
	assert_int_equal(read.n_bw, 1);
	assert_true(read.bw_sum_bps > 0);
	assert_true(read.lat.p99 > 10 * alone.lat.p99);
	sim_result_free(&alone);
	sim_result_free(&read);
}

/* The receive side is finite: three senders into one host share its
 * receive rate, and backpressure bounds the queue. */
static void incast_shares_the_receiver(void **state)
{
	struct sim_result r;

	run("incast", false, &r);
	assert_int_equal(r.n_bw, 3);
	assert_true(r.bw_sum_bps < 100000000000ull);
	assert_true(r.bw_min_bps > 0);
	/* the latency flow waits in the receiver's queue, bounded by the pause
	 * threshold (10 us) plus what is on the wire */
	assert_true(r.lat.p99 > 10000);
	assert_true(r.lat.p99 < 30000);
	sim_result_free(&r);
}

/* ------------------------------------------------- the peer views */
/* Justitia with the peer views (sim_view.h) on a short run: the
 * requesters sync every 2 ms instead of 50. */
static void run_views(const char *name, struct sim_result *r)
{
	struct sim_params p;
	struct sim_flow_cfg f[64];
	const struct sim_scen *s = sim_scen_find(name);
	uint32_t n;

	assert_non_null(s);
	assert_true(s->views);
	sim_params_default(&p);
	p.warmup_ns = 5000000;
	p.duration_ns = 20000000;
	p.views = true;
	p.sync_ns = 2000000;
	if (s->hosts)
		p.hosts = s->hosts;
	n = s->flows(f, 64);
	assert_int_equal(sim_run(&p, f, n, true, r), 0);
	assert_int_equal(r->errors, 0);
	assert_true(r->views);
}

/* What a flow publishes with a remote grant: the lower rate, paced even
 * with nothing local (pace mode OFF), the smaller chunk. */
static void view_apply_rules(void **state)
{
	struct sim_flow f = { .c = { .kind = SIM_FLOW_BW } };
	uint64_t rate;
	uint32_t chunk;

	f.remote = (struct sim_remote){ .grant_bps = 30000000000ull, .chunk = 5120 };
	rate = 50000000000ull, chunk = MiB;
	sim_view_apply(&f, &rate, &chunk, MiB);
	assert_int_equal(rate, 50000000000ull); /* not registered: no say */
	assert_int_equal(chunk, MiB);
	f.remote.registered = true;
	sim_view_apply(&f, &rate, &chunk, MiB);
	assert_int_equal(rate, 30000000000ull);
	assert_int_equal(chunk, 5120);
	rate = 20000000000ull, chunk = 4096;
	sim_view_apply(&f, &rate, &chunk, MiB);
	assert_int_equal(rate, 20000000000ull);
	assert_int_equal(chunk, 4096);
	rate = 0, chunk = 0; /* OFF here */
	sim_view_apply(&f, &rate, &chunk, MiB);
	assert_int_equal(rate, 30000000000ull);
	assert_int_equal(chunk, 5120);
	f.remote.grant_bps = 0; /* the other end does not limit: OFF stays OFF */
	rate = 0, chunk = 0;
	sim_view_apply(&f, &rate, &chunk, MiB);
	assert_int_equal(rate, 0);
	assert_int_equal(chunk, 0);
	f.c.kind = SIM_FLOW_LAT; /* a latency flow is never limited */
	f.remote.grant_bps = 30000000000ull;
	sim_view_apply(&f, &rate, &chunk, MiB);
	assert_int_equal(rate, 0);
}

/* issue 13 (b): the responder counts the READ it serves and protects its
 * own latency flow against it: the requester paces the READs at the
 * responder's share and splits them at its small chunk. */
static void read_elephant_views(void **state)
{
	struct sim_result just, views;
	struct sim_ctl_cfg c;

	sim_ctl_cfg_default(&c, 100000000000ull);
	run("read-elephant", true, &just);
	run_views("read-elephant", &views);
	/* without the views host 0 sees one flow of its own: not paced */
	assert_false(just.views);
	assert_int_equal(just.served_read, 0);
	assert_int_equal(just.bw_grant[0].chunk, 0);
	assert_int_equal(views.served_read, 1);
	assert_int_equal(views.served_recv, 1); /* the ping-pong, at host 0 */
	assert_int_equal(views.bw_grant[0].chunk, c.chunk_latency);
	/* host 1's grant: registered as a READ, a share, its small chunk */
	assert_true(views.bw_remote[0].registered);
	assert_int_equal(views.bw_remote[0].kind, RREAD_READ);
	assert_int_equal(views.bw_remote[0].chunk, c.chunk_latency);
	assert_true(views.bw_remote[0].grant_bps > 0);
	assert_true(views.bw_remote[0].grant_bps <= c.max_rate_bps);
	assert_true(views.bw_grant[0].rate_bps <= views.bw_remote[0].grant_bps);
	assert_true(views.lat.p99 * 4 < just.lat.p99);
	assert_true(views.lat.p50 * 4 < just.lat.p50);
	sim_result_free(&just);
	sim_result_free(&views);
}

/* ... and with the ping-pong going elsewhere, the requester learns of it
 * only from the responder's grant: nothing of its own paces its READs. */
static void read_elephant3_views(void **state)
{
	struct sim_result just, views;

	run("read-elephant3", true, &just);
	run_views("read-elephant3", &views);
	assert_int_equal(just.bw_grant[0].chunk, 0);
	assert_int_equal(views.served_read, 1);
	assert_int_equal(views.bw_remote[0].kind, RREAD_READ);
	assert_true(views.bw_remote[0].grant_bps > 0);
	/* host 0 is OFF: the grant is the responder's, rate and chunk */
	assert_int_equal(views.bw_grant[0].rate_bps, views.bw_remote[0].grant_bps);
	assert_int_equal(views.bw_grant[0].chunk, 5120);
	assert_true(views.lat.p99 * 4 < just.lat.p99);
	sim_result_free(&just);
	sim_result_free(&views);
}

/* issue 13 (c): the receiver shares SafeUtil among the incoming elephants
 * and each sender paces at that share; the grants keep the daemon's
 * pace (at most one per connection every max(RefPeriod, 5 ms)). */
static void incast_views(void **state)
{
	struct sim_result just, views;
	uint64_t sum = 0, span_ms = 5 + 2 + 20; /* warmup, sync, measured */

	run("incast", true, &just);
	run_views("incast", &views);
	assert_int_equal(just.bw_remote[0].grant_bps, 0);
	assert_int_equal(views.n_bw, 3);
	assert_int_equal(views.served_recv, 4);
	assert_int_equal(views.served_read, 0);
	for (uint32_t i = 0; i < 3; i++) {
		assert_true(views.bw_remote[i].grant_bps > 0);
		assert_int_equal(views.bw_grant[i].rate_bps, views.bw_remote[i].grant_bps);
		assert_int_equal(views.bw_grant[i].chunk, 5120);
		/* equal weights: equal shares */
		assert_int_equal(views.bw_remote[i].grant_bps, views.bw_remote[0].grant_bps);
		sum += views.bw_remote[i].grant_bps;
	}
	assert_true(sum <= 100000000000ull);
	assert_true(views.view_grants >= 4);
	assert_true(views.view_grants <= 4 * (span_ms / 5 + 1));
	assert_true(views.lat.p99 * 2 < just.lat.p99);
	sim_result_free(&just);
	sim_result_free(&views);
}

/* issue 13 (a): a latency READ from host 0 tells host 0's daemon, which
 * then protects it against its own elephant. */
static void read_lat_views(void **state)
{
	struct sim_result plain, just, views;

	run("read-lat", false, &plain);
	run("read-lat", true, &just);
	run_views("read-lat", &views);
	assert_int_equal(just.bw_grant[0].chunk, 0);
	assert_int_equal(views.bw_grant[0].chunk, 5120);
	assert_true(views.bw_grant[0].rate_bps > 0);
	assert_true(views.bw_grant[0].rate_bps <= 100000000000ull);
	assert_true(views.served_recv >= 1);
	assert_true(plain.lat.p99 > 10 * views.lat.p99);
	assert_true(views.lat.p99 * 4 < just.lat.p99);
	sim_result_free(&plain);
	sim_result_free(&just);
	sim_result_free(&views);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(verbs_ops_reach_the_model),
		cmocka_unit_test(arbiter_policies),
		cmocka_unit_test(deterministic),
		cmocka_unit_test(isolation_directions),
		cmocka_unit_test(fairness_directions),
		cmocka_unit_test(throughput_directions),
		cmocka_unit_test(lone_flow_untouched),
		cmocka_unit_test(read_responses_use_the_responder),
		cmocka_unit_test(incast_shares_the_receiver),
		cmocka_unit_test(view_apply_rules),
		cmocka_unit_test(read_elephant_views),
		cmocka_unit_test(read_elephant3_views),
		cmocka_unit_test(incast_views),
		cmocka_unit_test(read_lat_views),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

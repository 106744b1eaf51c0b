// SPDX-License-Identifier: MIT
/* Unit tests of what lets the shim run without a wall clock, a progress
 * thread, a kernel device or the daemon's socket (justsim,
 * docs/rnic-model.md): the clock hook (shim/vclock.h), external progress
 * (shim_pace_set_external, shim_pace_step: shim/pacectl.h), the verbs
 * table of the shim's own objects (shim/vops.h) and attachment without the
 * socket (shim/attach.h), against fakeprov.h's provider.  Each test fails
 * when its hook is ignored: pacing would follow CLOCK_MONOTONIC, a thread
 * and its descriptors would exist, the split QP would come from
 * libibverbs (which dispatches through a real driver: a crash on the fake
 * context), a slot would not be obeyed. */
#include "fakeprov.h"

static uint64_t vnow;

static uint64_t virtual_clock(void)
{
	return vnow;
}

/* Far beyond any CLOCK_MONOTONIC reading: a time from the wrong clock
 * shows. */
#define T0 (1ull << 61)

static int vsetup(void **state)
{
	vnow = T0;
	setup(state);
	return 0;
}

#define VTEST(fn) cmocka_unit_test_setup_teardown(fn, vsetup, teardown)

/* 8 x 1000 B at 1 MB/s: the posts return at once, and the provider gets
 * them as virtual time passes (7 ms of it, minus the burst), at the
 * deadlines shim_pace_step() names. */
static void paced_in_virtual_time(void **state)
{
	uint64_t next;
	int steps = 0;

	post_n(8, 100, 1000);
	assert_true(provider_count() < 8);
	next = shim_pace_step(vnow, NULL);
	/* the next token, in virtual time: within a token's time of now */
	assert_true(next > vnow && next <= vnow + 1000000);
	while (provider_count() < 8 && steps++ < 100) {
		vnow = next;
		next = shim_pace_step(vnow, NULL);
	}
	assert_int_equal(provider_count(), 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(prov.wr_id[i], 100 + i);
	assert_true(vnow - T0 >= 6000000 && vnow - T0 <= 8000000);
	/* nothing left: back at the tick */
	assert_true(next > vnow);
}

/* External progress: a paced QP (setup() made one) and no thread, no
 * timerfd, epoll or eventfd. */
static void external_progress_makes_no_thread(void **state)
{
	assert_int_equal(atomic_load(&q->direct), 0);
	assert_int_equal(atomic_load(&pg.started), 0);
	assert_int_equal(pg.ep, -1);
	assert_int_equal(pg.tfd, -1);
	assert_int_equal(pg.efd, -1);
}

/* ------------------------------------------------ the verbs table */

static struct {
	int create_cq, destroy_cq, notify, create_qp, destroy_qp, query, reg, dereg, modify;
	uint32_t dest_qpn;
	enum ibv_qp_state last_state;
	struct ibv_mr mr;
} fv;

static struct ibv_cq *fv_create_cq(struct ibv_context *c, int cqe, void *cq_context,
				   struct ibv_comp_channel *ch, int vec)
{
	fv.create_cq++;
	assert_null(ch);
	memset(&split_cq, 0, sizeof(split_cq));
	split_cq.context = c;
	split_cq.cq_context = cq_context;
	return &split_cq;
}

static int fv_destroy_cq(struct ibv_cq *c)
{
	fv.destroy_cq++;
	return 0;
}

static int fv_notify(struct ibv_cq *c, int solicited)
{
	fv.notify++;
	return 0;
}

static struct ibv_qp *fv_create_qp2(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	fv.create_qp++;
	assert_ptr_equal(a->send_cq, &split_cq);
	fake_rc_qp(&split_qp, 22, &split_cq);
	return &split_qp;
}

static int fv_modify_qp(struct ibv_qp *x, struct ibv_qp_attr *a, int mask)
{
	fv.modify++;
	assert_ptr_equal(x, &split_qp);
	fv.last_state = a->qp_state;
	if (a->qp_state == IBV_QPS_RTR)
		fv.dest_qpn = a->dest_qp_num;
	return 0;
}

static int fv_destroy_qp(struct ibv_qp *x)
{
	fv.destroy_qp++;
	return 0;
}

static int fv_query(struct ibv_context *c, struct ibv_device_attr *a)
{
	fv.query++;
	memset(a, 0, sizeof(*a));
	a->max_qp_rd_atom = a->max_qp_init_rd_atom = 16;
	return 0;
}

static struct ibv_mr *fv_reg(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	fv.reg++;
	fv.mr.addr = addr;
	fv.mr.length = len;
	return &fv.mr;
}

static int fv_dereg(struct ibv_mr *mr)
{
	fv.dereg++;
	return 0;
}

static const struct shim_verbs_ops fake_vops = {
	.create_cq = fv_create_cq, .destroy_cq = fv_destroy_cq, .req_notify_cq = fv_notify,
	.create_qp = fv_create_qp2, .modify_qp = fv_modify_qp, .destroy_qp = fv_destroy_qp,
	.query_device = fv_query, .reg_mr = fv_reg, .dereg_mr = fv_dereg,
};

static int ok_post_recv(struct ibv_qp *x, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return 0;
}

/* The split QP, its CQ and memory come from the table (no channel: its CQ
 * is polled, never armed), the peer's split QP number from
 * shim_attach_peer_split(), and they go back through the table. */
static void split_resources_come_from_the_table(void **state)
{
	struct ibv_qp_attr rtr = { .path_mtu = IBV_MTU_4096 };

	memset(&fv, 0, sizeof(fv));
	q->sctx->post_recv = ok_post_recv; /* (its control slots) */
	shim_vops_set(&fake_vops);
	assert_int_equal(shim_attach_split(&qp), 22);
	assert_int_equal(fv.create_cq, 1);
	assert_int_equal(fv.create_qp, 1);
	assert_int_equal(fv.query, 1);
	assert_int_equal(fv.reg, 1);
	assert_int_equal(fv.notify, 0);
	assert_null(q->split.ch);
	assert_false(q->split.armed);
	assert_ptr_equal(split_cq.cq_context, q);
	assert_int_equal(shim_attach_peer_split(&qp, &rtr, IBV_QP_PATH_MTU, 23), 0);
	assert_int_equal(fv.dest_qpn, 23);
	assert_int_equal(fv.last_state, IBV_QPS_RTS);
	assert_int_equal(atomic_load(&q->split.state), SPLIT_READY);
	assert_int_equal(q->split.peer_split_qpn, 23);
	assert_int_equal(q->split.mtu, 4096); /* chunks are whole packets of it */
	shim_split_destroy(q);
	assert_int_equal(fv.destroy_qp, 1);
	assert_int_equal(fv.destroy_cq, 1);
	assert_int_equal(fv.dereg, 1);
	assert_int_equal(fv.notify, 0);
	shim_vops_set(NULL);
	assert_ptr_equal(shim_vops(), &shim_vops_default);
}

/* The tick: every 10 ms while a QP is paced, every 100 ms while none is
 * and nothing is queued (a wake-up with nothing to do cost 0.6 ms of a
 * vCPU under TCG); a QP that becomes paced on its post brings the 10 ms
 * tick back at once. */
static void idle_process_ticks_slowly(void **state)
{
	uint32_t gen = atomic_load(&gseg.g.mode_gen);
	uint64_t next;

	pg.next_tick = 0; /* (earlier tests ticked on the same virtual clock) */
	next = shim_pace_step(vnow, NULL);
	assert_int_equal(atomic_load(&q->direct), 0);
	assert_true(next > vnow && next <= vnow + 10000000);
	atomic_store(&gseg.slot[0].flags, 0); /* pace mode off */
	vnow = next;
	next = shim_pace_step(vnow, NULL);
	assert_int_equal(atomic_load(&q->direct), 1);
	assert_int_equal(next, vnow + 100000000);
	/* paced again, as its next post sees */
	atomic_store(&gseg.slot[0].flags, JST_F_PACE);
	atomic_store(&gseg.g.mode_gen, gen + 1);
	post_n(1, 1, 100);
	assert_int_equal(atomic_load(&q->direct), 0);
	vnow += 1000;
	next = shim_pace_step(vnow, NULL);
	assert_true(next > vnow && next <= vnow + 10000000);
}

/* shim_pace_step() reaps a split CQ by polling it: the chunks' completions
 * let the final chunk go on the application's QP. */
static void step_polls_the_split_cq(void **state)
{
	use_split_qp();
	post_one_write(1, 3000); /* three chunks on the split QP, the final waits */
	assert_int_equal(provider_count(), 3);
	shim_pace_step(vnow, &split_cq);
	assert_int_equal(provider_count(), 3); /* nothing completed yet */
	pthread_mutex_lock(&prov.lock);
	prov.complete_split = 1;
	pthread_mutex_unlock(&prov.lock);
	shim_pace_step(vnow + 1000, &split_cq);
	assert_int_equal(provider_count(), 4);
	assert_ptr_equal(prov.qp[3], &qp);
	assert_int_equal(prov.wr_id[3], 1);
	drop_split_qp();
}

/* A QP attached to a slot without the socket obeys it; attached as another
 * flow than the slot's, it does not (the slot is stale for it). */
static void attach_flow_obeys_the_slot(void **state)
{
	static struct ibv_qp qp2;
	struct shim_qp *q2;

	fake_rc_qp(&qp2, 31, &cq);
	q2 = shim_ops_track_qp(&qp2, "ibv_create_qp", 8);
	assert_non_null(q2);
	assert_int_equal(atomic_load(&q2->direct), 1);
	assert_int_equal(shim_attach_flow(&qp2, 6, JST_CLASS_BANDWIDTH, &gseg.slot[0], &cseg.st[0]),
			 0);
	assert_int_equal(atomic_load(&q2->direct), 1); /* slot 0 is flow 5's */
	assert_int_equal(shim_attach_flow(&qp2, 5, JST_CLASS_BANDWIDTH, &gseg.slot[0], &cseg.st[0]),
			 0);
	assert_int_equal(atomic_load(&q2->direct), 0);
	assert_ptr_equal(atomic_load(&q2->slot), &gseg.slot[0]);
	shim_pace_qp_gone(q2);
	shim_qp_destroy(&qp2, ok_destroy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		VTEST(paced_in_virtual_time),
		VTEST(external_progress_makes_no_thread),
		VTEST(split_resources_come_from_the_table),
		VTEST(step_polls_the_split_cq),
		VTEST(idle_process_ticks_slowly),
		VTEST(attach_flow_obeys_the_slot),
	};

	shim_vclock_set(virtual_clock);
	shim_pace_set_external();
	return fakeprov_run_tests(tests);
}

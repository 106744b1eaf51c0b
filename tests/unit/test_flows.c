// SPDX-License-Identifier: MIT
/* Unit tests of daemon/flows.c's lookups: flows_find() by id through the id
 * index (against a plain scan, under registrations and removals in random
 * order, ids far apart, a full registry), and what `set weight pid` and a
 * reload publish.  #includes flows.c and links the daemon's other objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <time.h>

#include "../../daemon/flows.c"
#include "../../daemon/justitiad.h"

uint64_t daemon_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct config cfg;
static struct flows fl;

static int setup_n(uint32_t n)
{
	config_init_defaults(&cfg);
	cfg.limits.max_flows = n;
	cfg.limits.max_flows_per_client = n;
	return flows_init(&fl, &cfg, 5);
}

static int teardown(void **state)
{
	(void)state;
	flows_fini(&fl);
	config_free(&cfg);
	return 0;
}

static struct flow *reg(struct proc *p, uint32_t qpn, const char *cls)
{
	struct flow_req fr = { .device = "tst0", .port = 1, .qpn = qpn, .qp_type = "RC",
			       .cls = cls, .split_qpn = -1 };
	const char *code;
	char msg[160];

	return flows_register(&fl, p, &fr, &code, msg, sizeof(msg));
}

static struct flow *scan(uint32_t id)
{
	for (uint32_t g = 0; g < fl.n_gslots; g++)
		if (fl.by_gslot[g] && fl.by_gslot[g]->id == id)
			return fl.by_gslot[g];
	return NULL;
}

static void find_matches_scan(void **state)
{
	const uint32_t n = 512;
	struct proc *p;
	uint32_t max_id = 0;
	unsigned seed = 1;
	int rc;

	(void)state;
	assert_int_equal(setup_n(n), 0);
	p = flows_proc_new(&fl, 1, 0, "t", &rc);
	assert_non_null(p);
	for (int round = 0; round < 40000; round++) {
		seed = seed * 1103515245u + 12345u;
		if ((seed >> 16) % 3 && p->n_flows < n) {
			struct flow *f = reg(p, round & 0xffffff, "bw");

			assert_non_null(f);
			max_id = f->id;
		} else if (p->n_flows) { /* remove a random one */
			uint32_t k = (seed >> 8) % (uint32_t)p->n_flows;
			struct flow *f = p->flows;

			while (k--)
				f = f->next;
			flows_unregister(&fl, f);
		}
		if (round % 97 == 0)
			for (uint32_t id = max_id > 3 * n ? max_id - 3 * n : 1; id <= max_id + 2; id++)
				if (flows_find(&fl, id) != scan(id))
					fail_msg("round %d: id %u found wrongly", round, id);
	}
	/* a full registry, then one old flow kept while ids run far ahead */
	while (p->n_flows < n)
		assert_non_null(reg(p, 1, "bw"));
	assert_null(reg(p, 1, "bw"));
	for (uint32_t id = 1; id <= fl.next_id; id++)
		assert_ptr_equal(flows_find(&fl, id), scan(id));
	assert_null(flows_find(&fl, 0));
	teardown(NULL);
}

/* set weight pid and a reload publish every flow with the right chunk
 * size: latency flows are counted after every class is derived. */
static void weight_and_reload(void **state)
{
	struct config_app_rule rule = { .comm = "lat", .has_class = 1,
					.cls = FLOW_CLASS_LATENCY, .weight = 3 };
	struct proc *a, *b;
	struct flow *fa[64];
	int rc;

	(void)state;
	assert_int_equal(setup_n(256), 0);
	cfg.devices = calloc(1, sizeof(*cfg.devices));
	cfg.n_devices = 1;
	cfg.devices[0] = (struct config_device){ .name = "tst0", .port = 1, .gid_index = -1,
						 .chunk_latency = 4096, .chunk_default = 1 << 20 };
	/* "lat" first: the list has it last, after the flows a reload re-derives first */
	b = flows_proc_new(&fl, 11, 0, "lat", &rc);
	a = flows_proc_new(&fl, 10, 0, "bw", &rc);
	assert_ptr_equal(fl.procs, a);
	for (int i = 0; i < 64; i++)
		fa[i] = reg(a, (uint32_t)i, NULL);
	reg(b, 100, NULL);
	assert_int_equal(flows_set_weight_pid(&fl, 10, 9), 64);
	for (int i = 0; i < 64; i++) {
		const struct jst_flow_ctl *s = jst_shm_global_slot(fl.global.base, fa[i]->gslot);

		assert_int_equal(fa[i]->weight, 9);
		assert_int_equal(atomic_load(&s->weight), 9);
		assert_int_equal(atomic_load(&s->chunk_bytes), 1 << 20); /* no latency flow */
	}
	/* the reload makes "lat" a latency app: every slot then has the small chunk */
	cfg.apps = &rule;
	cfg.n_apps = 1;
	flows_reconfigure(&fl, &cfg);
	for (int i = 0; i < 64; i++) {
		const struct jst_flow_ctl *s = jst_shm_global_slot(fl.global.base, fa[i]->gslot);

		assert_int_equal(atomic_load(&s->chunk_bytes), 4096);
	}
	cfg.apps = NULL;
	cfg.n_apps = 0;
	teardown(NULL);
}

/* A process that writes impossible counters is fenced, flow by flow: what
 * was read before stays, nothing it writes later is read, and another
 * process's flows are read as before. */
static void scribbled_flow_is_fenced(void **state)
{
	struct proc *a, *b;
	struct flow *fa, *fb;
	struct jst_flow_stats *sa, *sb;
	int rc;

	(void)state;
	assert_int_equal(setup_n(16), 0);
	a = flows_proc_new(&fl, 20, 0, "scribbler", &rc);
	b = flows_proc_new(&fl, 21, 0, "good", &rc);
	assert_non_null(a);
	assert_non_null(b);
	fa = reg(a, 1, NULL);
	fb = reg(b, 2, NULL);
	assert_non_null(fa);
	assert_non_null(fb);
	sa = jst_shm_client_slot(a->seg.base, fa->cslot);
	sb = jst_shm_client_slot(b->seg.base, fb->cslot);
	atomic_store(&sa->bytes, 1000);
	atomic_store(&sb->bytes, 1000);
	flows_poll_counters(&fl);
	assert_int_equal(fa->last.bytes, 1000);
	assert_false(fa->scribbled);
	memset(sa, 0xa5, sizeof(*sa)); /* the whole line */
	flows_poll_counters(&fl);
	assert_true(fa->scribbled);
	assert_true(a->scribbler);
	assert_int_equal(fa->last.bytes, 1000);
	/* fenced: a plausible value later is not read either */
	memset(sa, 0, sizeof(*sa));
	atomic_store(&sa->bytes, 2000);
	atomic_store(&sb->bytes, 2000);
	flows_poll_counters(&fl);
	assert_int_equal(fa->last.bytes, 1000);
	assert_int_equal(fb->last.bytes, 2000);
	assert_false(fb->scribbled);
	assert_false(b->scribbler);
	teardown(NULL);
}

/* A flow is active while any of its counters grows: bytes and ops when a
 * message goes, chunks, the time it waited for tokens, and the time its
 * work waited in the send queue (a whole big message in flight longer than
 * the activity window, at a low rate). */
static void every_counter_shows_activity(void **state)
{
	struct proc *a;
	struct flow *f;
	struct jst_flow_stats *s;
	int rc;

	(void)state;
	assert_int_equal(setup_n(4), 0);
	a = flows_proc_new(&fl, 30, 0, "reader", &rc);
	assert_non_null(a);
	f = reg(a, 1, NULL);
	assert_non_null(f);
	s = jst_shm_client_slot(a->seg.base, f->cslot);
	flows_poll_counters(&fl);
	assert_int_equal(f->grew_ns, 0);
	atomic_store(&s->queued_us, 200000);
	flows_poll_counters(&fl);
	assert_int_not_equal(f->grew_ns, 0);
	f->grew_ns = 0;
	flows_poll_counters(&fl); /* nothing grew */
	assert_int_equal(f->grew_ns, 0);
	atomic_store(&s->token_wait_ns, 1000);
	flows_poll_counters(&fl);
	assert_int_not_equal(f->grew_ns, 0);
	f->grew_ns = 0;
	atomic_store(&s->chunks, 1);
	flows_poll_counters(&fl);
	assert_int_not_equal(f->grew_ns, 0);
	teardown(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(find_matches_scan),
		cmocka_unit_test(weight_and_reload),
		cmocka_unit_test(scribbled_flow_is_fenced),
		cmocka_unit_test(every_counter_shows_activity),
	};

	log_init("test_flows", LOG_LVL_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

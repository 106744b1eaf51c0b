// SPDX-License-Identifier: MIT
/* bench_controller: the daemon's CPU per RefPeriod step with 1, 64 and 1024
 * registered flows: a reference sample into the window (quantile add and
 * the three quantiles), the AIMD step, the token distribution and the
 * shared-memory publication of every flow whose grant changed, plus each
 * part on its own.  The latency series alternates between violations and
 * met targets, so SafeUtil (and every flow's rate) changes in every step:
 * the worst case for publication.  Prints numbers, never passes or fails.
 *
 *   build/bench/bench_controller [STEPS]
 *
 * Linked with the daemon's objects (not main.o), without a peer channel or
 * an RDMA device: the step is the same code the timer runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../daemon/controller.h"
#include "../../daemon/justitiad.h"
#include "clock.h"
#include "log.h"

uint64_t daemon_now_ns(void)
{
	return clock_now_ns();
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Register @n flows over n/16 processes: one latency flow per process,
 * the rest bandwidth, every fourth throughput. */
static void register_flows(struct daemon *d, int n)
{
	struct proc *p = NULL;
	const char *code;
	char msg[160];
	int err;

	for (int i = 0; i < n; i++) {
		struct flow_req fr = { .device = "bench0", .port = 1, .qpn = (uint32_t)(100 + i),
				       .qp_type = "RC", .split_qpn = -1 };

		if (i % 16 == 0) {
			p = flows_proc_new(&d->flows, 10000 + i, 0, "bench", &err);
			if (!p) {
				fprintf(stderr, "proc: %d\n", err);
				exit(1);
			}
			fr.cls = "latency";
		} else {
			fr.cls = i % 4 ? "bandwidth" : "throughput";
		}
		fr.weight = (uint32_t)(1 + i % 7);
		if (!flows_register(&d->flows, p, &fr, &code, msg, sizeof(msg))) {
			fprintf(stderr, "register: %s\n", msg);
			exit(1);
		}
	}
}

/* What the shims do between two steps: their counters grow. */
static void shims_post(struct daemon *d)
{
	for (struct proc *p = d->flows.procs; p; p = p->next)
		for (struct flow *f = p->flows; f; f = f->next) {
			struct jst_flow_stats *s = jst_shm_client_slot(p->seg.base, f->cslot);

			atomic_fetch_add_explicit(&s->bytes, 65536, memory_order_relaxed);
			atomic_fetch_add_explicit(&s->ops, 1, memory_order_relaxed);
		}
}

struct result {
	double mean, p50, p99;
};

static struct result stats(uint64_t *v, int n)
{
	struct result r = { 0 };
	double s = 0;

	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	for (int i = 0; i < n; i++)
		s += (double)v[i];
	r.mean = s / n;
	r.p50 = (double)v[n / 2];
	r.p99 = (double)v[(n * 99) / 100];
	return r;
}

static void bench(int nflows, int steps)
{
	static struct daemon d;
	static struct ctrl c;
	uint64_t *t = calloc((size_t)steps, sizeof(*t)), now, t0, sum = 0;
	struct result r;
	size_t n = 0;

	memset(&d, 0, sizeof(d));
	config_init_defaults(&d.cfg);
	d.cfg.limits.max_flows = 4096;
	d.cfg.limits.max_flows_per_client = 1024;
	d.cfg.devices = calloc(1, sizeof(*d.cfg.devices));
	d.cfg.n_devices = 1;
	d.cfg.devices[0] = (struct config_device){
		.name = "bench0", .port = 1, .gid_index = -1, .max_rate_bps = 100000000000ull,
		.chunk_latency = 5120, .chunk_default = 1 << 20,
	};
	d.loop = ev_loop_new(EVFLAG_AUTO);
	d.start_ns = daemon_now_ns();
	if (flows_init(&d.flows, &d.cfg, 42)) {
		fprintf(stderr, "flows_init failed\n");
		exit(1);
	}
	register_flows(&d, nflows);
	if (ctrl_init(&c, &d)) {
		fprintf(stderr, "ctrl_init failed\n");
		exit(1);
	}
	d.controller = &c;
	now = daemon_now_ns();
	for (int i = 0; i < steps; i++) {
		/* 100 periods over the target, 100 under: SafeUtil moves every step */
		uint64_t sample = (i / 100) % 2 ? 900000 : 20000;

		shims_post(&d);
		now += 500000;
		t0 = daemon_now_ns();
		quantile_add(&c.win, sample + (uint64_t)(i % 97));
		ctrl_step(&c, now);
		t[i] = daemon_now_ns() - t0;
	}
	for (struct proc *p = d.flows.procs; p; p = p->next)
		for (struct flow *f = p->flows; f; f = f->next)
			n++;
	r = stats(t, steps);
	printf("  %4d flows: step %8.0f ns mean, %8.0f p50, %8.0f p99 -> %5.2f%% of a core at "
	       "RefPeriod 500 us (%zu flows, %u latency)\n",
	       nflows, r.mean, r.p50, r.p99, r.mean / 5000, n, c.n.lat);

	/* the parts */
	t0 = cpu_ns();
	for (int i = 0; i < steps; i++) {
		quantile_add(&c.win, (uint64_t)i * 7919 % 1000000);
		sum += quantile_ppm(&c.win, 990000) + quantile_ppm(&c.win, 500000) +
		       quantile_ppm(&c.win, 999000);
	}
	printf("             quantile add + 3 quantiles (window %u): %6.0f ns\n", c.win.cap,
	       (double)(cpu_ns() - t0) / steps);
	t0 = cpu_ns();
	for (int i = 0; i < steps; i++) {
		struct aimd_input in = { .now_ns = now + (uint64_t)i * 500000, .n = c.n,
					 .fresh = true,
					 .current99_ns = i % 200 < 100 ? 1 : 1000000 };

		aimd_step(&c.aimd, &c.acfg, &in);
	}
	printf("             aimd step: %6.0f ns\n", (double)(cpu_ns() - t0) / steps);
	{
		struct tokens_params tp = { .token_bytes = 1 << 20, .token_ops = 5000,
					    .chunk_bytes = 5120, .alpha_permille = 500 };

		t0 = cpu_ns();
		for (int i = 0; i < steps; i++) {
			tp.safe_util_bps = 50000000000ull + (uint64_t)i * 1000;
			tokens_distribute(c.tf, n, &tp);
		}
		printf("             token distribution: %6.0f ns\n",
		       (double)(cpu_ns() - t0) / steps);
	}
	t0 = cpu_ns();
	for (int i = 0; i < steps; i++)
		for (struct proc *p = d.flows.procs; p; p = p->next)
			for (struct flow *f = p->flows; f; f = f->next)
				shm_slot_set_rates(
					jst_shm_global_slot(d.flows.global.base, f->gslot),
					(uint64_t)i, 0, 0);
	printf("             shm publish of every slot's rates: %6.0f ns\n",
	       (double)(cpu_ns() - t0) / steps);
	t0 = cpu_ns();
	for (int i = 0; i < steps; i++)
		for (struct proc *p = d.flows.procs; p; p = p->next)
			for (struct flow *f = p->flows; f; f = f->next)
				flows_publish_counted(&d.flows, f, 1);
	printf("             (a whole slot, as on registration: %6.0f ns)\n",
	       (double)(cpu_ns() - t0) / steps);
	t0 = cpu_ns();
	for (int i = 0; i < steps; i++)
		flows_poll_counters(&d.flows);
	printf("             reading the shims' counters: %6.0f ns\n",
	       (double)(cpu_ns() - t0) / steps);
	if (sum == 42)
		printf("\n");
	ctrl_fini(&c);
	flows_fini(&d.flows);
	config_free(&d.cfg);
	ev_loop_destroy(d.loop);
	free(t);
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 20000;

	log_init("bench_controller", LOG_LVL_ERROR, 0);
	printf("controller CPU per RefPeriod step (worst case: every grant changes every step;\n"
	       "step = wall time of one step, parts = thread CPU time per step):\n");
	bench(1, steps);
	bench(64, steps);
	bench(1024, steps / 4 > 100 ? steps / 4 : 100);
	return 0;
}

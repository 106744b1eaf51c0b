// SPDX-License-Identifier: MIT
/* bench_flows: the flow registry's cost at max_flows flows (default 4096):
 * flows_find() by id (every update_qp, split_peer, unregister_qp and
 * `set weight flow`), `set weight pid` over all of one process's flows, and
 * a reload's flows_reconfigure().  Prints numbers, never pass/fail. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../../daemon/flows.h"
#include "../../daemon/justitiad.h"
#include "log.h"

uint64_t daemon_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)atoi(argv[1]) : 4096, found = 0;
	struct config cfg;
	struct flows fl;
	struct proc *p;
	uint64_t t0;
	int rc;

	log_init("bench_flows", LOG_LVL_ERROR, 0);
	config_init_defaults(&cfg);
	cfg.limits.max_flows = n;
	cfg.limits.max_flows_per_client = n;
	if (flows_init(&fl, &cfg, 3))
		return 1;
	p = flows_proc_new(&fl, 1, 0, "bench", &rc);
	if (!p)
		return 1;
	t0 = daemon_now_ns();
	for (uint32_t i = 0; i < n; i++) {
		struct flow_req fr = { .device = "tst0", .port = 1, .qpn = i, .qp_type = "RC",
				       .cls = "bw", .split_qpn = -1 };
		const char *code;
		char msg[160];

		if (!flows_register(&fl, p, &fr, &code, msg, sizeof(msg)))
			return 1;
	}
	printf("  register %u flows        %10.1f us total\n", n, (daemon_now_ns() - t0) / 1e3);
	t0 = daemon_now_ns();
	for (int r = 0; r < 10; r++)
		for (uint32_t id = 1; id <= n; id++)
			found += flows_find(&fl, id) != NULL;
	printf("  flows_find               %10.1f ns per lookup (%u found)\n",
	       (daemon_now_ns() - t0) / (10.0 * n), found);
	t0 = daemon_now_ns();
	flows_set_weight_pid(&fl, 1, 5);
	printf("  set weight pid (%u)     %10.1f us\n", n, (daemon_now_ns() - t0) / 1e3);
	t0 = daemon_now_ns();
	flows_reconfigure(&fl, &cfg);
	printf("  reload's reconfigure     %10.1f us\n", (daemon_now_ns() - t0) / 1e3);
	flows_fini(&fl);
	config_free(&cfg);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the justbench scenario parser: any bytes go to bench_scenario_parse().
 * An error must name the file and leave no flows; an accepted file must hold flows that pass the
 * checks, and each flow's canonical command-line form must parse back to the same flow (the
 * promise of justbench --dry-run).
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 -D_GNU_SOURCE -I. -Icommon \
 *	tests/fuzz/fuzz_scenario.c -ljansson -o fuzz_scenario
 *   mkdir -p /tmp/corpus && ./fuzz_scenario -max_total_time=60 /tmp/corpus \
 *	tests/fuzz/corpus/scenario
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../tools/bench_flow.c"
#include "../../tools/bench_scenario.c"
#include "../../common/jsonpos.c"

#include "fuzz.h"

static bool same(const struct bench_flow *a, const struct bench_flow *b)
{
	return strcmp(a->name, b->name) == 0 && a->cls == b->cls && a->verb == b->verb &&
	       a->poll == b->poll && a->size == b->size && a->qps == b->qps &&
	       a->batch == b->batch && a->window == b->window && a->delay_us == b->delay_us &&
	       a->duration_us == b->duration_us && a->iters == b->iters;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct bench_scenario sc;
	char err[512], spec[512];
	const char *key;
	size_t bad;

	if (bench_scenario_parse("fuzz.json", (const char *)data, size, &sc, err, sizeof(err))) {
		if (strncmp(err, "fuzz.json:", 10) != 0 || sc.n)
			abort();
		return 0;
	}
	if (sc.n < 1 || sc.n > BENCH_FLOWS_MAX ||
	    bench_flows_check(sc.flows, sc.n, &bad, err, sizeof(err)))
		abort();
	for (size_t i = 0; i < sc.n; i++) {
		struct bench_flow again;

		if (bench_flow_check(&sc.flows[i], &key, err, sizeof(err)) ||
		    bench_flow_format(&sc.flows[i], spec, sizeof(spec)) ||
		    bench_flow_parse(spec, 0, &again, err, sizeof(err)) ||
		    !same(&sc.flows[i], &again))
			abort();
	}
	return 0;
}

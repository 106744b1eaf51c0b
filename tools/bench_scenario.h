/* SPDX-License-Identifier: MIT */
/*
 * justbench scenario files (docs/justbench-scenario.md): strict JSON, version 1,
 *
 *	{ "version": 1, "description": "...", "flows": [ { "class": "latency", ... }, ... ] }
 *
 * Unknown keys, wrong types and out-of-range values are errors, reported as FILE:LINE:COL:
 * PATH: message (the position of the offending value, or of the member name for an unknown key).
 */
#ifndef JUSTITIA_BENCH_SCENARIO_H
#define JUSTITIA_BENCH_SCENARIO_H

#include "bench_flow.h"

#define BENCH_SCENARIO_VERSION	1
#define BENCH_SCENARIO_FILE_MAX (1 << 20)
#define BENCH_DESCRIPTION_MAX	256 /* with the NUL */

struct bench_scenario {
	char description[BENCH_DESCRIPTION_MAX];
	struct bench_flow flows[BENCH_FLOWS_MAX];
	size_t n;
};

/*
 * Parses text[0..len) (name is the file name for messages) into sc.  Returns 0, or -EINVAL with
 * "NAME:LINE:COL: message" in err; sc is then empty.
 */
int bench_scenario_parse(const char *name, const char *text, size_t len,
			 struct bench_scenario *sc, char *err, size_t errlen);

/* Reads and parses a file; -errno with "PATH: cannot open: ..." and the like on I/O errors. */
int bench_scenario_load(const char *path, struct bench_scenario *sc, char *err, size_t errlen);

#endif

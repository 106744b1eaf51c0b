/* SPDX-License-Identifier: MIT */
/* justsim's scenarios: the shapes of the paper's experiments (docs/results.md,
 * "Justitia at line rate in the RNIC model"). */
#ifndef JUSTITIA_SIM_SCEN_H
#define JUSTITIA_SIM_SCEN_H

#include <stdbool.h>
#include <stdint.h>

#include "sim_run.h"

struct sim_scen {
	const char *name;
	const char *what;
	/* fills at most @max flows; returns their number */
	uint32_t (*flows)(struct sim_flow_cfg *f, uint32_t max);
	bool plain, justitia;       /* variants to run */
	uint64_t duration_ns;       /* 0: the run's default */
	unsigned hosts;             /* 0: the run's default (2) */
	uint64_t warmup_ns;         /* 0: the run's default */
	bool views;                 /* also run Justitia with the peer views
	                             * (variant "views", sim_view.h) */
};

extern const struct sim_scen sim_scens[];
extern const unsigned sim_n_scens;
const struct sim_scen *sim_scen_find(const char *name);

#endif

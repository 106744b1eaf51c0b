/* SPDX-License-Identifier: MIT */
/* justsim's output: a text table and JSON (docs/rnic-model.md). */
#ifndef JUSTITIA_SIM_REPORT_H
#define JUSTITIA_SIM_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "sim_run.h"
#include "sim_scen.h"

/* The model's and the controller's parameters. */
json_t *sim_report_params(const struct sim_params *p);
void sim_report_params_text(FILE *f, const struct sim_params *p);
/* One run; @trace: include SafeUtil over time. */
json_t *sim_report_run(const struct sim_scen *s, const struct sim_params *p,
		       const struct sim_result *r, int trace);
void sim_report_head(FILE *f);
void sim_report_row(FILE *f, const struct sim_scen *s, const struct sim_result *r);

#endif

/* SPDX-License-Identifier: MIT */
/* justctl metrics: the daemon's state in the Prometheus text exposition
 * format (version 0.0.4), for node_exporter's textfile collector
 * (docs/justctl.8, METRICS). */
#ifndef JUSTITIA_CTL_METRICS_H
#define JUSTITIA_CTL_METRICS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* Write the metrics of a status reply and the registered flows (the flows
 * reply's "flows" array; NULL or @per_flow false: no per-flow series).
 * @status NULL: the daemon did not answer, only justitia_up 0.  Members a
 * reply lacks (an older daemon, null while unknown) are left out. */
void ctl_metrics_write(const json_t *status, const json_t *flows, bool per_flow, FILE *out);

#endif

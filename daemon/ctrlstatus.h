/* SPDX-License-Identifier: MIT */
/* What the isolation controller publishes (ctrlstatus.c), for controller.c. */
#ifndef JUSTITIAD_CTRLSTATUS_H
#define JUSTITIAD_CTRLSTATUS_H

#include <stdbool.h>
#include <stdint.h>

#include "controller.h"

/* One step into the trace (an entry per CTRL_TRACE_NS). */
void ctrlstatus_trace_add(struct ctrl *c, uint64_t now);
/* The daemon's view of the controller (status). */
void ctrlstatus_fill_view(struct ctrl *c);
/* The target was missed within the last max(20 periods, 100 ms). */
bool ctrlstatus_violated_recently(const struct ctrl *c, uint64_t now);

#endif

/* SPDX-License-Identifier: MIT */
/* The isolation controller's port (ctrlport.c), for controller.c. */
#ifndef JUSTITIAD_CTRLPORT_H
#define JUSTITIAD_CTRLPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "controller.h"

/* The configuration entry of the controlled port, if any. */
const struct config_device *ctrlport_devcfg(const struct ctrl *c);
/* Is @f on the controlled port (cached in the flow per port generation)? */
bool ctrlport_on_port(const struct ctrl *c, struct flow *f);
/* devices[0], or the first active port; its link speed; its calibration. */
void ctrlport_resolve(struct ctrl *c);
/* MaxRate, and c->max_rate_src saying where it came from. */
uint64_t ctrlport_max_rate(struct ctrl *c);

#endif

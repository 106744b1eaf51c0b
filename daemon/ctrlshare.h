/* SPDX-License-Identifier: MIT */
/* The isolation controller's pace modes (ctrlshare.c), for controller.c. */
#ifndef JUSTITIAD_CTRLSHARE_H
#define JUSTITIAD_CTRLSHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller.h"

/* Every SHARE_WINDOW_NS: the rates c->fp[0..n) achieved over the window;
 * true when a window ended. */
bool ctrlshare_measure_window(struct ctrl *c, size_t n, uint64_t now);
/* The pace mode for this step, and in SHARE the flows' token rates. */
void ctrlshare_set_pace_mode(struct ctrl *c, size_t n, uint32_t n_lat_all, uint64_t now,
			     bool window_ended);

#endif

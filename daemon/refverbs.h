/* SPDX-License-Identifier: MIT */
/* The reference flow's verbs setup (refverbs.c), for refflow.c, refprobe.c
 * and refresp.c. */
#ifndef JUSTITIAD_REFVERBS_H
#define JUSTITIAD_REFVERBS_H

#include <stdbool.h>

#include "refflow.h"

/* Record the flow's error and state @st; a failure is logged once. */
void refverbs_set_error(struct refflow *rf, enum ref_state st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Open the probes' device (want_dev, port, GID) and watch its completion
 * channel: 0, or -errno with the error set (REF_DOWN). */
int refverbs_ensure_device(struct refflow *rf);
/* The first configured peer whose channel is up, in rf->peer_idx. */
bool refverbs_pick_peer(struct refflow *rf);
/* A loopback pair on the local device (lb_src writes into lb_dst); off. */
int refverbs_lb_setup(struct refflow *rf);
void refverbs_lb_teardown(struct refflow *rf);

#endif

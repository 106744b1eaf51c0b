/* SPDX-License-Identifier: MIT */
/* The reference flow's probes (refprobe.c), for refflow.c. */
#ifndef JUSTITIAD_REFPROBE_H
#define JUSTITIAD_REFPROBE_H

#include <ev.h>
#include <stdint.h>

#include "refflow.h"

/* No probe in flight, none scheduled. */
void refprobe_stop(struct refflow *rf);
/* Tear the probe session down and retry after the backoff. */
void refprobe_fail(struct refflow *rf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The probe session's ref_open came back (ref_open_fn): up and probing, or
 * failed. */
void refprobe_opened(struct refflow *rf, struct ref_session *s, int err, const char *msg,
		     void *arg);
/* The next probe one RefPeriod after the previous one (at once if late). */
void refprobe_schedule(struct refflow *rf, uint64_t now);
void refprobe_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);
/* The device's completion channel (rf->chan_w). */
void refprobe_chan_cb(struct ev_loop *loop, ev_io *w, int revents);

#endif

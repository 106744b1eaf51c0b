/* SPDX-License-Identifier: MIT */
/* What main.c hands the modules that get a view of the daemon instead of
 * its state (wiring.c). */
#ifndef JUSTITIAD_WIRING_H
#define JUSTITIAD_WIRING_H

#include "ctl.h"

struct daemon;

/* What the control socket sees of @d (main.c; the tests that run ctl.c). */
struct ctl_env wiring_ctl_env(struct daemon *d);

#endif

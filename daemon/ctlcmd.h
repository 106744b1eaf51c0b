/* SPDX-License-Identifier: MIT */
/* The control socket's commands (ctlcmd.c), for ctl.c's reading loop. */
#ifndef JUSTITIAD_CTLCMD_H
#define JUSTITIAD_CTLCMD_H

#include <stddef.h>

#include "ctl.h"

/* Answer one request line of @cl (now, or later for split_peer); may close
 * @cl: check cl->magic afterwards. */
void ctlcmd_dispatch(struct ctl_client *cl, const char *line, size_t len);

#endif

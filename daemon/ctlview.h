/* SPDX-License-Identifier: MIT */
/* The control socket's read-only commands (ctlview.c): each returns its
 * reply to @req (ok or error), for ctlcmd.c's dispatch to send. */
#ifndef JUSTITIAD_CTLVIEW_H
#define JUSTITIAD_CTLVIEW_H

#include <jansson.h>

#include "ctl.h"

#define FLOWS_PAGE_MAX 500       /* flows per reply: about 250 KiB, far below a client's 1 MiB */

json_t *ctlview_version(struct ctl_client *cl, json_t *req);
json_t *ctlview_status(struct ctl_client *cl, json_t *req);
json_t *ctlview_flows(struct ctl_client *cl, json_t *req);

#endif

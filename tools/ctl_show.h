/* SPDX-License-Identifier: MIT */
/* justctl's replies as text: one function per command, from the daemon's
 * reply object (docs/protocol.md) to the lines justctl prints (docs/justctl.8).
 * A member the reply lacks shows as "-"; what the daemon quotes is
 * sanitized. */
#ifndef JUSTITIA_CTL_SHOW_H
#define JUSTITIA_CTL_SHOW_H

#include <jansson.h>
#include <stdio.h>

#ifndef JUSTITIA_VERSION
#define JUSTITIA_VERSION "0.1.0"
#endif

void ctl_show_status(const json_t *reply, FILE *out);
void ctl_show_flows(const json_t *reply, FILE *out);
void ctl_show_set(const json_t *reply, FILE *out);
void ctl_show_version(const json_t *reply, FILE *out);
void ctl_show_calibrate(const json_t *reply, FILE *out);
/* An error reply on @err: "justctl: CMD: CODE: MESSAGE". */
void ctl_show_error(const char *cmd, const json_t *reply, FILE *err);

#endif

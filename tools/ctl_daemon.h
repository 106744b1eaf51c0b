/* SPDX-License-Identifier: MIT */
/* justctl's exchanges with justitiad that take more than one request on the
 * control socket (docs/protocol.md): paged flows, calibrate's follow-up,
 * `metrics` and `watch`.  Each returns an exit code after saying on @err
 * what failed. */
#ifndef JUSTITIA_CTL_DAEMON_H
#define JUSTITIA_CTL_DAEMON_H

#include "ctl_args.h"

#include <jansson.h>
#include <stdio.h>

/* The "id" of every request justctl sends. */
#define CTL_REQUEST_ID 1

/* A paged reply (flows: "next" is not null) completed with the following
 * pages on connection @fd; NULL with *e set if a page fails, or the failing
 * page's error reply. */
json_t *ctl_more_pages(int fd, json_t *req, json_t *reply, int timeout_ms, int *e);
/* After calibrate's reply: poll status until the measurement is over. */
int ctl_follow_calibrate(const struct ctl_opts *o, const char *path, FILE *out, FILE *err);
/* metrics and watch (argv as for their builders) */
int ctl_run_metrics(const struct ctl_opts *o, const char *path, int argc, char **argv,
		    FILE *out, FILE *err);
int ctl_run_watch(const struct ctl_opts *o, const char *path, int argc, char **argv,
		  FILE *out, FILE *err);

#endif

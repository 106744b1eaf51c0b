/* SPDX-License-Identifier: MIT */
/* justctl's command arguments: the builders that check a command's words
 * and complete its request object (docs/protocol.md), the `set` settings,
 * the global options and the usage errors. */
#ifndef JUSTITIA_CTL_ARGS_H
#define JUSTITIA_CTL_ARGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EXIT_USAGE 2
/* calibrate --qps: at most the daemon's CONFIG_CALIB_MAX_QPS */
#define CTL_CALIB_MAX_QPS 16

/* justctl's global options (-s, -j, -t) */
struct ctl_opts {
	const char *socket;
	bool json;
	int timeout_ms;
};

/* Each builder gets the command's arguments (argv[0] is the command name)
 * and the request to complete; on a usage error it says why on @err and
 * returns EXIT_USAGE. */
typedef int (*ctl_build_fn)(int argc, char **argv, json_t *req, FILE *err);

/* "justctl: " and the message on @err; returns EXIT_USAGE. */
__attribute__((format(printf, 2, 3), nonnull(1, 2))) int ctl_usage_error(FILE *err, const char *fmt,
									 ...);

int ctl_build_plain(int argc, char **argv, json_t *req, FILE *err); /* no arguments */
int ctl_build_flows(int argc, char **argv, json_t *req, FILE *err);
int ctl_build_set(int argc, char **argv, json_t *req, FILE *err);
int ctl_build_calibrate(int argc, char **argv, json_t *req, FILE *err);
int ctl_build_metrics(int argc, char **argv, json_t *req, FILE *err);
int ctl_build_watch(int argc, char **argv, json_t *req, FILE *err);
/* watch's -n SECONDS (default 2) and -c COUNT (default 0: forever) */
int ctl_watch_args(int argc, char **argv, double *interval, uint64_t *count, FILE *err);

/* `set SETTING ARGS`: one line of the usage each */
struct ctl_setting {
	const char *name;
	const char *args;
	const char *help;
	ctl_build_fn build;
};
extern const struct ctl_setting ctl_settings[];
extern const size_t ctl_nsettings;

#endif

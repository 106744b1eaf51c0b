// SPDX-License-Identifier: MIT
/* justctl's command arguments (see ctl_args.h): each command's words
 * checked and turned into the members of its request, the `set` settings
 * table, and the usage errors (exit 2).
 * May call: ctl_text (numbers, allocation), jansson and libc. */
#include "ctl_args.h"

#include "ctl_text.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int ctl_usage_error(FILE *err, const char *fmt, ...)
{
	va_list ap;

	fputs("justctl: ", err);
	va_start(ap, fmt);
	vfprintf(err, fmt, ap);
	va_end(ap);
	fputs("\n", err);
	return EXIT_USAGE;
}

static int no_args(int argc, char **argv, FILE *err)
{
	if (argc > 1)
		return ctl_usage_error(err, "%s: unexpected argument '%s'", argv[0], argv[1]);
	return 0;
}

int ctl_build_plain(int argc, char **argv, json_t *req, FILE *err)
{
	(void)req;
	return no_args(argc, argv, err);
}

int ctl_build_flows(int argc, char **argv, json_t *req, FILE *err)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--all") && strcmp(argv[i], "-a"))
			return ctl_usage_error(err, "flows: unexpected argument '%s'", argv[i]);
		ctl_set_new(req, "all", json_true());
	}
	return 0;
}

/* `set` sub-commands: argv[0] is "set", argv[1] the setting. */
static int set_target(int argc, char **argv, json_t *req, FILE *err)
{
	uint64_t us;

	if (argc != 3)
		return ctl_usage_error(err, "set target: expected one argument, USEC");
	if (ctl_parse_uint(argv[2], 1, INT64_MAX, &us))
		return ctl_usage_error(
		    err, "set target: '%s' is not a positive number of microseconds", argv[2]);
	ctl_set_new(req, "target99_us", json_integer((json_int_t)us));
	return 0;
}

static int set_max_rate(int argc, char **argv, json_t *req, FILE *err)
{
	uint64_t bps;

	if (argc < 3 || argc > 4)
		return ctl_usage_error(err, "set max-rate: expected RATE [DEVICE]");
	if (ctl_parse_rate(argv[2], &bps))
		return ctl_usage_error(
		    err,
		    "set max-rate: invalid rate '%s' (examples: 25Gbit, 400Mbit, "
		    "100kbit, 1000000)",
		    argv[2]);
	ctl_set_new(req, "max_rate", json_integer((json_int_t)bps));
	if (argc == 4) {
		if (!argv[3][0])
			return ctl_usage_error(err, "set max-rate: empty device name");
		ctl_set_new(req, "device", json_string(argv[3]));
	}
	return 0;
}

static int set_policy(int argc, char **argv, json_t *req, FILE *err)
{
	if (argc != 3)
		return ctl_usage_error(err, "set policy: expected keep or ignore-latency");
	if (!strcmp(argv[2], "keep"))
		ctl_set_new(req, "policy", json_string("keep"));
	else if (!strcmp(argv[2], "ignore-latency") || !strcmp(argv[2], "ignore_latency"))
		ctl_set_new(req, "policy", json_string("ignore_latency"));
	else
		return ctl_usage_error(err, "set policy: '%s' is not keep or ignore-latency", argv[2]);
	return 0;
}

static int set_weight(int argc, char **argv, json_t *req, FILE *err)
{
	uint64_t w, id;
	bool pid;

	if (argc != 5 || (strcmp(argv[3], "pid") && strcmp(argv[3], "flow")))
		return ctl_usage_error(err, "set weight: expected N pid PID, or N flow ID");
	pid = !strcmp(argv[3], "pid");
	if (ctl_parse_uint(argv[2], 1, INT64_MAX, &w))
		return ctl_usage_error(err, "set weight: '%s' is not a positive integer", argv[2]);
	if (ctl_parse_uint(argv[4], pid ? 1 : 0, pid ? INT_MAX : INT64_MAX, &id))
		return ctl_usage_error(err, "set weight: '%s' is not a valid %s", argv[4],
				       pid ? "process id" : "flow id");
	ctl_set_new(req, "weight", json_integer((json_int_t)w));
	ctl_set_new(req, pid ? "pid" : "flow", json_integer((json_int_t)id));
	return 0;
}

const struct ctl_setting ctl_settings[] = {
	{ "target", "USEC", "99th-percentile latency target of latency flows", set_target },
	{ "max-rate", "RATE [DEVICE]", "rate cap of one device, or of all (25Gbit, 400Mbit)",
	  set_max_rate },
	{ "policy", "keep|ignore-latency", "what to do when the target is unattainable",
	  set_policy },
	{ "weight", "N pid PID", "weight of every flow of a process", set_weight },
	{ "weight", "N flow ID", "weight of one flow", set_weight },
};
const size_t ctl_nsettings = sizeof(ctl_settings) / sizeof(ctl_settings[0]);

int ctl_build_set(int argc, char **argv, json_t *req, FILE *err)
{
	if (argc < 2)
		return ctl_usage_error(err, "set: expected target, max-rate, policy or weight");
	for (size_t i = 0; i < ctl_nsettings; i++)
		if (!strcmp(argv[1], ctl_settings[i].name))
			return ctl_settings[i].build(argc, argv, req, err);
	return ctl_usage_error(err, "set: unknown setting '%s' (target, max-rate, policy, weight)",
			       argv[1]);
}

/* calibrate [--qps N] [MS]: the daemon starts measuring and answers at
 * once; justctl then follows the measurement in status until it is over. */
int ctl_build_calibrate(int argc, char **argv, json_t *req, FILE *err)
{
	bool have_ms = false;
	uint64_t v;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--qps")) {
			if (i + 1 >= argc)
				return ctl_usage_error(err,
						       "calibrate: --qps takes a count of QPs");
			if (ctl_parse_uint(argv[i + 1], 1, CTL_CALIB_MAX_QPS, &v))
				return ctl_usage_error(err,
						       "calibrate: --qps takes 1..%d QPs, not '%s'",
						       CTL_CALIB_MAX_QPS, argv[i + 1]);
			ctl_set_new(req, "qps", json_integer((json_int_t)v));
			i++;
			continue;
		}
		if (have_ms)
			return ctl_usage_error(err, "calibrate: expected at most one duration, MS");
		if (ctl_parse_uint(argv[i], 100, 10000, &v))
			return ctl_usage_error(
			    err, "calibrate: '%s' is not a duration of 100..10000 ms", argv[i]);
		ctl_set_new(req, "duration_ms", json_integer((json_int_t)v));
		have_ms = true;
	}
	return 0;
}

/* metrics [--no-flows] [--output FILE] */
int ctl_build_metrics(int argc, char **argv, json_t *req, FILE *err)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-flows"))
			continue;
		if ((!strcmp(argv[i], "--output") || !strcmp(argv[i], "-o")) && i + 1 < argc &&
		    argv[i + 1][0]) {
			i++;
			continue;
		}
		return ctl_usage_error(err, "metrics: unexpected argument '%s'", argv[i]);
	}
	return 0;
}

/* watch [-n SECONDS] [-c COUNT] */
int ctl_watch_args(int argc, char **argv, double *interval, uint64_t *count, FILE *err)
{
	*interval = 2;
	*count = 0;
	for (int i = 1; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			*interval = strtod(argv[++i], &end);
			if (*end || !(*interval >= 0.1 && *interval <= 3600))
				return ctl_usage_error(
				    err, "watch: -n takes 0.1..3600 seconds, not '%s'", argv[i]);
		} else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
			if (ctl_parse_uint(argv[++i], 1, UINT32_MAX, count))
				return ctl_usage_error(
				    err, "watch: -c takes a positive count, not '%s'", argv[i]);
		} else {
			return ctl_usage_error(err, "watch: unexpected argument '%s'", argv[i]);
		}
	}
	return 0;
}

int ctl_build_watch(int argc, char **argv, json_t *req, FILE *err)
{
	double interval;
	uint64_t count;

	return ctl_watch_args(argc, argv, &interval, &count, err);
}

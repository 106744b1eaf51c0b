// SPDX-License-Identifier: MIT
/* justctl: query and steer justitiad over its control socket
 * (docs/protocol.md, docs/justctl.8).  This file holds the command table
 * (as in lldpcli), the global options and the one-request run; the words of
 * a command become a request in ctl_args.c, the reply becomes text in
 * ctl_show.c, longer exchanges are in ctl_daemon.c.
 * May call: ctl_args, ctl_show, ctl_daemon, ctl_text, common/proto. */
#include "ctl_args.h"
#include "ctl_daemon.h"
#include "ctl_show.h"
#include "ctl_text.h"
#include "proto.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS 5000

static const struct ctl_cmd {
	const char *name;
	const char *args;
	const char *help;
	ctl_build_fn build;
	void (*show)(const json_t *reply, FILE *out);
	/* after a successful reply, for commands that take a while */
	int (*follow)(const struct ctl_opts *o, const char *path, FILE *out, FILE *err);
	/* commands that do their own requests (argv as for build) */
	int (*run)(const struct ctl_opts *o, const char *path, int argc, char **argv, FILE *out,
		   FILE *err);
} commands[] = {
	{ "status", "", "daemon, controller and device state", ctl_build_plain, ctl_show_status },
	{ "flows", "[--all]", "registered flows (--all: also unmanaged ones)", ctl_build_flows,
	  ctl_show_flows },
	{ "set", NULL, NULL, ctl_build_set, ctl_show_set }, /* usage from ctl_settings[] */
	{ "version", "", "justctl and justitiad versions", ctl_build_plain, ctl_show_version },
	{ "calibrate", "[--qps N] [MS]", "measure the max rate against the reference peer (root)",
	  ctl_build_calibrate, ctl_show_calibrate, ctl_follow_calibrate },
	{ "metrics", "[--no-flows] [-o FILE]", "state in Prometheus text format (FILE: atomically)",
	  ctl_build_metrics, NULL, NULL, ctl_run_metrics },
	{ "watch", "[-n SEC] [-c COUNT]", "status and flows, refreshed every SEC (2) seconds",
	  ctl_build_watch, NULL, NULL, ctl_run_watch },
};

static void usage(FILE *out)
{
	fputs("Usage: justctl [-s PATH] [-j] [-t MS] COMMAND [ARGS]\n"
	      "       justctl -h | -V\n\nCommands:\n",
	      out);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct ctl_cmd *c = &commands[i];
		char *s;

		if (!c->args) {
			for (size_t j = 0; j < ctl_nsettings; j++) {
				s = ctl_xasprintf("%s %s %s", c->name, ctl_settings[j].name,
						  ctl_settings[j].args);
				fprintf(out, "  %-32s %s\n", s, ctl_settings[j].help);
				free(s);
			}
			continue;
		}
		s = ctl_xasprintf("%s %s", c->name, c->args);
		fprintf(out, "  %-32s %s\n", s, c->help);
		free(s);
	}
	fputs("\nOptions:\n"
	      "  -s, --socket PATH   control socket (default: $" PROTO_SOCKET_ENV ", else\n"
	      "                      " PROTO_DEFAULT_SOCKET ")\n"
	      "  -j, --json          print the daemon's reply as JSON\n"
	      "  -t, --timeout MS    give up after MS milliseconds (default 5000, 0: never)\n"
	      "  -h, --help          print this help and exit\n"
	      "  -V, --version       print justctl's version and exit\n",
	      out);
}

/* The request for `COMMAND ARGS` (argv[0] is the command): 0 with *req and
 * *cmd set, or EXIT_USAGE after saying why on @err. */
static int ctl_build(int argc, char **argv, const struct ctl_cmd **cmd, json_t **req, FILE *err)
{
	const struct ctl_cmd *c = NULL;
	json_t *r;
	int rc;

	*req = NULL;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[0], commands[i].name))
			c = &commands[i];
	if (!c) {
		ctl_usage_error(err, "unknown command '%s'", argv[0]);
		fputs("Try 'justctl --help'.\n", err);
		return EXIT_USAGE;
	}
	r = ctl_xjson(json_object());
	ctl_set_new(r, "v", json_integer(PROTO_VERSION));
	ctl_set_new(r, "cmd", json_string(c->name));
	ctl_set_new(r, "id", json_integer(CTL_REQUEST_ID));
	rc = c->build(argc, argv, r, err);
	if (rc) {
		json_decref(r);
		return rc;
	}
	*cmd = c;
	*req = r;
	return 0;
}

/* ------------------------------------------------------------ main */

/* Options: 0 with *first set to the index of the command, -1 when done
 * (help, version printed), or EXIT_USAGE. */
static int ctl_options(int argc, char **argv, struct ctl_opts *o, int *first, FILE *out, FILE *err)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t ms;
	int c;

	*o = (struct ctl_opts){ .timeout_ms = DEFAULT_TIMEOUT_MS };
	optind = 0; /* full re-initialisation: ctl_main() may run more than once */
	opterr = 0; /* our messages go to @err */
	while ((c = getopt_long(argc, argv, "+:s:jt:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!optarg[0])
				return ctl_usage_error(err, "empty socket path");
			o->socket = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 't':
			if (ctl_parse_uint(optarg, 0, INT_MAX, &ms))
				return ctl_usage_error(err, "invalid timeout '%s' (milliseconds)",
						       optarg);
			o->timeout_ms = (int)ms;
			break;
		case 'h':
			usage(out);
			return -1;
		case 'V':
			fprintf(out, "justctl %s (protocol %d)\n", JUSTITIA_VERSION, PROTO_VERSION);
			return -1;
		case ':':
			ctl_usage_error(err, "option '%s' needs an argument", argv[optind - 1]);
			fputs("Try 'justctl --help'.\n", err);
			return EXIT_USAGE;
		default:
			if (optopt)
				ctl_usage_error(err, "unknown option '-%c'", optopt);
			else
				ctl_usage_error(err, "unknown option '%s'", argv[optind - 1]);
			fputs("Try 'justctl --help'.\n", err);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		ctl_usage_error(err, "no command given");
		usage(err);
		return EXIT_USAGE;
	}
	*first = optind;
	return 0;
}

static const char *connect_hint(int e)
{
	switch (e) {
	case ENOENT:
	case ECONNREFUSED:
		return " (is justitiad running?)";
	case EACCES:
	case EPERM:
		return " (root or the socket's group needed)";
	default:
		return "";
	}
}

static int ctl_main(int argc, char **argv, FILE *out, FILE *err)
{
	const struct ctl_cmd *cmd;
	struct ctl_opts o;
	json_t *req = NULL, *reply = NULL;
	const char *path;
	int first = 0, fd, e, rc;
	bool ok;

	rc = ctl_options(argc, argv, &o, &first, out, err);
	if (rc)
		return rc < 0 ? EXIT_SUCCESS : rc;
	rc = ctl_build(argc - first, argv + first, &cmd, &req, err);
	if (rc)
		return rc;
	rc = EXIT_FAILURE;
	path = o.socket ? o.socket : proto_socket_path();
	if (cmd->run) {
		rc = cmd->run(&o, path, argc - first, argv + first, out, err);
		goto out_req;
	}
	fd = proto_connect(path, o.timeout_ms);
	if (fd < 0) {
		fprintf(err, "justctl: cannot connect to %s: %s%s\n", path, strerror(-fd),
			connect_hint(-fd));
		goto out_req;
	}
	reply = proto_call(fd, req, o.timeout_ms, NULL, NULL, 0, &e);
	reply = ctl_more_pages(fd, req, reply, o.timeout_ms, &e);
	close(fd);
	if (!reply) {
		if (e == -ETIMEDOUT)
			fprintf(err, "justctl: %s: no reply from justitiad within %d ms\n",
				cmd->name, o.timeout_ms);
		else if (e == -ECONNRESET || e == -EPIPE)
			fprintf(err, "justctl: %s: justitiad closed the connection\n", cmd->name);
		else if (e == -EPROTO)
			fprintf(err, "justctl: %s: malformed reply from justitiad\n", cmd->name);
		else
			fprintf(err, "justctl: %s: %s\n", cmd->name, strerror(-e));
		goto out_req;
	}
	ok = json_is_true(json_object_get(reply, "ok"));
	/* a command that is followed prints its final result as JSON instead */
	if (o.json && !(ok && cmd->follow) && !json_dumpf(reply, out, JSON_INDENT(2)))
		fputc('\n', out);
	if (!ok)
		ctl_show_error(cmd->name, reply, err);
	else if (!o.json)
		cmd->show(reply, out);
	rc = ok ? EXIT_SUCCESS : EXIT_FAILURE;
	if (ok && cmd->follow)
		rc = cmd->follow(&o, path, out, err);
	if (fflush(out) || ferror(out)) {
		fprintf(err, "justctl: write error: %s\n", strerror(errno));
		rc = EXIT_FAILURE;
	}
	json_decref(reply);
out_req:
	json_decref(req);
	return rc;
}

int main(int argc, char **argv)
{
	return ctl_main(argc, argv, stdout, stderr);
}

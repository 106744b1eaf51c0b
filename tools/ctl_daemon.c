// SPDX-License-Identifier: MIT
/* justctl's exchanges with justitiad beyond one request and its reply (see
 * ctl_daemon.h): the pages of a flows listing, following a calibration,
 * and the metrics and watch commands, which make their own requests.
 * May call: common/proto (connect, call), ctl_text, ctl_show, ctl_args
 * (watch's arguments), ctl_metrics, jansson and libc. */
#include "ctl_daemon.h"

#include "ctl_args.h"
#include "ctl_metrics.h"
#include "ctl_show.h"
#include "ctl_text.h"
#include "proto.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Poll status until the calibration is over; print its result. */
int ctl_follow_calibrate(const struct ctl_opts *o, const char *path, FILE *out, FILE *err)
{
	json_t *req = ctl_xjson(json_pack("{s:i, s:s, s:i}", "v", PROTO_VERSION, "cmd", "status",
					  "id", CTL_REQUEST_ID));
	int rc = EXIT_FAILURE, e;

	for (int i = 0; i < 300; i++) { /* 60 s at most */
		const json_t *cal;
		const char *state;
		json_t *reply = NULL;
		int fd = proto_connect(path, o->timeout_ms);

		if (fd >= 0) {
			reply = proto_call(fd, req, o->timeout_ms, NULL, NULL, 0, &e);
			close(fd);
		}
		if (!reply) {
			fprintf(err, "justctl: calibrate: lost the daemon while measuring\n");
			break;
		}
		cal = json_object_get(json_object_get(reply, "controller"), "calibration");
		state = ctl_jstr(cal, "state");
		if (!state || strcmp(state, "running")) {
			bool done = state && !strcmp(state, "done");

			if (o->json) {
				json_t *r =
				    ctl_xjson(json_pack("{s:i, s:b, s:O}", "v", PROTO_VERSION, "ok",
							done, "calibration", cal));

				json_dumpf(r, out, JSON_INDENT(2));
				fputc('\n', out);
				json_decref(r);
			} else if (done) {
				char *rate = ctl_field(cal, "max_rate_bps", ctl_fmt_rate);
				char *peer = ctl_field_str(cal, "peer");
				char *qps = ctl_field(cal, "qps", ctl_fmt_plain);
				bool have_qps = json_is_integer(json_object_get(cal, "qps"));

				fprintf(out, "max rate: %s (measured against %s%s%s%s)\n", rate,
					peer, have_qps ? " over " : "", have_qps ? qps : "",
					have_qps ? " QPs" : "");
				free(rate);
				free(peer);
				free(qps);
			}
			if (!done) {
				char *why = ctl_field_str(cal, "error");

				fprintf(err, "justctl: calibrate: failed: %s\n", why);
				free(why);
			}
			rc = done ? EXIT_SUCCESS : EXIT_FAILURE;
			json_decref(reply);
			break;
		}
		json_decref(reply);
		usleep(200000);
	}
	json_decref(req);
	return rc;
}

/* status, and the flows (every page), on one connection: 0, or
 * EXIT_FAILURE after saying why on @err. */
static int fetch_state(const struct ctl_opts *o, const char *path, json_t **status,
		       json_t **flows, FILE *err)
{
	json_t *req, *fr = NULL;
	int fd, e = 0;

	*status = *flows = NULL;
	fd = proto_connect(path, o->timeout_ms);
	if (fd < 0) {
		fprintf(err, "justctl: cannot connect to %s: %s\n", path, strerror(-fd));
		return EXIT_FAILURE;
	}
	req = ctl_xjson(json_pack("{s:i, s:s, s:i}", "v", PROTO_VERSION, "cmd", "status", "id",
				  CTL_REQUEST_ID));
	*status = proto_call(fd, req, o->timeout_ms, NULL, NULL, 0, &e);
	json_object_set_new(req, "cmd", json_string("flows"));
	if (*status && json_is_true(json_object_get(*status, "ok"))) {
		fr = proto_call(fd, req, o->timeout_ms, NULL, NULL, 0, &e);
		fr = ctl_more_pages(fd, req, fr, o->timeout_ms, &e);
	}
	close(fd);
	json_decref(req);
	if (!fr || !json_is_true(json_object_get(fr, "ok"))) {
		const json_t *bad = fr ? fr : *status;
		const char *msg = json_string_value(
			json_object_get(json_object_get(bad, "error"), "message"));

		fprintf(err, "justctl: no answer from justitiad on %s: %s\n", path,
			msg ? msg : e ? strerror(-e) : "malformed reply");
		json_decref(fr);
		json_decref(*status);
		*status = NULL;
		return EXIT_FAILURE;
	}
	*flows = json_incref(json_object_get(fr, "flows"));
	json_decref(fr);
	return 0;
}

/* Write to FILE.tmp, then rename: node_exporter never reads half a file. */
int ctl_run_metrics(const struct ctl_opts *o, const char *path, int argc, char **argv, FILE *out,
		    FILE *err)
{
	const char *output = NULL;
	bool per_flow = true;
	json_t *status, *flows;
	char *tmp = NULL;
	FILE *f = out;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-flows"))
			per_flow = false;
		else
			output = argv[++i];
	}
	rc = fetch_state(o, path, &status, &flows, err);
	if (output) {
		tmp = ctl_xasprintf("%s.tmp", output);
		f = fopen(tmp, "we");
		if (!f) {
			fprintf(err, "justctl: metrics: %s: %s\n", tmp, strerror(errno));
			rc = EXIT_FAILURE;
			goto out;
		}
	}
	if (o->json) {
		json_t *j = ctl_xjson(json_pack("{s:O?, s:O?}", "status", status, "flows", flows));

		json_dumpf(j, f, JSON_INDENT(2));
		fputc('\n', f);
		json_decref(j);
	} else {
		ctl_metrics_write(status, flows, per_flow, f);
	}
	if (output) {
		if (fflush(f) || ferror(f) || fclose(f) || rename(tmp, output)) {
			fprintf(err, "justctl: metrics: %s: %s\n", output, strerror(errno));
			unlink(tmp);
			rc = EXIT_FAILURE;
		}
	}
out:
	free(tmp);
	json_decref(status);
	json_decref(flows);
	return rc;
}

/* One line of JSON for a round of watch -j: the time (seconds since the
 * epoch, to the microsecond), the status reply and the flows. */
static void watch_json_line(json_t *status, json_t *flows, FILE *out)
{
	struct timespec ts;
	json_t *line;

	clock_gettime(CLOCK_REALTIME, &ts);
	line = ctl_xjson(json_pack("{s:i, s:f, s:O, s:O}", "v", PROTO_VERSION, "time",
				   (double)ts.tv_sec + (double)(ts.tv_nsec / 1000) / 1e6, "status",
				   status, "flows", flows));
	json_dumpf(line, out, JSON_COMPACT);
	fputc('\n', out);
	json_decref(line);
}

/* status and flows again every interval, like top: on a terminal the
 * screen is cleared first, otherwise each round starts with a "---" line;
 * with -j each round is one line of JSON instead (watch_json_line()). */
int ctl_run_watch(const struct ctl_opts *o, const char *path, int argc, char **argv, FILE *out,
		  FILE *err)
{
	bool tty = isatty(fileno(out));
	int rc = EXIT_SUCCESS;
	double interval;
	uint64_t count;

	ctl_watch_args(argc, argv, &interval, &count, err);
	for (uint64_t round = 0; !count || round < count; round++) {
		json_t *status, *flows;
		char when[32];
		time_t now = time(NULL);

		if (round) {
			struct timespec ts = { (time_t)interval,
					       (long)((interval - (double)(time_t)interval) * 1e9) };

			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
		}
		if (!o->json) {
			strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
			if (tty)
				fputs("\033[H\033[2J", out);
			else if (round)
				fputs("---\n", out);
			fprintf(out, "justitiad on %s at %s (every %gs; Ctrl-C ends)\n\n", path,
				when, interval);
		}
		/* (a daemon that does not answer: said in the round, or on
		 * stderr under -j, whose output stays JSON) */
		rc = fetch_state(o, path, &status, &flows, o->json ? err : out);
		if (!rc && o->json) {
			watch_json_line(status, flows, out);
		} else if (!rc) {
			json_t *fr = ctl_xjson(json_pack("{s:O}", "flows", flows));

			ctl_show_status(status, out);
			fputc('\n', out);
			ctl_show_flows(fr, out);
			json_decref(fr);
		}
		json_decref(status);
		json_decref(flows);
		if (fflush(out) || ferror(out)) {
			fprintf(err, "justctl: write error: %s\n", strerror(errno));
			return EXIT_FAILURE;
		}
	}
	return rc;
}

/* A paged reply (flows: "next" is not null) is completed with the following
 * pages on the same connection, their "flows" appended to the first's; NULL
 * with *e set if a page fails. */
json_t *ctl_more_pages(int fd, json_t *req, json_t *reply, int timeout_ms, int *e)
{
	const char *k;
	json_t *next, *v;

	while (reply && json_is_true(json_object_get(reply, "ok")) &&
	       json_is_object(next = json_object_get(reply, "next"))) {
		json_t *more;

		json_object_foreach(next, k, v)
			json_object_set(req, k, v);
		more = proto_call(fd, req, timeout_ms, NULL, NULL, 0, e);
		if (!more || !json_is_true(json_object_get(more, "ok")) ||
		    !json_is_array(json_object_get(more, "flows"))) {
			json_decref(reply);
			if (more && !json_is_true(json_object_get(more, "ok")))
				return more; /* its error is shown */
			json_decref(more);
			if (!*e)
				*e = -EPROTO;
			return NULL;
		}
		json_array_extend(json_object_get(reply, "flows"), json_object_get(more, "flows"));
		json_object_set(reply, "next", json_object_get(more, "next"));
		json_decref(more);
	}
	return reply;
}

// SPDX-License-Identifier: MIT
/* MaxRate calibration (see calib.h): a saturating session to the reference
 * peer, the achieved rate stored per device and port in state_dir.
 * May call: refflow (a session on the probes' device), clock, log. */
#include "calib.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

#define DRAIN_S 3.0
/* Version 1 all along: "qps" was added to the entries without a change of
 * version (a daemon that does not know it ignores it, and reads the rate). */
#define FILE_VERSION 1

const char *calib_state_name(enum calib_state s)
{
	static const char *const names[] = { "idle", "running", "done", "failed" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

unsigned calib_depth(unsigned qps)
{
	unsigned d = qps ? (CALIB_DEPTH + qps - 1) / qps : CALIB_DEPTH;

	return d < 2 ? 2 : d;
}

uint64_t calib_rate_bps(uint64_t bytes, uint64_t span_ns)
{
	unsigned __int128 r;

	if (!span_ns)
		return 0;
	r = (unsigned __int128)bytes * 8 * 1000000000u / span_ns;
	return r > UINT64_MAX ? UINT64_MAX : (uint64_t)r;
}

static void close_all(struct calib *c)
{
	for (unsigned i = 0; i < c->qps_req; i++)
		refflow_close_session(c->rf, &c->s[i]);
}

static void finish(struct calib *c, const char *err)
{
	const struct config *cfg = c->rf->cfg;
	uint64_t span = c->t_last > c->t_start ? c->t_last - c->t_start : 0;

	ev_timer_stop(c->loop, &c->end_w);
	close_all(c);
	refflow_pause(c->rf, false);
	c->posting = c->draining = false;
	if (!err && (!span || !c->bytes))
		err = "no write completed";
	if (err) {
		c->state = CALIB_FAILED;
		snprintf(c->error, sizeof(c->error), "%s", err);
		log_warnx("calibration failed: %s", err);
	} else {
		c->rate_bps = calib_rate_bps(c->bytes, span);
		c->qps = c->qps_up;
		c->measured_at = time(NULL);
		snprintf(c->device, sizeof(c->device), "%s", c->rf->dev.name);
		c->port = c->rf->dev.port;
		snprintf(c->peer, sizeof(c->peer), "%s", refflow_peer_name(c->rf));
		c->state = CALIB_DONE;
		c->error[0] = 0;
		log_info("calibration: %s port %u to %s: %llu bit/s over %u QPs (%llu bytes in "
			 "%.3f s)",
			 c->device, c->port, c->peer, (unsigned long long)c->rate_bps, c->qps,
			 (unsigned long long)c->bytes, (double)span / 1e9);
		if (calib_save(cfg->state_dir, c->device, c->port, c->rate_bps, c->measured_at,
			       c->peer, c->qps))
			log_warn("cannot store the calibration in %s", cfg->state_dir);
	}
	if (c->done)
		c->done(c, c->arg);
}

/* One WRITE on session @i; its index is the work request's id. */
static void post_one(struct calib *c, unsigned i)
{
	int rc = rdma_post_write(&c->s[i].ep, &c->s[i].remote, i, CALIB_MSG_BYTES);

	if (rc) {
		finish(c, "post failed");
		return;
	}
	c->s_outstanding[i]++;
	c->outstanding++;
}

static void on_wc(struct refflow *rf, const struct ibv_wc *wc, uint64_t now, void *arg)
{
	struct calib *c = arg;
	unsigned i = (unsigned)wc->wr_id;

	if (c->state != CALIB_RUNNING || i >= c->qps_req || !c->s_outstanding[i])
		return;
	c->s_outstanding[i]--;
	c->outstanding--;
	if (wc->status != IBV_WC_SUCCESS) {
		finish(c, ibv_wc_status_str(wc->status));
		return;
	}
	c->bytes += CALIB_MSG_BYTES;
	c->t_last = now;
	if (c->posting)
		post_one(c, i);
	else if (c->draining && !c->outstanding)
		finish(c, NULL);
}

static void end_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct calib *c = w->data;

	if (c->draining) { /* the last writes never completed */
		finish(c, c->bytes ? NULL : "writes did not complete");
		return;
	}
	c->posting = false;
	c->draining = true;
	if (!c->outstanding) {
		finish(c, NULL);
		return;
	}
	ev_timer_set(&c->end_w, DRAIN_S, 0);
	ev_timer_start(loop, &c->end_w);
}

/* All sessions answered: measure over those that opened. */
static void begin(struct calib *c)
{
	if (!c->qps_up) {
		finish(c, c->refused[0] ? c->refused : "no session opened");
		return;
	}
	if (c->qps_up < c->qps_req)
		log_warnx("calibration: %u of %u sessions opened (%s): measuring over %u QPs",
			  c->qps_up, c->qps_req, c->refused, c->qps_up);
	c->posting = true;
	c->t_start = clock_now_ns();
	for (unsigned i = 0; i < c->qps_req; i++)
		for (unsigned k = 0; k < c->depth && c->s[i].up && c->state == CALIB_RUNNING; k++)
			post_one(c, i);
	if (c->state != CALIB_RUNNING)
		return;
	ev_timer_set(&c->end_w, (double)c->duration_ns / 1e9, 0);
	ev_timer_start(c->loop, &c->end_w);
}

static void on_open(struct refflow *rf, struct ref_session *s, int err, const char *msg,
		    void *arg)
{
	struct calib *c = arg;

	if (c->state != CALIB_RUNNING)
		return;
	c->replies++;
	if (err && !c->refused[0])
		snprintf(c->refused, sizeof(c->refused), "%s", msg ? msg : strerror(-err));
	else if (!err)
		c->qps_up++;
	if (c->replies == c->qps_req && !c->opening)
		begin(c);
}

void calib_init(struct calib *c, struct ev_loop *loop, struct refflow *rf, calib_done_fn done,
		void *arg)
{
	memset(c, 0, sizeof(*c));
	c->loop = loop;
	c->rf = rf;
	c->done = done;
	c->arg = arg;
	ev_init(&c->end_w, end_cb);
	c->end_w.data = c;
}

void calib_fini(struct calib *c)
{
	ev_timer_stop(c->loop, &c->end_w);
	if (c->state == CALIB_RUNNING) {
		close_all(c);
		refflow_pause(c->rf, false);
		c->state = CALIB_FAILED;
	}
}

int calib_start(struct calib *c, unsigned duration_ms, unsigned qps)
{
	unsigned n = qps ? qps : c->rf->cfg->reference.calibration_qps;
	int rc = 0;

	if (c->state == CALIB_RUNNING)
		return -EBUSY;
	if (n < 1 || n > CALIB_MAX_QPS)
		return -EINVAL;
	c->duration_ns = (uint64_t)(duration_ms ? duration_ms : CALIB_DEFAULT_MS) * 1000000ull;
	c->bytes = c->outstanding = c->t_start = c->t_last = 0;
	memset(c->s_outstanding, 0, sizeof(c->s_outstanding));
	c->qps_req = c->replies = c->qps_up = 0;
	c->depth = calib_depth(n);
	c->refused[0] = 0;
	c->posting = c->draining = false;
	c->state = CALIB_RUNNING;
	c->error[0] = 0;
	refflow_pause(c->rf, true);
	/* Replies come from the event loop, or at once when the connection
	 * fails while asking (then for every request pending on it): the
	 * measurement begins when all are in, not before all were asked. */
	c->opening = true;
	for (unsigned i = 0; i < n && c->state == CALIB_RUNNING; i++) {
		rc = refflow_open_session(c->rf, &c->s[i], CALIB_MSG_BYTES, c->depth, on_open,
					  on_wc, c);
		if (rc)
			break;
		c->qps_req++;
	}
	c->opening = false;
	if (!c->qps_req) {
		refflow_pause(c->rf, false);
		c->state = CALIB_FAILED;
		snprintf(c->error, sizeof(c->error), "%s",
			 rc == -ENOTCONN ? "no reference peer is up" : strerror(-rc));
		return rc;
	}
	if (rc)
		log_warnx("calibration: only %u of %u sessions requested: %s", c->qps_req, n,
			  strerror(-rc));
	log_info("calibration started (%u ms, %u QPs, %u WRITEs of %u KiB outstanding on each)",
		 duration_ms ? duration_ms : CALIB_DEFAULT_MS, c->qps_req, c->depth,
		 CALIB_MSG_BYTES >> 10);
	if (c->state == CALIB_RUNNING && c->replies == c->qps_req)
		begin(c); /* all answered already (failed) */
	return 0;
}

/* ------------------------------------------------------------ state file */

static void file_path(char *buf, size_t len, const char *dir)
{
	snprintf(buf, len, "%s/%s", dir, CALIB_FILE);
}

int calib_load(const char *state_dir, const char *dev, unsigned port, uint64_t *bps,
	       time_t *when, unsigned *qps)
{
	char path[PATH_MAX + 32];
	json_error_t je;
	json_t *root, *e;
	size_t i;

	*bps = 0;
	*when = 0;
	if (qps)
		*qps = 0;
	file_path(path, sizeof(path), state_dir);
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return access(path, F_OK) ? -ENOENT : -EINVAL;
	if (json_integer_value(json_object_get(root, "version")) != FILE_VERSION) {
		json_decref(root);
		return -EINVAL;
	}
	json_array_foreach(json_object_get(root, "devices"), i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		json_int_t p = json_integer_value(json_object_get(e, "port"));
		json_int_t r = json_integer_value(json_object_get(e, "max_rate_bps"));

		if (!name || strcmp(name, dev) || p != (json_int_t)port || r <= 0)
			continue;
		json_int_t q = json_integer_value(json_object_get(e, "qps")); /* 0: none */

		*bps = (uint64_t)r;
		*when = (time_t)json_integer_value(json_object_get(e, "measured_at"));
		if (qps)
			*qps = q > 0 && q <= CALIB_MAX_QPS ? (unsigned)q : 0;
	}
	json_decref(root);
	return 0;
}

int calib_save(const char *state_dir, const char *dev, unsigned port, uint64_t bps, time_t when,
	       const char *peer, unsigned qps)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
	json_t *root, *devs, *keep, *e;
	size_t i;
	int fd, rc = 0;

	if (mkdir(state_dir, 0755) && errno != EEXIST)
		return -errno;
	file_path(path, sizeof(path), state_dir);
	root = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	devs = json_array();
	keep = root ? json_object_get(root, "devices") : NULL;
	json_array_foreach(keep, i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));

		if (name && (strcmp(name, dev) ||
			     json_integer_value(json_object_get(e, "port")) != (json_int_t)port))
			json_array_append(devs, e);
	}
	json_decref(root);
	json_array_append_new(devs, json_pack("{s:s, s:i, s:I, s:I, s:s, s:i}", "name", dev,
					      "port", (int)port, "max_rate_bps", (json_int_t)bps,
					      "measured_at", (json_int_t)when, "peer", peer, "qps",
					      (int)qps));
	root = json_pack("{s:i, s:o}", "version", FILE_VERSION, "devices", devs);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out_free;
	}
	if (json_dumpfd(root, fd, JSON_INDENT(2)) || write(fd, "\n", 1) != 1 || fsync(fd)) {
		rc = -EIO;
		close(fd);
		unlink(tmp);
		goto out_free;
	}
	close(fd);
	if (rename(tmp, path)) {
		rc = -errno;
		unlink(tmp);
	}
out_free:
	json_decref(root);
	return rc;
}

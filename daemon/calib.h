/* SPDX-License-Identifier: MIT */
/* Calibration of MaxRate ("justctl calibrate"): a burst of large RDMA WRITEs
 * to the reference peer over the reference flow's machinery (its device,
 * its peer channel, responders with a 1 MiB buffer), for about a second,
 * over several QPs at once (reference.calibration_qps, default 8), each
 * with its own WRITEs outstanding: one QP measures the QP's window rather
 * than the link when the path is long (Soft-RoCE keeps about 64 packets of
 * a QP in flight: 53 Mbit/s over a 10 ms round trip).  The rate is the
 * bytes of all sessions over the span from the first post to the last
 * completion.  Sessions the peer refuses (an older peer's limits) leave the
 * calibration with fewer QPs, reported with the result.  The result is
 * kept in state_dir/calibration.json and loaded at start; devices[].max_rate
 * "auto" uses it, and the port's link speed until a calibration exists.
 * Run it while the NIC is otherwise idle: it measures what is left. */
#ifndef JUSTITIAD_CALIB_H
#define JUSTITIAD_CALIB_H

#include <ev.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "refflow.h"

#define CALIB_FILE "calibration.json"
#define CALIB_MSG_BYTES REF_CALIB_BUF
#define CALIB_DEPTH 8           /* WRITEs outstanding over all QPs (at least 2 per QP) */
#define CALIB_DEFAULT_MS 1000
#define CALIB_MAX_QPS CONFIG_CALIB_MAX_QPS

enum calib_state { CALIB_IDLE, CALIB_RUNNING, CALIB_DONE, CALIB_FAILED };

struct calib;
typedef void (*calib_done_fn)(struct calib *c, void *arg);

struct calib {
	struct ev_loop *loop;
	struct refflow *rf;
	enum calib_state state;
	char error[160];
	struct ref_session s[CALIB_MAX_QPS];
	uint64_t s_outstanding[CALIB_MAX_QPS];
	unsigned qps_req, depth;        /* sessions asked for, WRITEs outstanding on each */
	unsigned replies, qps_up;       /* ref_open replies so far; sessions up */
	char refused[120];              /* why the first session that did not open */
	ev_timer end_w;
	bool opening, posting, draining;
	uint64_t duration_ns, t_start, t_last, bytes, outstanding;
	/* the last result */
	uint64_t rate_bps;
	unsigned qps;                   /* QPs it used */
	time_t measured_at;
	char device[64], peer[96];
	unsigned port;
	calib_done_fn done;
	void *arg;
};

void calib_init(struct calib *c, struct ev_loop *loop, struct refflow *rf, calib_done_fn done,
		void *arg);
void calib_fini(struct calib *c);
/* Start a measurement of @duration_ms (0: the default) over @qps QPs (0:
 * reference.calibration_qps; at most CALIB_MAX_QPS).  0, -EBUSY (one
 * runs), -ENOTCONN (no reference peer up), or -errno. */
int calib_start(struct calib *c, unsigned duration_ms, unsigned qps);
/* WRITEs outstanding on each of @qps QPs: CALIB_DEPTH over all, at least 2
 * on each (a QP with one would idle between a completion and the next post). */
unsigned calib_depth(unsigned qps);
/* @bytes over @span_ns in bit/s (0 if no span). */
uint64_t calib_rate_bps(uint64_t bytes, uint64_t span_ns);
const char *calib_state_name(enum calib_state s);

/* The stored rate of @dev port @port in @state_dir (0 if none) and the QPs
 * it was measured with (0: not recorded, a file of an older version): 0 or
 * -errno.  @qps may be NULL. */
int calib_load(const char *state_dir, const char *dev, unsigned port, uint64_t *bps,
	       time_t *when, unsigned *qps);
/* Store (replace) the entry of @dev port @port. */
int calib_save(const char *state_dir, const char *dev, unsigned port, uint64_t bps, time_t when,
	       const char *peer, unsigned qps);

#endif

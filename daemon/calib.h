/* SPDX-License-Identifier: MIT */
/* Calibration of MaxRate ("justctl calibrate"): a burst of large RDMA WRITEs
 * to the reference peer over the reference flow's machinery (its device,
 * its peer channel, a responder with a 1 MiB buffer), for about a second,
 * measured from the first post to the last completion.  The result is kept
 * in state_dir/calibration.json and loaded at start; devices[].max_rate
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
#define CALIB_MSG_BYTES (1u << 20)
#define CALIB_DEPTH 8
#define CALIB_DEFAULT_MS 1000

enum calib_state { CALIB_IDLE, CALIB_RUNNING, CALIB_DONE, CALIB_FAILED };

struct calib;
typedef void (*calib_done_fn)(struct calib *c, void *arg);

struct calib {
	struct ev_loop *loop;
	struct refflow *rf;
	enum calib_state state;
	char error[160];
	struct ref_session s;
	ev_timer end_w;
	bool posting, draining;
	uint64_t duration_ns, t_start, t_last, bytes, outstanding;
	/* the last result */
	uint64_t rate_bps;
	time_t measured_at;
	char device[64], peer[96];
	unsigned port;
	calib_done_fn done;
	void *arg;
};

void calib_init(struct calib *c, struct ev_loop *loop, struct refflow *rf, calib_done_fn done,
		void *arg);
void calib_fini(struct calib *c);
/* Start a measurement of @duration_ms.  0, -EBUSY (one runs), -ENOTCONN
 * (no reference peer up), or -errno. */
int calib_start(struct calib *c, unsigned duration_ms);
const char *calib_state_name(enum calib_state s);

/* The stored rate of @dev port @port in @state_dir (0 if none): 0 or -errno. */
int calib_load(const char *state_dir, const char *dev, unsigned port, uint64_t *bps,
	       time_t *when);
/* Store (replace) the entry of @dev port @port. */
int calib_save(const char *state_dir, const char *dev, unsigned port, uint64_t bps, time_t when,
	       const char *peer);

#endif

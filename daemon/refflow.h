/* SPDX-License-Identifier: MIT */
/* The reference latency flow (Justitia §4.3): the daemon's own RC QP to the
 * peer daemon, a 10-byte RDMA WRITE every RefPeriod from a libev timer, its
 * post-to-completion latency (CLOCK_MONOTONIC) fed into the sliding window.
 *
 * Completions are taken from a completion channel watched by the event
 * loop: no thread, no spinning, no CPU between probes.  The latency then
 * includes the wake-up of the loop (a few us on hardware), a constant bias
 * that the same measurement has at the target as under load; with
 * reference.loopback_correction a loopback probe on the local device, posted
 * alongside and measured the same way, is subtracted from each sample
 * (RPerf's correction), which removes that bias and the local software
 * overhead.  Polling the CQ in the timer instead would quantise every
 * sample to a whole RefPeriod; busy-polling would cost a core.
 *
 * The QP exchange runs over the peer channel ("ref_open"/"ref_close",
 * docs/peer-protocol.md).  The serving side (a responder: QP plus a small
 * remote-writable buffer) lives as long as the connection that asked for it.
 * A failure (peer unreachable, QP in error) is logged once, reported in the
 * status and retried with exponential backoff (250 ms .. 30 s). */
#ifndef JUSTITIAD_REFFLOW_H
#define JUSTITIAD_REFFLOW_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "peer.h"
#include "quantile.h"
#include "rdma.h"

#define REF_MSG_BYTES 10
#define REF_MAX_BUF (4u << 20)          /* largest responder buffer */
#define REF_CALIB_BUF (1u << 20)        /* a calibration session's buffer */
/* What peers may make this daemon register (pinned memory and QPs): a
 * connection, a peer host (all its connections together), and all peers
 * together.  A reference flow takes one small responder, a calibration up
 * to CONFIG_CALIB_MAX_QPS of REF_CALIB_BUF at once (one per QP). */
#define REF_MAX_RESPONDERS (CONFIG_CALIB_MAX_QPS + 4)   /* per connection */
#define REF_MAX_RESP_PER_HOST REF_MAX_RESPONDERS
#define REF_MAX_RESP_BYTES_PER_HOST (CONFIG_CALIB_MAX_QPS * REF_CALIB_BUF + REF_MAX_BUF)
#define REF_MAX_RESP_TOTAL 64
#define REF_MAX_RESP_BYTES_TOTAL (8 * REF_MAX_BUF)
/* Extra endpoints of this daemon's own on the probes' device (calibration). */
#define REF_MAX_EXTRA CONFIG_CALIB_MAX_QPS

enum ref_state {
	REF_OFF,                        /* not wanted (no latency flow, not always_on) */
	REF_CONNECTING,                 /* waiting for the peer channel or the QP exchange */
	REF_UP,                         /* probing */
	REF_DOWN,                       /* failed; retrying after a backoff */
};

/* A connected endpoint on the peer's side. */
struct ref_session {
	struct rdma_ep ep;
	struct rdma_remote remote;
	json_int_t handle;              /* the peer's responder */
	uint64_t conn;                  /* serial of the connection it belongs to */
	uint64_t gen;                   /* bumped on close: late replies are dropped */
	bool up;
};

struct ref_responder {
	uint64_t conn;
	struct sockaddr_storage host;   /* the peer's address (port ignored) */
	size_t len;                     /* registered bytes */
	json_int_t handle;
	struct rdma_ep ep;
	struct ref_responder *next;
};

struct refflow;
/* Completions of the extra endpoints (calibration); wc->wr_id is the poster's. */
typedef void (*ref_wc_fn)(struct refflow *rf, const struct ibv_wc *wc, uint64_t now_ns, void *arg);

struct refflow {
	struct ev_loop *loop;
	struct peer_ctx *pc;
	const struct config *cfg;
	struct quantile *win;
	struct quantile *raw_win;       /* loopback correction on: the uncorrected samples */
	char want_dev[CONFIG_NAME_MAX];  /* device, port, GID for the probes */
	unsigned want_port;
	int want_gid;
	struct rdma_dev dev;
	bool dev_open;
	ev_io chan_w;
	bool wanted, paused;
	enum ref_state state;
	char error[160];
	bool logged;
	size_t peer_idx;                 /* the outgoing peer in use */
	struct ref_session s;            /* the probe session */
	bool requesting;
	struct rdma_ep lb_src, lb_dst;   /* loopback correction */
	struct rdma_remote lb_remote;
	bool lb_up;
	ev_timer probe_w, retry_w;
	uint64_t backoff_ms;
	struct {
		bool active;
		uint64_t seq, t0, lb_t0, ref_ns, lb_ns;
		bool ref_done, lb_done;
	} cur;
	uint64_t seq, last_t0;
	uint64_t samples, skipped, errors;
	uint64_t polled;             /* samples completed while the probe was polled */
	bool spinning;
	uint64_t last_ns, last_lb_ns;
	json_int_t next_handle;
	struct ref_responder *resp;
	size_t n_resp;
	size_t resp_bytes;               /* registered by all responders */
	uint64_t resp_refused;           /* ref_open refused by a limit */
	/* extra endpoints on the same device (calibration's sessions) */
	struct rdma_ep *extra[REF_MAX_EXTRA];
	ref_wc_fn extra_cb[REF_MAX_EXTRA];
	void *extra_arg[REF_MAX_EXTRA];
	size_t n_extra;
};

/* Register the peer operations; nothing is opened yet.  @cfg must stay at
 * the same address (the daemon's). */
int refflow_init(struct refflow *rf, struct ev_loop *loop, struct peer_ctx *pc,
		 const struct config *cfg, struct quantile *win);
void refflow_fini(struct refflow *rf);
/* Which device probes: a device name ("" = any active), port, GID index. */
void refflow_set_device(struct refflow *rf, const char *name, unsigned port, int gid_index);
/* Probe or not (latency flows registered, or always_on). */
void refflow_set_wanted(struct refflow *rf, bool wanted);
/* Pause probing (calibration saturates the link). */
void refflow_pause(struct refflow *rf, bool paused);
/* Once per controller period: notice a peer channel that went down while
 * waiting for it (the state then says why). */
void refflow_poll(struct refflow *rf);
/* After a reload: period, peers, loopback correction. */
void refflow_reconfigure(struct refflow *rf);
/* How long the probe in flight has been outstanding (0: none). */
uint64_t refflow_outstanding_ns(const struct refflow *rf, uint64_t now_ns);
const char *refflow_state_name(enum ref_state s);
const char *refflow_peer_name(const struct refflow *rf);

/* For calibration: open a session with a @len-byte remote buffer and a send
 * queue of @depth on the probe's device and peer (up to REF_MAX_EXTRA at
 * once, else -ENOSPC).  The reply comes to @cb (0 or -errno); completions
 * of the session go to @wc_cb. */
typedef void (*ref_open_fn)(struct refflow *rf, struct ref_session *s, int err, const char *msg,
			    void *arg);
int refflow_open_session(struct refflow *rf, struct ref_session *s, size_t len, unsigned depth,
			 ref_open_fn cb, ref_wc_fn wc_cb, void *arg);
void refflow_close_session(struct refflow *rf, struct ref_session *s);

#endif

/* SPDX-License-Identifier: MIT */
/* The safe-utilisation controller: Justitia's Pseudocode 1 (NSDI'22, §4.3),
 * the unattainable-target mode (§4.5) and a policy for missing
 * measurements.  Pure: no clock, no I/O; the daemon calls aimd_step() once
 * per RefPeriod with the flow counts and the reference flow's Current99.
 *
 * Every step, with floor = max((B+T)/(L+B+T) * MaxRate, AIMD_MIN_BPS):
 *   L = 0                    SafeUtil = MaxRate
 *   Current99 > Target99     SafeUtil = max(SafeUtil / 2, floor)
 *   otherwise                SafeUtil = min(SafeUtil + k * step, MaxRate)
 * and SafeUtil always stays within [floor, MaxRate].  k is the number of
 * periods since the previous fresh sample (1 when samples come every
 * period; a round trip longer than a period brings one sample per round
 * trip, which then earns the periods it covered), at most stale_ns of
 * periods, and 1 for the first sample after a stale gap.
 *
 * Missing measurements (no new reference sample in a period: the peer is
 * down, the reference QP is being set up, nothing was sampled yet): the
 * controller holds SafeUtil (no additive increase on no evidence); once no
 * sample has arrived for stale_ns it treats every further period as a
 * violation, so SafeUtil halves down to the floor.  Stale periods do not
 * count towards the unattainable-target timer. */
#ifndef JUSTITIAD_AIMD_H
#define JUSTITIAD_AIMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AIMD_MIN_BPS 1000000ull          /* never pace below 1 Mbit/s */
#define AIMD_RECOVERY_NS 100000000ull    /* "auto" step: floor -> MaxRate in 100 ms */

enum aimd_mode {
	AIMD_NORMAL = 0,                 /* = JST_MODE_NORMAL */
	AIMD_UNATTAINABLE = 1,           /* = JST_MODE_UNATTAINABLE */
};

/* What the last step did. */
enum aimd_action {
	AIMD_MAX,                        /* L = 0 or unattainable mode: MaxRate */
	AIMD_DECREASE,                   /* Current99 > Target99 */
	AIMD_INCREASE,                   /* target met */
	AIMD_HOLD,                       /* no fresh sample yet */
	AIMD_STALE,                      /* no sample for stale_ns: treated as a violation */
};

/* Events worth a log line. */
enum aimd_event {
	AIMD_EV_NONE,
	AIMD_EV_UNATTAINABLE,            /* target missed for delta (policy keep: reported only) */
	AIMD_EV_ENTER_IGNORE,            /* policy ignore_latency: latency flows ignored */
	AIMD_EV_LEAVE_IGNORE,            /* L/(B+T) grew, or the policy changed: back to normal */
	AIMD_EV_ATTAINABLE,              /* the target is met again */
	AIMD_EV_STALE,                   /* measurements went missing */
	AIMD_EV_FRESH,                   /* measurements are back */
};

struct aimd_config {
	uint64_t max_rate_bps;           /* 0: unknown, nothing is paced */
	uint64_t step_bps;               /* additive step; 0 = auto */
	uint64_t period_ns;              /* RefPeriod */
	uint64_t target99_ns;
	uint64_t delta_ns;               /* unattainable_delta */
	uint64_t stale_ns;
	bool ignore_latency;             /* unattainable_policy ignore_latency */
};

/* Logical flows: latency flows registered, resource-hungry flows active. */
struct aimd_counts {
	uint32_t lat, bw, tput;
};

struct aimd_input {
	uint64_t now_ns;
	struct aimd_counts n;
	bool fresh;                      /* new reference samples since the last step */
	uint64_t current99_ns;           /* valid when fresh */
	/* valid when fresh: every sample since the last step met the target
	 * (an old violation may still hold Current99 above it) */
	bool met_now;
};

struct aimd {
	uint64_t safe_util_bps;
	enum aimd_mode mode;
	bool unattainable;               /* missed continuously for delta (any policy) */
	bool stale;
	enum aimd_action action;
	uint64_t floor_bps, step_bps;    /* as used by the last step */
	uint64_t violating_since_ns;     /* 0: the last measurement met the target */
	uint64_t last_fresh_ns;
	struct aimd_counts n, at_entry;  /* last counts; counts when ignore mode began */
};

void aimd_init(struct aimd *a, const struct aimd_config *c, uint64_t now_ns);
/* max((B+T)/(L+B+T) * MaxRate, AIMD_MIN_BPS), never above MaxRate. */
uint64_t aimd_floor(const struct aimd_config *c, const struct aimd_counts *n);
/* The additive step: the configured one, or ceil((MaxRate - floor) / ceil(100 ms / period)). */
uint64_t aimd_step_size(const struct aimd_config *c, uint64_t floor_bps);
/* One period.  Returns the event of this step, if any. */
enum aimd_event aimd_step(struct aimd *a, const struct aimd_config *c,
			  const struct aimd_input *in);

/* One flow, for counting.  Flows of one application carry the same app id
 * and must be contiguous in the array (the registry lists them per
 * process). */
struct aimd_flow {
	uint32_t app;
	uint8_t cls;                     /* enum flow_class */
	bool active;
};

/* L = latency flows, B/T = active bandwidth/throughput flows; with
 * @one_per_app each application counts at most once per class. */
void aimd_count(const struct aimd_flow *f, size_t n, bool one_per_app, struct aimd_counts *out);

const char *aimd_action_name(enum aimd_action a);

#endif

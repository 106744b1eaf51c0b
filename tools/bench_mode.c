// SPDX-License-Identifier: MIT
/* justbench named modes: names, defaults and what each requires of the flows.
 * May call: bench_flow and libc only. */
#include "bench_mode.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const mode_names[] = { "flows",    "poll-cost", "bidir",
					   "reuse",    "overhead",  "overlap",
					   "progress" };
_Static_assert(sizeof(mode_names) / sizeof(mode_names[0]) == BENCH_MODE_MAX, "a name per mode");

const char *bench_mode_name(enum bench_mode m)
{
	return (unsigned)m < BENCH_MODE_MAX ? mode_names[m] : "invalid";
}

int bench_mode_parse(const char *s, enum bench_mode *out)
{
	for (int i = 0; i < BENCH_MODE_MAX; i++) {
		if (strcmp(s, mode_names[i]) == 0) {
			*out = (enum bench_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* A flow of class cls, verb WRITE, size bytes, named name, from delay_us for duration_us. */
static void flow(struct bench_flow *f, enum bench_class cls, uint32_t size, const char *name,
		 uint64_t delay_us, uint64_t duration_us)
{
	bench_flow_init(f, cls, 0);
	f->verb = BENCH_WRITE;
	f->size = size;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->poll = BENCH_POLL_BUSY;
	f->delay_us = delay_us;
	f->duration_us = duration_us;
}

size_t bench_mode_defaults(enum bench_mode m, uint64_t duration_us, struct bench_flow *flows,
			   size_t max)
{
	size_t n = 0;

	if (m == BENCH_MODE_POLL_COST && max >= 1) {
		bench_flow_init(&flows[0], BENCH_LAT, 0);
		flows[0].verb = BENCH_WRITE;
		flows[0].size = 8;
		strcpy(flows[0].name, "poll");
		flows[0].duration_us = duration_us;
		n = 1;
	} else if (m == BENCH_MODE_BIDIR && max >= 2) {
		bench_flow_init(&flows[0], BENCH_LAT, 0);
		flows[0].verb = BENCH_WRITE;
		flows[0].size = 8;
		strcpy(flows[0].name, "lat");
		flows[0].duration_us = duration_us;
		bench_flow_init(&flows[1], BENCH_BW, 1);
		flows[1].size = 64u << 10;
		strcpy(flows[1].name, "bw");
		flows[1].delay_us = duration_us;
		flows[1].duration_us = duration_us;
		n = 2;
	} else if ((m == BENCH_MODE_REUSE || m == BENCH_MODE_OVERHEAD) && max >= 2) {
		bool reuse = m == BENCH_MODE_REUSE;

		flow(&flows[0], BENCH_LAT, reuse ? 64 : 8, "lat", 0, duration_us);
		flow(&flows[1], BENCH_BW, reuse ? 64u << 10 : 256u << 10, "bw", duration_us,
		     duration_us);
		n = 2;
	} else if (m == BENCH_MODE_OVERLAP && max >= 1) {
		flow(&flows[0], BENCH_LAT, 1024, "overlap", 0, duration_us);
		n = 1;
	} else if (m == BENCH_MODE_PROGRESS && max >= 2) {
		flow(&flows[0], BENCH_LAT, 1024, "read", 0, duration_us);
		flows[0].verb = BENCH_READ;
		flow(&flows[1], BENCH_LAT, 1024, "send", duration_us, duration_us);
		flows[1].verb = BENCH_SEND;
		n = 2;
	}
	return n;
}

int bench_mode_check(enum bench_mode m, bool rperf, const struct bench_flow *f, char *err,
		     size_t errlen)
{
	const char *msg = NULL;

	if (m == BENCH_MODE_POLL_COST) {
		if (rperf)
			msg = "rperf: --mode poll-cost times the flow's own polls, not with --rperf";
		else if (f->cls != BENCH_LAT)
			msg = "class: --mode poll-cost takes latency flows (one message at a time)";
		else if (f->poll != BENCH_POLL_BUSY)
			msg = "poll: --mode poll-cost times busy polling, poll must be busy";
	} else if (m == BENCH_MODE_BIDIR) {
		if (f->verb != BENCH_WRITE && f->verb != BENCH_READ)
			msg = "verb: --mode bidir takes write and read flows (the client keeps no "
			      "receives posted)";
	} else if (m == BENCH_MODE_REUSE || m == BENCH_MODE_OVERHEAD || m == BENCH_MODE_OVERLAP) {
		if (rperf)
			msg = "rperf: the sweeping modes time the flow's own messages, not with --rperf";
		else if (f->poll != BENCH_POLL_BUSY)
			msg = "poll: the sweeping modes poll busily, poll must be busy";
		else if (f->batch != 1)
			msg = "batch: the sweeping modes post one message at a time, batch must be 1";
		else if (m == BENCH_MODE_OVERLAP && f->cls != BENCH_LAT)
			msg = "class: --mode overlap takes latency flows (one message at a time)";
	} else if (m == BENCH_MODE_PROGRESS) {
		if (rperf)
			msg = "rperf: --mode progress times the flow's own fetches, not with --rperf";
		else if (f->cls != BENCH_LAT)
			msg = "class: --mode progress takes latency flows (one fetch at a time)";
		else if (f->verb != BENCH_READ && f->verb != BENCH_SEND)
			msg = "verb: --mode progress fetches by read or by a send request";
		else if (f->poll != BENCH_POLL_BUSY)
			msg = "poll: --mode progress polls busily, poll must be busy";
	} else if ((unsigned)m >= BENCH_MODE_MAX) {
		msg = "mode: invalid";
	}
	if (!msg)
		return 0;
	snprintf(err, errlen, "%s", msg);
	return -EINVAL;
}

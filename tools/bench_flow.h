/* SPDX-License-Identifier: MIT */
/*
 * justbench flows: what one flow is, its defaults per class, the ranges every field must keep,
 * and the compact command-line syntax (docs/justbench.1, FLOW SPECIFICATIONS):
 *
 *	CLASS[:VERB[:SIZE]][:KEY=VALUE[,KEY=VALUE...]]
 *
 * e.g. "lat:send:2", "tput:write:64:batch=16,window=4", "bw:write:1M:window=4,delay=3s".
 * The JSON scenario files (bench_scenario.c) set the same keys through bench_flow_set(), so both
 * front ends accept exactly the same values and report the same messages.
 */
#ifndef JUSTITIA_BENCH_FLOW_H
#define JUSTITIA_BENCH_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The values are the classes of justitia_set_qp_class(): 0 latency, 1 throughput, 2 bandwidth. */
enum bench_class { BENCH_LAT, BENCH_TPUT, BENCH_BW, BENCH_CLASS_MAX };
enum bench_verb { BENCH_WRITE, BENCH_WRITE_IMM, BENCH_READ, BENCH_SEND, BENCH_VERB_MAX };
enum bench_poll { BENCH_POLL_BUSY, BENCH_POLL_EVENT, BENCH_POLL_MAX };

#define BENCH_NAME_MAX	  32 /* with the NUL */
#define BENCH_FLOWS_MAX	  64
#define BENCH_QPS_MAX	  64  /* per flow */
#define BENCH_QPS_TOTAL	  256 /* per run */
#define BENCH_SIZE_MAX	  (1u << 30)
#define BENCH_BATCH_MAX	  1024
#define BENCH_WINDOW_MAX  1024
#define BENCH_DEPTH_MAX	  4096 /* batch * window: send queue entries per QP */
#define BENCH_TIME_MAX_US (3600ull * 1000000)
#define BENCH_ITERS_MAX	  1000000000000ull
#define BENCH_DURATION_DEFAULT_US (5ull * 1000000)
#define BENCH_BUFFERS_MAX (4ull << 30) /* registered memory per end: size x qps, all flows */
#define BENCH_RATE_MIN	  1000ull			  /* bit/s, when not 0 */
#define BENCH_RATE_MAX	  (10ull * 1000 * 1000 * 1000 * 1000) /* 10 Tbit/s */

struct bench_flow {
	char name[BENCH_NAME_MAX];
	enum bench_class cls;
	enum bench_verb verb;
	enum bench_poll poll;
	uint32_t size;	      /* bytes per message */
	uint32_t qps;	      /* QPs, one thread each */
	uint32_t batch;	      /* messages per post (one ibv_post_send of a WR chain) */
	uint32_t window;      /* posts in flight per QP */
	uint64_t delay_us;    /* start, after the common start of the run */
	uint64_t duration_us; /* 0: the run's default (-t) */
	uint64_t iters;	      /* messages per QP, 0 = until the duration ends */
	uint64_t rate_bps;    /* payload bits per second per QP, 0 = as the window allows */
};

const char *bench_class_name(enum bench_class c); /* "latency", ... */
const char *bench_class_short(enum bench_class c); /* "lat", ... */
const char *bench_verb_name(enum bench_verb v);	   /* "write", ... */
const char *bench_poll_name(enum bench_poll p);	   /* "busy", "event" */
int bench_class_parse(const char *s, enum bench_class *out);

/* The defaults of class cls (see docs/justbench.1); the name is "flow<index>". */
void bench_flow_init(struct bench_flow *f, enum bench_class cls, unsigned index);

/*
 * Sets one key ("verb", "size", "qps", ...; not "class") from its text form.  On error returns
 * -EINVAL and writes "KEY: what is wrong" to err.
 */
int bench_flow_set(struct bench_flow *f, const char *key, const char *val, char *err,
		   size_t errlen);

/* Whether key is one bench_flow_set() knows. */
bool bench_flow_key_known(const char *key);

/*
 * Checks what single keys cannot: a latency flow has batch 1 and window 1, iters is a multiple
 * of batch, batch * window fits a send queue.  On error returns -EINVAL, writes the message and
 * sets *key to the key to blame.
 */
int bench_flow_check(const struct bench_flow *f, const char **key, char *err, size_t errlen);

/*
 * Parses a compact specification into f (index names the default "flow<index>").  Returns 0 or
 * -EINVAL with the message in err ("windw: unknown key"); the caller names the specification.
 */
int bench_flow_parse(const char *spec, unsigned index, struct bench_flow *f, char *err,
		     size_t errlen);

/* Writes the canonical specification of f, every key explicit; parses back to an equal flow. */
int bench_flow_format(const struct bench_flow *f, char *buf, size_t len);

/*
 * Checks a whole set: count, unique names, total QPs, total buffer memory.  On error returns -EINVAL, *bad is the
 * index of the flow to blame.
 */
int bench_flows_check(const struct bench_flow *flows, size_t n, size_t *bad, char *err,
		      size_t errlen);

/* Text parsers, exact and overflow-checked (used for options as well). */
int bench_parse_size(const char *s, uint64_t *out); /* 64, 4K, 1M, 1G (binary) */
int bench_parse_time(const char *s, uint64_t *us);  /* 3, 1.5, 500ms, 20us, 2s (default s) */
int bench_parse_rate(const char *s, uint64_t *bps); /* 800000, 800k, 80M, 2G (decimal, bit/s) */

/* With a rate: ns between two posts of one QP (batch messages of size). */
static inline uint64_t bench_post_ns(const struct bench_flow *f)
{
	return f->rate_bps ? (uint64_t)((unsigned __int128)f->batch * f->size * 8 * 1000000000ull /
					f->rate_bps)
			   : 0;
}
void bench_format_time(uint64_t us, char *buf, size_t len);
void bench_format_size(uint64_t size, char *buf, size_t len);

#endif

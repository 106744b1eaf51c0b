/* SPDX-License-Identifier: MIT */
/*
 * justbench wire protocol: how client and server agree on the flows and exchange QP numbers over
 * TCP before any RDMA traffic, and the server's counts after it.  Every message is a 12-byte
 * header (magic "JBNC", version, type, payload length; all big-endian) and a payload of at most
 * BENCH_WIRE_MAX bytes.  The header layout never changes, so a peer of another version gets a
 * readable ERROR message instead of garbage.
 *
 *	client				server
 *	HELLO (mode, flows, client QPs) ->
 *				   <- ACCEPT (server QPs, buffers) or ERROR (text)
 *	GO			   ->	(the flows start; with --mode bidir the server's too)
 *	... RDMA traffic ...
 *	DONE			   ->
 *				   <- RESULT (per flow: messages and bytes received, CPU; with
 *				      --mode bidir what the server's reverse flow did)
 *
 * Version 2 added the mode, each flow's canonical specification (what a bidir server runs), GO
 * and the reverse results.
 */
#ifndef JUSTITIA_BENCH_WIRE_H
#define JUSTITIA_BENCH_WIRE_H

#include "bench_flow.h"
#include "bench_stats.h"

#include <stddef.h>
#include <stdint.h>

#define BENCH_WIRE_MAGIC   0x4a424e43u /* "JBNC" */
#define BENCH_WIRE_VERSION 2
#define BENCH_WIRE_HDR	   12
#define BENCH_WIRE_MAX	   65536
#define BENCH_ERROR_MAX	   256 /* with the NUL */
#define BENCH_SPEC_MAX	   512 /* a flow's canonical specification, with the NUL */
#define BENCH_REVERR_MAX   192 /* a reverse flow's error, with the NUL */

enum bench_msg {
	BENCH_MSG_HELLO = 1,
	BENCH_MSG_ACCEPT = 2,
	BENCH_MSG_ERROR = 3,
	BENCH_MSG_DONE = 4,
	BENCH_MSG_RESULT = 5,
	BENCH_MSG_GO = 6,
};

/* One end of an RC connection. */
struct bench_wire_qp {
	uint32_t qpn, psn;
	uint16_t lid;
	uint8_t gid[16];
	uint32_t rkey; /* ACCEPT only: the server's buffer for this QP */
	uint64_t addr;
	uint32_t len;
};

/* What the responder must know of a flow. */
struct bench_wire_flow {
	uint8_t cls, verb;
	uint32_t size, qps;
	uint32_t recv_depth; /* receives to keep posted per QP (SEND, WRITE_IMM) */
	char spec[BENCH_SPEC_MAX]; /* bench_flow_format(): printable, at most 511 bytes */
};

struct bench_hello {
	uint8_t mtu;  /* enum ibv_mtu of the client's port */
	uint8_t mode; /* enum bench_mode */
	uint16_t n_flows, n_qps;
	struct bench_wire_flow flows[BENCH_FLOWS_MAX];
	struct bench_wire_qp qps[BENCH_QPS_TOTAL]; /* flow by flow */
};

struct bench_accept {
	uint8_t mtu;
	uint16_t n_qps;
	struct bench_wire_qp qps[BENCH_QPS_TOTAL];
};

/* What the server's side of a --mode bidir flow did (server to client), over its QPs. */
struct bench_wire_reverse {
	uint64_t msgs, posts, bytes;
	uint64_t elapsed_ns, cpu_ns;
	struct bench_summary lat; /* ns */
	char error[BENCH_REVERR_MAX]; /* "": none; printable */
};

struct bench_result {
	uint16_t n_flows;
	struct {
		uint64_t msgs, bytes, cpu_ns;
		bool reverse; /* rev is set */
		struct bench_wire_reverse rev;
	} flows[BENCH_FLOWS_MAX];
};

/* Encoders return the payload length, or 0 if buf (cap bytes) is too small. */
size_t bench_wire_put_hello(const struct bench_hello *h, uint8_t *buf, size_t cap);
size_t bench_wire_put_accept(const struct bench_accept *a, uint8_t *buf, size_t cap);
size_t bench_wire_put_result(const struct bench_result *r, uint8_t *buf, size_t cap);

/* Decoders check every length, count and range; -EPROTO with a message in err. */
int bench_wire_get_hello(const uint8_t *buf, size_t len, struct bench_hello *h, char *err,
			 size_t errlen);
int bench_wire_get_accept(const uint8_t *buf, size_t len, struct bench_accept *a, char *err,
			  size_t errlen);
int bench_wire_get_result(const uint8_t *buf, size_t len, struct bench_result *r, char *err,
			  size_t errlen);
/* An ERROR payload as printable text (control bytes become '?'). */
void bench_wire_get_error(const uint8_t *buf, size_t len, char *text, size_t textlen);

/* Sends one message; 0 or -errno. */
int bench_wire_send(int fd, enum bench_msg type, const void *payload, size_t len);
/* Sends an ERROR with a printf-style text (best effort). */
void bench_wire_send_error(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Receives one message into buf (BENCH_WIRE_MAX bytes), waiting at most timeout_ms (-1: no
 * limit).  Returns 0; -ETIMEDOUT; -ECONNRESET if the peer closed; -EPROTO with a message in err
 * for a bad magic, an oversized payload or another version (an ERROR of another version is
 * still returned as one).
 */
int bench_wire_recv(int fd, int timeout_ms, enum bench_msg *type, uint8_t *buf, size_t *len,
		    char *err, size_t errlen);

#endif

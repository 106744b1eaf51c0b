/* SPDX-License-Identifier: MIT */
/* Remote READ control's messages on the daemon channel (docs/peer-protocol.md
 * section 5.4), checked: the requester's daemon registers each READ flow
 * with the responder's daemon ("remote_open", "remote_close"), and the
 * responder's daemon sends each requester the shares of its flows after
 * its controller's updates ("remote_grants").  Every message says its
 * "kind": "read" (the responder's NIC sends the data: counted in its own
 * L'/B'/T') or "recv" (receiver-side views for incast: a sender's daemon
 * registers its WRITE/SEND flows with the receiver's daemon, which shares
 * its receive side among them).  Pure: parsing and building, no channel,
 * no daemon state (fuzzed by tests/fuzz/fuzz_peer.c). */
#ifndef JUSTITIAD_RREADMSG_H
#define JUSTITIAD_RREADMSG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RREAD_OP_OPEN "remote_open"
#define RREAD_OP_CLOSE "remote_close"
#define RREAD_OP_GRANTS "remote_grants"
#define RREAD_KIND_READ "read"
#define RREAD_KIND_RECV "recv"
#define RREAD_GRANTS_MAX 128                 /* entries in one remote_grants */
#define RREAD_RATE_MAX 10000000000000ull     /* 10 Tbit/s: a larger grant is a lie */
#define RREAD_WEIGHT_MAX 1000                /* as a flow's weight (flows.c) */
#define RREAD_CHUNK_MIN 256                  /* a grant's chunk: 0, or 256 B .. 1 GiB */
#define RREAD_CHUNK_MAX (1u << 30)
#define RREAD_OPS_MAX 10000000000ull         /* 10^10 ops/s: as a device's max_ops */
#define RREAD_UNIT_OPS "ops"                 /* a grant's 4th member: rate is ops/s */

/* What a remote flow is to the daemon it is registered with. */
enum rread_kind {
	RREAD_READ = 0,               /* it READs from there: that NIC sends its data */
	RREAD_RECV = 1,               /* it WRITEs/SENDs there: that host receives it */
};

/* One remote flow as its requester describes it. */
struct rread_open {
	uint8_t kind;                 /* enum rread_kind */
	uint32_t flow;                /* the requester's flow id, 1..2^32-1 */
	uint8_t cls;                  /* enum flow_class: bandwidth; read: or throughput;
				       * recv: or latency */
	uint32_t qpn;                 /* the requester's QP, 24 bits */
	uint32_t peer_qpn;            /* the responder's QP (its peer), 24 bits */
	uint32_t weight;              /* 1..RREAD_WEIGHT_MAX */
	bool active;                  /* it moved data lately (the requester's view) */
};

/* One flow's share: bit/s (a throughput READ flow's: ops/s, @ops set; on
 * the wire [flow, rate, chunk, "ops"]), 0 = this side does not limit it; and the chunk
 * its large messages should be split at for this side (bytes, 0 = no say:
 * the responder's or receiver's chunk in force, small while it protects a
 * latency flow, so that its NIC never sends a whole 1 MiB READ response
 * in one go behind which that flow waits). */
struct rread_grant {
	uint32_t flow;
	uint64_t rate_bps;            /* bit/s, or ops/s if @ops */
	uint32_t chunk;
	bool ops;                     /* the rate is ops/s: a throughput flow's */
};

/* The arguments of each operation, strictly (every member, nothing else,
 * each in range): 0, or -EINVAL with why in @err. */
int rreadmsg_parse_open(json_t *args, struct rread_open *o, char *err, size_t errlen);
int rreadmsg_parse_close(json_t *args, uint8_t *kind, uint32_t *flow, char *err, size_t errlen);
/* @g has room for RREAD_GRANTS_MAX entries; *n is set to how many. */
int rreadmsg_parse_grants(json_t *args, uint8_t *kind, struct rread_grant *g, size_t *n,
			  char *err, size_t errlen);

/* A class's name on the wire ("bandwidth"), "?" out of range. */
const char *rreadmsg_class_name(int cls);
/* A kind's name on the wire ("read", "recv"), "?" out of range. */
const char *rreadmsg_kind_name(int kind);
/* The arguments of each operation (NULL: out of memory). */
json_t *rreadmsg_open(const struct rread_open *o);
json_t *rreadmsg_close(uint8_t kind, uint32_t flow);
json_t *rreadmsg_grants(uint8_t kind, const struct rread_grant *g, size_t n);

#endif

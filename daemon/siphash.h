/* SPDX-License-Identifier: MIT */
/* SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit pseudorandom
 * function.  justitiad uses it as a message authentication code on the peer
 * channel (docs/peer-protocol.md), because the daemon depends on no crypto
 * library.  It authenticates; it does not encrypt, and a 64-bit tag is
 * meant for online forgery resistance (2^-64 per attempt), not for
 * long-term signatures. */
#ifndef JUSTITIAD_SIPHASH_H
#define JUSTITIAD_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

struct siphash_key {
	uint64_t k0, k1;
};

/* Incremental interface, for MACs over several pieces. */
struct siphash {
	uint64_t v0, v1, v2, v3;
	uint64_t tail;                /* pending bytes, little-endian */
	unsigned ntail;
	uint64_t len;
};

void siphash_init(struct siphash *s, const struct siphash_key *k);
void siphash_update(struct siphash *s, const void *data, size_t len);
uint64_t siphash_final(struct siphash *s);

uint64_t siphash24(const struct siphash_key *k, const void *data, size_t len);
/* The key as 16 bytes, little-endian k0 then k1 (as in the reference code). */
void siphash_key_from_bytes(struct siphash_key *k, const uint8_t bytes[16]);

#endif

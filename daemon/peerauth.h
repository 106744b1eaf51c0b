/* SPDX-License-Identifier: MIT */
/* Authentication of the peer channel (docs/peer-protocol.md §3): the shared
 * secret, the keys derived from it, the challenge/response proofs and the
 * per-message MACs.  All of it is SipHash-2-4 (siphash.h) keyed by the
 * secret: a keyed hash we implement ourselves because justitiad depends on
 * no crypto library.  It authenticates peers and messages; it does not
 * encrypt. */
#ifndef JUSTITIAD_PEERAUTH_H
#define JUSTITIAD_PEERAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "siphash.h"

#define PEERAUTH_SECRET_MIN 16
#define PEERAUTH_SECRET_MAX 4096
#define PEERAUTH_NONCE 16

/* Read @path (a regular file others cannot read; 16 to 4096 bytes after
 * trailing whitespace is cut) and derive the long-term key.  0 or -errno
 * with the reason in @err. */
int peerauth_read_secret(const char *path, struct siphash_key *k, char *err, size_t errlen);
/* key = (SipHash(K0, secret), SipHash(K1, secret)), K0/K1 fixed labels. */
void peerauth_derive_key(struct siphash_key *k, const uint8_t *secret, size_t len);
/* The proof a side sends: MAC of its role and of both nonces, its own first. */
uint64_t peerauth_proof(const struct siphash_key *k, bool client, const uint8_t own[16],
			const uint8_t other[16]);
/* Per-direction session keys, bound to both nonces (client's first). */
void peerauth_session_keys(const struct siphash_key *k, const uint8_t client_nonce[16],
			   const uint8_t server_nonce[16], struct siphash_key *c2s,
			   struct siphash_key *s2c);
/* MAC of one line: SipHash(session key, seq as 8 bytes LE || line). */
uint64_t peerauth_line_mac(const struct siphash_key *k, uint64_t seq, const char *line,
			   size_t len);

/* Lowercase hex: 2n digits from n bytes; exactly 2n digits back. */
void peerauth_hex(char *out, const uint8_t *in, size_t n);
int peerauth_unhex(uint8_t *out, size_t n, const char *s);
/* A 64-bit value as 16 hex digits (big-endian) and back. */
void peerauth_u64_hex(char out[17], uint64_t v);
int peerauth_hex_u64(const char *s, uint64_t *v);

#endif

/* SPDX-License-Identifier: MIT */
/* Authentication and confidentiality of the peer channel
 * (docs/peer-protocol.md section 3): the shared secret, the keys derived from
 * it with HKDF-SHA-256 (RFC 5869), the challenge/response proofs, and the
 * nonces of the AES-256-GCM sealed lines.  The primitives are the kernel's
 * (kcrypto.h); this file only arranges them. */
#ifndef JUSTITIAD_PEERAUTH_H
#define JUSTITIAD_PEERAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcrypto.h"

#define PEERAUTH_SECRET_MIN 16
#define PEERAUTH_SECRET_MAX 4096
#define PEERAUTH_NONCE 16
#define PEERAUTH_KEY   KCRYPTO_HASH /* the long-term PRK and each session key */
#define PEERAUTH_PROOF KCRYPTO_HASH

/* Read @path (a regular file of the daemon's user that others cannot
 * read; 16 to 4096 bytes after trailing whitespace is cut), check that the
 * kernel can do the channel's cryptography, and derive the long-term key.
 * 0 or -errno with the reason in @err. */
int peerauth_read_secret(const char *path, uint8_t prk[PEERAUTH_KEY], char *err, size_t errlen);
/* PRK = HKDF-Extract(salt "justitia peer channel v2", secret). */
int peerauth_derive_key(uint8_t prk[PEERAUTH_KEY], const uint8_t *secret, size_t len);
/* The proof a side sends: HKDF-Expand(PRK, "justitia auth client" or
 * "... server" || its own nonce || the other's, 32). */
int peerauth_proof(const uint8_t prk[PEERAUTH_KEY], bool client, const uint8_t own[16],
		   const uint8_t other[16], uint8_t out[PEERAUTH_PROOF]);
/* Constant-time comparison. */
bool peerauth_equal(const uint8_t *a, const uint8_t *b, size_t n);
/* Per-direction AES-256 keys, bound to both nonces (client's first):
 * HKDF-Expand(PRK, "justitia key c2s" or "... s2c" || Nc || Ns, 32). */
int peerauth_session_keys(const uint8_t prk[PEERAUTH_KEY], const uint8_t client_nonce[16],
			  const uint8_t server_nonce[16], uint8_t c2s[PEERAUTH_KEY],
			  uint8_t s2c[PEERAUTH_KEY]);
/* The GCM nonce of line @seq of a direction: 4 zero bytes, seq big-endian. */
void peerauth_nonce(uint64_t seq, uint8_t nonce[KCRYPTO_NONCE]);

/* Lowercase hex: 2n digits from n bytes; exactly 2n digits back. */
void peerauth_hex(char *out, const uint8_t *in, size_t n);
int peerauth_unhex(uint8_t *out, size_t n, const char *s);
/* A 64-bit value as 16 hex digits (big-endian) and back. */
void peerauth_u64_hex(char out[17], uint64_t v);
int peerauth_hex_u64(const char *s, uint64_t *v);

#endif

/* SPDX-License-Identifier: MIT */
/* The kernel's crypto API (AF_ALG sockets, linux/if_alg.h) for the peer
 * channel: HMAC-SHA-256, HKDF-SHA-256 (RFC 5869) on top of it, and
 * AES-256-GCM.  justitiad implements no cryptographic primitive itself: the
 * kernel's implementations (aesni, sha256-avx2 or generic) do the work.
 * Needs CONFIG_CRYPTO_USER_API_HASH and _AEAD (Debian: modules algif_hash
 * and algif_aead, loaded on first use).  Functions return 0 or -errno;
 * -EAFNOSUPPORT or -ENOENT when the kernel lacks the interface or the
 * algorithm. */
#ifndef JUSTITIAD_KCRYPTO_H
#define JUSTITIAD_KCRYPTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define KCRYPTO_HASH  32 /* SHA-256 output, HMAC output, HKDF PRK */
#define KCRYPTO_KEY   32 /* AES-256 */
#define KCRYPTO_NONCE 12 /* GCM nonce */
#define KCRYPTO_TAG   16 /* GCM tag */

/* Can this kernel do what the peer channel needs?  0, or -errno with the
 * reason (naming the missing piece) in @err. */
int kcrypto_probe(char *err, size_t errlen);

/* HMAC-SHA-256 of the concatenation of @n parts. */
int kcrypto_hmac(const uint8_t *key, size_t keylen, const struct iovec *parts, int n,
		 uint8_t out[KCRYPTO_HASH]);

/* HKDF-Extract(salt, ikm) -> prk, and HKDF-Expand(prk, info, len) with
 * info the concatenation of @n parts; @len at most 255 * 32. */
int kcrypto_hkdf_extract(const uint8_t *salt, size_t saltlen, const uint8_t *ikm, size_t ikmlen,
			 uint8_t prk[KCRYPTO_HASH]);
int kcrypto_hkdf_expand(const uint8_t prk[KCRYPTO_HASH], const struct iovec *info, int n,
			uint8_t *out, size_t len);

/* One AES-256-GCM key, ready for any number of messages: an AF_ALG
 * operation socket (fd -1 when not set up). */
struct kcrypto_aead {
	int fd;
};

int kcrypto_aead_init(struct kcrypto_aead *a, const uint8_t key[KCRYPTO_KEY]);
void kcrypto_aead_free(struct kcrypto_aead *a);
/* Encrypt @len bytes of @in into @out (@len + KCRYPTO_TAG bytes: the
 * ciphertext, then the tag). */
int kcrypto_aead_seal(struct kcrypto_aead *a, const uint8_t nonce[KCRYPTO_NONCE],
		      const void *in, size_t len, uint8_t *out);
/* Check and decrypt @len bytes (ciphertext and tag) into @out (@len -
 * KCRYPTO_TAG bytes).  -EBADMSG when the tag does not match. */
int kcrypto_aead_open(struct kcrypto_aead *a, const uint8_t nonce[KCRYPTO_NONCE],
		      const void *in, size_t len, uint8_t *out);

#endif

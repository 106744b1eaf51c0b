// SPDX-License-Identifier: MIT
/* The kernel's crypto API through AF_ALG sockets (see kcrypto.h): HMAC-SHA-256,
 * HKDF-SHA-256 and AES-256-GCM for the peer channel.
 * May call: libc (sockets) only. */
#include "kcrypto.h"

#include <errno.h>
#include <linux/if_alg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef SOL_ALG
#define SOL_ALG 279
#endif

#define HMAC_ALG "hmac(sha256)"
#define AEAD_ALG "gcm(aes)"

/* A transform socket bound to @type/@name with @key set, or -errno. */
static int tfm_open(const char *type, const char *name, const uint8_t *key, size_t keylen)
{
	struct sockaddr_alg sa = { .salg_family = AF_ALG };
	int fd, rc;

	snprintf((char *)sa.salg_type, sizeof(sa.salg_type), "%s", type);
	snprintf((char *)sa.salg_name, sizeof(sa.salg_name), "%s", name);
	fd = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (key && setsockopt(fd, SOL_ALG, ALG_SET_KEY, key, (socklen_t)keylen))) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* An operation socket of a transform (the transform's fd is closed: the
 * operation socket keeps what it needs), or -errno. */
static int op_open(int tfm)
{
	int fd = accept4(tfm, NULL, NULL, SOCK_CLOEXEC), rc = fd < 0 ? -errno : fd;

	close(tfm);
	return rc;
}

int kcrypto_probe(char *err, size_t errlen)
{
	static const struct {
		const char *type, *alg, *config, *module;
	} need[] = {
		{ "hash", HMAC_ALG, "CONFIG_CRYPTO_USER_API_HASH", "algif_hash" },
		{ "aead", AEAD_ALG, "CONFIG_CRYPTO_USER_API_AEAD", "algif_aead" },
	};
	static const uint8_t key[KCRYPTO_KEY];

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		int fd = tfm_open(need[i].type, need[i].alg, key, sizeof(key));

		if (fd < 0) {
			snprintf(err, errlen,
				 "the kernel crypto API cannot do %s (%s; AF_ALG needs %s, module %s)",
				 need[i].alg, strerror(-fd), need[i].config, need[i].module);
			return fd;
		}
		close(fd);
	}
	return 0;
}

/* Hash all of @parts with one sendmsg (no MSG_MORE: the digest is final). */
static int send_parts(int op, const struct iovec *parts, int n)
{
	struct msghdr msg = { .msg_iov = (struct iovec *)parts, .msg_iovlen = (size_t)n };
	size_t total = 0;
	ssize_t k;

	for (int i = 0; i < n; i++)
		total += parts[i].iov_len;
	do
		k = sendmsg(op, &msg, 0);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	return (size_t)k == total ? 0 : -EIO;
}

static int read_exact(int fd, uint8_t *out, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t k = read(fd, out + got, len - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO;
		got += (size_t)k;
	}
	return 0;
}

int kcrypto_hmac(const uint8_t *key, size_t keylen, const struct iovec *parts, int n,
		 uint8_t out[KCRYPTO_HASH])
{
	int op, rc;

	op = tfm_open("hash", HMAC_ALG, key, keylen);
	if (op < 0)
		return op;
	op = op_open(op);
	if (op < 0)
		return op;
	rc = send_parts(op, parts, n);
	if (!rc)
		rc = read_exact(op, out, KCRYPTO_HASH);
	close(op);
	return rc;
}

int kcrypto_hkdf_extract(const uint8_t *salt, size_t saltlen, const uint8_t *ikm, size_t ikmlen,
			 uint8_t prk[KCRYPTO_HASH])
{
	static const uint8_t zeros[KCRYPTO_HASH];
	struct iovec part = { (void *)ikm, ikmlen };

	/* RFC 5869 2.2: no salt is HashLen zeros */
	if (!salt || !saltlen) {
		salt = zeros;
		saltlen = sizeof(zeros);
	}
	return kcrypto_hmac(salt, saltlen, &part, 1, prk);
}

#define INFO_PARTS 8

int kcrypto_hkdf_expand(const uint8_t prk[KCRYPTO_HASH], const struct iovec *info, int n,
			uint8_t *out, size_t len)
{
	struct iovec parts[INFO_PARTS + 2];
	uint8_t t[KCRYPTO_HASH];
	size_t done = 0;
	uint8_t ctr = 1;
	int rc = 0;

	if (n < 0 || n > INFO_PARTS || len > 255 * KCRYPTO_HASH)
		return -EINVAL;
	/* T(i) = HMAC(PRK, T(i-1) | info | i), T(0) empty */
	while (done < len) {
		int k = 0;

		if (ctr > 1)
			parts[k++] = (struct iovec){ t, sizeof(t) };
		for (int i = 0; i < n; i++)
			parts[k++] = info[i];
		parts[k++] = (struct iovec){ &ctr, 1 };
		rc = kcrypto_hmac(prk, KCRYPTO_HASH, parts, k, t);
		if (rc)
			break;
		memcpy(out + done, t, len - done < sizeof(t) ? len - done : sizeof(t));
		done += len - done < sizeof(t) ? len - done : sizeof(t);
		ctr++;
	}
	memset(t, 0, sizeof(t));
	return rc;
}

int kcrypto_aead_init(struct kcrypto_aead *a, const uint8_t key[KCRYPTO_KEY])
{
	int tfm;

	a->fd = -1;
	tfm = tfm_open("aead", AEAD_ALG, key, KCRYPTO_KEY);
	if (tfm < 0)
		return tfm;
	if (setsockopt(tfm, SOL_ALG, ALG_SET_AEAD_AUTHSIZE, NULL, KCRYPTO_TAG)) {
		int rc = -errno;

		close(tfm);
		return rc;
	}
	tfm = op_open(tfm);
	if (tfm < 0)
		return tfm;
	a->fd = tfm;
	return 0;
}

void kcrypto_aead_free(struct kcrypto_aead *a)
{
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
}

/* One AEAD operation: no associated data, @nonce as the IV. */
static int aead_op(struct kcrypto_aead *a, bool encrypt, const uint8_t nonce[KCRYPTO_NONCE],
		   const void *in, size_t inlen, uint8_t *out, size_t outlen)
{
	union {
		char buf[CMSG_SPACE(sizeof(uint32_t)) +
			 CMSG_SPACE(sizeof(struct af_alg_iv) + KCRYPTO_NONCE) +
			 CMSG_SPACE(sizeof(uint32_t))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { (void *)in, inlen };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
			      .msg_controllen = sizeof(c.buf) };
	struct cmsghdr *cm;
	struct af_alg_iv *iv;
	uint32_t v;
	ssize_t k;

	if (a->fd < 0)
		return -EBADF;
	if (!inlen)
		return -EINVAL; /* AF_ALG takes no empty input */
	memset(c.buf, 0, sizeof(c.buf));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_ALG;
	cm->cmsg_type = ALG_SET_OP;
	cm->cmsg_len = CMSG_LEN(sizeof(uint32_t));
	v = encrypt ? ALG_OP_ENCRYPT : ALG_OP_DECRYPT;
	memcpy(CMSG_DATA(cm), &v, sizeof(v));
	cm = CMSG_NXTHDR(&msg, cm);
	cm->cmsg_level = SOL_ALG;
	cm->cmsg_type = ALG_SET_IV;
	cm->cmsg_len = CMSG_LEN(sizeof(struct af_alg_iv) + KCRYPTO_NONCE);
	iv = (struct af_alg_iv *)CMSG_DATA(cm);
	iv->ivlen = KCRYPTO_NONCE;
	memcpy(iv->iv, nonce, KCRYPTO_NONCE);
	cm = CMSG_NXTHDR(&msg, cm);
	cm->cmsg_level = SOL_ALG;
	cm->cmsg_type = ALG_SET_AEAD_ASSOCLEN;
	cm->cmsg_len = CMSG_LEN(sizeof(uint32_t));
	v = 0;
	memcpy(CMSG_DATA(cm), &v, sizeof(v));
	do
		k = sendmsg(a->fd, &msg, 0);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	if ((size_t)k != inlen)
		return -EIO;
	do
		k = read(a->fd, out, outlen);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno; /* -EBADMSG: the tag did not match */
	return (size_t)k == outlen ? 0 : -EIO;
}

int kcrypto_aead_seal(struct kcrypto_aead *a, const uint8_t nonce[KCRYPTO_NONCE],
		      const void *in, size_t len, uint8_t *out)
{
	return aead_op(a, true, nonce, in, len, out, len + KCRYPTO_TAG);
}

int kcrypto_aead_open(struct kcrypto_aead *a, const uint8_t nonce[KCRYPTO_NONCE],
		      const void *in, size_t len, uint8_t *out)
{
	if (len <= KCRYPTO_TAG)
		return -EBADMSG;
	return aead_op(a, false, nonce, in, len, out, len - KCRYPTO_TAG);
}

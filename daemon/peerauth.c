// SPDX-License-Identifier: MIT
/* Peer channel authentication (see peerauth.h): the shared secret file,
 * the key schedule (HKDF-SHA-256), the challenge/response proofs, and the
 * per-line nonces of the sealed channel.
 * May call: kcrypto only. */
#include "peerauth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* HKDF salt: fixed, names the protocol (RFC 5869 3.1 allows that). */
static const char SALT[] = "justitia peer channel v2";

int peerauth_derive_key(uint8_t prk[PEERAUTH_KEY], const uint8_t *secret, size_t len)
{
	return kcrypto_hkdf_extract((const uint8_t *)SALT, sizeof(SALT) - 1, secret, len, prk);
}

/* HKDF-Expand(PRK, label || a || b, 32): labels differ, nonces are 16 bytes. */
static int expand3(const uint8_t prk[PEERAUTH_KEY], const char *label, const uint8_t a[16],
		   const uint8_t b[16], uint8_t out[PEERAUTH_KEY])
{
	struct iovec info[3] = { { (void *)label, strlen(label) },
				 { (void *)a, PEERAUTH_NONCE },
				 { (void *)b, PEERAUTH_NONCE } };

	return kcrypto_hkdf_expand(prk, info, 3, out, PEERAUTH_KEY);
}

int peerauth_proof(const uint8_t prk[PEERAUTH_KEY], bool client, const uint8_t own[16],
		   const uint8_t other[16], uint8_t out[PEERAUTH_PROOF])
{
	return expand3(prk, client ? "justitia auth client" : "justitia auth server", own, other,
		       out);
}

bool peerauth_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint8_t d = 0;

	for (size_t i = 0; i < n; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

int peerauth_session_keys(const uint8_t prk[PEERAUTH_KEY], const uint8_t nc[16],
			  const uint8_t ns[16], uint8_t c2s[PEERAUTH_KEY], uint8_t s2c[PEERAUTH_KEY])
{
	int rc = expand3(prk, "justitia key c2s", nc, ns, c2s);

	return rc ? rc : expand3(prk, "justitia key s2c", nc, ns, s2c);
}

void peerauth_nonce(uint64_t seq, uint8_t nonce[KCRYPTO_NONCE])
{
	memset(nonce, 0, 4);
	for (int i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(seq >> (56 - 8 * i));
}

void peerauth_hex(char *out, const uint8_t *in, size_t n)
{
	static const char hx[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hx[in[i] >> 4];
		out[2 * i + 1] = hx[in[i] & 15];
	}
	out[2 * n] = 0;
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int peerauth_unhex(uint8_t *out, size_t n, const char *s)
{
	if (strlen(s) != 2 * n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void peerauth_u64_hex(char out[17], uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (56 - 8 * i));
	peerauth_hex(out, b, 8);
}

int peerauth_hex_u64(const char *s, uint64_t *v)
{
	uint8_t b[8];

	if (peerauth_unhex(b, 8, s))
		return -EINVAL;
	*v = 0;
	for (int i = 0; i < 8; i++)
		*v = *v << 8 | b[i];
	return 0;
}

int peerauth_read_secret(const char *path, uint8_t prk[PEERAUTH_KEY], char *err, size_t errlen)
{
	uint8_t buf[PEERAUTH_SECRET_MAX + 1];
	struct stat st;
	ssize_t n;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "secret_file %s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "secret_file %s: not a regular file", path);
		rc = -EINVAL;
		goto out_close;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen, "secret_file %s: readable by others than its owner (chmod 600 it)",
			 path);
		rc = -EPERM;
		goto out_close;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "secret_file %s: owned by uid %u, not by the daemon's (uid %u)",
			 path, (unsigned)st.st_uid, (unsigned)geteuid());
		rc = -EPERM;
		goto out_close;
	}
	n = read(fd, buf, sizeof(buf));
	if (n < 0) {
		rc = -errno;
		snprintf(err, errlen, "secret_file %s: %s", path, strerror(errno));
		goto out_close;
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
			 buf[n - 1] == '\t'))
		n--;
	if (n < PEERAUTH_SECRET_MIN || n > PEERAUTH_SECRET_MAX) {
		snprintf(err, errlen, "secret_file %s: the secret must have %d to %d bytes", path,
			 PEERAUTH_SECRET_MIN, PEERAUTH_SECRET_MAX);
		rc = -EINVAL;
		goto out_close;
	}
	rc = kcrypto_probe(err, errlen);
	if (!rc) {
		rc = peerauth_derive_key(prk, buf, (size_t)n);
		if (rc)
			snprintf(err, errlen, "secret_file %s: key derivation: %s", path,
				 strerror(-rc));
	}
out_close:
	memset(buf, 0, sizeof(buf));
	close(fd);
	return rc;
}

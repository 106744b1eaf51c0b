// SPDX-License-Identifier: MIT
/* Peer channel authentication (see peerauth.h): the shared secret file,
 * the challenge/response proofs, session keys and per-line MACs.
 * May call: siphash only. */
#include "peerauth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint8_t KDF0[16] = "justitia-peer-k0";
static const uint8_t KDF1[16] = "justitia-peer-k1";

void peerauth_derive_key(struct siphash_key *k, const uint8_t *secret, size_t len)
{
	struct siphash_key a, b;

	siphash_key_from_bytes(&a, KDF0);
	siphash_key_from_bytes(&b, KDF1);
	k->k0 = siphash24(&a, secret, len);
	k->k1 = siphash24(&b, secret, len);
}

uint64_t peerauth_line_mac(const struct siphash_key *k, uint64_t seq, const char *line,
			   size_t len)
{
	uint8_t s[8];
	struct siphash h;

	for (int i = 0; i < 8; i++)
		s[i] = (uint8_t)(seq >> (8 * i));
	siphash_init(&h, k);
	siphash_update(&h, s, sizeof(s));
	siphash_update(&h, line, len);
	return siphash_final(&h);
}

/* MAC of a NUL-terminated label and two nonces. */
static uint64_t mac3(const struct siphash_key *k, const char *label, const uint8_t a[16],
		     const uint8_t b[16])
{
	struct siphash h;

	siphash_init(&h, k);
	siphash_update(&h, label, strlen(label) + 1);
	siphash_update(&h, a, PEERAUTH_NONCE);
	siphash_update(&h, b, PEERAUTH_NONCE);
	return siphash_final(&h);
}

uint64_t peerauth_proof(const struct siphash_key *k, bool client, const uint8_t own[16],
			const uint8_t other[16])
{
	return mac3(k, client ? "JST-AUTH-C" : "JST-AUTH-S", own, other);
}

void peerauth_session_keys(const struct siphash_key *k, const uint8_t nc[16],
			   const uint8_t ns[16], struct siphash_key *c2s, struct siphash_key *s2c)
{
	c2s->k0 = mac3(k, "JST-C2S0", nc, ns);
	c2s->k1 = mac3(k, "JST-C2S1", nc, ns);
	s2c->k0 = mac3(k, "JST-S2C0", nc, ns);
	s2c->k1 = mac3(k, "JST-S2C1", nc, ns);
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

int peerauth_read_secret(const char *path, struct siphash_key *k, char *err, size_t errlen)
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
	peerauth_derive_key(k, buf, (size_t)n);
out_close:
	memset(buf, 0, sizeof(buf));
	close(fd);
	return rc;
}

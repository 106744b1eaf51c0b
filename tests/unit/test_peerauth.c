// SPDX-License-Identifier: MIT
/* Unit tests of daemon/kcrypto.c and daemon/peerauth.c: the kernel's
 * HMAC-SHA-256, HKDF-SHA-256 and AES-256-GCM against published vectors, a
 * sealed line's tamper, replay and key checks, and the peer channel's key
 * schedule (proofs and session keys bound to role, direction and nonces).
 * Needs AF_ALG: on a kernel without it the binary exits 77 and
 * tests/run-check runs it in the Soft-RoCE guest instead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../daemon/kcrypto.c"
#include "../../daemon/peerauth.c"

static void unhex(uint8_t *out, const char *hex)
{
	assert_int_equal(peerauth_unhex(out, strlen(hex) / 2, hex), 0);
}

/* RFC 4231 test case 2. */
static void hmac_vector(void **state)
{
	static const char data[] = "what do ya want for nothing?";
	uint8_t got[KCRYPTO_HASH], want[KCRYPTO_HASH];
	struct iovec parts[2] = { { (void *)data, 10 }, { (void *)(data + 10), 18 } };

	unhex(want, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	assert_int_equal(kcrypto_hmac((const uint8_t *)"Jefe", 4, parts, 2, got), 0);
	assert_memory_equal(got, want, sizeof(want));
}

/* RFC 5869 test case 1 (A.1), with the info given in two parts. */
static void hkdf_vector(void **state)
{
	uint8_t ikm[22], salt[13], info[10], prk[32], okm[42], want_prk[32], want_okm[42];
	struct iovec parts[2] = { { info, 4 }, { info + 4, 6 } };

	memset(ikm, 0x0b, sizeof(ikm));
	for (int i = 0; i < 13; i++)
		salt[i] = (uint8_t)i;
	for (int i = 0; i < 10; i++)
		info[i] = (uint8_t)(0xf0 + i);
	unhex(want_prk, "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5");
	unhex(want_okm, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
			"34007208d5b887185865");
	assert_int_equal(kcrypto_hkdf_extract(salt, sizeof(salt), ikm, sizeof(ikm), prk), 0);
	assert_memory_equal(prk, want_prk, sizeof(prk));
	assert_int_equal(kcrypto_hkdf_expand(prk, parts, 2, okm, sizeof(okm)), 0);
	assert_memory_equal(okm, want_okm, sizeof(okm));
	assert_int_equal(kcrypto_hkdf_expand(prk, parts, 2, okm, 255 * 32 + 1), -EINVAL);
}

/* The GCM specification's test case 14 (McGrew and Viega): AES-256, key,
 * nonce and one block of plaintext all zero. */
static void gcm_vector(void **state)
{
	uint8_t key[32] = { 0 }, nonce[12] = { 0 }, pt[16] = { 0 }, out[32], back[16], want[32];
	struct kcrypto_aead a;

	unhex(want, "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919");
	assert_int_equal(kcrypto_aead_init(&a, key), 0);
	assert_int_equal(kcrypto_aead_seal(&a, nonce, pt, sizeof(pt), out), 0);
	assert_memory_equal(out, want, sizeof(want));
	assert_int_equal(kcrypto_aead_open(&a, nonce, out, sizeof(out), back), 0);
	assert_memory_equal(back, pt, sizeof(pt));
	kcrypto_aead_free(&a);
	assert_int_equal(a.fd, -1);
}

/* A sealed line opens only with its key and its sequence number, and not
 * after one bit of it changed; in place, as peermsg.c opens it. */
static void sealed_line_checks(void **state)
{
	static const char line[] = "{\"v\":2,\"type\":\"req\",\"id\":1,\"op\":\"ref_open\"}";
	uint8_t k1[32] = { 1 }, k2[32] = { 2 }, n0[12], n1[12], ct[sizeof(line) + 16], buf[sizeof(ct)];
	size_t len = sizeof(line) - 1;
	struct kcrypto_aead a, b;

	assert_int_equal(kcrypto_aead_init(&a, k1), 0);
	assert_int_equal(kcrypto_aead_init(&b, k2), 0);
	peerauth_nonce(0, n0);
	peerauth_nonce(1, n1);
	assert_int_equal(kcrypto_aead_seal(&a, n0, line, len, ct), 0);
	assert_memory_not_equal(ct, line, len); /* encrypted */
	memcpy(buf, ct, len + 16);
	assert_int_equal(kcrypto_aead_open(&a, n0, buf, len + 16, buf), 0);
	assert_memory_equal(buf, line, len);
	assert_int_equal(kcrypto_aead_open(&a, n1, ct, len + 16, buf), -EBADMSG); /* replayed */
	assert_int_equal(kcrypto_aead_open(&b, n0, ct, len + 16, buf), -EBADMSG); /* other key */
	for (size_t bit = 0; bit < 8 * (len + 16); bit += 37) {
		memcpy(buf, ct, len + 16);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_equal(kcrypto_aead_open(&a, n0, buf, len + 16, buf), -EBADMSG);
	}
	assert_int_equal(kcrypto_aead_open(&a, n0, ct, 16, buf), -EBADMSG); /* tag only */
	kcrypto_aead_free(&a);
	kcrypto_aead_free(&b);
}

static void key_schedule(void **state)
{
	uint8_t a[32], b[32], pa[32], pb[32], c2s[32], s2c[32], c2s2[32], s2c2[32], nonce[12];
	uint8_t nc[16] = { 1 }, ns[16] = { 2 };

	assert_int_equal(peerauth_derive_key(a, (const uint8_t *)"0123456789abcdef", 16), 0);
	assert_int_equal(peerauth_derive_key(b, (const uint8_t *)"0123456789abcdeg", 16), 0);
	assert_memory_not_equal(a, b, 32);
	/* a proof depends on the role, the order of the nonces and the key */
	assert_int_equal(peerauth_proof(a, true, nc, ns, pa), 0);
	assert_int_equal(peerauth_proof(a, false, nc, ns, pb), 0);
	assert_false(peerauth_equal(pa, pb, 32));
	assert_int_equal(peerauth_proof(a, true, ns, nc, pb), 0);
	assert_false(peerauth_equal(pa, pb, 32));
	assert_int_equal(peerauth_proof(b, true, nc, ns, pb), 0);
	assert_false(peerauth_equal(pa, pb, 32));
	assert_int_equal(peerauth_proof(a, true, nc, ns, pb), 0);
	assert_true(peerauth_equal(pa, pb, 32));
	/* the two directions differ, and so do other nonces */
	assert_int_equal(peerauth_session_keys(a, nc, ns, c2s, s2c), 0);
	assert_memory_not_equal(c2s, s2c, 32);
	assert_memory_not_equal(c2s, pa, 32);
	assert_int_equal(peerauth_session_keys(a, ns, nc, c2s2, s2c2), 0);
	assert_memory_not_equal(c2s, c2s2, 32);
	assert_memory_not_equal(s2c, s2c2, 32);
	/* the nonce: 4 zero bytes, then the sequence number big-endian */
	peerauth_nonce(0x0102030405060708ull, nonce);
	assert_memory_equal(nonce, "\0\0\0\0\1\2\3\4\5\6\7\10", 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hmac_vector),
		cmocka_unit_test(hkdf_vector),
		cmocka_unit_test(gcm_vector),
		cmocka_unit_test(sealed_line_checks),
		cmocka_unit_test(key_schedule),
	};
	char why[256];

	if (kcrypto_probe(why, sizeof(why))) {
		fprintf(stderr, "test_peerauth: %s: needs the guest\n", why);
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}

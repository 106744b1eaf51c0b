// SPDX-License-Identifier: MIT
/* Unit tests of daemon/siphash.c and daemon/peerauth.c: SipHash-2-4 against
 * the reference vectors, the per-line MACs of the peer channel (key
 * derivation, sequence number and every byte counted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../daemon/peerauth.c"
#include "../../daemon/siphash.c"

/* The reference vectors: key 00..0f, message 00..i-1 (SipHash paper,
 * Appendix A, and the reference implementation's vectors.h). */
static void siphash_vectors(void **state)
{
	static const struct {
		size_t len;
		uint64_t h;
	} v[] = {
		{ 0, 0x726fdb47dd0e0e31ull },  { 1, 0x74f839c593dc67fdull },
		{ 7, 0xab0200f58b01d137ull },  { 8, 0x93f5f5799a932462ull },
		{ 9, 0x9e0082df0ba9e4b0ull },  { 15, 0xa129ca6149be45e5ull },
		{ 16, 0x3f2acc7f57c29bdbull }, { 63, 0x958a324ceb064572ull },
	};
	uint8_t kb[16], m[64];
	struct siphash_key k;

	for (int i = 0; i < 16; i++)
		kb[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		m[i] = (uint8_t)i;
	siphash_key_from_bytes(&k, kb);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct siphash s;

		assert_true(siphash24(&k, m, v[i].len) == v[i].h);
		/* incrementally, in uneven pieces */
		siphash_init(&s, &k);
		for (size_t off = 0; off < v[i].len; off += 3)
			siphash_update(&s, m + off, v[i].len - off < 3 ? v[i].len - off : 3);
		assert_true(siphash_final(&s) == v[i].h);
	}
}

static void mac_scheme(void **state)
{
	struct siphash_key a, b;

	peerauth_derive_key(&a, (const uint8_t *)"0123456789abcdef", 16);
	peerauth_derive_key(&b, (const uint8_t *)"0123456789abcdeg", 16);
	assert_true(a.k0 != b.k0 && a.k1 != b.k1);
	/* the sequence number and every byte of the line count */
	assert_true(peerauth_line_mac(&a, 0, "{}", 2) != peerauth_line_mac(&a, 1, "{}", 2));
	assert_true(peerauth_line_mac(&a, 0, "{}", 2) != peerauth_line_mac(&b, 0, "{}", 2));
	assert_true(peerauth_line_mac(&a, 0, "{\"a\":1}", 7) !=
		    peerauth_line_mac(&a, 0, "{\"a\":2}", 7));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(siphash_vectors),
		cmocka_unit_test(mac_scheme),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/* SipHash-2-4, written from the specification (Aumasson, Bernstein:
 * "SipHash: a fast short-input PRF", 2012): 2 compression rounds per 8-byte
 * word, 4 finalisation rounds, little-endian words.
 * May call: nothing. */
#include "siphash.h"

#include <string.h>

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

static inline void sipround(struct siphash *s)
{
	s->v0 += s->v1;
	s->v1 = rotl(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = rotl(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = rotl(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = rotl(s->v2, 32);
}

static inline void compress(struct siphash *s, uint64_t m)
{
	s->v3 ^= m;
	sipround(s);
	sipround(s);
	s->v0 ^= m;
}

void siphash_key_from_bytes(struct siphash_key *k, const uint8_t b[16])
{
	k->k0 = k->k1 = 0;
	for (int i = 7; i >= 0; i--) {
		k->k0 = k->k0 << 8 | b[i];
		k->k1 = k->k1 << 8 | b[8 + i];
	}
}

void siphash_init(struct siphash *s, const struct siphash_key *k)
{
	s->v0 = k->k0 ^ 0x736f6d6570736575ull;
	s->v1 = k->k1 ^ 0x646f72616e646f6dull;
	s->v2 = k->k0 ^ 0x6c7967656e657261ull;
	s->v3 = k->k1 ^ 0x7465646279746573ull;
	s->tail = 0;
	s->ntail = 0;
	s->len = 0;
}

void siphash_update(struct siphash *s, const void *data, size_t len)
{
	const uint8_t *p = data;

	s->len += len;
	while (len--) {
		s->tail |= (uint64_t)*p++ << (8 * s->ntail);
		if (++s->ntail == 8) {
			compress(s, s->tail);
			s->tail = 0;
			s->ntail = 0;
		}
	}
}

uint64_t siphash_final(struct siphash *s)
{
	compress(s, s->tail | (s->len & 0xff) << 56);
	s->v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		sipround(s);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

uint64_t siphash24(const struct siphash_key *k, const void *data, size_t len)
{
	struct siphash s;

	siphash_init(&s, k);
	siphash_update(&s, data, len);
	return siphash_final(&s);
}

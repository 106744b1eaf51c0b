// SPDX-License-Identifier: MIT
/* Scatter-list data for the test programs that verify what RDMA moved (see
 * sgl.h): a seeded pseudo-random fill, a checksum independent of how the
 * bytes are cut into SGEs, a byte compare that finds the first difference.
 * May call: libc only (struct ibv_sge is only a type here). */
#include "sgl.h"

#include <string.h>

uint64_t sgl_splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A streaming 64-bit checksum of a byte sequence, independent of how the
 * sequence is cut into pieces: each 8-byte word goes through a bijective
 * step, so any single changed word changes the result. */
struct ck {
	uint64_t h, total;
	uint8_t t[8];
	unsigned n;
};

static const struct ck ck_start = { 0x6a09e667f3bcc908ULL, 0, { 0 }, 0 };

static void ck_word(struct ck *c, uint64_t w)
{
	c->h = (c->h ^ w) * 0x9e3779b97f4a7c15ULL;
	c->h ^= c->h >> 32;
}

static void ck_feed(struct ck *c, const uint8_t *p, size_t len)
{
	uint64_t w;

	c->total += len;
	if (c->n) {
		while (c->n < 8 && len) {
			c->t[c->n++] = *p++;
			len--;
		}
		if (c->n < 8)
			return;
		memcpy(&w, c->t, 8);
		ck_word(c, w);
		c->n = 0;
	}
	for (; len >= 8; len -= 8, p += 8) {
		memcpy(&w, p, 8);
		ck_word(c, w);
	}
	memcpy(c->t, p, len);
	c->n = (unsigned)len;
}

static uint64_t ck_end(struct ck *c)
{
	if (c->n) {
		uint64_t w = 0;

		memcpy(&w, c->t, c->n);
		ck_word(c, w);
	}
	ck_word(c, c->total);
	return c->h;
}

uint64_t sgl_sum(const struct ibv_sge *sg, int n, uint64_t len)
{
	struct ck c = ck_start;

	for (int i = 0; i < n && len; i++) {
		uint64_t l = sg[i].length < len ? sg[i].length : len;

		ck_feed(&c, (const uint8_t *)(uintptr_t)sg[i].addr, l);
		len -= l;
	}
	return ck_end(&c);
}

/* Compare @len bytes of two scatter lists: the number of differing bytes,
 * and the offset of the first in *first. */
uint64_t sgl_cmp(const struct ibv_sge *want, int nw, const struct ibv_sge *got, int ng,
		 uint64_t len, uint64_t *first)
{
	uint64_t pos = 0, bad = 0, oi = 0, oj = 0;
	int i = 0, j = 0;

	while (pos < len && i < nw && j < ng) {
		uint64_t k = want[i].length - oi, kj = got[j].length - oj;
		const uint8_t *p = (const uint8_t *)(uintptr_t)want[i].addr + oi;
		const uint8_t *q = (const uint8_t *)(uintptr_t)got[j].addr + oj;

		if (kj < k)
			k = kj;
		if (len - pos < k)
			k = len - pos;
		if (memcmp(p, q, k))
			for (uint64_t x = 0; x < k; x++)
				if (p[x] != q[x] && !bad++)
					*first = pos + x;
		pos += k;
		oi += k;
		oj += k;
		if (oi == want[i].length) {
			i++;
			oi = 0;
		}
		if (oj == got[j].length) {
			j++;
			oj = 0;
		}
	}
	return bad;
}

uint8_t *sgl_byte(const struct ibv_sge *sg, int n, uint64_t off)
{
	for (int i = 0; i < n; i++) {
		if (off < sg[i].length)
			return (uint8_t *)(uintptr_t)sg[i].addr + off;
		off -= sg[i].length;
	}
	return NULL;
}

/* Fill a scatter list with the message's own pseudo-random stream and
 * return the checksum of what was written. */
uint64_t sgl_fill(const struct ibv_sge *sg, int n, uint64_t seed, uint64_t seq)
{
	struct ck c = ck_start;
	uint64_t x = seed * 0xd1342543de82ef95ULL + seq, s = sgl_splitmix(&x) | 1;

	for (int i = 0; i < n; i++) {
		uint8_t *p = (uint8_t *)(uintptr_t)sg[i].addr;
		uint32_t len = sg[i].length;

		while (len) {
			uint32_t blk = len < 65536 ? len : 65536, k = 0;

			for (; k + 8 <= blk; k += 8) {
				s ^= s << 13;
				s ^= s >> 7;
				s ^= s << 17;
				memcpy(p + k, &s, 8);
			}
			if (k < blk) {
				s ^= s << 13;
				s ^= s >> 7;
				s ^= s << 17;
				memcpy(p + k, &s, blk - k);
			}
			ck_feed(&c, p, blk);
			p += blk;
			len -= blk;
		}
	}
	return ck_end(&c);
}

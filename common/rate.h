/* SPDX-License-Identifier: MIT */
/* Rates in bit/s as people write them, the one grammar of the configuration
 * (justitiad.json(5)), the control protocol's "set max_rate" and
 * justctl(8): a decimal number, optionally with a fraction, and an optional
 * unit bit, kbit, Mbit, Gbit or Tbit (SI multiples, any letter case, as
 * tc(8) spells them): "25Gbit", "2.5gbit", "400Mbit", "1000000".  No sign,
 * no spaces, no exponent; the value must be a whole number of bit/s. */
#ifndef JUSTITIA_RATE_H
#define JUSTITIA_RATE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <strings.h>

/* The range of a port's MaxRate, wherever it is set. */
#define RATE_MIN_BPS 1000000ULL       /* 1 Mbit/s */
#define RATE_MAX_BPS 1600000000000ULL /* 1.6 Tbit/s */

static inline uint64_t rate_pow10(unsigned e)
{
	uint64_t p = 1;

	while (e--)
		p *= 10;
	return p;
}

/* 0 with *bps set; -EINVAL for what the grammar does not allow (a fraction
 * of a bit/s included); -ERANGE above UINT64_MAX bit/s.  Zero is a rate. */
static inline int rate_parse(const char *s, uint64_t *bps)
{
	static const struct {
		const char *unit;
		unsigned exp10;
	} units[] = { { "", 0 }, { "bit", 0 }, { "kbit", 3 }, { "mbit", 6 }, { "gbit", 9 },
		      { "tbit", 12 } };
	uint64_t ip = 0, frac = 0, fracpart;
	unsigned nf = 0, e;
	bool overflow = false;
	const char *p = s;
	size_t u;

	if (!s || *p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (ip > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			ip = ip * 10 + d;
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (nf < 12) { /* finer than 10^-12 cannot give whole bit/s */
				frac = frac * 10 + (uint64_t)(*p - '0');
				nf++;
			} else if (*p != '0') {
				return -EINVAL;
			}
		}
	}
	for (u = 0; u < sizeof(units) / sizeof(units[0]); u++)
		if (strcasecmp(p, units[u].unit) == 0)
			break;
	if (u == sizeof(units) / sizeof(units[0]))
		return -EINVAL;
	e = units[u].exp10;
	if (nf <= e) {
		fracpart = frac * rate_pow10(e - nf);
	} else {
		if (frac % rate_pow10(nf - e))
			return -EINVAL;
		fracpart = frac / rate_pow10(nf - e);
	}
	if (overflow || ip > (UINT64_MAX - fracpart) / rate_pow10(e))
		return -ERANGE;
	*bps = ip * rate_pow10(e) + fracpart;
	return 0;
}

#endif

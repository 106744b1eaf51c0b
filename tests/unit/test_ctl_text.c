// SPDX-License-Identifier: MIT
/* Unit tests of tools/ctl_text.c: justctl's rate grammar, number
 * formatting and sanitizing of what the daemon quotes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../tools/ctl_text.c"

#include <inttypes.h>

#define UNUSED __attribute__((unused))

/* ------------------------------------------------------------ numbers */

static void rates(void **state UNUSED)
{
	static const struct {
		const char *in;
		int rc;
		uint64_t bps;
	} t[] = {
		{ "25Gbit", 0, 25000000000ull },
		{ "25gbit", 0, 25000000000ull },
		{ "25GBIT", 0, 25000000000ull },
		{ "400Mbit", 0, 400000000ull },
		{ "100kbit", -ERANGE, 0 }, /* below 1 Mbit/s, as the daemon says */
		{ "1000000", 0, 1000000ull },
		{ "1000000bit", 0, 1000000ull },
		{ "2.5Gbit", 0, 2500000000ull },
		{ "1.25Tbit", 0, 1250000000000ull },
		{ "0.000001Tbit", 0, 1000000ull },
		{ "1.6Tbit", 0, 1600000000000ull },
		{ "1.600000000001Tbit", -ERANGE, 0 },
		{ "999999", -ERANGE, 0 },
		{ "9223372036854775807", -ERANGE, 0 },
		{ "1", -ERANGE, 0 },
		{ "0", -ERANGE, 0 },
		{ "0Gbit", -ERANGE, 0 },
		{ "1.5bit", -EINVAL, 0 },     /* not a whole number of bit/s */
		{ "1.0001kbit", -EINVAL, 0 },
		{ "9223372036854775808", -ERANGE, 0 },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "99999999999Gbit", -ERANGE, 0 },
		{ "", -EINVAL, 0 },
		{ "Gbit", -EINVAL, 0 },
		{ "25G", -EINVAL, 0 },
		{ "25Gbps", -EINVAL, 0 },
		{ "25Gbyte", -EINVAL, 0 },
		{ "-25Gbit", -EINVAL, 0 },
		{ "+25Gbit", -EINVAL, 0 },
		{ " 25Gbit", -EINVAL, 0 },
		{ "25 Gbit", -EINVAL, 0 },
		{ "25Gbit ", -EINVAL, 0 },
		{ "1.", -EINVAL, 0 },
		{ ".5Gbit", -EINVAL, 0 },
		{ "1.0000000000001Tbit", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t bps = 0;
		int rc = ctl_parse_rate(t[i].in, &bps);

		if (rc != t[i].rc || (!rc && bps != t[i].bps))
			fail_msg("parse_rate('%s') = %d, %" PRIu64 "; want %d, %" PRIu64, t[i].in,
				 rc, bps, t[i].rc, t[i].bps);
	}
	assert_int_equal(ctl_parse_rate(NULL, NULL), -EINVAL);
}

static void expect_fmt(char *got, const char *want)
{
	assert_string_equal(got, want);
	free(got);
}

static void formats(void **state UNUSED)
{
	expect_fmt(ctl_fmt_rate(25000000000ull), "25.0 Gbit/s");
	expect_fmt(ctl_fmt_rate(400000000ull), "400.0 Mbit/s");
	expect_fmt(ctl_fmt_rate(0), "0 bit/s");
	expect_fmt(ctl_fmt_rate(999), "999 bit/s");
	expect_fmt(ctl_fmt_rate(1000), "1.0 kbit/s");
	expect_fmt(ctl_fmt_rate(999999999), "1.0 Gbit/s");
	expect_fmt(ctl_fmt_rate(UINT64_MAX), "18.4 Ebit/s");
	expect_fmt(ctl_fmt_bytes(1610612736ull), "1.5 GiB");
	expect_fmt(ctl_fmt_bytes(0), "0 B");
	expect_fmt(ctl_fmt_bytes(1023), "1023 B");
	expect_fmt(ctl_fmt_bytes(1024), "1.0 KiB");
	expect_fmt(ctl_fmt_bytes(65536), "64.0 KiB");
	expect_fmt(ctl_fmt_bytes(1048575), "1.0 MiB");
	expect_fmt(ctl_fmt_bytes(UINT64_MAX), "16.0 EiB");
	expect_fmt(ctl_fmt_ns(850), "850 ns");
	expect_fmt(ctl_fmt_ns(12345), "12.3 us");
	expect_fmt(ctl_fmt_ns(999999), "1.00 ms");
	expect_fmt(ctl_fmt_ns(1250000), "1.25 ms");
	expect_fmt(ctl_fmt_ns(2000000000ull), "2.00 s");
	expect_fmt(ctl_fmt_uptime(999), "0s");
	expect_fmt(ctl_fmt_uptime(125000), "2m 5s");
	expect_fmt(ctl_fmt_uptime(3723000), "1h 2m 3s");
	expect_fmt(ctl_fmt_uptime(90061000), "1d 1h 1m 1s");
}

static void sanitizing(void **state UNUSED)
{
	char a[] = "ok\x1b[31mred\x07\x7f", b[] = "caf\xc3\xa9 \xc2\x9b" "2J";

	assert_string_equal(ctl_sanitize(a), "ok?[31mred??");
	assert_string_equal(ctl_sanitize(b), "caf\xc3\xa9 ??2J");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rates),
		cmocka_unit_test(formats),
		cmocka_unit_test(sanitizing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

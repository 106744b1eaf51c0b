// SPDX-License-Identifier: MIT
/* Unit tests of daemon/rdma.c that need no RDMA device: a peer's endpoint
 * description parsed strictly (integers jansson's "i" would wrap), a
 * port's nominal rate from its speed and width codes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>

#include "../../daemon/rdma.c"

/* jansson's "i" converts to int: an mtu of 2^32 + 3 became 3 (4096 bytes)
 * and a lid of 2^32 became 0, both "in range". */
static void endpoint_integers(void **state)
{
	static const char *const bad[] = {
		"{\"qpn\":17,\"psn\":1,\"gid\":\"::1\",\"lid\":0,\"mtu\":4294967299}",
		"{\"qpn\":17,\"psn\":1,\"gid\":\"::1\",\"lid\":4294967296,\"mtu\":3}",
		"{\"qpn\":17,\"psn\":1,\"gid\":\"::1\",\"lid\":-4294967296,\"mtu\":3}",
	};
	struct rdma_remote rr;
	char err[160];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = json_loads(bad[i], 0, NULL);

		assert_non_null(j);
		if (rdma_remote_parse(j, false, &rr, err, sizeof(err)) != -EINVAL)
			fail_msg("accepted %s", bad[i]);
		json_decref(j);
	}
	{
		json_t *j = json_loads("{\"qpn\":17,\"psn\":1,\"gid\":\"::1\",\"lid\":5,"
				       "\"mtu\":3}", 0, NULL);

		assert_int_equal(rdma_remote_parse(j, false, &rr, err, sizeof(err)), 0);
		assert_int_equal(rr.lid, 5);
		assert_int_equal(rr.mtu, IBV_MTU_1024);
		json_decref(j);
	}
}

/* daemon/rdma.c: a port's nominal rate from its speed and width codes,
 * as ibv_devinfo prints them (MaxRate "link" until a calibration). */
static void link_rates(void **state)
{
	(void)state;
	assert_int_equal(rdma_link_bps(32, 2), 100000000000ull);  /* EDR x4: 100 GbE */
	assert_int_equal(rdma_link_bps(64, 2), 200000000000ull);  /* HDR x4 */
	assert_int_equal(rdma_link_bps(8, 1), 10000000000ull);    /* FDR10 x1: 10 GbE */
	assert_int_equal(rdma_link_bps(1, 1), 2500000000ull);     /* SDR x1 (rxe says so) */
	assert_int_equal(rdma_link_bps(16, 4), 112000000000ull);  /* FDR x8 */
	assert_int_equal(rdma_link_bps(128, 16), 200000000000ull); /* NDR x2 */
	assert_int_equal(rdma_link_bps(3, 2), 0);                 /* not a speed */
	assert_int_equal(rdma_link_bps(32, 3), 0);                /* not a width */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(endpoint_integers),
		cmocka_unit_test(link_rates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

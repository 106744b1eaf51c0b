// SPDX-License-Identifier: MIT
/* libFuzzer target for the RDMA netlink parsers (daemon/rdmanl.c): what
 * the kernel answers to the device and QP dumps.  Checks that nothing
 * crashes or reads past the buffer, that the results are the documented
 * ones, and that every name handed on is terminated and fits.
 *
 *   make build/fuzz/fuzz_rdmanl
 *   build/fuzz/fuzz_rdmanl -max_total_time=60 tests/fuzz/corpus/rdmanl
 *
 * Byte 0 bit 0 chooses the parser (0: devices, 1: QPs); the rest is one
 * buffer of netlink messages, read with sequence number 9. */
#include "../../daemon/rdmanl.c"

#include <stdint.h>

#include "fuzz.h"

static void got_qp(void *arg, const struct rdmanl_qp *q)
{
	CHECK(strnlen(q->dev, sizeof(q->dev)) < sizeof(q->dev));
	CHECK(q->qp_type <= 0xff);
	++*(size_t *)arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdmanl_dev devs[4];
	size_t n = 0, len;
	uint32_t *buf;
	int rc;

	if (!size)
		return 0;
	len = size - 1;
	buf = malloc(len + 4); /* the kernel's buffer is aligned; so is ours */
	if (!buf)
		return 0;
	memcpy(buf, data + 1, len);
	if (data[0] & 1) {
		rc = rdmanl_parse_qps(buf, len, 9, got_qp, &n);
	} else {
		rc = rdmanl_parse_devs(buf, len, 9, devs, 4, &n);
		CHECK(n <= 4);
		for (size_t i = 0; i < n; i++)
			CHECK(strnlen(devs[i].name, sizeof(devs[i].name)) < sizeof(devs[i].name));
	}
	CHECK(rc == 0 || rc == 1 || rc < 0);
	free(buf);
	return 0;
}

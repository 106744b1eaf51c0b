// SPDX-License-Identifier: MIT
/* libFuzzer target for the arguments a peer daemon sends over the daemon
 * channel that are not the channel's own: RDMA endpoints (daemon/rdma.c
 * rdma_remote_parse: the reference flow's and the calibration's QP number,
 * PSN, GID, LID, MTU and, for a target, its buffer) and split-QP lookups
 * (daemon/splitq.h splitq_parse_lookup).  Checks that nothing crashes and
 * that they are accepted only with every value in range.
 *
 *   make build/fuzz/fuzz_endpoint
 *   build/fuzz/fuzz_endpoint -max_total_time=60 tests/fuzz/corpus/endpoint
 *
 * Input: byte 0 bit 1: a split lookup, else an endpoint (bit 0: a target,
 * with addr, rkey, len); the rest is the JSON text. */
#include "../../common/log.c"
#include "../../daemon/rdma.c"
#include "../../daemon/splitq.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdma_remote r;
	json_error_t je;
	char err[128];
	json_t *j;
	int rc;

	if (size < 1)
		return 0;
	j = json_loadb((const char *)data + 1, size - 1, 0, &je);
	if (!j)
		return 0;
	if (data[0] & 2) {
		const char *gid = NULL;
		uint32_t qpn = UINT32_MAX;

		rc = splitq_parse_lookup(j, &gid, &qpn, err, sizeof(err));
		CHECK(rc == 0 || rc == -EINVAL);
		if (rc == 0)
			CHECK(gid && qpn <= 0xffffff);
		else
			CHECK(memchr(err, 0, sizeof(err)) != NULL);
		json_decref(j);
		return 0;
	}
	rc = rdma_remote_parse(j, data[0] & 1, &r, err, sizeof(err));
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc == 0) {
		CHECK(r.qpn > 0 && r.qpn <= 0xffffff && r.psn <= 0xffffff);
		CHECK(r.mtu >= IBV_MTU_256 && r.mtu <= IBV_MTU_4096);
		if (!(data[0] & 1))
			CHECK(!r.addr && !r.rkey && !r.len);
	} else {
		CHECK(memchr(err, 0, sizeof(err)) && !strncmp(err, "endpoint: ", 10));
	}
	json_decref(j);
	return 0;
}

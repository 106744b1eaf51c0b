// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the configuration parser: any bytes go to config_parse_buffer().  Errors
 * must leave nothing allocated; what is accepted must dump, the dump must be accepted again and
 * dump to the same text (the round trip justitiad --check-config promises).
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 -D_GNU_SOURCE -I. -Icommon \
 *	tests/fuzz/fuzz_config.c -ljansson -o fuzz_config
 *   mkdir -p /tmp/corpus && ./fuzz_config -max_total_time=60 /tmp/corpus tests/fuzz/corpus/config
 *
 * (libFuzzer adds what it finds to the first directory: keep the seeds second.)
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../daemon/config.c"
#include "../../daemon/configtenant.c"
#include "../../daemon/configdump.c"
#include "../../daemon/configparse.c"
#include "../../common/jsonpos.c"

#include "fuzz.h"

/* config_dump() into a malloc'ed string; NULL if it fails. */
static char *dump_string(const struct config *c, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	if (config_dump(f, c)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c, again;
	char err[512], *one, *two;
	size_t len1, len2;

	if (config_parse_buffer("fuzz.json", (const char *)data, size, &c, err, sizeof(err))) {
		if (strncmp(err, "fuzz.json:", 10) != 0 || c.devices || c.peers || c.apps)
			abort();
		return 0;
	}
	one = dump_string(&c, &len1);
	if (!one)
		abort();
	if (config_parse_buffer("dump.json", one, len1, &again, err, sizeof(err)))
		abort();
	two = dump_string(&again, &len2);
	if (!two || len1 != len2 || memcmp(one, two, len1) != 0)
		abort();
	free(one);
	free(two);
	config_free(&again);
	config_free(&c);
	return 0;
}

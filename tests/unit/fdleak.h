/* SPDX-License-Identifier: MIT */
/* A cmocka group setup and teardown that fail the group when it leaves a
 * descriptor open (test_proto, test_proto_client).  Include after
 * <cmocka.h> and the module under test. */
#ifndef JUSTITIA_TEST_FDLEAK_H
#define JUSTITIA_TEST_FDLEAK_H

#include <stdio.h>
#include <unistd.h>

static int count_fds(void)
{
	char path[64];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

static int fds_at_start;

static int group_setup(void **state __attribute__((unused)))
{
	fds_at_start = count_fds();
	return 0;
}

/* Every descriptor the tests or the module opened has been closed. */
static int group_teardown(void **state __attribute__((unused)))
{
	int n = count_fds();

	if (n != fds_at_start) {
		fprintf(stderr, "descriptor leak: %d open at start, %d at the end\n", fds_at_start,
			n);
		return -1;
	}
	return 0;
}

#endif

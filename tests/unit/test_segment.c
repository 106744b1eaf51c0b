// SPDX-License-Identifier: MIT
/* Unit tests of the daemon's segments as the shim maps them
 * (shim/segment.c): a segment is mapped only when sealed as the ABI says
 * (the global one against writes by anybody but the daemon), and a lost
 * daemon's segments are let go of at once yet stay readable (zeros). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>

#include "../shim-all.h"

static int mapped(const char *name)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, name) != NULL;
	if (f)
		fclose(f);
	return n;
}

/* The shim maps the daemon's segments only when sealed as the ABI says
 * (the global one against writes by anybody but the daemon), and lets go
 * of them when the daemon is lost. */
static void segments_sealed_and_let_go(void **state)
{
	int fd = memfd_create("jst-test-global", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int cfd = memfd_create("jst-test-client", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t n = 0, cn = 0;
	void *g, *c;

	assert_true(fd >= 0 && cfd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_int_equal(ftruncate(cfd, 4096), 0);
	assert_null(shim_segment_map(fd, PROT_READ, F_SEAL_FUTURE_WRITE, &n));
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	assert_null(shim_segment_map(fd, PROT_READ, F_SEAL_FUTURE_WRITE, &n));
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), 0);
	g = shim_segment_map(fd, PROT_READ, F_SEAL_FUTURE_WRITE, &n);
	assert_non_null(g);
	assert_int_equal(n, 4096);
	assert_int_equal(fcntl(cfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	c = shim_segment_map(cfd, PROT_READ | PROT_WRITE, 0, &cn);
	assert_non_null(c);
	close(fd);
	close(cfd);
	assert_int_equal(mapped("jst-test-global"), 1);

	/* lost: the daemon's memory is let go of at once (a late reader
	 * sees zeros); the address range stays readable after fail-open, for
	 * a post path that loaded a slot just before it */
	pthread_mutex_lock(&cl.lock);
	atomic_store(&cl.global, g);
	cl.global_size = n;
	cl.client = c;
	cl.client_size = cn;
	cl.pid = getpid();
	disconnect(1);
	assert_int_equal(mapped("jst-test-global") + mapped("jst-test-client"), 0);
	assert_int_equal(*(volatile uint32_t *)g, 0);
	assert_int_equal(cl.need_fail_open, 1);
	pthread_mutex_unlock(&cl.lock);
	shim_client_poll();
	assert_int_equal(*(volatile uint32_t *)g, 0);
	assert_int_equal(*(volatile uint32_t *)c, 0);
	pthread_mutex_lock(&cl.lock);
	cl.pid = 0;
	cl.retry_at_ns = 0;
	cl.backoff_ns = 0;
	pthread_mutex_unlock(&cl.lock);
}

int main(void)
{
	/* no daemon: reconnecting after the loss fails, quietly */
	setenv("JUSTITIA_SOCKET", "/nonexistent/justitiad.sock", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(segments_sealed_and_let_go),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

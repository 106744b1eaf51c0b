// SPDX-License-Identifier: MIT
/* Unit tests of daemon/notify.c: sd_notify's datagram reaches the socket
 * $NOTIFY_SOCKET names (a path or an abstract name), nothing is sent
 * without it, and a name that is no socket address is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>

#include "../../daemon/notify.c"

/* A datagram socket bound to @name ("@x": abstract), or -1. */
static int listener(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	memcpy(sa.sun_path, name, n);
	if (name[0] == '@')
		sa.sun_path[0] = 0;
	assert_int_equal(bind(fd, (struct sockaddr *)&sa,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)), 0);
	return fd;
}

static void expect_datagram(int fd, const char *want)
{
	char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	assert_int_equal(n, (ssize_t)strlen(want));
	buf[n] = 0;
	assert_string_equal(buf, want);
}

static void to_a_path(void **state)
{
	char dir[] = "/tmp/test_notify.XXXXXX", path[64];
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	fd = listener(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(notify_send("READY=1\nSTATUS=up"), 0);
	expect_datagram(fd, "READY=1\nSTATUS=up");
	close(fd);
	/* nobody listens any more, then the socket is gone */
	assert_int_equal(notify_send("READY=1"), -ECONNREFUSED);
	unlink(path);
	assert_int_equal(notify_send("READY=1"), -ENOENT);
	rmdir(dir);
	unsetenv("NOTIFY_SOCKET");
}

static void to_an_abstract_name(void **state)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "@test_notify.%d", (int)getpid());
	fd = listener(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(notify_send("STOPPING=1"), 0);
	expect_datagram(fd, "STOPPING=1");
	close(fd);
	unsetenv("NOTIFY_SOCKET");
}

static void without_systemd_nothing(void **state)
{
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(notify_send("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(notify_send("READY=1"), 0);
	unsetenv("NOTIFY_SOCKET");
}

static void bad_names_refused(void **state)
{
	char longname[200];

	setenv("NOTIFY_SOCKET", "relative/path", 1);
	assert_int_equal(notify_send("READY=1"), -EINVAL);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[0] = '/';
	longname[sizeof(longname) - 1] = 0;
	setenv("NOTIFY_SOCKET", longname, 1);
	assert_int_equal(notify_send("READY=1"), -EINVAL);
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(to_a_path),
		cmocka_unit_test(to_an_abstract_name),
		cmocka_unit_test(without_systemd_nothing),
		cmocka_unit_test(bad_names_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/* sd_notify(3) without libsystemd: READY=1, RELOADING=1, STOPPING=1 and
 * STATUS= as one datagram to $NOTIFY_SOCKET.
 * May call: libc only. */
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int notify_send(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n;
	socklen_t len;
	int fd, rc = 0;

	if (!path || !*path)
		return 0;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = 0; /* abstract namespace */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

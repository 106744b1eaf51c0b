// SPDX-License-Identifier: MIT
/* Shim logging.  The shim lives inside someone else's process: it never
 * prints unless asked (JUSTITIA_LOG), never to stdout, preserves errno and
 * never fails the caller because logging failed.
 * Base layer; may call: nothing of the shim. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int log_fd = -1;

void shim_log_init(void)
{
	const char *v = secure_getenv("JUSTITIA_LOG");

	if (!v || !*v || !strcmp(v, "0"))
		return;
	if (v[0] == '/')
		log_fd = open(v, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	else
		log_fd = STDERR_FILENO;
}

void shim_log(const char *fmt, ...)
{
	char buf[512];
	int saved = errno, n, m;
	va_list ap;

	if (log_fd < 0)
		return;
	n = snprintf(buf, sizeof(buf), "justitia[%d]: ", (int)getpid());
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(log_fd, buf, n) < 0) {
		/* nowhere left to report it */
	}
	errno = saved;
}

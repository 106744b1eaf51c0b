// SPDX-License-Identifier: MIT
/* justitiad's logging (see log.h): levels, per-subsystem debug filter,
 * one line per message on stderr (with a journal priority under systemd),
 * errno preserved; fatal() exits.
 * May call: libc only. */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *prog = "justitia";
static enum log_level cur_level = LOG_LVL_INFO;
static unsigned cur_debug;
static int journal; /* stderr is connected to the systemd journal */

static const char *const subsys_names[] = { "ctl", "shm", "flow", "ref", "ctrl",
					    "token", "bpf", "config" };

static int stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%lu:%lu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st))
		return 0;
	return st.st_dev == dev && st.st_ino == ino;
}

void log_init(const char *progname, enum log_level level, unsigned debug_mask)
{
	prog = progname;
	log_set_level(level, debug_mask);
	journal = stderr_is_journal();
}

void log_set_level(enum log_level level, unsigned debug_mask)
{
	cur_level = debug_mask ? LOG_LVL_DEBUG : level;
	cur_debug = level == LOG_LVL_DEBUG && !debug_mask ? ~0u : debug_mask;
}

const char *log_subsys_name(unsigned bit)
{
	for (unsigned i = 0; i < sizeof(subsys_names) / sizeof(subsys_names[0]); i++)
		if (bit == 1u << i)
			return subsys_names[i];
	return "?";
}

int log_parse_subsystems(const char *list, unsigned *mask, const char **bad, size_t *badlen)
{
	const char *p = list;

	*mask = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		unsigned i, found = 0;

		for (i = 0; i < sizeof(subsys_names) / sizeof(subsys_names[0]); i++) {
			if (strlen(subsys_names[i]) == n && !strncmp(p, subsys_names[i], n)) {
				*mask |= 1u << i;
				found = 1;
			}
		}
		if (n == 3 && !strncmp(p, "all", 3)) {
			*mask = ~0u;
			found = 1;
		}
		if (!found && n) {
			*bad = p;
			*badlen = n;
			return -EINVAL;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

__attribute__((format(printf, 3, 0)))
static void vlog(int prio, const char *tag, const char *fmt, va_list ap, int with_errno)
{
	char msg[1024];
	int saved = errno;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (journal)
		fprintf(stderr, "<%d>%s%s%s%s\n", prio, tag, msg, with_errno ? ": " : "",
			with_errno ? strerror(saved) : "");
	else
		fprintf(stderr, "%s: %s%s%s%s\n", prog, tag, msg, with_errno ? ": " : "",
			with_errno ? strerror(saved) : "");
	errno = saved;
}

#define LOG_BODY(prio, tag, with_errno)                                        \
	do {                                                                   \
		va_list ap;                                                    \
		va_start(ap, fmt);                                             \
		vlog(prio, tag, fmt, ap, with_errno);                          \
		va_end(ap);                                                    \
	} while (0)

void log_err(const char *fmt, ...)
{
	LOG_BODY(3, "error: ", 0);
}

void log_warn(const char *fmt, ...)
{
	if (cur_level >= LOG_LVL_WARN)
		LOG_BODY(4, "warning: ", 1);
}

void log_warnx(const char *fmt, ...)
{
	if (cur_level >= LOG_LVL_WARN)
		LOG_BODY(4, "warning: ", 0);
}

void log_info(const char *fmt, ...)
{
	if (cur_level >= LOG_LVL_INFO)
		LOG_BODY(6, "", 0);
}

void log_debug(unsigned subsys, const char *fmt, ...)
{
	char tag[32];

	if (cur_level < LOG_LVL_DEBUG || !(cur_debug & subsys))
		return;
	snprintf(tag, sizeof(tag), "debug[%s]: ", log_subsys_name(subsys));
	LOG_BODY(7, tag, 0);
}

void fatal(const char *fmt, ...)
{
	LOG_BODY(2, "fatal: ", 1);
	exit(1);
}

void fatalx(const char *fmt, ...)
{
	LOG_BODY(2, "fatal: ", 0);
	exit(1);
}

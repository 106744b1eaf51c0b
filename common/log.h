/* SPDX-License-Identifier: MIT */
/* Logging for justitiad (OpenSMTPD style).  Not for justctl, which prints
 * to its terminal, nor for the shim, which has its own silent-by-default
 * logger.
 *   log_warn*()  adds ": strerror(errno)", log_warnx*() does not;
 *   fatal()/fatalx() log and exit(1).  All of them preserve errno.
 * Messages go to stderr.  Under systemd (JOURNAL_STREAM names our stderr)
 * each line gets a "<N>" priority prefix for the journal. */
#ifndef JUSTITIA_LOG_H
#define JUSTITIA_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

/* Debug subsystems, enabled with -D ctl,shm,... or the config's "debug". */
enum log_subsys {
	LOG_SS_CTL = 1u << 0,
	LOG_SS_SHM = 1u << 1,
	LOG_SS_FLOW = 1u << 2,
	LOG_SS_REF = 1u << 3,
	LOG_SS_CTRL = 1u << 4,
	LOG_SS_TOKEN = 1u << 5,
	LOG_SS_BPF = 1u << 6,
	LOG_SS_CONFIG = 1u << 7,
};

void log_init(const char *progname, enum log_level level, unsigned debug_mask);
void log_set_level(enum log_level level, unsigned debug_mask);
/* Parse "ctl,shm" into a mask; 0 on success, -EINVAL naming the bad token. */
int log_parse_subsystems(const char *list, unsigned *mask, const char **bad, size_t *badlen);
const char *log_subsys_name(unsigned bit);

void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(unsigned subsys, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

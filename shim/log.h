/* SPDX-License-Identifier: MIT */
/* Shim logging, for diagnostics of the shim itself (the JUSTITIA_STATS report
 * is stats.c's): silent unless JUSTITIA_LOG asks, never to stdout, errno
 * preserved, a failed write ignored. */
#ifndef JUSTITIA_SHIM_LOG_H
#define JUSTITIA_SHIM_LOG_H

#include <stdbool.h>
#include <stdatomic.h>

/* JUSTITIA_LOG (secure_getenv: ignored in set-uid programs) unset, empty or
 * "0": silent; an absolute path: appended to that file (created 0640; silent
 * if it cannot be opened); anything else ("1", "stderr"): standard error. */
void shim_log_init(void);
void shim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Log a message at most once per call site. */
#define shim_log_once(...)                                                     \
	do {                                                                   \
		static atomic_bool shim_logged_;                               \
		if (!atomic_exchange_explicit(&shim_logged_, true,             \
					      memory_order_relaxed))           \
			shim_log(__VA_ARGS__);                                 \
	} while (0)

#endif

/* SPDX-License-Identifier: MIT */
/* Shim logging: silent unless JUSTITIA_LOG asks.  Never writes to stdout. */
#ifndef JUSTITIA_SHIM_LOG_H
#define JUSTITIA_SHIM_LOG_H

#include <stdbool.h>
#include <stdatomic.h>

/* JUSTITIA_LOG unset or "0": silent.  "1"/"stderr": stderr.  "/path": append. */
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

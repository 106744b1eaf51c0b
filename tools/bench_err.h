/* SPDX-License-Identifier: MIT */
/* justbench's error messages: every module reports a failure as a return
 * code and a sentence in the caller's buffer.  Header only, so that the
 * unit tests that #include one module's .c file need nothing more. */
#ifndef JUSTITIA_BENCH_ERR_H
#define JUSTITIA_BENCH_ERR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Write the message into @err (of @errlen bytes, may be NULL) and return @rc. */
__attribute__((format(printf, 4, 5))) static inline int bench_seterr(char *err, size_t errlen,
								     int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

#endif

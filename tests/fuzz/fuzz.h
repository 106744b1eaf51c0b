/* SPDX-License-Identifier: MIT */
/* What every libFuzzer target here shares: the entry point's prototype
 * (-Wmissing-prototypes) and CHECK, which stops the run on a broken
 * property as a crash does, so that libFuzzer keeps the input. */
#ifndef JUSTITIA_FUZZ_H
#define JUSTITIA_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			__builtin_trap();                                                          \
	} while (0)

#endif

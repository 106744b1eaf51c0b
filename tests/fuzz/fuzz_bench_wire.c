// SPDX-License-Identifier: MIT
/* libFuzzer target for the justbench wire protocol (tools/bench_wire.c):
 * what the peer justbench sends over TCP.  Checks that nothing crashes,
 * that a decoded message encodes back to exactly the bytes it came from
 * (nothing accepted that the encoder would not write), and that an error
 * text is printable and terminated.
 *
 *   make build/fuzz/fuzz_bench_wire
 *   build/fuzz/fuzz_bench_wire -max_total_time=60 tests/fuzz/corpus/bench_wire
 *
 * Byte 0 chooses the decoder (mod 4: HELLO, ACCEPT, RESULT, ERROR text);
 * the rest is the payload. */
#include "../../tools/bench_wire.c"

#include "fuzz.h"

static uint8_t out[BENCH_WIRE_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct bench_hello h;
	static struct bench_accept a;
	static struct bench_result r;
	char err[128], text[BENCH_ERROR_MAX];
	size_t n;

	if (!size)
		return 0;
	switch (data[0] % 4) {
	case 0:
		if (!bench_wire_get_hello(data + 1, size - 1, &h, err, sizeof(err))) {
			n = bench_wire_put_hello(&h, out, sizeof(out));
			CHECK(n == size - 1 && !memcmp(out, data + 1, n));
		}
		break;
	case 1:
		if (!bench_wire_get_accept(data + 1, size - 1, &a, err, sizeof(err))) {
			n = bench_wire_put_accept(&a, out, sizeof(out));
			CHECK(n == size - 1 && !memcmp(out, data + 1, n));
		}
		break;
	case 2:
		if (!bench_wire_get_result(data + 1, size - 1, &r, err, sizeof(err))) {
			n = bench_wire_put_result(&r, out, sizeof(out));
			CHECK(n == size - 1 && !memcmp(out, data + 1, n));
		}
		break;
	default:
		bench_wire_get_error(data + 1, size - 1, text, sizeof(text));
		n = strlen(text);
		CHECK(n < sizeof(text) && n <= size - 1);
		for (size_t i = 0; i < n; i++)
			CHECK(text[i] >= 0x20 && text[i] < 0x7f);
		break;
	}
	return 0;
}

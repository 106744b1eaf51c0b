// SPDX-License-Identifier: MIT
/* Unit tests of common/jsonpos.c, the source positions of JSON values
 * (shared by the daemon's configuration and justbench's scenarios): member
 * names and array elements by path, escapes and surrogate pairs, text that
 * is not JSON, offsets to line:col. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "../../common/jsonpos.c"

static void positions(void **state)
{
	static const char text[] = "{\n"
				   "  \"a\": [1, {\"b/c\": [true, null]}, \"x\"],\n"
				   "  \"k\\u00e9y\": {\"\": 3, \"~\": {}},\n"
				   "  \"s\": \"\\\"}]\", \"t\": \"\\ud83d\\ude00\",\n"
				   "  \"\\ud83d\\ude00\": [ ]\n"
				   "}";
	struct jsonpos_seg p[4] = { { 0 } };
	struct jsonpos pos;
	size_t len = strlen(text);

	(void)state;

#define POS_AT(depth, key, l, c)                                                                   \
	do {                                                                                       \
		assert_int_equal(jsonpos_find(text, len, p, depth, key, &pos), 0);                 \
		assert_int_equal(pos.line, l);                                                     \
		assert_int_equal(pos.col, c);                                                      \
	} while (0)
#define NOT_FOUND(depth, key)                                                                      \
	assert_int_equal(jsonpos_find(text, len, p, depth, key, &pos), -ENOENT)

	POS_AT(0, false, 1, 1);
	p[0] = (struct jsonpos_seg){ .key = "a" };
	POS_AT(1, false, 2, 8);
	POS_AT(1, true, 2, 3);
	p[1] = (struct jsonpos_seg){ .index = 1 };
	POS_AT(2, false, 2, 12);
	p[2] = (struct jsonpos_seg){ .key = "b/c" };
	POS_AT(3, true, 2, 13);
	p[3] = (struct jsonpos_seg){ .index = 1 };
	POS_AT(4, false, 2, 27);
	p[3].index = 2;
	NOT_FOUND(4, false);
	p[1].index = 2;
	POS_AT(2, false, 2, 35);
	p[1].index = 3;
	NOT_FOUND(2, false);
	p[1] = (struct jsonpos_seg){ .key = "x" }; /* a is an array, not an object */
	NOT_FOUND(2, false);

	p[0].key = "k\xc3\xa9y"; /* written as an escape, matched decoded */
	POS_AT(1, true, 3, 3);
	p[1] = (struct jsonpos_seg){ .key = "" };
	POS_AT(2, false, 3, 20);
	p[1].key = "~";
	POS_AT(2, true, 3, 23);
	p[0].key = "ky";
	NOT_FOUND(1, false);
	p[0].key = "k\xc3\xa9";
	NOT_FOUND(1, false);
	p[0].key = "t"; /* after a string holding quotes and brackets */
	POS_AT(1, false, 4, 21);
	p[0].key = "\xf0\x9f\x98\x80"; /* a surrogate pair */
	POS_AT(1, true, 5, 3);
	p[1] = (struct jsonpos_seg){ .index = 0 };
	NOT_FOUND(2, false); /* empty array */

	/* text that is not JSON: no position, no crash */
	assert_int_equal(jsonpos_find("{\"a\": ", 6, p, 1, false, &pos), -ENOENT);
	assert_int_equal(jsonpos_find("", 0, p, 0, false, &pos), -ENOENT);
	assert_int_equal(jsonpos_find("{\"\\u12", 6, p, 1, false, &pos), -ENOENT);
	assert_int_equal(jsonpos_find("[1]]", 4, p, 1, false, &pos), -ENOENT);
	p[0] = (struct jsonpos_seg){ .key = "b" };
	assert_int_equal(jsonpos_find("{\"a\": [}], \"b\": 1}", 18, p, 1, false, &pos), -ENOENT);
	assert_int_equal(jsonpos_find("{\"a\": {]}, \"b\": 1}", 18, p, 1, false, &pos), -ENOENT);

	jsonpos_from_offset("ab\ncd", 5, 99, &pos);
	assert_int_equal(pos.offset, 5);
	assert_int_equal(pos.line, 2);
	assert_int_equal(pos.col, 3);
#undef POS_AT
#undef NOT_FOUND
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(positions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

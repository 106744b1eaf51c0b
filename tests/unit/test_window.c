// SPDX-License-Identifier: MIT
/* Unit tests of the direct window's accounting (shim/window.c): the
 * JUSTITIA_WINDOW grammar, admission up to the window and never without a
 * tag in flight to wait for, tags a quarter window apart (and for a WR that
 * goes over), which completions the application sees and with which wr_id,
 * giving up after SHIM_WINDOW_BLIND_NS, and a reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "../../shim/window.c"

static struct shim_window w;

static int setup(void **state)
{
	memset(&w, 0, sizeof(w));
	shim_window_bytes = 4000;
	return 0;
}

static int teardown(void **state)
{
	shim_window_reset(&w);
	shim_window_bytes = SHIM_WINDOW_DEFAULT;
	assert_int_equal(atomic_load(&shim_window_tags), 0);
	return 0;
}

static void grammar(void **state)
{
	uint64_t v;

	assert_int_equal(shim_window_parse(NULL, &v), 0);
	assert_int_equal(v, SHIM_WINDOW_DEFAULT);
	assert_int_equal(shim_window_parse("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(shim_window_parse("65536", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(shim_window_parse("8m", &v), 0);
	assert_int_equal(v, 8ull << 20);
	assert_int_equal(shim_window_parse("1G", &v), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(shim_window_parse("2k", &v), 0);
	assert_int_equal(v, 2048);
	assert_int_equal(shim_window_parse("", &v), -EINVAL);
	assert_int_equal(shim_window_parse("-1", &v), -EINVAL);
	assert_int_equal(shim_window_parse("4MiB", &v), -EINVAL);
	assert_int_equal(shim_window_parse("x", &v), -EINVAL);
	assert_int_equal(shim_window_parse("99999999999999999999", &v), -EINVAL);
	assert_int_equal(shim_window_parse("99999999999999999g", &v), -EINVAL);
}

/* post one WR of @bytes as the shim would: admitted? tagged? */
static int post(uint64_t bytes, uint64_t id, int signaled, int *tag)
{
	if (!shim_window_admit(&w, bytes, 1000))
		return 0;
	*tag = shim_window_want_tag(&w, bytes);
	shim_window_post(&w, bytes, *tag, id, signaled);
	return 1;
}

static void admits_up_to_the_window(void **state)
{
	int tag;

	/* 500 B each: a tag every 1000 B, 8 fit */
	for (int i = 0; i < 8; i++) {
		assert_int_equal(post(500, (uint64_t)i, 0, &tag), 1);
		assert_int_equal(tag, i % 2);
	}
	assert_int_equal(w.n, 4);
	assert_int_equal(post(500, 8, 0, &tag), 0);
	assert_int_not_equal(w.wait_since, 0);
	/* the first tag (1000 B) completes: 1000 B more fit */
	{
		struct ibv_wc wc = { .wr_id = 12345, .status = IBV_WC_SUCCESS };

		assert_int_equal(shim_window_complete(&w, &wc), 1); /* unsignaled: hidden */
		assert_int_equal(wc.wr_id, 1);
	}
	assert_int_equal(w.wait_since, 0);
	assert_int_equal(post(500, 8, 0, &tag), 1);
	assert_int_equal(post(500, 9, 0, &tag), 1);
	assert_int_equal(post(500, 10, 0, &tag), 0);
}

static void a_large_wr_goes_alone(void **state)
{
	int tag;

	/* larger than the window: it goes when no tag is in flight, tagged */
	assert_int_equal(post(10000, 1, 0, &tag), 1);
	assert_int_equal(tag, 1);
	assert_int_equal(post(10, 2, 0, &tag), 0);
	{
		struct ibv_wc wc = { .status = IBV_WC_SUCCESS };

		shim_window_complete(&w, &wc);
	}
	assert_int_equal(post(10, 2, 0, &tag), 1);
	assert_int_equal(tag, 0); /* 10 B past the last tag */
	/* untagged bytes in flight and no tag: never waits for nothing */
	assert_int_equal(post(5000, 3, 0, &tag), 1);
	assert_int_equal(tag, 1);
}

static void what_the_application_sees(void **state)
{
	struct ibv_wc ok = { .wr_id = 9, .status = IBV_WC_SUCCESS };
	struct ibv_wc err = { .wr_id = 9, .status = IBV_WC_WR_FLUSH_ERR };
	int tag;

	assert_int_equal(post(1000, 41, 1, &tag), 1); /* signaled */
	assert_int_equal(post(1000, 42, 0, &tag), 1); /* unsignaled */
	assert_int_equal(post(1000, 43, 0, &tag), 1);
	assert_int_equal(w.n, 3);
	assert_int_equal(shim_window_complete(&w, &ok), 0);
	assert_int_equal(ok.wr_id, 41);
	ok.wr_id = 9;
	assert_int_equal(shim_window_complete(&w, &ok), 1);
	assert_int_equal(ok.wr_id, 42);
	/* an error completes natively, signaled or not: shown */
	assert_int_equal(shim_window_complete(&w, &err), 0);
	assert_int_equal(err.wr_id, 43);
	assert_int_equal(w.done, w.posted);
	/* a tag nobody waits for (reset meanwhile): hidden if it succeeded */
	assert_int_equal(shim_window_complete(&w, &ok), 1);
	assert_int_equal(shim_window_complete(&w, &err), 0);
}

static void refused_post_is_undone(void **state)
{
	int tag;

	assert_int_equal(post(1000, 1, 0, &tag), 1);
	assert_int_equal(post(1000, 2, 0, &tag), 1);
	assert_int_equal(tag, 1);
	shim_window_unpost(&w, 1000, tag);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.posted, 1000);
	assert_int_equal(w.tagged_at, 1000);
	assert_int_equal(atomic_load(&shim_window_tags), 1);
}

static void gives_up_when_tags_never_come_back(void **state)
{
	int tag;

	assert_int_equal(post(4000, 1, 0, &tag), 1);
	assert_int_equal(shim_window_admit(&w, 1, 1000), 0);
	/* a caller's time taken before the first wait's: not blind */
	assert_int_equal(shim_window_admit(&w, 1, 999), 0);
	assert_int_equal(w.blind, 0);
	assert_int_equal(shim_window_admit(&w, 1, 1000 + SHIM_WINDOW_BLIND_NS), 0);
	assert_int_equal(shim_window_admit(&w, 1, 1001 + SHIM_WINDOW_BLIND_NS), 1);
	assert_int_equal(w.blind, 1);
	assert_int_equal(shim_window_want_tag(&w, 100000), 0);
}

static void ring_full_means_no_more_tags(void **state)
{
	/* (admission keeps about five in flight; a full ring is defended
	 * anyway) */
	for (int i = 0; i < SHIM_WINDOW_RING; i++)
		shim_window_post(&w, 1, 1, (uint64_t)i, 0);
	assert_int_equal(shim_window_want_tag(&w, 1ull << 28), 0);
}

static void no_window_admits_all(void **state)
{
	int tag;

	shim_window_bytes = 0;
	for (int i = 0; i < 100; i++)
		assert_int_equal(post(1ull << 20, (uint64_t)i, 0, &tag), 1);
	assert_int_equal(w.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(grammar, setup, teardown),
		cmocka_unit_test_setup_teardown(admits_up_to_the_window, setup, teardown),
		cmocka_unit_test_setup_teardown(a_large_wr_goes_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(what_the_application_sees, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_post_is_undone, setup, teardown),
		cmocka_unit_test_setup_teardown(gives_up_when_tags_never_come_back, setup, teardown),
		cmocka_unit_test_setup_teardown(ring_full_means_no_more_tags, setup, teardown),
		cmocka_unit_test_setup_teardown(no_window_admits_all, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

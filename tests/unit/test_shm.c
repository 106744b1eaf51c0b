// SPDX-License-Identifier: MIT
/* Unit tests of daemon/shm.c: segments are sealed memfds whose read-only
 * descriptor cannot be mapped writable, headers describe the layout, a
 * slot is published under an even seq, and the counters a client process
 * writes (untrusted) never go backwards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../daemon/shm.c"

static void segments_are_sealed(void **state)
{
	struct shm_seg s;
	void *p;
	int ro;

	assert_int_equal(shm_seg_create(&s, "test", 8192), 0);
	assert_int_equal(s.size, 8192);
	assert_int_equal(fcntl(s.fd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
			 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	assert_int_not_equal(ftruncate(s.fd, 4096), 0); /* a client cannot shrink it */
	assert_int_not_equal(ftruncate(s.fd, 16384), 0);
	ro = shm_seg_open_ro(&s);
	assert_true(ro >= 0);
	assert_int_equal(fcntl(ro, F_GETFL) & O_ACCMODE, O_RDONLY);
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0);
	assert_ptr_equal(p, MAP_FAILED);
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, ro, 0);
	assert_ptr_not_equal(p, MAP_FAILED);
	((char *)s.base)[100] = 42;
	assert_int_equal(((char *)p)[100], 42);
	munmap(p, 8192);
	close(ro);
	shm_seg_destroy(&s);
	assert_int_equal(s.fd, -1);
	assert_null(s.base);
}

static void headers_describe_the_layout(void **state)
{
	struct shm_seg g, c;
	struct jst_shm_global *gh;
	struct jst_shm_client *ch;

	assert_int_equal(shm_global_create(&g, 16, 0x1234), 0);
	gh = g.base;
	assert_int_equal(gh->magic, JST_SHM_GLOBAL_MAGIC);
	assert_int_equal(gh->version_major, JST_SHM_VERSION_MAJOR);
	assert_int_equal(gh->n_slots, 16);
	assert_int_equal(gh->slot_size, sizeof(struct jst_flow_ctl));
	assert_int_equal(gh->total_size, jst_shm_global_size(16));
	assert_int_equal(gh->instance, 0x1234);
	assert_int_equal(atomic_load(&gh->flags) & JST_G_RUNNING, JST_G_RUNNING);
	/* alive from the start (a shim may say hello before the first tick) */
	assert_true(atomic_load(&gh->heartbeat_ns) + JST_HEARTBEAT_STALE_NS > clock_now_ns());
	assert_int_equal(shm_client_create(&c, 4, 777, 0x1234), 0);
	ch = c.base;
	assert_int_equal(ch->magic, JST_SHM_CLIENT_MAGIC);
	assert_int_equal(ch->pid, 777);
	assert_int_equal(ch->n_slots, 4);
	assert_int_equal(ch->slot_size, sizeof(struct jst_flow_stats));
	assert_int_equal(ch->total_size, jst_shm_client_size(4));
	shm_seg_destroy(&g);
	shm_seg_destroy(&c);
}

static void slots_publish_under_an_even_seq(void **state)
{
	struct jst_flow_ctl slot;

	memset(&slot, 0, sizeof(slot));
	shm_slot_publish(&slot, 1, 7, 100, 2, 3, 4096, 5, 8000, 900, 50);
	assert_int_equal(atomic_load(&slot.seq), 2);
	assert_int_equal(atomic_load(&slot.flow_id), 7);
	assert_int_equal(atomic_load(&slot.owner_pid), 100);
	assert_int_equal(atomic_load(&slot.chunk_bytes), 4096);
	assert_int_equal(atomic_load(&slot.rate_bps), 8000);
	assert_int_equal(atomic_load(&slot.wait_ns), 50);
	shm_slot_set_rates(&slot, 16000, 1800, 25);
	assert_int_equal(atomic_load(&slot.seq), 4);
	assert_int_equal(atomic_load(&slot.rate_bps), 16000);
	assert_int_equal(atomic_load(&slot.ops_per_s), 1800);
	assert_int_equal(atomic_load(&slot.flow_id), 7); /* untouched */
	/* a writer that died mid-update left seq odd: the next one ends even */
	atomic_store(&slot.seq, 5);
	shm_slot_set_rates(&slot, 1, 1, 1);
	assert_int_equal(atomic_load(&slot.seq) % 2, 0);
	assert_true(atomic_load(&slot.seq) > 5);
}

/* What a client process writes is read as untrusted: a counter that goes
 * backwards, or grows faster than any RNIC could make it, keeps its old
 * value and is reported. */
static void counters_never_go_backwards(void **state)
{
	struct jst_flow_stats st;
	struct shm_counters prev = { 100, 10, 1, 50, 5 }, out;

	memset(&st, 0, sizeof(st));
	atomic_store(&st.bytes, 200);
	atomic_store(&st.ops, 20);
	atomic_store(&st.chunks, 2);
	atomic_store(&st.tokens_bytes, 60);
	atomic_store(&st.token_wait_ns, 6);
	assert_int_equal(shm_read_counters(&st, &prev, &out, 1000000), 0);
	assert_int_equal(out.bytes, 200);
	assert_int_equal(out.ops, 20);
	assert_int_equal(out.chunks, 2);
	assert_int_equal(out.tokens_bytes, 60);
	assert_int_equal(out.token_wait_ns, 6);
	/* each one scribbled, one at a time: backwards (to 0), then grown
	 * faster than any RNIC could make it (over 1 ms + 1 s of slack at most
	 * ~1 TB, ~1 G ops, 64 s of wait: 2^40 more is too much for each) */
	for (int fast = 0; fast < 2; fast++) {
		for (int i = 0; i < 5; i++) {
			_Atomic uint64_t *f[] = { &st.bytes, &st.ops, &st.chunks, &st.tokens_bytes,
						  &st.token_wait_ns };
			uint64_t keep = atomic_load(f[i]);

			atomic_store(f[i], fast ? keep + (1ull << 40) : 0);
			assert_int_equal(shm_read_counters(&st, &prev, &out, 1000000), 1);
			assert_int_equal(out.bytes, i == 0 ? 100 : 200);
			assert_int_equal(out.ops, i == 1 ? 10 : 20);
			assert_int_equal(out.chunks, i == 2 ? 1 : 2);
			assert_int_equal(out.tokens_bytes, i == 3 ? 50 : 60);
			assert_int_equal(out.token_wait_ns, i == 4 ? 5 : 6);
			atomic_store(f[i], keep);
		}
	}
	/* what a fast RNIC does in 10 ms is believed */
	atomic_store(&st.bytes, 100 + 100000000000ull / 100);
	atomic_store(&st.ops, 10 + 10000000);
	assert_int_equal(shm_read_counters(&st, &prev, &out, 10000000), 0);
	assert_int_equal(out.bytes, 100 + 1000000000ull);
	/* a random scribble of the whole line */
	memset(&st, 0xa5, sizeof(st));
	assert_int_equal(shm_read_counters(&st, &prev, &out, 10000000), 1);
}

/* The time a flow's work was queued (minor 4) is a 32-bit count of us that
 * wraps: it may grow by the time between two reads (plus the slack) across
 * the wrap, never by more. */
static void queued_time_wraps_but_never_outruns_the_clock(void **state)
{
	struct jst_flow_stats st;
	struct shm_counters prev = { .queued_us = UINT32_MAX - 10 }, out;

	(void)state;
	memset(&st, 0, sizeof(st));
	atomic_store(&st.queued_us, 500);  /* 511 us later, across the wrap */
	assert_int_equal(shm_read_counters(&st, &prev, &out, 1000000), 0);
	assert_int_equal(out.queued_us, 500);
	/* more than 1 ms + 1 s of slack in 1 ms: scribbled, kept */
	atomic_store(&st.queued_us, (uint32_t)(UINT32_MAX - 10 + 1001000 + 2));
	assert_int_equal(shm_read_counters(&st, &prev, &out, 1000000), 1);
	assert_int_equal(out.queued_us, UINT32_MAX - 10);
	/* backwards is a huge step forwards modulo 2^32: scribbled too */
	atomic_store(&st.queued_us, UINT32_MAX - 20);
	assert_int_equal(shm_read_counters(&st, &prev, &out, 1000000), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(segments_are_sealed),
		cmocka_unit_test(headers_describe_the_layout),
		cmocka_unit_test(slots_publish_under_an_even_seq),
		cmocka_unit_test(counters_never_go_backwards),
		cmocka_unit_test(queued_time_wraps_but_never_outruns_the_clock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

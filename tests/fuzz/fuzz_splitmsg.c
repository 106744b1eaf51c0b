// SPDX-License-Identifier: MIT
/* libFuzzer target for the two-sided split protocol (shim/splitmsg.c): the
 * control messages a peer's shim sends over the split QP, to a shim that
 * waits for a READY (side a, sender of a SEND or WRITE_WITH_IMM) and to one
 * with the application's receives posted (side b).  Runs the real exchange
 * between the two (tests/splitfake.h) with hostile messages mixed in, and
 * checks that nothing crashes, a message goes on split only with segments
 * that cover exactly the bytes after its first chunk, no more than
 * SPLITMSG_MAX_SEG of them, no registration leaks, and a receive never
 * claims more than it holds for a SEND.
 *
 *   make build/fuzz/fuzz_splitmsg
 *   build/fuzz/fuzz_splitmsg -max_total_time=60 tests/fuzz/corpus/splitmsg
 *
 * Input: byte 0 bit 0: the message is a WRITE_WITH_IMM (else a SEND);
 * byte 1: how many buffers the receive has (0: no receive posted, at most
 * 10); then a u16 length per buffer, the message's length and chunk (u16
 * each); then records {to u8, len u8, bytes}: to bit 0 = side b, bit 1 =
 * first let the two shims exchange what they sent so far. */
#include "../splitfake.h"

#include "fuzz.h"

static uint16_t u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void check(const struct pend_wr *p, const uint32_t *lens, int nbuf)
{
	int mrs = 2; /* the two sides' control slots */

	if (p && p->phase == SPLITMSG_DATA && !p->went_whole && p->kind == SPLITMSG_SEND) {
		uint64_t sum = 0;

		CHECK(p->nseg >= 1 && p->nseg <= SPLITMSG_MAX_SEG);
		for (int i = 0; i < p->nseg; i++)
			sum += p->seg[i].len;
		CHECK(sum == p->cost_bytes - p->chunk);
	}
	if (p && p->went_whole)
		CHECK(p->kind == SPLITMSG_ONE_SIDED && p->n_chunks == 1 && !p->chunk);
	for (const struct splitmsg_rx *e = sf_b.q->split.msg.rx_head; e; e = e->next) {
		CHECK(e->nmr >= 0 && e->nmr <= SPLITMSG_MAX_SEG);
		CHECK(e->full_len <= SPLITMSG_MAX_LEN);
		if (e->nmr)
			CHECK(e->full_len && e->full_len <= e->total);
		mrs += e->nmr;
	}
	CHECK(sf_mrs == mrs);
	CHECK(sf_a.n_posted == SPLITMSG_SLOTS && sf_b.n_posted == SPLITMSG_SLOTS);
	(void)lens;
	(void)nbuf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t lens[10];
	struct pend_wr *p;
	size_t at = 2;
	int nbuf;
	uint16_t len, chunk;

	if (size < 2)
		return 0;
	nbuf = data[1] % 11;
	if (size < at + 2 * (size_t)nbuf + 4)
		return 0;
	if (sf_init())
		__builtin_trap();
	for (int i = 0; i < nbuf; i++, at += 2)
		lens[i] = u16(data + at);
	if (nbuf)
		sf_app_recv(&sf_b, 0x10000000, lens, nbuf);
	len = u16(data + at);
	chunk = u16(data + at + 2);
	at += 4;
	p = sf_app_send(&sf_a, data[0] & 1 ? SPLITMSG_WRITE_IMM : SPLITMSG_SEND, len, chunk);
	check(p, lens, nbuf);
	while (at + 2 <= size) {
		uint8_t to = data[at], n = data[at + 1];

		at += 2;
		if (n > size - at)
			n = (uint8_t)(size - at);
		if (to & 2) {
			sf_deliver(&sf_a);
			sf_deliver(&sf_b);
			check(p, lens, nbuf);
		}
		CHECK(sf_receive(to & 1 ? &sf_b : &sf_a, data + at, n) == 0);
		at += n;
		check(p, lens, nbuf);
		if (sf_a.n_out > SF_OUT / 2)
			sf_a.n_out = 0;
		if (sf_b.n_out > SF_OUT / 2)
			sf_b.n_out = 0;
	}
	sf_deliver(&sf_a);
	sf_deliver(&sf_b);
	check(p, lens, nbuf);
	/* the receive completes: its registrations go */
	if (nbuf) {
		struct ibv_wc wc = { .status = IBV_WC_SUCCESS, .byte_len = 1 };

		splitmsg_rx_done(sf_b.q, &wc);
		CHECK(wc.byte_len <= SPLITMSG_MAX_LEN);
	}
	sf_fini();
	CHECK(sf_mrs == 0);
	return 0;
}

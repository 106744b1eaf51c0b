// SPDX-License-Identifier: MIT
/*
 * Unit tests of tools/bench_wire.c: every message round-trips, every truncation and every
 * out-of-range field is refused, and the framing over a socket pair handles bad magic, oversized
 * payloads, another version, timeouts and a closed peer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../tools/bench_wire.c"

#include <sys/socket.h>

static uint8_t buf[BENCH_WIRE_MAX];

static void sample_hello(struct bench_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->mtu = 3;
	h->n_flows = 3;
	h->flows[0] = (struct bench_wire_flow){ .cls = 0, .verb = BENCH_SEND, .size = 2, .qps = 1,
						.recv_depth = 18 };
	h->flows[1] = (struct bench_wire_flow){ .cls = 1, .verb = BENCH_WRITE, .size = 64,
						.qps = 2 };
	h->flows[2] = (struct bench_wire_flow){ .cls = 2, .verb = BENCH_READ,
						.size = BENCH_SIZE_MAX, .qps = 1 };
	h->mode = BENCH_MODE_BIDIR;
	strcpy(h->flows[1].spec, "tput:write:64:qps=2"); /* 19 bytes */
	strcpy(h->flows[2].spec, "bw:read:1G");		 /* 10 bytes */
	h->n_qps = 4;
	for (int i = 0; i < 4; i++) {
		h->qps[i].qpn = 17 + (uint32_t)i;
		h->qps[i].psn = 0xabcdef - (uint32_t)i;
		h->qps[i].lid = (uint16_t)(i * 1000);
		for (int k = 0; k < 16; k++)
			h->qps[i].gid[k] = (uint8_t)(i * 16 + k);
	}
}

static void hello_round_trip(void **state)
{
	struct bench_hello h, g;
	char err[128];
	size_t len;

	(void)state;
	sample_hello(&h);
	len = bench_wire_put_hello(&h, buf, sizeof(buf));
	assert_int_equal(len, 6 + 3 * 16 + 19 + 10 + 4 * 42);
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), 0);
	assert_memory_equal(&h, &g, sizeof(h));
	/* every truncation, and one byte too many */
	for (size_t n = 0; n < len; n++)
		assert_int_equal(bench_wire_get_hello(buf, n, &g, err, sizeof(err)), -EPROTO);
	assert_int_equal(bench_wire_get_hello(buf, len + 1, &g, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "hello: 1 bytes left over");
	assert_int_equal(bench_wire_get_hello(buf, 40, &g, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "hello: truncated (40 bytes)");
	/* too small a buffer */
	assert_int_equal(bench_wire_put_hello(&h, buf, len - 1), 0);
}

static void hello_ranges(void **state)
{
	struct bench_hello h, g;
	char err[128];
	size_t len;

	(void)state;
	sample_hello(&h);
	h.mtu = 6;
	len = bench_wire_put_hello(&h, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "hello: invalid MTU code 6");
	sample_hello(&h);
	h.flows[1].verb = BENCH_VERB_MAX;
	len = bench_wire_put_hello(&h, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "hello: flow 1 out of range");
	sample_hello(&h);
	h.flows[2].size = BENCH_SIZE_MAX + 1;
	len = bench_wire_put_hello(&h, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), -EPROTO);
	sample_hello(&h);
	h.flows[0].recv_depth = RECV_DEPTH_MAX + 1;
	len = bench_wire_put_hello(&h, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), -EPROTO);
	sample_hello(&h);
	h.n_qps = 3;
	len = bench_wire_put_hello(&h, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "hello: 3 QPs announced, the flows have 4");
	sample_hello(&h);
	h.qps[2].qpn = 1u << 24;
	len = bench_wire_put_hello(&h, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "hello: QP 2: invalid QP or packet number");
	sample_hello(&h);
	h.mode = BENCH_MODE_MAX;
	len = bench_wire_put_hello(&h, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "hello: unknown mode 7");
	h.mode = BENCH_MODE_PROGRESS; /* the last one */
	len = bench_wire_put_hello(&h, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), 0);
	assert_int_equal(g.mode, BENCH_MODE_PROGRESS);
	sample_hello(&h);
	h.flows[1].spec[3] = '\n';
	len = bench_wire_put_hello(&h, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "hello: flow 1: invalid specification");
	/* a specification of 511 bytes is the longest */
	sample_hello(&h);
	memset(h.flows[0].spec, 'x', BENCH_SPEC_MAX - 1);
	len = bench_wire_put_hello(&h, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), 0);
	assert_int_equal(strlen(g.flows[0].spec), BENCH_SPEC_MAX - 1);
	buf[6 + 14] = 2; /* its length: 512 + 255 */
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "hello: flow 0: invalid specification");
	sample_hello(&h);
	h.n_flows = 0;
	len = bench_wire_put_hello(&h, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_hello(buf, len, &g, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "hello: 0 flows (1..64)");
}

static void accept_and_result(void **state)
{
	struct bench_accept a = { .mtu = 1, .n_qps = 2 }, b;
	struct bench_result r = { .n_flows = 2 }, q;
	char err[128], text[BENCH_ERROR_MAX];
	size_t len;

	(void)state;
	a.qps[0] = (struct bench_wire_qp){ .qpn = 1, .psn = 2, .lid = 3, .rkey = 0xdeadbeef,
					   .addr = 0x7fff00001000ull, .len = 1u << 20 };
	a.qps[1] = (struct bench_wire_qp){ .qpn = 0xffffff, .psn = 0xffffff, .rkey = 1,
					   .addr = UINT64_MAX, .len = UINT32_MAX };
	a.qps[1].gid[15] = 9;
	len = bench_wire_put_accept(&a, buf, sizeof(buf));
	assert_int_equal(len, 3 + 2 * 42);
	assert_int_equal(bench_wire_get_accept(buf, len, &b, err, sizeof(err)), 0);
	assert_memory_equal(&a, &b, sizeof(a));
	for (size_t n = 0; n < len; n++)
		assert_int_equal(bench_wire_get_accept(buf, n, &b, err, sizeof(err)), -EPROTO);
	a.qps[1].qpn = 0;
	len = bench_wire_put_accept(&a, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_accept(buf, len, &b, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "accept: QP 1: invalid QP or packet number");
	a.n_qps = 0;
	len = bench_wire_put_accept(&a, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_accept(buf, len, &b, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "accept: 0 QPs (1..256)");

	r.flows[0].msgs = 123;
	r.flows[0].bytes = 1ull << 40;
	r.flows[1].cpu_ns = UINT64_MAX;
	r.flows[1].reverse = true;
	r.flows[1].rev = (struct bench_wire_reverse){
		.msgs = 1, .posts = 2, .bytes = 3, .elapsed_ns = 4, .cpu_ns = 5,
		.lat = { 6, 7, 8, 9, 10, 11, UINT64_MAX }, .error = "QP 0: stuck" };
	len = bench_wire_put_result(&r, buf, sizeof(buf));
	assert_int_equal(len, 2 + 2 * 25 + 12 * 8 + 2 + 11);
	assert_int_equal(bench_wire_get_result(buf, len, &q, err, sizeof(err)), 0);
	assert_memory_equal(&r, &q, sizeof(r));
	for (size_t n = 0; n < len; n++)
		assert_int_equal(bench_wire_get_result(buf, n, &q, err, sizeof(err)), -EPROTO);
	/* the reverse flag is 0 or 1; its error printable */
	len = bench_wire_put_result(&r, buf, sizeof(buf));
	buf[2 + 24] = 2;
	assert_int_equal(bench_wire_get_result(buf, len, &q, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "result: flow 0: invalid reverse flag 2");
	r.flows[1].rev.error[2] = 0x7f;
	len = bench_wire_put_result(&r, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_result(buf, len, &q, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "result: flow 1: invalid error text");
	r.n_flows = 65;
	len = bench_wire_put_result(&r, buf, sizeof(buf));
	assert_int_equal(bench_wire_get_result(buf, len, &q, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "result: 65 flows (1..64)");

	bench_wire_get_error((const uint8_t *)"no\x1b[2J\xffway", 10, text, sizeof(text));
	assert_string_equal(text, "no?[2J?way");
	bench_wire_get_error((const uint8_t *)"abcdef", 6, text, 4);
	assert_string_equal(text, "abc");
}

/* Writes raw bytes as a header with these fields, then the payload. */
static void raw(int fd, uint32_t magic, uint16_t version, uint16_t type, uint32_t len,
		const void *payload, size_t plen)
{
	uint8_t h[BENCH_WIRE_HDR];
	struct out w = { .b = h, .cap = sizeof(h), .ok = true };

	put(&w, magic, 4);
	put(&w, version, 2);
	put(&w, type, 2);
	put(&w, len, 4);
	assert_int_equal(write(fd, h, sizeof(h)), sizeof(h));
	if (plen)
		assert_int_equal(write(fd, payload, plen), (ssize_t)plen);
}

static void framing(void **state)
{
	enum bench_msg type;
	char err[128];
	size_t len;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(bench_wire_send(sv[0], BENCH_MSG_DONE, NULL, 0), 0);
	assert_int_equal(bench_wire_recv(sv[1], 1000, &type, buf, &len, err, sizeof(err)), 0);
	assert_int_equal(type, BENCH_MSG_DONE);
	assert_int_equal(len, 0);
	bench_wire_send_error(sv[0], "no device %s", "rxe9");
	assert_int_equal(bench_wire_recv(sv[1], 1000, &type, buf, &len, err, sizeof(err)), 0);
	assert_int_equal(type, BENCH_MSG_ERROR);
	assert_int_equal(len, 14);
	assert_memory_equal(buf, "no device rxe9", 14);
	assert_int_equal(bench_wire_send(sv[0], BENCH_MSG_HELLO, buf, BENCH_WIRE_MAX + 1),
			 -EMSGSIZE);
	/* nothing sent: a timeout */
	assert_int_equal(bench_wire_recv(sv[1], 50, &type, buf, &len, err, sizeof(err)),
			 -ETIMEDOUT);
	/* half a header, then nothing: a timeout too */
	assert_int_equal(write(sv[0], "JBNC", 4), 4);
	assert_int_equal(bench_wire_recv(sv[1], 50, &type, buf, &len, err, sizeof(err)),
			 -ETIMEDOUT);
	close(sv[0]);
	close(sv[1]);

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	raw(sv[0], 0x47455420, 1, 1, 0, NULL, 0); /* "GET " */
	assert_int_equal(bench_wire_recv(sv[1], 1000, &type, buf, &len, err, sizeof(err)),
			 -EPROTO);
	assert_string_equal(err, "the peer is not a justbench (bad magic 0x47455420)");
	raw(sv[0], BENCH_WIRE_MAGIC, 1, 1, BENCH_WIRE_MAX + 1, NULL, 0);
	assert_int_equal(bench_wire_recv(sv[1], 1000, &type, buf, &len, err, sizeof(err)),
			 -EPROTO);
	assert_string_equal(err, "message of 65537 bytes (at most 65536)");
	raw(sv[0], BENCH_WIRE_MAGIC, 1, BENCH_MSG_HELLO, 3, "abc", 3);
	assert_int_equal(bench_wire_recv(sv[1], 1000, &type, buf, &len, err, sizeof(err)),
			 -EPROTO);
	assert_string_equal(err, "the peer speaks protocol version 1, this justbench 2");
	/* an ERROR of another version is still read as one */
	raw(sv[0], BENCH_WIRE_MAGIC, 7, BENCH_MSG_ERROR, 2, "no", 2);
	assert_int_equal(bench_wire_recv(sv[1], 1000, &type, buf, &len, err, sizeof(err)), 0);
	assert_int_equal(type, BENCH_MSG_ERROR);
	assert_int_equal(len, 2);
	/* the peer closes in the middle of a payload */
	raw(sv[0], BENCH_WIRE_MAGIC, 2, BENCH_MSG_RESULT, 10, "abc", 3);
	close(sv[0]);
	assert_int_equal(bench_wire_recv(sv[1], 1000, &type, buf, &len, err, sizeof(err)),
			 -ECONNRESET);
	assert_int_equal(bench_wire_recv(sv[1], -1, &type, buf, &len, err, sizeof(err)),
			 -ECONNRESET);
	close(sv[1]);
	/* a closed peer on send */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]);
	assert_int_equal(bench_wire_send(sv[0], BENCH_MSG_DONE, NULL, 0), -EPIPE);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hello_round_trip),
		cmocka_unit_test(hello_ranges),
		cmocka_unit_test(accept_and_result),
		cmocka_unit_test(framing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

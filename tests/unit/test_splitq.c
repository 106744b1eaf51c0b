// SPDX-License-Identifier: MIT
/* Unit tests of daemon/splitq.c: the GID a shim names becomes the peer
 * daemon's IPv4 address; a lookup is answered from our own flows, else by
 * the configured peer whose address that is; what a peer daemon asks and
 * answers is checked before it is used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../daemon/splitq.c"

/* ------------------------------------------------------------ fakes */

static int64_t own_split = -1;     /* what flows_split_of() finds */
static struct peer fake_peer;
static struct peer_ctx *fake_pc = (struct peer_ctx *)&fake_peer; /* only compared */
static peer_handler_fn served;
static void *served_arg;
static peer_reply_fn pending_cb;
static void *pending_arg;
static json_t *asked, *answered;
static char error_code[32];
static int request_rc;

int64_t flows_split_of(struct flows *fl, const char *gid, uint32_t qpn)
{
	return own_split;
}

int peer_handle(struct peer_ctx *pc, const char *op, peer_handler_fn fn, void *arg)
{
	assert_string_equal(op, "split_lookup");
	served = fn;
	served_arg = arg;
	return 0;
}

struct peer *peer_outgoing(struct peer_ctx *pc, size_t i)
{
	return i == 1 ? &fake_peer : NULL;
}

int peer_request(struct peer *p, const char *op, json_t *args, peer_reply_fn cb, void *arg,
		 int timeout_ms)
{
	assert_ptr_equal(p, &fake_peer);
	assert_string_equal(op, "split_lookup");
	json_decref(asked);
	asked = args;
	if (request_rc) {
		json_decref(args);
		asked = NULL;
		return request_rc;
	}
	pending_cb = cb;
	pending_arg = arg;
	return 0;
}

void peer_reply(struct peer_ctx *pc, const struct peer_req *rq, json_t *result)
{
	json_decref(answered);
	answered = result;
}

void peer_reply_error(struct peer_ctx *pc, const struct peer_req *rq, const char *code,
		      const char *fmt, ...)
{
	snprintf(error_code, sizeof(error_code), "%s", code);
}

void log_debug(unsigned subsys, const char *fmt, ...)
{
}

/* ------------------------------------------------------------ results */

static int calls;
static int64_t got_split;
static char got_why[128];

static void result(struct daemon *d, void *arg, int64_t split_qpn, const char *why)
{
	calls++;
	got_split = split_qpn;
	snprintf(got_why, sizeof(got_why), "%s", why ? why : "");
}

static struct config_peer peers[2] = { { .address = "10.0.0.9" }, { .address = "10.233.0.1" } };
static struct daemon d;

static int setup(void **state)
{
	memset(&d, 0, sizeof(d));
	d.peer = fake_pc;
	d.cfg.peers = peers;
	d.cfg.n_peers = 2;
	own_split = -1;
	calls = 0;
	request_rc = 0;
	pending_cb = NULL;
	error_code[0] = 0;
	return 0;
}

static int teardown(void **state)
{
	json_decref(asked);
	json_decref(answered);
	asked = answered = NULL;
	return 0;
}

#define GID "0000:0000:0000:0000:0000:ffff:0ae9:0001"

static void gid_to_ipv4(void **state)
{
	char ip[INET_ADDRSTRLEN];

	assert_int_equal(splitq_gid_ipv4(GID, ip, sizeof(ip)), 0);
	assert_string_equal(ip, "10.233.0.1");
	assert_int_equal(splitq_gid_ipv4("0000:0000:0000:0000:0000:FFFF:c0a8:0a01", ip,
					 sizeof(ip)), 0);
	assert_string_equal(ip, "192.168.10.1");
	/* not IPv4-mapped: a RoCEv2-over-IPv6 or an InfiniBand GID */
	assert_int_equal(splitq_gid_ipv4("fe80:0000:0000:0000:0000:ffff:0ae9:0001", ip,
					 sizeof(ip)), -EINVAL);
	assert_int_equal(splitq_gid_ipv4("0000:0000:0000:0000:0000:fffe:0ae9:0001", ip,
					 sizeof(ip)), -EINVAL);
	assert_int_equal(splitq_gid_ipv4("0000:0000:0000:0000:0000:ffff:0ae9", ip, sizeof(ip)),
			 -EINVAL);
	assert_int_equal(splitq_gid_ipv4("", ip, sizeof(ip)), -EINVAL);
	assert_int_equal(splitq_gid_ipv4("junk", ip, sizeof(ip)), -EINVAL);
	/* no room for the answer */
	assert_int_equal(splitq_gid_ipv4(GID, ip, 4), -EINVAL);
}

static void own_qp_answers_at_once(void **state)
{
	own_split = 77;
	splitq_lookup(&d, GID, 5, result, NULL);
	assert_int_equal(calls, 1);
	assert_int_equal(got_split, 77);
	assert_null(asked);
}

static void asks_the_peer_of_that_address(void **state)
{
	splitq_lookup(&d, GID, 5, result, NULL);
	assert_int_equal(calls, 0); /* later */
	assert_non_null(pending_cb);
	assert_string_equal(json_string_value(json_object_get(asked, "gid")), GID);
	assert_int_equal(json_integer_value(json_object_get(asked, "qpn")), 5);
	{
		json_t *r = json_pack("{s:i}", "split_qpn", 1234);

		pending_cb(fake_pc, &fake_peer, r, NULL, NULL, pending_arg); /* (borrowed) */
		json_decref(r);
	}
	assert_int_equal(calls, 1);
	assert_int_equal(got_split, 1234);
}

/* What the peer daemon answers is checked: a QP number, or nothing. */
static void peer_answers_are_checked(void **state)
{
	json_t *bad[] = { json_pack("{s:i}", "split_qpn", -1),
			  json_pack("{s:i}", "split_qpn", 0x1000000),
			  json_pack("{s:s}", "split_qpn", "12"),
			  json_pack("{s:n}", "split_qpn"),
			  json_pack("{}"),
			  json_pack("[i]", 12) };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		calls = 0;
		splitq_lookup(&d, GID, 5, result, NULL);
		pending_cb(fake_pc, &fake_peer, bad[i], NULL, NULL, pending_arg);
		json_decref(bad[i]);
		assert_int_equal(calls, 1);
		assert_int_equal(got_split, -1);
	}
	/* an error or a timeout */
	calls = 0;
	splitq_lookup(&d, GID, 5, result, NULL);
	pending_cb(fake_pc, &fake_peer, NULL, "timeout", "no reply in 2000 ms", pending_arg);
	assert_int_equal(got_split, -1);
	assert_string_equal(got_why, "no reply in 2000 ms");
}

static void no_peer_for_it(void **state)
{
	splitq_lookup(&d, "0000:0000:0000:0000:0000:ffff:0a00:0002", 5, result, NULL);
	assert_int_equal(calls, 1);
	assert_int_equal(got_split, -1);
	assert_string_equal(got_why, "the peer's host is not a configured Justitia peer");
	splitq_lookup(&d, "fe80:0000:0000:0000:0000:ffff:0ae9:0001", 5, result, NULL);
	assert_int_equal(calls, 2);
	assert_string_equal(got_why, "no Justitia peer known for this GID");
	d.peer = NULL;
	splitq_lookup(&d, GID, 5, result, NULL);
	assert_int_equal(calls, 3);
	assert_int_equal(got_split, -1);
	d.peer = fake_pc;
	request_rc = -ENOTCONN;
	splitq_lookup(&d, GID, 5, result, NULL);
	assert_int_equal(calls, 4);
	assert_string_equal(got_why, "the peer daemon is not reachable");
}

/* The serving side: what another daemon asks is checked before use. */
static void serves_checked_requests(void **state)
{
	json_t *args;

	splitq_init(&d);
	assert_ptr_equal(served, serve_lookup);
	own_split = 42;
	args = json_pack("{s:s, s:i}", "gid", GID, "qpn", 5);
	served(fake_pc, &fake_peer, NULL, args, served_arg);
	json_decref(args);
	assert_int_equal(json_integer_value(json_object_get(answered, "split_qpn")), 42);
	own_split = -1;
	args = json_pack("{s:s, s:i}", "gid", GID, "qpn", 6);
	served(fake_pc, &fake_peer, NULL, args, served_arg);
	json_decref(args);
	assert_true(json_is_null(json_object_get(answered, "split_qpn")));
	{
		json_t *bad[] = { json_pack("{s:s, s:i}", "gid", GID, "qpn", -1),
				  json_pack("{s:s, s:i}", "gid", GID, "qpn", 0x1000000),
				  json_pack("{s:s, s:i, s:i}", "gid", GID, "qpn", 1, "x", 1),
				  json_pack("{s:i}", "qpn", 1),
				  json_pack("{s:i, s:i}", "gid", 1, "qpn", 1) };

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			error_code[0] = 0;
			served(fake_pc, &fake_peer, NULL, bad[i], served_arg);
			json_decref(bad[i]);
			assert_string_equal(error_code, "bad_request");
		}
	}
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(gid_to_ipv4),
		T(own_qp_answers_at_once),
		T(asks_the_peer_of_that_address),
		T(peer_answers_are_checked),
		T(no_peer_for_it),
		T(serves_checked_requests),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

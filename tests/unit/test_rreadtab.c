// SPDX-License-Identifier: MIT
/* Unit tests of daemon/rreadtab.c, the responder's remote READ flows:
 * registration and update, the limits (per connection, connections, in
 * all) refused with a reason and counted, close and a connection's drop,
 * the entries the controller counts and the shares it sets, when a
 * remote_grants is due (changes, the minimum interval, one in flight),
 * batches of RREAD_GRANTS_MAX, the requests a peer sends, status.
 * #includes rreadtab.c and links the daemon's other objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>

#include "../../daemon/rreadtab.c"
#include "../../daemon/config.h"

uint64_t daemon_now_ns(void);
uint64_t daemon_now_ns(void)
{
	return 0;
}

static struct rread_open op(uint32_t flow, uint32_t weight, bool active)
{
	return (struct rread_open){ .flow = flow, .cls = FLOW_CLASS_BANDWIDTH, .qpn = flow & 0xffff,
				    .peer_qpn = 7, .weight = weight, .active = active };
}

static void open_update_close(void **state)
{
	struct rread_tab t = { 0 };
	struct rread_open o = op(5, 1, true);
	char why[160];

	assert_int_equal(rreadtab_open(&t, 1, NULL, "b:7471", &o, 10, why, sizeof(why)), 0);
	o.weight = 9;
	assert_int_equal(rreadtab_open(&t, 1, NULL, "b:7471", &o, 20, why, sizeof(why)), 1);
	assert_int_equal(t.total, 1);
	assert_int_equal(t.conns[0]->e[0].o.weight, 9);
	/* the same flow id from another connection is another flow */
	assert_int_equal(rreadtab_open(&t, 2, NULL, "c:7471", &o, 20, why, sizeof(why)), 0);
	assert_int_equal(t.total, 2);
	assert_int_equal(t.n_conns, 2);
	assert_int_equal(rreadtab_close(&t, 1, 6), -ENOENT);
	assert_int_equal(rreadtab_close(&t, 3, 5), -ENOENT);
	assert_int_equal(rreadtab_close(&t, 1, 5), 0);
	assert_int_equal(t.n_conns, 1); /* its last flow took the connection's entry */
	assert_int_equal(rreadtab_drop(&t, 1), 0);
	assert_int_equal(rreadtab_drop(&t, 2), 1);
	assert_int_equal(t.total, 0);
	assert_int_equal(t.n_conns, 0);
	assert_int_equal(t.opened, 2);
	assert_int_equal(t.closed, 1);
	assert_int_equal(t.dropped, 1);
	rreadtab_fini(&t);
}

static void limits(void **state)
{
	struct rread_tab t = { 0 };
	char why[160];
	uint64_t conn;
	uint32_t i;

	for (i = 1; i <= RREAD_MAX_PER_CONN; i++) {
		struct rread_open o = op(i, 1, true);

		assert_int_equal(rreadtab_open(&t, 1, NULL, "b", &o, 0, why, sizeof(why)), 0);
	}
	{
		struct rread_open o = op(i, 1, true);

		assert_int_equal(rreadtab_open(&t, 1, NULL, "b", &o, 0, why, sizeof(why)), -ENOSPC);
		assert_non_null(strstr(why, "per connection"));
		/* an update of a known flow is no new flow */
		o = op(3, 2, true);
		assert_int_equal(rreadtab_open(&t, 1, NULL, "b", &o, 0, why, sizeof(why)), 1);
	}
	/* RREAD_MAX_TOTAL in all */
	for (conn = 2; t.total < RREAD_MAX_TOTAL; conn++)
		for (i = 1; i <= RREAD_MAX_PER_CONN && t.total < RREAD_MAX_TOTAL; i++) {
			struct rread_open o = op(i, 1, false);

			assert_int_equal(rreadtab_open(&t, conn, NULL, "x", &o, 0, why, sizeof(why)), 0);
		}
	{
		struct rread_open o = op(1, 1, true);

		assert_int_equal(rreadtab_open(&t, 99, NULL, "y", &o, 0, why, sizeof(why)), -ENOSPC);
		assert_non_null(strstr(why, "in all"));
	}
	assert_int_equal(t.refused, 2);
	assert_string_equal(t.last_refusal, why);
	/* connections */
	rreadtab_fini(&t);
	memset(&t, 0, sizeof(t));
	for (conn = 1; conn <= RREAD_MAX_CONNS; conn++) {
		struct rread_open o = op(1, 1, true);

		assert_int_equal(rreadtab_open(&t, conn, NULL, "z", &o, 0, why, sizeof(why)), 0);
	}
	{
		struct rread_open o = op(1, 1, true);

		assert_int_equal(rreadtab_open(&t, conn, NULL, "z", &o, 0, why, sizeof(why)), -ENOSPC);
		assert_non_null(strstr(why, "connections"));
	}
	rreadtab_fini(&t);
}

static void fill_and_rates(void **state)
{
	struct rread_tab t = { 0 };
	struct tokens_flow tf[4];
	struct aimd_flow af[4];
	struct aimd_counts n;
	char why[160];

	for (uint32_t i = 1; i <= 3; i++) {
		struct rread_open o = op(i, i, i != 2);

		assert_int_equal(rreadtab_open(&t, i == 3 ? 2 : 1, NULL, "b", &o, 0, why, sizeof(why)),
				 0);
	}
	assert_int_equal(rreadtab_fill(&t, tf, af, 10), 3);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(tf[k].app, 10 + k); /* each its own application */
		assert_int_equal(af[k].app, 10 + k);
		assert_int_equal(tf[k].cls, FLOW_CLASS_BANDWIDTH);
	}
	aimd_count(af, 3, true, &n);
	assert_int_equal(n.bw, 2); /* B' counts the active ones */
	tf[0].rate_bps = 100;
	tf[1].rate_bps = 200;
	tf[2].rate_bps = 300;
	rreadtab_set_rates(&t, tf, 3);
	assert_int_equal(t.conns[0]->e[0].rate_bps, 100);
	assert_int_equal(t.conns[0]->e[1].rate_bps, 200);
	assert_int_equal(t.conns[1]->e[0].rate_bps, 300);
	rreadtab_fini(&t);
}

static void due_and_batches(void **state)
{
	struct rread_tab t = { 0 };
	struct rread_grant g[RREAD_GRANTS_MAX];
	struct rread_conn *c;
	char why[160];

	for (uint32_t i = 1; i <= 200; i++) {
		struct rread_open o = op(i, 1, true);

		assert_int_equal(rreadtab_open(&t, 1, NULL, "b", &o, 0, why, sizeof(why)), 0);
	}
	c = rreadtab_conn(&t, 1);
	assert_non_null(c);
	for (size_t j = 0; j < c->n; j++)
		c->e[j].rate_bps = 1000000 + j;
	assert_true(rreadtab_due(c, 1000, 5000000)); /* never sent */
	assert_int_equal(rreadtab_grants(c, 0, g), RREAD_GRANTS_MAX);
	assert_int_equal(g[0].flow, 1);
	assert_int_equal(g[0].rate_bps, 1000000);
	assert_int_equal(rreadtab_grants(c, RREAD_GRANTS_MAX, g), 200 - RREAD_GRANTS_MAX);
	rreadtab_sent(c, 1000);
	assert_false(rreadtab_due(c, 2000, 5000000));
	c->e[5].rate_bps = 2000000; /* a change ... */
	assert_false(rreadtab_due(c, 2000, 5000000)); /* ... within the interval */
	assert_true(rreadtab_due(c, 1000 + 5000000, 5000000));
	c->inflight = 1;
	assert_false(rreadtab_due(c, 1000 + 5000000, 5000000)); /* one in flight */
	c->inflight = 0;
	rreadtab_sent(c, 6000000);
	c->e[5].rate_bps += c->e[5].rate_bps / RREAD_CHANGE / 2; /* small: not news */
	assert_false(rreadtab_due(c, 100000000, 5000000));
	c->e[5].rate_bps = 0; /* unlimited now: news */
	assert_true(rreadtab_due(c, 100000000, 5000000));
	rreadtab_fini(&t);
}

static void serve(void **state)
{
	struct rread_tab t = { 0 };
	const char *code;
	json_t *res, *args, *st;
	char msg[200];

	args = json_pack("{s:s, s:i, s:s, s:i, s:i, s:i, s:b}", "kind", "read", "flow", 3, "class",
			 "bandwidth", "qpn", 17, "peer_qpn", 18, "weight", 2, "active", 1);
	assert_int_equal(rreadtab_serve(&t, 4, NULL, "b:1", RREAD_OP_OPEN, args, 5, &res, &code,
					msg, sizeof(msg)), 0);
	assert_true(json_is_object(res));
	json_decref(res);
	json_decref(args);
	assert_int_equal(t.total, 1);
	args = json_pack("{s:s, s:i}", "kind", "read", "flow", 4);
	assert_int_equal(rreadtab_serve(&t, 4, NULL, "b:1", RREAD_OP_CLOSE, args, 5, &res, &code,
					msg, sizeof(msg)), -ENOENT);
	assert_string_equal(code, "not_found");
	json_decref(args);
	args = json_pack("{s:s}", "kind", "read");
	assert_int_equal(rreadtab_serve(&t, 4, NULL, "b:1", RREAD_OP_OPEN, args, 5, &res, &code,
					msg, sizeof(msg)), -EINVAL);
	assert_string_equal(code, "bad_request");
	assert_null(res);
	json_decref(args);
	st = rreadtab_json(&t, 5 + 2000000);
	assert_int_equal(json_integer_value(json_object_get(st, "flows")), 1);
	res = json_array_get(json_object_get(st, "entries"), 0);
	assert_string_equal(json_string_value(json_object_get(res, "peer")), "b:1");
	assert_int_equal(json_integer_value(json_object_get(res, "qpn")), 17);
	assert_int_equal(json_integer_value(json_object_get(res, "local_qpn")), 18);
	assert_int_equal(json_integer_value(json_object_get(res, "age_ms")), 2);
	assert_true(json_is_null(json_object_get(res, "share_bps")));
	json_decref(st);
	args = json_pack("{s:s, s:i}", "kind", "read", "flow", 3);
	assert_int_equal(rreadtab_serve(&t, 4, NULL, "b:1", RREAD_OP_CLOSE, args, 5, &res, &code,
					msg, sizeof(msg)), 0);
	json_decref(res);
	json_decref(args);
	assert_int_equal(t.total, 0);
	rreadtab_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(open_update_close),
		cmocka_unit_test(limits),
		cmocka_unit_test(fill_and_rates),
		cmocka_unit_test(due_and_batches),
		cmocka_unit_test(serve),
	};

	log_init("test_rreadtab", LOG_LVL_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

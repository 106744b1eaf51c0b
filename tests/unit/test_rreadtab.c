// SPDX-License-Identifier: MIT
/* Unit tests of daemon/rreadtab.c, the responder's remote READ flows and
 * the receiver's incoming (kind recv) flows and their shares:
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
	assert_int_equal(rreadtab_close(&t, 1, RREAD_READ, 6), -ENOENT);
	assert_int_equal(rreadtab_close(&t, 3, RREAD_READ, 5), -ENOENT);
	assert_int_equal(rreadtab_close(&t, 1, RREAD_RECV, 5), -ENOENT); /* not of that kind */
	assert_int_equal(rreadtab_close(&t, 1, RREAD_READ, 5), 0);
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
	size_t from;
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
	from = 0;
	assert_int_equal(rreadtab_grants(c, RREAD_READ, &from, g), RREAD_GRANTS_MAX);
	assert_int_equal(from, RREAD_GRANTS_MAX);
	assert_int_equal(g[0].flow, 1);
	assert_int_equal(g[0].rate_bps, 1000000);
	assert_int_equal(rreadtab_grants(c, RREAD_READ, &from, g), 200 - RREAD_GRANTS_MAX);
	assert_int_equal(from, 200);
	from = 0;
	assert_int_equal(rreadtab_grants(c, RREAD_RECV, &from, g), 0); /* none of that kind */
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

static struct rread_open rop(uint32_t flow, int cls, uint32_t weight, bool active)
{
	struct rread_open o = op(flow, weight, active);

	o.kind = RREAD_RECV;
	o.cls = (uint8_t)cls;
	return o;
}

/* Incoming flows: not in the token distribution; counted for the AIMD
 * (an incoming latency flow is L'); their shares: SafeUtil * w / W with an
 * incoming latency flow, MaxRate * w / W without (0 for a lone flow);
 * grants by kind. */
static void recv_shares(void **state)
{
	struct rread_tab t = { 0 };
	struct tokens_flow tf[8];
	struct aimd_flow af[8];
	struct aimd_counts n;
	struct rread_grant g[RREAD_GRANTS_MAX];
	struct rread_open o;
	size_t lat, bw, from;
	char why[160];
	json_t *st;

	/* S1 (conn 1): bandwidth flows 1 (w 1) and 2 (w 3); S2 (conn 2):
	 * bandwidth flow 1 (w 4, idle); one READ flow 9 on conn 1 */
	o = rop(1, FLOW_CLASS_BANDWIDTH, 1, true);
	assert_int_equal(rreadtab_open(&t, 1, NULL, "s1", &o, 0, why, sizeof(why)), 0);
	o = rop(2, FLOW_CLASS_BANDWIDTH, 3, true);
	assert_int_equal(rreadtab_open(&t, 1, NULL, "s1", &o, 0, why, sizeof(why)), 0);
	o = rop(1, FLOW_CLASS_BANDWIDTH, 4, false);
	assert_int_equal(rreadtab_open(&t, 2, NULL, "s2", &o, 0, why, sizeof(why)), 0);
	o = op(9, 1, true);
	assert_int_equal(rreadtab_open(&t, 1, NULL, "s1", &o, 0, why, sizeof(why)), 0);
	/* the READ flow alone goes into the token distribution */
	assert_int_equal(rreadtab_fill(&t, tf, af, 0), 1);
	assert_int_equal(tf[0].app, 0);
	tf[0].rate_bps = 77;
	rreadtab_set_rates(&t, tf, 1);
	assert_int_equal(t.conns[0]->e[2].rate_bps, 77);
	/* no incoming latency flow: MaxRate (1000) shared by weight */
	assert_int_equal(rreadtab_fill_recv(&t, af, 5), 3);
	aimd_count(af, 3, false, &n);
	assert_int_equal(n.lat, 0);
	assert_int_equal(n.bw, 2);
	rreadtab_recv_shares(&t, 400000000, 1000000000);
	assert_int_equal(t.conns[0]->e[0].rate_bps, 250000000);
	assert_int_equal(t.conns[0]->e[1].rate_bps, 750000000);
	assert_int_equal(t.conns[1]->e[0].rate_bps, 500000000); /* idle: as if it started */
	assert_int_equal(t.conns[0]->e[2].rate_bps, 77);          /* READ: untouched */
	/* an incoming latency flow (S2): protect it, SafeUtil shared */
	o = rop(2, FLOW_CLASS_LATENCY, 1, false);
	assert_int_equal(rreadtab_open(&t, 2, NULL, "s2", &o, 0, why, sizeof(why)), 0);
	rreadtab_recv_count(&t, &lat, &bw);
	assert_int_equal(lat, 1);
	assert_int_equal(bw, 3);
	assert_int_equal(rreadtab_fill_recv(&t, af, 5), 4);
	aimd_count(af, 4, false, &n);
	assert_int_equal(n.lat, 1);
	rreadtab_recv_shares(&t, 400000000, 1000000000);
	assert_int_equal(t.conns[0]->e[0].rate_bps, 100000000);
	assert_int_equal(t.conns[0]->e[1].rate_bps, 300000000);
	assert_int_equal(t.conns[1]->e[1].rate_bps, 0); /* the latency flow: not limited */
	/* never below the minimum; MaxRate unknown: nothing limited */
	rreadtab_recv_shares(&t, 10, 1000000000);
	assert_int_equal(t.conns[0]->e[0].rate_bps, AIMD_MIN_BPS);
	rreadtab_recv_shares(&t, 400000000, 0);
	assert_int_equal(t.conns[0]->e[0].rate_bps, 0);
	rreadtab_recv_shares(&t, 400000000, 1000000000);
	/* grants by kind: conn 1 has two recv flows and one READ flow */
	from = 0;
	assert_int_equal(rreadtab_grants(t.conns[0], RREAD_RECV, &from, g), 2);
	assert_true(g[0].flow == 1 && g[0].rate_bps == 100000000);
	assert_true(g[1].flow == 2 && g[1].rate_bps == 300000000);
	from = 0;
	assert_int_equal(rreadtab_grants(t.conns[0], RREAD_READ, &from, g), 1);
	assert_int_equal(g[0].flow, 9);
	/* status counts the incoming flows and names each entry's kind */
	st = rreadtab_json(&t, 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "incoming"),
							    "latency")), 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "incoming"),
							    "bandwidth")), 3);
	assert_string_equal(json_string_value(json_object_get(
		json_array_get(json_object_get(st, "entries"), 0), "kind")), "recv");
	json_decref(st);
	/* a flow that starts READing: the same entry, another kind */
	o = op(2, 3, true);
	assert_int_equal(rreadtab_open(&t, 1, NULL, "s1", &o, 0, why, sizeof(why)), 1);
	assert_int_equal(t.total, 5);
	/* S1 goes away: its flows with it; S2's latency flow still counts */
	assert_int_equal(rreadtab_drop(&t, 1), 3);
	rreadtab_recv_count(&t, &lat, &bw);
	assert_int_equal(lat, 1);
	assert_int_equal(bw, 1);
	rreadtab_recv_shares(&t, 400000000, 1000000000);
	assert_int_equal(t.conns[0]->e[0].rate_bps, 400000000);
	/* without it, one flow alone: nothing competes, nothing limited */
	assert_int_equal(rreadtab_close(&t, 2, RREAD_RECV, 2), 0);
	t.conns[0]->e[0].o.active = true;
	rreadtab_recv_shares(&t, 400000000, 1000000000);
	assert_int_equal(t.conns[0]->e[0].rate_bps, 0);
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
		cmocka_unit_test(recv_shares),
	};

	log_init("test_rreadtab", LOG_LVL_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

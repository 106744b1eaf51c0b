// SPDX-License-Identifier: MIT
/* Unit tests of daemon/rreadmsg.c, remote READ control's and receiver-side
 * views' messages: what is built parses back the same (kind "read" and
 * "recv"); each member missing, extra, of the wrong type or out of range is
 * refused with a reason (a latency class only with kind "recv", a
 * throughput class only with kind "read", whose grants say "ops"); at most
 * RREAD_GRANTS_MAX grants in one message, and the largest one fits a
 * sealed line.
 * #includes rreadmsg.c and links the daemon's other objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>

#include "../../daemon/rreadmsg.c"
#include "../../daemon/peertypes.h"

uint64_t daemon_now_ns(void);
uint64_t daemon_now_ns(void)
{
	return 0;
}

static int parse_open(const char *s, struct rread_open *o)
{
	char err[160];
	json_t *j = json_loads(s, 0, NULL);
	int rc;

	assert_non_null(j);
	rc = rreadmsg_parse_open(j, o, err, sizeof(err));
	if (rc)
		assert_true(err[0]);
	json_decref(j);
	return rc;
}

static void open_roundtrip_and_bounds(void **state)
{
	struct rread_open o = { .flow = 4294967295u, .cls = FLOW_CLASS_BANDWIDTH, .qpn = 0xffffff,
				.peer_qpn = 0, .weight = 1000, .active = true }, back;
	json_t *j = rreadmsg_open(&o);
	char err[160];

	assert_int_equal(rreadmsg_parse_open(j, &back, err, sizeof(err)), 0);
	assert_true(o.flow == back.flow && o.cls == back.cls && o.qpn == back.qpn &&
		    o.peer_qpn == back.peer_qpn && o.weight == back.weight &&
		    o.active == back.active);
	json_decref(j);
#define OPEN(flow, cls, qpn, pqpn, w, act) \
	"{\"kind\":\"read\",\"flow\":" flow ",\"class\":\"" cls "\",\"qpn\":" qpn \
	",\"peer_qpn\":" pqpn ",\"weight\":" w ",\"active\":" act "}"
	assert_int_equal(parse_open(OPEN("1", "bandwidth", "1", "2", "1", "false"), &back), 0);
	assert_false(back.active);
	assert_int_equal(parse_open(OPEN("0", "bandwidth", "1", "2", "1", "true"), &back), -EINVAL);
	assert_int_equal(parse_open(OPEN("4294967296", "bandwidth", "1", "2", "1", "true"), &back),
			 -EINVAL);
	/* a throughput flow that READs (small READs in batches) */
	assert_int_equal(parse_open(OPEN("1", "throughput", "1", "2", "1", "true"), &back), 0);
	assert_int_equal(back.kind, RREAD_READ);
	assert_int_equal(back.cls, FLOW_CLASS_THROUGHPUT);
	assert_int_equal(parse_open(OPEN("1", "Throughput", "1", "2", "1", "true"), &back),
			 -EINVAL);
	assert_int_equal(parse_open(OPEN("1", "bogus", "1", "2", "1", "true"), &back), -EINVAL);
	assert_int_equal(parse_open(OPEN("1", "bandwidth", "-1", "2", "1", "true"), &back), -EINVAL);
	assert_int_equal(parse_open(OPEN("1", "bandwidth", "1", "16777216", "1", "true"), &back),
			 -EINVAL);
	assert_int_equal(parse_open(OPEN("1", "bandwidth", "1", "2", "0", "true"), &back), -EINVAL);
	assert_int_equal(parse_open(OPEN("1", "bandwidth", "1", "2", "1.5", "true"), &back), -EINVAL);
	assert_int_equal(parse_open(OPEN("1", "bandwidth", "1", "2", "1", "\"yes\""), &back),
			 -EINVAL);
	assert_int_equal(parse_open("{\"kind\":\"read\",\"flow\":1}", &back), -EINVAL);
	assert_int_equal(parse_open("[]", &back), -EINVAL);
	/* kind recv: bandwidth or latency; a latency flow only as recv */
#define OPENK(kind, cls) \
	"{\"kind\":\"" kind "\",\"flow\":5,\"class\":\"" cls "\",\"qpn\":1,\"peer_qpn\":2," \
	"\"weight\":3,\"active\":true}"
	assert_int_equal(parse_open(OPENK("recv", "bandwidth"), &back), 0);
	assert_int_equal(back.kind, RREAD_RECV);
	assert_int_equal(back.cls, FLOW_CLASS_BANDWIDTH);
	assert_int_equal(parse_open(OPENK("recv", "latency"), &back), 0);
	assert_int_equal(back.kind, RREAD_RECV);
	assert_int_equal(back.cls, FLOW_CLASS_LATENCY);
	assert_int_equal(parse_open(OPENK("read", "latency"), &back), -EINVAL);
	assert_int_equal(parse_open(OPENK("recv", "throughput"), &back), -EINVAL);
	assert_int_equal(parse_open(OPENK("RECV", "bandwidth"), &back), -EINVAL);
	assert_int_equal(parse_open(OPENK("", "bandwidth"), &back), -EINVAL);
	o.kind = RREAD_RECV;
	o.cls = FLOW_CLASS_LATENCY;
	j = rreadmsg_open(&o);
	assert_int_equal(rreadmsg_parse_open(j, &back, err, sizeof(err)), 0);
	assert_true(back.kind == RREAD_RECV && back.cls == FLOW_CLASS_LATENCY);
	json_decref(j);
	/* 2^32 + 3 is not 3 */
	assert_int_equal(parse_open(OPEN("4294967299", "bandwidth", "1", "2", "1", "true"), &back),
			 -EINVAL);
}

static void close_bounds(void **state)
{
	char err[160];
	uint32_t f = 0;
	uint8_t k = 9;
	json_t *j = rreadmsg_close(RREAD_READ, 77);

	assert_int_equal(rreadmsg_parse_close(j, &k, &f, err, sizeof(err)), 0);
	assert_int_equal(f, 77);
	assert_int_equal(k, RREAD_READ);
	json_object_set_new(j, "more", json_true());
	assert_int_equal(rreadmsg_parse_close(j, &k, &f, err, sizeof(err)), -EINVAL);
	json_decref(j);
	j = rreadmsg_close(RREAD_RECV, 78);
	assert_string_equal(json_string_value(json_object_get(j, "kind")), "recv");
	assert_int_equal(rreadmsg_parse_close(j, &k, &f, err, sizeof(err)), 0);
	assert_int_equal(k, RREAD_RECV);
	assert_int_equal(f, 78);
	json_decref(j);
	j = json_pack("{s:s, s:I}", "kind", "incast", "flow", (json_int_t)1);
	assert_int_equal(rreadmsg_parse_close(j, &k, &f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "kind"));
	json_decref(j);
}

/* @args of remote_grants, as a request on the wire, fit a sealed line */
static void assert_grants_fit_a_sealed_line(json_t *args)
{
	json_t *m = json_pack("{s:i, s:s, s:I, s:s, s:O}", "v", 2, "type", "req", "id",
			      (json_int_t)INT64_MAX, "op", RREAD_OP_GRANTS, "args", args);
	char *line = json_dumps(m, JSON_COMPACT);

	assert_true(strlen(line) <= PEER_MAX_PLAIN);
	free(line);
	json_decref(m);
}

static void grants_bounds(void **state)
{
	struct rread_grant g[RREAD_GRANTS_MAX + 1], back[RREAD_GRANTS_MAX];
	size_t n;
	uint8_t k;
	char err[160];
	json_t *j, *m;

	for (size_t i = 0; i <= RREAD_GRANTS_MAX; i++)
		g[i] = (struct rread_grant){ .flow = 4294967295u - (uint32_t)i,
					     .rate_bps = RREAD_RATE_MAX - i,
					     .chunk = i % 2 ? RREAD_CHUNK_MAX - (uint32_t)i : 0 };
	j = rreadmsg_grants(RREAD_RECV, g, RREAD_GRANTS_MAX + 1); /* builds at most the maximum */
	assert_int_equal(json_array_size(json_object_get(j, "grants")), RREAD_GRANTS_MAX);
	assert_int_equal(rreadmsg_parse_grants(j, &k, back, &n, err, sizeof(err)), 0);
	assert_int_equal(k, RREAD_RECV);
	assert_int_equal(n, RREAD_GRANTS_MAX);
	for (size_t i = 0; i < n; i++)
		assert_true(g[i].flow == back[i].flow && g[i].rate_bps == back[i].rate_bps &&
			    g[i].chunk == back[i].chunk);
	/* the largest message, as a request on the wire, fits a sealed line */
	assert_grants_fit_a_sealed_line(j);
	/* one more is refused */
	json_array_append_new(json_object_get(j, "grants"), json_pack("[i, i]", 1, 1));
	assert_int_equal(rreadmsg_parse_grants(j, &k, back, &n, err, sizeof(err)), -EINVAL);
	json_decref(j);
#define GR(s) json_loads("{\"kind\":\"read\",\"grants\":" s "}", 0, NULL)
	{
		static const char *const bad[] = { "[[0,1]]", "[[1,-1]]", "[[1,10000000000001]]",
						   "[[1]]", "[[1,2,255]]", "[[1,2,1073741825]]",
						   "[[1,2,-1]]", "[[1,2,5120,4]]", "[[1,2,\"5K\"]]",
						   "[{\"flow\":1}]", "[[1,1.5]]", "{}", "[[\"1\",1]]" };

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			j = json_loads(bad[i], 0, NULL);
			m = json_pack("{s:s, s:o}", "kind", "read", "grants", j);
			assert_int_equal(rreadmsg_parse_grants(m, &k, back, &n, err, sizeof(err)),
					 -EINVAL);
			json_decref(m);
		}
	}
	/* the chunk is optional, 0 = no say */
	j = GR("[[9,1000,5120],[10,0],[11,5,0]]");
	assert_int_equal(rreadmsg_parse_grants(j, &k, back, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 3);
	assert_true(back[0].flow == 9 && back[0].rate_bps == 1000 && back[0].chunk == 5120);
	assert_true(back[1].chunk == 0 && back[2].chunk == 0 && back[2].rate_bps == 5);
	json_decref(j);
	j = GR("[]");
	assert_int_equal(rreadmsg_parse_grants(j, &k, back, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	assert_int_equal(k, RREAD_READ);
	json_decref(j);
	j = json_loads("{\"kind\":\"write\",\"grants\":[]}", 0, NULL);
	assert_int_equal(rreadmsg_parse_grants(j, &k, back, &n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "kind"));
	json_decref(j);
}

/* A throughput READ flow's grant: [flow, ops_per_s, chunk, "ops"], its
 * own bound; a bandwidth entry next to it keeps its form (an older
 * requester reads those). */
static void grants_ops(void **state)
{
	struct rread_grant g[RREAD_GRANTS_MAX], back[RREAD_GRANTS_MAX];
	size_t n;
	uint8_t k;
	char err[160];
	json_t *j, *m;

	for (size_t i = 0; i < RREAD_GRANTS_MAX; i++)
		g[i] = (struct rread_grant){ .flow = 4294967295u - (uint32_t)i,
					     .rate_bps = i % 2 ? RREAD_OPS_MAX - i : RREAD_RATE_MAX,
					     .chunk = RREAD_CHUNK_MAX, .ops = i % 2 };
	j = rreadmsg_grants(RREAD_READ, g, RREAD_GRANTS_MAX);
	assert_int_equal(json_array_size(json_array_get(json_object_get(j, "grants"), 0)), 3);
	assert_int_equal(json_array_size(json_array_get(json_object_get(j, "grants"), 1)), 4);
	assert_string_equal(json_string_value(json_array_get(json_array_get(
				    json_object_get(j, "grants"), 1), 3)), "ops");
	assert_int_equal(rreadmsg_parse_grants(j, &k, back, &n, err, sizeof(err)), 0);
	assert_int_equal(n, RREAD_GRANTS_MAX);
	for (size_t i = 0; i < n; i++)
		assert_true(g[i].flow == back[i].flow && g[i].rate_bps == back[i].rate_bps &&
			    g[i].chunk == back[i].chunk && g[i].ops == back[i].ops);
	/* every entry in the longer form still fits a sealed line */
	for (size_t i = 0; i < RREAD_GRANTS_MAX; i++)
		g[i] = (struct rread_grant){ .flow = 4294967295u, .rate_bps = RREAD_OPS_MAX,
					     .chunk = RREAD_CHUNK_MAX, .ops = true };
	json_decref(j);
	j = rreadmsg_grants(RREAD_READ, g, RREAD_GRANTS_MAX);
	assert_grants_fit_a_sealed_line(j);
	json_decref(j);
	j = GR("[[9,200000,0,\"ops\"],[10,0,0,\"ops\"],[11,10000000000,256,\"ops\"],[12,7]]");
	assert_int_equal(rreadmsg_parse_grants(j, &k, back, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 4);
	assert_true(back[0].ops && back[0].rate_bps == 200000 && back[0].chunk == 0);
	assert_true(back[1].ops && back[1].rate_bps == 0);
	assert_true(back[2].ops && back[2].rate_bps == RREAD_OPS_MAX && back[2].chunk == 256);
	assert_true(!back[3].ops && back[3].rate_bps == 7);
	json_decref(j);
	{
		/* the unit's value and type, the ops bound (below the bit/s
		 * one), a fifth member, the chunk's bounds in this form */
		static const char *const bad[] = {
			"[[1,2,0,\"bps\"]]", "[[1,2,0,\"OPS\"]]", "[[1,2,0,\"\"]]",
			"[[1,2,0,1]]", "[[1,2,0,null]]", "[[1,10000000001,0,\"ops\"]]",
			"[[1,-1,0,\"ops\"]]", "[[0,1,0,\"ops\"]]", "[[1,2,0,\"ops\",0]]",
			"[[1,2,255,\"ops\"]]", "[[1,2,\"ops\"]]", "[[1,2,0,[\"ops\"]]]",
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			j = json_loads(bad[i], 0, NULL);
			assert_non_null(j);
			m = json_pack("{s:s, s:o}", "kind", "read", "grants", j);
			assert_int_equal(rreadmsg_parse_grants(m, &k, back, &n, err, sizeof(err)),
					 -EINVAL);
			assert_non_null(strstr(err, "grants[0]"));
			json_decref(m);
		}
	}
	/* kind recv has no throughput flows: no "ops" there */
	j = json_loads("{\"kind\":\"recv\",\"grants\":[[1,2,0,\"ops\"]]}", 0, NULL);
	assert_int_equal(rreadmsg_parse_grants(j, &k, back, &n, err, sizeof(err)), -EINVAL);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(open_roundtrip_and_bounds),
		cmocka_unit_test(close_bounds),
		cmocka_unit_test(grants_bounds),
		cmocka_unit_test(grants_ops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

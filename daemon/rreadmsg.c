// SPDX-License-Identifier: MIT
/* Remote READ control's messages (see rreadmsg.h): every byte comes from
 * another host, so each member is checked for presence, type and range
 * before anything is taken from it.
 * May call: nothing of the daemon (config.h for its enum only): the peer
 * channel's fuzzer links it alone. */
#include "rreadmsg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "shm_abi.h"

static const char *const class_names[] = { JST_CLASS_NAME_LIST };

const char *rreadmsg_class_name(int cls)
{
	return cls >= 0 && cls < JST_CLASS_COUNT ? class_names[cls] : "?";
}

static int bad(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s", what);
	return -EINVAL;
}

const char *rreadmsg_kind_name(int kind)
{
	return kind == RREAD_READ ? RREAD_KIND_READ : kind == RREAD_RECV ? RREAD_KIND_RECV : "?";
}

static int check_kind(const char *name, uint8_t *kind, char *err, size_t errlen)
{
	if (!strcmp(name, RREAD_KIND_READ))
		*kind = RREAD_READ;
	else if (!strcmp(name, RREAD_KIND_RECV))
		*kind = RREAD_RECV;
	else {
		snprintf(err, errlen, "kind \"%.32s\" is not \"%s\" or \"%s\"", name,
			 RREAD_KIND_READ, RREAD_KIND_RECV);
		return -EINVAL;
	}
	return 0;
}

int rreadmsg_parse_open(json_t *args, struct rread_open *o, char *err, size_t errlen)
{
	json_int_t flow, qpn, pqpn, weight;
	const char *kind, *cls;
	uint8_t k, c;
	json_error_t je;
	int active;

	if (json_unpack_ex(args, &je, JSON_STRICT, "{s:s, s:I, s:s, s:I, s:I, s:I, s:b}", "kind",
			   &kind, "flow", &flow, "class", &cls, "qpn", &qpn, "peer_qpn", &pqpn,
			   "weight", &weight, "active", &active))
		return bad(err, errlen, je.text);
	if (check_kind(kind, &k, err, errlen))
		return -EINVAL;
	if (flow < 1 || flow > UINT32_MAX)
		return bad(err, errlen, "flow must be 1..4294967295");
	if (qpn < 0 || qpn > 0xffffff || pqpn < 0 || pqpn > 0xffffff)
		return bad(err, errlen, "qpn and peer_qpn must be QP numbers (0..16777215)");
	if (weight < 1 || weight > RREAD_WEIGHT_MAX)
		return bad(err, errlen, "weight must be 1..1000");
	if (!strcmp(cls, class_names[FLOW_CLASS_BANDWIDTH]))
		c = FLOW_CLASS_BANDWIDTH;
	else if (k == RREAD_RECV && !strcmp(cls, class_names[FLOW_CLASS_LATENCY]))
		c = FLOW_CLASS_LATENCY; /* a latency flow that targets the receiver */
	else if (k == RREAD_READ && !strcmp(cls, class_names[FLOW_CLASS_THROUGHPUT]))
		c = FLOW_CLASS_THROUGHPUT; /* small READs in batches: paced by ops */
	else
		return bad(err, errlen,
			   k == RREAD_RECV ? "class must be \"bandwidth\" or \"latency\""
					   : "class must be \"bandwidth\" or \"throughput\"");
	*o = (struct rread_open){ .kind = k, .flow = (uint32_t)flow, .cls = c,
				  .qpn = (uint32_t)qpn, .peer_qpn = (uint32_t)pqpn,
				  .weight = (uint32_t)weight, .active = active };
	return 0;
}

int rreadmsg_parse_close(json_t *args, uint8_t *k, uint32_t *flow, char *err, size_t errlen)
{
	const char *kind;
	json_error_t je;
	json_int_t f;

	if (json_unpack_ex(args, &je, JSON_STRICT, "{s:s, s:I}", "kind", &kind, "flow", &f))
		return bad(err, errlen, je.text);
	if (check_kind(kind, k, err, errlen))
		return -EINVAL;
	if (f < 1 || f > UINT32_MAX)
		return bad(err, errlen, "flow must be 1..4294967295");
	*flow = (uint32_t)f;
	return 0;
}

int rreadmsg_parse_grants(json_t *args, uint8_t *k, struct rread_grant *g, size_t *n,
			  char *err, size_t errlen)
{
	const char *kind;
	json_error_t je;
	json_t *arr, *e;
	size_t i;

	*n = 0;
	if (json_unpack_ex(args, &je, JSON_STRICT, "{s:s, s:o}", "kind", &kind, "grants", &arr))
		return bad(err, errlen, je.text);
	if (check_kind(kind, k, err, errlen))
		return -EINVAL;
	if (!json_is_array(arr) || json_array_size(arr) > RREAD_GRANTS_MAX) {
		snprintf(err, errlen, "grants must be an array of at most %d", RREAD_GRANTS_MAX);
		return -EINVAL;
	}
	json_array_foreach(arr, i, e) {
		json_t *f = json_array_get(e, 0), *r = json_array_get(e, 1), *c = json_array_get(e, 2);
		json_t *u = json_array_get(e, 3);
		json_int_t fv, rv, cv = 0;
		bool ops = u != NULL;

		/* [flow, rate_bps], [flow, rate_bps, chunk] or [flow, ops_per_s,
		 * chunk, "ops"] (a throughput READ flow's) */
		if (!json_is_array(e) || json_array_size(e) < 2 || json_array_size(e) > 4 ||
		    !json_is_integer(f) || !json_is_integer(r) || (c && !json_is_integer(c)) ||
		    (u && !json_is_string(u))) {
			snprintf(err, errlen, "grants[%zu] is not [flow, rate, chunk, unit]", i);
			return -EINVAL;
		}
		/* (kind recv has no throughput flows) */
		if (u && (strcmp(json_string_value(u), RREAD_UNIT_OPS) || *k != RREAD_READ)) {
			snprintf(err, errlen,
				 "grants[%zu]: the unit must be \"%s\", of kind \"%s\"", i,
				 RREAD_UNIT_OPS, RREAD_KIND_READ);
			return -EINVAL;
		}
		fv = json_integer_value(f);
		rv = json_integer_value(r);
		if (c)
			cv = json_integer_value(c);
		if (fv < 1 || fv > UINT32_MAX || rv < 0 ||
		    (uint64_t)rv > (ops ? RREAD_OPS_MAX : RREAD_RATE_MAX)) {
			snprintf(err, errlen, "grants[%zu]: flow 1..4294967295, %s 0..%llu", i,
				 ops ? "ops_per_s" : "rate_bps",
				 ops ? RREAD_OPS_MAX : RREAD_RATE_MAX);
			return -EINVAL;
		}
		if (cv && (cv < RREAD_CHUNK_MIN || cv > RREAD_CHUNK_MAX)) {
			snprintf(err, errlen, "grants[%zu]: chunk 0, or %u..%u", i, RREAD_CHUNK_MIN,
				 RREAD_CHUNK_MAX);
			return -EINVAL;
		}
		g[i] = (struct rread_grant){ .flow = (uint32_t)fv, .rate_bps = (uint64_t)rv,
					     .chunk = (uint32_t)cv, .ops = ops };
	}
	*n = i;
	return 0;
}

json_t *rreadmsg_open(const struct rread_open *o)
{
	return json_pack("{s:s, s:I, s:s, s:I, s:I, s:I, s:b}", "kind", rreadmsg_kind_name(o->kind),
			 "flow",
			 (json_int_t)o->flow, "class", rreadmsg_class_name(o->cls),
			 "qpn", (json_int_t)o->qpn, "peer_qpn", (json_int_t)o->peer_qpn, "weight",
			 (json_int_t)o->weight, "active", o->active);
}

json_t *rreadmsg_close(uint8_t kind, uint32_t flow)
{
	return json_pack("{s:s, s:I}", "kind", rreadmsg_kind_name(kind), "flow", (json_int_t)flow);
}

json_t *rreadmsg_grants(uint8_t kind, const struct rread_grant *g, size_t n)
{
	json_t *arr = json_array(), *r;

	if (!arr)
		return NULL;
	for (size_t i = 0; i < n && i < RREAD_GRANTS_MAX; i++)
		if (json_array_append_new(arr, g[i].ops
				? json_pack("[I, I, I, s]", (json_int_t)g[i].flow,
					    (json_int_t)g[i].rate_bps, (json_int_t)g[i].chunk,
					    RREAD_UNIT_OPS)
				: g[i].chunk
				? json_pack("[I, I, I]", (json_int_t)g[i].flow,
					    (json_int_t)g[i].rate_bps, (json_int_t)g[i].chunk)
				: json_pack("[I, I]", (json_int_t)g[i].flow,
					    (json_int_t)g[i].rate_bps))) {
			json_decref(arr);
			return NULL;
		}
	r = json_pack("{s:s, s:o}", "kind", rreadmsg_kind_name(kind), "grants", arr);
	return r;
}

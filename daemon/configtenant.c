// SPDX-License-Identifier: MIT
/* The configuration's "tenants" array (justitiad.json(5)): its fields, how
 * each is read and printed back, and the checks of a rule.  The policy
 * itself is daemon/tenant.c.  Models layer, part of the configuration;
 * may call: configparse (the walker's messages), config (class names). */
#include "configschema.h"

#include <string.h>

/* tenants[]: "uid" or "gid", a number 0 .. 4294967294 */
static int parse_id(struct ctx *x, json_t *v, int64_t *dst)
{
	json_int_t n;

	if (!json_is_integer(v))
		return configparse_reject(x, false, "expected a user or group id, got %s",
					  configparse_type_name(v));
	n = json_integer_value(v);
	if (n < 0 || n > 4294967294ll)
		return configparse_reject(x, false, "%lld is out of range (0..4294967294)",
					  (long long)n);
	*dst = n;
	return 0;
}

static int parse_uid(struct ctx *x, json_t *v, void *dst)
{
	return parse_id(x, v, &((struct config_tenant *)dst)->uid);
}

static int parse_gid(struct ctx *x, json_t *v, void *dst)
{
	return parse_id(x, v, &((struct config_tenant *)dst)->gid);
}

static json_t *dump_uid(const void *src, bool *leave_out)
{
	const struct config_tenant *t = src;

	*leave_out = t->uid < 0;
	return json_integer(t->uid);
}

static json_t *dump_gid(const void *src, bool *leave_out)
{
	const struct config_tenant *t = src;

	*leave_out = t->gid < 0;
	return json_integer(t->gid);
}

/* "classes": a non-empty array of class names */
static int parse_classes(struct ctx *x, json_t *v, void *dst)
{
	struct config_tenant *t = dst;
	unsigned set = 0;
	size_t i;
	json_t *e;

	if (!json_is_array(v) || !json_array_size(v))
		return configparse_reject(x, false, "expected a non-empty array of classes, got %s",
					  configparse_type_name(v));
	json_array_foreach(v, i, e) {
		enum flow_class c;
		const char *s;
		char q[64];
		int rc;

		configparse_push_index(x, i);
		rc = configparse_get_string(x, e, false, &s);
		if (!rc && config_class_parse(s, &c))
			rc = configparse_reject(x, false,
						"unknown class %s (latency, throughput, bandwidth)",
						configparse_quote(q, sizeof(q), s));
		x->depth--;
		if (rc)
			return rc;
		set |= 1u << c;
	}
	t->classes = set;
	return 0;
}

static json_t *dump_classes(const void *src, bool *leave_out)
{
	const struct config_tenant *t = src;
	json_t *a = json_array();

	*leave_out = false;
	for (int c = FLOW_CLASS_LATENCY; c <= FLOW_CLASS_BANDWIDTH; c++)
		if (t->classes & (1u << c))
			json_array_append_new(a, json_string(config_class_name((enum flow_class)c)));
	return a;
}

static int check_tenant(struct ctx *x, json_t *obj, void *base)
{
	const struct config_tenant *t = base, *all = x->c->tenants;
	size_t i = x->path[x->depth - 1].index;

	if ((t->uid >= 0) == (t->gid >= 0))
		return configparse_reject(x, false, "needs exactly one of \"uid\" or \"gid\"");
	(void)obj;
	for (size_t j = 0; j < i; j++)
		if (all[j].uid == t->uid && all[j].gid == t->gid)
			return configparse_reject(x, false, "duplicate of tenants[%zu] (%s %lld)", j,
						  t->uid >= 0 ? "uid" : "gid",
						  (long long)(t->uid >= 0 ? t->uid : t->gid));
	return 0;
}

static const struct config_tenant tenant_init = {
	.uid = -1, .gid = -1, .max_weight = 1000,
	.classes = 1u << FLOW_CLASS_LATENCY | 1u << FLOW_CLASS_THROUGHPUT |
		   1u << FLOW_CLASS_BANDWIDTH,
};
static const struct field tenant_fields[] = {
	{ "uid", T_FN, 0, sizeof(struct config_tenant), .parse = parse_uid, .dump = dump_uid },
	{ "gid", T_FN, 0, sizeof(struct config_tenant), .parse = parse_gid, .dump = dump_gid },
	{ "classes", T_FN, 0, sizeof(struct config_tenant), .parse = parse_classes,
	  .dump = dump_classes },
	{ "max_weight", T_INT, AT(struct config_tenant, max_weight), 1, 1000 },
};
const struct section configtenant_section = { tenant_fields, ARRAY_SIZE(tenant_fields),
					       sizeof(tenant_init), &tenant_init, check_tenant };

// SPDX-License-Identifier: MIT
/* The tenants policy (see tenant.h): rules matched by the kernel's uid and
 * gid of a client, applied to the class and weight of its flows.  Models
 * layer; may call: config (class names). */
#include "tenant.h"

#include <stdio.h>

const struct config_tenant *tenant_rule(const struct config *c, uid_t uid, gid_t gid)
{
	for (size_t i = 0; i < c->n_tenants; i++)
		if (c->tenants[i].uid >= 0 && (uid_t)c->tenants[i].uid == uid)
			return &c->tenants[i];
	if (uid == 0)
		return NULL; /* root is limited only by its own rule */
	for (size_t i = 0; i < c->n_tenants; i++)
		if (c->tenants[i].gid >= 0 && (gid_t)c->tenants[i].gid == gid)
			return &c->tenants[i];
	return NULL;
}

int tenant_allows(const struct config_tenant *t, enum flow_class cls)
{
	return !t || (t->classes & (1u << cls));
}

int tenant_enforce(const struct config_tenant *t, enum flow_class *cls, uint32_t *weight,
		   char *why, size_t len)
{
	static const enum flow_class least_first[] = { FLOW_CLASS_BANDWIDTH, FLOW_CLASS_THROUGHPUT,
						       FLOW_CLASS_LATENCY };
	const char *who = t && t->uid >= 0 ? "uid" : "gid";
	long long id = t ? (t->uid >= 0 ? t->uid : t->gid) : 0;
	int changed = 0, n = 0;

	if (!t)
		return 0;
	if (!tenant_allows(t, *cls)) {
		enum flow_class want = *cls;

		for (size_t i = 0; i < sizeof(least_first) / sizeof(least_first[0]); i++)
			if (tenant_allows(t, least_first[i])) {
				*cls = least_first[i];
				break;
			}
		n = snprintf(why, len, "class %s is not allowed for %s %lld: %s",
			     config_class_name(want), who, id, config_class_name(*cls));
		changed = 1;
	}
	if (*weight > t->max_weight) {
		if (n >= 0 && (size_t)n < len)
			snprintf(why + n, len - (size_t)n, "%sweight %u capped at %u for %s %lld",
				 changed ? "; " : "", *weight, t->max_weight, who, id);
		*weight = t->max_weight;
		changed = 1;
	}
	return changed;
}

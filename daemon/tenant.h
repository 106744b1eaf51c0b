/* SPDX-License-Identifier: MIT */
/* The operator's policy for tenants (justitiad.json(5), "tenants"): which
 * classes the processes of a user or group may have and how much weight
 * they may ask for.  The user and group are the kernel's (SO_PEERCRED on
 * the control socket), never what a process says about itself. */
#ifndef JUSTITIAD_TENANT_H
#define JUSTITIAD_TENANT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/* The rule for a process of @uid (primary group @gid): the first rule
 * naming @uid, else the first naming @gid; NULL when none does (no limit).
 * uid 0 is limited only by a rule that names uid 0. */
const struct config_tenant *tenant_rule(const struct config *c, uid_t uid, gid_t gid);
/* Whether @t (NULL: no rule) allows class @cls. */
int tenant_allows(const struct config_tenant *t, enum flow_class cls);
/* Hold a flow of class *@cls and weight *@weight to @t: a class @t does not
 * allow becomes the least protected one it allows (bandwidth, throughput,
 * latency, in that order), a weight above its max_weight is capped.
 * Returns 1 when something changed (said in @why), else 0. */
int tenant_enforce(const struct config_tenant *t, enum flow_class *cls, uint32_t *weight,
		   char *why, size_t len);

#endif

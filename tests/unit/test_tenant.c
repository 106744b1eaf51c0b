// SPDX-License-Identifier: MIT
/* Unit tests of daemon/tenant.c and the configuration's "tenants" array:
 * which rule holds a process (its uid first, then its group; root only by
 * its own rule), what a rule does to a flow's class and weight, and what
 * the configuration refuses (file:line:col messages), with the effective
 * configuration printing the rules back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../daemon/config.c"
#include "../../daemon/configtenant.c"
#include "../../daemon/configdump.c"
#include "../../daemon/configparse.c"
#include "../../daemon/tenant.c"
#include "../../common/jsonpos.c"

#define RULES                                                                                      \
	"{\"tenants\": [\n"                                                                        \
	"  {\"uid\": 1000, \"classes\": [\"bandwidth\"], \"max_weight\": 10},\n"                   \
	"  {\"gid\": 100, \"classes\": [\"throughput\", \"bandwidth\"]},\n"                        \
	"  {\"uid\": 1001, \"classes\": [\"latency\"]}\n"                                          \
	"]}"

static void load(const char *text, struct config *c)
{
	char err[512] = "";
	int rc = config_parse_buffer("t.json", text, strlen(text), c, err, sizeof(err));

	if (rc)
		fail_msg("unexpected error %d: %s", rc, err);
}

static void refused(const char *text, const char *expect)
{
	struct config c;
	char err[512] = "";

	assert_int_equal(config_parse_buffer("t.json", text, strlen(text), &c, err, sizeof(err)),
			 -EINVAL);
	if (!strstr(err, expect))
		fail_msg("expected \"%s\" in \"%s\"", expect, err);
}

static void rules_match_uid_then_group(void **state)
{
	struct config c;

	(void)state;
	load(RULES, &c);
	assert_int_equal(c.n_tenants, 3);
	assert_ptr_equal(tenant_rule(&c, 1000, 100), &c.tenants[0]); /* uid before gid */
	assert_ptr_equal(tenant_rule(&c, 1002, 100), &c.tenants[1]);
	assert_ptr_equal(tenant_rule(&c, 1001, 5), &c.tenants[2]);
	assert_null(tenant_rule(&c, 1002, 5));  /* no rule: no limit */
	assert_null(tenant_rule(&c, 0, 100));   /* root: only a rule naming uid 0 */
	assert_int_equal(c.tenants[1].max_weight, 1000); /* the default */
	config_free(&c);
}

static void enforce_class_and_weight(void **state)
{
	struct config c;
	enum flow_class cls;
	uint32_t w;
	char why[160] = "";

	(void)state;
	load(RULES, &c);
	/* a latency flow of weight 500 for uid 1000: bandwidth, weight 10 */
	cls = FLOW_CLASS_LATENCY;
	w = 500;
	assert_int_equal(tenant_enforce(&c.tenants[0], &cls, &w, why, sizeof(why)), 1);
	assert_int_equal(cls, FLOW_CLASS_BANDWIDTH);
	assert_int_equal(w, 10);
	assert_string_equal(why, "class latency is not allowed for uid 1000: bandwidth; "
				 "weight 500 capped at 10 for uid 1000");
	/* group 100 may not be latency: the least protected class it has */
	cls = FLOW_CLASS_LATENCY;
	w = 1;
	assert_int_equal(tenant_enforce(&c.tenants[1], &cls, &w, why, sizeof(why)), 1);
	assert_int_equal(cls, FLOW_CLASS_BANDWIDTH);
	assert_string_equal(why, "class latency is not allowed for gid 100: bandwidth");
	/* only latency allowed: a bandwidth flow becomes latency */
	cls = FLOW_CLASS_BANDWIDTH;
	assert_int_equal(tenant_enforce(&c.tenants[2], &cls, &w, why, sizeof(why)), 1);
	assert_int_equal(cls, FLOW_CLASS_LATENCY);
	/* allowed as asked, or no rule: unchanged */
	cls = FLOW_CLASS_THROUGHPUT;
	w = 1000;
	assert_int_equal(tenant_enforce(&c.tenants[1], &cls, &w, why, sizeof(why)), 0);
	assert_int_equal(tenant_enforce(NULL, &cls, &w, why, sizeof(why)), 0);
	assert_int_equal(cls, FLOW_CLASS_THROUGHPUT);
	assert_int_equal(w, 1000);
	assert_true(tenant_allows(NULL, FLOW_CLASS_LATENCY));
	assert_false(tenant_allows(&c.tenants[0], FLOW_CLASS_THROUGHPUT));
	config_free(&c);
}

static void bad_rules_are_refused(void **state)
{
	(void)state;
	refused("{\"tenants\": [{\"classes\": [\"latency\"]}]}", "exactly one of");
	refused("{\"tenants\": [{\"uid\": 1, \"gid\": 2}]}", "exactly one of");
	refused("{\"tenants\": [{\"uid\": -1}]}", "out of range");
	refused("{\"tenants\": [{\"uid\": \"root\"}]}", "expected a user or group id");
	refused("{\"tenants\": [{\"uid\": 1, \"classes\": []}]}", "non-empty array");
	refused("{\"tenants\": [{\"uid\": 1, \"classes\": [\"fast\"]}]}", "unknown class");
	refused("{\"tenants\": [{\"uid\": 1, \"max_weight\": 0}]}", "out of range");
	refused("{\"tenants\": [{\"uid\": 1, \"cls\": []}]}", "cls");
	refused("{\"tenants\": [{\"uid\": 7}, {\"uid\": 7}]}", "duplicate of tenants[0]");
	/* the position of the bad element's value */
	refused("{\"tenants\": [\n {\"uid\": 1},\n {\"gid\": 2, \"classes\": [\"x\"]}]}",
		"t.json:3:");
}

static void effective_config_prints_rules(void **state)
{
	struct config c, again;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	load(RULES, &c);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(config_dump(f, &c), 0);
	fclose(f);
	assert_non_null(strstr(text, "\"uid\": 1000"));
	assert_non_null(strstr(text, "\"gid\": 100"));
	load(text, &again);
	assert_int_equal(again.n_tenants, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(again.tenants[i].uid, c.tenants[i].uid);
		assert_int_equal(again.tenants[i].gid, c.tenants[i].gid);
		assert_int_equal(again.tenants[i].classes, c.tenants[i].classes);
		assert_int_equal(again.tenants[i].max_weight, c.tenants[i].max_weight);
	}
	free(text);
	config_free(&c);
	config_free(&again);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rules_match_uid_then_group),
		cmocka_unit_test(enforce_class_and_weight),
		cmocka_unit_test(bad_rules_are_refused),
		cmocka_unit_test(effective_config_prints_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/* Unit tests of tools/ctl_show.c: justctl's replies as text (status,
 * flows, set, version), also from sparse and malformed replies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../tools/ctl_show.c"
#include "../../tools/ctl_text.c"
#include "ctl_test.h"

#define UNUSED __attribute__((unused))

/* ------------------------------------------------------------ helpers */

/* Run a show_* function on a reply written as JSON text. */
static char *render(void (*show)(const json_t *, FILE *), const char *reply)
{
	struct capture c;
	json_t *j = load(reply);
	char *s;

	cap_open(&c);
	show(j, c.f);
	s = strdup(cap_text(&c));
	cap_free(&c);
	json_decref(j);
	return s;
}

static void expect_render(void (*show)(const json_t *, FILE *), const char *reply,
			  const char *want)
{
	char *got = render(show, reply);

	if (strcmp(got, want))
		fail_msg("rendered:\n%s\nwanted:\n%s", got, want);
	free(got);
}

/* ------------------------------------------------------------ replies */

static void status_table(void **state UNUSED)
{
	expect_render(ctl_show_status, status_reply, status_text);
}

static void status_sparse(void **state UNUSED)
{
	/* no measurement, reference down with an error, no devices */
	expect_render(ctl_show_status,
		      "{\"v\":1,\"ok\":true,\"controller\":{\"mode\":\"unattainable\","
		      "\"current99_ns\":null,\"reference\":{\"state\":\"down\",\"peer\":null,"
		      "\"error\":\"connect: No route to host\",\"samples\":0}},\"devices\":[]}",
		      "daemon:      justitiad -, pid -, up -\n"
		      "config:      -\n"
		      "socket:      -\n"
		      "instance:    -\n"
		      "mode:        unattainable\n"
		      "target p99:  -\n"
		      "latency:     no measurement yet\n"
		      "safe util:   - of -\n"
		      "reference:   down, peer -, 0 samples, error: connect: No route to host\n"
		      "clients:     - (max -)\n"
		      "flows:       - (max -, - per client)\n"
		      "classes:     latency -, throughput -, bandwidth -\n"
		      "\n"
		      "no devices\n");
	/* an instance given as a string is shown as well */
	{
		char *t = render(ctl_show_status, "{\"daemon\":{\"instance\":\"a1\"}}");

		assert_non_null(strstr(t, "\ninstance:    a1\n"));
		free(t);
	}
	/* wrong types everywhere: no crash, dashes */
	free(render(ctl_show_status,
		    "{\"daemon\":3,\"controller\":[],\"devices\":{},\"counts\":\"x\"}"));
	free(render(ctl_show_status, "{\"devices\":[1,null,{\"name\":7,\"port\":-1}]}"));
}

/* the QP watcher's line: on with its counts, off with its reason */
static void status_qpwatch(void **state UNUSED)
{
	char *t = render(ctl_show_status, "{\"counts\":{\"unmanaged\":2},\"qpwatch\":{\"state\":\"on\","
					"\"mode\":\"fentry\",\"reason\":null,\"qps\":5,\"lost\":0}}");

	assert_non_null(strstr(t, "\nqpwatch:     on (fentry), 5 user QPs, 2 unmanaged\n\n"));
	free(t);
	t = render(ctl_show_status, "{\"counts\":{\"unmanaged\":0},\"qpwatch\":{\"state\":\"on\","
				"\"mode\":\"kprobe\",\"reason\":null,\"qps\":1,\"lost\":3}}");
	assert_non_null(strstr(t, "\nqpwatch:     on (kprobe), 1 user QPs, 0 unmanaged, records lost\n"));
	free(t);
	t = render(ctl_show_status, "{\"counts\":{\"unmanaged\":null},\"qpwatch\":{\"state\":\"off\","
				"\"mode\":null,\"reason\":\"ib_core is not loaded\\u001b[2J\"}}");
	assert_non_null(strstr(t, "\nqpwatch:     off: ib_core is not loaded?[2J\n"));
	free(t);
	/* an older daemon has no watcher: no line at all */
	t = render(ctl_show_status, "{\"counts\":{}}");
	assert_null(strstr(t, "qpwatch"));
	free(t);
}

/* the isolation controller's lines: port, MaxRate source, floor, trace,
 * calibration */
static void status_controller(void **state UNUSED)
{
	char *t = render(ctl_show_status,
			 "{\"controller\":{\"mode\":\"normal\",\"reference\":{\"state\":\"up\"},"
			 "\"max_rate_source\":\"calibrated\",\"device\":{\"name\":\"rxe1\","
			 "\"port\":1},\"floor_bps\":200000000,\"action\":\"decrease\","
			 "\"unattainable\":true,\"trace\":[{\"t_ms\":1000,\"min_bps\":200000000,"
			 "\"max_bps\":400000000},{\"t_ms\":3500,\"min_bps\":300000000,"
			 "\"max_bps\":350000000}],\"calibration\":{\"state\":\"done\","
			 "\"max_rate_bps\":9500000000,\"error\":null}}}");

	assert_non_null(strstr(t, "\ncontroller:  rxe1/1, max rate from calibrated, floor "
				  "200.0 Mbit/s, last step: decrease, target unattainable\n"));
	assert_non_null(strstr(t, "\ntrace:       safe util 200.0 Mbit/s .. 400.0 Mbit/s over the "
				  "last 2.5 s\n"));
	assert_non_null(strstr(t, "\ncalibration: done, measured 9.5 Gbit/s\n"));
	free(t);
	/* the QPs of the measurement, when the calibration file has them */
	t = render(ctl_show_status, "{\"controller\":{\"max_rate_source\":\"calibrated\","
				"\"trace\":[],\"calibration\":{\"state\":\"done\","
				"\"max_rate_bps\":326400000,\"qps\":8,\"error\":null}}}");
	assert_non_null(strstr(t, "\ncalibration: done, measured 326.4 Mbit/s over 8 QPs\n"));
	free(t);
	t = render(ctl_show_status, "{\"controller\":{\"max_rate_source\":\"link\",\"trace\":[],"
				"\"calibration\":{\"state\":\"failed\",\"max_rate_bps\":null,"
				"\"error\":\"no reference peer is up\"}}}");
	assert_non_null(
		strstr(t, "\ncontroller:  -/-, max rate from link, floor -, last step: -\n"));
	assert_null(strstr(t, "trace:"));
	assert_non_null(strstr(t, "\ncalibration: failed, measured -, error: no reference peer is "
				  "up\n"));
	free(t);
	/* a throughput flow's rate is in operations */
	t = render(ctl_show_flows, "{\"flows\":[{\"id\":3,\"class\":\"throughput\","
			       "\"paced_rate_bps\":null,\"paced_ops_per_s\":2400000}]}");
	assert_non_null(strstr(t, "2.4 Mop/s"));
	free(t);
}

static void flows_table(void **state UNUSED)
{
	expect_render(ctl_show_flows, flows_reply, flows_text);
	expect_render(ctl_show_flows, "{\"v\":1,\"ok\":true,\"flows\":[]}", "no flows\n");
	expect_render(ctl_show_flows, "{\"v\":1,\"ok\":true}", "no flows\n");
}

/* Receiver-side views: a flow's grant from its receiver, the incoming
 * flows served here in their own table, READ flows in theirs, the counts
 * in status. */
static void flows_incoming(void **state UNUSED)
{
	char *got = render(ctl_show_flows,
		"{\"flows\":[{\"id\":3,\"pid\":9,\"comm\":\"wr\",\"class\":\"bandwidth\","
		"\"remote\":{\"kind\":\"recv\",\"state\":\"registered\",\"peer\":\"10.0.0.3:7471\","
		"\"grant_bps\":400000000,\"warning\":null}}],"
		"\"remote\":[{\"kind\":\"recv\",\"peer\":\"10.0.0.1:7471\",\"flow\":5,\"qpn\":17,"
		"\"local_qpn\":18,\"class\":\"bandwidth\",\"weight\":1,\"active\":true,"
		"\"share_bps\":300000000},{\"kind\":\"read\",\"peer\":\"10.0.0.2:7471\",\"flow\":6,"
		"\"qpn\":19,\"local_qpn\":20,\"class\":\"bandwidth\",\"weight\":1,"
		"\"active\":true,\"share_bps\":null}]}");

	assert_non_null(strstr(got, "receiver: 10.0.0.3:7471 grants"));
	assert_non_null(strstr(got, "incoming flows served here"));
	assert_non_null(strstr(got, "remote READ flows served here"));
	assert_true(strstr(got, "remote READ flows served here") < strstr(got, "incoming flows"));
	free(got);
	got = render(ctl_show_status,
		"{\"remote_read\":{\"served\":{\"flows\":3,\"refused\":0,\"incoming\":"
		"{\"latency\":1,\"bandwidth\":1}},\"requested\":{\"registered\":0,"
		"\"unmanaged\":0}}}");
	assert_non_null(strstr(got, "serving 1 flows"));
	assert_non_null(strstr(got, "1 latency, 1 bandwidth flows of other hosts arrive here"));
	free(got);
}

/* A throughput READ flow: its grant from the responder and its share
 * served here are in operations/s. */
static void flows_throughput_read(void **state UNUSED)
{
	char *got = render(ctl_show_flows,
		"{\"flows\":[{\"id\":4,\"pid\":9,\"comm\":\"kv\",\"class\":\"throughput\","
		"\"paced_ops_per_s\":250000,"
		"\"remote\":{\"kind\":\"read\",\"state\":\"registered\",\"peer\":\"10.0.0.1:7471\","
		"\"grant_bps\":null,\"grant_ops_per_s\":250000,\"warning\":null}}],"
		"\"remote\":[{\"kind\":\"read\",\"peer\":\"10.0.0.2:7471\",\"flow\":6,"
		"\"qpn\":19,\"local_qpn\":20,\"class\":\"throughput\",\"weight\":1,"
		"\"active\":true,\"share_bps\":null,\"share_ops_per_s\":1200000}]}");

	assert_non_null(strstr(got, "remote READ: 10.0.0.1:7471 grants 250.0 kop/s"));
	assert_non_null(strstr(got, "1.2 Mop/s"));
	assert_null(strstr(got, "bit/s"));
	free(got);
}

static void set_and_version(void **state UNUSED)
{
	expect_render(ctl_show_set, "{\"v\":1,\"ok\":true,\"changed\":{\"target99_us\":200}}",
		      "target99_us: 200\n");
	expect_render(ctl_show_set,
		      "{\"v\":1,\"ok\":true,\"changed\":{\"max_rate_bps\":{\"rxe0\":400000000},"
		      "\"policy\":\"ignore_latency\"}}",
		      "max_rate_bps: {\"rxe0\":400000000}\npolicy: ignore_latency\n");
	expect_render(ctl_show_set,
		      "{\"v\":1,\"ok\":true,\"changed\":{\"max_rate_bps\":25000000000,"
		      "\"devices\":2}}",
		      "max_rate_bps: 25.0 Gbit/s\ndevices: 2\n");
	expect_render(ctl_show_set, "{\"v\":1,\"ok\":true,\"changed\":{}}", "nothing changed\n");
	expect_render(ctl_show_version, "{\"v\":1,\"ok\":true,\"version\":\"0.1.0\",\"protocol\":1}",
		      "justctl " JUSTITIA_VERSION " (protocol 1)\njustitiad 0.1.0 (protocol 1)\n");
	expect_render(ctl_show_version, "{\"v\":1,\"ok\":true}",
		      "justctl " JUSTITIA_VERSION " (protocol 1)\njustitiad -\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(status_table),
		cmocka_unit_test(status_sparse),
		cmocka_unit_test(status_qpwatch),
		cmocka_unit_test(status_controller),
		cmocka_unit_test(flows_table),
		cmocka_unit_test(flows_incoming),
		cmocka_unit_test(flows_throughput_read),
		cmocka_unit_test(set_and_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

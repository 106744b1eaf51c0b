// SPDX-License-Identifier: MIT
/* Unit tests of daemon/refresp.c, the reference flow's responder, that need
 * no RDMA device: what peers may make the daemon register through ref_open
 * (responders: pinned memory and QPs), per connection, per peer host and in
 * total.  #includes refresp.c to reach its statics and links the daemon's
 * other objects. */
#include <arpa/inet.h>

#include "../../daemon/refresp.c"
#include "../../daemon/justitiad.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

uint64_t daemon_now_ns(void)
{
	return clock_now_ns();
}

static struct sockaddr_storage host(const char *ip)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

	s4->sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
	return ss;
}

/* What refresp_open does after resp_admit() said yes, without a device. */
static void add(struct refflow *rf, uint64_t conn, const char *ip, size_t len)
{
	struct ref_responder *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->conn = conn;
	r->host = host(ip);
	r->len = len;
	r->next = rf->resp;
	rf->resp = r;
	rf->n_resp++;
	rf->resp_bytes += len;
}

static void free_all(struct refflow *rf)
{
	while (rf->resp)
		refresp_free(rf, rf->resp);
}

static int admit(struct refflow *rf, uint64_t conn, const char *ip, size_t len, char *why)
{
	struct sockaddr_storage ss = host(ip);

	return resp_admit(rf, conn, &ss, len, why, 160);
}

/* The attack of issue 16: one peer host opens many connections, each with
 * REF_MAX_RESPONDERS responders of REF_MAX_BUF.  Before the fix only the
 * per-connection count was bounded: 128 connections x 4 x 4 MiB = 2 GiB. */
static void one_host_many_connections(void **state)
{
	struct refflow rf = { 0 };
	size_t granted = 0, bytes = 0;
	char why[160];

	(void)state;
	for (uint64_t conn = 1; conn <= 128; conn++)
		for (int i = 0; i < REF_MAX_RESPONDERS; i++)
			if (!admit(&rf, conn, "192.0.2.1", REF_MAX_BUF, why)) {
				add(&rf, conn, "192.0.2.1", REF_MAX_BUF);
				granted++;
				bytes += REF_MAX_BUF;
			}
	assert_true(granted <= REF_MAX_RESP_PER_HOST);
	assert_true(bytes <= REF_MAX_RESP_BYTES_PER_HOST);
	assert_true(granted >= 1); /* a calibration still fits */
	assert_int_equal(admit(&rf, 999, "192.0.2.1", 10, why), -EBUSY);
	assert_non_null(strstr(why, "per peer host"));
	/* another host is not affected */
	assert_int_equal(admit(&rf, 1000, "192.0.2.2", REF_MAX_BUF, why), 0);
	free_all(&rf);
	assert_int_equal(rf.n_resp, 0);
	assert_int_equal(rf.resp_bytes, 0);
}

static void per_connection(void **state)
{
	struct refflow rf = { 0 };
	char why[160];

	(void)state;
	for (int i = 0; i < REF_MAX_RESPONDERS; i++) {
		assert_int_equal(admit(&rf, 7, "192.0.2.1", 10, why), 0);
		add(&rf, 7, "192.0.2.1", 10);
	}
	assert_int_equal(admit(&rf, 7, "192.0.2.1", 10, why), -EBUSY);
	assert_non_null(strstr(why, "per connection"));
	free_all(&rf);
}

/* Many peer hosts together stay under the global bounds. */
static void all_hosts(void **state)
{
	struct refflow rf = { 0 };
	size_t bytes = 0, n = 0;
	char why[160], ip[32];

	(void)state;
	for (int h = 1; h <= 64; h++) {
		snprintf(ip, sizeof(ip), "198.51.100.%d", h);
		for (uint64_t conn = 0; conn < 2; conn++)
			for (int i = 0; i < REF_MAX_RESPONDERS; i++)
				if (!admit(&rf, (uint64_t)h * 10 + conn, ip, REF_MAX_BUF, why)) {
					add(&rf, (uint64_t)h * 10 + conn, ip, REF_MAX_BUF);
					n++;
					bytes += REF_MAX_BUF;
				}
	}
	assert_true(n <= REF_MAX_RESP_TOTAL);
	assert_true(bytes <= REF_MAX_RESP_BYTES_TOTAL);
	assert_int_equal(admit(&rf, 5000, "203.0.113.1", REF_MAX_BUF, why), -EBUSY);
	assert_non_null(strstr(why, "all peers"));
	/* small responders of reference flows still fit the count bound */
	free_all(&rf);
	for (int h = 1; h <= REF_MAX_RESP_TOTAL; h++) {
		snprintf(ip, sizeof(ip), "198.51.100.%d", h);
		assert_int_equal(admit(&rf, (uint64_t)h, ip, REF_MSG_BYTES, why), 0);
		add(&rf, (uint64_t)h, ip, REF_MSG_BYTES);
	}
	assert_int_equal(admit(&rf, 9999, "203.0.113.1", REF_MSG_BYTES, why), -EBUSY);
	free_all(&rf);
}

/* A calibration over CONFIG_CALIB_MAX_QPS QPs (one responder of
 * REF_CALIB_BUF each) fits beside the same connection's reference flow;
 * another calibration of the same host at once does not. */
static void calibration_sessions(void **state)
{
	struct refflow rf = { 0 };
	char why[160];
	int n = 0;

	(void)state;
	assert_int_equal(admit(&rf, 3, "192.0.2.1", 64, why), 0);
	add(&rf, 3, "192.0.2.1", 64);
	for (int i = 0; i < CONFIG_CALIB_MAX_QPS; i++) {
		assert_int_equal(admit(&rf, 3, "192.0.2.1", REF_CALIB_BUF, why), 0);
		add(&rf, 3, "192.0.2.1", REF_CALIB_BUF);
	}
	/* a second calibration from another connection of the host: bounded */
	while (!admit(&rf, 4, "192.0.2.1", REF_CALIB_BUF, why)) {
		add(&rf, 4, "192.0.2.1", REF_CALIB_BUF);
		n++;
	}
	assert_true(n < CONFIG_CALIB_MAX_QPS);
	assert_non_null(strstr(why, "per peer host"));
	assert_true(rf.resp_bytes <= REF_MAX_RESP_BYTES_PER_HOST);
	/* two hosts calibrating at once both get their QPs */
	free_all(&rf);
	for (int h = 1; h <= 2; h++)
		for (int i = 0; i < CONFIG_CALIB_MAX_QPS; i++) {
			char ip[32];

			snprintf(ip, sizeof(ip), "192.0.2.%d", h);
			assert_int_equal(admit(&rf, (uint64_t)h, ip, REF_CALIB_BUF, why), 0);
			add(&rf, (uint64_t)h, ip, REF_CALIB_BUF);
		}
	assert_true(rf.resp_bytes <= REF_MAX_RESP_BYTES_TOTAL);
	free_all(&rf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_host_many_connections),
		cmocka_unit_test(per_connection),
		cmocka_unit_test(all_hosts),
		cmocka_unit_test(calibration_sessions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/* What the tests of justctl's modules share (test_justctl, test_ctl_show):
 * a FILE * that captures what is written to it, JSON from test text, and
 * a status and a flows reply with the text justctl prints for them.
 * Include after <cmocka.h> and the modules under test. */
#ifndef JUSTITIA_TEST_CTL_TEST_H
#define JUSTITIA_TEST_CTL_TEST_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

struct capture {
	FILE *f;
	char *buf;
	size_t len;
};

__attribute__((unused)) static void cap_open(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
}

/* Close the stream; the text stays in c->buf (free with cap_free). */
__attribute__((unused)) static const char *cap_text(struct capture *c)
{
	if (c->f) {
		fclose(c->f);
		c->f = NULL;
	}
	return c->buf;
}

__attribute__((unused)) static void cap_free(struct capture *c)
{
	cap_text(c);
	free(c->buf);
	c->buf = NULL;
}

/* Split @line at spaces into a NULL-terminated argv (static storage). */
__attribute__((unused)) static int split(const char *line, char **argv, int max, char *store, size_t storelen)
{
	int argc = 0;
	char *p, *save = NULL;

	snprintf(store, storelen, "%s", line);
	for (p = strtok_r(store, " ", &save); p && argc < max - 1; p = strtok_r(NULL, " ", &save))
		argv[argc++] = p;
	argv[argc] = NULL;
	return argc;
}

__attribute__((unused)) static json_t *load(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);

	if (!j)
		fail_msg("bad test JSON at %d: %s", e.position, e.text);
	return j;
}

__attribute__((unused)) static const char status_reply[] =
	"{\"v\":1,\"ok\":true,\"id\":1,"
	"\"daemon\":{\"version\":\"0.1.0\",\"pid\":4242,\"uptime_ms\":3723000,"
	"\"config\":\"/etc/justitia/justitiad.json\",\"socket\":\"/run/justitia/justitiad.sock\","
	"\"instance\":3735928559},"
	"\"controller\":{\"mode\":\"normal\",\"target99_ns\":200000,\"current99_ns\":153200,"
	"\"p50_ns\":12100,\"p999_ns\":1250000,\"safe_util_bps\":20000000000,"
	"\"max_rate_bps\":25000000000,\"reference\":{\"state\":\"up\",\"peer\":\"10.0.0.2:7471\","
	"\"error\":null,\"samples\":12345}},"
	"\"devices\":[{\"name\":\"rxe0\",\"port\":1,\"gid_index\":1,\"max_rate_bps\":25000000000,"
	"\"chunk_bytes\":65536},{\"name\":\"mlx5_10\",\"port\":2,\"gid_index\":3,"
	"\"max_rate_bps\":100000000000,\"chunk_bytes\":1048576}],"
	"\"counts\":{\"clients\":3,\"flows\":7,\"latency\":2,\"throughput\":3,\"bandwidth\":2},"
	"\"limits\":{\"max_clients\":64,\"max_flows\":1024,\"max_flows_per_client\":64},"
	"\"future_field\":[1,2,3]}";

__attribute__((unused)) static const char status_text[] =
	"daemon:      justitiad 0.1.0, pid 4242, up 1h 2m 3s\n"
	"config:      /etc/justitia/justitiad.json\n"
	"socket:      /run/justitia/justitiad.sock\n"
	"instance:    3735928559\n"
	"mode:        normal\n"
	"target p99:  200.0 us\n"
	"latency:     p99 153.2 us (p50 12.1 us, p99.9 1.25 ms)\n"
	"safe util:   20.0 Gbit/s of 25.0 Gbit/s\n"
	"reference:   up, peer 10.0.0.2:7471, 12345 samples\n"
	"clients:     3 (max 64)\n"
	"flows:       7 (max 1024, 64 per client)\n"
	"classes:     latency 2, throughput 3, bandwidth 2\n"
	"\n"
	"DEVICE   PORT  GID      MAX RATE     CHUNK\n"
	"rxe0        1    1   25.0 Gbit/s  64.0 KiB\n"
	"mlx5_10     2    3  100.0 Gbit/s   1.0 MiB\n";

__attribute__((unused)) static const char flows_reply[] =
	"{\"v\":1,\"ok\":true,\"id\":1,\"flows\":["
	"{\"id\":1,\"pid\":4242,\"comm\":\"ib_write_lat\",\"class\":\"latency\","
	"\"device\":\"rxe0\",\"port\":1,\"qpn\":17,\"qp_type\":\"RC\",\"weight\":1,"
	"\"peer_qpn\":18,\"split\":\"none\","
	"\"bytes\":2048,\"ops\":1024,\"tokens\":0,\"paced_rate_bps\":null,\"warning\":null,"
	"\"managed\":true},"
	"{\"id\":12,\"pid\":777,\"comm\":\"ib_write_bw\",\"class\":\"bandwidth\","
	"\"device\":\"rxe0\",\"port\":1,\"qpn\":4660,\"qp_type\":\"RC\",\"weight\":2,"
	"\"peer_qpn\":null,"
	"\"split\":\"split\",\"bytes\":1610612736,\"ops\":24576,\"tokens\":96,"
	"\"paced_rate_bps\":25000000000,\"warning\":\"peer QP unknown\",\"managed\":true},"
	"{\"id\":13,\"pid\":778,\"comm\":\"evil\\u001b[2J\",\"class\":\"throughput\","
	"\"device\":\"rxe1\",\"port\":1,\"qpn\":99,\"bytes\":0,\"ops\":0,\"tokens\":0,"
	"\"paced_rate_bps\":0,\"warning\":null,\"managed\":false}]}";

__attribute__((unused)) static const char flows_text[] =
	"ID   PID  COMM          CLASS       DEVICE   QPN    BYTES    OPS  TOKENS         RATE  "
	"WARN\n"
	" 1  4242  ib_write_lat  latency     rxe0/1    17  2.0 KiB   1024       0            -  "
	"-\n"
	"12   777  ib_write_bw   bandwidth   rxe0/1  4660  1.5 GiB  24576      96  25.0 Gbit/s  "
	"peer QP unknown\n"
	"13   778  evil?[2J      throughput  rxe1/1    99      0 B      0       0      0 bit/s  "
	"unmanaged\n";

#endif

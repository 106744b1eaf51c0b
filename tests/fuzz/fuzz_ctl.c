// SPDX-License-Identifier: MIT
/* libFuzzer target for the control socket (daemon/ctl*.c): what
 * any local process may send justitiad, end to end over a real UNIX socket
 * (the daemon's loop and the fuzzer's client run in one thread, as in
 * tests/unit/test_ctl.c), every command's arguments included.  Checks that
 * nothing crashes, that every reply is one JSON object per line, and that a
 * client's flows are gone once it has closed.
 *
 *   make build/fuzz/fuzz_ctl
 *   build/fuzz/fuzz_ctl -max_total_time=60 tests/fuzz/corpus/ctl
 *
 * Input: the bytes the client sends (lines), then it closes.  No controller
 * runs (commands that need it say so), no peer daemon: split_peer answers
 * that it has none. */
#include "../../daemon/ctl.c"
#include "../../daemon/ctlcmd.c"
#include "../../daemon/ctlconn.c"
#include "../../daemon/ctlview.c"
#include "../../daemon/justitiad.h"
#include "../../daemon/wiring.h"

#include <jansson.h>

#include "clock.h"
#include "fuzz.h"

uint64_t daemon_now_ns(void)
{
	return clock_now_ns();
}

static struct daemon d;
static struct ctl c;

/* ctl_open with the daemon's view of @d, as main.c does */
static int open_ctl(void)
{
	struct ctl_env env = wiring_ctl_env(&d);

	return ctl_open(&c, &env);
}

static char dir[64];

/* (libFuzzer ends with exit()) */
static void cleanup(void)
{
	ctl_close(&c);
	rmdir(dir);
}

static void setup(void)
{
	log_init("fuzz_ctl", LOG_LVL_ERROR, 0);
	config_init_defaults(&d.cfg);
	snprintf(dir, sizeof(dir), "/tmp/fuzzctl-XXXXXX");
	if (!mkdtemp(dir))
		__builtin_trap();
	snprintf(d.cfg.runtime_dir, sizeof(d.cfg.runtime_dir), "%s", dir);
	snprintf(d.cfg.socket, sizeof(d.cfg.socket), "%s/s.sock", dir);
	d.cfg.limits.max_flows = 16;
	d.cfg.limits.max_flows_per_client = 8;
	d.cfg.devices = calloc(1, sizeof(*d.cfg.devices));
	d.cfg.n_devices = 1;
	d.cfg.devices[0] = (struct config_device){ .name = "fz0", .port = 1, .gid_index = -1,
						   .max_rate_bps = 10000000000ull,
						   .chunk_latency = 4096, .chunk_default = 1 << 20 };
	d.loop = ev_loop_new(EVFLAG_AUTO);
	d.start_ns = daemon_now_ns();
	d.config_path = "fuzz";
	d.ctl = &c;
	if (flows_init(&d.flows, &d.cfg, 7) || open_ctl())
		__builtin_trap();
	atexit(cleanup);
}

/* Read what the daemon answered so far; every complete line must be a JSON
 * object.  Returns -1 once the daemon closed. */
static int drain(int fd, char *buf, size_t *have, size_t cap)
{
	for (;;) {
		ssize_t n = recv(fd, buf + *have, cap - *have, MSG_DONTWAIT);
		char *nl;

		if (n == 0)
			return -1;
		if (n < 0)
			return 0;
		*have += (size_t)n;
		while ((nl = memchr(buf, '\n', *have))) {
			size_t len = (size_t)(nl - buf);
			json_t *j = json_loadb(buf, len, 0, NULL);

			CHECK(j && json_is_object(j));
			json_decref(j);
			memmove(buf, nl + 1, *have - len - 1);
			*have -= len + 1;
		}
		if (*have == cap)
			*have = 0; /* a longer reply than we keep: not checked */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[1 << 16];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct flows_counts fc;
	size_t off = 0, have = 0;
	int fd, closed = 0;

	if (!d.loop)
		setup();
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d.cfg.socket);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		__builtin_trap();
	ev_run(d.loop, EVRUN_NOWAIT);
	for (int i = 0; i < 1000 && !closed && off < size; i++) {
		ssize_t n = send(fd, data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0)
			off += (size_t)n;
		ev_run(d.loop, EVRUN_NOWAIT);
		closed = drain(fd, buf, &have, sizeof(buf)) < 0;
	}
	for (int i = 0; i < 4 && !closed; i++) {
		ev_run(d.loop, EVRUN_NOWAIT);
		closed = drain(fd, buf, &have, sizeof(buf)) < 0;
	}
	close(fd);
	for (int i = 0; i < 4; i++)
		ev_run(d.loop, EVRUN_NOWAIT);
	/* its flows went with it */
	flows_count(&d.flows, &fc);
	CHECK(fc.flows == 0 && fc.procs == 0);
	return 0;
}

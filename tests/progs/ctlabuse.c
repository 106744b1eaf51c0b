// SPDX-License-Identifier: MIT
/* ctlabuse: a hostile client of justitiad's control socket.
 *
 *   ctlabuse SOCKET MAX_CLIENTS MAX_FLOWS_PER_CLIENT MAX_REQUEST_BYTES
 *   ctlabuse flood SOCKET CONNECTIONS HOLD_MS      (as an unprivileged user)
 *
 * Sends malformed, unknown and oversized requests, opens more connections
 * than allowed, registers more flows than allowed, scribbles over the
 * shared memory it is given, and checks after each step that the daemon
 * answered with the documented error and still serves "status".  Prints one
 * "ok"/"not ok" line per check; exits 0 when all passed.
 * May call: common/proto (the control protocol, proto_send/proto_recv raw),
 * common/shm_abi.h, jansson and libc. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "shm_abi.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

#define STATUS_REQ "{\"v\":1,\"cmd\":\"status\"}\n"
#define VERSION_REQ "{\"v\":1,\"cmd\":\"version\"}\n"

static int failures;
static const char *sock_path;

static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		failures++;
}

static int connect_or_die(void)
{
	int fd = proto_connect(sock_path, 2000);

	if (fd < 0) {
		fprintf(stderr, "ctlabuse: connect %s: %s\n", sock_path, strerror(-fd));
		exit(1);
	}
	return fd;
}

/* Send raw bytes, read one reply line; returns the error code or "ok". */
static char *raw_call(int fd, const char *data, size_t len)
{
	static char code[64];
	char buf[65536];
	size_t got = 0;
	json_t *r;

	/* a refused connection may fail the send: its reply is already waiting */
	if (proto_send(fd, data, len, NULL, 0)) {
		/* fall through to read it */
	}
	while (got < sizeof(buf) - 1) {
		ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);

		if (n <= 0)
			return strcpy(code, n == 0 ? "eof" : "recv-failed");
		got += (size_t)n;
		if (memchr(buf, '\n', got))
			break;
	}
	buf[got] = 0;
	r = json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL);
	if (!r)
		return strcpy(code, "unparsable-reply");
	if (json_is_true(json_object_get(r, "ok")))
		strcpy(code, "ok");
	else
		snprintf(code, sizeof(code), "%s",
			 json_string_value(json_object_get(json_object_get(r, "error"), "code"))
				 ?: "no-code");
	json_decref(r);
	return code;
}

static int daemon_alive(void)
{
	int fd = proto_connect(sock_path, 2000), ok;

	if (fd < 0)
		return 0;
	ok = !strcmp(raw_call(fd, STATUS_REQ, strlen(STATUS_REQ)), "ok");
	close(fd);
	return ok;
}

static json_t *call(int fd, json_t *req, int *fds, int *nfds)
{
	int err = 0;
	json_t *r = proto_call(fd, req, 2000, fds, nfds, fds ? PROTO_MAX_FDS : 0, &err);

	json_decref(req);
	return r;
}

static const char *code_of(json_t *r)
{
	if (!r)
		return "no-reply";
	if (json_is_true(json_object_get(r, "ok")))
		return "ok";
	return json_string_value(json_object_get(json_object_get(r, "error"), "code")) ?: "?";
}

static void malformed(void)
{
	static const struct {
		const char *line, *want;
	} cases[] = {
		{ "not json at all\n", PROTO_E_BAD_JSON },
		{ "[1,2,3]\n", PROTO_E_BAD_REQUEST },
		{ "{}\n", PROTO_E_BAD_REQUEST },
		{ "{\"v\":2,\"cmd\":\"status\"}\n", PROTO_E_BAD_VERSION },
		{ "{\"v\":\"1\",\"cmd\":\"status\"}\n", PROTO_E_BAD_REQUEST },
		{ "{\"v\":1,\"cmd\":\"format_disk\"}\n", PROTO_E_UNKNOWN_COMMAND },
		{ "{\"v\":1,\"cmd\":\"flows\",\"bogus\":1}\n", PROTO_E_BAD_REQUEST },
		{ "{\"v\":1,\"cmd\":\"register_qp\",\"device\":\"x\",\"qpn\":1,\"qp_type\":\"RC\"}\n",
		  PROTO_E_BAD_REQUEST }, /* before hello */
		{ "{\"v\":1,\"cmd\":\"status\",\"v\":1}\n", PROTO_E_BAD_JSON }, /* duplicate key */
		{ "{\"v\":1,\"cmd\":\"set\",\"target99_us\":-5}\n", PROTO_E_BAD_REQUEST },
	};
	int fd = connect_or_die();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = raw_call(fd, cases[i].line, strlen(cases[i].line));

		check(!strcmp(got, cases[i].want), "malformed request %zu answered %s (want %s)", i,
		      got, cases[i].want);
	}
	/* binary garbage with NULs and invalid UTF-8 in one line */
	{
		char junk[300];

		for (size_t i = 0; i < sizeof(junk) - 1; i++)
			junk[i] = (char)(i * 37 + 1);
		junk[sizeof(junk) - 1] = '\n';
		for (size_t i = 0; i < sizeof(junk) - 1; i++)
			if (junk[i] == '\n')
				junk[i] = 0;
		check(!strcmp(raw_call(fd, junk, sizeof(junk)), PROTO_E_BAD_JSON),
		      "binary garbage answered bad_json");
	}
	close(fd);
	check(daemon_alive(), "daemon alive after malformed requests");
}

static void oversized(size_t max)
{
	int fd = connect_or_die();
	char *big = malloc(max + 2);
	const char *got;

	memset(big, ' ', max + 1);
	big[max + 1] = '\n';
	got = raw_call(fd, big, max + 2);
	check(!strcmp(got, PROTO_E_TOO_LARGE), "oversized request answered %s", got);
	free(big);
	close(fd);
	check(daemon_alive(), "daemon alive after an oversized request");
}

/* As root (an administrator): never turned away.  Beyond max_clients the
 * connections come from the administrators' reserve, which answers status
 * but registers no flows. */
static void too_many_clients(int max)
{
	int fds[1024], n = 0, answered = 0;
	const char *got;

	for (n = 0; n < max + 12 && n < 1024; n++) {
		fds[n] = connect_or_die();
		answered += !strcmp(raw_call(fds[n], VERSION_REQ, strlen(VERSION_REQ)), "ok");
	}
	check(answered == n, "root answered on all %d connections (max_clients %d): %d", n, max,
	      answered);
	got = raw_call(fds[n - 1], "{\"v\":1,\"cmd\":\"hello\",\"pid\":1,\"comm\":\"x\","
				   "\"role\":\"shim\"}\n", 63);
	check(!strcmp(got, PROTO_E_LIMIT), "hello on a reserved connection answered %s", got);
	while (n--)
		close(fds[n]);
	usleep(200000);
	check(daemon_alive(), "daemon alive after too many clients");
}

/* flood SOCKET N HOLD_MS: as an unprivileged user, N connections at once
 * (refused beyond the limits, with a limit error), a quarter of them with
 * half a request, some with a 1 MiB line, some asking for replies they
 * never read; held for HOLD_MS (more than the daemon's idle_timeout_ms),
 * then each is checked: refused, timed out, too large or disconnected,
 * never silently left hanging. */
static int flood(int n, int hold_ms)
{
	static char big[1 << 20];
	int *fds = calloc((size_t)n, sizeof(*fds)), connected = 0, refused = 0, timeouts = 0,
	    too_large = 0, closed = 0, open_left = 0;
	static const char half[] = "{\"v\":1,\"cmd\":\"sta";
	const char *got;

	memset(big, ' ', sizeof(big));
	big[sizeof(big) - 1] = '\n';
	for (int i = 0; i < n; i++) {
		fds[i] = proto_connect(sock_path, 2000);
		if (fds[i] < 0)
			continue;
		connected++;
		switch (i % 8) {
		case 0:
		case 1: /* half a line, then silence */
			send(fds[i], half, strlen(half), MSG_NOSIGNAL);
			break;
		case 2: /* a line of 1 MiB */
			send(fds[i], big, sizeof(big), MSG_NOSIGNAL | MSG_DONTWAIT);
			break;
		case 3: /* ask, never read */
			for (int k = 0; k < 64; k++)
				send(fds[i], STATUS_REQ, strlen(STATUS_REQ), MSG_NOSIGNAL | MSG_DONTWAIT);
			break;
		default: /* connect and say nothing */
			break;
		}
	}
	usleep((useconds_t)hold_ms * 1000);
	/* then every connection must come to an end: an answer or a close,
	 * however long a slow (emulated) machine takes to get to it (60 s) */
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int left = connected; left;) {
		struct pollfd *pf = calloc((size_t)n, sizeof(*pf));
		int np = 0;

		for (int i = 0; i < n; i++)
			if (fds[i] >= 0)
				pf[np++] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		left = np;
		if (np && poll(pf, (nfds_t)np, 100) > 0) {
			for (int k = 0; k < np; k++) {
				int i;

				if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				for (i = 0; i < n && fds[i] != pf[k].fd; i++)
					;
				if (i % 8 == 3) { /* its replies, then the end */
					char buf[65536];
					ssize_t r;

					while ((r = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
						;
					if (r < 0 && errno == EAGAIN)
						continue; /* more to come */
					closed++;
				} else {
					got = raw_call(fds[i], "", 0);
					if (!strcmp(got, PROTO_E_LIMIT))
						refused++;
					else if (!strcmp(got, "timeout"))
						timeouts++;
					else if (!strcmp(got, PROTO_E_TOO_LARGE))
						too_large++;
					else
						closed++;
				}
				close(fds[i]);
				fds[i] = -1;
				left--;
			}
		}
		free(pf);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > 60)
			break;
	}
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0) {
			open_left++;
			close(fds[i]);
		}
	printf("flood: %d connections, %d refused (limit), %d timed out, %d too large, "
	       "%d disconnected, %d still open\n", connected, refused, timeouts, too_large, closed,
	       open_left);
	check(refused > 0, "connections beyond the limits refused with limit");
	check(timeouts > 0, "idle and half-line connections closed with timeout");
	check(open_left == 0, "no connection left hanging without an answer (%d)", open_left);
	check(daemon_alive(), "daemon alive after the flood");
	free(fds);
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}

static void shm_abuse(int max_flows)
{
	int fd = connect_or_die(), fds[PROTO_MAX_FDS], nfds = 0, limited = 0;
	struct jst_shm_client *c = NULL;
	struct stat st;
	json_t *r;

	r = call(fd, json_pack("{s:i, s:s, s:i, s:s, s:s}", "v", 1, "cmd", "hello", "pid",
			       (int)getpid(), "comm", "ctlabuse", "role", "shim"),
		 fds, &nfds);
	check(r && !strcmp(code_of(r), "ok") && nfds == 2, "hello gives two descriptors");
	json_decref(r);
	if (nfds == 2) {
		void *g = NULL;

		fstat(fds[0], &st);
		check(mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0) ==
			      MAP_FAILED,
		      "the global segment cannot be mapped writable");
		g = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fds[0], 0);
		check(g != MAP_FAILED && ((struct jst_shm_global *)g)->magic == JST_SHM_GLOBAL_MAGIC,
		      "the global segment maps read-only with the right magic");
		/* nor by any other way: what every client reads, no client may
		 * rewrite (a memfd's read-only descriptor reopens read-write
		 * through /proc/self/fd unless the daemon sealed it) */
		{
			int seals = fcntl(fds[0], F_GET_SEALS), rw;
			char path[64];

			check(seals >= 0 && (seals & F_SEAL_FUTURE_WRITE) &&
				      (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) ==
					      (F_SEAL_SHRINK | F_SEAL_GROW),
			      "the global segment is sealed against writes and resizing (0x%x)", seals);
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
			rw = open(path, O_RDWR | O_CLOEXEC);
			if (rw >= 0) {
				void *w = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
					       MAP_SHARED, rw, 0);

				check(w == MAP_FAILED,
				      "reopened read-write through /proc, it still cannot be mapped writable");
				if (w != MAP_FAILED)
					munmap(w, (size_t)st.st_size);
				/* the same byte back: no harm if it went through */
				check(g == MAP_FAILED || pwrite(rw, g, 1, 0) < 0,
				      "reopened read-write through /proc, it cannot be written");
				check(ftruncate(rw, 0) < 0, "nor truncated");
				close(rw);
			} else {
				check(1, "it cannot even be reopened read-write (%s)", strerror(errno));
			}
			check(g == MAP_FAILED ||
				      mprotect(g, (size_t)st.st_size, PROT_READ | PROT_WRITE) != 0,
			      "its read-only mapping cannot be made writable");
		}
		fstat(fds[1], &st);
		c = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
		check(c != MAP_FAILED, "the client segment maps read-write");
	}
	for (int i = 0; i < max_flows + 1; i++) {
		r = call(fd, json_pack("{s:i, s:s, s:s, s:i, s:i, s:s, s:s}", "v", 1, "cmd",
				       "register_qp", "device", "rxe9", "port", 1, "qpn", 100 + i,
				       "qp_type", "RC", "class", "bw"),
			 NULL, NULL);
		if (!strcmp(code_of(r), PROTO_E_LIMIT))
			limited++;
		json_decref(r);
	}
	check(limited == 1, "flow %d of a process refused with limit", max_flows + 1);
	r = call(fd, json_pack("{s:i, s:s, s:s, s:i, s:s}", "v", 1, "cmd", "register_qp",
			       "device", "rxe9", "qpn", 99999999, "qp_type", "RC"),
		 NULL, NULL);
	check(!strcmp(code_of(r), PROTO_E_BAD_REQUEST), "qpn out of range refused");
	json_decref(r);
	r = call(fd, json_pack("{s:i, s:s, s:i}", "v", 1, "cmd", "unregister_qp", "flow", 1 << 30),
		 NULL, NULL);
	check(!strcmp(code_of(r), PROTO_E_NOT_FOUND), "unregistering a foreign flow: not_found");
	json_decref(r);
	if (c && c != MAP_FAILED) {
		struct jst_flow_stats *s = jst_shm_client_slot(c, 0);

		atomic_store(&s->bytes, 1000);
		usleep(300000); /* let the daemon read 1000 */
		atomic_store(&s->bytes, 5);      /* goes backwards: garbage */
		atomic_store(&s->ops, UINT64_MAX);
		/* another flow's counter grows faster than any RNIC could */
		atomic_store(&jst_shm_client_slot(c, 1)->bytes, 1ull << 62);
		memset(c, 0xff, sizeof(*c));     /* and the header too */
	}
	r = call(fd, json_pack("{s:i, s:s}", "v", 1, "cmd", "flows"), NULL, NULL);
	{
		json_t *f, *flows = json_object_get(r, "flows");
		size_t i;
		int flagged = 0, mine = 0;

		json_array_foreach(flows, i, f) {
			if (strcmp(json_string_value(json_object_get(f, "comm")) ?: "", "ctlabuse"))
				continue;
			mine++;
			if (json_is_false(json_object_get(f, "counters_valid")) &&
			    (json_integer_value(json_object_get(f, "bytes")) == 1000 ||
			     json_integer_value(json_object_get(f, "bytes")) == 0))
				flagged++;
		}
		check(mine == max_flows, "flows lists the %d flows (%d)", max_flows, mine);
		check(flagged == 2, "scribbled counters (backwards, impossibly fast) are flagged "
				    "and not believed (%d of 2)", flagged);
	}
	json_decref(r);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	close(fd);
	usleep(300000);
	fd = connect_or_die();
	r = call(fd, json_pack("{s:i, s:s}", "v", 1, "cmd", "flows"), NULL, NULL);
	{
		json_t *f, *flows = json_object_get(r, "flows");
		size_t i;
		int left = 0;

		json_array_foreach(flows, i, f)
			if (!strcmp(json_string_value(json_object_get(f, "comm")) ?: "", "ctlabuse"))
				left++;
		check(r && left == 0, "closing the connection freed every flow of the process");
	}
	json_decref(r);
	close(fd);
	check(daemon_alive(), "daemon alive after shared-memory abuse");
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "flood")) {
		sock_path = argv[2];
		return flood(atoi(argv[3]), atoi(argv[4]));
	}
	if (argc != 5) {
		fprintf(stderr, "usage: ctlabuse SOCKET MAX_CLIENTS MAX_FLOWS_PER_CLIENT "
				"MAX_REQUEST_BYTES\n");
		return 2;
	}
	sock_path = argv[1];
	malformed();
	oversized((size_t)atol(argv[4]));
	too_many_clients(atoi(argv[2]));
	shm_abuse(atoi(argv[3]));
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}

// SPDX-License-Identifier: MIT
/* flowreg: register fake flows with justitiad, like a shim would, and keep
 * them registered (for controller tests and CPU measurements).
 *
 *   flowreg SOCKET N [-c CLASS] [-d DEVICE] [-a] [-t SECONDS] [-r FILE]
 *
 * Registers N flows of CLASS (default bandwidth) on DEVICE (default rxe0)
 * over one connection.  With -a the flows look active: their byte and op
 * counters in the client shared memory grow every millisecond.  Exits after
 * SECONDS (default: on SIGTERM/SIGINT).  With -r, the JSON of the last
 * register_qp reply goes to FILE (its "warning" is the admission control's
 * verdict).  With -S it misbehaves: every millisecond it writes random
 * bytes over its client segment's header and one of its pages at random
 * (so, in time, over every slot), as a buggy or hostile application could.  Prints "registered N flows" once they
 * are.
 * May call: common/proto (the control protocol), common/shm_abi.h, jansson and
 * libc. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "shm_abi.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static json_t *call(int fd, json_t *req, int *fds, int *nfds)
{
	int err = 0;
	json_t *r = proto_call(fd, req, 5000, fds, nfds, fds ? PROTO_MAX_FDS : 0, &err);

	json_decref(req);
	if (!r)
		fprintf(stderr, "flowreg: no reply: %s\n", strerror(-err));
	return r;
}

static void usage(void)
{
	fprintf(stderr, "usage: flowreg SOCKET N [-c CLASS] [-d DEVICE] [-a] [-S] [-t SECONDS] "
			"[-r FILE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *cls = "bandwidth", *dev = "rxe0", *reply_file = NULL;
	int fds[PROTO_MAX_FDS], nfds = 0, fd, n, active = 0, scribble = 0, opt;
	unsigned int seed = (unsigned int)getpid();
	size_t seg_size = 0;
	struct jst_shm_client *seg = MAP_FAILED;
	double seconds = 0;
	uint32_t *slots;
	struct timespec t0, now;
	struct stat st;
	json_t *r;

	while ((opt = getopt(argc, argv, "c:d:aSt:r:")) != -1) {
		switch (opt) {
		case 'c':
			cls = optarg;
			break;
		case 'd':
			dev = optarg;
			break;
		case 'a':
			active = 1;
			break;
		case 'S':
			scribble = 1;
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'r':
			reply_file = optarg;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	n = atoi(argv[optind + 1]);
	if (n < 1 || n > 1 << 20)
		usage();
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	fd = proto_connect(argv[optind], 5000);
	if (fd < 0) {
		fprintf(stderr, "flowreg: connect %s: %s\n", argv[optind], strerror(-fd));
		return 1;
	}
	r = call(fd, json_pack("{s:i, s:s, s:i, s:s, s:s}", "v", 1, "cmd", "hello", "pid",
			       (int)getpid(), "comm", "flowreg", "role", "shim"),
		 fds, &nfds);
	if (!r || !json_is_true(json_object_get(r, "ok")) || nfds != 2) {
		fprintf(stderr, "flowreg: hello failed\n");
		return 1;
	}
	json_decref(r);
	if (!fstat(fds[1], &st)) {
		seg_size = (size_t)st.st_size;
		seg = mmap(NULL, seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
	}
	if (seg == MAP_FAILED) {
		perror("flowreg: mmap");
		return 1;
	}
	slots = calloc((size_t)n, sizeof(*slots));
	for (int i = 0; i < n; i++) {
		r = call(fd, json_pack("{s:i, s:s, s:s, s:i, s:i, s:s, s:s}", "v", 1, "cmd",
				       "register_qp", "device", dev, "port", 1, "qpn", 1000 + i,
				       "qp_type", "RC", "class", cls),
			 NULL, NULL);
		if (!r || !json_is_true(json_object_get(r, "ok"))) {
			fprintf(stderr, "flowreg: register_qp %d failed\n", i);
			return 1;
		}
		slots[i] = (uint32_t)json_integer_value(json_object_get(r, "app_slot"));
		if (i == n - 1 && reply_file) {
			FILE *f = fopen(reply_file, "w");

			if (f) {
				json_dumpf(r, f, JSON_COMPACT);
				fputc('\n', f);
				fclose(f);
			}
		}
		json_decref(r);
	}
	printf("registered %d flows\n", n);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop) {
		struct timespec ms = { 0, 1000000 };

		if (active)
			for (int i = 0; i < n; i++) {
				struct jst_flow_stats *s = jst_shm_client_slot(seg, slots[i]);

				atomic_fetch_add_explicit(&s->bytes, 4096, memory_order_relaxed);
				atomic_fetch_add_explicit(&s->ops, 1, memory_order_relaxed);
			}
		if (scribble) {
			/* the header and one page at random, in 64-bit words */
			volatile uint64_t *w = (volatile uint64_t *)(void *)seg;
			size_t words = seg_size / 8, page = 0;

			if (words > 512)
				page = ((size_t)rand_r(&seed) % (words / 512)) * 512;
			for (size_t i = 0; i < 16 && i < words; i++)
				w[i] = ((uint64_t)rand_r(&seed) << 33) ^ (uint64_t)rand_r(&seed);
			for (size_t i = page; i < page + 512 && i < words; i++)
				w[i] = ((uint64_t)rand_r(&seed) << 33) ^ (uint64_t)rand_r(&seed);
		}
		nanosleep(&ms, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (seconds > 0 &&
		    (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 >=
			    seconds)
			break;
	}
	close(fd);
	free(slots);
	return 0;
}

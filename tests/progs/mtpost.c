// SPDX-License-Identifier: MIT
/* mtpost: several threads post RDMA WRITEs, READs and SENDs of random sizes
 * through classic ibv_post_send at the same time, each keeping a window of
 * messages in flight, and verify every completion and every byte.  The
 * robustness tests (tests/vm/cases/47-robust.sh) run it under libjustitia.so
 * with small chunks, so that the messages are really split.
 *
 *   mtpost [-a DEV] [-b DEV] [-g GID_INDEX] [-t THREADS] [-n MSGS] [-D SECONDS]
 *          [-s MAX_SIZE] [-w WINDOW] [-S SEED] [-o OPS] [-T TIMEOUT]
 *          [--shared-qp] [--fork] [--ready FILE] [--hold FILE] [--expect FILE]
 *          [--stop FILE]
 *
 * Each of THREADS threads (default 4) has its own RC QP pair -- A on -a
 * (default rxe1) posts, B on -b (default rxe0) is its peer -- with its own
 * CQs and memory regions.  With --shared-qp all threads (default 2) post on
 * ONE pair, each post and each poll under the application's own mutex.  A
 * thread keeps WINDOW messages (default 4, each in its own buffer slot) in
 * flight and posts the next as soon as one completes: -n MSGS per thread
 * (default 100), or -D: for SECONDS.  Sizes are 1..MAX_SIZE (default 1 MiB),
 * a quarter of them small; -o: the opcodes, a comma list of write, read,
 * send (default all three: 40 % WRITE, 35 % READ, 25 % SEND).  -T: the QPs'
 * local ACK timeout exponent (default 18, about 1 s: Soft-RoCE under
 * emulation answers slowly, and Linux 6.1's rxe does not survive storms of
 * retransmissions well).  It checks that the send completions of each QP
 * come back in posting order, successful and with the right opcode, that
 * the receives come in order with the right length, that every byte arrived
 * and that nothing was written past the end of a message.
 *
 *   --fork         ibv_fork_init() first; once every thread has completed
 *                  two messages, fork() while they keep posting.  The child does
 *                  not touch the parent's verbs objects: it opens its own
 *                  device contexts and runs the same workload on its own
 *                  QPs; the parent finishes its own and waits for the child
 *                  (exit 0 only if the child exited 0).
 *   --ready FILE   written (the pid) once every thread completed a message
 *   --stop FILE    post no more once FILE exists (then finish what is in
 *                  flight, verify it, exit), even before -n or -D say so
 *   --hold FILE    after the transfers, before teardown: write FILE (the
 *                  pid) and wait until someone removes it (at most 120 s)
 *   --expect FILE  what was posted on the A QPs:
 *                  {"opcodes":{"RDMA_WRITE":{"wrs":..,"bytes":..},..},
 *                   "recv":{"wrs":..,"bytes":..}}
 * The child of --fork uses FILE.child for each of these.
 * Exit 0 when everything completed and verified.
 * May call: lib/mtpost_work (the workload), libibverbs and libc. */
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/mtpost.h"

/* PATH, or PATH.child (in @buf) in the child of --fork. */
static const char *role_path(const struct run *r, const char *path, char *buf, size_t len)
{
	if (!path || strcmp(r->role, "child"))
		return path;
	snprintf(buf, len, "%s.child", path);
	return buf;
}

static void write_pid_file(const char *path)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) || rename(tmp, path))
		mtpost_die("cannot write %s: %s", path, strerror(errno));
}

static void write_expect(struct run *r, const char *path)
{
	uint64_t wrs[OP_MAX] = { 0 }, bytes[OP_MAX] = { 0 };
	int first = 1;
	FILE *f;

	for (int i = 0; i < r->o->threads; i++)
		for (int op = 0; op < OP_MAX; op++) {
			wrs[op] += r->w[i].wrs[op];
			bytes[op] += r->w[i].bytes[op];
		}
	f = fopen(path, "w");
	if (!f)
		mtpost_die("cannot write %s", path);
	fputs("{\"opcodes\":{", f);
	for (int op = 0; op < OP_MAX; op++) {
		if (!wrs[op])
			continue;
		fprintf(f, "%s\"%s\":{\"wrs\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", first ? "" : ",",
			mtpost_op_name[op], wrs[op], bytes[op]);
		first = 0;
	}
	fprintf(f, "},\"recv\":{\"wrs\":%" PRIu64 ",\"bytes\":%" PRIu64 "}}\n", wrs[OP_SEND],
		bytes[OP_SEND]);
	if (fclose(f))
		mtpost_die("cannot write %s", path);
}

static void report(struct run *r)
{
	uint64_t msgs = 0, bytes = 0;

	for (int i = 0; i < r->o->threads; i++)
		for (int op = 0; op < OP_MAX; op++) {
			msgs += r->w[i].wrs[op];
			bytes += r->w[i].bytes[op];
		}
	printf("mtpost (%s, pid %d): %d threads on %d QP pair%s, %" PRIu64 " messages, %" PRIu64
	       " bytes, all verified in order\n", r->role, (int)getpid(), r->o->threads, r->npairs,
	       r->npairs == 1 ? "" : "s", msgs, bytes);
	fflush(stdout);
}

static void hold(const char *path)
{
	uint64_t until = mtpost_now_ns() + 120000000000ull;

	write_pid_file(path);
	while (access(path, F_OK) == 0 && mtpost_now_ns() < until)
		usleep(20000);
}

static int run_child(const struct options *o);

/* The whole workload of one process.  Returns the exit code. */
static int run(const struct options *o, const char *role)
{
	struct run r = { .o = o, .role = role };
	char b1[4096], b2[4096], b3[4096], b4[4096];
	const char *ready = role_path(&r, o->ready, b1, sizeof(b1));
	const char *holdf = role_path(&r, o->hold, b2, sizeof(b2));
	const char *expect = role_path(&r, o->expect, b3, sizeof(b3));
	const char *stop = role_path(&r, o->stop, b4, sizeof(b4));
	pid_t child = -1;
	int rc = 0;

	mtpost_setup(&r);
	mtpost_start_workers(&r);
	mtpost_wait_completed(&r, 1);
	if (ready)
		write_pid_file(ready);
	if (o->fork && !strcmp(role, "parent")) {
		/* fork while the threads keep posting (and the shim's progress
		 * thread works): the child gets none of them */
		mtpost_wait_completed(&r, 2);
		fflush(NULL);
		child = fork();
		if (child < 0)
			mtpost_die("fork: %s", strerror(errno));
		if (child == 0)
			exit(run_child(o));
		printf("mtpost (parent, pid %d): forked child %d\n", (int)getpid(), (int)child);
		fflush(stdout);
	}
	mtpost_join_workers(&r, stop);
	report(&r);
	if (child > 0) {
		int st;

		if (waitpid(child, &st, 0) != child)
			mtpost_die("waitpid: %s", strerror(errno));
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "mtpost (parent): the child %s %d\n",
				WIFEXITED(st) ? "exited" : "was killed by signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			rc = 1;
		} else {
			printf("mtpost (parent): the child exited 0\n");
		}
	}
	if (expect)
		write_expect(&r, expect);
	if (holdf)
		hold(holdf);
	mtpost_teardown(&r);
	return rc;
}

static int run_child(const struct options *o)
{
	mtpost_role = " (child)";
	return run(o, "child");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "shared-qp", no_argument, NULL, 'Q' },
		{ "fork", no_argument, NULL, 'F' },
		{ "ready", required_argument, NULL, 'R' },
		{ "hold", required_argument, NULL, 'H' },
		{ "expect", required_argument, NULL, 'E' },
		{ "stop", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	struct options o = {
		.dev_a = "rxe1", .dev_b = "rxe0", .gidx = 1, .threads = 4, .window = 4, .timeout = 18,
		.msgs = 100, .max_size = 1u << 20, .seed = 0x2545f4914f6cdd1dull,
		.ops = 1u << OP_WRITE | 1u << OP_READ | 1u << OP_SEND,
	};
	char *tok, *save;
	int c, threads_set = 0;

	while ((c = getopt_long(argc, argv, "a:b:g:t:n:D:s:w:S:o:T:", lopts, NULL)) != -1) {
		switch (c) {
		case 'a': o.dev_a = optarg; break;
		case 'b': o.dev_b = optarg; break;
		case 'g': o.gidx = atoi(optarg); break;
		case 't': o.threads = atoi(optarg); threads_set = 1; break;
		case 'n': o.msgs = atol(optarg); break;
		case 'D': o.seconds = atof(optarg); break;
		case 's': o.max_size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'w': o.window = atoi(optarg); break;
		case 'S': o.seed = strtoull(optarg, NULL, 0); break;
		case 'T': o.timeout = atoi(optarg); break;
		case 'o':
			o.ops = 0;
			for (tok = strtok_r(optarg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				int k = !strcmp(tok, "write") ? OP_WRITE : !strcmp(tok, "read") ? OP_READ
					: !strcmp(tok, "send") ? OP_SEND : -1;

				if (k < 0)
					mtpost_die("-o: %s is not write, read or send", tok);
				o.ops |= 1u << k;
			}
			break;
		case 'Q': o.shared = 1; break;
		case 'F': o.fork = 1; break;
		case 'R': o.ready = optarg; break;
		case 'H': o.hold = optarg; break;
		case 'E': o.expect = optarg; break;
		case 'P': o.stop = optarg; break;
		default:
			fprintf(stderr, "usage: mtpost [-a DEV] [-b DEV] [-g GID] [-t THREADS] [-n MSGS] "
					"[-D SECONDS] [-s MAX_SIZE] [-w WINDOW] [-S SEED] [-o OPS] [-T TIMEOUT] "
					"[--shared-qp] "
					"[--fork] [--ready FILE] [--hold FILE] [--expect FILE] "
					"[--stop FILE]\n");
			return 2;
		}
	}
	if (o.shared && !threads_set)
		o.threads = 2;
	if (o.threads < 1 || o.threads > MAX_THREADS || o.window < 1 || o.window > MAX_WINDOW ||
	    o.msgs < 1 || o.max_size < 1 || o.max_size > (64u << 20) || !o.ops ||
	    o.timeout < 0 || o.timeout > 31)
		mtpost_die("bad arguments: 1..%d threads, window 1..%d, 1..64 MiB messages",
			   MAX_THREADS, MAX_WINDOW);
	if (o.fork) {
		/* with fork support enabled, memory registered from now on is
		 * not inherited: the child must (and does) use only what it
		 * creates itself */
		int rc = ibv_fork_init();
		enum ibv_fork_status fs;

		if (rc)
			mtpost_die("ibv_fork_init failed: %s", strerror(rc));
		fs = ibv_is_fork_initialized();
		printf("mtpost: ibv_fork_init done (%s)\n",
		       fs == IBV_FORK_UNNEEDED ? "unneeded: the kernel copies pinned pages on fork"
		       : fs == IBV_FORK_ENABLED ? "enabled: registered memory is not inherited"
						: "disabled");
	}
	return run(&o, "parent");
}

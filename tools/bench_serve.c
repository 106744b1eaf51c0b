// SPDX-License-Identifier: MIT
/*
 * justbench's server loop (bench_serve.h).
 * May call: bench_session and libc (sockets, pthreads).
 */
#include "bench_serve.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct serve_session {
	struct bench_end end;
	atomic_bool *stop;
	unsigned id;
	int fd, rc;
	char err[512];
	pthread_t thread;
};

static void *session_main(void *arg)
{
	struct serve_session *s = arg;

	s->rc = bench_server_session(&s->end, s->fd, s->stop, s->err, sizeof(s->err));
	close(s->fd);
	return NULL;
}

/* The next client, or -1 (stopped, or accept failed: said on @log). */
static int next_client(int lfd, atomic_bool *stop, FILE *log)
{
	while (!atomic_load(stop)) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), one = 1;

		if (fd >= 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return fd;
		}
		if (errno != EINTR) {
			fprintf(log, "justbench: accept: %s\n", strerror(errno));
			break;
		}
	}
	return -1;
}

int bench_serve(const struct bench_end *e, int lfd, unsigned clients, bool persist,
		atomic_bool *stop, FILE *log)
{
	struct serve_session s[BENCH_SERVE_MAX];
	int rc = 0;

	if (clients < 1 || clients > BENCH_SERVE_MAX)
		return 1;
	do {
		unsigned n = 0;

		rc = 0;
		for (; n < clients; n++) {
			s[n] = (struct serve_session){ .end = *e, .stop = stop, .id = n + 1 };
			s[n].fd = next_client(lfd, stop, log);
			if (s[n].fd < 0)
				break;
			if (pthread_create(&s[n].thread, NULL, session_main, &s[n])) {
				fprintf(log, "justbench: cannot start a session thread\n");
				close(s[n].fd);
				break;
			}
		}
		if (n < clients)
			rc = 1;
		for (unsigned i = 0; i < n; i++) {
			pthread_join(s[i].thread, NULL);
			if (s[i].rc) {
				fprintf(log, "justbench: session %u failed: %s\n", s[i].id, s[i].err);
				rc = 1;
			} else {
				fprintf(log, "justbench: session %u done\n", s[i].id);
			}
		}
	} while (persist && !rc && !atomic_load(stop));
	return rc;
}

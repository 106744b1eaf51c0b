// SPDX-License-Identifier: MIT
/*
 * justbench: several RDMA flows at once between two devices or hosts (docs/justbench.1).
 *
 *	justbench server [-p PORT] [-d DEV] [-g GID] [-i PORT] [--persist] [--clients N]
 *	justbench client HOST [FLOW...] [-f FLOW]... [-s FILE] [-t TIME] [--rperf] [--json] ...
 *		[--mode flows|poll-cost|bidir|reuse|overhead|overlap|progress] [--reuse LIST]
 *		[--rotate LIST] [--buffers N] [--compute LIST] [--response-delay LIST]
 *	justbench local DEV_A DEV_B [FLOW...] ...	(both ends in one process, A initiates)
 *
 * This file is the command line and the sockets; bench_session.c runs a session over a
 * connected socket, bench_run.c the traffic, bench_report.c prints the results.
 * May call: bench_scenario, bench_serve, bench_session, bench_flow, bench_mode, bench_sweep,
 * bench_report and
 * libc
 * (sockets, getopt).
 */
#include "bench_mode.h"
#include "bench_scenario.h"
#include "bench_serve.h"
#include "bench_session.h"
#include "bench_sweep.h"

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef JUSTITIA_VERSION
#define JUSTITIA_VERSION "0.1.0"
#endif

#define EXIT_USAGE   2
#define DEFAULT_PORT 18600
#define ERR_MAX	     512

enum mode { MODE_SERVER, MODE_CLIENT, MODE_LOCAL };

struct opts {
	enum mode mode;
	const char *host;     /* client */
	const char *dev_b;    /* local: the serving device */
	struct bench_end end; /* this end (local: the initiating device) */
	int tcp_port;
	bool persist, rperf, json, dry_run;
	unsigned clients; /* server: sessions at once (a hot spot) */
	enum bench_mode bench_mode; /* --mode */
	struct bench_sweep_cfg sweep; /* --reuse, --rotate, --buffers, --compute, --response-delay */
	bool sweep_set;
	const char *output; /* -o: the JSON report to this file too */
	uint64_t duration_us;
	struct bench_scenario sc; /* the scenario's flows, then the command line's */
};

static atomic_bool stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_flag, true);
}

static void usage(FILE *out)
{
	fputs("usage: justbench server [-p PORT] [-d DEV] [-g GID_INDEX] [-i IB_PORT] [--persist]\n"
	      "                        [--clients N]\n"
	      "       justbench client HOST [FLOW...] [options]\n"
	      "       justbench local DEV_A DEV_B [FLOW...] [options]\n"
	      "options: -f FLOW (repeatable), -s SCENARIO.json, -t DURATION (default 5s),\n"
	      "         -p PORT (18600), -d DEV, -g GID_INDEX, -i IB_PORT, --rperf, --json,\n"
	      "         -o REPORT.json, --no-classify, --dry-run,\n"
	      "         --mode flows|poll-cost|bidir|reuse|overhead|overlap|progress,\n"
	      "         --reuse PCT,... --rotate N,... --buffers N (reuse), --compute TIME,...\n"
	      "         --response-delay TIME,... (progress)\n"
	      "FLOW:    CLASS[:VERB[:SIZE]][:KEY=VALUE,...]   e.g. lat:send:2  "
	      "tput:write:64:batch=16\n"
	      "         bw:write:1M:window=4,delay=3s,duration=3s   (see justbench(1))\n",
	      out);
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("justbench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (justbench --help)\n", stderr);
	return EXIT_USAGE;
}

static int parse_int(const char *s, int min, int max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < min || v > max)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int add_flow(struct opts *o, const char *spec)
{
	char err[ERR_MAX];

	if (o->sc.n == BENCH_FLOWS_MAX) {
		fprintf(stderr, "justbench: too many flows (at most %d)\n", BENCH_FLOWS_MAX);
		return EXIT_USAGE;
	}
	if (bench_flow_parse(spec, (unsigned)o->sc.n, &o->sc.flows[o->sc.n], err, sizeof(err))) {
		fprintf(stderr, "justbench: flow \"%s\": %s\n", spec, err);
		return EXIT_USAGE;
	}
	o->sc.n++;
	return 0;
}

/* Options and positional arguments; returns 0 or an exit code. */
static int parse_args(int argc, char **argv, struct opts *o, const char ***specs, int *nspecs)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "device", required_argument, NULL, 'd' },
		{ "gid-index", required_argument, NULL, 'g' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "flow", required_argument, NULL, 'f' },
		{ "scenario", required_argument, NULL, 's' },
		{ "time", required_argument, NULL, 't' },
		{ "persist", no_argument, NULL, 'P' },
		{ "rperf", no_argument, NULL, 'R' },
		{ "json", no_argument, NULL, 'J' },
		{ "no-classify", no_argument, NULL, 'N' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "output", required_argument, NULL, 'o' },
		{ "mode", required_argument, NULL, 'm' },
		{ "reuse", required_argument, NULL, 1001 },
		{ "rotate", required_argument, NULL, 1002 },
		{ "buffers", required_argument, NULL, 1003 },
		{ "compute", required_argument, NULL, 1004 },
		{ "clients", required_argument, NULL, 1005 },
		{ "response-delay", required_argument, NULL, 1006 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *scenario = NULL;
	char err[ERR_MAX];
	int c, rc, nflag = 0;
	static const char *flagged[BENCH_FLOWS_MAX + 1];

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:d:g:i:f:s:t:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_int(optarg, 1, 65535, &o->tcp_port))
				return usage_error("invalid port \"%s\"", optarg);
			break;
		case 'd':
			o->end.dev = optarg;
			break;
		case 'g':
			if (parse_int(optarg, 0, 255, &o->end.gid_index))
				return usage_error("invalid GID index \"%s\"", optarg);
			break;
		case 'i':
			if (parse_int(optarg, 1, 255, &o->end.port))
				return usage_error("invalid device port \"%s\"", optarg);
			break;
		case 'f':
			if (nflag == BENCH_FLOWS_MAX)
				return usage_error("too many flows");
			flagged[nflag++] = optarg;
			break;
		case 's':
			scenario = optarg;
			break;
		case 't':
			if (bench_parse_time(optarg, &o->duration_us) || o->duration_us < 1000 ||
			    o->duration_us > BENCH_TIME_MAX_US)
				return usage_error("invalid duration \"%s\" (1ms..3600s)", optarg);
			break;
		case 'P':
			o->persist = true;
			break;
		case 1005: {
			int n;

			if (parse_int(optarg, 1, BENCH_SERVE_MAX, &n))
				return usage_error("invalid client count \"%s\" (1..%d)", optarg,
						   BENCH_SERVE_MAX);
			o->clients = (unsigned)n;
			break;
		}
		case 'R':
			o->rperf = true;
			break;
		case 'J':
			o->json = true;
			break;
		case 'N':
			o->end.classify = false;
			break;
		case 'n':
			o->dry_run = true;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'm':
			if (bench_mode_parse(optarg, &o->bench_mode))
				return usage_error("unknown mode \"%s\" (flows, poll-cost, bidir, "
						   "reuse, overhead, overlap or progress)", optarg);
			break;
		case 1001:
		case 1002:
		case 1003:
		case 1004:
		case 1006:
			rc = c == 1006 ? bench_sweep_parse_delay(&o->sweep, optarg, err, sizeof(err))
			     : c == 1001 ? bench_sweep_parse_reuse(&o->sweep, optarg, err, sizeof(err))
			     : c == 1002 ? bench_sweep_parse_rotate(&o->sweep, optarg, err,
								    sizeof(err))
			     : c == 1003 ? bench_sweep_parse_buffers(&o->sweep, optarg, err,
								     sizeof(err))
					 : bench_sweep_parse_compute(&o->sweep, optarg, err,
								     sizeof(err));
			if (rc)
				return usage_error("%s", err);
			o->sweep_set = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			return usage_error("option %s needs a value", argv[optind - 1]);
		default:
			if (optopt)
				return usage_error("unknown option -%c", optopt);
			return usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (scenario) {
		rc = bench_scenario_load(scenario, &o->sc, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "justbench: %s\n", err);
			return EXIT_USAGE;
		}
	}
	for (int i = 0; i < nflag; i++) {
		rc = add_flow(o, flagged[i]);
		if (rc)
			return rc;
	}
	*specs = (const char **)argv + optind;
	*nspecs = argc - optind;
	return 0;
}

static int check_flows(struct opts *o)
{
	char err[ERR_MAX];
	size_t bad;

	if ((o->sweep.n_reuse || o->sweep.n_rotate || o->sweep.buffers) &&
	    o->bench_mode != BENCH_MODE_REUSE) {
		fprintf(stderr, "justbench: --reuse, --rotate and --buffers need --mode reuse\n");
		return EXIT_USAGE;
	}
	if (o->sweep.n_compute && o->bench_mode != BENCH_MODE_OVERHEAD &&
	    o->bench_mode != BENCH_MODE_OVERLAP) {
		fprintf(stderr, "justbench: --compute needs --mode overhead or overlap\n");
		return EXIT_USAGE;
	}
	if (o->sweep.n_delay && o->bench_mode != BENCH_MODE_PROGRESS) {
		fprintf(stderr, "justbench: --response-delay needs --mode progress\n");
		return EXIT_USAGE;
	}
	if (!o->sc.n)
		o->sc.n = bench_mode_defaults(o->bench_mode, o->duration_us, o->sc.flows,
					      BENCH_FLOWS_MAX);
	if (bench_flows_check(o->sc.flows, o->sc.n, &bad, err, sizeof(err))) {
		if (o->sc.n)
			fprintf(stderr, "justbench: flows[%zu].%s\n", bad, err);
		else
			fprintf(stderr, "justbench: no flows (give FLOW arguments, -f or -s)\n");
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < o->sc.n; i++) {
		if (bench_mode_check(o->bench_mode, o->rperf, &o->sc.flows[i], err, sizeof(err))) {
			fprintf(stderr, "justbench: flows[%zu].%s\n", i, err);
			return EXIT_USAGE;
		}
		if (!o->sc.flows[i].duration_us)
			o->sc.flows[i].duration_us = o->duration_us;
	}
	return 0;
}

/* ---------------------------------------------------------------- sockets */

static int listen_on(int port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr = { .s_addr = htonl(INADDR_ANY) } };
	int one = 1, zero = 0, fd;

	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0 && listen(fd, 4) == 0)
			return fd;
		close(fd);
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a4, sizeof(a4)) || listen(fd, 4)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

static int connect_to(const char *host, int port, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	char service[16];
	int rc, fd = -1, one = 1, saved = 0;

	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "%s: %s", host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen, "cannot connect to %s port %d: %s", host, port,
			 strerror(saved));
		return -saved;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* ---------------------------------------------------------------- modes */

static int run_server(struct opts *o)
{
	int lfd = listen_on(o->tcp_port), rc;

	if (lfd < 0) {
		fprintf(stderr, "justbench: cannot listen on port %d: %s\n", o->tcp_port,
			strerror(-lfd));
		return 1;
	}
	fprintf(stderr, "justbench: listening on port %d (%u client%s at once)\n", o->tcp_port,
		o->clients, o->clients == 1 ? "" : "s");
	rc = bench_serve(&o->end, lfd, o->clients, o->persist, &stop_flag, stderr);
	close(lfd);
	return rc;
}

struct local_server {
	struct bench_end end;
	atomic_bool stop; /* never set: the client's DONE or its closing ends the session */
	int fd, rc;
	char err[ERR_MAX];
};

static void *local_server_main(void *arg)
{
	struct local_server *ls = arg;

	ls->rc = bench_server_session(&ls->end, ls->fd, &ls->stop, ls->err, sizeof(ls->err));
	/* the client may be waiting for an answer that will not come */
	shutdown(ls->fd, SHUT_RDWR);
	return NULL;
}

static int write_report(const char *path, const struct bench_results *res)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f)
		return -errno;
	rc = bench_report_print_json(f, res);
	if (fclose(f) && !rc)
		rc = -errno;
	return rc;
}

static int print_results(struct opts *o, struct bench_results *res)
{
	int rc = 0;

	if (!res->n)
		return 0;
	if (o->output) {
		rc = write_report(o->output, res);
		if (rc)
			fprintf(stderr, "justbench: cannot write %s: %s\n", o->output,
				strerror(-rc));
	}
	if (o->json)
		rc |= bench_report_print_json(stdout, res);
	else
		bench_report_table(stdout, res);
	return rc ? 1 : 0;
}

static int run_client(struct opts *o)
{
	struct bench_results *res = calloc(1, sizeof(*res));
	struct local_server ls = { .fd = -1 };
	char err[ERR_MAX] = "";
	pthread_t tid;
	int fds[2] = { -1, -1 }, rc = 1;

	if (!res) {
		fputs("justbench: out of memory\n", stderr);
		return 1;
	}
	snprintf(res->description, sizeof(res->description), "%s", o->sc.description);
	if (o->mode == MODE_LOCAL) {
		snprintf(res->mode, sizeof(res->mode), "local");
		snprintf(res->peer, sizeof(res->peer), "%s", o->dev_b);
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds)) {
			fprintf(stderr, "justbench: socketpair: %s\n", strerror(errno));
			goto out_free;
		}
		ls.end = o->end;
		ls.end.dev = o->dev_b;
		ls.fd = fds[1];
		if (pthread_create(&tid, NULL, local_server_main, &ls)) {
			fputs("justbench: cannot start the local server thread\n", stderr);
			goto out_close;
		}
	} else {
		snprintf(res->mode, sizeof(res->mode), "client");
		snprintf(res->peer, sizeof(res->peer), "%s", o->host);
		fds[0] = connect_to(o->host, o->tcp_port, err, sizeof(err));
		if (fds[0] < 0) {
			fprintf(stderr, "justbench: %s\n", err);
			goto out_free;
		}
	}
	rc = bench_client_session(&o->end, o->rperf, o->bench_mode, &o->sweep, o->sc.flows,
				  o->sc.n, fds[0], &stop_flag, res, err, sizeof(err)) ? 1 : 0;
	if (o->mode == MODE_LOCAL) {
		shutdown(fds[0], SHUT_RDWR);
		pthread_join(tid, NULL);
		if (ls.rc && (!rc || strstr(err, "server: closed")))
			fprintf(stderr, "justbench: server (%s): %s\n", o->dev_b, ls.err);
		rc |= ls.rc ? 1 : 0;
	}
	if (err[0])
		fprintf(stderr, "justbench: %s\n", err);
	if (atomic_load(&stop_flag))
		fputs("justbench: interrupted: the flows stopped early\n", stderr);
	rc |= print_results(o, res);
	if (bench_results_failed(res))
		rc = 1;
out_close:
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
out_free:
	free(res);
	return rc;
}

int main(int argc, char **argv)
{
	static struct opts o = {
		.end = { .port = 1, .gid_index = -1, .classify = true },
		.tcp_port = DEFAULT_PORT,
		.duration_us = BENCH_DURATION_DEFAULT_US,
		.clients = 1,
	};
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESETHAND };
	const char **pos = NULL;
	int npos = 0, rc, first = 0;

	if (argc < 2)
		return usage_error("a mode is needed: server, client or local");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("justbench %s (wire protocol %d, scenario version %d)\n", JUSTITIA_VERSION,
		       BENCH_WIRE_VERSION, BENCH_SCENARIO_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "server"))
		o.mode = MODE_SERVER;
	else if (!strcmp(argv[1], "client"))
		o.mode = MODE_CLIENT;
	else if (!strcmp(argv[1], "local"))
		o.mode = MODE_LOCAL;
	else
		return usage_error("unknown mode \"%s\" (server, client or local)", argv[1]);
	rc = parse_args(argc - 1, argv + 1, &o, &pos, &npos);
	if (rc)
		return rc;
	if (o.mode == MODE_SERVER) {
		if (npos)
			return usage_error("server: unexpected argument \"%s\"", pos[0]);
		if (o.sc.n || o.bench_mode || o.sweep_set)
			return usage_error("server: the client chooses the flows and the mode");
	} else if (o.mode == MODE_CLIENT) {
		if (npos < 1)
			return usage_error("client: the server's HOST is needed");
		o.host = pos[first++];
	} else {
		if (npos < 2)
			return usage_error("local: two devices are needed (DEV_A DEV_B)");
		if (o.end.dev)
			return usage_error("local: give the devices as DEV_A DEV_B, not -d %s",
					   o.end.dev);
		o.end.dev = pos[first++];
		o.dev_b = pos[first++];
	}
	for (int i = first; i < npos; i++) {
		rc = add_flow(&o, pos[i]);
		if (rc)
			return rc;
	}
	if (o.mode != MODE_SERVER && o.clients != 1)
		return usage_error("--clients is the server's");
	if (o.mode != MODE_SERVER) {
		rc = check_flows(&o);
		if (rc)
			return rc;
	}
	if (o.dry_run) {
		for (size_t i = 0; i < o.sc.n; i++) {
			char spec[512];

			if (bench_flow_format(&o.sc.flows[i], spec, sizeof(spec)) == 0)
				printf("%s\n", spec);
		}
		return 0;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return o.mode == MODE_SERVER ? run_server(&o) : run_client(&o);
}

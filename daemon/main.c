// SPDX-License-Identifier: MIT
/* justitiad: the per-host Justitia daemon (docs/justitiad.8).  Owns the
 * event loop and the daemon state (justitiad.h), and wires the modules:
 * ctl gets its view through struct ctl_env (wiring.c), the others pointers.
 * May call: every module's init/fini/reconfigure, wiring; called back: only
 * daemon_now_ns(). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "controller.h"
#include "ctl.h"
#include "justitiad.h"
#include "log.h"
#include "notify.h"
#include "peer.h"
#include "qpwatch.h"
#include "rdma.h"
#include "rread.h"
#include "splitq.h"
#include "wiring.h"

#define DEFAULT_CONFIG CONFIG_DEFAULT_PATH
#define TICK_S 0.1

/* The config module and the logger must agree on levels and subsystems. */
_Static_assert((int)CONFIG_LOG_ERROR == (int)LOG_LVL_ERROR && (int)CONFIG_LOG_DEBUG == (int)LOG_LVL_DEBUG,
	       "log levels");
_Static_assert((1u << CONFIG_SUBSYS_CTL) == LOG_SS_CTL && (1u << CONFIG_SUBSYS_SHM) == LOG_SS_SHM &&
		       (1u << CONFIG_SUBSYS_FLOW) == LOG_SS_FLOW && (1u << CONFIG_SUBSYS_REF) == LOG_SS_REF &&
		       (1u << CONFIG_SUBSYS_CTRL) == LOG_SS_CTRL &&
		       (1u << CONFIG_SUBSYS_TOKEN) == LOG_SS_TOKEN &&
		       (1u << CONFIG_SUBSYS_BPF) == LOG_SS_BPF &&
		       (1u << CONFIG_SUBSYS_CONFIG) == LOG_SS_CONFIG,
	       "debug subsystems");

static struct daemon d;
static struct ctl ctl;
static struct peer_ctx peer; /* the channel to the other hosts' daemons */
static struct ctrl controller;
static struct rread rread; /* remote READ control */
static struct qpwatch qpw; /* kernel-side QP discovery (BPF) */

uint64_t daemon_now_ns(void)
{
	return clock_now_ns();
}

static void usage(FILE *f)
{
	fprintf(f, "usage: justitiad [-c FILE] [-D SUBSYS,...] [-d] [--check-config] [-h] [-V]\n"
		   "  -c, --config FILE   configuration (default " DEFAULT_CONFIG ")\n"
		   "  -D, --debug LIST    debug subsystems: ctl,shm,flow,ref,ctrl,token,bpf,config,all\n"
		   "  -d                  log level debug for every subsystem\n"
		   "  -n, --check-config  print the effective configuration and exit (0 ok, 1 bad)\n"
		   "  -V, --version       print the version\n");
}

/* Load @path into @c.  A missing default file means built-in defaults. */
static int load_config(const char *path, int explicit_path, struct config *c)
{
	char err[512];
	int rc;

	if (!explicit_path && access(path, F_OK) && errno == ENOENT) {
		config_init_defaults(c);
		log_info("%s not found: using built-in defaults", path);
		return 0;
	}
	rc = config_load(path, c, err, sizeof(err));
	if (rc)
		log_err("%s", err);
	return rc;
}

static void apply_log_level(const struct config *c, unsigned cli_debug)
{
	log_set_level((enum log_level)c->log_level, c->debug | cli_debug);
}

static unsigned cli_debug_mask;

/* What `justctl set` may have changed and a reload puts back to the file's
 * values: say so, one line per value (justctl(8), set). */
static void log_runtime_changes(const struct config *run, const struct config *file)
{
	char a[32], b[32];

	if (run->controller.target99_us != file->controller.target99_us)
		log_info("reload: controller.target99_us %u -> %u", run->controller.target99_us,
			 file->controller.target99_us);
	if (run->controller.unattainable_policy != file->controller.unattainable_policy)
		log_info("reload: controller.unattainable_policy %s -> %s",
			 run->controller.unattainable_policy ? "ignore_latency" : "keep",
			 file->controller.unattainable_policy ? "ignore_latency" : "keep");
	for (size_t i = 0; i < run->n_devices; i++)
		for (size_t j = 0; j < file->n_devices; j++) {
			const struct config_device *x = &run->devices[i], *y = &file->devices[j];

			if (strcmp(x->name, y->name) || x->port != y->port ||
			    x->max_rate_bps == y->max_rate_bps)
				continue;
			if (!x->max_rate_bps || config_format_rate(x->max_rate_bps, a, sizeof(a)))
				snprintf(a, sizeof(a), "auto");
			if (!y->max_rate_bps || config_format_rate(y->max_rate_bps, b, sizeof(b)))
				snprintf(b, sizeof(b), "auto");
			log_info("reload: devices %s port %u max_rate %s -> %s", x->name, x->port, a,
				 b);
		}
}

/* reference.listen_address unset: the channel listens on the address of the
 * device the reference flow leaves from (reference.peers[0].device, else
 * devices[0], else the first active port), not on every address. */
static void listen_auto(const struct config *c, struct peer_listen_auto *a)
{
	const char *dev = "";
	unsigned port = 0;
	int gid = -1;

	memset(a, 0, sizeof(*a));
	if (c->reference.listen_address[0])
		return;
	if (c->n_peers && c->peers[0].device[0]) {
		dev = c->peers[0].device;
	} else if (c->n_devices) {
		dev = c->devices[0].name;
		port = c->devices[0].port;
		gid = c->devices[0].gid_index;
	}
	if (!rdma_dev_address(dev, port, gid, a->address, sizeof(a->address), a->why,
			      sizeof(a->why)) &&
	    c->n_peers)
		log_info("peer channel: listening on %s, the address of the reference device",
			 a->address);
}

static void reload(void)
{
	struct config nc;

	notify_send("RELOADING=1");
	if (load_config(d.config_path, 1, &nc)) {
		log_warnx("reload failed; keeping the running configuration");
		notify_send("READY=1\nSTATUS=reload failed, old configuration kept");
		return;
	}
	/* What the running sockets and segments were built from stays. */
	if (strcmp(nc.socket, d.cfg.socket) || strcmp(nc.runtime_dir, d.cfg.runtime_dir) ||
	    strcmp(nc.socket_group, d.cfg.socket_group) || nc.limits.max_flows != d.cfg.limits.max_flows ||
	    nc.limits.max_flows_per_client != d.cfg.limits.max_flows_per_client)
		log_warnx("socket, runtime_dir, socket_group, max_flows and max_flows_per_client "
			  "change only on restart");
	log_runtime_changes(&d.cfg, &nc);
	snprintf(nc.socket, sizeof(nc.socket), "%s", d.cfg.socket);
	snprintf(nc.runtime_dir, sizeof(nc.runtime_dir), "%s", d.cfg.runtime_dir);
	snprintf(nc.socket_group, sizeof(nc.socket_group), "%s", d.cfg.socket_group);
	nc.limits.max_flows = d.cfg.limits.max_flows;
	nc.limits.max_flows_per_client = d.cfg.limits.max_flows_per_client;
	config_free(&d.cfg);
	d.cfg = nc;
	flows_reconfigure(&d.flows, &d.cfg);
	if (d.peer)
		peer_ctx_reconfigure(d.peer, &d.cfg);
	if (d.controller)
		ctrl_reconfigure(d.controller);
	apply_log_level(&d.cfg, cli_debug_mask);
	if (d.qpw)
		qpwatch_reconfigure(d.qpw);
	{
		struct flows_counts fc;

		flows_count(&d.flows, &fc);
		log_info("configuration reloaded from %s (%zu flows kept)", d.config_path, fc.flows);
	}
	notify_send("READY=1\nSTATUS=running");
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	if (w->signum == SIGHUP) {
		reload();
		return;
	}
	log_info("signal %d: exiting", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct jst_shm_global *g = d.flows.global.base;

	atomic_store_explicit(&g->heartbeat_ns, daemon_now_ns(), memory_order_release);
	flows_poll_counters(&d.flows);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "debug", required_argument, NULL, 'D' },
		{ "check-config", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DEFAULT_CONFIG;
	int explicit_path = 0, check = 0, all_debug = 0, c, rc = 1;
	ev_signal sig_term, sig_int, sig_hup;
	ev_timer tick;

	log_init("justitiad", LOG_LVL_INFO, 0);
	while ((c = getopt_long(argc, argv, "c:D:dnhV", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			path = optarg;
			explicit_path = 1;
			break;
		case 'D': {
			const char *bad;
			size_t badlen;

			if (log_parse_subsystems(optarg, &cli_debug_mask, &bad, &badlen)) {
				fprintf(stderr, "justitiad: unknown debug subsystem \"%.*s\"\n",
					(int)badlen, bad);
				return 2;
			}
			break;
		}
		case 'd':
			all_debug = 1;
			break;
		case 'n':
			check = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("justitiad %s (protocol %d, shm ABI %d.%d)\n", JUSTITIA_VERSION,
			       PROTO_VERSION, JST_SHM_VERSION_MAJOR, JST_SHM_VERSION_MINOR);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (all_debug && !cli_debug_mask)
		cli_debug_mask = ~0u;
	d.config_path = path;
	if (load_config(path, explicit_path, &d.cfg))
		return 1;
	if (check) {
		rc = config_dump(stdout, &d.cfg) ? 1 : 0;
		config_free(&d.cfg);
		return rc;
	}
	apply_log_level(&d.cfg, cli_debug_mask);
	if (getrandom(&d.instance, sizeof(d.instance), 0) != sizeof(d.instance))
		d.instance = daemon_now_ns() ^ ((uint64_t)getpid() << 32);
	d.instance |= 1;
	d.start_ns = daemon_now_ns();
	d.ctrl.ref_state = "off";
	d.loop = ev_default_loop(EVFLAG_AUTO);
	if (!d.loop)
		fatalx("cannot initialise the event loop");
	signal(SIGPIPE, SIG_IGN);

	rc = flows_init(&d.flows, &d.cfg, d.instance);
	if (rc) {
		log_err("cannot create shared memory: %s", strerror(-rc));
		goto out_config;
	}
	d.ctl = &ctl;
	/* never fatal: off, with the reason, when BPF cannot be used; loaded
	 * before the socket exists, so that no client waits while it loads */
	qpwatch_init(&qpw, &d);
	d.qpw = &qpw;
	{
		struct ctl_env env = wiring_ctl_env(&d);

		rc = ctl_open(&ctl, &env);
	}
	if (rc) {
		log_err("control socket %s: %s", d.cfg.socket, strerror(-rc));
		goto out_qpwatch;
	}
	/* The daemon channel (reference flow, split-QP lookups): without it the
	 * daemon still serves its own host. */
	{
		struct peer_listen_auto la;

		listen_auto(&d.cfg, &la);
		peer_ctx_init(&peer, d.loop, &d.cfg, d.instance, &la);
	}
	d.peer = &peer;
	splitq_init(&d);
	/* before the controller, which counts its flows */
	rread_init(&rread, &d);
	d.rread = &rread;
	rc = ctrl_init(&controller, &d);
	if (rc)
		log_warnx("isolation controller disabled: %s", strerror(-rc));
	else
		d.controller = &controller;
	ev_signal_init(&sig_term, signal_cb, SIGTERM);
	ev_signal_init(&sig_int, signal_cb, SIGINT);
	ev_signal_init(&sig_hup, signal_cb, SIGHUP);
	ev_signal_start(d.loop, &sig_term);
	ev_signal_start(d.loop, &sig_int);
	ev_signal_start(d.loop, &sig_hup);
	ev_timer_init(&tick, tick_cb, 0, TICK_S);
	ev_timer_start(d.loop, &tick);

	log_info("justitiad %s running (config %s, %zu devices, max %u flows)", JUSTITIA_VERSION,
		 d.config_path, d.cfg.n_devices, d.cfg.limits.max_flows);
	notify_send("READY=1\nSTATUS=running");
	ev_run(d.loop, 0);
	notify_send("STOPPING=1");
	rc = 0;

	ev_timer_stop(d.loop, &tick);
	if (d.controller)
		ctrl_fini(d.controller);
	d.controller = NULL;
	peer_ctx_fini(&peer);
	d.peer = NULL;
	rread_fini(&rread);
	d.rread = NULL;
	ctl_close(&ctl);
out_qpwatch:
	qpwatch_fini(&qpw);
	d.qpw = NULL;
	flows_fini(&d.flows);
out_config:
	config_free(&d.cfg);
	ev_loop_destroy(d.loop);
	return rc ? 1 : 0;
}

// SPDX-License-Identifier: MIT
/* justsim: Justitia's daemon modules on a discrete-event RNIC model, in
 * virtual time (docs/rnic-model.md).  Prints a text table and, with
 * --json, the full results as JSON.  Numbers from here are model numbers:
 * never put them in one table with Soft-RoCE numbers.
 * May call: tests/sim (the model, its scenarios and reports), jansson and libc. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/sim/sim_report.h"
#include "tests/sim/sim_run.h"
#include "tests/sim/sim_scen.h"

static void usage(FILE *f)
{
	fputs("usage: justsim [options] [SCENARIO...]   (default: every scenario)\n"
	      "  -l, --list             list the scenarios\n"
	      "  -j, --json FILE        write the results as JSON to FILE (- = stdout)\n"
	      "  -t, --trace            include SafeUtil over time in the JSON\n"
	      "  -s, --seed N           (1)\n"
	      "  -r, --rate GBPS        line rate and MaxRate, Gbit/s (100)\n"
	      "      --rx-rate GBPS     receive pipeline rate (= line rate)\n"
	      "      --max-rate MBPS    the controller's MaxRate, Mbit/s (= line rate)\n"
	      "      --max-ops OPS      the device's max_ops, ops/s (0: unknown, TokenOps\n"
	      "                         = TokenBytes / 64)\n"
	      "      --pfc NS           pause threshold of the receive queue, 0 = none (10000)\n"
	      "  -m, --mtu BYTES        (4096)\n"
	      "  -a, --arbiter wqe|burst[:N]  transmit arbiter (wqe)\n"
	      "  -d, --duration MS      measured virtual time (200; bw-1024: 1000)\n"
	      "  -w, --warmup MS        (50; bw-1024: 500)\n"
	      "  -T, --target99 NS      Target99 (3000)\n"
	      "  -p, --period US        RefPeriod (500)\n"
	      "      --start US         applications start (1000; the daemon at 0)\n"
	      "      --pace-mode M      auto, share, protect (controller.pace_mode) or paper (auto)\n"
	      "      --channel-us US    the daemons' channel, one way, for the views rows (10)\n"
	      "      --sync-ms MS       the requesters' registration sync, views rows (50)\n"
	      "      --no-views         no \"views\" rows (Justitia with the peer views)\n"
	      "      --view-kinds K     views rows: read, recv or both views (both)\n"
	      "  -q, --quiet            no table\n",
	      f);
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_arb(const char *s, struct sim_nic_params *n)
{
	uint64_t v;

	if (!strcmp(s, "wqe")) {
		n->arb = SIM_ARB_WQE;
		return 0;
	}
	if (!strncmp(s, "burst", 5)) {
		n->arb = SIM_ARB_BURST;
		n->burst_pkts = 1;
		if (s[5] == ':') {
			if (parse_u64(s + 6, &v) || !v || v > 1000000)
				return -EINVAL;
			n->burst_pkts = (uint32_t)v;
		} else if (s[5]) {
			return -EINVAL;
		}
		return 0;
	}
	return -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "list", no_argument, 0, 'l' },	 { "json", required_argument, 0, 'j' },
		{ "trace", no_argument, 0, 't' },	 { "seed", required_argument, 0, 's' },
		{ "rate", required_argument, 0, 'r' },	 { "rx-rate", required_argument, 0, 'R' },
		{ "mtu", required_argument, 0, 'm' },	 { "arbiter", required_argument, 0, 'a' },
		{ "duration", required_argument, 0, 'd' }, { "warmup", required_argument, 0, 'w' },
		{ "target99", required_argument, 0, 'T' }, { "period", required_argument, 0, 'p' },
		{ "max-rate", required_argument, 0, 'M' }, { "pfc", required_argument, 0, 'P' },
		{ "max-ops", required_argument, 0, 'O' },
		{ "start", required_argument, 0, 'S' },	 { "pace-mode", required_argument, 0, 'X' },
		{ "quiet", no_argument, 0, 'q' },	 { "help", no_argument, 0, 'h' },
		{ "channel-us", required_argument, 0, 'C' }, { "sync-ms", required_argument, 0, 'Y' },
		{ "no-views", no_argument, 0, 'V' },	 { "view-kinds", required_argument, 0, 'K' },
		{ 0, 0, 0, 0 },
	};
	struct sim_params p;
	const char *json_path = NULL;
	int trace = 0, quiet = 0, warmup_set = 0, no_views = 0, c, rc = 0;
	uint64_t v, duration = 0, rx = 0, max_rate = 0;
	struct sim_flow_cfg *flows;
	json_t *out, *runs;

	sim_params_default(&p);
	while ((c = getopt_long(argc, argv, "lj:ts:r:m:a:d:w:T:p:qh", lo, NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case 'l':
			for (unsigned i = 0; i < sim_n_scens; i++)
				printf("%-14s %s\n", sim_scens[i].name, sim_scens[i].what);
			return 0;
		case 'j':
			json_path = optarg;
			break;
		case 't':
			trace = 1;
			break;
		case 's':
			bad = parse_u64(optarg, &p.seed);
			break;
		case 'r':
			bad = parse_u64(optarg, &v) || !v || v > 10000;
			p.nic.line_bps = p.ctl.max_rate_bps = v * 1000000000ull;
			break;
		case 'R':
			bad = parse_u64(optarg, &rx) || !rx || rx > 10000;
			break;
		case 'M':
			bad = parse_u64(optarg, &max_rate) || !max_rate || max_rate > 10000000;
			break;
		case 'O':
			bad = parse_u64(optarg, &p.ctl.max_ops) || p.ctl.max_ops > 10000000000ull;
			break;
		case 'X':
			if (!strcmp(optarg, "auto"))
				p.ctl.min_pace_mode = JST_PACE_OFF;
			else if (!strcmp(optarg, "share"))
				p.ctl.min_pace_mode = JST_PACE_SHARE;
			else if (!strcmp(optarg, "protect"))
				p.ctl.min_pace_mode = JST_PACE_PROTECT;
			else if (!strcmp(optarg, "paper"))
				p.ctl.min_pace_mode = SIM_PACE_PAPER;
			else
				bad = 1;
			break;
		case 'C':
			bad = parse_u64(optarg, &v) || v > 1000000;
			p.channel_ns = v * 1000;
			break;
		case 'Y':
			bad = parse_u64(optarg, &v) || !v || v > 100000;
			p.sync_ns = v * 1000000;
			break;
		case 'K':
			if (!strcmp(optarg, "read"))
				p.view_kinds = SIM_VIEW_READ;
			else if (!strcmp(optarg, "recv"))
				p.view_kinds = SIM_VIEW_RECV;
			else if (!strcmp(optarg, "both"))
				p.view_kinds = SIM_VIEW_BOTH;
			else
				bad = 1;
			break;
		case 'V':
			no_views = 1;
			break;
		case 'S':
			bad = parse_u64(optarg, &v) || v > 100000000;
			p.start_ns = v * 1000;
			break;
		case 'P':
			bad = parse_u64(optarg, &p.nic.pfc_ns);
			break;
		case 'm':
			bad = parse_u64(optarg, &v) || v < 256 || v > 65536;
			p.nic.mtu = (uint32_t)v;
			break;
		case 'a':
			bad = parse_arb(optarg, &p.nic);
			break;
		case 'd':
			bad = parse_u64(optarg, &duration) || !duration || duration > 100000;
			break;
		case 'w':
			bad = parse_u64(optarg, &v) || v > 100000;
			p.warmup_ns = v * 1000000;
			warmup_set = 1;
			break;
		case 'T':
			bad = parse_u64(optarg, &p.ctl.target99_ns) || !p.ctl.target99_ns;
			break;
		case 'p':
			bad = parse_u64(optarg, &v) || !v || v > 1000000;
			p.ctl.period_ns = v * 1000;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (bad) {
			fprintf(stderr, "justsim: bad value for -%c: %s\n", c, optarg);
			return 2;
		}
	}
	p.nic.rx_bps = rx ? rx * 1000000000ull : p.nic.line_bps;
	if (max_rate)
		p.ctl.max_rate_bps = max_rate * 1000000ull;
	for (int i = optind; i < argc; i++)
		if (!sim_scen_find(argv[i])) {
			fprintf(stderr, "justsim: no scenario %s (justsim --list)\n", argv[i]);
			return 2;
		}
	flows = calloc(4096, sizeof(*flows));
	if (!flows)
		return 1;
	out = json_pack("{s:s,s:o}", "note",
			"RNIC model in virtual time; never compare with Soft-RoCE numbers",
			"params", sim_report_params(&p));
	runs = json_array();
	json_object_set_new(out, "runs", runs);
	if (!quiet) {
		sim_report_params_text(stdout, &p);
		sim_report_head(stdout);
	}
	for (unsigned i = 0; i < sim_n_scens; i++) {
		const struct sim_scen *s = &sim_scens[i];
		struct sim_params sp = p;
		uint32_t n;
		int match = optind == argc;

		for (int a = optind; a < argc; a++)
			match |= !strcmp(argv[a], s->name);
		if (!match)
			continue;
		n = s->flows(flows, 4096);
		sp.duration_ns = duration ? duration * 1000000 : s->duration_ns ? s->duration_ns
										: p.duration_ns;
		if (s->hosts)
			sp.hosts = s->hosts;
		if (s->warmup_ns && !warmup_set)
			sp.warmup_ns = s->warmup_ns;
		for (int j = 0; j < 3; j++) {
			struct sim_result r;

			if (!(j == 2 ? s->views && !no_views : j ? s->justitia : s->plain))
				continue;
			sp.views = j == 2;
			rc = sim_run(&sp, flows, n, j != 0, &r);
			if (rc) {
				fprintf(stderr, "justsim: %s: %s\n", s->name, strerror(-rc));
				goto out;
			}
			if (!quiet) {
				sim_report_row(stdout, s, &r);
				fflush(stdout);
			}
			json_array_append_new(runs, sim_report_run(s, &sp, &r, trace));
			sim_result_free(&r);
		}
	}
	if (json_path) {
		FILE *f = strcmp(json_path, "-") ? fopen(json_path, "w") : stdout;

		if (!f || json_dumpf(out, f, JSON_INDENT(1) | JSON_SORT_KEYS)) {
			fprintf(stderr, "justsim: cannot write %s\n", json_path);
			rc = -EIO;
		}
		if (f && f != stdout)
			fclose(f);
		else if (f)
			putchar('\n');
	}
out:
	json_decref(out);
	free(flows);
	return rc ? 1 : 0;
}

// SPDX-License-Identifier: MIT
/* justsim's scenarios (see sim_scen.h).  Every flow goes from host 0 to
 * host 1 unless said otherwise; the elephant keeps 16 messages outstanding
 * (perftest's ib_write_bw keeps 128 of its 64 KiB default; 16 MiB in flight
 * is plenty at 100 Gbit/s). */
#include "sim_scen.h"

#include <string.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

static struct sim_flow_cfg lat(void)
{
	return (struct sim_flow_cfg){ .kind = SIM_FLOW_LAT, .src = 0, .dst = 1, .msg_bytes = 10 };
}

static struct sim_flow_cfg bw(uint32_t bytes, uint32_t depth)
{
	return (struct sim_flow_cfg){ .kind = SIM_FLOW_BW, .src = 0, .dst = 1, .msg_bytes = bytes,
				      .depth = depth };
}

static struct sim_flow_cfg tput(void)
{
	return (struct sim_flow_cfg){ .kind = SIM_FLOW_TPUT, .src = 0, .dst = 1, .msg_bytes = 64,
				      .batch = 16 };
}

static uint32_t f_lat_alone(struct sim_flow_cfg *f, uint32_t max)
{
	f[0] = lat();
	return 1;
}

static uint32_t f_lat_elephant(struct sim_flow_cfg *f, uint32_t max)
{
	f[0] = lat();
	f[1] = bw(MiB, 16);
	return 2;
}

static uint32_t f_tput_alone(struct sim_flow_cfg *f, uint32_t max)
{
	f[0] = tput();
	return 1;
}

static uint32_t f_tput_elephant(struct sim_flow_cfg *f, uint32_t max)
{
	f[0] = tput();
	f[1] = bw(MiB, 16);
	return 2;
}

static uint32_t f_bw_alone(struct sim_flow_cfg *f, uint32_t max)
{
	f[0] = bw(MiB, 16);
	return 1;
}

static uint32_t f_bw_1m_10m(struct sim_flow_cfg *f, uint32_t max)
{
	f[0] = bw(MiB, 16);
	f[1] = bw(10 * MiB, 16);
	return 2;
}

/* n/4 latency, n/4 throughput, n/2 bandwidth (half 1 MiB, half 10 MiB) */
static uint32_t mixed(struct sim_flow_cfg *f, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		switch (i % 4) {
		case 0:
			f[i] = lat();
			break;
		case 1:
			f[i] = tput();
			break;
		case 2:
			f[i] = bw(MiB, 4);
			break;
		default:
			f[i] = bw(10 * MiB, 4);
			break;
		}
	}
	return n;
}

static uint32_t f_mixed8(struct sim_flow_cfg *f, uint32_t max)
{
	return mixed(f, 8);
}

static uint32_t f_mixed64(struct sim_flow_cfg *f, uint32_t max)
{
	return mixed(f, 64);
}

/* 1024 bandwidth flows, alternately 64 KiB and 640 KiB messages */
static uint32_t f_bw1024(struct sim_flow_cfg *f, uint32_t max)
{
	for (uint32_t i = 0; i < 1024; i++)
		f[i] = bw(i % 2 ? 640 * KiB : 64 * KiB, 4);
	return 1024;
}

/* A READ elephant: host 0 reads 1 MiB messages from host 1, whose NIC
 * sends the responses; a latency flow from host 1 to host 0 shares that
 * NIC's transmit pipeline. */
static uint32_t f_read_elephant(struct sim_flow_cfg *f, uint32_t max)
{
	f[0] = lat();
	f[0].src = 1;
	f[0].dst = 0;
	f[1] = bw(MiB, 16);
	f[1].opcode = IBV_WR_RDMA_READ;
	return 2;
}

/* the same with the ping-pong going to a third host: only the responder's
 * view (host 1 counts the READ it serves) can help */
static uint32_t f_read_elephant3(struct sim_flow_cfg *f, uint32_t max)
{
	f_read_elephant(f, max);
	f[0].dst = 2;
	return 2;
}

/* issue 13 (a): host 1 READs 64 B from host 0 one at a time (a latency
 * READ: host 0's NIC sends the responses) while host 0 WRITEs 1 MiB
 * messages to host 2 */
static uint32_t f_read_lat(struct sim_flow_cfg *f, uint32_t max)
{
	f[0] = lat();
	f[0].src = 1;
	f[0].dst = 0;
	f[0].msg_bytes = 64;
	f[0].opcode = IBV_WR_RDMA_READ;
	f[1] = bw(MiB, 16);
	f[1].dst = 2;
	return 2;
}

/* incast: 1 MiB elephants from hosts 1..3 and a latency flow from host 4,
 * all into host 0 */
static uint32_t f_incast(struct sim_flow_cfg *f, uint32_t max)
{
	for (uint32_t i = 0; i < 3; i++) {
		f[i] = bw(MiB, 16);
		f[i].src = i + 1;
		f[i].dst = 0;
	}
	f[3] = lat();
	f[3].src = 4;
	f[3].dst = 0;
	return 4;
}

const struct sim_scen sim_scens[] = {
	{ "lat-alone", "10 B WRITE ping-pong alone", f_lat_alone, true, false, 0 },
	{ "lat-elephant", "10 B ping-pong next to a 1 MiB WRITE elephant", f_lat_elephant, true,
	  true, 0 },
	{ "tput-alone", "64 B WRITEs in batches of 16, alone", f_tput_alone, true, false, 0 },
	{ "tput-elephant", "64 B batches of 16 next to a 1 MiB WRITE elephant", f_tput_elephant,
	  true, true, 0 },
	{ "bw-alone", "one 1 MiB WRITE stream", f_bw_alone, true, true, 0 },
	{ "bw-1m-10m", "1 MiB vs 10 MiB WRITE streams", f_bw_1m_10m, true, true, 0 },
	{ "mixed-8", "2 latency, 2 throughput, 2+2 bandwidth (1/10 MiB)", f_mixed8, true, true,
	  0 },
	{ "mixed-64", "16 latency, 16 throughput, 16+16 bandwidth (1/10 MiB)", f_mixed64, true,
	  true, 0 },
	/* a long warmup: every flow starts with a full bucket, and the first
	 * message of each (360 MB in all) takes ~30 ms of line to drain */
	{ "bw-1024", "1024 bandwidth flows, 64 KiB and 640 KiB messages", f_bw1024, true, true,
	  1000000000ull, 0, 500000000ull },
	/* issue 13 (b), (c) and (a): where the peer views matter */
	{ "read-elephant", "ping-pong 1->0 next to 1 MiB READs by host 0 from host 1",
	  f_read_elephant, true, true, 0, 0, 0, true },
	{ "incast", "3 elephants and a latency flow into one host (5 hosts)", f_incast, true,
	  true, 0, 5, 0, true },
	{ "read-elephant3", "ping-pong 1->2 next to 1 MiB READs by host 0 from host 1",
	  f_read_elephant3, true, true, 0, 3, 0, true },
	{ "read-lat", "64 B READs by host 1 from host 0 next to 1 MiB WRITEs 0->2 (3 hosts)",
	  f_read_lat, true, true, 0, 3, 0, true },
};

const unsigned sim_n_scens = sizeof(sim_scens) / sizeof(sim_scens[0]);

const struct sim_scen *sim_scen_find(const char *name)
{
	for (unsigned i = 0; i < sim_n_scens; i++)
		if (!strcmp(sim_scens[i].name, name))
			return &sim_scens[i];
	return NULL;
}

/* SPDX-License-Identifier: MIT */
/*
 * justitiad configuration: one strict JSON file (docs/justitiad.json.5.md).
 *
 * The int functions return 0 or a negative errno.  Loading errors are reported in err as
 * "FILE:LINE:COL: path: message" (LINE and COL 1-based, COL in bytes), or "FILE: message" when
 * there is no position (the file cannot be opened or read).
 */
#ifndef JUSTITIA_DAEMON_CONFIG_H
#define JUSTITIA_DAEMON_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CONFIG_DEFAULT_PATH "/etc/justitia/justitiad.json"
/* sizeof(sockaddr_un.sun_path), NUL included */
#define CONFIG_SUN_PATH_MAX 108
/* device names, peer addresses, group names; NUL included */
#define CONFIG_NAME_MAX	    64
#define CONFIG_MAX_DEVICES  64
#define CONFIG_MAX_PEERS    64
#define CONFIG_MAX_APPS	    1024
#define CONFIG_MAX_TENANTS  1024
/* justctl calibrate: QPs at once to the reference peer (reference.calibration_qps) */
#define CONFIG_CALIB_MAX_QPS 16
#define CONFIG_CALIB_DEFAULT_QPS 8

enum flow_class { FLOW_CLASS_LATENCY, FLOW_CLASS_THROUGHPUT, FLOW_CLASS_BANDWIDTH };

enum config_log_level { CONFIG_LOG_ERROR, CONFIG_LOG_WARN, CONFIG_LOG_INFO, CONFIG_LOG_DEBUG };

/* Subsystems that "debug" (and justitiad -D) can turn on; bit (1u << s) in config.debug. */
enum config_subsys {
	CONFIG_SUBSYS_CTL,
	CONFIG_SUBSYS_SHM,
	CONFIG_SUBSYS_FLOW,
	CONFIG_SUBSYS_REF,
	CONFIG_SUBSYS_CTRL,
	CONFIG_SUBSYS_TOKEN,
	CONFIG_SUBSYS_BPF,
	CONFIG_SUBSYS_CONFIG,
	CONFIG_SUBSYS_MAX
};

enum config_unattainable { CONFIG_UNATTAINABLE_KEEP, CONFIG_UNATTAINABLE_IGNORE_LATENCY };
/* controller.pace_mode: the lowest pace mode the controller may choose
 * (enum jst_pace_mode order: auto = off). */
enum config_pace_mode { CONFIG_PACE_AUTO, CONFIG_PACE_SHARE, CONFIG_PACE_PROTECT };

struct config_device {
	char name[CONFIG_NAME_MAX];
	unsigned port;
	int gid_index;		/* -1 = auto */
	uint64_t max_rate_bps;	/* 0 = "auto" (probe the link speed) */
	uint64_t max_ops_per_s; /* 0 = unknown/auto */
	uint32_t chunk_latency;
	uint32_t chunk_default;
};

struct config_peer {
	char address[CONFIG_NAME_MAX];
	uint16_t port;
	char device[CONFIG_NAME_MAX]; /* "" = any local device */
};

struct config_app_rule {
	char comm[16];
	int has_class;
	enum flow_class cls;
	uint32_t weight;
};

/* A rule of the "tenants" policy (daemon/tenant.h): what the processes of
 * one user or one group may ask for. */
struct config_tenant {
	int64_t uid, gid;       /* exactly one is set (>= 0) */
	unsigned classes;       /* bit 1 << enum flow_class per class allowed */
	uint32_t max_weight;
};

struct config_limits {
	uint32_t max_clients;
	uint32_t max_clients_per_uid;
	uint32_t max_flows;
	uint32_t max_flows_per_client;
	uint32_t max_request_bytes;
	uint32_t idle_timeout_ms;
};

struct config_reference {
	char listen_address[CONFIG_NAME_MAX]; /* "" = the reference device's address */
	uint16_t listen_port;
	char secret_file[PATH_MAX]; /* "" = none */
	bool insecure_peers;        /* run the channel to non-loopback peers without a secret */
	uint32_t period_us;
	uint32_t window;
	uint32_t max_age_ms;        /* 0: the window is RefCount samples only */
	uint32_t poll_us;           /* poll a probe's CQ this long before waiting */
	bool always_on;
	bool loopback_correction;
	uint32_t calibration_qps;   /* QPs of a calibration, each with its own WRITEs */
};

struct config_controller {
	uint32_t target99_us;
	bool target99_over_base; /* Target99 = the reference flow's base latency + target99_us */
	uint64_t additive_step_bps; /* 0 = "auto" */
	bool one_flow_per_app;
	enum config_unattainable unattainable_policy;
	enum config_pace_mode pace_mode;
	uint32_t unattainable_delta_ms;
	uint32_t stale_ms; /* no reference sample this long: treated as a violation */
	double cpu_alpha;
};

struct config_tokens {
	uint32_t bytes;
	uint32_t ops; /* 0 = derive */
};

struct config {
	char runtime_dir[PATH_MAX];
	char socket[CONFIG_SUN_PATH_MAX];
	char socket_group[CONFIG_NAME_MAX]; /* "" = root only */
	char state_dir[PATH_MAX];
	enum config_log_level log_level;
	unsigned debug; /* bit (1u << enum config_subsys) */
	bool qpwatch;	/* load the BPF QP watcher (docs/qpwatch.md) */
	struct config_limits limits;
	struct config_reference reference;
	struct config_controller controller;
	struct config_tokens tokens;
	struct config_device *devices;
	size_t n_devices;
	struct config_peer *peers; /* the "reference.peers" array */
	size_t n_peers;
	struct config_app_rule *apps;
	size_t n_apps;
	struct config_tenant *tenants; /* the "tenants" array */
	size_t n_tenants;
};

/* All defaults, no arrays.  Overwrites *c without freeing it. */
void config_init_defaults(struct config *c);
/* Is @address (a peer's: IP literal or host name) this host's loopback? */
bool config_is_loopback(const char *address);

/*
 * Reads and checks the file at path into *c (which need not be initialised, and is overwritten
 * without being freed).  Returns 0, or -EINVAL (bad contents) / -errno (open, read) with the
 * message in err; on error *c holds the defaults and nothing to free.  err may be NULL.
 */
int config_load(const char *path, struct config *c, char *err, size_t errlen);

/* The same from memory; name stands for the file name in messages. */
int config_parse_buffer(const char *name, const char *text, size_t len, struct config *c,
			char *err, size_t errlen);

/* Writes the effective configuration as JSON that config_load accepts again unchanged. */
int config_dump(FILE *f, const struct config *c);

/* Frees the arrays and resets *c to the defaults; safe to call twice. */
void config_free(struct config *c);

const char *config_class_name(enum flow_class c);
/* "latency"/"lat", "throughput"/"tput", "bandwidth"/"bw"; 0 or -EINVAL. */
int config_class_parse(const char *s, enum flow_class *out);

const char *config_log_level_name(enum config_log_level l);
/* "error", "warn", "info", "debug"; 0 or -EINVAL. */
int config_log_level_parse(const char *s, enum config_log_level *out);

const char *config_subsys_name(enum config_subsys s);
/* A subsystem name ("ctl", "shm", ...) to its enum; 0 or -EINVAL. */
int config_subsys_parse(const char *s, enum config_subsys *out);

/*
 * A rate: an unsigned decimal number, optionally with a fraction, and a unit "bit", "kbit",
 * "Mbit", "Gbit" or "Tbit" (powers of 1000, unit case-insensitive); no unit = bit/s.
 * "25Gbit", "1.5Gbit", "400000000".  0, -EINVAL (syntax, or not a whole number of bit/s),
 * -ERANGE (over UINT64_MAX).
 */
int config_parse_rate(const char *s, uint64_t *bps);

/* The shortest exact rate string ("25Gbit", "1.5Mbit", "999bit"); -ENOSPC if buf is short. */
int config_format_rate(uint64_t bps, char *buf, size_t len);

#endif

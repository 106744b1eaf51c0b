// SPDX-License-Identifier: MIT
/* justitiad configuration, the model: the schema's tables (configschema.h),
 * the defaults, the checks across members, the names of classes, levels and
 * subsystems.  Loading is configparse.c's, printing configdump.c's.
 * May call: configparse (errors with positions); not configdump.c. */
#include "configschema.h"
#include "shm_abi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The schema is a table of fields per JSON object (struct section): key,
 * type, range, where in struct config the value goes, defaults.  Loading
 * looks every member up in its section (unknown keys are errors), checks
 * type and range and stores it; dumping walks the same tables, so every key
 * that can be read is also written. */

#define SOCKET_NAME	"/justitiad.sock"
#define PEER_PORT	7471

static const char *const class_names[] = { JST_CLASS_NAME_LIST, NULL };
static const char *const class_short[] = { "lat", "tput", "bw", NULL };
static const char *const level_names[] = { "error", "warn", "info", "debug", NULL };
static const char *const subsys_names[] = { "ctl",   "shm", "flow",	"ref", "ctrl",
					    "token", "bpf", "config", NULL };
static const char *const policy_names[] = { "keep", "ignore_latency", NULL };
static const char *const pace_mode_names[] = { "auto", "share", "protect", NULL };
_Static_assert(ARRAY_SIZE(class_names) == JST_CLASS_COUNT + 1, "a name per class");
_Static_assert(ARRAY_SIZE(subsys_names) == CONFIG_SUBSYS_MAX + 1, "a name per subsystem");
_Static_assert(ARRAY_SIZE(level_names) == CONFIG_LOG_DEBUG + 2, "a name per log level");

const char *config_class_name(enum flow_class c)
{
	return (unsigned)c < ARRAY_SIZE(class_names) - 1 ? class_names[c] : "invalid";
}

int config_class_parse(const char *s, enum flow_class *out)
{
	int i = configparse_name_index(class_names, s);

	if (i < 0)
		i = configparse_name_index(class_short, s);
	if (i < 0)
		return -EINVAL;
	*out = (enum flow_class)i;
	return 0;
}

const char *config_log_level_name(enum config_log_level l)
{
	return (unsigned)l < ARRAY_SIZE(level_names) - 1 ? level_names[l] : "invalid";
}

int config_log_level_parse(const char *s, enum config_log_level *out)
{
	int i = configparse_name_index(level_names, s);

	if (i < 0)
		return -EINVAL;
	*out = (enum config_log_level)i;
	return 0;
}

const char *config_subsys_name(enum config_subsys s)
{
	return (unsigned)s < CONFIG_SUBSYS_MAX ? subsys_names[s] : "invalid";
}

int config_subsys_parse(const char *s, enum config_subsys *out)
{
	int i = configparse_name_index(subsys_names, s);

	if (i < 0)
		return -EINVAL;
	*out = (enum config_subsys)i;
	return 0;
}

static int parse_debug(struct ctx *x, json_t *v, void *dst)
{
	unsigned *mask = dst;
	const char *name = NULL;
	char q[64];
	size_t i;
	json_t *e;
	int rc, s;

	if (!json_is_array(v))
		return configparse_reject(x, false, "expected an array, got %s",
					  configparse_type_name(v));
	json_array_foreach(v, i, e) {
		configparse_push_index(x, i);
		rc = configparse_get_string(x, e, false, &name);
		if (rc)
			return rc;
		s = configparse_name_index(subsys_names, name);
		if (s < 0)
			return configparse_reject(x, false,
						  "unknown subsystem %s "
						  "(ctl, shm, flow, ref, ctrl, token, bpf, config)",
						  configparse_quote(q, sizeof(q), name));
		if (*mask & (1u << s))
			return configparse_reject(x, false, "duplicate subsystem %s",
						  configparse_quote(q, sizeof(q), name));
		*mask |= 1u << s;
		x->depth--;
	}
	return 0;
}

static json_t *dump_debug(const void *src, bool *leave_out)
{
	unsigned mask = *(const unsigned *)src;
	json_t *a = json_array();

	(void)leave_out;
	for (int s = 0; a && s < CONFIG_SUBSYS_MAX; s++) {
		if ((mask & (1u << s)) && json_array_append_new(a, json_string(subsys_names[s]))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static int parse_class(struct ctx *x, json_t *v, void *dst)
{
	struct config_app_rule *r = dst;
	const char *s = NULL;
	char q[64];
	int rc = configparse_get_string(x, v, false, &s);

	if (rc)
		return rc;
	if (config_class_parse(s, &r->cls))
		return configparse_reject(x, false,
					  "unknown class %s (latency, throughput, bandwidth)",
					  configparse_quote(q, sizeof(q), s));
	r->has_class = 1;
	return 0;
}

static json_t *dump_class(const void *src, bool *leave_out)
{
	const struct config_app_rule *r = src;

	*leave_out = !r->has_class;
	return json_string(config_class_name(r->cls));
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool valid_device_name(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == '/' || *s == 0x7f)
			return false;
	return true;
}

static bool valid_group(const char *s)
{
	return s[0] != '-' && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				       "0123456789._-") == strlen(s);
}

static bool valid_comm(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < ' ' || *s == 0x7f)
			return false;
	return true;
}

static bool valid_ip(const char *s)
{
	unsigned char buf[16];

	return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* An IP address, or RFC 1123 labels with the last one not all digits (a bad IPv4 address). */
static bool valid_host(const char *s)
{
	size_t label = 0;
	bool digits = true;

	if (valid_ip(s))
		return true;
	for (const char *p = s;; p++) {
		if (*p == '.' || !*p) {
			if (!label || p[-1] == '-')
				return false;
			if (!*p)
				return !digits;
			label = 0;
			digits = true;
			continue;
		}
		digits = digits && is_digit(*p);
		if (!(is_digit(*p) || ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z') || *p == '-') ||
		    (*p == '-' && !label) || ++label > 63)
			return false;
	}
}

/* ---------------------------------------------------------------- schema */

static int check_limits(struct ctx *x, json_t *obj, void *base)
{
	struct config_limits *l = base;

	if (l->max_clients_per_uid > l->max_clients) {
		if (json_object_get(obj, "max_clients_per_uid")) {
			configparse_push_key(x, "max_clients_per_uid");
			return configparse_reject(x, false,
						  "%u is out of range (1..max_clients = %u)",
						  l->max_clients_per_uid, l->max_clients);
		}
		l->max_clients_per_uid = l->max_clients;
	}

	if (l->max_flows_per_client <= l->max_flows)
		return 0;
	if (!json_object_get(obj, "max_flows_per_client")) {
		l->max_flows_per_client = l->max_flows;
		return 0;
	}
	configparse_push_key(x, "max_flows_per_client");
	return configparse_reject(x, false, "%u is out of range (1..max_flows = %u)",
				  l->max_flows_per_client, l->max_flows);
}

static int check_device(struct ctx *x, json_t *obj, void *base)
{
	const struct config_device *d = base, *all = x->c->devices;
	size_t i = x->path[x->depth - 1].index;
	int rc = configparse_require(x, obj, "name");
	char q[64];

	if (rc)
		return rc;
	if (d->chunk_latency > d->chunk_default) {
		bool at_default = json_object_get(obj, "chunk_default") != NULL;

		configparse_push_key(x, at_default ? "chunk_default" : "chunk_latency");
		return configparse_reject(x, false,
					  "chunk_latency (%u) must not exceed chunk_default (%u)",
					  d->chunk_latency, d->chunk_default);
	}
	for (size_t j = 0; j < i; j++)
		if (strcmp(all[j].name, d->name) == 0 && all[j].port == d->port)
			return configparse_reject(
			    x, false, "duplicate of devices[%zu] (%s port %u)", j,
			    configparse_quote(q, sizeof(q), d->name), d->port);
	return 0;
}

static int check_peer(struct ctx *x, json_t *obj, void *base)
{
	const struct config_peer *p = base, *all = x->c->peers;
	size_t i = x->path[x->depth - 1].index;
	int rc = configparse_require(x, obj, "address");
	char q[64];

	for (size_t j = 0; j < i && !rc; j++)
		if (strcmp(all[j].address, p->address) == 0 && all[j].port == p->port)
			return configparse_reject(
			    x, false, "duplicate of reference.peers[%zu] (%s port %u)", j,
			    configparse_quote(q, sizeof(q), p->address), p->port);
	return rc;
}

bool config_is_loopback(const char *address)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (!strcasecmp(address, "localhost") || !strcasecmp(address, "localhost."))
		return true;
	if (inet_pton(AF_INET, address, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, address, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) ||
		       (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	return false;
}

/* Secure by default: no channel in the clear to another host unless the
 * configuration says so (reference.insecure_peers). */
static int check_reference(struct ctx *x, json_t *obj, void *base)
{
	const struct config_reference *r = base;
	int rc;

	(void)obj;
	if (r->secret_file[0] || r->insecure_peers)
		return 0;
	for (size_t i = 0; i < x->c->n_peers; i++) {
		if (config_is_loopback(x->c->peers[i].address))
			continue;
		configparse_push_key(x, "peers");
		configparse_push_index(x, i);
		configparse_push_key(x, "address");
		rc = configparse_reject(x, false,
					"a peer on another host needs reference.secret_file (the channel "
					"is then authenticated and encrypted), or \"insecure_peers\": "
					"true to run it in the clear");
		x->depth -= 3;
		return rc;
	}
	return 0;
}

static int check_app(struct ctx *x, json_t *obj, void *base)
{
	const struct config_app_rule *a = base, *all = x->c->apps;
	size_t i = x->path[x->depth - 1].index;
	int rc = configparse_require(x, obj, "comm");
	char q[64];

	for (size_t j = 0; j < i && !rc; j++)
		if (strcmp(all[j].comm, a->comm) == 0)
			return configparse_reject(x, false, "duplicate of apps[%zu] (comm %s)", j,
						  configparse_quote(q, sizeof(q), a->comm));
	return rc;
}

/* The socket path follows runtime_dir unless it is set. */
static int check_config(struct ctx *x, json_t *obj, void *base)
{
	struct config *c = base;

	if (!json_object_get(obj, "socket")) {
		size_t r = strlen(c->runtime_dir), n = r + strlen(SOCKET_NAME);

		if (n >= sizeof(c->socket)) {
			configparse_push_key(x, "runtime_dir");
			return configparse_reject(
			    x, false,
			    "too long for the socket path (%zu bytes, at most %zu); "
			    "set \"socket\"",
			    n, sizeof(c->socket) - 1);
		}
		memcpy(c->socket, c->runtime_dir, r);
		memcpy(c->socket + r, SOCKET_NAME, sizeof(SOCKET_NAME));
	}
	return 0;
}

#define SECTION(name, ...)                                                                         \
	static const struct section name##_section = { name##_fields, ARRAY_SIZE(name##_fields),   \
						       __VA_ARGS__ }

static const struct field limits_fields[] = {
	{ "max_clients", T_INT, AT(struct config_limits, max_clients), 1, 65536 },
	{ "max_clients_per_uid", T_INT, AT(struct config_limits, max_clients_per_uid), 1, 65536 },
	{ "max_flows", T_INT, AT(struct config_limits, max_flows), 1, 1048576 },
	{ "max_flows_per_client", T_INT, AT(struct config_limits, max_flows_per_client), 1,
	  1048576 },
	{ "max_request_bytes", T_INT, AT(struct config_limits, max_request_bytes), 256, 16 * MiB },
	{ "idle_timeout_ms", T_INT, AT(struct config_limits, idle_timeout_ms), 100, 3600000 },
};
SECTION(limits, 0, NULL, check_limits);

#define DEVICE_NAME "a device name (no spaces, '/' or control characters)"

static const struct config_device device_init = {
	.port = 1, .gid_index = -1, .chunk_latency = 5120, .chunk_default = 1 * MiB
};
static const struct field device_fields[] = {
	{ "name", T_STR, AT(struct config_device, name), .valid = valid_device_name,
	  .what = DEVICE_NAME },
	{ "port", T_INT, AT(struct config_device, port), 1, 255 },
	{ "gid_index", T_INT, AT(struct config_device, gid_index), -1, 255 },
	{ "max_rate", T_RATE, AT(struct config_device, max_rate_bps) },
	{ "max_ops", T_INT, AT(struct config_device, max_ops_per_s), 0, 10000000000LL },
	{ "chunk_latency", T_INT, AT(struct config_device, chunk_latency), 512, 16 * MiB },
	{ "chunk_default", T_INT, AT(struct config_device, chunk_default), 512, 1 * GiB },
};
SECTION(device, sizeof(device_init), &device_init, check_device);

static const struct config_peer peer_init = { .port = PEER_PORT };
static const struct field peer_fields[] = {
	{ "address", T_STR, AT(struct config_peer, address), .valid = valid_host,
	  .what = "an IP address or host name" },
	{ "port", T_INT, AT(struct config_peer, port), 1, 65535 },
	{ "device", T_STR, AT(struct config_peer, device), .flags = F_OPT,
	  .valid = valid_device_name, .what = DEVICE_NAME },
};
SECTION(peer, sizeof(peer_init), &peer_init, check_peer);

static const struct field reference_fields[] = {
	{ "peers", T_ARR, .max = CONFIG_MAX_PEERS, .sub = &peer_section,
	  .arr_off = offsetof(struct config, peers),
	  .count_off = offsetof(struct config, n_peers) },
	{ "listen_address", T_STR, AT(struct config_reference, listen_address),
	  .flags = F_NULL, .valid = valid_ip, .what = "an IP address" },
	{ "listen_port", T_INT, AT(struct config_reference, listen_port), 1, 65535 },
	{ "secret_file", T_PATH, AT(struct config_reference, secret_file), .flags = F_NULL },
	{ "insecure_peers", T_BOOL, AT(struct config_reference, insecure_peers) },
	{ "period_us", T_INT, AT(struct config_reference, period_us), 10, 1000000 },
	{ "window", T_INT, AT(struct config_reference, window), 100, 1000000 },
	{ "max_age_ms", T_INT, AT(struct config_reference, max_age_ms), 0, 3600000 },
	{ "poll_us", T_INT, AT(struct config_reference, poll_us), 0, 100000 },
	{ "always_on", T_BOOL, AT(struct config_reference, always_on) },
	{ "loopback_correction", T_BOOL, AT(struct config_reference, loopback_correction) },
	{ "calibration_qps", T_INT, AT(struct config_reference, calibration_qps), 1,
	  CONFIG_CALIB_MAX_QPS },
};
SECTION(reference, 0, NULL, check_reference);

static const struct field controller_fields[] = {
	{ "target99_us", T_INT, AT(struct config_controller, target99_us), 1, 10000000 },
	{ "target99_over_base", T_BOOL, AT(struct config_controller, target99_over_base) },
	{ "additive_step", T_RATE, AT(struct config_controller, additive_step_bps) },
	{ "one_flow_per_app", T_BOOL, AT(struct config_controller, one_flow_per_app) },
	{ "unattainable_policy", T_ENUM, AT(struct config_controller, unattainable_policy),
	  .names = policy_names },
	{ "unattainable_delta_ms", T_INT, AT(struct config_controller, unattainable_delta_ms), 100,
	  3600000 },
	{ "stale_ms", T_INT, AT(struct config_controller, stale_ms), 1, 60000 },
	{ "pace_mode", T_ENUM, AT(struct config_controller, pace_mode), .names = pace_mode_names },
	{ "cpu_alpha", T_REAL, AT(struct config_controller, cpu_alpha) },
};
SECTION(controller, 0, NULL, NULL);

static const struct field tokens_fields[] = {
	{ "bytes", T_INT, AT(struct config_tokens, bytes), 512, 1 * GiB },
	{ "ops", T_INT, AT(struct config_tokens, ops), 0, 1000000000 },
};
SECTION(tokens, 0, NULL, NULL);

static const struct config_app_rule app_init = { .weight = 1 };
static const struct field app_fields[] = {
	{ "comm", T_STR, AT(struct config_app_rule, comm), .valid = valid_comm,
	  .what = "a process name (no control characters)" },
	{ "class", T_FN, 0, sizeof(struct config_app_rule), .parse = parse_class,
	  .dump = dump_class },
	{ "weight", T_INT, AT(struct config_app_rule, weight), 1, 1000 },
};
SECTION(app, sizeof(app_init), &app_init, check_app);


static const struct field top_fields[] = {
	{ "runtime_dir", T_PATH, AT(struct config, runtime_dir) },
	{ "socket", T_PATH, AT(struct config, socket) },
	{ "socket_group", T_STR, AT(struct config, socket_group), .flags = F_NULL,
	  .valid = valid_group, .what = "a group name" },
	{ "state_dir", T_PATH, AT(struct config, state_dir) },
	{ "log_level", T_ENUM, AT(struct config, log_level), .names = level_names },
	{ "debug", T_FN, AT(struct config, debug), .parse = parse_debug, .dump = dump_debug },
	{ "qpwatch", T_BOOL, AT(struct config, qpwatch) },
	{ "limits", T_OBJ, AT(struct config, limits), .sub = &limits_section },
	{ "devices", T_ARR, .max = CONFIG_MAX_DEVICES, .sub = &device_section,
	  .arr_off = offsetof(struct config, devices),
	  .count_off = offsetof(struct config, n_devices) },
	{ "reference", T_OBJ, AT(struct config, reference), .sub = &reference_section },
	{ "controller", T_OBJ, AT(struct config, controller), .sub = &controller_section },
	{ "tokens", T_OBJ, AT(struct config, tokens), .sub = &tokens_section },
	{ "apps", T_ARR, .max = CONFIG_MAX_APPS, .sub = &app_section,
	  .arr_off = offsetof(struct config, apps),
	  .count_off = offsetof(struct config, n_apps) },
	{ "tenants", T_ARR, .max = CONFIG_MAX_TENANTS, .sub = &configtenant_section,
	  .arr_off = offsetof(struct config, tenants),
	  .count_off = offsetof(struct config, n_tenants) },
};
SECTION(top, 0, NULL, check_config);

/* ---------------------------------------------------------------- load */

void config_init_defaults(struct config *c)
{
	*c = (struct config){
		.runtime_dir = "/run/justitia",
		.socket = "/run/justitia" SOCKET_NAME,
		.state_dir = "/var/lib/justitia",
		.log_level = CONFIG_LOG_INFO,
		.qpwatch = true,
		.limits = { .max_clients = 256, .max_clients_per_uid = 128, .idle_timeout_ms = 10000,
			    .max_flows = 4096, .max_flows_per_client = 1024,
			    .max_request_bytes = 64 * KiB },
		.reference = { .listen_port = PEER_PORT,
			       .period_us = 500, .window = 10000, .max_age_ms = 1000,
			       .poll_us = 100, .calibration_qps = CONFIG_CALIB_DEFAULT_QPS },
		.controller = { .target99_us = 100, .unattainable_delta_ms = 5000,
				.stale_ms = 50, .cpu_alpha = 0.5 },
		.tokens = { .bytes = 1 * MiB },
	};
}

void config_free(struct config *c)
{
	free(c->devices);
	free(c->peers);
	free(c->apps);
	free(c->tenants);
	config_init_defaults(c);
}

int config_parse_buffer(const char *name, const char *text, size_t len, struct config *c,
			char *err, size_t errlen)
{
	struct ctx x = { .name = name, .text = text ? text : "", .len = text ? len : 0,
			 .err = err, .errlen = errlen, .c = c };
	int rc;

	config_init_defaults(c);
	rc = configparse_text(&x, &top_section, c);
	if (rc)
		config_free(c);
	return rc;
}

int config_load(const char *path, struct config *c, char *err, size_t errlen)
{
	struct ctx x = { .name = path, .err = err, .errlen = errlen };
	size_t len;
	char *buf;
	int rc;

	config_init_defaults(c);
	rc = configparse_read(&x, &buf, &len);
	if (!rc)
		rc = config_parse_buffer(path, buf, len, c, err, errlen);
	free(buf);
	return rc;
}

const struct section *config_schema(void)
{
	return &top_section;
}

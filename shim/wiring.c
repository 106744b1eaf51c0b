// SPDX-License-Identifier: MIT
/* The shim's layers, wired: the daemon link (client.c) and the splitter
 * (split.c) never call the layers above them; they call through these
 * tables, which only this file fills in (docs/architecture.md).
 * Interposition layer; may call: the pacer and the splitter. */
#include "client.h"
#include "pacectl.h"
#include "split.h"

const struct shim_client_hooks shim_client_hooks = {
	.flow_changed = shim_pace_update,
	.daemon_lost = shim_pace_fail_open,
	.start_thread = shim_pace_start_thread,
	.split_create = shim_split_create,
	.split_follow = shim_split_follow,
};

const struct shim_split_hooks shim_split_hooks = {
	.watch = shim_pace_watch,
	.unwatch = shim_pace_unwatch,
};

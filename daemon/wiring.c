// SPDX-License-Identifier: MIT
/* The wiring of the daemon's state (justitiad.h) to the modules that get a
 * narrow view of it: the control socket's struct ctl_env.  Used by main.c
 * and by the tests that run ctl.c without main.c.
 * May call: splitq (split_peer's lookups), rread (its status); reads main's state, nobody below calls it. */
#include "wiring.h"

#include "clock.h"
#include "justitiad.h"
#include "rread.h"
#include "splitq.h"

/* split_peer's lookups (splitq.c) through the control socket's interface. */
static void split_lookup(void *d, const char *gid, uint32_t qpn, ctl_split_cb cb, void *arg)
{
	splitq_lookup(d, gid, qpn, cb, arg);
}

/* Remote READ control's status (rread.c). */
static json_t *remote_read(void *arg)
{
	struct daemon *d = arg;

	return d->rread ? rread_status(d->rread, clock_now_ns()) : NULL;
}

struct ctl_env wiring_ctl_env(struct daemon *d)
{
	return (struct ctl_env){
		.loop = d->loop,
		.cfg = &d->cfg,
		.config_path = d->config_path,
		.instance = d->instance,
		.start_ns = d->start_ns,
		.flows = &d->flows,
		.ctrl = &d->ctrl,
		.controller = &d->controller,
		.qpw = &d->qpw,
		.now_ns = daemon_now_ns,
		.split_lookup = split_lookup,
		.split_ctx = d,
		.remote_read = remote_read,
		.remote_ctx = d,
	};
}

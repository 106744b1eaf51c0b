// SPDX-License-Identifier: MIT
/* The isolation controller's port: which RDMA port it controls
 * (devices[0], or the first active port), whether a flow is on it, and the
 * port's MaxRate (configured, calibrated, or the link speed).
 * May call: rdma (the port's link), calib (the stored calibration),
 * refflow (its probes' device); not controller.c, ctrlshare.c or ctrlstatus.c. */
#include "ctrlport.h"

#include <stdio.h>
#include <string.h>

#include "justitiad.h"
#include "log.h"

/* The configuration entry of the controlled port, if any. */
const struct config_device *ctrlport_devcfg(const struct ctrl *c)
{
	const struct config *cfg = &c->d->cfg;

	for (size_t i = 0; i < cfg->n_devices; i++)
		if (!strcmp(cfg->devices[i].name, c->dev) && cfg->devices[i].port == c->port)
			return &cfg->devices[i];
	return NULL;
}

/* A flow's device never changes, its port may (update_qp): the name
 * comparison is cached in the flow until the controlled port changes. */
bool ctrlport_on_port(const struct ctrl *c, struct flow *f)
{
	if (f->ctl_gen != c->dev_gen) {
		f->ctl_gen = c->dev_gen;
		f->ctl_dev = c->dev[0] && !strcmp(f->device, c->dev);
	}
	return f->ctl_dev && (!f->port || f->port == c->port);
}

/* devices[0], or the first active port; its link speed; its calibration. */
void ctrlport_resolve(struct ctrl *c)
{
	const struct config *cfg = &c->d->cfg;
	struct rdma_dev rd;
	char err[160];
	const char *probe_dev;

	c->dev[0] = 0;
	c->port = 0;
	c->gid = -1;
	c->dev_gen++;
	if (cfg->n_devices) {
		snprintf(c->dev, sizeof(c->dev), "%s", cfg->devices[0].name);
		c->port = cfg->devices[0].port;
		c->gid = cfg->devices[0].gid_index;
	}
	c->link_bps = 0;
	if (!rdma_dev_open(&rd, c->dev, c->port, c->gid, err, sizeof(err))) {
		if (!c->dev[0]) {
			snprintf(c->dev, sizeof(c->dev), "%s", rd.name);
			c->port = rd.port;
		}
		c->link_bps = rd.link_bps;
		rdma_dev_close(&rd);
	} else {
		log_warnx("controller: %s%s%s", c->dev, c->dev[0] ? ": " : "", err);
	}
	if (c->dev[0]) {
		calib_load(cfg->state_dir, c->dev, c->port, &c->calib_bps, &c->calib_at,
			   &c->calib_qps);
		if (c->calib_bps)
			log_info("controller: %s port %u calibrated at %llu bit/s", c->dev, c->port,
				 (unsigned long long)c->calib_bps);
	}
	/* the probes leave from reference.peers[0].device when it names one */
	probe_dev = cfg->n_peers && cfg->peers[0].device[0] ? cfg->peers[0].device : c->dev;
	if (c->ref_ok)
		refflow_set_device(&c->ref, probe_dev, strcmp(probe_dev, c->dev) ? 0 : c->port,
			   strcmp(probe_dev, c->dev) ? -1 : c->gid);
}

/* MaxRate: devices[].max_rate (or justctl set max-rate), else the stored
 * calibration, else the port's link speed. */
uint64_t ctrlport_max_rate(struct ctrl *c)
{
	const struct config_device *dv = ctrlport_devcfg(c);

	if (dv && dv->max_rate_bps) {
		c->max_rate_src = "config";
		return dv->max_rate_bps;
	}
	if (c->calib_bps) {
		c->max_rate_src = "calibrated";
		return c->calib_bps;
	}
	if (c->link_bps) {
		c->max_rate_src = "link";
		return c->link_bps;
	}
	c->max_rate_src = "unknown";
	return 0;
}

uint64_t ctrl_device_max_rate(struct ctrl *c, const struct config_device *dv)
{
	if (dv->max_rate_bps)
		return dv->max_rate_bps;
	if (!strcmp(dv->name, c->dev) && dv->port == c->port)
		return c->calib_bps ? c->calib_bps : c->link_bps;
	return 0;
}

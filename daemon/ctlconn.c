// SPDX-License-Identifier: MIT
/* The control socket's connections once accepted: the queue of replies of
 * each client and its bounds, closing a client (freed later, from reap_w,
 * never under a caller's feet), finding it again for a late reply, and the
 * rate-limited warnings clients can cause.
 * May call: flows (a closed shim's flows), proto, log; nothing of ctl.c. */
#include "ctlconn.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flows.h"
#include "log.h"

#define OUT_MAX (1u << 20)       /* buffered replies per client */
#define OUT_TOTAL_MAX (32u << 20) /* buffered replies of all clients together */
#define WARN_EVERY_NS 10000000000ull /* a repeated warning at most once per 10 s */

/* A warning that clients can cause over and over: logged at once, then at
 * most once per 10 s with the number of those not logged meanwhile. */
void ctlconn_warn(struct ctl *c, int kind, const char *fmt, ...)
{
	uint64_t now = c->env.now_ns();
	char msg[256];
	va_list ap;

	if (c->warn[kind].last_ns && now - c->warn[kind].last_ns < WARN_EVERY_NS) {
		c->warn[kind].suppressed++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->warn[kind].suppressed)
		log_warnx("%s (and %llu more like it in the last %llu s)", msg,
			  (unsigned long long)c->warn[kind].suppressed,
			  (unsigned long long)((now - c->warn[kind].last_ns) / 1000000000ull));
	else
		log_warnx("%s", msg);
	c->warn[kind].last_ns = now;
	c->warn[kind].suppressed = 0;
}

void ctlconn_flush(struct ctl_client *cl)
{
	size_t before = cl->out_len;
	int rc = proto_out_flush(cl->fd, cl->out, &cl->out_len);

	if (cl->out_len != before) {
		cl->ctl->out_total -= before - cl->out_len;
		cl->stuck_ns = 0; /* progress */
	}
	if (rc < 0) {
		log_debug(LOG_SS_CTL, "pid %d: send: %s", (int)cl->pid, strerror(-rc));
		ctlconn_close(cl);
		return;
	}
	if (cl->out_len) {
		if (!cl->stuck_ns)
			cl->stuck_ns = cl->ctl->env.now_ns();
		ev_io_start(cl->ctl->env.loop, &cl->ww);
	} else {
		cl->stuck_ns = 0;
		ev_io_stop(cl->ctl->env.loop, &cl->ww);
		if (cl->closing)
			ctlconn_close(cl);
	}
}

/* Queue a reply (consumes @msg).  Descriptors, if any, travel with its
 * first byte, which needs an empty output queue. */
void ctlconn_reply(struct ctl_client *cl, json_t *msg, const int *fds, int nfds)
{
	size_t len, off = 0;
	char *line = proto_encode(msg, &len);
	int rc;

	json_decref(msg);
	if (!line) {
		ctlconn_close(cl);
		return;
	}
	if (nfds) {
		ssize_t n = proto_send_once(cl->fd, line, len, fds, nfds);

		if (n <= 0) {
			log_debug(LOG_SS_CTL, "pid %d: sendmsg: %s", (int)cl->pid,
				  strerror(n ? (int)-n : EIO));
			free(line);
			ctlconn_close(cl);
			return;
		}
		off = (size_t)n;
	}
	rc = cl->ctl->out_total + len - off > OUT_TOTAL_MAX
		     ? -ENOBUFS
		     : proto_out_append(&cl->out, &cl->out_len, &cl->out_cap, line + off, len - off,
					OUT_MAX);
	free(line);
	if (rc == -ENOBUFS)
		ctlconn_warn(cl->ctl, CTLCONN_W_UNREAD,
			     "pid %d (uid %u) does not read its replies (%zu bytes unsent); "
			     "disconnecting", (int)cl->pid, (unsigned)cl->uid, cl->out_len);
	if (rc) {
		ctlconn_close(cl);
		return;
	}
	cl->ctl->out_total += len - off;
	ctlconn_flush(cl);
}

void ctlconn_close(struct ctl_client *cl)
{
	struct ctl *c = cl->ctl;
	struct ctl_client **pp;

	if (cl->magic != CTLCONN_MAGIC)
		return;
	ev_io_stop(c->env.loop, &cl->rw);
	ev_io_stop(c->env.loop, &cl->ww);
	for (pp = &c->clients; *pp; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
	c->n_clients--;
	c->n_reserved -= cl->reserved ? 1 : 0;
	c->out_total -= cl->out_len;
	if (cl->proc) {
		log_debug(LOG_SS_FLOW, "pid %d disconnected: freeing %zu flows", (int)cl->pid,
			  cl->proc->n_flows);
		flows_proc_free(c->env.flows, cl->proc);
	}
	close(cl->fd);
	cl->fd = -1;
	proto_linebuf_free(&cl->in);
	free(cl->out);
	cl->out = NULL;
	cl->out_len = cl->out_cap = 0;
	/* not freed here: the caller may be client_read_cb's loop, which looks
	 * at cl->magic after each request (two requests in one write, the first
	 * reply failing); reap_cb frees it once the callback has returned */
	cl->magic = 0;
	cl->next = c->graveyard;
	c->graveyard = cl;
	ev_timer_set(&c->reap_w, 0, 0);
	ev_timer_start(c->env.loop, &c->reap_w);
}

void ctlconn_reap(struct ctl *c)
{
	while (c->graveyard) {
		struct ctl_client *cl = c->graveyard;

		c->graveyard = cl->next;
		free(cl);
	}
}

void ctlconn_reap_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ctlconn_reap(w->data);
}

struct ctl_client *ctlconn_by_serial(struct ctl *c, uint64_t serial)
{
	for (struct ctl_client *cl = c->clients; cl; cl = cl->next)
		if (cl->serial == serial && cl->magic == CTLCONN_MAGIC)
			return cl;
	return NULL;
}


// SPDX-License-Identifier: MIT
/* The daemon side of the control socket: the socket, its directory and
 * accepting connections (limits, the administrators' reserve, timeouts).
 * May call: ctlcmd (a request line), ctlconn (replies, closing), config,
 * proto, log; the rest of the daemon only through struct ctl_env. */
#include "ctl.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"
#include "ctlcmd.h"
#include "ctlconn.h"
#include "log.h"

/* Hygiene (OpenSMTPD/lldpd/chrony): the socket lives in a directory that is
 * not world-accessible; a live socket at the path means another instance
 * runs (we refuse to start), a dead one is stale (unlinked); the umask is
 * tightened before bind(); SO_PEERCRED is read on every accept; mutating
 * commands need uid 0; clients, request size and buffered output are
 * bounded, and a misbehaving client is disconnected, never trusted. */

#define READ_CHUNK 16384
#define ADMIN_RESERVE 8          /* connections beyond max_clients for administrators */
#define ACCEPT_BURST 64          /* connections accepted per wake-up */

static void client_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl_client *cl = w->data;
	char buf[READ_CHUNK], *line;
	size_t len;
	ssize_t n;
	int rc;

	if (cl->magic != CTLCONN_MAGIC)
		return;
	n = recv(cl->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		ctlconn_close(cl);
		return;
	}
	if (cl->closing)
		return; /* ignore input after a fatal error */
	rc = proto_linebuf_feed(&cl->in, buf, (size_t)n);
	/* answer the complete requests first; client_reply may close the
	 * client, so re-check the magic each round */
	while (cl->magic == CTLCONN_MAGIC && !cl->closing &&
	       proto_linebuf_next(&cl->in, &line, &len) == 1) {
		ctlcmd_dispatch(cl, line, len);
		free(line);
	}
	if (cl->magic == CTLCONN_MAGIC) /* half a line waiting: since when */
		cl->partial_ns = cl->in.len > cl->in.tail
					 ? (cl->partial_ns ? cl->partial_ns : cl->ctl->env.now_ns())
					 : 0;
	if (rc == -EMSGSIZE && cl->magic == CTLCONN_MAGIC && !cl->closing) {
		ctlconn_warn(cl->ctl, CTLCONN_W_TOO_LARGE,
			     "pid %d (uid %u) sent a request over %zu bytes; disconnecting",
			     (int)cl->pid, (unsigned)cl->uid, cl->in.max);
		cl->closing = 1;
		ev_io_stop(loop, &cl->rw);
		ctlconn_reply(cl, proto_reply_error(NULL, PROTO_E_TOO_LARGE,
						    "request longer than %zu bytes", cl->in.max),
			     NULL, 0);
	}
}

static void client_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl_client *cl = w->data;

	if (cl->magic == CTLCONN_MAGIC)
		ctlconn_flush(cl);
}

/* Refuse a connection: one limit error without id, then close. */
static void refuse(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void refuse(int fd, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	json_t *e;
	size_t l;
	char *line;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e = proto_reply_error(NULL, PROTO_E_LIMIT, "%s", msg);
	line = proto_encode(e, &l);
	json_decref(e);
	if (line && send(fd, line, l, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* best effort: the client learns why from the reply */
	}
	free(line);
	close(fd);
}

/* Which slot a new connection of @uid gets: 0 a normal one, 1 one of the
 * administrators' reserve (after closing the reserved connection idle
 * longest if they are all taken), -1 none (the reason in @why). */
static int admit(struct ctl *c, uid_t uid, bool admin, char *why, size_t n)
{
	const struct config_limits *lim = &c->env.cfg->limits;
	struct ctl_client *oldest = NULL;
	size_t of_uid = 0;

	for (struct ctl_client *cl = c->clients; cl; cl = cl->next) {
		of_uid += cl->uid == uid && !cl->reserved;
		if (cl->reserved && !cl->closing && (!oldest || cl->active_ns < oldest->active_ns))
			oldest = cl;
	}
	if (c->n_clients - c->n_reserved < lim->max_clients && of_uid < lim->max_clients_per_uid)
		return 0;
	if (c->n_clients - c->n_reserved >= lim->max_clients)
		snprintf(why, n, "too many clients (max_clients %u)", lim->max_clients);
	else
		snprintf(why, n, "too many clients of uid %u (max_clients_per_uid %u)",
			 (unsigned)uid, lim->max_clients_per_uid);
	if (!admin)
		return -1;
	if (c->n_reserved >= ADMIN_RESERVE) {
		if (!oldest)
			return -1;
		log_info("administrators' reserve full: closing the connection of pid %d idle "
			 "longest", (int)oldest->pid);
		oldest->closing = 1;
		ctlconn_reply(oldest, proto_reply_error(NULL, PROTO_E_LIMIT,
							"closed: another administrator needed "
							"this reserved connection"),
			     NULL, 0);
		ctlconn_close(oldest); /* now, flushed or not: its slot is needed */
	}
	return 1;
}

static void accept_one(struct ctl *c, struct ev_loop *loop, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct ctl_client *cl;
	char why[160];
	bool admin;
	int slot;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		log_warn("SO_PEERCRED");
		close(fd);
		return;
	}
	/* root and the daemon's own user always get an answer: a reserve of
	 * connections beyond max_clients that no shim may hold */
	admin = cred.uid == 0 || cred.uid == geteuid();
	slot = admit(c, cred.uid, admin, why, sizeof(why));
	if (slot < 0) {
		ctlconn_warn(c, CTLCONN_W_REFUSED, "refusing pid %d uid %u: %s", (int)cred.pid,
			     (unsigned)cred.uid, why);
		refuse(fd, "%s", why);
		return;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		close(fd);
		return;
	}
	cl->magic = CTLCONN_MAGIC;
	cl->serial = ++c->next_serial;
	cl->fd = fd;
	cl->ctl = c;
	cl->pid = cred.pid;
	cl->uid = cred.uid;
	cl->gid = cred.gid;
	cl->admin = admin;
	cl->reserved = slot == 1;
	cl->active_ns = c->env.now_ns();
	proto_linebuf_init(&cl->in, c->env.cfg->limits.max_request_bytes);
	ev_io_init(&cl->rw, client_read_cb, fd, EV_READ);
	ev_io_init(&cl->ww, client_write_cb, fd, EV_WRITE);
	cl->rw.data = cl;
	cl->ww.data = cl;
	ev_io_start(loop, &cl->rw);
	cl->next = c->clients;
	c->clients = cl;
	c->n_clients++;
	c->n_reserved += cl->reserved ? 1 : 0;
	log_debug(LOG_SS_CTL, "connection from pid %d uid %u%s", (int)cred.pid, (unsigned)cred.uid,
		  cl->reserved ? " (administrators' reserve)" : "");
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl *c = w->data;

	for (int i = 0; i < ACCEPT_BURST; i++) {
		int fd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn("accept");
			return;
		}
		accept_one(c, loop, fd);
	}
}

/* Once a second: close what waits too long.  A connection without hello
 * (not a shim) that sends no complete request, any connection with half a
 * request, or unread replies, for limits.idle_timeout_ms. */
static void idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ctl *c = w->data;
	uint64_t now = c->env.now_ns(), lim = c->env.cfg->limits.idle_timeout_ms * 1000000ull;
	struct ctl_client *cl, *next;

	for (cl = c->clients; cl; cl = next) {
		const char *why = NULL;

		next = cl->next;
		if (cl->closing)
			continue;
		if (cl->stuck_ns && now - cl->stuck_ns > lim) {
			ctlconn_warn(c, CTLCONN_W_TIMEOUT, "pid %d (uid %u) has not read its replies for "
				     "%u ms; disconnecting", (int)cl->pid, (unsigned)cl->uid,
				     c->env.cfg->limits.idle_timeout_ms);
			ctlconn_close(cl);
			continue;
		}
		if (cl->partial_ns && now - cl->partial_ns > lim)
			why = "request incomplete";
		else if (!cl->proc && !cl->out_len && now - cl->active_ns > lim)
			why = "no request";
		if (!why)
			continue;
		ctlconn_warn(c, CTLCONN_W_TIMEOUT, "pid %d (uid %u): %s for %u ms; disconnecting",
			     (int)cl->pid, (unsigned)cl->uid, why, c->env.cfg->limits.idle_timeout_ms);
		cl->closing = 1;
		ev_io_stop(loop, &cl->rw);
		ctlconn_reply(cl, proto_reply_error(NULL, PROTO_E_TIMEOUT, "%s for %u ms: closing",
						    why, c->env.cfg->limits.idle_timeout_ms),
			     NULL, 0);
		if (cl->magic == CTLCONN_MAGIC && cl->out_len) /* cannot even take that */
			ctlconn_close(cl);
	}
}

/* ------------------------------------------------------------ setup */

/* Does @dir hold anything but @keep (the socket's name)?  1, 0 or -errno. */
static int has_other_entries(const char *dir, const char *keep)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	int other = 0;

	if (!dp)
		return -errno;
	while (!other && (e = readdir(dp)))
		other = strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
			(!keep || strcmp(e->d_name, keep));
	closedir(dp);
	return other;
}

/* The directory of the socket.  One the daemon creates, or finds holding
 * nothing but its socket, is its own: 0750 root:<socket_group>, 0700
 * without a group.  A directory with other files in it ("/run") is shared:
 * its mode and group are left alone (the socket itself is 0660).  One that
 * everybody may write to ("/tmp") or that is not ours disables the socket. */
static int secure_dir(const char *dir, gid_t gid, const char *keep)
{
	struct stat st;
	int own = 1;

	if (mkdir(dir, 0700)) {
		if (errno != EEXIST) {
			log_warn("cannot create %s", dir);
			return -errno;
		}
		own = 0;
	}
	if (lstat(dir, &st)) {
		log_warn("%s", dir);
		return -errno;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		log_warnx("%s is not a directory owned by uid %u: control socket disabled", dir,
			  (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & S_IWOTH) {
		log_warnx("%s is writable by everybody (mode %04o): control socket disabled; "
			  "use a directory of its own", dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	if (!own) {
		own = has_other_entries(dir, keep);
		if (own < 0) {
			log_warn("cannot read %s", dir);
			return own;
		}
		own = !own;
	}
	if (!own) {
		log_info("%s holds other files: its mode (%04o) and group are left as they are",
			 dir, (unsigned)(st.st_mode & 07777));
		return 0;
	}
	if (chown(dir, (uid_t)-1, gid) || chmod(dir, gid != (gid_t)-1 ? 0750 : 0700)) {
		log_warn("cannot secure %s", dir);
		return -errno;
	}
	return 0;
}

static int stale_check(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (lstat(path, &st)) {
		return errno == ENOENT ? 0 : -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		log_warnx("%s exists and is not a socket; not touching it", path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (rc == 0) {
		log_warnx("another justitiad answers on %s", path);
		return -EADDRINUSE;
	}
	if (errno != ECONNREFUSED) {
		log_warn("probing %s", path);
		return -errno;
	}
	log_info("removing stale socket %s", path);
	return unlink(path) ? -errno : 0;
}

int ctl_open(struct ctl *c, const struct ctl_env *env)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	gid_t gid = (gid_t)-1;
	char dir[sizeof(c->path)], *slash;
	const char *base;
	mode_t old;
	int rc;

	memset(c, 0, sizeof(*c));
	c->env = *env;
	c->lfd = -1;
	ev_init(&c->reap_w, ctlconn_reap_cb);
	c->reap_w.data = c;
	snprintf(c->path, sizeof(c->path), "%s", env->cfg->socket);
	if (env->cfg->socket_group[0]) {
		struct group *g = getgrnam(env->cfg->socket_group);

		if (!g) {
			log_warnx("socket_group \"%s\" does not exist", env->cfg->socket_group);
			return -ENOENT;
		}
		gid = g->gr_gid;
	}
	snprintf(dir, sizeof(dir), "%s", c->path);
	slash = strrchr(dir, '/');
	base = slash ? slash + 1 : dir;
	if (slash && slash != dir)
		*slash = 0;
	rc = secure_dir(env->cfg->runtime_dir, gid,
			strcmp(dir, env->cfg->runtime_dir) ? NULL : base);
	if (rc)
		return rc;
	if (slash && slash != dir) {
		if (strcmp(dir, env->cfg->runtime_dir)) {
			rc = secure_dir(dir, gid, base);
			if (rc)
				return rc;
		}
	}
	rc = stale_check(c->path);
	if (rc)
		return rc;
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->lfd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->path);
	old = umask(0117); /* socket 0660 from the start: no window */
	rc = bind(c->lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc) {
		rc = -errno;
		log_warn("bind %s", c->path);
		goto out_close;
	}
	if (gid != (gid_t)-1 && chown(c->path, (uid_t)-1, gid)) {
		rc = -errno;
		log_warn("chown %s", c->path);
		goto out_unlink;
	}
	if (listen(c->lfd, SOMAXCONN)) {
		rc = -errno;
		goto out_unlink;
	}
	ev_io_init(&c->lw, accept_cb, c->lfd, EV_READ);
	c->lw.data = c;
	ev_io_start(env->loop, &c->lw);
	ev_timer_init(&c->idle_w, idle_cb, 1.0, env->cfg->limits.idle_timeout_ms < 2000
							? env->cfg->limits.idle_timeout_ms / 2000.0
							: 1.0);
	c->idle_w.data = c;
	ev_timer_start(env->loop, &c->idle_w);
	log_info("listening on %s", c->path);
	return 0;
out_unlink:
	unlink(c->path);
out_close:
	close(c->lfd);
	c->lfd = -1;
	return rc;
}

void ctl_close(struct ctl *c)
{
	while (c->clients)
		ctlconn_close(c->clients);
	ev_timer_stop(c->env.loop, &c->reap_w);
	ev_timer_stop(c->env.loop, &c->idle_w);
	ctlconn_reap(c);
	if (c->lfd >= 0) {
		ev_io_stop(c->env.loop, &c->lw);
		close(c->lfd);
		unlink(c->path);
		c->lfd = -1;
	}
}


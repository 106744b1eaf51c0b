// SPDX-License-Identifier: MIT
/* The QP watcher (qpwatch.h): loads qpwatch.bpf.c, reads its ring buffer in
 * the event loop, and keeps the table of kernel-seen QPs.
 * May call: qptable, rdmanl, flows (the registered QPs), clock, log. */
#include "qpwatch.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "justitiad.h"
#include "log.h"
#include "qpwatch_event.h"
#include "rdmanl.h"
#include "qpwatch.skel.h" /* generated in build/bpf/ (Makefile) */

#define QPW_MAGIC   0x51505754u /* "QPWT" */
#define PERIOD_S    0.5         /* grace checks, warnings, retries */
#define SWEEP_NS    (5 * 1000000000ull)
#define TABLE_MAX   (256 * 1024)
#define SYS_BTF     "/sys/kernel/btf/vmlinux"
#define SYS_IB_CORE "/sys/module/ib_core"
#define PERM_HINT                                                                     \
	"needs CAP_BPF, CAP_PERFMON and, on kernels that limit perf events or module " \
	"BTF to it, CAP_SYS_ADMIN; see docs/qpwatch.md"

/* ------------------------------------------------------------ libbpf's log */

__attribute__((format(printf, 2, 0))) static int libbpf_log(enum libbpf_print_level level,
							     const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0; /* every relocation: too much even for -D bpf */
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = 0;
	log_debug(LOG_SS_BPF, "%s", buf); /* libbpf starts its lines with "libbpf: " */
	return 0;
}

/* ------------------------------------------------------------ events */

/* Check one ring-buffer record and copy it out: 0, or -EINVAL. */
static int qpw_decode(const void *data, size_t len, struct qpw_event *ev)
{
	if (len != sizeof(*ev))
		return -EINVAL;
	memcpy(ev, data, sizeof(*ev));
	if ((ev->kind != QPW_EV_CREATE && ev->kind != QPW_EV_DESTROY) || ev->qpn > 0xffffff)
		return -EINVAL;
	ev->dev[sizeof(ev->dev) - 1] = 0;
	ev->comm[sizeof(ev->comm) - 1] = 0;
	if (!ev->dev[0])
		return -EINVAL;
	/* comm is the application's to choose (prctl): no control characters in our log */
	for (char *c = ev->comm; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return 0;
}

/* With devices listed in the configuration, the daemon answers for those
 * only (the test VM runs one daemon per device). */
static bool watched_device(const struct qpwatch *w, const char *dev)
{
	const struct config *c = &w->d->cfg;

	for (size_t i = 0; i < c->n_devices; i++)
		if (!strcmp(c->devices[i].name, dev))
			return true;
	return !c->n_devices;
}

static void add_qp(struct qpwatch *w, const char *dev, uint32_t qpn, pid_t pid, const char *comm,
		   uint32_t type, enum qpt_source src, uint64_t now)
{
	int rc;

	if (pid == w->self || !watched_device(w, dev))
		return;
	rc = qpt_add(&w->table, dev, qpn, pid, comm, type, src, now);
	if (rc == -ENOSPC && w->table.untracked == 1)
		log_warnx("QP watcher: more than %zu QPs; the others are not tracked",
			  w->table.max);
	else if (rc && rc != -ENOSPC)
		log_debug(LOG_SS_BPF, "QP %s/%u not tracked: %s", dev, qpn, strerror(-rc));
}

static void qpw_handle(struct qpwatch *w, const struct qpw_event *ev, uint64_t now)
{
	if (ev->kind == QPW_EV_CREATE) {
		log_debug(LOG_SS_BPF, "pid %u (%s) created %s QP %u on %s", ev->pid, ev->comm,
			  qpt_type_name(ev->qp_type), ev->qpn, ev->dev);
		add_qp(w, ev->dev, ev->qpn, (pid_t)ev->pid, ev->comm, ev->qp_type, QPT_SRC_BPF,
		       now);
	} else {
		log_debug(LOG_SS_BPF, "QP %u on %s destroyed (by pid %u)", ev->qpn, ev->dev,
			  ev->pid);
		qpt_remove(&w->table, ev->dev, ev->qpn);
	}
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct qpwatch *w = ctx;
	struct qpw_event ev;

	if (qpw_decode(data, len, &ev)) {
		if (!w->bad_events++)
			log_warnx("QP watcher: malformed record (%zu bytes) ignored", len);
		return 0;
	}
	qpw_handle(w, &ev, clock_now_ns());
	return 0;
}

static void rb_cb(struct ev_loop *loop, ev_io *io, int revents)
{
	struct qpwatch *w = io->data;
	int n;

	if (w->magic != QPW_MAGIC || !w->rb)
		return;
	n = ring_buffer__consume(w->rb);
	if (n < 0)
		log_debug(LOG_SS_BPF, "ring buffer: %s", strerror(-n));
}

/* ------------------------------------------------------------ existing QPs */

struct nl_ctx {
	struct qpwatch *w;
	uint64_t now;
	size_t n;
};

/* netlink gives the creating thread: the process is its thread group */
static void proc_of(pid_t tid, pid_t *pid, char *comm, size_t len)
{
	char path[64], line[256];
	FILE *f;

	*pid = tid;
	comm[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		int v;

		if (!strncmp(line, "Name:\t", 6)) {
			size_t k = strcspn(line + 6, "\n");

			k = k < len - 1 ? k : len - 1;
			memcpy(comm, line + 6, k);
			comm[k] = 0;
		} else if (sscanf(line, "Tgid: %d", &v) == 1 && v > 0) {
			*pid = v;
		}
	}
	fclose(f);
}

static void nl_qp(void *arg, const struct rdmanl_qp *q)
{
	struct nl_ctx *c = arg;
	char comm[QPT_COMM_LEN];
	pid_t pid;

	if (q->kernel || !q->pid)
		return; /* a kernel user's QP (GSI, IPoIB, ...) */
	proc_of((pid_t)q->pid, &pid, comm, sizeof(comm));
	add_qp(c->w, q->dev, q->qpn, pid, comm, q->qp_type, QPT_SRC_NETLINK, c->now);
	c->n++;
}

/* Replace the table by what RDMA netlink lists; events still queued in the
 * ring buffer are newer and are applied on top. */
static int resync(struct qpwatch *w, size_t *n)
{
	struct nl_ctx c = { .w = w, .now = clock_now_ns() };
	int rc;

	qpt_sync_begin(&w->table);
	rc = rdmanl_dump_qps(nl_qp, &c);
	if (!rc)
		qpt_sync_end(&w->table); /* a partial list drops nothing */
	*n = c.n;
	return rc;
}

/* ------------------------------------------------------------ managed or not */

static void match_flows(struct qpwatch *w)
{
	qpt_match_begin(&w->table);
	for (struct proc *p = w->d->flows.procs; p; p = p->next)
		for (struct flow *f = p->flows; f; f = f->next) {
			qpt_match(&w->table, f->device, f->qpn, p->pid);
			if (f->split_qpn >= 0 && f->split_qpn <= 0xffffff)
				qpt_match(&w->table, f->device, (uint32_t)f->split_qpn, p->pid);
		}
	qpt_match_end(&w->table, clock_now_ns());
}

static void warn_unmanaged(void *arg, const struct qpt_qp *q)
{
	log_warnx("pid %d (%s) uses RDMA without the Justitia shim: %s QP %u on %s is not "
		  "managed", (int)q->proc->pid, q->proc->comm[0] ? q->proc->comm : "?",
		  qpt_type_name(q->qp_type), q->qpn, q->dev);
}

static bool pid_gone(pid_t pid)
{
	return kill(pid, 0) && errno == ESRCH;
}

/* ------------------------------------------------------------ start, stop */

static void set_off(struct qpwatch *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_off(struct qpwatch *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->reason, sizeof(w->reason), fmt, ap);
	va_end(ap);
	w->on = false;
	w->mode = NULL;
}

/* Open, load and attach one of the two program sets; one cleanup path. */
static int load_mode(struct qpwatch *w, bool fentry, char *why, size_t len)
{
	struct qpwatch_bpf *s;
	const char *step;
	int rc;

	step = "open";
	s = qpwatch_bpf__open();
	if (!s) {
		rc = -errno;
		goto out_why;
	}
	bpf_program__set_autoload(s->progs.fexit_create_qp, fentry);
	bpf_program__set_autoload(s->progs.fentry_destroy_qp, fentry);
	bpf_program__set_autoload(s->progs.fexit_destroy_qp, fentry);
	bpf_program__set_autoload(s->progs.kretprobe_create_qp, !fentry);
	bpf_program__set_autoload(s->progs.kprobe_destroy_qp, !fentry);
	bpf_program__set_autoload(s->progs.kretprobe_destroy_qp, !fentry);
	step = "load";
	rc = qpwatch_bpf__load(s);
	if (rc)
		goto out_destroy;
	step = "attach";
	rc = qpwatch_bpf__attach(s);
	if (rc)
		goto out_destroy;
	w->skel = s;
	return 0;
out_destroy:
	qpwatch_bpf__destroy(s);
out_why:
	snprintf(why, len, "%s: %s", step, strerror(-rc));
	return rc;
}

static bool kernel_too_old(char *rel, size_t len)
{
	struct utsname u;
	int maj = 0, min = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &maj, &min) != 2)
		return false;
	snprintf(rel, len, "%s", u.release);
	return maj < 5 || (maj == 5 && min < 8);
}

static bool denied(int rc)
{
	return rc == -EPERM || rc == -EACCES;
}

static void start(struct qpwatch *w)
{
	char why_f[128], why_k[128], rel[65];
	size_t n = 0;
	int rf, rk, rc;

	w->wait_ib_core = false;
	if (!w->d->cfg.qpwatch) {
		set_off(w, "disabled in the configuration (\"qpwatch\": false)");
		log_info("QP watcher off: %s", w->reason);
		return;
	}
	if (kernel_too_old(rel, sizeof(rel))) {
		set_off(w, "kernel %s is too old (the BPF ring buffer needs Linux 5.8)", rel);
		goto out_log;
	}
	if (access(SYS_BTF, R_OK)) {
		set_off(w, "the kernel has no BTF (%s: %s)", SYS_BTF, strerror(errno));
		goto out_log;
	}
	if (access(SYS_IB_CORE, F_OK)) {
		set_off(w, "ib_core is not loaded (no RDMA in this kernel yet)");
		w->wait_ib_core = true;
		goto out_log;
	}
	rf = load_mode(w, true, why_f, sizeof(why_f));
	if (rf) {
		log_debug(LOG_SS_BPF, "fentry/fexit: %s; trying kprobes", why_f);
		rk = load_mode(w, false, why_k, sizeof(why_k));
		if (rk) {
			if (denied(rf) || denied(rk))
				set_off(w, "no permission (fentry: %s; kprobe: %s): " PERM_HINT,
					why_f, why_k);
			else
				set_off(w, "cannot load the BPF program (fentry: %s; kprobe: %s)",
					why_f, why_k);
			goto out_log;
		}
	}
	w->mode = rf ? "kprobe" : "fentry";
	w->rb = ring_buffer__new(bpf_map__fd(w->skel->maps.events), on_record, w, NULL);
	if (!w->rb) {
		rc = -errno;
		qpwatch_bpf__destroy(w->skel);
		w->skel = NULL;
		set_off(w, "cannot read the ring buffer: %s", strerror(-rc));
		goto out_log;
	}
	ev_io_init(&w->rb_io, rb_cb, ring_buffer__epoll_fd(w->rb), EV_READ);
	w->rb_io.data = w;
	ev_io_start(w->d->loop, &w->rb_io);
	w->on = true;
	w->reason[0] = 0;
	w->lost_seen = 0;
	/* attached first, listed second: nothing falls between the two */
	rc = resync(w, &n);
	if (rc)
		log_warnx("QP watcher: cannot list the existing QPs (RDMA netlink: %s); "
			  "only new ones are seen", strerror(-rc));
	log_info("QP watcher on (%s on ib_create_qp_user/ib_destroy_qp_user, %zu existing "
		 "user QPs)", w->mode, n);
	return;
out_log:
	log_warnx("QP watcher off: %s", w->reason);
}

static void stop(struct qpwatch *w)
{
	if (w->rb) {
		ev_io_stop(w->d->loop, &w->rb_io);
		ring_buffer__free(w->rb);
		w->rb = NULL;
	}
	if (w->skel) {
		qpwatch_bpf__destroy(w->skel);
		w->skel = NULL;
	}
	qpt_clear(&w->table);
	w->on = false;
	w->mode = NULL;
	w->wait_ib_core = false;
}

static void timer_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct qpwatch *w = t->data;
	uint64_t now = clock_now_ns(), lost;
	size_t n;

	if (w->magic != QPW_MAGIC)
		return;
	if (!w->on) {
		if (w->wait_ib_core && !access(SYS_IB_CORE, F_OK)) {
			log_info("ib_core is loaded now: starting the QP watcher");
			start(w);
		}
		return;
	}
	if (access(SYS_IB_CORE, F_OK)) {
		/* only possible in kprobe mode (trampolines pin ib_core): the
		 * probes died with it; attach again when it is back */
		stop(w);
		set_off(w, "ib_core was unloaded; waiting for it to come back");
		w->wait_ib_core = true;
		log_warnx("QP watcher off: %s", w->reason);
		return;
	}
	lost = w->skel ? w->skel->bss->n_dropped : 0;
	if (lost != w->lost_seen) {
		log_warnx("QP watcher: %llu records lost (ring buffer full); resynchronising",
			  (unsigned long long)(lost - w->lost_seen));
		w->lost_seen = lost;
		if (resync(w, &n))
			log_debug(LOG_SS_BPF, "resync failed: the table may be stale");
	}
	match_flows(w);
	qpt_warn_unmanaged(&w->table, now, w->grace_ns, warn_unmanaged, w);
	if (now - w->last_sweep_ns >= SWEEP_NS) {
		w->last_sweep_ns = now;
		qpt_forget_procs(&w->table, pid_gone);
	}
}

void qpwatch_init(struct qpwatch *w, struct daemon *d)
{
	memset(w, 0, sizeof(*w));
	w->magic = QPW_MAGIC;
	w->d = d;
	w->self = getpid();
	w->grace_ns = QPWATCH_GRACE_MS * 1000000ull;
	libbpf_set_print(libbpf_log);
	if (qpt_init(&w->table, TABLE_MAX)) {
		set_off(w, "out of memory");
		log_warnx("QP watcher off: %s", w->reason);
		w->magic = 0;
		return;
	}
	ev_timer_init(&w->timer, timer_cb, PERIOD_S, PERIOD_S);
	w->timer.data = w;
	ev_timer_start(d->loop, &w->timer);
	start(w);
}

void qpwatch_fini(struct qpwatch *w)
{
	if (w->magic != QPW_MAGIC)
		return;
	ev_timer_stop(w->d->loop, &w->timer);
	stop(w);
	qpt_fini(&w->table);
	w->magic = 0;
}

void qpwatch_reconfigure(struct qpwatch *w)
{
	size_t n;

	if (w->magic != QPW_MAGIC)
		return;
	if (w->d->cfg.qpwatch && w->on) {
		if (resync(w, &n)) /* the devices may have changed */
			log_debug(LOG_SS_BPF, "resync failed: the table may be stale");
	} else if (w->d->cfg.qpwatch && !w->wait_ib_core) {
		start(w);
	} else if (!w->d->cfg.qpwatch && (w->on || w->wait_ib_core)) {
		stop(w);
		set_off(w, "disabled in the configuration (\"qpwatch\": false)");
		log_info("QP watcher off: %s", w->reason);
	}
}

/* ------------------------------------------------------------ control socket */

json_t *qpwatch_status_json(struct qpwatch *w)
{
	bool on = w->magic == QPW_MAGIC && w->on;

	if (on)
		match_flows(w);
	return json_pack("{s:s, s:o, s:o, s:I, s:o, s:I, s:I}", "state", on ? "on" : "off",
			 "mode", on ? json_string(w->mode) : json_null(),
			 "reason", on ? json_null() : json_string(w->reason),
			 "qps", (json_int_t)(on ? w->table.n : 0),
			 "unmanaged", on ? json_integer((json_int_t)qpt_count_unmanaged(
						   &w->table, clock_now_ns(), w->grace_ns))
					 : json_null(),
			 "lost", (json_int_t)(on && w->skel ? w->skel->bss->n_dropped : 0),
			 "grace_ms", (json_int_t)QPWATCH_GRACE_MS);
}

json_t *qpwatch_unmanaged_json(struct qpwatch *w)
{
	if (w->magic != QPW_MAGIC || !w->on)
		return json_null();
	match_flows(w);
	return json_integer((json_int_t)qpt_count_unmanaged(&w->table, clock_now_ns(), w->grace_ns));
}

static int cmp_qp(const void *a, const void *b)
{
	const struct qpt_qp *x = *(const struct qpt_qp *const *)a;
	const struct qpt_qp *y = *(const struct qpt_qp *const *)b;
	int c;

	if (x->proc->pid != y->proc->pid)
		return x->proc->pid < y->proc->pid ? -1 : 1;
	c = strcmp(x->dev, y->dev);
	if (c)
		return c;
	return x->qpn < y->qpn ? -1 : x->qpn > y->qpn;
}

void qpwatch_append_unmanaged(struct qpwatch *w, json_t *flows)
{
	const struct qpt_qp **v;
	uint64_t now = clock_now_ns();
	size_t n = 0;

	if (w->magic != QPW_MAGIC || !w->on || !w->table.n)
		return;
	v = calloc(w->table.n, sizeof(*v));
	if (!v)
		return;
	match_flows(w);
	for (const struct qpt_qp *q = qpt_next(&w->table, NULL); q; q = qpt_next(&w->table, q))
		if (qpt_unmanaged(&w->table, q, now, w->grace_ns))
			v[n++] = q;
	qsort(v, n, sizeof(*v), cmp_qp);
	for (size_t i = 0; i < n; i++) {
		const struct qpt_qp *q = v[i];

		json_array_append_new(flows, json_pack(
			"{s:n, s:i, s:s, s:n, s:s, s:n, s:I, s:s, s:b, s:s, s:I}", "id",
			"pid", (int)q->proc->pid, "comm", q->proc->comm, "class", "device", q->dev,
			"port", "qpn", (json_int_t)q->qpn, "qp_type", qpt_type_name(q->qp_type),
			"managed", 0, "seen_by", q->src == QPT_SRC_BPF ? "bpf" : "netlink",
			"age_ms", (json_int_t)((now - q->seen_ns) / 1000000)));
	}
	free(v);
}

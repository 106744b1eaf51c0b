// SPDX-License-Identifier: MIT
/* justbench wire protocol: framing, big-endian encoding and strict decoding.
 * May call: bench_flow (the flows it carries), bench_mode (its range), bench_stats (the summary
 * type) and libc (sockets, poll). */
#include "bench_wire.h"

#include "bench_mode.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RECV_DEPTH_MAX (2 * BENCH_DEPTH_MAX + 64)

struct out {
	uint8_t *b;
	size_t cap, o;
	bool ok;
};

struct in {
	const uint8_t *b;
	size_t len, o;
	bool ok;
};

static void put(struct out *w, uint64_t v, unsigned bytes)
{
	if (w->cap - w->o < bytes) {
		w->ok = false;
		return;
	}
	while (bytes--)
		w->b[w->o++] = (uint8_t)(v >> (8 * bytes));
}

static uint64_t get(struct in *r, unsigned bytes)
{
	uint64_t v = 0;

	if (r->len - r->o < bytes) {
		r->ok = false;
		return 0;
	}
	while (bytes--)
		v = v << 8 | r->b[r->o++];
	return v;
}

static void put_qp(struct out *w, const struct bench_wire_qp *q)
{
	put(w, q->qpn, 4);
	put(w, q->psn, 4);
	put(w, q->lid, 2);
	if (w->cap - w->o < sizeof(q->gid)) {
		w->ok = false;
		return;
	}
	memcpy(w->b + w->o, q->gid, sizeof(q->gid));
	w->o += sizeof(q->gid);
	put(w, q->rkey, 4);
	put(w, q->addr, 8);
	put(w, q->len, 4);
}

static void get_qp(struct in *r, struct bench_wire_qp *q)
{
	q->qpn = (uint32_t)get(r, 4);
	q->psn = (uint32_t)get(r, 4);
	q->lid = (uint16_t)get(r, 2);
	if (r->len - r->o < sizeof(q->gid)) {
		r->ok = false;
		return;
	}
	memcpy(q->gid, r->b + r->o, sizeof(q->gid));
	r->o += sizeof(q->gid);
	q->rkey = (uint32_t)get(r, 4);
	q->addr = get(r, 8);
	q->len = (uint32_t)get(r, 4);
}

/* A string of at most max - 1 printable bytes, its length first (2 bytes). */
static void put_str(struct out *w, const char *s, size_t max)
{
	size_t n = strnlen(s, max - 1);

	put(w, n, 2);
	if (w->cap - w->o < n) {
		w->ok = false;
		return;
	}
	memcpy(w->b + w->o, s, n);
	w->o += n;
}

/* false if it is too long or not printable (r->ok stays for truncation) */
static bool get_str(struct in *r, char *s, size_t max)
{
	size_t n = (size_t)get(r, 2);

	s[0] = 0;
	if (!r->ok)
		return true;
	if (n >= max)
		return false;
	if (r->len - r->o < n) {
		r->ok = false;
		return true;
	}
	for (size_t i = 0; i < n; i++)
		if (r->b[r->o + i] < 0x20 || r->b[r->o + i] >= 0x7f)
			return false;
	memcpy(s, r->b + r->o, n);
	s[n] = 0;
	r->o += n;
	return true;
}

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen,
						      const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EPROTO;
}

/* The end of a decode: everything read, nothing left over. */
static int finish(const struct in *r, const char *what, char *err, size_t errlen)
{
	if (!r->ok)
		return bad(err, errlen, "%s: truncated (%zu bytes)", what, r->len);
	if (r->o != r->len)
		return bad(err, errlen, "%s: %zu bytes left over", what, r->len - r->o);
	return 0;
}

static bool qp_ok(const struct bench_wire_qp *q)
{
	return q->qpn > 0 && q->qpn < 1u << 24 && q->psn < 1u << 24;
}

size_t bench_wire_put_hello(const struct bench_hello *h, uint8_t *buf, size_t cap)
{
	struct out w = { .b = buf, .cap = cap, .ok = true };

	put(&w, h->mtu, 1);
	put(&w, h->mode, 1);
	put(&w, h->n_flows, 2);
	put(&w, h->n_qps, 2);
	for (size_t i = 0; i < h->n_flows && i < BENCH_FLOWS_MAX; i++) {
		put(&w, h->flows[i].cls, 1);
		put(&w, h->flows[i].verb, 1);
		put(&w, h->flows[i].size, 4);
		put(&w, h->flows[i].qps, 4);
		put(&w, h->flows[i].recv_depth, 4);
		put_str(&w, h->flows[i].spec, sizeof(h->flows[i].spec));
	}
	for (size_t i = 0; i < h->n_qps && i < BENCH_QPS_TOTAL; i++)
		put_qp(&w, &h->qps[i]);
	return w.ok ? w.o : 0;
}

int bench_wire_get_hello(const uint8_t *buf, size_t len, struct bench_hello *h, char *err,
			 size_t errlen)
{
	struct in r = { .b = buf, .len = len, .ok = true };
	uint32_t qps = 0;

	memset(h, 0, sizeof(*h));
	h->mtu = (uint8_t)get(&r, 1);
	h->mode = (uint8_t)get(&r, 1);
	h->n_flows = (uint16_t)get(&r, 2);
	h->n_qps = (uint16_t)get(&r, 2);
	if (r.ok && (h->mtu < 1 || h->mtu > 5))
		return bad(err, errlen, "hello: invalid MTU code %u", h->mtu);
	if (r.ok && h->mode >= BENCH_MODE_MAX)
		return bad(err, errlen, "hello: unknown mode %u", h->mode);
	if (r.ok && (h->n_flows < 1 || h->n_flows > BENCH_FLOWS_MAX))
		return bad(err, errlen, "hello: %u flows (1..%d)", h->n_flows, BENCH_FLOWS_MAX);
	for (size_t i = 0; r.ok && i < h->n_flows; i++) {
		struct bench_wire_flow *f = &h->flows[i];

		f->cls = (uint8_t)get(&r, 1);
		f->verb = (uint8_t)get(&r, 1);
		f->size = (uint32_t)get(&r, 4);
		f->qps = (uint32_t)get(&r, 4);
		f->recv_depth = (uint32_t)get(&r, 4);
		if (!get_str(&r, f->spec, sizeof(f->spec)))
			return bad(err, errlen, "hello: flow %zu: invalid specification", i);
		if (r.ok && (f->cls >= BENCH_CLASS_MAX || f->verb >= BENCH_VERB_MAX ||
			     f->size < 1 || f->size > BENCH_SIZE_MAX || f->qps < 1 ||
			     f->qps > BENCH_QPS_MAX || f->recv_depth > RECV_DEPTH_MAX))
			return bad(err, errlen, "hello: flow %zu out of range", i);
		qps += f->qps;
	}
	if (r.ok && (qps > BENCH_QPS_TOTAL || qps != h->n_qps))
		return bad(err, errlen, "hello: %u QPs announced, the flows have %u", h->n_qps,
			   qps);
	for (size_t i = 0; r.ok && i < h->n_qps; i++) {
		get_qp(&r, &h->qps[i]);
		if (r.ok && !qp_ok(&h->qps[i]))
			return bad(err, errlen, "hello: QP %zu: invalid QP or packet number", i);
	}
	return finish(&r, "hello", err, errlen);
}

size_t bench_wire_put_accept(const struct bench_accept *a, uint8_t *buf, size_t cap)
{
	struct out w = { .b = buf, .cap = cap, .ok = true };

	put(&w, a->mtu, 1);
	put(&w, a->n_qps, 2);
	for (size_t i = 0; i < a->n_qps && i < BENCH_QPS_TOTAL; i++)
		put_qp(&w, &a->qps[i]);
	return w.ok ? w.o : 0;
}

int bench_wire_get_accept(const uint8_t *buf, size_t len, struct bench_accept *a, char *err,
			  size_t errlen)
{
	struct in r = { .b = buf, .len = len, .ok = true };

	memset(a, 0, sizeof(*a));
	a->mtu = (uint8_t)get(&r, 1);
	a->n_qps = (uint16_t)get(&r, 2);
	if (r.ok && (a->mtu < 1 || a->mtu > 5))
		return bad(err, errlen, "accept: invalid MTU code %u", a->mtu);
	if (r.ok && (a->n_qps < 1 || a->n_qps > BENCH_QPS_TOTAL))
		return bad(err, errlen, "accept: %u QPs (1..%d)", a->n_qps, BENCH_QPS_TOTAL);
	for (size_t i = 0; r.ok && i < a->n_qps; i++) {
		get_qp(&r, &a->qps[i]);
		if (r.ok && !qp_ok(&a->qps[i]))
			return bad(err, errlen, "accept: QP %zu: invalid QP or packet number", i);
	}
	return finish(&r, "accept", err, errlen);
}

size_t bench_wire_put_result(const struct bench_result *res, uint8_t *buf, size_t cap)
{
	struct out w = { .b = buf, .cap = cap, .ok = true };

	put(&w, res->n_flows, 2);
	for (size_t i = 0; i < res->n_flows && i < BENCH_FLOWS_MAX; i++) {
		put(&w, res->flows[i].msgs, 8);
		put(&w, res->flows[i].bytes, 8);
		put(&w, res->flows[i].cpu_ns, 8);
		put(&w, res->flows[i].reverse, 1);
		if (res->flows[i].reverse) {
			const struct bench_wire_reverse *v = &res->flows[i].rev;
			const uint64_t n[] = { v->msgs, v->posts, v->bytes, v->elapsed_ns, v->cpu_ns,
					       v->lat.count, v->lat.min, v->lat.mean, v->lat.p50,
					       v->lat.p99, v->lat.p999, v->lat.max };

			for (size_t k = 0; k < sizeof(n) / sizeof(n[0]); k++)
				put(&w, n[k], 8);
			put_str(&w, v->error, sizeof(v->error));
		}
	}
	return w.ok ? w.o : 0;
}

int bench_wire_get_result(const uint8_t *buf, size_t len, struct bench_result *res, char *err,
			  size_t errlen)
{
	struct in r = { .b = buf, .len = len, .ok = true };
	uint64_t rev;

	memset(res, 0, sizeof(*res));
	res->n_flows = (uint16_t)get(&r, 2);
	if (r.ok && (res->n_flows < 1 || res->n_flows > BENCH_FLOWS_MAX))
		return bad(err, errlen, "result: %u flows (1..%d)", res->n_flows, BENCH_FLOWS_MAX);
	for (size_t i = 0; r.ok && i < res->n_flows; i++) {
		res->flows[i].msgs = get(&r, 8);
		res->flows[i].bytes = get(&r, 8);
		res->flows[i].cpu_ns = get(&r, 8);
		rev = get(&r, 1);
		if (r.ok && rev > 1)
			return bad(err, errlen, "result: flow %zu: invalid reverse flag %llu", i,
				   (unsigned long long)rev);
		res->flows[i].reverse = rev;
		if (rev) {
			struct bench_wire_reverse *v = &res->flows[i].rev;
			uint64_t *n[] = { &v->msgs, &v->posts, &v->bytes, &v->elapsed_ns,
					  &v->cpu_ns, &v->lat.count, &v->lat.min, &v->lat.mean,
					  &v->lat.p50, &v->lat.p99, &v->lat.p999, &v->lat.max };

			for (size_t k = 0; k < sizeof(n) / sizeof(n[0]); k++)
				*n[k] = get(&r, 8);
			if (!get_str(&r, v->error, sizeof(v->error)))
				return bad(err, errlen, "result: flow %zu: invalid error text", i);
		}
	}
	return finish(&r, "result", err, errlen);
}

void bench_wire_get_error(const uint8_t *buf, size_t len, char *text, size_t textlen)
{
	size_t n = len < textlen ? len : textlen - 1;

	for (size_t i = 0; i < n; i++)
		text[i] = buf[i] < 0x20 || buf[i] >= 0x7f ? '?' : (char)buf[i];
	text[n] = 0;
}

/* ---------------------------------------------------------------- framing */

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int read_all(int fd, uint8_t *p, size_t len, int timeout_ms, uint64_t start)
{
	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int wait = -1, rc;
		ssize_t n;

		if (timeout_ms >= 0) {
			uint64_t spent = now_ms() - start;

			if (spent >= (uint64_t)timeout_ms)
				return -ETIMEDOUT;
			wait = timeout_ms - (int)spent;
		}
		rc = poll(&pfd, 1, wait);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -errno;
		if (rc == 0)
			return -ETIMEDOUT;
		n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int bench_wire_send(int fd, enum bench_msg type, const void *payload, size_t len)
{
	uint8_t hdr[BENCH_WIRE_HDR];
	struct out w = { .b = hdr, .cap = sizeof(hdr), .ok = true };
	int rc;

	if (len > BENCH_WIRE_MAX)
		return -EMSGSIZE;
	put(&w, BENCH_WIRE_MAGIC, 4);
	put(&w, BENCH_WIRE_VERSION, 2);
	put(&w, (uint64_t)type, 2);
	put(&w, len, 4);
	rc = write_all(fd, hdr, sizeof(hdr));
	if (rc == 0 && len)
		rc = write_all(fd, payload, len);
	return rc;
}

void bench_wire_send_error(int fd, const char *fmt, ...)
{
	char text[BENCH_ERROR_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	bench_wire_send(fd, BENCH_MSG_ERROR, text, strlen(text));
}

int bench_wire_recv(int fd, int timeout_ms, enum bench_msg *type, uint8_t *buf, size_t *len,
		    char *err, size_t errlen)
{
	uint8_t hdr[BENCH_WIRE_HDR];
	struct in r = { .b = hdr, .len = sizeof(hdr), .ok = true };
	uint64_t start = now_ms();
	uint32_t magic, n;
	uint16_t version, t;
	int rc;

	rc = read_all(fd, hdr, sizeof(hdr), timeout_ms, start);
	if (rc)
		return rc;
	magic = (uint32_t)get(&r, 4);
	version = (uint16_t)get(&r, 2);
	t = (uint16_t)get(&r, 2);
	n = (uint32_t)get(&r, 4);
	if (magic != BENCH_WIRE_MAGIC)
		return bad(err, errlen, "the peer is not a justbench (bad magic 0x%08x)", magic);
	if (n > BENCH_WIRE_MAX)
		return bad(err, errlen, "message of %u bytes (at most %d)", n, BENCH_WIRE_MAX);
	rc = read_all(fd, buf, n, timeout_ms, start);
	if (rc)
		return rc;
	*type = (enum bench_msg)t;
	*len = n;
	if (version != BENCH_WIRE_VERSION && t != BENCH_MSG_ERROR)
		return bad(err, errlen, "the peer speaks protocol version %u, this justbench %d",
			   version, BENCH_WIRE_VERSION);
	return 0;
}

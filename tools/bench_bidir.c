// SPDX-License-Identifier: MIT
/* justbench --mode bidir: the server's workers towards the client.
 * May call: bench_run, bench_verbs, bench_flow, bench_mode, bench_report (a flow's numbers over
 * its QPs), bench_wire and libc. */
#include "bench_bidir.h"

#include "bench_mode.h"
#include "bench_report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INLINE_WANTED 64

/* The client's flow i, from its specification, as the client runs it. */
static int learn_flow(struct bench_flow *f, const struct bench_wire_flow *wf, size_t i,
		      char *err, size_t errlen)
{
	char why[256];

	if (bench_flow_parse(wf->spec, (unsigned)i, f, why, sizeof(why)) ||
	    bench_mode_check(BENCH_MODE_BIDIR, false, f, why, sizeof(why))) {
		snprintf(err, errlen, "flow %zu: %s", i, why);
		return -EINVAL;
	}
	if ((uint8_t)f->cls != wf->cls || (uint8_t)f->verb != wf->verb || f->size != wf->size ||
	    f->qps != wf->qps || !f->duration_us) {
		snprintf(err, errlen, "flow %zu: the specification is not the flow announced", i);
		return -EINVAL;
	}
	return 0;
}

int bench_bidir_setup(struct bench_bidir *b, struct bench_dev *dev, const struct bench_hello *h,
		      int mtu, bool classify, struct bench_accept *acc, char *err, size_t errlen)
{
	size_t k = 0;
	int rc;

	memset(b, 0, sizeof(*b));
	bench_start_init(&b->start);
	b->inited = true;
	b->w = calloc(h->n_qps, sizeof(*b->w));
	if (!b->w) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* every flow checked before any resource is taken */
	for (size_t i = 0; i < h->n_flows; i++) {
		rc = learn_flow(&b->flows[i], &h->flows[i], i, err, errlen);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < h->n_flows; i++) {
		const struct bench_flow *f = &b->flows[i];
		struct bench_qp_cfg cfg;

		cfg = (struct bench_qp_cfg){
			.buf_len = f->size,
			.send_depth = f->batch * f->window,
			.cq_depth = f->window,
			.inline_size = f->size <= INLINE_WANTED && f->verb != BENCH_READ ?
					       INLINE_WANTED : 0,
			.event = f->poll == BENCH_POLL_EVENT,
			.cls = classify ? (int)f->cls : -1,
		};
		for (uint32_t q = 0; q < f->qps; q++, k++) {
			struct bench_worker *w = &b->w[k];

			w->flow = f;
			w->stop = &b->stop;
			w->start = &b->start;
			w->remote = h->qps[k];
			b->nw = k + 1;
			rc = bench_qp_create(&w->qp, dev, &cfg, err, errlen);
			if (!rc && h->qps[k].len < f->size) {
				snprintf(err, errlen, "QP %zu: a %u-byte buffer for %u-byte messages",
					 k, h->qps[k].len, f->size);
				rc = -EPROTO;
			}
			if (!rc)
				rc = bench_qp_connect(&w->qp, dev, &h->qps[k], mtu, err, errlen);
			if (rc)
				return rc;
			bench_qp_local(&w->qp, dev, &acc->qps[k]);
		}
	}
	for (size_t i = 0; i < b->nw; i++) {
		rc = bench_worker_start(&b->w[i]);
		if (rc) {
			snprintf(err, errlen, "cannot start a thread: %s", strerror(-rc));
			return rc;
		}
	}
	return 0;
}

void bench_bidir_go(struct bench_bidir *b, uint64_t lead_ns)
{
	if (b->going)
		return;
	b->going = true;
	bench_start_go(&b->start, lead_ns);
}

static void join_all(struct bench_bidir *b)
{
	if (!b->going) {
		/* never let go: they see the stop at once */
		atomic_store(&b->stop, true);
		bench_bidir_go(b, 0);
	}
	for (size_t i = 0; i < b->nw; i++)
		bench_worker_join(&b->w[i]);
}

/* The decoder takes printable text only. */
static void printable(char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s >= 0x7f)
			*s = '?';
}

void bench_bidir_finish(struct bench_bidir *b, struct bench_result *res, size_t n_flows)
{
	struct bench_flow_result *r = calloc(1, sizeof(*r));
	size_t k = 0;

	join_all(b);
	for (size_t i = 0; i < n_flows && k < b->nw; i++) {
		struct bench_wire_reverse *v = &res->flows[i].rev;
		size_t n = b->flows[i].qps;

		res->flows[i].reverse = true;
		memset(v, 0, sizeof(*v));
		if (!r || n > b->nw - k) {
			snprintf(v->error, sizeof(v->error), "out of memory");
			continue;
		}
		memset(r, 0, sizeof(*r));
		bench_result_collect(r, &b->w[k], n);
		k += n;
		*v = (struct bench_wire_reverse){
			.msgs = r->msgs, .posts = r->posts, .bytes = r->bytes,
			.elapsed_ns = r->elapsed_ns, .cpu_ns = r->cpu_ns, .lat = r->lat,
		};
		snprintf(v->error, sizeof(v->error), "%s", r->error);
		printable(v->error);
	}
	free(r);
}

void bench_bidir_free(struct bench_bidir *b)
{
	if (!b->inited)
		return;
	if (b->w) {
		join_all(b);
		for (size_t i = 0; i < b->nw; i++)
			bench_worker_free(&b->w[i]);
	}
	free(b->w);
	bench_start_destroy(&b->start);
	memset(b, 0, sizeof(*b));
}

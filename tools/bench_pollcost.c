// SPDX-License-Identifier: MIT
/* justbench --mode poll-cost: timing each ibv_poll_cq call of one message at a time.
 * May call: bench_stats, libibverbs and libc. */
#include "bench_pollcost.h"
#include "bench_err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void bench_pollcost_init(struct bench_pollcost *pc)
{
	bench_samples_init(&pc->clock);
	bench_samples_init(&pc->empty);
	bench_samples_init(&pc->inflight);
	bench_samples_init(&pc->hit);
}

void bench_pollcost_free(struct bench_pollcost *pc)
{
	bench_samples_free(&pc->clock);
	bench_samples_free(&pc->empty);
	bench_samples_free(&pc->inflight);
	bench_samples_free(&pc->hit);
}

int bench_pollcost_merge(struct bench_pollcost *dst, const struct bench_pollcost *src)
{
	if (bench_samples_merge(&dst->clock, &src->clock) ||
	    bench_samples_merge(&dst->empty, &src->empty) ||
	    bench_samples_merge(&dst->inflight, &src->inflight) ||
	    bench_samples_merge(&dst->hit, &src->hit))
		return -ENOMEM;
	return 0;
}

void bench_pollcost_summarize(struct bench_pollcost *pc, struct bench_pollcost_summary *out)
{
	bench_samples_summarize(&pc->clock, &out->clock);
	bench_samples_summarize(&pc->empty, &out->empty);
	bench_samples_summarize(&pc->inflight, &out->inflight);
	bench_samples_summarize(&pc->hit, &out->hit);
}

int bench_pollcost_clock(struct bench_pollcost *pc, unsigned n)
{
	if (bench_samples_reserve(&pc->clock, n))
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = bench_now_ns(), t1 = bench_now_ns();

		bench_samples_add(&pc->clock, t1 - t0); /* reserved: cannot fail */
	}
	return 0;
}

/* One timed call: its result in *n, its time returned. */
static uint64_t timed_poll(struct ibv_cq *cq, struct ibv_wc *wc, int *n, uint64_t *end)
{
	uint64_t t0 = bench_now_ns();

	*n = ibv_poll_cq(cq, 1, wc);
	*end = bench_now_ns();
	return *end - t0;
}

int bench_pollcost_message(struct bench_pollcost *pc, struct ibv_qp *qp, struct ibv_cq *cq,
			   struct ibv_send_wr *wr, uint64_t timeout_ns, uint64_t *lat_ns,
			   char *err, size_t errlen)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	uint64_t ns, last = 0, posted, end;
	bool empty_seen = false;
	int n, rc;

	ns = timed_poll(cq, &wc, &n, &end);
	if (n < 0)
		return bench_seterr(err, errlen, -EIO, "ibv_poll_cq failed (%d)", n);
	if (n > 0)
		return bench_seterr(err, errlen, -EPROTO, "a completion with nothing in flight");
	if (bench_samples_add(&pc->empty, ns))
		return bench_seterr(err, errlen, -ENOMEM, "out of memory for poll samples");
	posted = bench_now_ns();
	rc = ibv_post_send(qp, wr, &bad);
	if (rc)
		return bench_seterr(err, errlen, -EIO, "ibv_post_send: %s", strerror(rc));
	for (;;) {
		ns = timed_poll(cq, &wc, &n, &end);
		if (n)
			break;
		last = ns;
		empty_seen = true;
		if (end - posted > timeout_ns)
			return bench_seterr(err, errlen, -ETIMEDOUT, "no completion in %llu ms",
					    (unsigned long long)(timeout_ns / 1000000));
	}
	if (n < 0)
		return bench_seterr(err, errlen, -EIO, "ibv_poll_cq failed (%d)", n);
	if (wc.status != IBV_WC_SUCCESS)
		return bench_seterr(err, errlen, -EIO, "completion error: %s (vendor error 0x%x)",
				    ibv_wc_status_str(wc.status), wc.vendor_err);
	if (bench_samples_add(&pc->hit, ns) ||
	    (empty_seen && bench_samples_add(&pc->inflight, last)))
		return bench_seterr(err, errlen, -ENOMEM, "out of memory for poll samples");
	*lat_ns = end - posted;
	return 0;
}

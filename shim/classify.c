// SPDX-License-Identifier: MIT
/* JUSTITIA_CLASS=auto (see classify.h): per-QP state.  Judges a QP's
 * class from its posts; what it decides goes to the daemon through the
 * progress thread (progress.c), which calls the daemon link.  Works on
 * its own state only (struct classify_state); may call: log. */
#include "classify.h"

#include "log.h"
#include "shm_abi.h"

int shim_classify_auto;

static int decide(const struct classify_state *c)
{
	if (c->wrs && c->bytes / c->wrs >= CLASSIFY_BW_BYTES)
		return JST_CLASS_BANDWIDTH;
	if (2 * c->busy >= c->calls)
		return JST_CLASS_THROUGHPUT;
	return JST_CLASS_LATENCY;
}

/* Called with q->lock held. */
void shim_classify_post(struct classify_state *c, uint64_t cqes, int cur,
			const struct ibv_send_wr *wr, const struct ibv_send_wr *bad)
{
	uint32_t n = 0;
	int cls;

	/* completions polled since: the signaled WRs they belong to are done,
	 * and so is everything posted before them */
	for (; c->cqes_seen < cqes && c->ring_len; c->cqes_seen++, c->ring_len--) {
		c->done_upto = c->ring[c->ring_head];
		c->ring_head = (c->ring_head + 1) % CLASSIFY_RING;
	}
	c->cqes_seen = cqes;
	/* work in flight when the application posts again */
	if (c->posted > c->done_upto || (wr && wr->next && wr->next != bad))
		c->busy++;
	for (; wr && wr != bad; wr = wr->next) {
		for (int i = 0; i < wr->num_sge; i++)
			c->bytes += wr->sg_list[i].length;
		c->posted++;
		if (c->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED)) {
			if (c->ring_len == CLASSIFY_RING) /* deep: forget the oldest */
				c->ring_head = (c->ring_head + 1) % CLASSIFY_RING;
			else
				c->ring_len++;
			c->ring[(c->ring_head + c->ring_len - 1) % CLASSIFY_RING] = c->posted;
		}
		n++;
	}
	if (!n)
		return;
	c->wrs += n;
	if (++c->calls < CLASSIFY_WINDOW)
		return;
	cls = decide(c);
	c->calls = c->wrs = c->busy = 0;
	c->bytes = 0;
	if (cls == cur) {
		c->streak = 0;
		/* the first window that agrees with the class the QP has: say
		 * so once (the tick logs it, nothing goes to the daemon) */
		if (!c->kept) {
			int none = -1;

			c->kept = 1;
			atomic_compare_exchange_strong_explicit(&c->verdict, &none,
								cls | CLASSIFY_KEPT,
								memory_order_release,
								memory_order_relaxed);
		}
		return;
	}
	c->streak = cls == c->candidate ? c->streak + 1 : 1;
	c->candidate = cls;
	if (c->streak >= CLASSIFY_STREAK) {
		c->streak = 0;
		atomic_store_explicit(&c->verdict, cls, memory_order_release);
	}
}

int shim_classify_tick(struct classify_state *c, uint32_t qp_num)
{
	int cls = atomic_exchange_explicit(&c->verdict, -1, memory_order_acq_rel);
	static const char *const names[] = { JST_CLASS_NAME_LIST };

	if (cls < 0 || !atomic_load(&c->on))
		return -1;
	if (cls & CLASSIFY_KEPT) {
		shim_log("QP %u: posts like a %s flow: class kept", qp_num,
			 names[cls & ~CLASSIFY_KEPT]);
		return -1;
	}
	shim_log("QP %u: posts like a %s flow: reclassified", qp_num, names[cls]);
	return cls;
}

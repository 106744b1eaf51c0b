// SPDX-License-Identifier: MIT
/* The model's event queue (see sim_evq.h). */
#include "sim_evq.h"

#include <stdlib.h>
#include <string.h>

#include "sim_util.h"

void sim_evq_init(struct sim_evq *q)
{
	memset(q, 0, sizeof(*q));
}

void sim_evq_fini(struct sim_evq *q)
{
	free(q->heap);
	memset(q, 0, sizeof(*q));
}

static int before(const struct sim_ev *a, const struct sim_ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

void sim_evq_at(struct sim_evq *q, uint64_t t, sim_ev_fn fn, void *arg, uint64_t u)
{
	size_t i;

	if (q->n == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 1024;
		q->heap = sim_realloc(q->heap, q->cap * sizeof(*q->heap));
	}
	i = q->n++;
	q->heap[i] = (struct sim_ev){ .t = t < q->now ? q->now : t, .seq = q->seq++, .fn = fn,
				      .arg = arg, .u = u };
	while (i && before(&q->heap[i], &q->heap[(i - 1) / 2])) {
		struct sim_ev tmp = q->heap[i];

		q->heap[i] = q->heap[(i - 1) / 2];
		q->heap[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
}

static struct sim_ev pop(struct sim_evq *q)
{
	struct sim_ev top = q->heap[0];
	size_t i = 0;

	q->heap[0] = q->heap[--q->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct sim_ev tmp;

		if (l < q->n && before(&q->heap[l], &q->heap[m]))
			m = l;
		if (r < q->n && before(&q->heap[r], &q->heap[m]))
			m = r;
		if (m == i)
			break;
		tmp = q->heap[i];
		q->heap[i] = q->heap[m];
		q->heap[m] = tmp;
		i = m;
	}
	return top;
}

void sim_evq_run(struct sim_evq *q, uint64_t until)
{
	q->stop = 0;
	while (q->n && q->heap[0].t < until && !q->stop) {
		struct sim_ev e = pop(q);

		q->now = e.t;
		q->ran++;
		e.fn(e.arg, e.u);
	}
	if (!q->stop && q->now < until)
		q->now = until;
}

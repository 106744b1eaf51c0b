// SPDX-License-Identifier: MIT
/* Sliding-window order statistics (see quantile.h): p50/p99/p99.9 of the
 * last N reference samples, an AVL tree over a ring.
 * May call: nothing of the daemon. */
#include "quantile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The recursion in ins()/del() is bounded by the AVL height, at most
 * 1.44 log2(QUANTILE_MAX_CAP) + 2 < 40 frames. */

#define NIL QUANTILE_NIL

static inline struct quantile_node *N(const struct quantile *q, uint32_t i)
{
	return &q->node[i];
}

static inline uint32_t size_of(const struct quantile *q, uint32_t i)
{
	return i == NIL ? 0 : q->node[i].size;
}

static inline int height(const struct quantile *q, uint32_t i)
{
	return i == NIL ? 0 : q->node[i].h;
}

/* (value, slot) order: a total order even with equal values. */
static inline int less(const struct quantile *q, uint32_t a, uint32_t b)
{
	uint64_t va = q->node[a].v, vb = q->node[b].v;

	return va < vb || (va == vb && a < b);
}

static void update(struct quantile *q, uint32_t t)
{
	struct quantile_node *n = N(q, t);
	int hl = height(q, n->l), hr = height(q, n->r);

	n->size = size_of(q, n->l) + size_of(q, n->r) + 1;
	n->h = (uint8_t)((hl > hr ? hl : hr) + 1);
}

static uint32_t rot_right(struct quantile *q, uint32_t t)
{
	uint32_t l = N(q, t)->l;

	N(q, t)->l = N(q, l)->r;
	N(q, l)->r = t;
	update(q, t);
	update(q, l);
	return l;
}

static uint32_t rot_left(struct quantile *q, uint32_t t)
{
	uint32_t r = N(q, t)->r;

	N(q, t)->r = N(q, r)->l;
	N(q, r)->l = t;
	update(q, t);
	update(q, r);
	return r;
}

/* Restore the AVL property at t (its children are AVL trees whose heights
 * differ by at most 2); returns the subtree's new root. */
static uint32_t balance(struct quantile *q, uint32_t t)
{
	struct quantile_node *n = N(q, t);
	int bf = height(q, n->l) - height(q, n->r);

	if (bf > 1) {
		if (height(q, N(q, n->l)->l) < height(q, N(q, n->l)->r))
			n->l = rot_left(q, n->l);
		return rot_right(q, t);
	}
	if (bf < -1) {
		if (height(q, N(q, n->r)->r) < height(q, N(q, n->r)->l))
			n->r = rot_right(q, n->r);
		return rot_left(q, t);
	}
	update(q, t);
	return t;
}

static uint32_t ins(struct quantile *q, uint32_t t, uint32_t x)
{
	if (t == NIL)
		return x;
	if (less(q, x, t))
		N(q, t)->l = ins(q, N(q, t)->l, x);
	else
		N(q, t)->r = ins(q, N(q, t)->r, x);
	return balance(q, t);
}

/* Unlink the minimum of subtree t into *min; returns the new subtree. */
static uint32_t del_min(struct quantile *q, uint32_t t, uint32_t *min)
{
	if (N(q, t)->l == NIL) {
		*min = t;
		return N(q, t)->r;
	}
	N(q, t)->l = del_min(q, N(q, t)->l, min);
	return balance(q, t);
}

/* Unlink node x (which is in subtree t).  The successor node takes x's
 * place, so nodes never change slots. */
static uint32_t del(struct quantile *q, uint32_t t, uint32_t x)
{
	if (t == x) {
		uint32_t l = N(q, t)->l, r = N(q, t)->r, m;

		if (l == NIL)
			return r;
		if (r == NIL)
			return l;
		r = del_min(q, r, &m);
		N(q, m)->l = l;
		N(q, m)->r = r;
		return balance(q, m);
	}
	if (less(q, x, t))
		N(q, t)->l = del(q, N(q, t)->l, x);
	else
		N(q, t)->r = del(q, N(q, t)->r, x);
	return balance(q, t);
}

int quantile_init(struct quantile *q, uint32_t cap)
{
	memset(q, 0, sizeof(*q));
	q->root = NIL;
	if (!cap || cap > QUANTILE_MAX_CAP)
		return -EINVAL;
	q->node = calloc(cap, sizeof(*q->node));
	if (!q->node)
		return -ENOMEM;
	q->cap = cap;
	return 0;
}

void quantile_fini(struct quantile *q)
{
	free(q->node);
	memset(q, 0, sizeof(*q));
	q->root = NIL;
}

void quantile_reset(struct quantile *q)
{
	q->n = 0;
	q->head = 0;
	q->root = NIL;
}

void quantile_add(struct quantile *q, uint64_t v)
{
	quantile_add_at(q, v, 0);
}

void quantile_add_at(struct quantile *q, uint64_t v, uint64_t t_ns)
{
	struct quantile_node *n;
	uint32_t slot;

	if (!q->cap)
		return;
	if (q->n == q->cap) {
		slot = q->head;
		q->root = del(q, q->root, slot);
		q->head = q->head + 1 == q->cap ? 0 : q->head + 1;
	} else {
		slot = q->head + q->n;
		if (slot >= q->cap)
			slot -= q->cap;
		q->n++;
	}
	n = N(q, slot);
	n->v = v;
	n->t = t_ns;
	n->l = n->r = NIL;
	n->size = 1;
	n->h = 1;
	q->root = ins(q, q->root, slot);
	q->total++;
}

uint32_t quantile_expire(struct quantile *q, uint64_t t_ns)
{
	uint32_t gone = 0;

	while (q->n && N(q, q->head)->t < t_ns) {
		q->root = del(q, q->root, q->head);
		q->head = q->head + 1 == q->cap ? 0 : q->head + 1;
		q->n--;
		gone++;
	}
	if (!q->n)
		q->head = 0;
	return gone;
}

uint64_t quantile_max_newest(const struct quantile *q, uint32_t k)
{
	uint64_t max = 0;

	if (k > q->n)
		k = q->n;
	for (uint32_t i = q->n - k; i < q->n; i++) {
		uint32_t slot = (uint32_t)(((uint64_t)q->head + i) % q->cap);

		if (q->node[slot].v > max)
			max = q->node[slot].v;
	}
	return max;
}

uint64_t quantile_min_newest(const struct quantile *q, uint32_t k)
{
	uint64_t min = UINT64_MAX;

	if (k > q->n)
		k = q->n;
	for (uint32_t i = q->n - k; i < q->n; i++) {
		uint32_t slot = (uint32_t)(((uint64_t)q->head + i) % q->cap);

		if (q->node[slot].v < min)
			min = q->node[slot].v;
	}
	return min;
}

int quantile_resize(struct quantile *q, uint32_t cap)
{
	struct quantile nq;
	uint32_t keep, first;
	int rc;

	if (cap == q->cap)
		return 0;
	rc = quantile_init(&nq, cap);
	if (rc)
		return rc;
	keep = q->n < cap ? q->n : cap;
	first = q->n - keep; /* skip the oldest n - keep */
	for (uint32_t i = first; i < q->n; i++) {
		uint32_t slot = (uint32_t)(((uint64_t)q->head + i) % q->cap);

		quantile_add_at(&nq, q->node[slot].v, q->node[slot].t);
	}
	nq.total = q->total;
	quantile_fini(q);
	*q = nq;
	return 0;
}

uint64_t quantile_rank(const struct quantile *q, uint32_t k)
{
	uint32_t t = q->root;

	if (k < 1 || k > q->n)
		return 0;
	while (t != NIL) {
		uint32_t ls = size_of(q, q->node[t].l);

		if (k <= ls) {
			t = q->node[t].l;
		} else if (k == ls + 1) {
			return q->node[t].v;
		} else {
			k -= ls + 1;
			t = q->node[t].r;
		}
	}
	return 0; /* not reached: sizes are consistent */
}

uint64_t quantile_ppm(const struct quantile *q, uint32_t ppm)
{
	uint64_t rank;

	if (!q->n)
		return 0;
	if (ppm > 1000000)
		ppm = 1000000;
	rank = ((uint64_t)q->n * ppm + 999999) / 1000000;
	if (rank < 1)
		rank = 1;
	return quantile_rank(q, (uint32_t)rank);
}

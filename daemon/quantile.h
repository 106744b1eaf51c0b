/* SPDX-License-Identifier: MIT */
/* Exact order statistics over a sliding window: the last @cap samples,
 * optionally also no older than a time (quantile_expire()).
 *
 * An AVL tree with subtree sizes, whose nodes live in one array that is also
 * the ring buffer of insertion order: node i holds ring slot i, so the
 * sample to evict is always node "head" and the new sample reuses it.
 * Keys are (value, slot), unique even when values repeat.  Adding costs
 * O(log n) worst case (one delete and one insert, each at most
 * 1.44 log2(n) levels deep); any rank or quantile is an O(log n) walk.
 * No sorting, no approximation, no allocation after init. */
#ifndef JUSTITIAD_QUANTILE_H
#define JUSTITIAD_QUANTILE_H

#include <stdint.h>

#define QUANTILE_NIL UINT32_MAX
#define QUANTILE_MAX_CAP (1u << 24)

struct quantile_node {
	uint64_t v;
	uint64_t t;                  /* when it was taken (quantile_add_at) */
	uint32_t l, r;
	uint32_t size;               /* nodes in this subtree */
	uint8_t h;                   /* height, a leaf is 1 */
};

struct quantile {
	struct quantile_node *node;  /* cap nodes; node i is ring slot i */
	uint32_t cap;
	uint32_t n;                  /* samples in the window */
	uint32_t head;               /* oldest slot */
	uint32_t root;
	uint64_t total;              /* samples ever added */
};

/* A window of @cap samples (1 .. QUANTILE_MAX_CAP).  0, -EINVAL, -ENOMEM. */
int quantile_init(struct quantile *q, uint32_t cap);
void quantile_fini(struct quantile *q);
/* Forget every sample (the capacity stays). */
void quantile_reset(struct quantile *q);
/* Change the capacity, keeping the newest min(n, cap) samples.  0 or -errno
 * (the window is then unchanged). */
int quantile_resize(struct quantile *q, uint32_t cap);

/* Add a sample; when the window is full the oldest one leaves it. */
void quantile_add(struct quantile *q, uint64_t v);
/* The same, taken at @t_ns (any clock, non-decreasing from one call to the
 * next); quantile_add() takes it at 0. */
void quantile_add_at(struct quantile *q, uint64_t v, uint64_t t_ns);
/* Let the samples taken before @t_ns leave the window (the oldest first);
 * how many left. */
uint32_t quantile_expire(struct quantile *q, uint64_t t_ns);
/* The largest of the newest @k samples (all of them when k > n); 0 when
 * the window is empty or k is 0.  O(k). */
uint64_t quantile_max_newest(const struct quantile *q, uint32_t k);
/* The least of the newest @k samples (UINT64_MAX when there are none). */
uint64_t quantile_min_newest(const struct quantile *q, uint32_t k);
static inline uint32_t quantile_count(const struct quantile *q)
{
	return q->n;
}
/* The k-th smallest sample, k in 1..n; 0 when k is out of range. */
uint64_t quantile_rank(const struct quantile *q, uint32_t k);
/* Nearest-rank quantile: the sample of rank ceil(n * ppm / 10^6) (at least
 * 1), ppm in parts per million (990000 = p99).  0 when empty. */
uint64_t quantile_ppm(const struct quantile *q, uint32_t ppm);

#endif

/* SPDX-License-Identifier: MIT */
/* Scatter-list data: fill the bytes an ibv_sge list points at with a
 * seeded stream, checksum them, compare two lists byte by byte.  What
 * integrity (tests/progs/integrity.c) checks every message with. */
#ifndef JUSTITIA_PROGS_SGL_H
#define JUSTITIA_PROGS_SGL_H

#include <infiniband/verbs.h>
#include <stdint.h>

/* splitmix64: the next value of the sequence *x (advanced). */
uint64_t sgl_splitmix(uint64_t *x);
/* Fill the @n SGEs with message @seq's own stream under @seed; returns the
 * checksum of what was written (as sgl_sum() computes it). */
uint64_t sgl_fill(const struct ibv_sge *sg, int n, uint64_t seed, uint64_t seq);
/* The checksum of the first @len bytes of the list. */
uint64_t sgl_sum(const struct ibv_sge *sg, int n, uint64_t len);
/* Compare @len bytes of two lists: the number of differing bytes, and the
 * offset of the first in *first. */
uint64_t sgl_cmp(const struct ibv_sge *want, int nw, const struct ibv_sge *got, int ng,
		 uint64_t len, uint64_t *first);
/* The byte at offset @off of the list, or NULL past its end. */
uint8_t *sgl_byte(const struct ibv_sge *sg, int n, uint64_t off);

#endif

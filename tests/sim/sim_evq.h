/* SPDX-License-Identifier: MIT */
/* The model's virtual clock and event queue (docs/rnic-model.md).
 *
 * A binary min-heap of events ordered by (time, sequence number): events at
 * the same instant run in the order they were scheduled, so a run depends on
 * nothing but its inputs and its seed.  Time is virtual nanoseconds and only
 * moves when sim_evq_run() pops the next event; nothing here sleeps or reads
 * a wall clock. */
#ifndef JUSTITIA_SIM_EVQ_H
#define JUSTITIA_SIM_EVQ_H

#include <stddef.h>
#include <stdint.h>

typedef void (*sim_ev_fn)(void *arg, uint64_t u);

struct sim_ev {
	uint64_t t, seq;
	sim_ev_fn fn;
	void *arg;
	uint64_t u;
};

struct sim_evq {
	uint64_t now;                /* virtual ns */
	uint64_t seq;
	uint64_t ran;                /* events run so far */
	struct sim_ev *heap;
	size_t n, cap;
	int stop;
};

void sim_evq_init(struct sim_evq *q);
void sim_evq_fini(struct sim_evq *q);
/* Run @fn(@arg, @u) at virtual time @t (clamped to now). */
void sim_evq_at(struct sim_evq *q, uint64_t t, sim_ev_fn fn, void *arg, uint64_t u);
static inline void sim_evq_after(struct sim_evq *q, uint64_t dt, sim_ev_fn fn, void *arg,
				 uint64_t u)
{
	sim_evq_at(q, q->now + dt, fn, arg, u);
}
/* Run events until none is left before @until (then now = @until), or until
 * sim_evq_stop() was called. */
void sim_evq_run(struct sim_evq *q, uint64_t until);
static inline void sim_evq_stop(struct sim_evq *q)
{
	q->stop = 1;
}

/* A deterministic generator (splitmix64) for the model's jitter. */
static inline uint64_t sim_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n) (0 when n is 0). */
static inline uint64_t sim_rand_below(uint64_t *s, uint64_t n)
{
	return n ? sim_rand(s) % n : 0;
}

#endif

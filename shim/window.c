// SPDX-License-Identifier: MIT
/* The direct window (window.h): admission and tag accounting.
 * Per-QP state layer; pure: may call nothing. */
#include "window.h"

#include <errno.h>
#include <stdlib.h>

uint64_t shim_window_bytes = SHIM_WINDOW_DEFAULT;
_Atomic unsigned shim_window_tags;

int shim_window_parse(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	unsigned shift = 0;

	if (!s) {
		*out = SHIM_WINDOW_DEFAULT;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K':
		shift = 10;
		end++;
		break;
	case 'm': case 'M':
		shift = 20;
		end++;
		break;
	case 'g': case 'G':
		shift = 30;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static uint64_t in_flight(const struct shim_window *w)
{
	return w->posted - w->done;
}

int shim_window_admit(struct shim_window *w, uint64_t bytes, uint64_t now)
{
	if (w->blind || !shim_window_bytes)
		return 1;
	/* nothing tagged in flight: nothing to wait for (this one is tagged
	 * if it goes over, shim_window_want_tag) */
	if (!w->n || in_flight(w) + bytes <= shim_window_bytes) {
		w->wait_since = 0;
		return 1;
	}
	/* (@now may be older than wait_since: callers take the time before
	 * they take the QP's lock) */
	if (!w->wait_since)
		w->wait_since = now ? now : 1;
	else if (now > w->wait_since && now - w->wait_since > SHIM_WINDOW_BLIND_NS) {
		w->blind = 1;
		return 1;
	}
	return 0;
}

int shim_window_want_tag(const struct shim_window *w, uint64_t bytes)
{
	uint64_t step = shim_window_bytes / 4 ? shim_window_bytes / 4 : 1;

	if (w->blind || !shim_window_bytes || w->n == SHIM_WINDOW_RING)
		return 0;
	return w->posted + bytes - w->tagged_at >= step ||
	       in_flight(w) + bytes > shim_window_bytes;
}

void shim_window_post(struct shim_window *w, uint64_t bytes, int tag, uint64_t wr_id,
		      int app_signaled)
{
	w->posted += bytes;
	if (!tag)
		return;
	w->ring[(w->head + w->n) % SHIM_WINDOW_RING] = (struct shim_window_tag){
		.wr_id = wr_id, .at = w->posted, .app_signaled = app_signaled
	};
	w->n++;
	w->tagged_at = w->posted;
	atomic_fetch_add_explicit(&shim_window_tags, 1, memory_order_relaxed);
}

void shim_window_unpost(struct shim_window *w, uint64_t bytes, int tag)
{
	w->posted -= bytes;
	if (!tag || !w->n)
		return;
	w->n--;
	w->tagged_at = w->n ? w->ring[(w->head + w->n - 1) % SHIM_WINDOW_RING].at : w->done;
	atomic_fetch_sub_explicit(&shim_window_tags, 1, memory_order_relaxed);
}

int shim_window_complete(struct shim_window *w, struct ibv_wc *wc)
{
	struct shim_window_tag *t;

	if (!w->n) /* reset meanwhile: nobody's */
		return wc->status == IBV_WC_SUCCESS;
	t = &w->ring[w->head];
	w->head = (w->head + 1) % SHIM_WINDOW_RING;
	w->n--;
	atomic_fetch_sub_explicit(&shim_window_tags, 1, memory_order_relaxed);
	w->done = t->at;
	w->wait_since = 0;
	wc->wr_id = t->wr_id;
	/* an error completes natively whether signaled or not */
	return wc->status == IBV_WC_SUCCESS && !t->app_signaled;
}

void shim_window_reset(struct shim_window *w)
{
	atomic_fetch_sub_explicit(&shim_window_tags, w->n, memory_order_relaxed);
	w->n = 0;
	w->head = 0;
	w->posted = w->done = w->tagged_at = 0;
	w->wait_since = 0;
}

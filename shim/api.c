// SPDX-License-Identifier: MIT
/* The public API of justitia.h, exported by libjustitia.so (JUSTITIA_1.0).
 * Interposition layer (the public API of include/justitia.h); may call:
 * the daemon link (client.h, slot.h), the per-QP record. */
#include "justitia.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "shim.h"
#include "slot.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int justitia_set_qp_class(struct ibv_qp *qp, int cls)
{
	struct shim_qp *q;

	if (!qp || cls < JUSTITIA_CLASS_LATENCY || cls > JUSTITIA_CLASS_BANDWIDTH)
		return EINVAL;
	q = shim_qp_find_sure(qp->context, qp->qp_num);
	if (!q)
		return EINVAL;
	return shim_client_set_class(q, cls);
}

EXPORT int justitia_qp_status(struct ibv_qp *qp, struct justitia_qp_status *st)
{
	const struct jst_flow_ctl *slot;
	struct shim_slot_view v;
	struct shim_qp *q;

	if (!qp || !st)
		return EINVAL;
	q = shim_qp_find_sure(qp->context, qp->qp_num);
	if (!q)
		return EINVAL;
	memset(st, 0, sizeof(*st));
	slot = atomic_load_explicit(&q->slot, memory_order_acquire);
	st->cls = atomic_load_explicit(&q->cls, memory_order_relaxed);
	st->managed = slot != NULL;
	if (slot && !shim_slot_read(slot, q->flow_id, &v)) {
		st->split = !!(v.flags & JST_F_SPLIT);
		st->chunk_bytes = v.chunk_bytes;
		st->rate_bps = v.rate_bps;
	}
	shim_client_qp_warning(q, st->warning, sizeof(st->warning));
	return 0;
}

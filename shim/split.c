// SPDX-License-Identifier: MIT
/* Split QPs (see split.h).  The data path that uses them is in splitjob.c.
 * Splitter layer; may call: the two-sided protocol (splitmsg.c), the
 * progress thread only through shim_split_hooks (wiring.c), the per-QP
 * state, log, the host's verbs (vops). */
#include "split.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>

#include "log.h"
#include "registry.h"
#include "splitmsg.h"
#include "vops.h"

_Atomic unsigned shim_split_qps;

void shim_split_atfork_child(void)
{
	atomic_store(&shim_split_qps, 0); /* the parent's */
}

int shim_split_create(struct shim_qp *q)
{
	struct shim_split *sp = &q->split;
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		/* (data chunks are signaled a few at a time, control
		 * messages always: splitjob.c, splitmsg.c) */
		.sq_sig_all = 0,
		.cap = { .max_send_wr = SPLIT_WINDOW_MAX + SPLITMSG_MAX_SEG + SPLITMSG_SLOTS,
			 .max_recv_wr = SPLITMSG_SLOTS,
			 .max_send_sge = SPLIT_MAX_SGE, .max_recv_sge = 1 },
	};
	struct ibv_context *ctx = q->qp->context;
	const struct shim_verbs_ops *v = shim_vops();
	int saved = shim_busy, rc;

	if (atomic_load(&sp->state) != SPLIT_NONE)
		return sp->qp ? (int)sp->qp->qp_num : -EEXIST;
	shim_busy = 1; /* our own verbs objects: neither tracked nor counted */
	/* (without a channel, external progress: its CQ is polled, pacectl.h) */
	if (v->create_comp_channel) {
		sp->ch = v->create_comp_channel(ctx);
		if (!sp->ch)
			goto out_err;
		fcntl(sp->ch->fd, F_SETFL, fcntl(sp->ch->fd, F_GETFL) | O_NONBLOCK);
	}
	sp->cq = v->create_cq(ctx, SPLIT_WINDOW_MAX + SPLITMSG_MAX_SEG + 2 * SPLITMSG_SLOTS, q,
			      sp->ch, 0);
	if (!sp->cq)
		goto out_err;
	if (sp->ch && v->req_notify_cq(sp->cq, 0))
		goto out_err;
	sp->armed = sp->ch != NULL;
	a.send_cq = sp->cq;
	a.recv_cq = sp->cq;
	sp->qp = v->create_qp(q->qp->pd, &a);
	if (!sp->qp)
		goto out_err;
	atomic_fetch_add_explicit(&shim_split_qps, 1, memory_order_relaxed);
	{
		struct ibv_device_attr da;

		if (v->query_device(ctx, &da))
			da.max_qp_rd_atom = da.max_qp_init_rd_atom = 1;
		sp->rd_atom = (uint8_t)(da.max_qp_rd_atom < SPLIT_WINDOW ? da.max_qp_rd_atom
									 : SPLIT_WINDOW);
		sp->init_rd_atom = (uint8_t)(da.max_qp_init_rd_atom < SPLIT_WINDOW
						     ? da.max_qp_init_rd_atom : SPLIT_WINDOW);
	}
	rc = splitmsg_setup(q);
	if (rc) {
		errno = -rc;
		goto out_err;
	}
	shim_busy = saved;
	sp->peer_split_qpn = -1;
	sp->rts = false;
	atomic_store(&sp->state, SPLIT_CREATED);
	rc = shim_split_hooks.watch(q);
	if (rc) {
		shim_split_destroy(q);
		return rc;
	}
	return (int)sp->qp->qp_num;
out_err:
	rc = errno ? -errno : -ENOMEM;
	shim_busy = saved;
	shim_log("QP %u: cannot create its split QP (%s): messages go whole", q->qp->qp_num,
		 strerror(-rc));
	shim_split_destroy(q);
	return rc;
}

void shim_split_follow(struct shim_qp *q, const struct ibv_qp_attr *attr, int mask, int peer_split)
{
	struct shim_split *sp = &q->split;
	struct ibv_qp_attr m;
	int saved = shim_busy, want = 0, rc = 0;
	bool first;

	if (!(mask & IBV_QP_STATE) || !sp->qp)
		return;
	memset(&m, 0, sizeof(m));
	m.qp_state = attr->qp_state;
	/* the split QP grants the peer what the application's QP grants, no
	 * more: a peer's WRITE that the application's QP would refuse fails
	 * on the split QP too, and without REMOTE_WRITE the peer's split
	 * SENDs, which write into the regions our shim registers for them
	 * (splitmsg.h), go whole */
	if (mask & IBV_QP_ACCESS_FLAGS) {
		want |= IBV_QP_ACCESS_FLAGS;
		m.qp_access_flags = attr->qp_access_flags;
		sp->no_remote_write = !(attr->qp_access_flags & IBV_ACCESS_REMOTE_WRITE);
	}
	switch (attr->qp_state) {
	case IBV_QPS_INIT:
		want |= (mask & (IBV_QP_PKEY_INDEX | IBV_QP_PORT)) | IBV_QP_ACCESS_FLAGS;
		m.pkey_index = attr->pkey_index;
		m.port_num = attr->port_num;
		if (!(mask & IBV_QP_ACCESS_FLAGS))
			sp->no_remote_write = true; /* (the spec's default: none) */
		break;
	case IBV_QPS_RTR:
		if (peer_split < 0) {
			atomic_store(&sp->state, SPLIT_PACE_ONLY);
			return;
		}
		/* each side reads at most SPLIT_WINDOW chunks at a time and
		 * accepts as many (within what the device can do) */
		want |= (mask & (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_MIN_RNR_TIMER)) |
			IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC;
		m.ah_attr = attr->ah_attr;
		m.path_mtu = attr->path_mtu;
		if (mask & IBV_QP_PATH_MTU)
			sp->mtu = attr->path_mtu >= IBV_MTU_256 && attr->path_mtu <= IBV_MTU_4096
					  ? 128u << attr->path_mtu : 0;
		m.max_dest_rd_atomic = sp->rd_atom;
		m.min_rnr_timer = attr->min_rnr_timer;
		m.dest_qp_num = (uint32_t)peer_split;
		m.rq_psn = 0; /* both shims start their split QPs at PSN 0 */
		sp->peer_split_qpn = peer_split;
		break;
	case IBV_QPS_RTS:
		if (sp->peer_split_qpn < 0)
			return;
		/* RTR -> RTS with the application's timeout (splitstate.h),
		 * unless a control message took it there first */
		pthread_mutex_lock(&q->lock);
		first = !sp->rts;
		if (first)
			rc = splitmsg_qp_rts_locked(q, attr, mask);
		pthread_mutex_unlock(&q->lock);
		if (rc) {
			shim_log("QP %u: split QP %u refused RTS (%d): messages go whole",
				 q->qp->qp_num, sp->qp->qp_num, rc);
			atomic_store(&sp->state, SPLIT_PACE_ONLY);
			return;
		}
		if (atomic_load(&sp->state) == SPLIT_CREATED)
			atomic_store(&sp->state, SPLIT_READY);
		if (first || !(mask & IBV_QP_ACCESS_FLAGS))
			return;
		break; /* RTS -> RTS with the new access flags */
	case IBV_QPS_RESET:
	case IBV_QPS_ERR:
		want = 0; /* (these take no other attribute) */
		atomic_store(&sp->state, SPLIT_CREATED);
		sp->peer_split_qpn = -1;
		break;
	default:
		return;
	}
	shim_busy = 1;
	rc = shim_vops()->modify_qp(sp->qp, &m, IBV_QP_STATE | want);
	shim_busy = saved;
	if (rc) {
		shim_log("QP %u: split QP %u refused %d->state %d (%d): messages go whole",
			 q->qp->qp_num, sp->qp->qp_num, mask, attr->qp_state, rc);
		atomic_store(&sp->state, SPLIT_PACE_ONLY);
		return;
	}
	pthread_mutex_lock(&q->lock);
	if (attr->qp_state == IBV_QPS_INIT) {
		splitmsg_post_slots(q);
	} else if (attr->qp_state == IBV_QPS_RESET || attr->qp_state == IBV_QPS_ERR) {
		sp->rts = false;
		splitmsg_reset(q);
	}
	pthread_mutex_unlock(&q->lock);
}

void shim_split_destroy(struct shim_qp *q)
{
	struct shim_split *sp = &q->split;
	struct ibv_comp_channel *ch;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	const struct shim_verbs_ops *v = shim_vops();
	int saved = shim_busy;

	shim_split_hooks.unwatch(q);
	/* the progress thread looks at these under q->lock */
	pthread_mutex_lock(&q->lock);
	ch = sp->ch;
	cq = sp->cq;
	qp = sp->qp;
	sp->qp = NULL;
	sp->cq = NULL;
	sp->ch = NULL;
	sp->peer_split_qpn = -1;
	atomic_store(&sp->state, SPLIT_NONE);
	pthread_mutex_unlock(&q->lock);
	shim_busy = 1;
	if (qp) {
		v->destroy_qp(qp);
		atomic_fetch_sub_explicit(&shim_split_qps, 1, memory_order_relaxed);
	}
	pthread_mutex_lock(&q->lock);
	splitmsg_teardown(q); /* its memory regions, once no QP uses them */
	pthread_mutex_unlock(&q->lock);
	if (cq)
		v->destroy_cq(cq);
	if (ch)
		v->destroy_comp_channel(ch);
	shim_busy = saved;
}

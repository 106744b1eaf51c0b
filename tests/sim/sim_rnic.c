// SPDX-License-Identifier: MIT
/* The RNIC model (see sim_rnic.h and docs/rnic-model.md).
 *
 * Time inside a NIC's pipelines is kept in picoseconds so that packet times
 * at 100 Gbit/s (0.08 ns a byte) do not round; events run at the next whole
 * virtual nanosecond. */
#include "sim_rnic.h"

#include <errno.h>
#include <string.h>

#include "sim_util.h"

enum item_kind { IT_DATA, IT_READREQ, IT_RESP };

struct item {
	uint8_t kind;
	uint32_t len, sent;
	uint32_t ref;               /* the requester's WQE (absolute index) */
};

struct txq {
	struct sim_qp *qp;
	struct item *it;
	uint32_t cap, head, n, n_ready;  /* head: absolute index of the oldest item */
	struct txq *prev, *next;         /* the NIC's ring of active queues */
	bool on;
};

struct wqe {
	struct sim_wr wr;
	uint64_t post_ns;
	bool done, err;
};

struct sim_qp {
	struct sim_net *net;
	unsigned host;
	struct sim_qp *peer;
	uint32_t qpn;
	struct wqe *w;
	uint32_t cap, head, n;      /* outstanding WQEs, head absolute */
	uint64_t ready_ns;
	struct txq sq, resp;
	uint64_t *recv;
	uint32_t rcap, rhead, rn, rres;  /* rres: consumed, completion pending */
	sim_cqe_fn fn;
	void *scq, *rcq;
	struct sim_qp *all_next;
};

struct nic {
	struct txq *cur;            /* next active queue in round-robin order */
	struct txq *holder;         /* the queue whose turn is running */
	uint32_t burst_left;
	bool busy, paused;
	uint64_t tx_ps, rx_ps;
	struct sim_nic_stats st;
};

struct pkt {
	struct sim_qp *qp;          /* the sender's QP */
	uint8_t kind;
	bool last;
	uint32_t ref, payload;
	uint64_t wire;
	struct pkt *next;
};

/* Packets come from slabs owned by the net, so those still in flight when a
 * run ends (their events never run) are freed with it. */
#define PKT_SLAB 256

struct pkt_slab {
	struct pkt_slab *next;
	struct pkt p[PKT_SLAB];
};

struct sim_net {
	struct sim_evq *q;
	struct sim_nic_params p;
	unsigned hosts;
	struct nic *nic;
	uint64_t rng;
	uint32_t next_qpn;
	struct sim_qp *all;
	struct pkt *free_pkts;
	struct pkt_slab *slabs;
};

void sim_nic_params_default(struct sim_nic_params *p)
{
	*p = (struct sim_nic_params){
		.line_bps = 100000000000ull,
		.rx_bps = 100000000000ull,
		.mtu = 4096,
		.hdr_bytes = 82,    /* Eth+FCS 18, IPv4 20, UDP 8, BTH 12, ICRC 4, preamble+IFG 20 */
		.prop_ns = 300,
		.fetch_ns = 300,
		.fetch_jitter_ns = 100,
		.wqe_ns = 8,
		.resp_ns = 200,
		.cqe_ns = 150,
		.arb = SIM_ARB_WQE,
		.burst_pkts = 1,
		.pfc_ns = 10000,
	};
}

struct sim_net *sim_net_new(struct sim_evq *q, const struct sim_nic_params *p, unsigned hosts,
			    uint64_t seed)
{
	struct sim_net *n = sim_zalloc(sizeof(*n));

	n->q = q;
	n->p = *p;
	if (!n->p.mtu)
		n->p.mtu = 4096;
	if (!n->p.rx_bps)
		n->p.rx_bps = n->p.line_bps;
	if (!n->p.burst_pkts)
		n->p.burst_pkts = 1;
	n->hosts = hosts;
	n->nic = sim_zalloc(hosts * sizeof(*n->nic));
	n->rng = seed;
	n->next_qpn = 0x100;
	return n;
}

void sim_net_free(struct sim_net *n)
{
	struct sim_qp *qp, *nx;
	struct pkt_slab *sl, *sn;

	if (!n)
		return;
	for (qp = n->all; qp; qp = nx) {
		nx = qp->all_next;
		free(qp->w);
		free(qp->sq.it);
		free(qp->resp.it);
		free(qp->recv);
		free(qp);
	}
	for (sl = n->slabs; sl; sl = sn) {
		sn = sl->next;
		free(sl);
	}
	free(n->nic);
	free(n);
}

const struct sim_nic_params *sim_net_params(const struct sim_net *n)
{
	return &n->p;
}

struct sim_evq *sim_net_evq(struct sim_net *n)
{
	return n->q;
}

void sim_nic_stats(const struct sim_net *n, unsigned host, struct sim_nic_stats *out)
{
	*out = n->nic[host].st;
}

/* ------------------------------------------------------------ QPs */
struct sim_qp *sim_qp_new(struct sim_net *n, unsigned host, uint32_t sq_depth, sim_cqe_fn fn,
			  void *scq, void *rcq)
{
	struct sim_qp *qp = sim_zalloc(sizeof(*qp));

	qp->net = n;
	qp->host = host < n->hosts ? host : 0;
	qp->qpn = n->next_qpn++;
	qp->cap = sq_depth ? sq_depth : 1;
	qp->w = sim_zalloc(qp->cap * sizeof(*qp->w));
	qp->sq.qp = qp;
	qp->sq.cap = qp->cap;
	qp->sq.it = sim_zalloc(qp->cap * sizeof(*qp->sq.it));
	qp->resp.qp = qp;
	qp->fn = fn;
	qp->scq = scq;
	qp->rcq = rcq;
	qp->all_next = n->all;
	n->all = qp;
	return qp;
}

void sim_qp_connect(struct sim_qp *a, struct sim_qp *b)
{
	a->peer = b;
	b->peer = a;
}

uint32_t sim_qp_num(const struct sim_qp *q)
{
	return q->qpn;
}

uint32_t sim_qp_outstanding(const struct sim_qp *q)
{
	return q->n;
}

void sim_qp_post_recv(struct sim_qp *q, uint64_t wr_id)
{
	if (q->rn == q->rcap) {
		uint64_t *nr = sim_zalloc((q->rcap ? 2 * q->rcap : 64) * sizeof(*nr));

		for (uint32_t i = 0; i < q->rn; i++)
			nr[i] = q->recv[(q->rhead + i) % q->rcap];
		free(q->recv);
		q->recv = nr;
		q->rhead = 0;
		q->rcap = q->rcap ? 2 * q->rcap : 64;
	}
	q->recv[(q->rhead + q->rn++) % q->rcap] = wr_id;
}

/* ------------------------------------------------------------ arbiter */
static void ring_add(struct nic *c, struct txq *t)
{
	if (t->on)
		return;
	t->on = true;
	if (!c->cur) {
		t->prev = t->next = t;
		c->cur = t;
		return;
	}
	/* last in round-robin order: just before the next one to serve */
	t->next = c->cur;
	t->prev = c->cur->prev;
	t->prev->next = t;
	c->cur->prev = t;
}

static void ring_del(struct nic *c, struct txq *t)
{
	if (!t->on)
		return;
	t->on = false;
	if (t->next == t) {
		c->cur = NULL;
	} else {
		t->prev->next = t->next;
		t->next->prev = t->prev;
		if (c->cur == t)
			c->cur = t->next;
	}
	if (c->holder == t)
		c->holder = NULL;
}

static struct pkt *pkt_new(struct sim_net *n)
{
	struct pkt *k;

	if (!n->free_pkts) {
		struct pkt_slab *sl = sim_zalloc(sizeof(*sl));

		sl->next = n->slabs;
		n->slabs = sl;
		for (unsigned i = 0; i < PKT_SLAB; i++) {
			sl->p[i].next = n->free_pkts;
			n->free_pkts = &sl->p[i];
		}
	}
	k = n->free_pkts;
	n->free_pkts = k->next;
	return k;
}

static void pkt_free(struct sim_net *n, struct pkt *k)
{
	k->next = n->free_pkts;
	n->free_pkts = k;
}

static uint64_t ser_ps(uint64_t bytes, uint64_t bps)
{
	return (uint64_t)((unsigned __int128)bytes * 8u * 1000000000000ull / bps);
}

static uint64_t ps_to_ns_up(uint64_t ps)
{
	return (ps + 999) / 1000;
}

static void tx_done(void *arg, uint64_t u);
static void kick(struct sim_net *n, unsigned host);

static void send_one(struct sim_net *n, unsigned host, struct txq *t)
{
	struct nic *c = &n->nic[host];
	struct item *it = &t->it[t->head % t->cap];
	struct pkt *k = pkt_new(n);
	uint64_t start, dur = 0, rem;

	k->qp = t->qp;
	k->kind = it->kind;
	k->ref = it->ref;
	if (it->kind == IT_READREQ) {
		k->payload = 0;
		k->last = true;
	} else {
		rem = it->len - it->sent;
		k->payload = rem < n->p.mtu ? (uint32_t)rem : n->p.mtu;
		k->last = it->sent + k->payload >= it->len;
	}
	k->wire = k->payload + n->p.hdr_bytes;
	if (!it->sent)
		dur += n->p.wqe_ns * 1000;
	dur += ser_ps(k->wire, n->p.line_bps);
	it->sent += k->payload;
	start = c->tx_ps > n->q->now * 1000 ? c->tx_ps : n->q->now * 1000;
	c->tx_ps = start + dur;
	c->busy = true;
	c->st.busy_ns += dur / 1000;
	c->st.tx_pkts++;
	c->st.tx_payload += k->payload;
	c->st.tx_wire += k->wire;
	sim_evq_at(n->q, ps_to_ns_up(c->tx_ps), tx_done, k, host);

	if (k->last) {
		t->head++;
		t->n--;
		t->n_ready--;
		c->holder = NULL;
		c->cur = t->next;
		if (!t->n_ready)
			ring_del(c, t);
	} else if (n->p.arb == SIM_ARB_BURST && --c->burst_left == 0) {
		c->holder = NULL;
		c->cur = t->next;
	}
}

static void unpause(void *arg, uint64_t host)
{
	struct sim_net *n = arg;

	n->nic[host].paused = false;
	kick(n, (unsigned)host);
}

/* Lossless backpressure (PFC on one priority): while the receive queue of
 * the next packet's destination holds more than pfc_ns of work, the whole
 * transmit port pauses, whichever QP is next. */
static bool pfc_paused(struct sim_net *n, unsigned host, const struct txq *t)
{
	const struct nic *d = &n->nic[t->qp->peer->host];
	uint64_t now_ps = n->q->now * 1000, lim = n->p.pfc_ns * 1000;

	if (!n->p.pfc_ns || d->rx_ps <= now_ps + lim)
		return false;
	n->nic[host].paused = true;
	n->nic[host].st.pause_ns += ps_to_ns_up(d->rx_ps - now_ps - lim);
	sim_evq_at(n->q, ps_to_ns_up(d->rx_ps - lim), unpause, n, host);
	return true;
}

static void kick(struct sim_net *n, unsigned host)
{
	struct nic *c = &n->nic[host];
	struct txq *t;

	if (c->busy || c->paused)
		return;
	t = c->holder;
	if (!t) {
		t = c->cur;
		if (!t)
			return;
		c->holder = t;
		c->burst_left = n->p.burst_pkts;
	}
	if (pfc_paused(n, host, t))
		return;
	send_one(n, host, t);
}

static void item_ready(void *arg, uint64_t u)
{
	struct txq *t = arg;
	struct sim_net *n = t->qp->net;

	t->n_ready++;
	ring_add(&n->nic[t->qp->host], t);
	kick(n, t->qp->host);
}

static void txq_push(struct txq *t, const struct item *it)
{
	if (t->n == t->cap) {
		uint32_t ncap = t->cap ? 2 * t->cap : 16;
		struct item *ni = sim_zalloc(ncap * sizeof(*ni));

		for (uint32_t i = 0; i < t->n; i++)
			ni[(t->head + i) % ncap] = t->it[(t->head + i) % t->cap];
		free(t->it);
		t->it = ni;
		t->cap = ncap;
	}
	t->it[(t->head + t->n++) % t->cap] = *it;
}

int sim_qp_post_send(struct sim_qp *q, const struct sim_wr *wr)
{
	struct sim_net *n = q->net;
	uint32_t ref;
	uint64_t ready;

	if (!q->peer)
		return -ENOTCONN;
	if (q->n >= q->cap)
		return -ENOMEM;
	ref = q->head + q->n++;
	q->w[ref % q->cap] = (struct wqe){ .wr = *wr, .post_ns = n->q->now };
	txq_push(&q->sq, &(struct item){ .kind = wr->op == SIM_OP_READ ? IT_READREQ : IT_DATA,
					 .len = wr->len, .ref = ref });
	ready = n->q->now + n->p.fetch_ns + sim_rand_below(&n->rng, n->p.fetch_jitter_ns);
	if (ready < q->ready_ns)
		ready = q->ready_ns;  /* a QP's WQEs are fetched in order */
	q->ready_ns = ready;
	sim_evq_at(n->q, ready, item_ready, &q->sq, 0);
	return 0;
}

/* ------------------------------------------------------------ completions */
static void wqe_complete(void *arg, uint64_t u)
{
	struct sim_qp *q = arg;
	uint32_t ref = (uint32_t)u;
	struct wqe *w = &q->w[ref % q->cap];

	w->done = true;
	w->err = u >> 32;
	while (q->n && q->w[q->head % q->cap].done) {
		w = &q->w[q->head % q->cap];
		if (w->wr.signaled || w->err)
			q->fn(q->scq, &(struct sim_cqe){ .wr_id = w->wr.wr_id, .qpn = q->qpn, .byte_len = w->wr.len,
							  .op = w->wr.op, .error = w->err,
							  .post_ns = w->post_ns });
		w->done = false;
		q->head++;
		q->n--;
	}
}

static void ack_arrive(void *arg, uint64_t u)
{
	struct sim_qp *q = arg;

	sim_evq_after(q->net->q, q->net->p.cqe_ns, wqe_complete, q, u);
}

static void recv_complete(void *arg, uint64_t u)
{
	struct sim_qp *q = arg;

	q->fn(q->rcq, &(struct sim_cqe){ .wr_id = q->recv[q->rhead % q->rcap], .recv = true,
					 .qpn = q->qpn,
					 .byte_len = (uint32_t)u, .op = SIM_OP_SEND });
	q->rhead++;
	q->rn--;
	q->rres--;
}

static void resp_queue(void *arg, uint64_t u)
{
	struct sim_qp *r = arg;    /* the responder */
	struct sim_qp *req = r->peer;

	txq_push(&r->resp, &(struct item){ .kind = IT_RESP, .ref = (uint32_t)u,
					    .len = req->w[(uint32_t)u % req->cap].wr.len });
	item_ready(&r->resp, 0);
}

static void rx_done(void *arg, uint64_t u)
{
	struct pkt *k = arg;
	struct sim_qp *dst = k->qp->peer;
	struct sim_net *n = dst->net;
	const struct sim_wr *wr;
	uint64_t err = 0;

	n->nic[dst->host].st.rx_payload += k->payload;
	if (!k->last)
		goto out;
	switch (k->kind) {
	case IT_DATA:
		wr = &k->qp->w[k->ref % k->qp->cap].wr;
		if (wr->op == SIM_OP_SEND || wr->op == SIM_OP_WRITE_IMM) {
			/* consumes the oldest free receive; reported after cqe_ns */
			if (dst->rn > dst->rres) {
				dst->rres++;
				sim_evq_after(n->q, n->p.cqe_ns, recv_complete, dst, wr->len);
			} else {
				err = 1;     /* receiver not ready: no RNR retry in the model */
			}
		}
		sim_evq_after(n->q, n->p.resp_ns + n->p.prop_ns, ack_arrive, k->qp,
			      k->ref | err << 32);
		break;
	case IT_READREQ:
		sim_evq_after(n->q, n->p.resp_ns, resp_queue, dst, k->ref);
		break;
	case IT_RESP:
		sim_evq_after(n->q, n->p.cqe_ns, wqe_complete, dst, k->ref);
		break;
	}
out:
	pkt_free(n, k);
}

static void rx_arrive(void *arg, uint64_t u)
{
	struct pkt *k = arg;
	struct sim_qp *dst = k->qp->peer;
	struct sim_net *n = dst->net;
	struct nic *c = &n->nic[dst->host];
	uint64_t now_ps = n->q->now * 1000, done = c->rx_ps + ser_ps(k->wire, n->p.rx_bps);

	if (done < now_ps)
		done = now_ps;
	c->rx_ps = done;
	if ((done - now_ps) / 1000 > c->st.rx_queue_max_ns)
		c->st.rx_queue_max_ns = (done - now_ps) / 1000;
	sim_evq_at(n->q, ps_to_ns_up(done), rx_done, k, 0);
}

static void tx_done(void *arg, uint64_t host)
{
	struct pkt *k = arg;
	struct sim_net *n = k->qp->net;

	n->nic[host].busy = false;
	sim_evq_after(n->q, n->p.prop_ns, rx_arrive, k, 0);
	kick(n, (unsigned)host);
}

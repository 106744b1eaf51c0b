// SPDX-License-Identifier: MIT
/* The reference flow's responder, what peers make this daemon register
 * (ref_open, ref_close): an endpoint per request, bounded per connection,
 * per peer host and in total, in QPs and in pinned bytes.
 * May call: refverbs (the device), rdma, peer (replies), peeraddr (hosts),
 * log; not refflow.c or refprobe.c. */
#include "refresp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "log.h"
#include "peeraddr.h"
#include "refverbs.h"

void refresp_free(struct refflow *rf, struct ref_responder *r)
{
	struct ref_responder **pp;

	for (pp = &rf->resp; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	rdma_ep_destroy(&r->ep);
	rf->resp_bytes -= r->len;
	free(r);
	rf->n_resp--;
}

/* May connection @conn from @host register another @len bytes?  Bounded per
 * connection, per peer host (whatever number of connections it opens) and
 * in total, in responders (QPs) and in bytes: 0, or -EBUSY with @why. */
static int resp_admit(const struct refflow *rf, uint64_t conn, const struct sockaddr_storage *host,
		      size_t len, char *why, size_t n)
{
	size_t on_conn = 0, on_host = 0, host_bytes = 0;

	for (const struct ref_responder *r = rf->resp; r; r = r->next) {
		on_conn += r->conn == conn;
		if (peeraddr_same_host(&r->host, host)) {
			on_host++;
			host_bytes += r->len;
		}
	}
	if (on_conn >= REF_MAX_RESPONDERS)
		snprintf(why, n, "%d endpoints per connection", REF_MAX_RESPONDERS);
	else if (on_host >= REF_MAX_RESP_PER_HOST || host_bytes + len > REF_MAX_RESP_BYTES_PER_HOST)
		snprintf(why, n, "%d endpoints or %u MiB per peer host", REF_MAX_RESP_PER_HOST,
			 REF_MAX_RESP_BYTES_PER_HOST >> 20);
	else if (rf->n_resp >= REF_MAX_RESP_TOTAL || rf->resp_bytes + len > REF_MAX_RESP_BYTES_TOTAL)
		snprintf(why, n, "%d endpoints or %u MiB for all peers", REF_MAX_RESP_TOTAL,
			 REF_MAX_RESP_BYTES_TOTAL >> 20);
	else
		return 0;
	return -EBUSY;
}

void refresp_open(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq,
		  json_t *args, void *arg)
{
	struct refflow *rf = arg;
	struct rdma_remote rr;
	struct sockaddr_storage host;
	struct ref_responder *r;
	socklen_t hlen;
	json_int_t len;
	json_t *ep;
	json_error_t je;
	char err[160];

	if (json_unpack_ex(args, &je, JSON_STRICT, "{s:o, s:I}", "ep", &ep, "len", &len)) {
		peer_reply_error(pc, rq, "bad_request", "%s", je.text);
		return;
	}
	if (len < 1 || len > REF_MAX_BUF) {
		peer_reply_error(pc, rq, "bad_request", "len must be 1..%u", REF_MAX_BUF);
		return;
	}
	if (rdma_remote_parse(ep, false, &rr, err, sizeof(err))) {
		peer_reply_error(pc, rq, "bad_request", "%s", err);
		return;
	}
	if (peer_remote_addr(p, &host, &hlen)) {
		peer_reply_error(pc, rq, "internal", "no peer address");
		return;
	}
	if (resp_admit(rf, p->serial, &host, (size_t)len, err, sizeof(err))) {
		static uint64_t last_log;
		uint64_t now = clock_now_ns();

		rf->resp_refused++;
		if (!last_log || now - last_log > 10000000000ull) { /* one line per 10 s */
			log_warnx("peer %s: ref_open refused: %s (%llu refused so far)", p->name,
				  err, (unsigned long long)rf->resp_refused);
			last_log = now;
		}
		peer_reply_error(pc, rq, "limit", "%s", err);
		return;
	}
	if (refverbs_ensure_device(rf)) {
		peer_reply_error(pc, rq, "no_device", "%s", rf->error);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		peer_reply_error(pc, rq, "internal", "out of memory");
		return;
	}
	if (rdma_ep_create(&r->ep, &rf->dev, (size_t)len, true, 1, false, err, sizeof(err)) ||
	    rdma_ep_connect(&r->ep, &rr, err, sizeof(err))) {
		if (r->ep.qp)
			rdma_ep_destroy(&r->ep);
		free(r);
		peer_reply_error(pc, rq, "rdma", "%s", err);
		return;
	}
	r->conn = p->serial;
	r->host = host;
	r->len = (size_t)len;
	r->handle = ++rf->next_handle;
	r->next = rf->resp;
	rf->resp = r;
	rf->n_resp++;
	rf->resp_bytes += r->len;
	log_debug(LOG_SS_REF, "responder %lld for %s: QP %u, %lld bytes", (long long)r->handle,
		  p->name, r->ep.qp->qp_num, (long long)len);
	peer_reply(pc, rq, json_pack("{s:I, s:o}", "handle", (json_int_t)r->handle, "ep",
				     rdma_ep_info(&r->ep, true)));
}

void refresp_close(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq,
		   json_t *args, void *arg)
{
	struct refflow *rf = arg;
	struct ref_responder *r;
	json_int_t handle;
	json_error_t je;

	if (json_unpack_ex(args, &je, JSON_STRICT, "{s:I}", "handle", &handle)) {
		peer_reply_error(pc, rq, "bad_request", "%s", je.text);
		return;
	}
	for (r = rf->resp; r; r = r->next)
		if (r->conn == p->serial && r->handle == handle)
			break;
	if (!r) {
		peer_reply_error(pc, rq, "not_found", "no endpoint %lld", (long long)handle);
		return;
	}
	refresp_free(rf, r);
	peer_reply(pc, rq, NULL);
}

/* The connection @conn went away: its responders with it. */
void refresp_conn_closed(struct refflow *rf, uint64_t conn)
{
	struct ref_responder *r, *next;

	for (r = rf->resp; r; r = next) {
		next = r->next;
		if (r->conn == conn)
			refresp_free(rf, r);
	}
}

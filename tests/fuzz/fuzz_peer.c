// SPDX-License-Identifier: MIT
/* libFuzzer target for the daemon channel's message layer
 * (daemon/peermsg.c, acted on by peer.c): arbitrary lines from a peer, in the handshake or in
 * an established session (plain or sealed), as either side.  Checks that
 * nothing crashes and that everything the daemon answers is one well-formed
 * line: a JSON object, or hex of a sealed one when the session has keys.
 * Sealed lines that authenticate need the kernel's AF_ALG (kcrypto.h); on a
 * kernel without it every sealed line is refused, which is fuzzed too.
 *
 *   make build/fuzz/fuzz_peer
 *   build/fuzz/fuzz_peer -max_total_time=60 tests/fuzz/corpus/peer
 *
 * Remote READ control's operations and receiver-side views (daemon/rreadmsg.c,
 * rreadtab.c: remote_open, remote_close, remote_grants, kinds "read" and
 * "recv"; a throughput READ flow's grants in ops/s, [flow, ops, chunk,
 * "ops"]) are served as the daemon serves them, into a responder's table
 * that must stay within its bounds, give every incoming bandwidth flow a
 * share within [AIMD_MIN_BPS, MaxRate] (or 0: not limited) and forget the connection's flows
 * when it closes.
 *
 * The first input byte chooses the setting (bit 0: we dialled, bit 1: the
 * session is up, bit 2: with a shared secret); the rest is split into lines. */
#include "../../common/log.c"
#include "../../common/proto.c"
#include "../../daemon/kcrypto.c"
#include "../../daemon/peer.c"
#include "../../daemon/peeraddr.c"
#include "../../daemon/peerauth.c"
#include "../../daemon/peerconn.c"
#include "../../daemon/peermsg.c"
#include "../../daemon/rreadmsg.c"
#include "../../daemon/rreadtab.c"

#include <sys/socket.h>

#include "fuzz.h"

static struct ev_loop *loop;
static struct peer_ctx pc;

static void h_echo(struct peer_ctx *c, struct peer *p, const struct peer_req *rq, json_t *args,
		   void *arg)
{
	peer_reply(c, rq, json_deep_copy(args));
}

static void h_fail(struct peer_ctx *c, struct peer *p, const struct peer_req *rq, json_t *args,
		   void *arg)
{
	peer_reply_error(c, rq, "no", "%s", "failed");
}

static struct rread_tab rtab;

/* remote_open, remote_close: as rread.c serves them */
static void h_rread(struct peer_ctx *c, struct peer *p, const struct peer_req *rq, json_t *args,
		    void *arg)
{
	const char *code;
	json_t *result;
	char msg[200];

	if (rreadtab_serve(&rtab, p->serial, p, p->name, arg, args, 1000, &result, &code, msg,
			   sizeof(msg))) {
		CHECK(result == NULL && memchr(msg, 0, sizeof(msg)));
		peer_reply_error(c, rq, code, "%s", msg);
		return;
	}
	peer_reply(c, rq, result);
}

/* remote_grants: checked, each entry in range */
static void h_grants(struct peer_ctx *c, struct peer *p, const struct peer_req *rq, json_t *args,
		     void *arg)
{
	struct rread_grant g[RREAD_GRANTS_MAX];
	char err[160];
	size_t n = SIZE_MAX;
	uint8_t kind = 0xff;

	if (rreadmsg_parse_grants(args, &kind, g, &n, err, sizeof(err))) {
		CHECK(n == 0);
		peer_reply_error(c, rq, "bad_request", "%s", err);
		return;
	}
	CHECK(n <= RREAD_GRANTS_MAX && (kind == RREAD_READ || kind == RREAD_RECV));
	/* ops/s only in kind read (a throughput READ flow's), under its own bound */
	for (size_t i = 0; i < n; i++)
		CHECK(g[i].flow >= 1 &&
		      g[i].rate_bps <= (g[i].ops ? RREAD_OPS_MAX : RREAD_RATE_MAX) &&
		      (!g[i].ops || kind == RREAD_READ));
	peer_reply(c, rq, json_object());
}

/* The table: within its bounds, its counts adding up. */
static void check_table(void)
{
	size_t sum = 0;

	CHECK(rtab.n_conns <= RREAD_MAX_CONNS && rtab.total <= RREAD_MAX_TOTAL);
	for (size_t i = 0; i < rtab.n_conns; i++) {
		CHECK(rtab.conns[i]->n >= 1 && rtab.conns[i]->n <= RREAD_MAX_PER_CONN);
		for (size_t j = 0; j < rtab.conns[i]->n; j++) {
			const struct rread_open *o = &rtab.conns[i]->e[j].o;

			CHECK(o->flow >= 1 && o->qpn <= 0xffffff && o->peer_qpn <= 0xffffff);
			CHECK(o->weight >= 1 && o->weight <= RREAD_WEIGHT_MAX);
			CHECK(o->kind == RREAD_READ ? o->cls == FLOW_CLASS_BANDWIDTH ||
							      o->cls == FLOW_CLASS_THROUGHPUT
						    : o->kind == RREAD_RECV &&
							      (o->cls == FLOW_CLASS_BANDWIDTH ||
							       o->cls == FLOW_CLASS_LATENCY));
		}
		sum += rtab.conns[i]->n;
	}
	CHECK(sum == rtab.total);
	/* a throughput READ flow's grant says ops, no chunk; the others' bit/s */
	rreadtab_set_chunk(&rtab, 5120);
	for (size_t i = 0; i < rtab.n_conns; i++) {
		struct rread_grant g[RREAD_GRANTS_MAX];
		size_t from = 0, k = rreadtab_grants(rtab.conns[i], RREAD_READ, &from, g);

		for (size_t j = 0; j < k; j++)
			CHECK(g[j].ops ? g[j].chunk == 0 : g[j].chunk == 5120);
	}
	rreadtab_recv_shares(&rtab, 400000000, 1000000000);
	for (size_t i = 0; i < rtab.n_conns; i++)
		for (size_t j = 0; j < rtab.conns[i]->n; j++) {
			const struct rread_entry *e = &rtab.conns[i]->e[j];

			if (e->o.kind == RREAD_RECV && e->o.cls == FLOW_CLASS_BANDWIDTH)
				CHECK(!e->rate_bps ||
				      (e->rate_bps >= AIMD_MIN_BPS && e->rate_bps <= 1000000000));
			else if (e->o.kind == RREAD_RECV)
				CHECK(e->rate_bps == 0);
		}
}

static void ignore(struct peer_ctx *c, struct peer *p, json_t *result, const char *code,
		   const char *msg, void *arg)
{
}

/* Every line we wrote: JSON, or hex of at least a tag when @sealed. */
static void check_output(int fd, bool sealed)
{
	static char buf[1 << 20];
	size_t len = 0;
	ssize_t n;

	while ((n = recv(fd, buf + len, sizeof(buf) - 1 - len, MSG_DONTWAIT)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	for (char *line = buf, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
		size_t l = (size_t)(nl - line);
		json_t *j;

		*nl = 0;
		if (sealed) {
			CHECK(l % 2 == 0 && l > 2 * KCRYPTO_TAG);
			CHECK(strspn(line, "0123456789abcdef") == l);
			continue;
		}
		j = json_loadb(line, l, JSON_REJECT_DUPLICATES, NULL);
		CHECK(j && json_is_object(j));
		CHECK(json_integer_value(json_object_get(j, "v")) == PEER_PROTO_VERSION);
		json_decref(j);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct peer p;
	int sv[2];
	char *copy;

	if (!loop) {
		loop = ev_loop_new(EVFLAG_AUTO);
		log_init("fuzz_peer", LOG_LVL_ERROR, 0);
		pc.loop = loop;
		pc.node = 42;
		pc.lfd = -1;
		peer_handle(&pc, "echo", h_echo, NULL);
		peer_handle(&pc, "fail", h_fail, NULL);
		peer_handle(&pc, RREAD_OP_OPEN, h_rread, (void *)(uintptr_t)RREAD_OP_OPEN);
		peer_handle(&pc, RREAD_OP_CLOSE, h_rread, (void *)(uintptr_t)RREAD_OP_CLOSE);
		peer_handle(&pc, RREAD_OP_GRANTS, h_grants, NULL);
	}
	if (!size || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
		return 0;
	memset(&p, 0, sizeof(p));
	p.magic = PEER_MAGIC;
	p.pc = &pc;
	p.fd = sv[0];
	p.outgoing = data[0] & 1;
	p.serial = 1;
	p.next_id = 1;
	snprintf(p.name, sizeof(p.name), "fuzz");
	ev_init(&p.tw, NULL);
	ev_io_init(&p.rw, NULL, sv[0], EV_READ);
	ev_io_init(&p.ww, NULL, sv[0], EV_WRITE);
	proto_linebuf_init(&p.in, PEER_MAX_LINE);
	pc.have_secret = data[0] & 4;
	memset(pc.key, 1, sizeof(pc.key));
	if (data[0] & 2) {
		static const uint8_t krx[KCRYPTO_KEY] = { 3 }, ktx[KCRYPTO_KEY] = { 5 };

		p.state = PEER_UP;
		p.got_hello = true;
		if (pc.have_secret) {
			/* fd -1 when the kernel has no AF_ALG: every line fails */
			kcrypto_aead_init(&p.rx, krx);
			kcrypto_aead_init(&p.tx, ktx);
			p.sealed = true;
		}
		/* a request of ours in flight, for replies to match */
		peer_request(&p, "echo", NULL, ignore, NULL, 0);
	} else {
		p.state = PEER_HANDSHAKE;
	}
	copy = malloc(size);
	memcpy(copy, data + 1, size - 1);
	copy[size - 1] = 0;
	for (char *line = copy, *nl; line < copy + size - 1 && p.state != PEER_DOWN; line = nl + 1) {
		nl = memchr(line, '\n', (size_t)(copy + size - 1 - line));
		if (!nl)
			nl = copy + size - 1;
		*nl = 0;
		if ((size_t)(nl - line) <= PEER_MAX_LINE)
			handle_line(&p, line, (size_t)(nl - line));
	}
	check_output(sv[1], pc.have_secret && (data[0] & 2));
	check_table();
	if (p.state != PEER_DOWN)
		peerconn_close(&p, "done");
	/* the connection is gone: so are its remote flows (rread.c's listener) */
	rreadtab_drop(&rtab, 1); /* (p.serial, which closing zeroed) */
	CHECK(rtab.total == 0 && rtab.n_conns == 0);
	ev_timer_stop(loop, &p.tw);
	free(copy);
	close(sv[1]);
	return 0;
}

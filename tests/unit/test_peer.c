// SPDX-License-Identifier: MIT
/* Unit tests of daemon/peer*.c (peer, peerconn, peermsg, peeraddr) with
 * peerauth.c and kcrypto.c: two peer contexts over TCP on the loopback interface
 * that dial each other, with and without a shared secret; requests, replies,
 * errors, timeouts, async handlers; authentication failures, tampered and
 * replayed messages; strict parsing and the source-address check, from a
 * raw socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../common/log.c"
#include "../../common/proto.c"
#include "../../daemon/peer.c"
#include "../../daemon/peeraddr.c"
#include "../../daemon/peerauth.c"
#include "../../daemon/peerconn.c"
#include "../../daemon/peermsg.c"
#include "../../daemon/kcrypto.c"

/* ------------------------------------------------------------ two daemons */

static struct ev_loop *loop;

struct box {
	struct config cfg;
	struct peer_ctx pc;
	int ups, downs;
};

static void on_event(struct peer_ctx *pc, struct peer *p, bool up, void *arg)
{
	struct box *b = arg;

	if (up)
		b->ups++;
	else
		b->downs++;
}

static void h_echo(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq, json_t *args,
		   void *arg)
{
	peer_reply(pc, rq, json_deep_copy(args));
}

static void h_fail(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq, json_t *args,
		   void *arg)
{
	peer_reply_error(pc, rq, "no_luck", "failed on purpose");
}

static void h_never(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq, json_t *args,
		    void *arg)
{
}

static struct peer_req later_rq;
static ev_timer later_w;

static void later_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	peer_reply(w->data, &later_rq, json_pack("{s:s}", "when", "later"));
}

static void h_later(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq, json_t *args,
		    void *arg)
{
	later_rq = *rq;
	ev_timer_init(&later_w, later_cb, 0.05, 0);
	later_w.data = pc;
	ev_timer_start(loop, &later_w);
}

struct result {
	int done;
	json_t *result;
	char code[32], msg[160];
};

static void on_reply_cb(struct peer_ctx *pc, struct peer *p, json_t *result, const char *code,
			const char *msg, void *arg)
{
	struct result *r = arg;

	r->done = 1;
	r->result = result ? json_incref(result) : NULL;
	snprintf(r->code, sizeof(r->code), "%s", code ? code : "");
	snprintf(r->msg, sizeof(r->msg), "%s", msg ? msg : "");
}

static void pump_until(int *flag, int ms)
{
	for (int i = 0; i < ms && !*flag; i++) {
		ev_run(loop, EVRUN_NOWAIT);
		usleep(1000);
	}
	ev_run(loop, EVRUN_NOWAIT);
}

static void pump(int ms)
{
	int never = 0;

	pump_until(&never, ms);
}

static char secret_a[64], secret_b[64];

static void write_secret(char *path, const char *text, mode_t mode)
{
	int fd;

	strcpy(path, "/tmp/justitia-secret-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	fchmod(fd, mode);
	close(fd);
}

/* The configuration holds nothing but what the channel reads. */
static void cfg_free(struct config *c)
{
	free(c->peers);
	memset(c, 0, sizeof(*c));
}

static void box_cfg(struct box *b, const char *secret)
{
	memset(&b->cfg, 0, sizeof(b->cfg));
	snprintf(b->cfg.reference.listen_address, sizeof(b->cfg.reference.listen_address),
		 "127.0.0.1");
	b->cfg.reference.listen_port = 0; /* any: the test reads it back */
	if (secret)
		snprintf(b->cfg.reference.secret_file, sizeof(b->cfg.reference.secret_file), "%s",
			 secret);
}

static void set_peer(struct box *b, uint16_t port)
{
	free(b->cfg.peers);
	b->cfg.peers = calloc(1, sizeof(*b->cfg.peers));
	b->cfg.n_peers = 1;
	snprintf(b->cfg.peers[0].address, sizeof(b->cfg.peers[0].address), "127.0.0.1");
	b->cfg.peers[0].port = port;
}

/* A listens, B dials A, then A is reconfigured to dial B. */
static void pair_up(struct box *a, struct box *b, const char *sa, const char *sb, uint64_t node)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	box_cfg(a, sa);
	box_cfg(b, sb);
	assert_int_equal(peer_ctx_init(&a->pc, loop, &a->cfg, node, NULL), 0);
	peer_handle(&a->pc, "echo", h_echo, NULL);
	peer_handle(&a->pc, "fail", h_fail, NULL);
	peer_handle(&a->pc, "never", h_never, NULL);
	peer_handle(&a->pc, "later", h_later, NULL);
	peer_listen_events(&a->pc, on_event, a);
	set_peer(b, a->pc.listen_port);
	assert_int_equal(peer_ctx_init(&b->pc, loop, &b->cfg, node + 1, NULL), 0);
	peer_handle(&b->pc, "echo", h_echo, NULL);
	peer_listen_events(&b->pc, on_event, b);
	set_peer(a, b->pc.listen_port);
	peer_ctx_reconfigure(&a->pc, &a->cfg);
}

static void pair_down(struct box *a, struct box *b)
{
	peer_ctx_fini(&a->pc);
	peer_ctx_fini(&b->pc);
	pump(10);
	cfg_free(&a->cfg);
	cfg_free(&b->cfg);
}

static bool both_up(struct box *a, struct box *b)
{
	return a->pc.out[0].state == PEER_UP && b->pc.out[0].state == PEER_UP;
}

static void wait_up(struct box *a, struct box *b)
{
	for (int i = 0; i < 3000 && !both_up(a, b); i++) {
		ev_run(loop, EVRUN_NOWAIT);
		usleep(1000);
	}
	assert_true(both_up(a, b));
}

static struct result call(struct peer *p, const char *op, json_t *args, int timeout_ms)
{
	struct result r = { 0 };

	assert_int_equal(peer_request(p, op, args, on_reply_cb, &r, timeout_ms), 0);
	pump_until(&r.done, 3000);
	assert_true(r.done);
	return r;
}

static void requests(struct box *a, struct box *b)
{
	struct peer *pb = peer_outgoing(&b->pc, 0);
	struct result r;

	r = call(pb, "echo", json_pack("{s:i, s:s}", "x", 1, "y", "z"), 0);
	assert_non_null(r.result);
	assert_int_equal(json_integer_value(json_object_get(r.result, "x")), 1);
	json_decref(r.result);
	r = call(pb, "echo", NULL, 0);
	assert_true(json_is_object(r.result) && !json_object_size(r.result));
	json_decref(r.result);
	r = call(pb, "fail", NULL, 0);
	assert_null(r.result);
	assert_string_equal(r.code, "no_luck");
	assert_string_equal(r.msg, "failed on purpose");
	r = call(pb, "frobnicate", NULL, 0);
	assert_string_equal(r.code, "unknown_op");
	r = call(pb, "later", NULL, 0);
	assert_string_equal(json_string_value(json_object_get(r.result, "when")), "later");
	json_decref(r.result);
	r = call(pb, "never", NULL, 100);
	assert_string_equal(r.code, "timeout");
	/* the other direction, on A's own outgoing connection */
	r = call(peer_outgoing(&a->pc, 0), "echo", json_pack("{s:b}", "back", 1), 0);
	assert_true(json_is_true(json_object_get(r.result, "back")));
	json_decref(r.result);
	assert_int_equal(peer_request(NULL, "echo", NULL, on_reply_cb, NULL, 0), -ENOTCONN);
}

static void plain_channel(void **state)
{
	struct box a, b;

	pair_up(&a, &b, NULL, NULL, 100);
	wait_up(&a, &b);
	assert_false(a.pc.out[0].sealed);
	assert_int_equal(a.pc.n_in, 1);
	assert_int_equal(b.pc.n_in, 1);
	requests(&a, &b);
	/* each side saw its outgoing and its incoming connection come up */
	assert_int_equal(a.ups, 2);
	assert_int_equal(b.ups, 2);
	pair_down(&a, &b);
}

static void authenticated_channel(void **state)
{
	struct box a, b;
	struct peer *pb;
	struct result r;

	write_secret(secret_a, "a shared secret of 32 characters\n", 0600);
	pair_up(&a, &b, secret_a, secret_a, 200);
	wait_up(&a, &b);
	assert_true(a.pc.out[0].sealed && b.pc.out[0].sealed);
	requests(&a, &b);

	/* a message sealed under another key: the receiver hangs up */
	pb = peer_outgoing(&b.pc, 0);
	{
		static const uint8_t other[KCRYPTO_KEY] = { 7 };

		kcrypto_aead_free(&pb->tx);
		assert_int_equal(kcrypto_aead_init(&pb->tx, other), 0);
	}
	memset(&r, 0, sizeof(r));
	assert_int_equal(peer_request(pb, "echo", NULL, on_reply_cb, &r, 0), 0);
	pump_until(&r.done, 3000);
	assert_string_equal(r.code, "closed");
	/* it comes back (backoff) and works again */
	wait_up(&a, &b);
	r = call(peer_outgoing(&b.pc, 0), "echo", NULL, 0);
	assert_non_null(r.result);
	json_decref(r.result);

	/* a replayed sequence number: the same */
	pb = peer_outgoing(&b.pc, 0);
	pb->seq_tx--;
	memset(&r, 0, sizeof(r));
	assert_int_equal(peer_request(pb, "echo", NULL, on_reply_cb, &r, 0), 0);
	pump_until(&r.done, 3000);
	assert_string_equal(r.code, "closed");
	pair_down(&a, &b);
	unlink(secret_a);
}

static void authentication_failures(void **state)
{
	struct box a, b;

	/* different secrets */
	write_secret(secret_a, "the first secret, long enough", 0600);
	write_secret(secret_b, "the other secret, long enough", 0600);
	pair_up(&a, &b, secret_a, secret_b, 300);
	pump(300);
	assert_int_not_equal(b.pc.out[0].state, PEER_UP);
	assert_int_not_equal(a.pc.out[0].state, PEER_UP);
	assert_non_null(strstr(b.pc.out[0].error, "authentication failed"));
	assert_int_equal(a.ups + b.ups, 0);
	pair_down(&a, &b);

	/* a secret on one side only */
	pair_up(&a, &b, secret_a, NULL, 400);
	pump(300);
	assert_int_equal(a.ups + b.ups, 0);
	assert_non_null(strstr(b.pc.out[0].error, "requires a shared secret"));
	assert_non_null(strstr(a.pc.out[0].error, "no shared secret"));
	pair_down(&a, &b);

	/* a secret file others (other users, or its group) can read, or too
	 * short: the channel is off */
	for (int mode = 0604; mode; mode = mode == 0604 ? 0640 : 0) {
		unlink(secret_b);
		write_secret(secret_b, "the other secret, long enough", (mode_t)mode);
		memset(&a, 0, sizeof(a));
		box_cfg(&a, secret_b);
		assert_int_equal(peer_ctx_init(&a.pc, loop, &a.cfg, 500, NULL), -EINVAL);
		assert_non_null(strstr(a.pc.error, "readable by others than its owner"));
		assert_int_equal(a.pc.lfd, -1);
		peer_ctx_fini(&a.pc);
		cfg_free(&a.cfg);
	}
	unlink(secret_b);
	write_secret(secret_b, "short\n", 0600);
	memset(&a, 0, sizeof(a));
	box_cfg(&a, secret_b);
	set_peer(&a, 9);
	assert_int_equal(peer_ctx_init(&a.pc, loop, &a.cfg, 500, NULL), -EINVAL);
	assert_non_null(strstr(a.pc.error, "16 to 4096 bytes"));
	assert_int_equal(a.pc.out[0].state, PEER_DOWN); /* not even dialled */
	peer_ctx_fini(&a.pc);
	cfg_free(&a.cfg);
	unlink(secret_a);
	unlink(secret_b);
}

/* ------------------------------------------------------------ raw peers */

static int raw_connect(const char *src, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct sockaddr_in me = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	inet_pton(AF_INET, src, &me.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	pump(20);
	return fd;
}

/* Everything the daemon sent until it closed (or 1 s passed). */
static char *raw_drain(int fd, bool *closed)
{
	static char buf[65536];
	size_t got = 0;

	*closed = false;
	for (int i = 0; i < 1000; i++) {
		ssize_t n;

		ev_run(loop, EVRUN_NOWAIT);
		n = recv(fd, buf + got, sizeof(buf) - 1 - got, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN)) {
			*closed = true;
			break;
		}
		if (n > 0)
			got += (size_t)n;
		usleep(1000);
	}
	buf[got] = 0;
	return buf;
}

static void raw_send(int fd, const char *s)
{
	assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

static void strict_wire(void **state)
{
	static const struct {
		const char *line, *reply;
	} bad[] = {
		{ "{\"v\":1,\"type\":\"hello\"}\n", "version 1 not supported" },
		/* 2^32 + 2 is not version 2 (an (int) cast made it so) */
		{ "{\"v\":4294967298,\"type\":\"hello\"}\n", "not supported" },
		{ "not json\n", "invalid JSON" },
		{ "{\"v\":2}\n", "without a type" },
		{ "{\"v\":2,\"type\":\"req\",\"id\":1,\"op\":\"echo\"}\n", "expected hello" },
		{ "{\"v\":2,\"type\":\"hello\",\"role\":\"client\",\"node\":\"00000000000000ff\","
		  "\"nonce\":\"000102030405060708090a0b0c0d0e0f\",\"auth\":false,\"x\":1}\n",
		  "bad hello" },
		{ "{\"v\":2,\"type\":\"hello\",\"role\":\"server\",\"node\":\"00000000000000ff\","
		  "\"nonce\":\"000102030405060708090a0b0c0d0e0f\",\"auth\":false}\n",
		  "role" },
		{ "{\"v\":2,\"type\":\"hello\",\"role\":\"client\",\"node\":\"0000000000000258\","
		  "\"nonce\":\"000102030405060708090a0b0c0d0e0f\",\"auth\":false}\n",
		  "itself" },
		{ "{\"v\":2,\"type\":\"hello\",\"role\":\"client\",\"node\":\"00000000000000ff\","
		  "\"nonce\":\"0001\",\"auth\":false}\n",
		  "node or nonce" },
	};
	static const char good_hello[] =
		"{\"v\":2,\"type\":\"hello\",\"role\":\"client\",\"node\":\"00000000000000ff\","
		"\"nonce\":\"000102030405060708090a0b0c0d0e0f\",\"auth\":false}\n";
	struct box a;
	bool closed;
	char *got;
	int fd;

	memset(&a, 0, sizeof(a));
	box_cfg(&a, NULL);
	set_peer(&a, 9); /* allows 127.0.0.1 */
	assert_int_equal(peer_ctx_init(&a.pc, loop, &a.cfg, 600, NULL), 0);
	peer_handle(&a.pc, "echo", h_echo, NULL);

	/* not a configured peer: closed at once, not a byte sent */
	fd = raw_connect("127.0.0.2", a.pc.listen_port);
	got = raw_drain(fd, &closed);
	assert_true(closed);
	assert_string_equal(got, "");
	close(fd);
	assert_int_equal(a.pc.refused.address, 1); /* counted (justctl status) */

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fd = raw_connect("127.0.0.1", a.pc.listen_port);
		raw_send(fd, bad[i].line);
		got = raw_drain(fd, &closed);
		assert_true(closed);
		if (!strstr(got, bad[i].reply))
			fail_msg("case %zu: no \"%s\" in %s", i, bad[i].reply, got);
		assert_non_null(strstr(got, "\"type\":\"hello\""));
		assert_non_null(strstr(got, "\"type\":\"error\""));
		close(fd);
		pump(1);
		assert_int_equal(a.pc.refused.protocol, i + 1);
	}

	/* a good hello, then a request: answered; then a reply to nothing */
	fd = raw_connect("127.0.0.1", a.pc.listen_port);
	raw_send(fd, good_hello);
	raw_send(fd, "{\"v\":2,\"type\":\"req\",\"id\":7,\"op\":\"echo\",\"args\":{\"k\":3}}\n");
	raw_send(fd, "{\"v\":2,\"type\":\"req\",\"id\":8,\"op\":\"echo\",\"args\":[1]}\n");
	got = raw_drain(fd, &closed);
	assert_true(closed);
	assert_non_null(strstr(got, "{\"v\":2,\"type\":\"rep\",\"id\":7,\"ok\":true,"
				    "\"result\":{\"k\":3}}"));
	assert_non_null(strstr(got, "args must be an object"));
	close(fd);

	/* an overlong line */
	fd = raw_connect("127.0.0.1", a.pc.listen_port);
	raw_send(fd, good_hello);
	{
		char *big = malloc(PEER_MAX_LINE + 10);

		memset(big, ' ', PEER_MAX_LINE + 8);
		big[PEER_MAX_LINE + 8] = '\n';
		big[PEER_MAX_LINE + 9] = 0;
		send(fd, big, PEER_MAX_LINE + 9, MSG_NOSIGNAL);
		free(big);
	}
	{
		uint64_t before = a.pc.refused.protocol;

		raw_drain(fd, &closed);
		assert_true(closed);
		assert_int_equal(a.pc.refused.protocol, before + 1);
	}
	close(fd);
	pump(10);
	assert_int_equal(a.pc.n_in, 0); /* every refused connection was freed */
	assert_int_equal(a.pc.refused.limit, 0);

	peer_ctx_fini(&a.pc);
	cfg_free(&a.cfg);
}

/* A peer configured by host name is resolved on a thread, not in the event
 * loop (getaddrinfo() may wait seconds for DNS, on every redial): right
 * after the dial the connection has no socket yet; it comes up once the
 * thread's answer has been taken from the loop. */
static void host_name_resolved_off_loop(void **state)
{
	struct box a, b;
	struct peer *p;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	box_cfg(&a, NULL);
	box_cfg(&b, NULL);
	set_peer(&a, 9); /* allows 127.0.0.1 */
	assert_int_equal(peer_ctx_init(&a.pc, loop, &a.cfg, 800, NULL), 0);
	set_peer(&b, a.pc.listen_port);
	snprintf(b.cfg.peers[0].address, sizeof(b.cfg.peers[0].address), "localhost");
	assert_int_equal(peer_ctx_init(&b.pc, loop, &b.cfg, 801, NULL), 0);
	p = peer_outgoing(&b.pc, 0);
	assert_int_equal(p->state, PEER_CONNECTING);
	assert_int_equal(p->fd, -1);          /* not connecting yet: resolving */
	assert_true(p->resolve_token != 0);
	for (int i = 0; i < 3000 && p->state != PEER_UP; i++) {
		ev_run(loop, EVRUN_NOWAIT);
		usleep(1000);
	}
	assert_int_equal(p->state, PEER_UP);
	assert_int_equal(p->resolve_token, 0);
	/* a literal is dialled at once */
	set_peer(&b, a.pc.listen_port);
	peer_ctx_reconfigure(&b.pc, &b.cfg);
	p = peer_outgoing(&b.pc, 0);
	assert_true(p->fd >= 0);
	assert_int_equal(p->resolve_token, 0);
	/* a name being resolved while the peers are rebuilt: the answer is dropped */
	snprintf(b.cfg.peers[0].address, sizeof(b.cfg.peers[0].address), "localhost");
	peer_ctx_reconfigure(&b.pc, &b.cfg);
	set_peer(&b, a.pc.listen_port);
	peer_ctx_reconfigure(&b.pc, &b.cfg);
	pump(200);
	peer_ctx_fini(&b.pc);
	peer_ctx_fini(&a.pc);
	pump(10);
	cfg_free(&a.cfg);
	cfg_free(&b.cfg);
}

/* One peer host cannot take every incoming slot (issue 16): each accepted
 * connection may hold responders, so connections per host are bounded. */
static void incoming_per_host(void **state)
{
	int fds[MAX_INCOMING_PER_HOST + 6];
	struct box a;

	memset(&a, 0, sizeof(a));
	box_cfg(&a, NULL);
	set_peer(&a, 9); /* allows 127.0.0.1 */
	assert_int_equal(peer_ctx_init(&a.pc, loop, &a.cfg, 700, NULL), 0);
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		fds[i] = raw_connect("127.0.0.1", a.pc.listen_port);
	pump(50);
	assert_int_equal(a.pc.n_in, MAX_INCOMING_PER_HOST);
	assert_int_equal(a.pc.refused.limit, 6); /* counted (justctl status) */
	assert_int_equal(a.pc.refused.address, 0);
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		close(fds[i]);
	pump(50);
	assert_int_equal(a.pc.n_in, 0);
	peer_ctx_fini(&a.pc);
	cfg_free(&a.cfg);
}

static int setup(void **state)
{
	loop = ev_loop_new(EVFLAG_AUTO);
	log_init("test_peer", LOG_LVL_ERROR, 0);
	return loop ? 0 : -1;
}

static int teardown(void **state)
{
	ev_loop_destroy(loop);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_channel),
		cmocka_unit_test(authenticated_channel),
		cmocka_unit_test(authentication_failures),
		cmocka_unit_test(strict_wire),
		cmocka_unit_test(incoming_per_host),
		cmocka_unit_test(host_name_resolved_off_loop),
	};

	char why[256];

	/* the authenticated cases need the kernel's crypto API (AF_ALG) */
	if (kcrypto_probe(why, sizeof(why))) {
		fprintf(stderr, "test_peer: %s: needs the guest\n", why);
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}

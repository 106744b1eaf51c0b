// SPDX-License-Identifier: MIT
/* Unit tests of daemon/splitq.c: which daemon a split-QP lookup goes to.
 * Two peer channels on the loopback interface; one daemon knows the other
 * by host name ("localhost"), by IPv4 literal or by IPv4-mapped IPv6
 * literal.  The lookup must find it from the GID (::ffff:127.0.0.1, as a
 * RoCE v2 GID of 127.0.0.1) whichever way it was configured; before, only
 * a literal IPv4 address matched.  #includes splitq.c and links the
 * daemon's other objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <time.h>
#include <unistd.h>

#include "../../daemon/splitq.c"

#define GID_LOCAL "0000:0000:0000:0000:0000:ffff:7f00:0001"

uint64_t daemon_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct ev_loop *loop;

struct box {
	struct config cfg;
	struct peer_ctx pc;
	struct daemon d;
};

static void box_init(struct box *b, uint64_t node)
{
	memset(b, 0, sizeof(*b));
	snprintf(b->cfg.reference.listen_address, sizeof(b->cfg.reference.listen_address),
		 "127.0.0.1");
	b->cfg.reference.listen_port = 0;
	assert_int_equal(peer_ctx_init(&b->pc, loop, &b->cfg, node, NULL), 0);
	b->d.loop = loop;
	b->d.peer = &b->pc;
}

static void set_peer(struct box *b, const char *address, uint16_t port)
{
	free(b->cfg.peers);
	b->cfg.peers = calloc(1, sizeof(*b->cfg.peers));
	b->cfg.n_peers = 1;
	snprintf(b->cfg.peers[0].address, sizeof(b->cfg.peers[0].address), "%s", address);
	b->cfg.peers[0].port = port;
	b->d.cfg = b->cfg;
	peer_ctx_reconfigure(&b->pc, &b->cfg);
}

static void box_fini(struct box *b)
{
	peer_ctx_fini(&b->pc);
	free(b->cfg.peers);
}

static bool up(struct box *b)
{
	struct peer *p = peer_outgoing(&b->pc, 0);

	return p && p->state == PEER_UP;
}

static void pump_until_up(struct box *a, struct box *b)
{
	for (int i = 0; i < 5000 && !(up(a) && up(b)); i++) {
		ev_run(loop, EVRUN_NOWAIT);
		usleep(1000);
	}
	assert_true(up(a) && up(b));
}

static void by_any_address(void **state)
{
	static const char *const names[] = { "localhost", "127.0.0.1", "::ffff:127.0.0.1" };

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct box a, b;
		struct peer *p;

		box_init(&a, 100 + 2 * i);
		box_init(&b, 101 + 2 * i);
		set_peer(&b, "127.0.0.1", a.pc.listen_port);
		set_peer(&a, names[i], b.pc.listen_port);
		pump_until_up(&a, &b);
		p = splitq_peer_for_gid(&a.d, GID_LOCAL);
		if (!p)
			fail_msg("peer configured as \"%s\" not found for GID %s", names[i],
				 GID_LOCAL);
		assert_int_equal(p->state, PEER_UP);
		/* another host's GID is nobody's */
		assert_null(splitq_peer_for_gid(&a.d, "0000:0000:0000:0000:0000:ffff:0a00:0001"));
		assert_null(splitq_peer_for_gid(&a.d, "fe80:0000:0000:0000:0000:0000:0000:0001"));
		assert_null(splitq_peer_for_gid(&a.d, "not a gid"));
		box_fini(&a);
		box_fini(&b);
	}
}

/* A configured literal that is not connected still names the peer (the
 * request then fails with "not reachable", which says more than "not a
 * configured peer"). */
static void literal_not_up(void **state)
{
	struct box a;

	(void)state;
	box_init(&a, 300);
	set_peer(&a, "fd00::17", 9);
	assert_non_null(splitq_peer_for_gid(&a.d, "fd00:0000:0000:0000:0000:0000:0000:0017"));
	assert_null(splitq_peer_for_gid(&a.d, GID_LOCAL));
	box_fini(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(by_any_address),
		cmocka_unit_test(literal_not_up),
	};

	loop = ev_loop_new(EVFLAG_AUTO);
	log_init("test_splitq", LOG_LVL_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/* Unit tests of shim/client.c, the shim's side of the control socket,
 * against a fake daemon (a thread on a socket in a temporary directory)
 * and a fake provider context: the shared memory the daemon hands over is
 * used only when every header field is what this shim was built for; a
 * registration reply whose flow or slots do not fit the segments leaves
 * the QP unmanaged, a good one links the QP to its slots; the class the
 * shim asks for follows JUSTITIA_CLASS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "../shim-all.h"
#include "../../daemon/shm.c"

/* ------------------------------------------------------------ the fake daemon */

static struct {
	pthread_mutex_t lock;
	int lfd;
	char path[108];
	pthread_t th;
	/* what to answer */
	void (*spoil)(struct jst_shm_global *g, struct jst_shm_client *c);
	char reg_reply[512];          /* the register_qp reply, or "" for a good one */
	int reg_delay_ms;             /* before it answers register_qp */
	int refuse_update;            /* update_qp: permission_denied (tenants policy) */
	/* what it saw */
	json_t *last_register;
	int n_hello;
} fd_ = { .lock = PTHREAD_MUTEX_INITIALIZER, .lfd = -1 };

static struct shm_seg gseg, cseg;

static void answer(int fd, json_t *req)
{
	const char *cmd = json_string_value(json_object_get(req, "cmd"));
	json_t *r = proto_reply_ok(req);
	char *line;
	size_t len;

	if (!strcmp(cmd, "hello")) {
		int fds[2];

		assert_int_equal(shm_global_create(&gseg, 4, 0x1000), 0);
		assert_int_equal(shm_client_create(&cseg, 4, (uint32_t)getpid(), 0x1000), 0);
		atomic_store(&((struct jst_shm_global *)gseg.base)->heartbeat_ns, clock_now_ns());
		pthread_mutex_lock(&fd_.lock);
		if (fd_.spoil)
			fd_.spoil(gseg.base, cseg.base);
		fd_.n_hello++;
		pthread_mutex_unlock(&fd_.lock);
		fds[0] = shm_seg_open_ro(&gseg);
		fds[1] = cseg.fd;
		line = proto_encode(r, &len);
		assert_int_equal(proto_send(fd, line, len, fds, 2), 0);
		close(fds[0]);
		free(line);
		json_decref(r);
		return;
	}
	if (!strcmp(cmd, "register_qp")) {
		pthread_mutex_lock(&fd_.lock);
		if (fd_.reg_delay_ms) {
			/* (a daemon busy asking another host: answers late) */
			pthread_mutex_unlock(&fd_.lock);
			usleep((useconds_t)fd_.reg_delay_ms * 1000);
			pthread_mutex_lock(&fd_.lock);
		}
		json_decref(fd_.last_register);
		fd_.last_register = json_incref(req);
		if (fd_.reg_reply[0]) {
			json_decref(r);
			r = json_loads(fd_.reg_reply, 0, NULL);
			assert_non_null(r);
			json_object_set(r, "id", json_object_get(req, "id"));
		} else {
			json_t *good = json_pack("{s:i, s:i, s:i, s:s, s:s, s:n}", "flow", 5, "slot",
						 1, "app_slot", 2, "class", "latency",
						 "class_source", "hint", "warning");

			json_object_update(r, good);
			json_decref(good);
		}
		pthread_mutex_unlock(&fd_.lock);
	}
	if (!strcmp(cmd, "update_qp")) {
		pthread_mutex_lock(&fd_.lock);
		if (fd_.refuse_update) {
			json_decref(r);
			r = proto_reply_error(req, PROTO_E_PERMISSION, "class not allowed");
		}
		pthread_mutex_unlock(&fd_.lock);
	}
	line = proto_encode(r, &len);
	json_decref(r);
	proto_send(fd, line, len, NULL, 0);
	free(line);
}

static void *daemon_main(void *arg)
{
	for (;;) {
		struct proto_linebuf lb;
		char buf[4096], *line;
		size_t len;
		ssize_t n;
		int fd = accept(fd_.lfd, NULL, NULL);

		if (fd < 0)
			return NULL; /* closed: the test is over */
		proto_linebuf_init(&lb, 0);
		while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
			proto_linebuf_feed(&lb, buf, (size_t)n);
			while (proto_linebuf_next(&lb, &line, &len) == 1) {
				json_t *req = json_loads(line, 0, NULL);

				free(line);
				if (req)
					answer(fd, req);
				json_decref(req);
			}
		}
		proto_linebuf_free(&lb);
		close(fd);
	}
}

/* ------------------------------------------------------------ the fake provider */

static struct ibv_device fake_dev = { .name = "fake0" };
static struct verbs_context vctx;
static struct ibv_qp qp;
static struct shim_qp *q;

static int ok_post_send(struct ibv_qp *x, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return 0;
}

static int ok_destroy(struct ibv_qp *x) { return 0; }
static int ok_close(struct ibv_context *c) { return 0; }

static int group_setup(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/test_client.XXXXXX";

	if (!mkdtemp(dir))
		return -1;
	snprintf(fd_.path, sizeof(fd_.path), "%s/j.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fd_.path);
	fd_.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd_.lfd < 0 || bind(fd_.lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd_.lfd, 4))
		return -1;
	setenv("JUSTITIA_SOCKET", fd_.path, 1);
	return pthread_create(&fd_.th, NULL, daemon_main, NULL);
}

static int group_teardown(void **state)
{
	shutdown(fd_.lfd, SHUT_RDWR);
	close(fd_.lfd);
	pthread_join(fd_.th, NULL);
	unlink(fd_.path);
	*strrchr(fd_.path, '/') = 0;
	rmdir(fd_.path);
	json_decref(fd_.last_register);
	return 0;
}

/* A QP created now: registration happens inside. */
static void create_qp(void)
{
	memset(&vctx, 0, sizeof(vctx));
	vctx.sz = sizeof(vctx);
	vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	vctx.context.device = &fake_dev;
	vctx.context.ops.post_send = ok_post_send;
	memset(&qp, 0, sizeof(qp));
	qp.context = &vctx.context;
	qp.qp_num = 21;
	qp.qp_type = IBV_QPT_RC;
	/* every test starts from a shim that may connect at once */
	pthread_mutex_lock(&cl.lock);
	cl.retry_at_ns = 0;
	cl.backoff_ns = 0;
	pthread_mutex_unlock(&cl.lock);
	q = shim_ops_track_qp(&qp, "ibv_create_qp", 8);
	assert_non_null(q);
}

static int teardown(void **state)
{
	shim_qp_destroy(&qp, ok_destroy);
	shim_ctx_close(&vctx.context, ok_close);
	pthread_mutex_lock(&cl.lock);
	disconnect(0);
	cl.need_fail_open = 0;
	pthread_mutex_unlock(&cl.lock);
	shm_seg_destroy(&gseg);
	shm_seg_destroy(&cseg);
	pthread_mutex_lock(&fd_.lock);
	fd_.spoil = NULL;
	fd_.reg_reply[0] = 0;
	fd_.refuse_update = 0;
	pthread_mutex_unlock(&fd_.lock);
	return 0;
}

/* ------------------------------------------------------------ tests */

static void good_daemon_manages_the_qp(void **state)
{
	create_qp();
	assert_non_null(shim_client_global());
	assert_int_equal(q->flow_id, 5);
	/* slots 1 and 2 of the daemon's segments, in the shim's mappings */
	assert_int_equal((const char *)atomic_load(&q->slot) - (const char *)shim_client_global(),
			 (char *)jst_shm_global_slot(gseg.base, 1) - (char *)gseg.base);
	assert_int_equal((char *)atomic_load(&q->shm_stats) - (char *)cl.client,
			 (char *)jst_shm_client_slot(cseg.base, 2) - (char *)cseg.base);
	assert_int_equal(atomic_load(&q->cls), JST_CLASS_LATENCY);
	pthread_mutex_lock(&fd_.lock);
	assert_string_equal(json_string_value(json_object_get(fd_.last_register, "device")),
			    "fake0");
	assert_int_equal(json_integer_value(json_object_get(fd_.last_register, "qpn")), 21);
	assert_string_equal(json_string_value(json_object_get(fd_.last_register, "qp_type")),
			    "RC");
	pthread_mutex_unlock(&fd_.lock);
}

/* A class the daemon refuses (its tenants policy, justitiad.json(5)) is not
 * taken: justitia_set_qp_class fails with EPERM and the QP keeps the class
 * the daemon gave it, so it is not left unpaced; an allowed one is taken. */
static void refused_class_is_not_taken(void **state)
{
	create_qp();
	assert_int_equal(atomic_load(&q->cls), JST_CLASS_LATENCY);
	pthread_mutex_lock(&fd_.lock);
	fd_.refuse_update = 1;
	pthread_mutex_unlock(&fd_.lock);
	assert_int_equal(shim_client_set_class(q, JST_CLASS_THROUGHPUT), EPERM);
	assert_int_equal(atomic_load(&q->cls), JST_CLASS_LATENCY);
	assert_non_null(shim_client_global()); /* still connected */
	pthread_mutex_lock(&fd_.lock);
	fd_.refuse_update = 0;
	pthread_mutex_unlock(&fd_.lock);
	assert_int_equal(shim_client_set_class(q, JST_CLASS_THROUGHPUT), 0);
	assert_int_equal(atomic_load(&q->cls), JST_CLASS_THROUGHPUT);
}

/* A reply that takes longer than a second but less than the protocol's
 * budget (the daemon's slowest answer waits PROTO_PEER_LOOKUP_MS for
 * another host) is waited for: the QP is managed, on the same connection. */
static void slow_answer_within_the_budget(void **state)
{
	int hellos;

	pthread_mutex_lock(&fd_.lock);
	fd_.reg_delay_ms = PROTO_PEER_LOOKUP_MS - 500;
	hellos = fd_.n_hello;
	pthread_mutex_unlock(&fd_.lock);
	create_qp();
	pthread_mutex_lock(&fd_.lock);
	fd_.reg_delay_ms = 0;
	assert_int_equal(fd_.n_hello, hellos + 1);
	pthread_mutex_unlock(&fd_.lock);
	assert_int_equal(q->flow_id, 5);
	assert_non_null(atomic_load(&q->slot));
}

static void spoil_magic(struct jst_shm_global *g, struct jst_shm_client *c) { g->magic ^= 1; }
static void spoil_version(struct jst_shm_global *g, struct jst_shm_client *c) { g->version_major++; }
static void spoil_header(struct jst_shm_global *g, struct jst_shm_client *c) { g->header_size--; }
static void spoil_slot_size(struct jst_shm_global *g, struct jst_shm_client *c) { g->slot_size++; }
static void spoil_total(struct jst_shm_global *g, struct jst_shm_client *c) { g->total_size++; }
static void spoil_n_slots(struct jst_shm_global *g, struct jst_shm_client *c) { g->n_slots = 1000; }
static void spoil_cmagic(struct jst_shm_global *g, struct jst_shm_client *c) { c->magic = 0; }
static void spoil_cversion(struct jst_shm_global *g, struct jst_shm_client *c) { c->version_major = 0; }
static void spoil_cheader(struct jst_shm_global *g, struct jst_shm_client *c) { c->header_size = 0; }
static void spoil_cslot(struct jst_shm_global *g, struct jst_shm_client *c) { c->slot_size = 8; }
static void spoil_ctotal(struct jst_shm_global *g, struct jst_shm_client *c) { c->total_size = 1; }
static void spoil_cn_slots(struct jst_shm_global *g, struct jst_shm_client *c) { c->n_slots = 99; }
static void spoil_instance(struct jst_shm_global *g, struct jst_shm_client *c) { c->instance++; }

/* Shared memory that is not exactly what this shim knows: run unmanaged. */
static void odd_shared_memory_is_not_used(void **state)
{
	void (*spoils[])(struct jst_shm_global *, struct jst_shm_client *) = {
		spoil_magic, spoil_version, spoil_header, spoil_slot_size, spoil_total,
		spoil_n_slots, spoil_cmagic, spoil_cversion, spoil_cheader, spoil_cslot,
		spoil_ctotal, spoil_cn_slots, spoil_instance,
	};

	for (size_t i = 0; i < sizeof(spoils) / sizeof(spoils[0]); i++) {
		int hellos;

		pthread_mutex_lock(&fd_.lock);
		fd_.spoil = spoils[i];
		hellos = fd_.n_hello;
		pthread_mutex_unlock(&fd_.lock);
		create_qp();
		pthread_mutex_lock(&fd_.lock);
		assert_int_equal(fd_.n_hello, hellos + 1); /* it did ask */
		pthread_mutex_unlock(&fd_.lock);
		assert_null(shim_client_global());
		assert_null(atomic_load(&q->slot));
		assert_int_equal(q->flow_id, 0);
		assert_int_equal(atomic_load(&q->direct), 1);
		teardown(state);
	}
}

/* A registration reply that does not fit the segments: the QP stays
 * unmanaged (and the connection stays). */
static void odd_registration_reply_is_not_used(void **state)
{
	static const char *const replies[] = {
		"{\"v\":1,\"ok\":true,\"flow\":0,\"slot\":1,\"app_slot\":2,\"class\":\"latency\"}",
		"{\"v\":1,\"ok\":true,\"flow\":5,\"slot\":4,\"app_slot\":2,\"class\":\"latency\"}",
		"{\"v\":1,\"ok\":true,\"flow\":5,\"slot\":-1,\"app_slot\":2,\"class\":\"latency\"}",
		"{\"v\":1,\"ok\":true,\"flow\":5,\"slot\":1,\"app_slot\":4,\"class\":\"latency\"}",
		"{\"v\":1,\"ok\":true,\"flow\":5,\"slot\":1,\"app_slot\":2,\"class\":\"fast\"}",
		"{\"v\":1,\"ok\":true,\"flow\":5,\"slot\":1,\"app_slot\":2}",
		"{\"v\":1,\"ok\":true,\"flow\":\"5\",\"slot\":1,\"app_slot\":2,\"class\":\"latency\"}",
		"{\"v\":1,\"ok\":false,\"error\":{\"code\":\"limit\",\"message\":\"full\"}}",
	};

	for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
		pthread_mutex_lock(&fd_.lock);
		snprintf(fd_.reg_reply, sizeof(fd_.reg_reply), "%s", replies[i]);
		pthread_mutex_unlock(&fd_.lock);
		create_qp();
		assert_non_null(shim_client_global()); /* connected all right */
		assert_null(atomic_load(&q->slot));
		assert_null(atomic_load(&q->shm_stats));
		assert_int_equal(q->flow_id, 0);
		assert_int_equal(atomic_load(&q->direct), 1);
		teardown(state);
	}
}

/* JUSTITIA_CLASS becomes the hint the daemon gets. */
static void class_hint_follows_the_environment(void **state)
{
	static const struct {
		const char *env, *hint;
	} cases[] = { { "lat", "latency" }, { "throughput", "throughput" }, { "bw", "bandwidth" },
		      { "fast", NULL }, { "", NULL } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *h;

		unsetenv("JUSTITIA_CLASS"); /* (init runs once per process: start clean) */
		shim_client_init();
		setenv("JUSTITIA_CLASS", cases[i].env, 1);
		shim_client_init();
		create_qp();
		pthread_mutex_lock(&fd_.lock);
		h = json_string_value(json_object_get(fd_.last_register, "class_hint"));
		if (cases[i].hint)
			assert_string_equal(h, cases[i].hint);
		else
			assert_null(h);
		pthread_mutex_unlock(&fd_.lock);
		teardown(state);
	}
	unsetenv("JUSTITIA_CLASS");
	shim_client_init();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(good_daemon_manages_the_qp, teardown),
		cmocka_unit_test_teardown(slow_answer_within_the_budget, teardown),
		cmocka_unit_test_teardown(refused_class_is_not_taken, teardown),
		cmocka_unit_test(odd_shared_memory_is_not_used),
		cmocka_unit_test(odd_registration_reply_is_not_used),
		cmocka_unit_test(class_hint_follows_the_environment),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

// SPDX-License-Identifier: MIT
/* Unit tests of shim/api.c, the public API of justitia.h: arguments are
 * checked, a QP the shim does not know is EINVAL, a class goes to the
 * client, and the status shows the daemon's slot as it is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../shim/api.c"

static struct shim_qp known;
static struct ibv_context ctx;
static struct ibv_qp qp = { .context = &ctx, .qp_num = 9 }, other = { .context = &ctx, .qp_num = 10 };
static int set_cls = -1;

struct shim_qp *shim_qp_find_sure(const struct ibv_context *c, uint32_t qpn)
{
	return c == &ctx && qpn == 9 ? &known : NULL;
}

int shim_client_set_class(struct shim_qp *q, int cls)
{
	assert_ptr_equal(q, &known);
	set_cls = cls;
	return 0;
}

/* (client.c copies it under its lock) */
void shim_client_qp_warning(struct shim_qp *q, char *buf, size_t len)
{
	snprintf(buf, len, "%s", q->warning);
}

static void set_class(void **state)
{
	assert_int_equal(justitia_set_qp_class(&qp, JUSTITIA_CLASS_THROUGHPUT), 0);
	assert_int_equal(set_cls, JUSTITIA_CLASS_THROUGHPUT);
	set_cls = -1;
	assert_int_equal(justitia_set_qp_class(&qp, JUSTITIA_CLASS_LATENCY - 1), EINVAL);
	assert_int_equal(justitia_set_qp_class(&qp, JUSTITIA_CLASS_BANDWIDTH + 1), EINVAL);
	assert_int_equal(justitia_set_qp_class(NULL, JUSTITIA_CLASS_LATENCY), EINVAL);
	assert_int_equal(justitia_set_qp_class(&other, JUSTITIA_CLASS_LATENCY), EINVAL);
	assert_int_equal(set_cls, -1);
}

static void status(void **state)
{
	struct jst_flow_ctl slot;
	struct justitia_qp_status st;

	memset(&st, 0xff, sizeof(st));
	atomic_store(&known.cls, JST_CLASS_LATENCY);
	snprintf(known.warning, sizeof(known.warning), "%s", "target not attainable");
	assert_int_equal(justitia_qp_status(&qp, &st), 0);
	assert_int_equal(st.managed, 0);
	assert_int_equal(st.cls, JUSTITIA_CLASS_LATENCY);
	assert_int_equal(st.split, 0);
	assert_int_equal(st.rate_bps, 0);
	assert_string_equal(st.warning, "target not attainable");

	memset(&slot, 0, sizeof(slot));
	atomic_store(&slot.state, JST_SLOT_ACTIVE); /* this QP's flow (shim/slot.h) */
	atomic_store(&known.flow_id, 7);
	atomic_store(&slot.flow_id, 7);
	atomic_store(&slot.flags, JST_F_SPLIT | JST_F_PACE);
	atomic_store(&slot.chunk_bytes, 65536);
	atomic_store(&slot.rate_bps, 8000000000ull);
	atomic_store(&known.slot, &slot);
	atomic_store(&known.cls, JST_CLASS_BANDWIDTH);
	known.warning[0] = 0;
	assert_int_equal(justitia_qp_status(&qp, &st), 0);
	assert_int_equal(st.managed, 1);
	assert_int_equal(st.cls, JUSTITIA_CLASS_BANDWIDTH);
	assert_int_equal(st.split, 1);
	assert_int_equal(st.chunk_bytes, 65536);
	assert_int_equal(st.rate_bps, 8000000000ull);
	assert_string_equal(st.warning, "");
	atomic_store(&slot.flags, JST_F_PACE);
	assert_int_equal(justitia_qp_status(&qp, &st), 0);
	assert_int_equal(st.split, 0);
	atomic_store(&known.slot, NULL);

	assert_int_equal(justitia_qp_status(&other, &st), EINVAL);
	assert_int_equal(justitia_qp_status(NULL, &st), EINVAL);
	assert_int_equal(justitia_qp_status(&qp, NULL), EINVAL);
}

/* The public enum and the shared-memory ABI's agree. */
static void class_numbers_agree(void **state)
{
	assert_int_equal(JUSTITIA_CLASS_LATENCY, JST_CLASS_LATENCY);
	assert_int_equal(JUSTITIA_CLASS_THROUGHPUT, JST_CLASS_THROUGHPUT);
	assert_int_equal(JUSTITIA_CLASS_BANDWIDTH, JST_CLASS_BANDWIDTH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(set_class),
		cmocka_unit_test(status),
		cmocka_unit_test(class_numbers_agree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

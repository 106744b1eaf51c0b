// SPDX-License-Identifier: MIT
/* Unit tests of shim/stats.c: accounting rules and the JSON report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>

#include "../../shim/stats.c"

static void op_mapping(void **state)
{
	assert_int_equal(stats_op_from_wr(IBV_WR_RDMA_WRITE), STATS_OP_RDMA_WRITE);
	assert_int_equal(stats_op_from_wr(IBV_WR_RDMA_READ), STATS_OP_RDMA_READ);
	assert_int_equal(stats_op_from_wr(IBV_WR_SEND_WITH_IMM), STATS_OP_SEND_WITH_IMM);
	assert_int_equal(stats_op_from_wr(IBV_WR_ATOMIC_WRITE), STATS_OP_ATOMIC_WRITE);
	assert_int_equal(stats_op_from_wr((enum ibv_wr_opcode)99), STATS_OP_OTHER);
	for (int op = 0; op < STATS_OP_MAX; op++)
		assert_non_null(op_names[op]);
	assert_string_equal(stats_op_name((enum stats_op)-1), "INVALID");
}

static void send_list_counts_until_bad_wr(void **state)
{
	struct ibv_sge sg[3] = { { 0, 100, 0 }, { 0, 28, 0 }, { 0, 4096, 0 } };
	struct ibv_send_wr w[3];
	struct stats_qp st;
	uint64_t bytes;

	memset(&st, 0, sizeof(st));
	memset(w, 0, sizeof(w));
	w[0] = (struct ibv_send_wr){ .next = &w[1], .sg_list = sg, .num_sge = 2,
				     .opcode = IBV_WR_RDMA_WRITE };
	w[1] = (struct ibv_send_wr){ .next = &w[2], .sg_list = &sg[2], .num_sge = 1,
				     .opcode = IBV_WR_SEND };
	w[2] = (struct ibv_send_wr){ .sg_list = &sg[2], .num_sge = 1, .opcode = IBV_WR_RDMA_READ };

	assert_int_equal(stats_account_send(&st, w, NULL, 0, &bytes), 3);
	assert_int_equal(bytes, 128 + 4096 + 4096);
	assert_int_equal(st.op[STATS_OP_RDMA_WRITE].wrs, 1);
	assert_int_equal(st.op[STATS_OP_RDMA_WRITE].bytes, 128);
	assert_int_equal(st.op[STATS_OP_SEND].bytes, 4096);
	assert_int_equal(st.op[STATS_OP_RDMA_READ].wrs, 1);
	assert_int_equal(st.classic_wrs, 3);
	assert_int_equal(st.post_calls, 1);

	/* ENOMEM at the second WR: only the first was posted */
	assert_int_equal(stats_account_send(&st, w, &w[1], ENOMEM, &bytes), 1);
	assert_int_equal(bytes, 128);
	assert_int_equal(st.op[STATS_OP_RDMA_WRITE].wrs, 2);
	assert_int_equal(st.op[STATS_OP_SEND].wrs, 1);
	assert_int_equal(st.classic_wrs, 4);
	assert_int_equal(st.failed_posts, 1);

	/* failure without bad_wr: nothing counted as posted */
	assert_int_equal(stats_account_send(&st, w, NULL, EINVAL, &bytes), 0);
	assert_int_equal(st.classic_wrs, 4);
	assert_int_equal(st.failed_posts, 2);
	assert_int_equal(st.post_calls, 3);
}

static void recv_and_wc(void **state)
{
	struct ibv_sge sg = { 0, 64, 0 };
	struct ibv_recv_wr r[2] = { { .next = &r[1], .sg_list = &sg, .num_sge = 1 },
				    { .sg_list = &sg, .num_sge = 1 } };
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV };
	struct stats_qp st;

	memset(&st, 0, sizeof(st));
	stats_account_recv(&st, r, NULL);
	stats_account_recv(&st, r, &r[1]);
	assert_int_equal(st.recv.wrs, 3);
	assert_int_equal(st.recv.bytes, 192);
	stats_account_wc(&st, &wc);
	wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
	stats_account_wc(&st, &wc);
	wc.opcode = IBV_WC_RDMA_WRITE;
	stats_account_wc(&st, &wc);
	wc.status = IBV_WC_WR_FLUSH_ERR;
	stats_account_wc(&st, &wc);
	assert_int_equal(st.cqe_recv, 2);
	assert_int_equal(st.cqe_send, 1);
	assert_int_equal(st.cqe_error, 1);
}

static void batch_commit_and_abort(void **state)
{
	struct stats_batch b;
	struct stats_qp st;
	uint64_t bytes;

	memset(&st, 0, sizeof(st));
	stats_batch_reset(&b);
	stats_batch_bytes(&b, 5); /* SGE before any WR: ignored */
	stats_batch_wr(&b, STATS_OP_RDMA_WRITE);
	stats_batch_bytes(&b, 1000);
	stats_batch_wr(&b, STATS_OP_RDMA_WRITE);
	stats_batch_bytes(&b, 24);
	stats_batch_wr(&b, STATS_OP_SEND);
	stats_batch_bytes(&b, 7);
	assert_int_equal(stats_batch_commit(&st, &b, 0, &bytes), 3);
	assert_int_equal(bytes, 1031);
	assert_int_equal(st.op[STATS_OP_RDMA_WRITE].wrs, 2);
	assert_int_equal(st.op[STATS_OP_RDMA_WRITE].bytes, 1024);
	assert_int_equal(st.op[STATS_OP_SEND].bytes, 7);
	assert_int_equal(st.wr_api_wrs, 3);
	/* the batch is empty again after a commit */
	assert_int_equal(b.cur_op, -1);
	assert_int_equal(b.wrs[STATS_OP_RDMA_WRITE], 0);

	/* a failed wr_complete posts nothing */
	stats_batch_wr(&b, STATS_OP_RDMA_READ);
	stats_batch_bytes(&b, 4096);
	assert_int_equal(stats_batch_commit(&st, &b, EINVAL, &bytes), 0);
	assert_int_equal(st.op[STATS_OP_RDMA_READ].wrs, 0);
	assert_int_equal(st.failed_posts, 1);
	assert_int_equal(st.post_calls, 2);
}

static void json_report_round_trips(void **state)
{
	struct stats_snapshot s[2], overflow;
	json_error_t err;
	json_t *root, *qp;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	memset(s, 0, sizeof(s));
	memset(&overflow, 0, sizeof(overflow));
	strcpy(s[0].device, "rxe\"1");
	s[0].qpn = 17;
	s[0].type = IBV_QPT_RC;
	s[0].created_via = "ibv_create_qp";
	s[0].op[STATS_OP_RDMA_WRITE].wrs = 2000;
	s[0].op[STATS_OP_RDMA_WRITE].bytes = 131072000;
	s[0].classic_wrs = 2000;
	strcpy(s[1].device, "rxe0");
	s[1].qpn = 18;
	s[1].destroyed = 1;
	s[1].recv_wrs = 5;
	s[1].recv_bytes = 50;
	overflow.op[STATS_OP_SEND].wrs = 3;
	overflow.op[STATS_OP_SEND].bytes = 30;

	assert_non_null(f);
	assert_int_equal(stats_write_json(f, 42, "ib_write_bw", s, 2, &overflow, 1,
					  &(struct stats_pacer){ .wakeups = 7, .kick_wakes = 5,
								 .poll_drains = 9 }),
			 0);
	fclose(f);
	root = json_loads(text, 0, &err);
	if (!root)
		fail_msg("invalid JSON at %d:%d: %s\n%s", err.line, err.column, err.text, text);
	assert_int_equal(json_integer_value(json_object_get(root, "pid")), 42);
	qp = json_array_get(json_object_get(root, "qps"), 0);
	assert_string_equal(json_string_value(json_object_get(qp, "device")), "rxe\"1");
	assert_int_equal(json_integer_value(json_object_get(qp, "qpn")), 17);
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(json_object_get(json_object_get(qp, "send"), "opcodes"),
						 "RDMA_WRITE"), "bytes")), 131072000);
	assert_true(json_is_true(json_object_get(json_array_get(json_object_get(root, "qps"), 1),
						 "destroyed")));
	/* totals include the overflow of retired QPs */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(
				 root, "totals"), "send"), "wrs")), 2003);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(
				 root, "totals"), "recv"), "bytes")), 50);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(root, "pacer"),
							    "wakeups")), 7);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(root, "pacer"),
							    "poll_drains")), 9);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(root, "pacer"),
							    "kick_wakes")), 5);
	json_decref(root);
	free(text);
}

static void path_expansion(void **state)
{
	char out[32];

	assert_int_equal(stats_expand_path(out, sizeof(out), "/tmp/s-%p.json", 123), 0);
	assert_string_equal(out, "/tmp/s-123.json");
	assert_int_equal(stats_expand_path(out, sizeof(out), "/a%%p%", 1), 0);
	assert_string_equal(out, "/a%p%");
	assert_int_equal(stats_expand_path(out, 8, "/tmp/abcdefgh", 1), -ENAMETOOLONG);
	assert_int_equal(stats_expand_path(out, 0, "", 1), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(op_mapping),
		cmocka_unit_test(send_list_counts_until_bad_wr),
		cmocka_unit_test(recv_and_wc),
		cmocka_unit_test(batch_commit_and_abort),
		cmocka_unit_test(json_report_round_trips),
		cmocka_unit_test(path_expansion),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/* Unit tests of daemon/rdmanl.c, RDMA netlink: replies built here (devices,
 * QPs, nested attributes), and the live socket where the host allows it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../daemon/rdmanl.c"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define UNUSED __attribute__((unused))

/* ---------------------------------------------------------------- rdmanl */

struct nlbuf {
	uint32_t b[2048]; /* aligned like a socket buffer */
	size_t len, msg, nest[4];
	int depth;
};

static unsigned char *at(struct nlbuf *n, size_t off)
{
	return (unsigned char *)n->b + off;
}

static void msg_begin(struct nlbuf *n, uint16_t type, uint32_t seq)
{
	struct nlmsghdr h = { .nlmsg_type = type, .nlmsg_flags = NLM_F_MULTI, .nlmsg_seq = seq };

	n->msg = n->len;
	memcpy(at(n, n->len), &h, sizeof(h));
	n->len += NLMSG_HDRLEN;
}

static void msg_end(struct nlbuf *n)
{
	uint32_t l = (uint32_t)(n->len - n->msg);

	memcpy(at(n, n->msg), &l, sizeof(l));
	n->len = NLMSG_ALIGN(n->len);
}

static void attr(struct nlbuf *n, uint16_t type, const void *data, size_t len)
{
	struct nlattr a = { .nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type };

	memcpy(at(n, n->len), &a, sizeof(a));
	memcpy(at(n, n->len + NLA_HDRLEN), data, len);
	memset(at(n, n->len + NLA_HDRLEN + len), 0, NLA_ALIGN(len) - len);
	n->len += NLA_HDRLEN + NLA_ALIGN(len);
}

static void attr_u32(struct nlbuf *n, uint16_t type, uint32_t v)
{
	attr(n, type, &v, sizeof(v));
}

static void attr_str(struct nlbuf *n, uint16_t type, const char *s)
{
	attr(n, type, s, strlen(s) + 1);
}

static void nest_begin(struct nlbuf *n, uint16_t type)
{
	struct nlattr a = { .nla_type = type | NLA_F_NESTED };

	n->nest[n->depth++] = n->len;
	memcpy(at(n, n->len), &a, sizeof(a));
	n->len += NLA_HDRLEN;
}

static void nest_end(struct nlbuf *n)
{
	size_t start = n->nest[--n->depth];
	uint16_t l = (uint16_t)(n->len - start);

	memcpy(at(n, start), &l, sizeof(l));
}

static void done(struct nlbuf *n, uint32_t seq)
{
	int zero = 0;

	msg_begin(n, NLMSG_DONE, seq);
	memcpy(at(n, n->len), &zero, sizeof(zero));
	n->len += sizeof(zero);
	msg_end(n);
}

static void qp_entry_attrs(struct nlbuf *n, uint32_t qpn, uint8_t type, uint32_t pid,
			   const char *kern)
{
	nest_begin(n, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	attr_u32(n, RDMA_NLDEV_ATTR_RES_LQPN, qpn);
	attr(n, RDMA_NLDEV_ATTR_RES_TYPE, &type, 1);
	if (kern)
		attr_str(n, RDMA_NLDEV_ATTR_RES_KERN_NAME, kern);
	else
		attr_u32(n, RDMA_NLDEV_ATTR_RES_PID, pid);
	nest_end(n);
}

static struct rdmanl_qp got[8];
static size_t n_got;

static void collect(void *arg, const struct rdmanl_qp *q)
{
	(void)arg;
	if (n_got < 8)
		got[n_got] = *q;
	n_got++;
}

struct all_ctx {
	struct rdmanl_qp *q;
	size_t max, *n;
};

static void collect_all(void *arg, const struct rdmanl_qp *q)
{
	struct all_ctx *c = arg;

	if (*c->n < c->max)
		c->q[*c->n] = *q;
	(*c->n)++;
}

static void netlink_devices(void **state UNUSED)
{
	struct rdmanl_dev devs[2];
	static struct nlbuf n;
	size_t nd = 0;

	memset(&n, 0, sizeof(n));
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 7);
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	attr_str(&n, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0");
	msg_end(&n);
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 6); /* not ours */
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 9);
	attr_str(&n, RDMA_NLDEV_ATTR_DEV_NAME, "old");
	msg_end(&n);
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 7);
	attr_str(&n, RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0");
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 4);
	msg_end(&n);
	assert_int_equal(rdmanl_parse_devs(n.b, n.len, 7, devs, 2, &nd), 0);
	assert_int_equal(nd, 2);
	assert_int_equal(devs[0].index, 3);
	assert_string_equal(devs[0].name, "rxe0");
	assert_int_equal(devs[1].index, 4);
	assert_string_equal(devs[1].name, "mlx5_0");
	/* the end of the dump, in the next buffer; more devices than room */
	memset(&n, 0, sizeof(n));
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 7);
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 5);
	attr_str(&n, RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_1");
	msg_end(&n);
	done(&n, 7);
	assert_int_equal(rdmanl_parse_devs(n.b, n.len, 7, devs, 2, &nd), 1);
	assert_int_equal(nd, 2);
	/* a device without a name is malformed */
	memset(&n, 0, sizeof(n));
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 7);
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 5);
	msg_end(&n);
	nd = 0;
	assert_int_equal(rdmanl_parse_devs(n.b, n.len, 7, devs, 2, &nd), -EPROTO);
}

static void netlink_qps(void **state UNUSED)
{
	static struct nlbuf n;
	struct nlmsgerr err = { .error = -EOPNOTSUPP };
	size_t full;

	memset(&n, 0, sizeof(n));
	n_got = 0;
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET), 9);
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	attr_str(&n, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0");
	nest_begin(&n, RDMA_NLDEV_ATTR_RES_QP);
	qp_entry_attrs(&n, 1, 1, 0, "ib_core");
	qp_entry_attrs(&n, 17, 2, 4242, NULL);
	qp_entry_attrs(&n, 0x123456, 4, 77, NULL);
	nest_end(&n);
	msg_end(&n);
	full = n.len;
	done(&n, 9);
	assert_int_equal(rdmanl_parse_qps(n.b, n.len, 9, collect, NULL), 1);
	assert_int_equal(n_got, 3);
	assert_true(got[0].kernel);
	assert_int_equal(got[0].qpn, 1);
	assert_false(got[1].kernel);
	assert_int_equal(got[1].qpn, 17);
	assert_int_equal(got[1].qp_type, 2);
	assert_int_equal(got[1].pid, 4242);
	assert_string_equal(got[1].dev, "rxe0");
	assert_int_equal(got[1].dev_index, 3);
	assert_int_equal(got[2].qpn, 0x123456);
	assert_int_equal(got[2].qp_type, 4);

	/* without the DONE message: more to come */
	n_got = 0;
	assert_int_equal(rdmanl_parse_qps(n.b, full, 9, collect, NULL), 0);
	assert_int_equal(n_got, 3);
	/* cut anywhere inside: malformed, never read past the end */
	for (size_t cut = NLMSG_HDRLEN + 1; cut < full; cut += 3)
		assert_int_equal(rdmanl_parse_qps(n.b, cut, 9, collect, NULL), -EPROTO);

	/* the kernel's error */
	memset(&n, 0, sizeof(n));
	msg_begin(&n, NLMSG_ERROR, 9);
	memcpy(at(&n, n.len), &err, sizeof(err));
	n.len += sizeof(err);
	msg_end(&n);
	assert_int_equal(rdmanl_parse_qps(n.b, n.len, 9, collect, NULL), -EOPNOTSUPP);

	/* an entry without a QP number, a name without its NUL */
	memset(&n, 0, sizeof(n));
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET), 9);
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	attr_str(&n, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0");
	nest_begin(&n, RDMA_NLDEV_ATTR_RES_QP);
	nest_begin(&n, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	attr_u32(&n, RDMA_NLDEV_ATTR_RES_PID, 1);
	nest_end(&n);
	nest_end(&n);
	msg_end(&n);
	assert_int_equal(rdmanl_parse_qps(n.b, n.len, 9, collect, NULL), -EPROTO);
	memset(&n, 0, sizeof(n));
	msg_begin(&n, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET), 9);
	attr_u32(&n, RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	attr(&n, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0", 4);
	msg_end(&n);
	assert_int_equal(rdmanl_parse_qps(n.b, n.len, 9, collect, NULL), -EPROTO);
}

/* Is this process in the initial PID namespace?  The kernel lists its own
 * QPs (ib_core's GSI QP) only there. */
static bool in_init_pid_ns(void)
{
	char l[64];
	ssize_t n = readlink("/proc/self/ns/pid", l, sizeof(l) - 1);

	if (n <= 0)
		return false;
	l[n] = 0;
	return !strcmp(l, "pid:[4026531836]"); /* PROC_PID_INIT_INO */
}

/* Without ib_core the kernel has no RDMA netlink family: the dump fails
 * with the socket's error and reports nothing.  With it (the test VM, a
 * machine with RDMA) the dump succeeds, every QP it reports belongs to a
 * device in /sys/class/infiniband, and in the initial PID namespace each
 * InfiniBand/RoCE device (node type CA) shows its kernel GSI QP, QP 1. */
static void netlink_live(void **state UNUSED)
{
	static struct rdmanl_qp all[256];
	size_t n_all = 0;
	int rc;

	rc = rdmanl_dump_qps(collect_all, &(struct all_ctx){ all, 256, &n_all });
	if (access("/sys/module/ib_core", F_OK)) {
		assert_int_equal(rc, -EPROTONOSUPPORT);
		assert_int_equal(n_all, 0);
		return;
	}
	assert_int_equal(rc, 0);
	for (size_t i = 0; i < n_all && i < 256; i++) {
		char p[128];

		snprintf(p, sizeof(p), "/sys/class/infiniband/%s", all[i].dev);
		assert_int_equal(access(p, F_OK), 0);
	}
	if (in_init_pid_ns()) {
		DIR *d = opendir("/sys/class/infiniband");
		struct dirent *de;
		int n_ca = 0;

		assert_true(n_all < 256);
		while (d && (de = readdir(d))) {
			char p[300], t[16] = "";
			bool gsi = false;
			FILE *f;

			if (de->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "/sys/class/infiniband/%s/node_type", de->d_name);
			f = fopen(p, "r");
			if (!f || !fgets(t, sizeof(t), f) || strncmp(t, "1:", 2)) {
				if (f)
					fclose(f);
				continue; /* not a CA (iWARP has no GSI QP) */
			}
			fclose(f);
			for (size_t i = 0; i < n_all; i++)
				gsi |= all[i].kernel && all[i].qpn == 1 &&
				       !strcmp(all[i].dev, de->d_name);
			assert_true(gsi);
			n_ca++;
		}
		if (d)
			closedir(d);
		print_message("netlink_live: %zu QPs, %d CA devices\n", n_all, n_ca);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(netlink_devices),
		cmocka_unit_test(netlink_qps),
		cmocka_unit_test(netlink_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

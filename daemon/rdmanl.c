// SPDX-License-Identifier: MIT
/* RDMA netlink: the devices and their QPs (rdmanl.h).  Everything the
 * socket returns is length-checked before it is read.
 * May call: libc only. */
#include "rdmanl.h"

#include <errno.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define BUF_SIZE  (64 * 1024)
#define TIMEOUT_S 2
#define SEQ_DEVS  1

typedef int (*msg_fn)(const struct nlmsghdr *h, void *arg);

/* ------------------------------------------------------------ parsing */

static const void *payload(const struct nlattr *a)
{
	return (const char *)a + NLA_HDRLEN;
}

static size_t payload_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

/* Index the attributes in [p, p + len) by type (the last one of a type
 * wins); -EPROTO if one overruns the buffer. */
static int parse_attrs(const void *p, size_t len, const struct nlattr **tb, size_t ntb)
{
	memset(tb, 0, ntb * sizeof(*tb));
	while (len >= NLA_HDRLEN) {
		const struct nlattr *a = p;
		size_t alen = a->nla_len, step = NLA_ALIGN(alen);
		unsigned type = a->nla_type & NLA_TYPE_MASK;

		if (alen < NLA_HDRLEN || alen > len)
			return -EPROTO;
		if (type < ntb)
			tb[type] = a;
		if (step >= len)
			return 0;
		p = (const char *)p + step;
		len -= step;
	}
	return len ? -EPROTO : 0;
}

static int get_u32(const struct nlattr *a, uint32_t *v)
{
	if (!a || payload_len(a) < sizeof(*v))
		return -EPROTO;
	memcpy(v, payload(a), sizeof(*v));
	return 0;
}

static int get_str(const struct nlattr *a, char *dst, size_t size)
{
	size_t n;

	if (!a)
		return -EPROTO;
	n = strnlen(payload(a), payload_len(a));
	if (n == payload_len(a) || n >= size)
		return -EPROTO; /* not terminated, or longer than a name may be */
	memcpy(dst, payload(a), n + 1);
	return 0;
}

/* Walk the messages of one buffer.  1: end of the dump, 0: more to come. */
static int walk(const void *buf, size_t len, uint32_t seq, msg_fn fn, void *arg)
{
	const char *p = buf;

	while (len >= sizeof(struct nlmsghdr)) {
		const struct nlmsghdr *h = (const void *)p;
		size_t mlen = h->nlmsg_len, step = NLMSG_ALIGN(mlen);
		int rc = 0;

		if (mlen < sizeof(*h) || mlen > len)
			return -EPROTO;
		if (h->nlmsg_seq != seq) {
			/* not ours (a late reply to an earlier request) */
		} else if (h->nlmsg_type == NLMSG_DONE) {
			return 1;
		} else if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			if (mlen < NLMSG_LENGTH(sizeof(*e)))
				return -EPROTO;
			return e->error < 0 ? e->error : 1;
		} else {
			rc = fn(h, arg);
		}
		if (rc)
			return rc;
		if (step >= len)
			return 0;
		p += step;
		len -= step;
	}
	return len ? -EPROTO : 0;
}

struct devs_ctx {
	struct rdmanl_dev *devs;
	size_t max, n;
};

static int dev_msg(const struct nlmsghdr *h, void *arg)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	struct devs_ctx *c = arg;
	struct rdmanl_dev dv;

	if (parse_attrs(NLMSG_DATA(h), h->nlmsg_len - NLMSG_HDRLEN, tb, RDMA_NLDEV_ATTR_MAX) ||
	    get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX], &dv.index) ||
	    get_str(tb[RDMA_NLDEV_ATTR_DEV_NAME], dv.name, sizeof(dv.name)))
		return -EPROTO;
	if (c->n < c->max)
		c->devs[c->n++] = dv;
	return 0;
}

int rdmanl_parse_devs(const void *buf, size_t len, uint32_t seq, struct rdmanl_dev *devs,
		      size_t max, size_t *n)
{
	struct devs_ctx c = { .devs = devs, .max = max, .n = *n };
	int rc = walk(buf, len, seq, dev_msg, &c);

	*n = c.n;
	return rc;
}

struct qps_ctx {
	rdmanl_qp_fn fn;
	void *arg;
};

static int qp_entry(const struct nlattr *ent, struct rdmanl_qp *q)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];

	if (parse_attrs(payload(ent), payload_len(ent), tb, RDMA_NLDEV_ATTR_MAX) ||
	    get_u32(tb[RDMA_NLDEV_ATTR_RES_LQPN], &q->qpn))
		return -EPROTO;
	q->qp_type = 0;
	if (tb[RDMA_NLDEV_ATTR_RES_TYPE]) {
		if (!payload_len(tb[RDMA_NLDEV_ATTR_RES_TYPE]))
			return -EPROTO;
		q->qp_type = *(const uint8_t *)payload(tb[RDMA_NLDEV_ATTR_RES_TYPE]);
	}
	q->pid = 0;
	if (tb[RDMA_NLDEV_ATTR_RES_PID] && get_u32(tb[RDMA_NLDEV_ATTR_RES_PID], &q->pid))
		return -EPROTO;
	q->kernel = tb[RDMA_NLDEV_ATTR_RES_KERN_NAME] != NULL;
	return 0;
}

static int qp_msg(const struct nlmsghdr *h, void *arg)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX], *table;
	struct qps_ctx *c = arg;
	struct rdmanl_qp q;
	const char *p;
	size_t len;

	if (parse_attrs(NLMSG_DATA(h), h->nlmsg_len - NLMSG_HDRLEN, tb, RDMA_NLDEV_ATTR_MAX) ||
	    get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX], &q.dev_index) ||
	    get_str(tb[RDMA_NLDEV_ATTR_DEV_NAME], q.dev, sizeof(q.dev)))
		return -EPROTO;
	table = tb[RDMA_NLDEV_ATTR_RES_QP];
	if (!table)
		return 0; /* a device without QPs */
	p = payload(table);
	len = payload_len(table);
	/* the table: a list of RES_QP_ENTRY nests */
	while (len >= NLA_HDRLEN) {
		const struct nlattr *ent = (const void *)p;
		size_t step = NLA_ALIGN(ent->nla_len);

		if (ent->nla_len < NLA_HDRLEN || ent->nla_len > len)
			return -EPROTO;
		if ((ent->nla_type & NLA_TYPE_MASK) == RDMA_NLDEV_ATTR_RES_QP_ENTRY) {
			if (qp_entry(ent, &q))
				return -EPROTO;
			c->fn(c->arg, &q);
		}
		if (step >= len)
			return 0;
		p += step;
		len -= step;
	}
	return len ? -EPROTO : 0;
}

int rdmanl_parse_qps(const void *buf, size_t len, uint32_t seq, rdmanl_qp_fn fn, void *arg)
{
	struct qps_ctx c = { .fn = fn, .arg = arg };

	return walk(buf, len, seq, qp_msg, &c);
}

/* ------------------------------------------------------------ the socket */

/* Send one dump request (with a device index unless it is -1). */
static int request(int fd, uint32_t cmd, uint32_t seq, int64_t dev_index)
{
	struct {
		struct nlmsghdr h;
		struct nlattr a;
		uint32_t index;
	} req = {
		.h = { .nlmsg_len = sizeof(req),
		       .nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd),
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		       .nlmsg_seq = seq },
		.a = { .nla_len = NLA_HDRLEN + sizeof(uint32_t), .nla_type = RDMA_NLDEV_ATTR_DEV_INDEX },
		.index = (uint32_t)dev_index,
	};
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	if (dev_index < 0)
		req.h.nlmsg_len = NLMSG_LENGTH(0);
	if (sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	return 0;
}

/* Receive until the dump with @seq ends; parse() each buffer. */
static int receive(int fd, void *buf, uint32_t seq,
		   int (*parse)(const void *buf, size_t len, uint32_t seq, void *arg), void *arg)
{
	for (;;) {
		struct sockaddr_nl from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, buf, BUF_SIZE, MSG_TRUNC, (struct sockaddr *)&from, &fl);
		int rc;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		}
		if ((size_t)n > BUF_SIZE)
			return -EMSGSIZE;
		if (fl != sizeof(from) || from.nl_pid != 0)
			continue; /* only the kernel may answer */
		rc = parse(buf, (size_t)n, seq, arg);
		if (rc)
			return rc < 0 ? rc : 0;
	}
}

static int parse_devs_cb(const void *buf, size_t len, uint32_t seq, void *arg)
{
	struct devs_ctx *c = arg;

	return rdmanl_parse_devs(buf, len, seq, c->devs, c->max, &c->n);
}

static int parse_qps_cb(const void *buf, size_t len, uint32_t seq, void *arg)
{
	struct qps_ctx *c = arg;

	return rdmanl_parse_qps(buf, len, seq, c->fn, c->arg);
}

int rdmanl_dump_qps(rdmanl_qp_fn fn, void *arg)
{
	struct timeval tv = { .tv_sec = TIMEOUT_S };
	struct devs_ctx dc = { .max = RDMANL_MAX_DEVS };
	struct qps_ctx qc = { .fn = fn, .arg = arg };
	void *buf = NULL;
	int fd, rc;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		rc = -errno;
		goto out_close;
	}
	buf = malloc(BUF_SIZE);
	dc.devs = calloc(RDMANL_MAX_DEVS, sizeof(*dc.devs));
	if (!buf || !dc.devs) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = request(fd, RDMA_NLDEV_CMD_GET, SEQ_DEVS, -1);
	if (!rc)
		rc = receive(fd, buf, SEQ_DEVS, parse_devs_cb, &dc);
	for (size_t i = 0; !rc && i < dc.n; i++) {
		uint32_t seq = SEQ_DEVS + 1 + (uint32_t)i;

		rc = request(fd, RDMA_NLDEV_CMD_RES_QP_GET, seq, dc.devs[i].index);
		if (!rc)
			rc = receive(fd, buf, seq, parse_qps_cb, &qc);
	}
out_free:
	free(dc.devs);
	free(buf);
out_close:
	close(fd);
	return rc;
}

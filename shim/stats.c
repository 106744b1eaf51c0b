// SPDX-License-Identifier: MIT
/* Per-QP work-request accounting and the JUSTITIA_STATS JSON report.
 * Per-QP state layer; may call: log (the report is written at exit). */
#include "stats.h"

#include <errno.h>
#include <string.h>

#define RELAXED memory_order_relaxed

static const char *const op_names[STATS_OP_MAX] = {
	[STATS_OP_RDMA_WRITE] = "RDMA_WRITE",
	[STATS_OP_RDMA_WRITE_WITH_IMM] = "RDMA_WRITE_WITH_IMM",
	[STATS_OP_SEND] = "SEND",
	[STATS_OP_SEND_WITH_IMM] = "SEND_WITH_IMM",
	[STATS_OP_RDMA_READ] = "RDMA_READ",
	[STATS_OP_ATOMIC_CMP_AND_SWP] = "ATOMIC_CMP_AND_SWP",
	[STATS_OP_ATOMIC_FETCH_AND_ADD] = "ATOMIC_FETCH_AND_ADD",
	[STATS_OP_LOCAL_INV] = "LOCAL_INV",
	[STATS_OP_BIND_MW] = "BIND_MW",
	[STATS_OP_SEND_WITH_INV] = "SEND_WITH_INV",
	[STATS_OP_TSO] = "TSO",
	[STATS_OP_ATOMIC_WRITE] = "ATOMIC_WRITE",
	[STATS_OP_OTHER] = "OTHER",
};

enum stats_op stats_op_from_wr(enum ibv_wr_opcode opcode)
{
	switch (opcode) {
	case IBV_WR_RDMA_WRITE: return STATS_OP_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM: return STATS_OP_RDMA_WRITE_WITH_IMM;
	case IBV_WR_SEND: return STATS_OP_SEND;
	case IBV_WR_SEND_WITH_IMM: return STATS_OP_SEND_WITH_IMM;
	case IBV_WR_RDMA_READ: return STATS_OP_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return STATS_OP_ATOMIC_CMP_AND_SWP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return STATS_OP_ATOMIC_FETCH_AND_ADD;
	case IBV_WR_LOCAL_INV: return STATS_OP_LOCAL_INV;
	case IBV_WR_BIND_MW: return STATS_OP_BIND_MW;
	case IBV_WR_SEND_WITH_INV: return STATS_OP_SEND_WITH_INV;
	case IBV_WR_TSO: return STATS_OP_TSO;
	case IBV_WR_ATOMIC_WRITE: return STATS_OP_ATOMIC_WRITE;
	default: return STATS_OP_OTHER;
	}
}

const char *stats_op_name(enum stats_op op)
{
	return (unsigned)op < STATS_OP_MAX ? op_names[op] : "INVALID";
}

static uint64_t sge_bytes(const struct ibv_sge *sg, int n)
{
	uint64_t sum = 0;

	for (int i = 0; i < n; i++)
		sum += sg[i].length;
	return sum;
}

/* Count the WRs of @wr before @bad by opcode; their number, bytes in *@bytes. */
static uint64_t count_wrs(struct stats_qp *st, const struct ibv_send_wr *wr,
			  const struct ibv_send_wr *bad, uint64_t *bytes)
{
	uint64_t n = 0, total = 0;

	for (; wr && wr != bad; wr = wr->next) {
		enum stats_op op = stats_op_from_wr(wr->opcode);
		uint64_t b = sge_bytes(wr->sg_list, wr->num_sge);

		atomic_fetch_add_explicit(&st->op[op].wrs, 1, RELAXED);
		atomic_fetch_add_explicit(&st->op[op].bytes, b, RELAXED);
		total += b;
		n++;
	}
	*bytes = total;
	return n;
}

void stats_account_call(struct stats_qp *st, int rc)
{
	atomic_fetch_add_explicit(&st->post_calls, 1, RELAXED);
	if (rc)
		atomic_fetch_add_explicit(&st->failed_posts, 1, RELAXED);
}

uint64_t stats_account_classic(struct stats_qp *st, const struct ibv_send_wr *wr,
			       const struct ibv_send_wr *bad, int rc, uint64_t *bytes)
{
	uint64_t n;

	*bytes = 0;
	/* On failure without a usable bad_wr nothing is known to be posted. */
	if (rc && !bad)
		return 0;
	n = count_wrs(st, wr, bad, bytes);
	atomic_fetch_add_explicit(&st->classic_wrs, n, RELAXED);
	return n;
}

uint64_t stats_account_send(struct stats_qp *st, const struct ibv_send_wr *wr,
			    const struct ibv_send_wr *bad, int rc, uint64_t *bytes)
{
	stats_account_call(st, rc);
	return stats_account_classic(st, wr, bad, rc, bytes);
}

uint64_t stats_account_wr_api(struct stats_qp *st, const struct ibv_send_wr *wr,
			      const struct ibv_send_wr *bad, uint64_t *bytes)
{
	uint64_t n = count_wrs(st, wr, bad, bytes);

	atomic_fetch_add_explicit(&st->wr_api_wrs, n, RELAXED);
	return n;
}

void stats_account_recv(struct stats_qp *st, const struct ibv_recv_wr *wr,
			const struct ibv_recv_wr *bad)
{
	uint64_t n = 0, bytes = 0;

	for (; wr && wr != bad; wr = wr->next) {
		n++;
		bytes += sge_bytes(wr->sg_list, wr->num_sge);
	}
	atomic_fetch_add_explicit(&st->recv.wrs, n, RELAXED);
	atomic_fetch_add_explicit(&st->recv.bytes, bytes, RELAXED);
}

void stats_account_wc(struct stats_qp *st, const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS)
		atomic_fetch_add_explicit(&st->cqe_error, 1, RELAXED);
	else if (wc->opcode & IBV_WC_RECV) {
		atomic_fetch_add_explicit(&st->cqe_recv, 1, RELAXED);
		atomic_fetch_add_explicit(&st->cqe_recv_bytes, wc->byte_len, RELAXED);
	}
	else
		atomic_fetch_add_explicit(&st->cqe_send, 1, RELAXED);
}

void stats_batch_reset(struct stats_batch *b)
{
	memset(b, 0, sizeof(*b));
	b->cur_op = -1;
}

void stats_batch_wr(struct stats_batch *b, enum stats_op op)
{
	b->wrs[op]++;
	b->cur_op = op;
}

void stats_batch_bytes(struct stats_batch *b, uint64_t bytes)
{
	if (b->cur_op >= 0)
		b->bytes[b->cur_op] += bytes;
}

uint64_t stats_batch_commit(struct stats_qp *st, struct stats_batch *b, int rc, uint64_t *bytes)
{
	uint64_t n = 0, total = 0;

	stats_account_call(st, rc);
	if (!rc) {
		for (int op = 0; op < STATS_OP_MAX; op++) {
			if (!b->wrs[op])
				continue;
			atomic_fetch_add_explicit(&st->op[op].wrs, b->wrs[op], RELAXED);
			atomic_fetch_add_explicit(&st->op[op].bytes, b->bytes[op], RELAXED);
			n += b->wrs[op];
			total += b->bytes[op];
		}
		atomic_fetch_add_explicit(&st->wr_api_wrs, n, RELAXED);
	}
	stats_batch_reset(b);
	*bytes = total;
	return n;
}

#define LOAD(x) atomic_load_explicit(&(x), RELAXED)

void stats_snapshot_take(struct stats_snapshot *s, const struct stats_qp *st)
{
	for (int op = 0; op < STATS_OP_MAX; op++) {
		s->op[op].wrs = LOAD(st->op[op].wrs);
		s->op[op].bytes = LOAD(st->op[op].bytes);
	}
	s->post_calls = LOAD(st->post_calls);
	s->classic_wrs = LOAD(st->classic_wrs);
	s->wr_api_wrs = LOAD(st->wr_api_wrs);
	s->failed_posts = LOAD(st->failed_posts);
	s->recv_wrs = LOAD(st->recv.wrs);
	s->recv_bytes = LOAD(st->recv.bytes);
	s->cqe_send = LOAD(st->cqe_send);
	s->cqe_recv = LOAD(st->cqe_recv);
	s->cqe_recv_bytes = LOAD(st->cqe_recv_bytes);
	s->cqe_error = LOAD(st->cqe_error);
	for (int i = 0; i < 4; i++)
		s->split[i] = LOAD(st->split[i]);
	s->held = LOAD(st->held);
	s->window_held = LOAD(st->window_held);
	s->tokens_lost_ns = LOAD(st->tokens_lost_ns);
	s->lock_waits = LOAD(st->lock_waits);
}

void stats_snapshot_add(struct stats_snapshot *sum, const struct stats_snapshot *s)
{
	for (int op = 0; op < STATS_OP_MAX; op++) {
		sum->op[op].wrs += s->op[op].wrs;
		sum->op[op].bytes += s->op[op].bytes;
	}
	sum->post_calls += s->post_calls;
	sum->classic_wrs += s->classic_wrs;
	sum->wr_api_wrs += s->wr_api_wrs;
	sum->failed_posts += s->failed_posts;
	sum->recv_wrs += s->recv_wrs;
	sum->recv_bytes += s->recv_bytes;
	sum->cqe_send += s->cqe_send;
	sum->cqe_recv += s->cqe_recv;
	sum->cqe_recv_bytes += s->cqe_recv_bytes;
	sum->cqe_error += s->cqe_error;
	for (int i = 0; i < 4; i++)
		sum->split[i] += s->split[i];
	sum->held += s->held;
	sum->window_held += s->window_held;
	sum->tokens_lost_ns += s->tokens_lost_ns;
	sum->lock_waits += s->lock_waits;
}

static const char *qp_type_name(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	case IBV_QPT_RAW_PACKET: return "RAW_PACKET";
	case IBV_QPT_XRC_SEND: return "XRC_SEND";
	case IBV_QPT_XRC_RECV: return "XRC_RECV";
	case IBV_QPT_DRIVER: return "DRIVER";
	default: return "OTHER";
	}
}

/* JSON string body: device names and comm are short, but escape anyway. */
static void put_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void put_counters(FILE *f, const struct stats_snapshot *s)
{
	uint64_t wrs = 0, bytes = 0;
	int first = 1;

	for (int op = 0; op < STATS_OP_MAX; op++) {
		wrs += s->op[op].wrs;
		bytes += s->op[op].bytes;
	}
	fprintf(f, "\"send\":{\"wrs\":%llu,\"bytes\":%llu,\"classic_wrs\":%llu,"
		"\"wr_api_wrs\":%llu,\"post_calls\":%llu,\"failed_posts\":%llu,\"opcodes\":{",
		(unsigned long long)wrs, (unsigned long long)bytes,
		(unsigned long long)s->classic_wrs, (unsigned long long)s->wr_api_wrs,
		(unsigned long long)s->post_calls, (unsigned long long)s->failed_posts);
	for (int op = 0; op < STATS_OP_MAX; op++) {
		if (!s->op[op].wrs)
			continue;
		fprintf(f, "%s\"%s\":{\"wrs\":%llu,\"bytes\":%llu}", first ? "" : ",",
			op_names[op], (unsigned long long)s->op[op].wrs,
			(unsigned long long)s->op[op].bytes);
		first = 0;
	}
	fprintf(f, "}},\"recv\":{\"wrs\":%llu,\"bytes\":%llu},"
		"\"cqe\":{\"send\":%llu,\"recv\":%llu,\"recv_bytes\":%llu,\"error\":%llu},"
		"\"split\":{\"one_sided\":%llu,\"send\":%llu,\"write_imm\":%llu,\"whole\":%llu},"
		"\"held\":%llu,\"window_held\":%llu,\"tokens_lost_ns\":%llu,\"lock_waits\":%llu",
		(unsigned long long)s->recv_wrs, (unsigned long long)s->recv_bytes,
		(unsigned long long)s->cqe_send, (unsigned long long)s->cqe_recv,
		(unsigned long long)s->cqe_recv_bytes,
		(unsigned long long)s->cqe_error, (unsigned long long)s->split[0],
		(unsigned long long)s->split[1], (unsigned long long)s->split[2],
		(unsigned long long)s->split[3], (unsigned long long)s->held,
		(unsigned long long)s->window_held, (unsigned long long)s->tokens_lost_ns,
		(unsigned long long)s->lock_waits);
}

int stats_write_json(FILE *f, int pid, const char *comm,
		     const struct stats_snapshot *qps, size_t n,
		     const struct stats_snapshot *overflow, uint64_t n_overflow,
		     const struct stats_pacer *pacer)
{
	struct stats_snapshot total;

	memset(&total, 0, sizeof(total));
	fprintf(f, "{\"justitia_stats\":1,\"pid\":%d,\"comm\":", pid);
	put_json_string(f, comm);
	fputs(",\"qps\":[", f);
	for (size_t i = 0; i < n; i++) {
		const struct stats_snapshot *s = &qps[i];

		fprintf(f, "%s\n{\"device\":", i ? "," : "");
		put_json_string(f, s->device);
		fprintf(f, ",\"qpn\":%u,\"type\":\"%s\",\"created_via\":\"%s\","
			"\"destroyed\":%s,", s->qpn, qp_type_name(s->type),
			s->created_via ? s->created_via : "unknown",
			s->destroyed ? "true" : "false");
		put_counters(f, s);
		fputc('}', f);
		stats_snapshot_add(&total, s);
	}
	fputs("],\n\"retired_overflow\":{", f);
	fprintf(f, "\"qps\":%llu,", (unsigned long long)n_overflow);
	put_counters(f, overflow);
	if (n_overflow)
		stats_snapshot_add(&total, overflow);
	fputs("},\n\"totals\":{", f);
	put_counters(f, &total);
	fputc('}', f);
	if (pacer)
		fprintf(f, ",\n\"pacer\":{\"wakeups\":%llu,\"kick_wakes\":%llu,"
			"\"timer_wakes\":%llu,\"event_wakes\":%llu,\"thread_drains\":%llu,"
			"\"poll_drains\":%llu,\"thread_cpu_ns\":%llu}",
			(unsigned long long)pacer->wakeups, (unsigned long long)pacer->kick_wakes,
			(unsigned long long)pacer->timer_wakes, (unsigned long long)pacer->event_wakes,
			(unsigned long long)pacer->thread_drains,
			(unsigned long long)pacer->poll_drains,
			(unsigned long long)pacer->thread_cpu_ns);
	fputs("}\n", f);
	return ferror(f) ? -EIO : 0;
}

int stats_expand_path(char *out, size_t len, const char *tmpl, int pid)
{
	size_t o = 0;

	for (const char *p = tmpl; *p; p++) {
		char num[16];
		const char *ins = num;
		size_t l;

		if (p[0] == '%' && p[1] == 'p') {
			snprintf(num, sizeof(num), "%d", pid);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			ins = "%";
			p++;
		} else {
			num[0] = *p;
			num[1] = 0;
		}
		l = strlen(ins);
		if (o + l >= len)
			return -ENAMETOOLONG;
		memcpy(out + o, ins, l);
		o += l;
	}
	if (!len)
		return -ENAMETOOLONG;
	out[o] = 0;
	return 0;
}

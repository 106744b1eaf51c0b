// SPDX-License-Identifier: MIT
/* integrity's run state (see integrity.h): the options, both sides, the
 * outstanding messages, the completion logs and counters; the PRNG, the
 * clock, fatal errors and verification failures, and the --order file.
 * May call: lib/sgl (the PRNG), libibverbs (status strings) and libc. */
#include "integrity.h"

#include "sgl.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const integ_op_name[OP_MAX] = { "RDMA_WRITE", "RDMA_READ", "SEND",
					    "RDMA_WRITE_WITH_IMM" };
const char *const integ_op_short[OP_MAX] = { "WRITE", "READ", "SEND", "WRITE_IMM" };

struct integ_opts opt = { "rxe1", "rxe0", NULL, 1, 0, 8, 1, 512ull << 20, 64u << 20, -1, 0, 14 };

struct rc_side A, B;
struct msg fifo[MAX_DEPTH];
unsigned fifo_head, fifo_n;
struct wc_log req_log, recv_log;
int started;
struct integ_stats st;
uint64_t rng;

uint64_t integ_rnd(void)
{
	return sgl_splitmix(&rng);
}

double integ_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void integ_fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("integrity: FAILED: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	if (started)
		integ_write_order();
	fflush(stdout);
	exit(1);
}

/* A verification failure: counted, printed up to MAX_SHOWN times. */
void integ_fail(const char *fmt, ...)
{
	va_list ap;

	if (st.errors++ >= MAX_SHOWN)
		return;
	va_start(ap, fmt);
	fputs("integrity: error: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
}

uint64_t integ_parse_size(const char *s, const char *what)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (end == s || *end)
		integ_fatal("%s: bad size '%s'", what, s);
	return v;
}

/* ------------------------------------------------------------ reporting */

static const char *wc_op_name(int op)
{
	static char b[24];

	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: snprintf(b, sizeof(b), "OPCODE_%d", op); return b;
	}
}

static void write_log(FILE *f, const struct wc_log *l)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct wc_rec *r = &l->v[i];
		char status[64];

		snprintf(status, sizeof(status), "%s", ibv_wc_status_str((enum ibv_wc_status)r->status));
		for (char *p = status; *p; p++)
			if (*p == ' ')
				*p = '_';
		if (r->has_len)
			fprintf(f, "%" PRIu64 " %s %s %u\n", r->wr_id, wc_op_name(r->opcode), status,
				r->byte_len);
		else
			fprintf(f, "%" PRIu64 " %s %s -\n", r->wr_id, wc_op_name(r->opcode), status);
	}
}

void integ_write_order(void)
{
	FILE *f;

	if (!opt.order)
		return;
	f = fopen(opt.order, "w");
	if (!f) {
		printf("integrity: cannot write %s\n", opt.order);
		return;
	}
	fprintf(f, "# integrity --api %s -S %" PRIu64 " --bytes %" PRIu64 " --max-size %u "
		"--depth %u\n# requester completions: wr_id opcode status byte_len\n",
		opt.extended ? "ex" : "classic", opt.seed, opt.bytes, opt.max_size, opt.depth);
	write_log(f, &req_log);
	fputs("# receive completions: wr_id opcode status byte_len\n", f);
	write_log(f, &recv_log);
	if (fclose(f))
		printf("integrity: cannot write %s\n", opt.order);
}

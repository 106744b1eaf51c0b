// SPDX-License-Identifier: MIT
/* libFuzzer target for the control protocol's input side: arbitrary bytes
 * through proto_linebuf_feed/next (in chunks of varying size, with a small
 * line limit so that too_large is reached too), every line through
 * proto_parse_request, and every answer through the reply builders and
 * proto_encode, checking the invariants the daemon relies on.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 -D_GNU_SOURCE -I. -Icommon \
 *         tests/fuzz/fuzz_proto.c -ljansson -o /tmp/fuzz_proto
 *   /tmp/fuzz_proto -max_total_time=60 tests/fuzz/corpus/proto
 *
 * The corpus files are plain request streams (one JSON request a line). */
#include "../../common/proto.c"

#define FUZZ_MAX_LINE 512

#include "fuzz.h"

/* An encoded message is one line: exactly one '\n', at the end. */
static void check_encoded(const json_t *msg)
{
	size_t len;
	char *s = proto_encode(msg, &len);
	json_t *back;

	CHECK(s && len >= 2 && s[len - 1] == '\n' && memchr(s, '\n', len) == s + len - 1);
	back = json_loadb(s, len - 1, JSON_REJECT_DUPLICATES, NULL);
	CHECK(back && json_equal(back, msg));
	json_decref(back);
	free(s);
}

static void check_request(const char *line, size_t len)
{
	const char *cmd = NULL, *code = NULL;
	char msg[256];
	json_t *req, *r, *id;

	req = proto_parse_request(line, len, &cmd, &code, msg, sizeof(msg));
	if (req) {
		CHECK(json_is_object(req) && cmd && *cmd);
		CHECK(json_integer_value(json_object_get(req, "v")) == PROTO_VERSION);
		r = proto_reply_ok(req);
		CHECK(r);
		id = json_object_get(req, "id");
		CHECK(!id || json_equal(id, json_object_get(r, "id")));
		check_encoded(r);
		json_decref(r);
		r = proto_reply_error(req, PROTO_E_UNKNOWN_COMMAND, "unknown command \"%s\"", cmd);
		CHECK(r);
		check_encoded(r);
		json_decref(r);
		json_decref(req);
		return;
	}
	CHECK(!cmd && code);
	CHECK(!strcmp(code, PROTO_E_BAD_JSON) || !strcmp(code, PROTO_E_BAD_REQUEST) ||
	      !strcmp(code, PROTO_E_BAD_VERSION));
	CHECK(memchr(msg, '\0', sizeof(msg)));
	r = proto_reply_invalid(line, len, code, msg);
	CHECK(r);
	check_encoded(r);
	json_decref(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	struct proto_linebuf lb;
	size_t off = 0, lines = 0, newlines = 0, n, len;
	uint32_t seed = (uint32_t)size * 2654435761u;
	char *line;
	int r = 0;

	for (size_t i = 0; i < size; i++)
		newlines += in[i] == '\n';
	proto_linebuf_init(&lb, FUZZ_MAX_LINE);
	while (off < size && !r) {
		seed = seed * 1103515245u + 12345u;
		n = 1 + (seed >> 16) % 700;
		if (n > size - off)
			n = size - off;
		r = proto_linebuf_feed(&lb, in + off, n);
		CHECK(r == 0 || r == -EMSGSIZE);
		off += n;
		while (proto_linebuf_next(&lb, &line, &len) == 1) {
			CHECK(len <= FUZZ_MAX_LINE && line[len] == '\0');
			CHECK(!memchr(line, '\n', len));
			CHECK(!blank(line, len));
			lines++;
			check_request(line, len);
			free(line);
		}
	}
	CHECK(lines <= newlines);
	if (r == -EMSGSIZE)
		CHECK(proto_linebuf_feed(&lb, "{}\n", 3) == -EMSGSIZE &&
		      proto_linebuf_next(&lb, &line, &len) == 0);
	proto_linebuf_free(&lb);
	/* the whole input as one line, whatever it holds */
	check_request(in, size);
	return 0;
}

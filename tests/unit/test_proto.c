// SPDX-License-Identifier: MIT
/* Unit tests of common/proto.c: framing, request validation, replies, and
 * the output queue of an event-loop connection (the client side,
 * proto_client.c, is tests/unit/test_proto_client.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../common/proto.c"
#include "fdleak.h"

#include <sys/socket.h>
#include <unistd.h>

#define UNUSED __attribute__((unused))

/* ------------------------------------------------------------ helpers */

static char *next_line(struct proto_linebuf *lb)
{
	char *line = NULL;
	size_t len = 0;
	int r = proto_linebuf_next(lb, &line, &len);

	if (r != 1)
		return NULL;
	assert_int_equal(strlen(line), len);
	assert_null(memchr(line, '\n', len));
	return line;
}

static void expect_line(struct proto_linebuf *lb, const char *want)
{
	char *line = next_line(lb);

	assert_non_null(line);
	assert_string_equal(line, want);
	free(line);
}

static void expect_no_line(struct proto_linebuf *lb)
{
	char *line = (char *)0x1;

	assert_int_equal(proto_linebuf_next(lb, &line, NULL), 0);
}

static int feed_str(struct proto_linebuf *lb, const char *s)
{
	return proto_linebuf_feed(lb, s, strlen(s));
}
static char *encode_str(const json_t *j)
{
	size_t len = 0;
	char *s = proto_encode(j, &len);

	assert_non_null(s);
	assert_int_equal(strlen(s), len);
	assert_true(len >= 1);
	assert_int_equal(s[len - 1], '\n');
	assert_ptr_equal(memchr(s, '\n', len), s + len - 1);
	return s;
}
/* ------------------------------------------------------------ line buffer */

static void linebuf_partial(void **state UNUSED)
{
	struct proto_linebuf lb;

	proto_linebuf_init(&lb, 64);
	assert_int_equal(feed_str(&lb, "{\"v\":"), 0);
	expect_no_line(&lb);
	assert_int_equal(feed_str(&lb, "1,\"cmd\""), 0);
	expect_no_line(&lb);
	assert_int_equal(feed_str(&lb, ":\"status\"}\n{\"v\""), 0);
	expect_line(&lb, "{\"v\":1,\"cmd\":\"status\"}");
	expect_no_line(&lb);
	assert_int_equal(feed_str(&lb, ":1}\n"), 0);
	expect_line(&lb, "{\"v\":1}");
	expect_no_line(&lb);
	proto_linebuf_free(&lb);
}

static void linebuf_several(void **state UNUSED)
{
	struct proto_linebuf lb;

	proto_linebuf_init(&lb, 16);
	assert_int_equal(feed_str(&lb, "one\ntwo\nthree\nfou"), 0);
	expect_line(&lb, "one");
	expect_line(&lb, "two");
	expect_line(&lb, "three");
	expect_no_line(&lb);
	assert_int_equal(feed_str(&lb, "r\n"), 0);
	expect_line(&lb, "four");
	expect_no_line(&lb);
	proto_linebuf_free(&lb);
}

static void linebuf_byte_by_byte(void **state UNUSED)
{
	const char *in = "alpha\nbeta\r\n\ngamma\n";
	struct proto_linebuf lb;

	proto_linebuf_init(&lb, 8);
	for (const char *p = in; *p; p++)
		assert_int_equal(proto_linebuf_feed(&lb, p, 1), 0);
	expect_line(&lb, "alpha");
	expect_line(&lb, "beta\r");
	expect_line(&lb, "gamma");
	expect_no_line(&lb);
	proto_linebuf_free(&lb);
}

static void linebuf_exact_max(void **state UNUSED)
{
	struct proto_linebuf lb;

	proto_linebuf_init(&lb, 8);
	assert_int_equal(feed_str(&lb, "12345678\n"), 0);
	expect_line(&lb, "12345678");
	/* the same, split across feeds */
	assert_int_equal(feed_str(&lb, "1234"), 0);
	assert_int_equal(feed_str(&lb, "5678"), 0);
	expect_no_line(&lb);
	assert_int_equal(feed_str(&lb, "\nab\n"), 0);
	expect_line(&lb, "12345678");
	expect_line(&lb, "ab");
	proto_linebuf_free(&lb);
}

static void linebuf_over_max(void **state UNUSED)
{
	struct proto_linebuf lb;

	/* one byte too many, no newline yet */
	proto_linebuf_init(&lb, 8);
	assert_int_equal(feed_str(&lb, "123456789"), -EMSGSIZE);
	expect_no_line(&lb);
	/* sticky: the rest of the line is not taken for a new one */
	assert_int_equal(feed_str(&lb, "\n{}\n"), -EMSGSIZE);
	expect_no_line(&lb);
	proto_linebuf_free(&lb);

	/* grows past the limit across feeds */
	proto_linebuf_init(&lb, 8);
	assert_int_equal(feed_str(&lb, "12345"), 0);
	assert_int_equal(feed_str(&lb, "6789"), -EMSGSIZE);
	expect_no_line(&lb);
	proto_linebuf_free(&lb);

	/* a complete overlong line in one feed */
	proto_linebuf_init(&lb, 8);
	assert_int_equal(feed_str(&lb, "123456789\n"), -EMSGSIZE);
	expect_no_line(&lb);
	proto_linebuf_free(&lb);

	/* complete lines before the overlong one are still returned */
	proto_linebuf_init(&lb, 8);
	assert_int_equal(feed_str(&lb, "par"), 0);
	assert_int_equal(feed_str(&lb, "tial\nok\n0123456789abcdef\nlater\n"), -EMSGSIZE);
	expect_line(&lb, "partial");
	expect_line(&lb, "ok");
	expect_no_line(&lb);
	proto_linebuf_free(&lb);
}

static void linebuf_empty_lines(void **state UNUSED)
{
	struct proto_linebuf lb;

	proto_linebuf_init(&lb, 0);
	assert_int_equal(lb.max, PROTO_MAX_LINE_DEFAULT);
	assert_int_equal(feed_str(&lb, "\n\n \t\r\n"), 0);
	expect_no_line(&lb);
	assert_int_equal(feed_str(&lb, "x\n\n\ny\n\r\n"), 0);
	expect_line(&lb, "x");
	expect_line(&lb, "y");
	expect_no_line(&lb);
	/* zero-length feeds are harmless */
	assert_int_equal(proto_linebuf_feed(&lb, "", 0), 0);
	expect_no_line(&lb);
	proto_linebuf_free(&lb);
}

static void linebuf_embedded_nul(void **state UNUSED)
{
	struct proto_linebuf lb;
	char *line;
	size_t len;

	proto_linebuf_init(&lb, 16);
	assert_int_equal(proto_linebuf_feed(&lb, "a\0b\n", 4), 0);
	assert_int_equal(proto_linebuf_next(&lb, &line, &len), 1);
	assert_int_equal(len, 3);
	assert_memory_equal(line, "a\0b", 4);
	free(line);
	proto_linebuf_free(&lb);
}

/* A long conversation through one buffer: memory stays bounded. */
static void linebuf_bounded(void **state UNUSED)
{
	struct proto_linebuf lb;
	char want[32];

	proto_linebuf_init(&lb, 64);
	for (int i = 0; i < 10000; i++) {
		snprintf(want, sizeof(want), "{\"v\":1,\"id\":%d}", i);
		assert_int_equal(proto_linebuf_feed(&lb, want, 7), 0);
		assert_int_equal(feed_str(&lb, want + 7), 0);
		assert_int_equal(feed_str(&lb, "\n"), 0);
		expect_line(&lb, want);
	}
	assert_true(lb.cap <= 256);
	proto_linebuf_free(&lb);
}

/* ------------------------------------------------------------ requests */

static const struct parse_case {
	const char *line;
	const char *code; /* NULL: accepted */
	const char *cmd_or_msg;
} parse_cases[] = {
	{ "{\"v\":1,\"cmd\":\"status\"}", NULL, "status" },
	{ " {\"cmd\":\"flows\", \"v\":1, \"all\":true} \r", NULL, "flows" },
	{ "{\"v\":1,\"cmd\":\"set\",\"id\":7}", NULL, "set" },
	{ "{\"v\":1,\"cmd\":\"set\",\"id\":\"abc\"}", NULL, "set" },
	{ "{\"v\":1,\"cmd\":\"set\",\"id\":null}", NULL, "set" },
	{ "{\"v\":1,\"cmd\":\"set\",\"id\":1.5}", NULL, "set" },
	{ "{\"v\":1,\"cmd\":\"set\",\"id\":false}", NULL, "set" },
	{ "{\"v\":1,\"cmd\":\"caf\xc3\xa9\"}", NULL, "caf\xc3\xa9" },
	{ "", PROTO_E_BAD_JSON, "invalid JSON at byte 0" },
	{ "{", PROTO_E_BAD_JSON, "invalid JSON at byte" },
	{ "{\"v\":1,\"cmd\":\"x\"} trailing", PROTO_E_BAD_JSON, "end of file expected" },
	{ "{\"v\":1,\"cmd\":\"x\"}{}", PROTO_E_BAD_JSON, "invalid JSON" },
	{ "{\"v\":1,\"v\":1,\"cmd\":\"x\"}", PROTO_E_BAD_JSON, "duplicate object key" },
	{ "{\"v\":1,\"cmd\":\"\xff\"}", PROTO_E_BAD_JSON, "invalid JSON" },
	{ "{\"v\":1,\"cmd\":\"a\\u0000b\"}", PROTO_E_BAD_JSON, "invalid JSON" },
	{ "{\"v\":99999999999999999999,\"cmd\":\"x\"}", PROTO_E_BAD_JSON, "too big integer" },
	{ "{'v':1}", PROTO_E_BAD_JSON, "invalid JSON" },
	{ "[1,2]", PROTO_E_BAD_REQUEST, "a request must be a JSON object" },
	{ "\"status\"", PROTO_E_BAD_REQUEST, "a request must be a JSON object" },
	{ "42", PROTO_E_BAD_REQUEST, "a request must be a JSON object" },
	{ "null", PROTO_E_BAD_REQUEST, "a request must be a JSON object" },
	{ "{\"cmd\":\"status\"}", PROTO_E_BAD_REQUEST, "missing protocol version \"v\"" },
	{ "{\"v\":\"1\",\"cmd\":\"status\"}", PROTO_E_BAD_REQUEST, "\"v\" must be an integer" },
	{ "{\"v\":1.0,\"cmd\":\"status\"}", PROTO_E_BAD_REQUEST, "\"v\" must be an integer" },
	{ "{\"v\":true,\"cmd\":\"status\"}", PROTO_E_BAD_REQUEST, "\"v\" must be an integer" },
	{ "{\"v\":null,\"cmd\":\"status\"}", PROTO_E_BAD_REQUEST, "\"v\" must be an integer" },
	{ "{\"v\":2,\"cmd\":\"status\"}", PROTO_E_BAD_VERSION,
	  "protocol version 2 not supported (daemon speaks 1)" },
	{ "{\"v\":0}", PROTO_E_BAD_VERSION, "protocol version 0 not supported (daemon speaks 1)" },
	{ "{\"v\":-1,\"cmd\":\"x\"}", PROTO_E_BAD_VERSION, "protocol version -1 not supported" },
	{ "{\"v\":1}", PROTO_E_BAD_REQUEST, "missing \"cmd\"" },
	{ "{\"v\":1,\"cmd\":\"\"}", PROTO_E_BAD_REQUEST, "\"cmd\" must be a non-empty string" },
	{ "{\"v\":1,\"cmd\":5}", PROTO_E_BAD_REQUEST, "\"cmd\" must be a non-empty string" },
	{ "{\"v\":1,\"cmd\":null}", PROTO_E_BAD_REQUEST, "\"cmd\" must be a non-empty string" },
	{ "{\"v\":1,\"cmd\":[\"x\"]}", PROTO_E_BAD_REQUEST, "\"cmd\" must be a non-empty string" },
	{ "{\"v\":1,\"cmd\":\"x\",\"id\":[1]}", PROTO_E_BAD_REQUEST, "\"id\" must be a string" },
	{ "{\"v\":1,\"cmd\":\"x\",\"id\":{}}", PROTO_E_BAD_REQUEST, "\"id\" must be a string" },
};

static void parse_table(void **state UNUSED)
{
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *t = &parse_cases[i];
		const char *cmd = "junk", *code = "junk";
		char msg[256] = "";
		json_t *req;

		req = proto_parse_request(t->line, strlen(t->line), &cmd, &code, msg, sizeof(msg));
		if (!t->code) {
			if (!req)
				fail_msg("case %zu '%s' rejected: %s: %s", i, t->line, code, msg);
			assert_string_equal(cmd, t->cmd_or_msg);
			json_decref(req);
			continue;
		}
		if (req)
			fail_msg("case %zu '%s' accepted", i, t->line);
		assert_null(cmd);
		if (strcmp(code, t->code) || !strstr(msg, t->cmd_or_msg))
			fail_msg("case %zu '%s': got %s '%s', want %s '%s'", i, t->line, code, msg,
				 t->code, t->cmd_or_msg);
	}
}

static void parse_edge(void **state UNUSED)
{
	const char *code = NULL, *cmd = NULL;
	char msg[8];
	json_t *req;

	/* the line need not be NUL-terminated: len rules */
	req = proto_parse_request("{\"v\":1,\"cmd\":\"status\"}GARBAGE", 22, &cmd, &code, msg,
				  sizeof(msg));
	assert_non_null(req);
	assert_string_equal(cmd, "status");
	json_decref(req);
	/* an embedded NUL byte */
	req = proto_parse_request("{\"v\":1,\"cmd\":\"x\"}\0{}", 20, &cmd, &code, msg,
				  sizeof(msg));
	assert_null(req);
	assert_string_equal(code, PROTO_E_BAD_JSON);
	/* a short message buffer truncates, NULL outputs are allowed */
	req = proto_parse_request("{\"v\":7}", 7, NULL, &code, msg, sizeof(msg));
	assert_null(req);
	assert_string_equal(code, PROTO_E_BAD_VERSION);
	assert_string_equal(msg, "protoco");
	assert_null(proto_parse_request("{", 1, NULL, NULL, NULL, 0));
	assert_null(proto_parse_request(NULL, 0, NULL, &code, NULL, 0));
	assert_string_equal(code, PROTO_E_BAD_JSON);
}

/* ------------------------------------------------------------ replies */

static void reply_ok_echoes_id(void **state UNUSED)
{
	json_t *req, *r;
	char *s;

	req = json_pack("{s:i, s:s, s:i}", "v", 1, "cmd", "status", "id", 7);
	r = proto_reply_ok(req);
	s = encode_str(r);
	assert_string_equal(s, "{\"v\":1,\"ok\":true,\"id\":7}\n");
	free(s);
	json_decref(r);

	/* the daemon adds its fields after the envelope */
	json_object_set_new(req, "id", json_string("a\nb"));
	r = proto_reply_ok(req);
	json_object_set_new(r, "version", json_string("0.1.0"));
	s = encode_str(r);
	assert_string_equal(s, "{\"v\":1,\"ok\":true,\"id\":\"a\\nb\",\"version\":\"0.1.0\"}\n");
	free(s);
	json_decref(r);
	json_decref(req);

	/* no request, no id; a non-scalar id is not echoed */
	r = proto_reply_ok(NULL);
	s = encode_str(r);
	assert_string_equal(s, "{\"v\":1,\"ok\":true}\n");
	free(s);
	json_decref(r);
	req = json_pack("{s:[i]}", "id", 1);
	r = proto_reply_ok(req);
	assert_null(json_object_get(r, "id"));
	json_decref(r);
	json_decref(req);
}

static void reply_error_shape(void **state UNUSED)
{
	json_t *req, *r;
	char *s;

	req = json_pack("{s:i, s:s, s:s}", "v", 1, "cmd", "set", "id", "x");
	r = proto_reply_error(req, PROTO_E_NOT_FOUND, "flow %d not found", 9);
	s = encode_str(r);
	assert_string_equal(s, "{\"v\":1,\"ok\":false,\"id\":\"x\",\"error\":"
			       "{\"code\":\"not_found\",\"message\":\"flow 9 not found\"}}\n");
	free(s);
	json_decref(r);
	json_decref(req);

	/* a message quoting invalid UTF-8 still makes a reply */
	r = proto_reply_error(NULL, PROTO_E_UNKNOWN_COMMAND, "unknown command \"%s\"", "a\xff\xfe");
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"),
							      "message")),
			    "unknown command \"a??\"");
	assert_null(json_object_get(r, "id"));
	json_decref(r);
}

static void reply_invalid_echoes_id(void **state UNUSED)
{
	const char *line = "{\"v\":2,\"cmd\":\"status\",\"id\":42}";
	const char *code;
	char msg[128];
	json_t *r;
	char *s;

	assert_null(proto_parse_request(line, strlen(line), NULL, &code, msg, sizeof(msg)));
	r = proto_reply_invalid(line, strlen(line), code, msg);
	s = encode_str(r);
	assert_string_equal(s, "{\"v\":1,\"ok\":false,\"id\":42,\"error\":"
			       "{\"code\":\"bad_version\",\"message\":\"protocol version 2 "
			       "not supported (daemon speaks 1)\"}}\n");
	free(s);
	json_decref(r);

	line = "{\"v\":1,";
	assert_null(proto_parse_request(line, strlen(line), NULL, &code, msg, sizeof(msg)));
	r = proto_reply_invalid(line, strlen(line), code, msg);
	assert_null(json_object_get(r, "id"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
			    "bad_json");
	json_decref(r);

	line = "{\"v\":1,\"cmd\":\"x\",\"id\":[1]}";
	r = proto_reply_invalid(line, strlen(line), PROTO_E_BAD_REQUEST, "bad id");
	assert_null(json_object_get(r, "id"));
	json_decref(r);
}

static void encode_one_line(void **state UNUSED)
{
	json_t *j = json_pack("{s:s, s:[s, {s:s}], s:f}", "a", "line1\nline2\r\n", "b", "\n",
			      "c", "\t\n", "d", 1.5);
	char *s = encode_str(j);

	assert_non_null(strstr(s, "\\n"));
	free(s);
	json_decref(j);
	assert_null(proto_encode(NULL, NULL));
}
/* The output queue of an event-loop connection: bounded, sent without
 * blocking, what the socket did not take kept in order, errors returned. */
static void output_queue(void **state)
{
	char *buf = NULL, big[65536], rd[65536];
	size_t len = 0, cap = 0, got = 0;
	int sv[2], rc;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(proto_out_append(&buf, &len, &cap, "", 0, 10), 0);
	assert_int_equal(proto_out_flush(sv[0], buf, &len), 0);
	assert_int_equal(proto_out_append(&buf, &len, &cap, "hello\n", 6, 10), 0);
	assert_int_equal(proto_out_append(&buf, &len, &cap, "world\n", 6, 10), -ENOBUFS);
	assert_int_equal(len, 6);
	assert_int_equal(proto_out_flush(sv[0], buf, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(recv(sv[1], rd, sizeof(rd), 0), 6);
	assert_memory_equal(rd, "hello\n", 6);
	/* more than the socket takes: the rest waits, in order */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	for (int k = 0; k < 64; k++)
		assert_int_equal(proto_out_append(&buf, &len, &cap, big, sizeof(big), 1u << 30), 0);
	rc = proto_out_flush(sv[0], buf, &len);
	assert_int_equal(rc, 1);
	assert_true(len > 0 && len < 64 * sizeof(big));
	while (got < 64 * sizeof(big)) {
		ssize_t n = recv(sv[1], rd, sizeof(rd), MSG_DONTWAIT);

		if (n > 0) {
			for (ssize_t i = 0; i < n; i++)
				assert_int_equal(rd[i], big[(got + (size_t)i) % sizeof(big)]);
			got += (size_t)n;
		} else {
			rc = proto_out_flush(sv[0], buf, &len);
			assert_true(rc >= 0);
		}
	}
	assert_int_equal(len, 0);
	/* the peer is gone: the error, never SIGPIPE */
	close(sv[1]);
	assert_int_equal(proto_out_append(&buf, &len, &cap, "x", 1, 10), 0);
	assert_int_equal(proto_out_flush(sv[0], buf, &len), -EPIPE);
	close(sv[0]);
	free(buf);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(linebuf_partial),
		cmocka_unit_test(linebuf_several),
		cmocka_unit_test(linebuf_byte_by_byte),
		cmocka_unit_test(linebuf_exact_max),
		cmocka_unit_test(linebuf_over_max),
		cmocka_unit_test(linebuf_empty_lines),
		cmocka_unit_test(linebuf_embedded_nul),
		cmocka_unit_test(linebuf_bounded),
		cmocka_unit_test(parse_table),
		cmocka_unit_test(parse_edge),
		cmocka_unit_test(reply_ok_echoes_id),
		cmocka_unit_test(reply_error_shape),
		cmocka_unit_test(reply_invalid_echoes_id),
		cmocka_unit_test(encode_one_line),
		cmocka_unit_test(output_queue),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

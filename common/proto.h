/* SPDX-License-Identifier: MIT */
/* The justitiad control protocol: newline-delimited JSON over a UNIX stream
 * socket (docs/protocol.md).  Framing, request validation, reply builders and
 * fd passing shared by the daemon, the shim and justctl (proto.c); the
 * blocking client side is proto_client.h, included at the end. */
#ifndef JUSTITIA_PROTO_H
#define JUSTITIA_PROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PROTO_VERSION 1
#define PROTO_MAX_LINE_DEFAULT 65536
#define PROTO_MAX_FDS 4
/* The time budget of the control protocol (docs/protocol.md, "Timeouts"):
 * a daemon answers every request within PROTO_REPLY_MS -- its slowest
 * answer, split_peer asking another host's daemon, gives up on that
 * daemon after PROTO_PEER_LOOKUP_MS -- and a shim waits that long for a
 * reply before it counts the daemon as gone. */
#define PROTO_PEER_LOOKUP_MS 2000
#define PROTO_REPLY_MS (PROTO_PEER_LOOKUP_MS + 1000)
#define PROTO_DEFAULT_SOCKET "/run/justitia/justitiad.sock"
/* Environment variable that overrides PROTO_DEFAULT_SOCKET for clients. */
#define PROTO_SOCKET_ENV "JUSTITIA_SOCKET"
/* Longest reply line a client accepts (a full "flows" listing). */
#define PROTO_MAX_REPLY_LINE (64u << 20)

/* Error codes carried in {"ok":false,"error":{"code":...,"message":...}} */
#define PROTO_E_BAD_JSON "bad_json"
#define PROTO_E_BAD_VERSION "bad_version"
#define PROTO_E_BAD_REQUEST "bad_request"
#define PROTO_E_UNKNOWN_COMMAND "unknown_command"
#define PROTO_E_TOO_LARGE "too_large"
#define PROTO_E_PERMISSION "permission_denied"
#define PROTO_E_LIMIT "limit"
#define PROTO_E_NOT_FOUND "not_found"
#define PROTO_E_INTERNAL "internal"
#define PROTO_E_TIMEOUT "timeout"

/* A bounded line assembler for a non-blocking stream. */
struct proto_linebuf {
	char *buf;
	size_t len, cap, max;
	/* private to proto.c */
	size_t head;  /* first byte not yet returned by proto_linebuf_next() */
	size_t tail;  /* start of the trailing incomplete line */
	bool overflow; /* a line exceeded max: sticky -EMSGSIZE */
};

/* @max_line: longest accepted line in bytes, not counting its '\n'
 * (0: PROTO_MAX_LINE_DEFAULT). */
void proto_linebuf_init(struct proto_linebuf *lb, size_t max_line);
void proto_linebuf_free(struct proto_linebuf *lb);
/* Append received bytes.  0, or -EMSGSIZE once a line grows past max_line
 * (the connection should then be answered with too_large and closed).
 * -EMSGSIZE is sticky: later feeds are discarded.  Complete lines received
 * before the overlong one stay available to proto_linebuf_next(), so they
 * can still be answered first.  -ENOMEM if the buffer cannot grow. */
int proto_linebuf_feed(struct proto_linebuf *lb, const char *data, size_t n);
/* Take the next complete line (without its '\n', NUL-terminated, malloc'ed,
 * the caller frees).  Returns 1 with a line, 0 when no complete line is
 * buffered, -ENOMEM.  Blank lines (only spaces, tabs, '\r') are skipped:
 * they are not requests and get no reply. */
int proto_linebuf_next(struct proto_linebuf *lb, char **line, size_t *len);

/* Validate one request line: a JSON object with "v" == PROTO_VERSION
 * (integer) and "cmd" (non-empty string).  Returns the object (new
 * reference) and *cmd pointing into it, or NULL with *code (a PROTO_E_*
 * constant) and msg set.  An "id" member must be a scalar (string, number,
 * boolean, null).  Duplicate keys are rejected. */
json_t *proto_parse_request(const char *line, size_t len, const char **cmd,
			    const char **code, char *msg, size_t msglen);
/* The error reply for a line proto_parse_request() rejected: like
 * proto_reply_error() with "%s" and @msg, and "id" echoed when the line is
 * an object with a scalar "id" (bad_version, bad_request). */
json_t *proto_reply_invalid(const char *line, size_t len, const char *code, const char *msg);

/* {"v":1,"ok":true} plus "id" copied from @req when it has one. */
json_t *proto_reply_ok(const json_t *req);
/* {"v":1,"ok":false,"error":{"code":code,"message":...}} plus "id". */
json_t *proto_reply_error(const json_t *req, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Compact one-line encoding with the trailing '\n' (malloc'ed), or NULL. */
char *proto_encode(const json_t *msg, size_t *len);

/* sendmsg() (MSG_NOSIGNAL added, EINTR retried) of @len bytes with up to
 * PROTO_MAX_FDS descriptors attached (SCM_RIGHTS): bytes sent or -errno.
 * The one send under proto_send_once(), proto_out_flush() and the
 * client's proto_send(). */
ssize_t proto_sendmsg(int sock, const char *buf, size_t len, const int *fds, int nfds,
		      int flags);
/* sendmsg() once (MSG_NOSIGNAL, EINTR retried): returns bytes sent or
 * -errno (-EAGAIN on a full non-blocking socket).  Pass @fds only with the
 * first byte of a message, i.e. on the first call for it. */
ssize_t proto_send_once(int sock, const char *buf, size_t len, const int *fds, int nfds);

/* The output queue of a line connection in an event loop (the daemon's
 * control and peer sockets): *buf holds *len bytes in *cap.
 * proto_out_append() queues @n bytes: 0, -ENOBUFS when more than @max
 * would be queued, -ENOMEM.  proto_out_flush() sends what it can without
 * blocking (MSG_NOSIGNAL, EINTR retried): 0 when all is sent, 1 when some
 * is left (wait until the socket is writable), or -errno. */
int proto_out_append(char **buf, size_t *len, size_t *cap, const char *data, size_t n,
		     size_t max);
int proto_out_flush(int sock, char *buf, size_t *len);

/* The blocking client side: proto_send(), proto_recv(), proto_connect(),
 * proto_call() (proto_client.c). */
#include "proto_client.h"

#endif

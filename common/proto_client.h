/* SPDX-License-Identifier: MIT */
/* The blocking client side of the justitiad control protocol
 * (docs/protocol.md): send and receive with descriptors, the socket's path,
 * connect and one call with a deadline.  justctl, the shim and the test
 * programs use it; proto.h includes it. */
#ifndef JUSTITIA_PROTO_CLIENT_H
#define JUSTITIA_PROTO_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

/* proto_send() and proto_recv() are the blocking, deadline-free faces of
 * the send and receive that proto_call() and the daemon's connections use
 * with deadlines or without blocking; only tests and tests/progs/ctlabuse
 * (a client that must misbehave on purpose) call them.
 *
 * Send @len bytes with up to PROTO_MAX_FDS descriptors attached to the
 * first byte (SCM_RIGHTS).  Blocking sockets: loops until all is sent.
 * Returns 0 or -errno.  (On a non-blocking socket it waits in poll(); an
 * event loop should use proto_send_once() from its write watcher.)  Never
 * raises SIGPIPE (-EPIPE instead). */
int proto_send(int sock, const char *buf, size_t len, const int *fds, int nfds);
/* recvmsg() once: returns bytes read (0 = EOF) or -errno; received
 * descriptors (O_CLOEXEC) are stored in fds[*nfds..] up to maxfds, any
 * beyond that are closed. */
ssize_t proto_recv(int sock, char *buf, size_t len, int *fds, int *nfds, int maxfds);

/* $JUSTITIA_SOCKET (secure_getenv, when set and non-empty) or
 * PROTO_DEFAULT_SOCKET. */
const char *proto_socket_path(void);
/* Client side convenience (justctl, shim): connect to @path (NULL:
 * $JUSTITIA_SOCKET or PROTO_DEFAULT_SOCKET) with a timeout; returns fd or
 * -errno.  The socket is blocking and close-on-exec.  timeout_ms <= 0: no
 * limit.  -ETIMEDOUT when the daemon's backlog stays full, -ENAMETOOLONG
 * when @path does not fit in sun_path. */
int proto_connect(const char *path, int timeout_ms);
/* Send @req, wait up to @timeout_ms for one reply line; returns the reply
 * object (new reference) or NULL with -errno in *err.  Descriptors that came
 * with the reply go to fds/nfds (may be NULL when none are expected).
 * timeout_ms <= 0: no limit.  *err: -ETIMEDOUT, -ECONNRESET (the daemon
 * closed the connection), -EPROTO (the reply is not a JSON object, or its
 * "id" differs from the request's), -EMSGSIZE (longer than
 * PROTO_MAX_REPLY_LINE), -ENOMEM, or a socket error.  On failure any
 * descriptors received are closed and the connection's state is unknown:
 * close it.  *nfds is set to the number of descriptors stored in fds[]
 * (0 on failure). */
json_t *proto_call(int sock, const json_t *req, int timeout_ms, int *fds, int *nfds,
		   int maxfds, int *err);

#endif

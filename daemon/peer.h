/* SPDX-License-Identifier: MIT */
/* The channel between justitiad daemons (docs/peer-protocol.md): TCP,
 * newline-delimited JSON, versioned, bounded lines, strict parsing; each
 * connection is checked against the configured peers by source address and,
 * with reference.secret_file, authenticated by a challenge/response and a
 * per-message MAC (SipHash-2-4 keyed by the shared secret).
 *
 * Generic request/response: a module registers handlers for named
 * operations (peer_handle()) and sends requests with peer_request(); the
 * reference flow's "ref_open" is one, the shim's split-QP lookup will be
 * another.  The daemon dials every reference.peers[] entry (an "outgoing"
 * peer, reconnected with exponential backoff) and accepts connections from
 * them; requests may travel both ways on any connection that is up. */
#ifndef JUSTITIAD_PEER_H
#define JUSTITIAD_PEER_H

#include <ev.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "proto.h"
#include "siphash.h"

#define PEER_PROTO_VERSION 1
#define PEER_MAX_LINE 16384
#define PEER_MAX_HANDLERS 16
#define PEER_MAX_LISTENERS 8
#define PEER_MAX_PENDING 64           /* requests in flight per connection, each way */
#define PEER_TIMEOUT_MS 5000          /* handshake and default request timeout */
#define PEER_BACKOFF_MIN_MS 250
#define PEER_BACKOFF_MAX_MS 30000

enum peer_state {
	PEER_IDLE,                    /* not dialled yet */
	PEER_CONNECTING,              /* TCP connect in progress */
	PEER_HANDSHAKE,               /* hello/auth */
	PEER_UP,
	PEER_DOWN,                    /* failed; outgoing peers retry after a backoff */
};

struct peer;
struct peer_ctx;

/* The serving side's handle of one request; copy it to answer later. */
struct peer_req {
	uint64_t conn;                /* connection serial */
	json_int_t id;
};

/* Handle @args (owned by the caller) of request @rq on connection @p; answer
 * exactly once with peer_reply() or peer_reply_error(), now or later (an
 * answer to a connection that has gone is dropped). */
typedef void (*peer_handler_fn)(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq,
				json_t *args, void *arg);
/* A reply: @result (owned by the caller) on success; NULL with an error
 * @code ("timeout", "closed", "unknown_op", or the handler's) and @msg. */
typedef void (*peer_reply_fn)(struct peer_ctx *pc, struct peer *p, json_t *result,
			      const char *code, const char *msg, void *arg);
/* A connection came up (@up true) or went away (false; @p is still valid
 * during the call, never after). */
typedef void (*peer_event_fn)(struct peer_ctx *pc, struct peer *p, bool up, void *arg);

struct peer_pending {
	json_int_t id;
	uint64_t deadline_ns;
	peer_reply_fn cb;
	void *arg;
	struct peer_pending *next;
};

struct peer {
	unsigned magic;
	struct peer_ctx *pc;
	int fd;
	ev_io rw, ww;
	ev_timer tw;                  /* connect/handshake deadline, backoff, request timeouts */
	bool outgoing;
	char address[CONFIG_NAME_MAX];/* outgoing: as configured */
	uint16_t port;
	char name[96];                /* "address:port" */
	enum peer_state state;
	char error[160];
	bool logged;                  /* the current failure was logged */
	uint64_t serial;
	uint64_t resolve_token;       /* outgoing: a host name being resolved, 0: none */
	uint64_t backoff_ms;
	uint64_t deadline_ns;
	/* handshake */
	uint8_t nonce[16], peer_nonce[16];
	uint64_t peer_node;
	bool got_hello, got_auth;
	bool mac;                     /* lines carry MACs */
	struct siphash_key k_tx, k_rx;
	uint64_t seq_tx, seq_rx;
	/* I/O */
	struct proto_linebuf in;
	char *out;
	size_t out_len, out_cap;
	/* requests */
	struct peer_pending *pending;
	unsigned n_pending, n_serving;
	json_int_t next_id;
	struct peer *next;            /* incoming list */
};

struct peer_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

struct peer_ctx {
	struct ev_loop *loop;
	uint64_t node;                /* this daemon's instance */
	char listen_address[CONFIG_NAME_MAX];
	uint16_t listen_port;         /* the bound port (as configured, or chosen) */
	bool have_secret;
	bool usable;                  /* false: the secret could not be read */
	struct siphash_key key;
	char error[160];              /* what is wrong with the channel, "" if nothing */
	int lfd;
	ev_io lw;
	struct peer *out;             /* one per configured peer */
	size_t n_out;
	struct peer *in;
	size_t n_in;
	struct peer_addr *allow;      /* resolved addresses of the configured peers */
	size_t n_allow;
	struct {
		char op[32];
		peer_handler_fn fn;
		void *arg;
	} handlers[PEER_MAX_HANDLERS];
	size_t n_handlers;
	struct {
		peer_event_fn fn;
		void *arg;
	} listeners[PEER_MAX_LISTENERS];
	size_t n_listeners;
	uint64_t next_serial;
	int res_fd[2];                /* resolver threads -> loop (peer.c) */
	ev_io res_w;
};

/* Listen on reference.listen_address:listen_port, read the secret, start
 * dialling the configured peers.  0 or -errno; on failure the reason is in
 * pc->error and the context is still valid (no listener, nothing dialled). */
int peer_ctx_init(struct peer_ctx *pc, struct ev_loop *loop, const struct config *cfg,
		  uint64_t node);
void peer_ctx_fini(struct peer_ctx *pc);
/* After a reload: new peers and secret (the listener stays).  Connections
 * are rebuilt when either changed. */
void peer_ctx_reconfigure(struct peer_ctx *pc, const struct config *cfg);

int peer_handle(struct peer_ctx *pc, const char *op, peer_handler_fn fn, void *arg);
int peer_listen_events(struct peer_ctx *pc, peer_event_fn fn, void *arg);

/* Send request @op with @args (stolen; NULL = {}) on @p; @cb is called
 * exactly once.  timeout_ms <= 0: PEER_TIMEOUT_MS.  0, -ENOTCONN (not up),
 * -EBUSY (PEER_MAX_PENDING in flight), -ENOMEM. */
int peer_request(struct peer *p, const char *op, json_t *args, peer_reply_fn cb, void *arg,
		 int timeout_ms);
void peer_reply(struct peer_ctx *pc, const struct peer_req *rq, json_t *result);
void peer_reply_error(struct peer_ctx *pc, const struct peer_req *rq, const char *code,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The outgoing peer for reference.peers[i], or NULL. */
struct peer *peer_outgoing(struct peer_ctx *pc, size_t i);
/* The remote address of a connection, for split-QP lookups and logs. */
int peer_remote_addr(const struct peer *p, struct sockaddr_storage *ss, socklen_t *len);

#endif

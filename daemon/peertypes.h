/* SPDX-License-Identifier: MIT */
/* The types of the channel between justitiad daemons (see peer.h): one
 * connection (struct peer), the channel (struct peer_ctx), requests in
 * flight.  Shared by the channel's layers (peer.c, peerconn.c, peermsg.c,
 * peeraddr.c); users of the channel include peer.h. */
#ifndef JUSTITIAD_PEERTYPES_H
#define JUSTITIAD_PEERTYPES_H

#include <ev.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "proto.h"
#include "kcrypto.h"

#define PEER_MAGIC 0x50454552u /* "PEER": a live struct peer */
#define PEER_PROTO_VERSION 2
#define PEER_MAX_LINE 16384
/* The longest JSON a sealed line carries: hex of ciphertext and tag. */
#define PEER_MAX_PLAIN (PEER_MAX_LINE / 2 - KCRYPTO_TAG)
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
	bool sealed;                  /* lines are sealed (AES-256-GCM); tx, rx set up */
	struct kcrypto_aead tx, rx;
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
	char listen_address[CONFIG_NAME_MAX]; /* where it listens ("" = nowhere) */
	char listen_cfg[CONFIG_NAME_MAX];     /* reference.listen_address as configured */
	uint16_t listen_port;         /* the bound port (as configured, or chosen) */
	bool have_secret;
	bool usable;                  /* false: the secret could not be read */
	uint8_t key[KCRYPTO_HASH];    /* the long-term key (HKDF PRK) */
	char error[160];              /* what is wrong with the channel, "" if nothing */
	struct {                      /* incoming connections turned away (justctl status) */
		uint64_t address;     /* not from a configured peer's address */
		uint64_t limit;       /* over 8 from its host or 128 in all */
		uint64_t protocol;    /* ended by a protocol or authentication error (bad
				       * MAC, replay, strict wire), an over-long line or
				       * a handshake that timed out */
	} refused;
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
	int res_fd[2];                /* resolver threads -> loop (peeraddr.c) */
	ev_io res_w;
	/* each line a connection receives (set by peer_ctx_init: peer.c) */
	void (*on_line)(struct peer *p, char *line, size_t len);
};

#endif

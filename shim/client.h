/* SPDX-License-Identifier: MIT */
/* The shim's connection to justitiad: registration of the process and its
 * QPs as flows, and the shared-memory segments that come with it.
 *
 * Everything here runs on the application's control path (QP creation,
 * modification, destruction), never on the post path, and fails open: no
 * daemon, a daemon that does not answer within its timeout, or shared
 * memory that does not validate leave the QPs unmanaged, logged once when
 * JUSTITIA_LOG asks, and the shim tries again later with backoff. */
#ifndef JUSTITIA_SHIM_CLIENT_H
#define JUSTITIA_SHIM_CLIENT_H

#include <infiniband/verbs.h>

#include "shm_abi.h"

struct shim_qp;

void shim_client_init(void);
/* A QP was created: register it (connecting first if needed). */
void shim_client_qp_created(struct shim_qp *q, struct ibv_qp *qp);
/* ibv_modify_qp succeeded: tell the daemon the port, state and peer. */
void shim_client_qp_modified(struct shim_qp *q, const struct ibv_qp_attr *attr, int mask);
/* The QP is about to be destroyed: unregister it. */
void shim_client_qp_destroyed(struct shim_qp *q);
/* The daemon's global segment (read-only), or NULL when not connected. */
const struct jst_shm_global *shim_client_global(void);
/* From the progress thread, every few ms: notice a dead daemon (then fail
 * open) and reconnect to a returned one (with backoff). */
void shim_client_poll(void);
/* justitia_set_qp_class(): remember and tell the daemon. */
int shim_client_set_class(struct shim_qp *q, int cls);
/* Copy the daemon's warning about @q (registration writes it, under the
 * client's lock) into @buf. */
void shim_client_qp_warning(struct shim_qp *q, char *buf, size_t len);
/* The shim classified @q itself (JUSTITIA_CLASS=auto): tell the daemon.
 * Blocks on the daemon's socket: never from a post path. */
int shim_client_report_class(struct shim_qp *q, int cls);
/* fork(): the child must not talk on the parent's connection. */
void shim_client_atfork_child(void);

#endif

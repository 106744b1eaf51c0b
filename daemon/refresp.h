/* SPDX-License-Identifier: MIT */
/* The reference flow's responder (refresp.c), for refflow.c. */
#ifndef JUSTITIAD_REFRESP_H
#define JUSTITIAD_REFRESP_H

#include <jansson.h>
#include <stdint.h>

#include "refflow.h"

/* The peer operations "ref_open" and "ref_close" (peer_handler_fn). */
void refresp_open(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq, json_t *args,
		  void *arg);
void refresp_close(struct peer_ctx *pc, struct peer *p, const struct peer_req *rq, json_t *args,
		   void *arg);
void refresp_free(struct refflow *rf, struct ref_responder *r);
void refresp_conn_closed(struct refflow *rf, uint64_t conn);

#endif

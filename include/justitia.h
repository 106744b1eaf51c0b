/* SPDX-License-Identifier: MIT */
/* justitia.h -- optional hints from an RDMA application to Justitia.
 *
 * Applications need not change to be managed by Justitia; this header only
 * lets one that knows better say what its QPs are.  The functions are
 * declared weak: a program that calls them links and runs without
 * libjustitia.so, where the calls are skipped:
 *
 *     if (justitia_set_qp_class)
 *             justitia_set_qp_class(qp, JUSTITIA_CLASS_LATENCY);
 *
 * A class set here is the strongest source (then the daemon's per-application
 * rules, then JUSTITIA_CLASS in the environment).  See libjustitia.so(7). */
#ifndef JUSTITIA_H
#define JUSTITIA_H

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

enum justitia_class {
	JUSTITIA_CLASS_LATENCY = 0,    /* each small message matters: never paced */
	JUSTITIA_CLASS_THROUGHPUT = 1, /* batches of small messages: paced by ops/s */
	JUSTITIA_CLASS_BANDWIDTH = 2,  /* large messages: split and paced by bytes/s */
};

struct justitia_qp_status {
	int managed;      /* registered with justitiad and paced as its class says */
	int cls;          /* enum justitia_class in effect */
	int split;        /* messages larger than chunk_bytes are split */
	unsigned chunk_bytes;
	unsigned long long rate_bps;   /* granted rate, 0 = unpaced */
	char warning[160];             /* e.g. soft admission control; "" if none */
};

/* Set the class of @qp.  0, or an errno value (EINVAL: unknown class or a
 * QP the shim does not know; EPERM: the operator's policy does not allow
 * this class for the application's user, justitiad.json(5) "tenants", and
 * the QP keeps its class). */
int justitia_set_qp_class(struct ibv_qp *qp, int cls) __attribute__((weak));

/* What Justitia does with @qp.  0, or an errno value. */
int justitia_qp_status(struct ibv_qp *qp, struct justitia_qp_status *st) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#endif

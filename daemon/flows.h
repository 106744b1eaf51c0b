/* SPDX-License-Identifier: MIT */
/* The flow registry: registered processes (one per control connection of a
 * shim) and their flows (one per QP), with their shared-memory slots. */
#ifndef JUSTITIAD_FLOWS_H
#define JUSTITIAD_FLOWS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "rreadmsg.h"
#include "share.h"
#include "shm.h"

struct proc;

struct flow {
	uint32_t id;
	uint32_t gslot;               /* slot in the global segment */
	uint32_t cslot;               /* slot in the owner's client segment */
	struct proc *proc;
	enum flow_class cls;
	int class_from_app;           /* the application asked for this class */
	int class_hint;               /* JUSTITIA_CLASS of the process, -1: none */
	int weight_from_app;
	char device[64];
	unsigned port;
	uint32_t qpn;
	char qp_type[16];
	uint32_t weight;
	int64_t peer_qpn;             /* -1: unknown */
	int64_t split_qpn;            /* the shim's split QP, -1: none */
	char split[12];               /* "none", "split", "pace_only" */
	char peer_gid[64];
	char local_gid[64];           /* the QP's own GID (from its AV's sgid) */
	char state[16];
	char warning[160];
	uint64_t rate_bps;            /* granted by the controller, 0 = unpaced */
	uint64_t ops_per_s;
	uint64_t wait_ns;             /* Appendix D hint */
	uint64_t grew_ns;             /* when its counters last grew (CLOCK_MONOTONIC) */
	int active;                   /* grew within the controller's window */
	uint32_t ctl_gen;             /* controller's cache: is @device the controlled */
	int ctl_dev;                  /* one (valid while ctl_gen matches) */
	struct shm_counters last;     /* last sane counters read from the shim */
	uint64_t read_ns;             /* when @last was read (or the slot zeroed) */
	int scribbled;                /* the shim wrote impossible counters: @last
				       * stays as it was, never read again */
	/* pace mode SHARE (controller.c, share.h): the last window */
	uint64_t win_bytes0, win_ops0;  /* counters at the window's start */
	uint64_t win_chunks0, win_wait0;
	uint32_t win_queued0;
	uint64_t meas_bps, meas_ops;    /* achieved over the last window */
	double meas_bound;              /* share of it spent waiting for tokens */
	double meas_queued;             /* ... with its work queued (share.h) */
	bool share_sat;                 /* judged limited by itself (share.h) */
	double share_fill;              /* its fill, averaged (share.h) */
	double share_sat_bps;           /* its use when judged satisfied (share.h) */
	uint32_t share_no_lend;         /* windows it may not be judged so (share.h) */
	struct share_boost share_boost; /* a throughput flow's, above its share */
	/* remote READ control, the requester's side (rread.c) */
	bool reads;                   /* the shim saw it post RDMA READs (JST_FS_READ) */
	struct flow_remote {
		int state;            /* enum flow_remote_state */
		uint64_t serial;      /* the connection it is registered on, 0: none */
		uint64_t grant_bps;   /* the responder's grant, 0: unconstrained */
		uint64_t grant_ops;   /* ... a throughput flow's, ops/s */
		uint32_t chunk;       /* the responder's chunk in force, 0: no say */
		struct rread_open sent; /* what the responder was told */
		bool busy;            /* a request in flight */
		uint64_t retry_ns;    /* refused: ask again then */
		char peer[96];        /* the responder's daemon, "" if none */
		char gid[64];         /* the peer GID it was registered for */
		char why[120];        /* why it is not registered */
	} remote;
	struct flow *next;            /* in proc */
};

/* flow.remote.state */
enum flow_remote_state {
	FLOW_REMOTE_NONE = 0,         /* not a remote READ flow (yet) */
	FLOW_REMOTE_PENDING,          /* registering with the responder's daemon */
	FLOW_REMOTE_REGISTERED,       /* registered: its grants apply */
	FLOW_REMOTE_UNMANAGED,        /* no responder daemon: unconstrained there */
	FLOW_REMOTE_REFUSED,          /* the responder's daemon said no (limits) */
};

struct proc {
	pid_t pid;
	uid_t uid;
	gid_t gid;                    /* the kernel's (SO_PEERCRED): tenant.h */
	char comm[16];
	struct shm_seg seg;           /* client segment (shim-written) */
	uint32_t n_cslots;
	struct flow **by_cslot;
	struct flow *flows;
	size_t n_flows;
	bool scribbler;               /* logged: it wrote impossible counters */
	struct proc *next;
};

struct flows_counts {
	size_t procs, flows, by_class[3];
};

struct flows {
	struct shm_seg global;
	uint32_t n_gslots;
	struct flow **by_gslot;
	struct flow **by_id;          /* flows_find's index: open addressing on the id */
	uint32_t id_mask;             /* its size - 1 (a power of two >= 2 * n_gslots) */
	struct proc *procs;
	uint32_t next_id;
	uint64_t instance;
	const struct config *cfg;
	int pace_mode;                /* enum jst_pace_mode, the controller's */
	/* told before a flow is freed (remote READ control: rread.c) */
	void (*on_free)(void *arg, struct flow *f);
	void *on_free_arg;
};

/* What a shim asks for in register_qp. */
struct flow_req {
	const char *device;
	unsigned port;
	uint32_t qpn;
	const char *qp_type;
	const char *cls;              /* the application's own choice (justitia.h) */
	const char *cls_hint;         /* JUSTITIA_CLASS: used when no rule matches */
	uint32_t weight;              /* 0: decided by the config */
	int64_t split_qpn;            /* -1: the shim made no split QP */
};

int flows_init(struct flows *fl, const struct config *cfg, uint64_t instance);
void flows_fini(struct flows *fl);
/* After a config reload: keep flows, re-derive classes and weights the
 * shims did not ask for explicitly. */
void flows_reconfigure(struct flows *fl, const struct config *cfg);

struct proc *flows_proc_new(struct flows *fl, pid_t pid, uid_t uid, const char *comm, int *err);
/* Free the process and every slot of its flows at once. */
void flows_proc_free(struct flows *fl, struct proc *p);

/* Register a QP.  NULL with a PROTO_E_* code and a message on failure. */
struct flow *flows_register(struct flows *fl, struct proc *p, const struct flow_req *req,
			    const char **code, char *msg, size_t msglen);
struct flow *flows_find(struct flows *fl, uint32_t id);
/* The split QP of the flow that owns QP @qpn with local GID @gid, or -1. */
int64_t flows_split_of(struct flows *fl, const char *gid, uint32_t qpn);
void flows_unregister(struct flows *fl, struct flow *f);
/* Re-publish a flow's slot after a change of class, weight or rates. */
void flows_publish(struct flows *fl, struct flow *f);
/* Re-publish every slot (the chunk size follows the latency flows). */
void flows_publish_all(struct flows *fl);
/* Who decided @f's class: "app", "rule", "hint" or "default". */
const char *flows_class_source(const struct flows *fl, const struct flow *f);
/* flows_publish() when the caller knows how many latency flows there are
 * (the controller republishes many slots per period). */
void flows_publish_counted(struct flows *fl, struct flow *f, size_t n_latency);

/* Read every flow's counters from the shims' segments (untrusted). */
void flows_poll_counters(struct flows *fl);
void flows_count(const struct flows *fl, struct flows_counts *c);
/* Every flow as a JSON array (flowsjson.c); polls the counters first. */
json_t *flows_to_json(struct flows *fl);

int flows_set_weight_pid(struct flows *fl, pid_t pid, uint32_t weight);
int flows_set_weight_flow(struct flows *fl, uint32_t id, uint32_t weight);

#endif

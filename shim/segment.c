// SPDX-License-Identifier: MIT
/* The daemon's shared-memory segments as the shim maps them (see
 * segment.h).  Daemon link layer; may call: nothing of the shim (the ABI in
 * common/shm_abi.h and the system only). */
#include "segment.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

/* Map a segment the daemon sent, if it is sealed as the ABI says: against
 * resizing (a shrunk segment would fault in the post path) and, for the
 * global one, against writes through any other mapping (so that no client
 * can rewrite the rates every other client reads). */
void *shim_segment_map(int fd, int prot, int seals, size_t *size)
{
	struct stat st;
	int have = fcntl(fd, F_GET_SEALS);
	void *p;

	seals |= F_SEAL_SHRINK | F_SEAL_GROW;
	if (have < 0 || (have & seals) != seals)
		return NULL;
	if (fstat(fd, &st) || st.st_size <= 0)
		return NULL;
	p = mmap(NULL, (size_t)st.st_size, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	*size = (size_t)st.st_size;
	return p;
}

/* The segments are an ABI: anything unexpected means "run unmanaged". */
int shim_segment_validate(const struct jst_shm_global *g, size_t gsize,
			  const struct jst_shm_client *c, size_t csize)
{
	if (gsize < sizeof(*g) || g->magic != JST_SHM_GLOBAL_MAGIC ||
	    g->version_major != JST_SHM_VERSION_MAJOR || g->header_size != sizeof(*g) ||
	    g->slot_size != sizeof(struct jst_flow_ctl) || g->total_size != gsize ||
	    jst_shm_global_size(g->n_slots) > gsize)
		return -EPROTO;
	if (csize < sizeof(*c) || c->magic != JST_SHM_CLIENT_MAGIC ||
	    c->version_major != JST_SHM_VERSION_MAJOR || c->header_size != sizeof(*c) ||
	    c->slot_size != sizeof(struct jst_flow_stats) || c->total_size != csize ||
	    jst_shm_client_size(c->n_slots) > csize || c->instance != g->instance)
		return -EPROTO;
	return 0;
}

/* Let go of a lost daemon's segments.  A post path may still hold a
 * pointer into them for a moment (until fail-open reaches its QP, and
 * after: a thread may have loaded the slot just before), so they are never
 * unmapped: they are replaced at once by private zero pages (the daemon's
 * memory is released; a late reader sees a free slot, a late writer counts
 * into nothing) and stay mapped for the life of the process.  That costs
 * address space, one pair of segments per daemon lost, and no memory but
 * the pages a late writer touched.  Unmapping them once the QPs point
 * elsewhere crashed a posting thread in 47-robust (dkill). */
void shim_segment_retire(void *p, size_t n)
{
	if (p)
		mmap(p, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	/* (if that failed, the daemon's pages stay mapped: still safe) */
}

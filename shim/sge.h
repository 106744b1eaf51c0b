/* SPDX-License-Identifier: MIT */
/* SGE arithmetic for split messages: which pieces of a message's
 * scatter/gather list cover a byte range (a chunk, a receive segment).
 * Pure; may call nothing. */
#ifndef JUSTITIA_SHIM_SGE_H
#define JUSTITIA_SHIM_SGE_H

#include <infiniband/verbs.h>
#include <stdint.h>

/* The SGEs covering bytes [@off, @off + @len) of the message @sg/@nsge,
 * into @out (at most @max).  Returns their number, or -1 if they do not
 * fit. */
static inline int shim_split_sges(const struct ibv_sge *sg, int nsge, uint64_t off,
				  uint64_t len, struct ibv_sge *out, int max)
{
	int n = 0;

	for (int i = 0; i < nsge && len; i++) {
		uint64_t l = sg[i].length, take;

		if (off >= l) {
			off -= l;
			continue;
		}
		if (n == max)
			return -1;
		take = l - off < len ? l - off : len;
		out[n].addr = sg[i].addr + off;
		out[n].length = (uint32_t)take;
		out[n].lkey = sg[i].lkey;
		n++;
		len -= take;
		off = 0;
	}
	return len ? -1 : n;
}

#endif

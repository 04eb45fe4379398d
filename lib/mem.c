/* SPDX-License-Identifier: MIT */
/* Registered slabs and accounted heap allocations. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ep.h"

#define RPCRDMA_CACHELINE 64

int rpcrdma_slab_create(struct rpcrdma_slab *slab, struct ibv_pd *pd, uint32_t count,
			size_t bufsize, int access)
{
	size_t bytes;

	memset(slab, 0, sizeof(*slab));
	bufsize = (bufsize + RPCRDMA_CACHELINE - 1) & ~(size_t)(RPCRDMA_CACHELINE - 1);
	if (count == 0 || bufsize == 0 || bufsize > SIZE_MAX / count)
		return -EINVAL;
	bytes = bufsize * count;
	slab->base = aligned_alloc(RPCRDMA_CACHELINE, bytes);
	if (!slab->base)
		return -ENOMEM;
	memset(slab->base, 0, bytes);
	slab->mr = ibv_reg_mr(pd, slab->base, bytes, access);
	if (!slab->mr) {
		int rc = rpcrdma_errno(-ENOMEM);

		free(slab->base);
		slab->base = NULL;
		return rc;
	}
	slab->bufsize = bufsize;
	slab->count = count;
	return 0;
}

void rpcrdma_slab_dereg(struct rpcrdma_slab *slab)
{
	if (slab->mr) {
		int rc = ibv_dereg_mr(slab->mr);

		if (rc)
			rpcrdma_err("ibv_dereg_mr failed: %s", strerror(rc));
		slab->mr = NULL;
	}
}

void rpcrdma_slab_free(struct rpcrdma_slab *slab)
{
	rpcrdma_slab_dereg(slab);
	free(slab->base);
	slab->base = NULL;
	slab->count = 0;
}

void *rpcrdma_zalloc(struct rpcrdma_stats *stats, size_t size)
{
	void *p = calloc(1, size);

	if (p && stats)
		stats->heap_bytes += size;
	return p;
}

void rpcrdma_free(struct rpcrdma_stats *stats, void *p, size_t size)
{
	if (!p)
		return;
	if (stats)
		stats->heap_bytes -= size;
	free(p);
}

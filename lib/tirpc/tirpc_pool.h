/* SPDX-License-Identifier: MIT */
/* The registered buffer pool of rpcrdma_svc_buf_alloc() (tirpc_pool.c). */
#ifndef RPCRDMA_TIRPC_POOL_H
#define RPCRDMA_TIRPC_POOL_H

#include <stddef.h>

#include <rpcrdma/svc.h>

#include "mem.h"

struct tpool;
struct tpool_buf;

/* A pool whose buffers are registered with @native's PDs. */
struct tpool *tpool_create(struct rpcrdma_svc *native);
/* The server is being freed (its sv_on_free hook): deregister, free what is unused. */
void tpool_retire(void *pool);

/* A buffer of @len bytes; @p NULL: plain memory, freed alike. NULL with errno. */
void *tpool_alloc(struct tpool *p, size_t len);
/* The service gives back a buffer of tpool_alloc(): 0, or -ENOENT (not one; untouched). */
int tpool_free(void *data);

/* A reference for a reply sending from @data, or NULL (not a registered buffer of @p). */
struct tpool_buf *tpool_take(struct tpool *p, const void *data, size_t len,
			     const struct rpcrdma_mem **mem);
/* Drop a reference of tpool_take() (a payload release callback). */
void tpool_buf_put(void *buf);

#endif /* RPCRDMA_TIRPC_POOL_H */

/* SPDX-License-Identifier: MIT */
/*
 * Application memory registered with the library (struct rpcrdma_mem): one
 * MR per protection domain the owner uses, found again by address when a
 * call or a reply names a buffer inside it.
 */
#ifndef RPCRDMA_REGMEM_H
#define RPCRDMA_REGMEM_H

#include <stddef.h>

#include <infiniband/verbs.h>

#include <rpcrdma/rpcrdma.h>

#include "list.h"

#define RPCRDMA_MEM_MAX_MRS 8

struct rpcrdma_mem {
	struct list_node rm_node;	/* the owner's list of registrations */
	unsigned char *rm_addr;
	size_t rm_len;
	unsigned int rm_nmrs;
	struct ibv_mr *rm_mrs[RPCRDMA_MEM_MAX_MRS];
	unsigned int rm_users;		/* calls or replies in flight inside it */
	struct rpcrdma_stats *rm_stats;
};

/*
 * Register [@addr, @addr + @len) under each of @npds PDs with @access and
 * add it to @list. Returns 0 or -errno.
 */
int rpcrdma_mem_create(struct list_node *list, struct rpcrdma_stats *stats, void *addr,
		       size_t len, struct ibv_pd **pds, unsigned int npds, int access,
		       struct rpcrdma_mem **out);

/*
 * The registration in @list that covers [@addr, @addr + @len) entirely,
 * with its MR under @pd, or NULL.
 */
struct rpcrdma_mem *rpcrdma_mem_find(struct list_node *list, const void *addr, size_t len,
				     struct ibv_pd *pd, struct ibv_mr **mr);

/* Deregister everything left on @list (owner teardown). */
void rpcrdma_mem_destroy_all(struct list_node *list);

/*
 * A registered buffer the library allocates for itself: bounce buffers,
 * Read sinks, long replies. Page aligned, so that its memory can also be
 * handed to the application and released with free().
 */
struct rpcrdma_buf {
	unsigned char *data;
	size_t len;
	struct ibv_mr *mr;
};

int rpcrdma_buf_alloc(struct rpcrdma_buf *buf, struct ibv_pd *pd, size_t len, int access,
		      struct rpcrdma_stats *stats);
void rpcrdma_buf_free(struct rpcrdma_buf *buf, struct rpcrdma_stats *stats);
/* Deregister, keeping the memory until rpcrdma_buf_free(). */
void rpcrdma_buf_dereg(struct rpcrdma_buf *buf, struct rpcrdma_stats *stats);
/* Deregister but keep the memory (for the application); returns it. */
void *rpcrdma_buf_detach(struct rpcrdma_buf *buf, struct rpcrdma_stats *stats);

#endif /* RPCRDMA_REGMEM_H */

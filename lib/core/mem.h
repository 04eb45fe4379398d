/* SPDX-License-Identifier: MIT */
/*
 * Registered memory: slabs of equal buffers registered as one region (the
 * transports' send and receive buffers); application memory registered
 * with the library (struct rpcrdma_mem), one MR per protection domain,
 * found again by address when a call or a reply names a buffer inside it;
 * and the library's own registered buffers (bounce buffers, Read sinks,
 * long replies).
 */
#ifndef RPCRDMA_MEM_H
#define RPCRDMA_MEM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <rpcrdma/base.h>

#include "list.h"

/* A slab of equal buffers registered as one memory region. */
struct rpcrdma_slab {
	unsigned char *base;
	size_t bufsize;
	uint32_t count;
	struct ibv_mr *mr;
};

/*
 * Allocate @count buffers of @bufsize bytes (rounded up to a cache line) and
 * register them under @pd with @access. Returns 0 or -errno.
 */
int rpcrdma_slab_create(struct rpcrdma_slab *slab, struct ibv_pd *pd, uint32_t count,
			size_t bufsize, int access);
/* Deregister (verbs teardown); the memory stays until rpcrdma_slab_free(). */
void rpcrdma_slab_dereg(struct rpcrdma_slab *slab);
void rpcrdma_slab_free(struct rpcrdma_slab *slab);

static inline unsigned char *rpcrdma_slab_buf(const struct rpcrdma_slab *slab, uint32_t i)
{
	return slab->base + (size_t)i * slab->bufsize;
}

static inline uint32_t rpcrdma_slab_lkey(const struct rpcrdma_slab *slab)
{
	return slab->mr->lkey;
}

static inline size_t rpcrdma_slab_bytes(const struct rpcrdma_slab *slab)
{
	return slab->bufsize * slab->count;
}

#define RPCRDMA_MEM_MAX_MRS 8

struct rpcrdma_mem {
	struct list_node rm_node;	/* the owner's list of registrations */
	unsigned char *rm_addr;
	size_t rm_len;
	unsigned int rm_nmrs;
	struct ibv_mr *rm_mrs[RPCRDMA_MEM_MAX_MRS];
	atomic_uint rm_users;		/* calls or replies in flight inside it */
	struct rpcrdma_stats *rm_stats;
	pthread_rwlock_t *rm_lock;	/* the list's, when several threads share it */
};

/* @mem's MR under @pd, or NULL. */
struct ibv_mr *rpcrdma_mem_mr(const struct rpcrdma_mem *mem, const struct ibv_pd *pd);

/*
 * Register [@addr, @addr + @len) under each of @npds PDs with @access and
 * add it to @list. Returns 0 or -errno.
 */
int rpcrdma_mem_create(struct list_node *list, struct rpcrdma_stats *stats, void *addr,
		       size_t len, struct ibv_pd **pds, unsigned int npds, int access,
		       struct rpcrdma_mem **out);
/*
 * The same for a list that @lock guards, read by other threads (a server's
 * pollers): the region joins the list under the write lock, and
 * rpcrdma_mem_deregister() takes it too. Not accounted in any stats.
 */
int rpcrdma_mem_create_shared(struct list_node *list, pthread_rwlock_t *lock, void *addr,
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
	size_t len;			/* accounted and registered: the bytes in use */
	struct ibv_mr *mr;
	size_t map_len;			/* rpcrdma_buf_reserve()'s mapping, else 0 */
};

int rpcrdma_buf_alloc(struct rpcrdma_buf *buf, struct ibv_pd *pd, size_t len, int access,
		      struct rpcrdma_stats *stats);
void rpcrdma_buf_free(struct rpcrdma_buf *buf, struct rpcrdma_stats *stats);
/*
 * Room for @len bytes that costs nothing until written: an anonymous
 * mapping, neither registered nor accounted until rpcrdma_buf_reg_prefix().
 * For a reply encoded in place, whose size the peer bounds (a Reply chunk)
 * but whose length only the application knows. Never detached.
 */
int rpcrdma_buf_reserve(struct rpcrdma_buf *buf, size_t len);
/*
 * Register and account at least the first @len bytes of a reserved @buf: a
 * buffer reused for another reply keeps its registration when it covers
 * them, and is registered anew, longer, when it does not.
 */
int rpcrdma_buf_reg_prefix(struct rpcrdma_buf *buf, struct ibv_pd *pd, size_t len, int access,
			   struct rpcrdma_stats *stats);
/* Deregister, keeping the memory until rpcrdma_buf_free(). */
void rpcrdma_buf_dereg(struct rpcrdma_buf *buf, struct rpcrdma_stats *stats);
/* Deregister but keep the memory (for the application); returns it. */
void *rpcrdma_buf_detach(struct rpcrdma_buf *buf, struct rpcrdma_stats *stats);

/* A transparent huge page: copies between processes pin one page per this many bytes. */
#define RPCRDMA_HUGE_PAGE (2u << 20)
/*
 * Two registered buffers of RPCRDMA_HUGE_PAGE / 2 bytes, the halves of one
 * mapping advised for a huge page: each is freed on its own
 * (rpcrdma_buf_free() unmaps its half). 0 or -errno.
 */
int rpcrdma_buf_alloc_halves(struct rpcrdma_buf *a, struct rpcrdma_buf *b, struct ibv_pd *pd,
			     int access, struct rpcrdma_stats *stats);
/*
 * A detached mapped buffer (map_len) handed to the application: remembered,
 * so that rpcrdma_buf_release_kept() unmaps it where free() would fail.
 * 0 or -ENOMEM.
 */
int rpcrdma_buf_keep_mapped(void *data, size_t map_len);
/* Release memory the application was given: unmapped if remembered, else free(). */
void rpcrdma_buf_release_kept(void *data);

#endif /* RPCRDMA_MEM_H */

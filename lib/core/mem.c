/* SPDX-License-Identifier: MIT */
/* Registered memory (mem.h) and accounted heap allocations. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rpcrdma/base.h>

#include "mem.h"
#include "stat.h"
#include "util.h"

#define RPCRDMA_CACHELINE 64

/*
 * @bytes of memory aligned to @align, registered on @pd with @access:
 * *@base and *@mr, or -errno with nothing allocated (and *@base NULL).
 */
static int rpcrdma_alloc_reg(struct ibv_pd *pd, size_t align, size_t bytes, int access,
			     unsigned char **base, struct ibv_mr **mr)
{
	*base = aligned_alloc(align, bytes);
	if (!*base)
		return -ENOMEM;
	*mr = ibv_reg_mr(pd, *base, bytes, access);
	if (!*mr) {
		int rc = rpcrdma_errno(-ENOMEM);

		free(*base);
		*base = NULL;
		return rc;
	}
	return 0;
}

int rpcrdma_slab_create(struct rpcrdma_slab *slab, struct ibv_pd *pd, uint32_t count,
			size_t bufsize, int access)
{
	size_t bytes;
	int rc;

	memset(slab, 0, sizeof(*slab));
	bufsize = (bufsize + RPCRDMA_CACHELINE - 1) & ~(size_t)(RPCRDMA_CACHELINE - 1);
	if (count == 0 || bufsize == 0 || bufsize > SIZE_MAX / count)
		return -EINVAL;
	bytes = bufsize * count;
	rc = rpcrdma_alloc_reg(pd, RPCRDMA_CACHELINE, bytes, access, &slab->base, &slab->mr);
	if (rc)
		return rc;
	memset(slab->base, 0, bytes);
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

#define RPCRDMA_PAGE 4096

/* Register @mem's MRs, @mem allocated and accounted in @stats. */
static int rpcrdma_mem_new(struct rpcrdma_stats *stats, void *addr, size_t len,
			   struct ibv_pd **pds, unsigned int npds, int access,
			   struct rpcrdma_mem **out)
{
	struct rpcrdma_mem *mem;
	unsigned int i;

	if (!addr || !len || (uintptr_t)addr + len < (uintptr_t)addr || npds > RPCRDMA_MEM_MAX_MRS)
		return -EINVAL;
	mem = rpcrdma_zalloc(stats, sizeof(*mem));
	if (!mem)
		return -ENOMEM;
	mem->rm_addr = addr;
	mem->rm_len = len;
	mem->rm_stats = stats;
	for (i = 0; i < npds; i++) {
		mem->rm_mrs[i] = ibv_reg_mr(pds[i], addr, len, access);
		if (!mem->rm_mrs[i]) {
			int rc = rpcrdma_errno(-ENOMEM);

			while (i--)
				ibv_dereg_mr(mem->rm_mrs[i]);
			rpcrdma_free(stats, mem, sizeof(*mem));
			return rc;
		}
	}
	mem->rm_nmrs = npds;
	*out = mem;
	return 0;
}

int rpcrdma_mem_create(struct list_node *list, struct rpcrdma_stats *stats, void *addr,
		       size_t len, struct ibv_pd **pds, unsigned int npds, int access,
		       struct rpcrdma_mem **out)
{
	int rc = rpcrdma_mem_new(stats, addr, len, pds, npds, access, out);

	if (!rc)
		list_add_tail(&(*out)->rm_node, list);
	return rc;
}

int rpcrdma_mem_create_shared(struct list_node *list, pthread_rwlock_t *lock, void *addr,
			      size_t len, struct ibv_pd **pds, unsigned int npds, int access,
			      struct rpcrdma_mem **out)
{
	/* Registered outside the lock: ibv_reg_mr() may take long, lookups go on. */
	int rc = rpcrdma_mem_new(NULL, addr, len, pds, npds, access, out);

	if (rc)
		return rc;
	(*out)->rm_lock = lock;
	pthread_rwlock_wrlock(lock);
	list_add_tail(&(*out)->rm_node, list);
	pthread_rwlock_unlock(lock);
	return 0;
}

struct ibv_mr *rpcrdma_mem_mr(const struct rpcrdma_mem *mem, const struct ibv_pd *pd)
{
	unsigned int i;

	for (i = 0; i < mem->rm_nmrs; i++)
		if (mem->rm_mrs[i]->pd == pd)
			return mem->rm_mrs[i];
	return NULL;
}

struct rpcrdma_mem *rpcrdma_mem_find(struct list_node *list, const void *addr, size_t len,
				     struct ibv_pd *pd, struct ibv_mr **mr)
{
	const unsigned char *p = addr;
	struct list_node *pos;

	list_for_each(pos, list) {
		struct rpcrdma_mem *mem = list_entry(pos, struct rpcrdma_mem, rm_node);

		if (p < mem->rm_addr || len > mem->rm_len ||
		    (size_t)(p - mem->rm_addr) > mem->rm_len - len)
			continue;
		*mr = rpcrdma_mem_mr(mem, pd);
		if (*mr)
			return mem;
	}
	return NULL;
}

/* Off its list already: deregister and free. */
static void rpcrdma_mem_free(struct rpcrdma_mem *mem)
{
	unsigned int i;

	for (i = 0; i < mem->rm_nmrs; i++)
		ibv_dereg_mr(mem->rm_mrs[i]);
	rpcrdma_free(mem->rm_stats, mem, sizeof(*mem));
}

RPCRDMA_EXPORT int rpcrdma_mem_deregister(struct rpcrdma_mem *mem)
{
	pthread_rwlock_t *lock;
	bool busy;

	if (!mem)
		return 0;
	lock = mem->rm_lock;
	/* Under the lock a poller cannot find it and take a use meanwhile. */
	if (lock)
		pthread_rwlock_wrlock(lock);
	busy = atomic_load(&mem->rm_users) != 0;
	if (!busy)
		list_del(&mem->rm_node);
	if (lock)
		pthread_rwlock_unlock(lock);
	if (busy)
		return -EBUSY;
	rpcrdma_mem_free(mem);
	return 0;
}

void rpcrdma_mem_destroy_all(struct list_node *list)
{
	struct rpcrdma_mem *mem;

	while ((mem = list_pop_entry(list, struct rpcrdma_mem, rm_node)))
		rpcrdma_mem_free(mem);
}

int rpcrdma_buf_alloc(struct rpcrdma_buf *buf, struct ibv_pd *pd, size_t len, int access,
		      struct rpcrdma_stats *stats)
{
	size_t bytes = (len + RPCRDMA_PAGE - 1) & ~(size_t)(RPCRDMA_PAGE - 1);
	int rc;

	memset(buf, 0, sizeof(*buf));
	if (!len || bytes < len)
		return -EINVAL;
	rc = rpcrdma_alloc_reg(pd, RPCRDMA_PAGE, bytes, access, &buf->data, &buf->mr);
	if (rc)
		return rc;
	buf->len = len;
	rpcrdma_count_add(stats->heap_bytes, bytes);
	rpcrdma_count_add(stats->registered_bytes, bytes);
	return 0;
}

static size_t rpcrdma_buf_bytes(const struct rpcrdma_buf *buf)
{
	return (buf->len + RPCRDMA_PAGE - 1) & ~(size_t)(RPCRDMA_PAGE - 1);
}

/* One huge page's worth of address space, aligned to it: twice the size, trimmed. NULL if none. */
static unsigned char *rpcrdma_huge_map(int flags)
{
	const size_t huge = RPCRDMA_HUGE_PAGE;
	unsigned char *p, *aligned;

	p = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	aligned = (unsigned char *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
	if (aligned > p)
		munmap(p, (size_t)(aligned - p));
	munmap(aligned + huge, (size_t)(p + 2 * huge - (aligned + huge)));
	return aligned;
}

int rpcrdma_buf_alloc_halves(struct rpcrdma_buf *a, struct rpcrdma_buf *b, struct ibv_pd *pd,
			     int access, struct rpcrdma_stats *stats)
{
	const size_t huge = RPCRDMA_HUGE_PAGE, half = huge / 2;
	struct rpcrdma_buf *bufs[2] = { a, b };
	unsigned char *aligned;
	unsigned int i;

	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	aligned = rpcrdma_huge_map(0);
	if (!aligned)
		return -ENOMEM;
	/* Advice only: without huge pages the halves work as any mapping. */
	(void)madvise(aligned, huge, MADV_HUGEPAGE);
	for (i = 0; i < 2; i++) {
		struct rpcrdma_buf *buf = bufs[i];

		buf->data = aligned + i * half;
		buf->map_len = half;
		buf->mr = ibv_reg_mr(pd, buf->data, half, access);
		if (!buf->mr) {
			int rc = rpcrdma_errno(-ENOMEM);

			/* Deregistered and unaccounted; both halves go with the mapping. */
			rpcrdma_buf_detach(a, stats);
			memset(b, 0, sizeof(*b));
			munmap(aligned, huge);
			return rc;
		}
		buf->len = half;
		rpcrdma_count_add(stats->heap_bytes, half);
		rpcrdma_count_add(stats->registered_bytes, half);
	}
	return 0;
}

/* Mapped buffers the application keeps (rpcrdma_buf_keep_mapped()), hashed by their megabyte. */
struct rpcrdma_kept {
	struct rpcrdma_kept *next;
	void *data;
	size_t len;
};
#define RPCRDMA_KEPT_BUCKETS 64
static pthread_mutex_t rpcrdma_kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rpcrdma_kept *rpcrdma_kept_table[RPCRDMA_KEPT_BUCKETS];

static struct rpcrdma_kept **rpcrdma_kept_bucket(const void *data)
{
	return &rpcrdma_kept_table[((uintptr_t)data >> 20) % RPCRDMA_KEPT_BUCKETS];
}

int rpcrdma_buf_keep_mapped(void *data, size_t map_len)
{
	struct rpcrdma_kept *k = malloc(sizeof(*k));

	if (!k)
		return -ENOMEM;
	k->data = data;
	k->len = map_len;
	pthread_mutex_lock(&rpcrdma_kept_lock);
	k->next = *rpcrdma_kept_bucket(data);
	*rpcrdma_kept_bucket(data) = k;
	pthread_mutex_unlock(&rpcrdma_kept_lock);
	return 0;
}

void rpcrdma_buf_release_kept(void *data)
{
	struct rpcrdma_kept **pp, *k = NULL;

	if (!data)
		return;
	pthread_mutex_lock(&rpcrdma_kept_lock);
	for (pp = rpcrdma_kept_bucket(data); *pp; pp = &(*pp)->next) {
		if ((*pp)->data == data) {
			k = *pp;
			*pp = k->next;
			break;
		}
	}
	pthread_mutex_unlock(&rpcrdma_kept_lock);
	if (!k) {
		free(data);
		return;
	}
	munmap(k->data, k->len);
	free(k);
}

int rpcrdma_buf_reserve(struct rpcrdma_buf *buf, size_t len)
{
	size_t bytes = (len + RPCRDMA_PAGE - 1) & ~(size_t)(RPCRDMA_PAGE - 1);
	void *p;

	memset(buf, 0, sizeof(*buf));
	if (!len || bytes < len)
		return -EINVAL;
	/* Room that a long reply could fill enough to be worth a huge page (rpcrdma_buf_reg_prefix()). */
	if (bytes > RPCRDMA_HUGE_PAGE / 4 && bytes <= RPCRDMA_HUGE_PAGE) {
		buf->data = rpcrdma_huge_map(MAP_NORESERVE);
		buf->map_len = RPCRDMA_HUGE_PAGE;
		return buf->data ? 0 : -ENOMEM;
	}
	/* Untouched pages take no memory: a peer's large Reply chunk costs address space only. */
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	buf->data = p;
	buf->map_len = bytes;
	return 0;
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25	/* Linux 6.1; older headers lack it */
#endif

/*
 * A reply of more than a quarter of a huge page was written into a
 * reservation of one: make it one huge page, at the cost of a copy once
 * per kept buffer. Between processes softrdma's copies then pin one page
 * instead of 512, and an RNIC maps it with one translation. A reservation
 * that only ever carries short replies keeps its few small pages: advising
 * it at the start would have put 2 MiB behind every connection's first
 * long reply, however short. Advice only: refused, the pages stay small.
 */
static void rpcrdma_buf_make_huge(struct rpcrdma_buf *buf, size_t bytes)
{
	if (bytes <= RPCRDMA_HUGE_PAGE / 4 || buf->map_len != RPCRDMA_HUGE_PAGE ||
	    ((uintptr_t)buf->data & (RPCRDMA_HUGE_PAGE - 1)))
		return;
	if (madvise(buf->data, RPCRDMA_HUGE_PAGE, MADV_HUGEPAGE) == 0)
		(void)madvise(buf->data, RPCRDMA_HUGE_PAGE, MADV_COLLAPSE);
}

int rpcrdma_buf_reg_prefix(struct rpcrdma_buf *buf, struct ibv_pd *pd, size_t len, int access,
			   struct rpcrdma_stats *stats)
{
	size_t bytes = (len + RPCRDMA_PAGE - 1) & ~(size_t)(RPCRDMA_PAGE - 1);

	if (!buf->map_len || bytes > buf->map_len)
		return -EINVAL;
	if (!bytes)
		bytes = RPCRDMA_PAGE;
	/* A reused buffer keeps the registration of an earlier reply when it is long enough. */
	if (buf->mr && buf->len >= bytes)
		return 0;
	if (buf->mr) {
		rpcrdma_buf_dereg(buf, stats);
		rpcrdma_count_sub(stats->heap_bytes, rpcrdma_buf_bytes(buf));
	}
	buf->len = 0;
	rpcrdma_buf_make_huge(buf, bytes);
	buf->mr = ibv_reg_mr(pd, buf->data, bytes, access);
	if (!buf->mr)
		return rpcrdma_errno(-ENOMEM);
	buf->len = bytes;
	rpcrdma_count_add(stats->heap_bytes, bytes);
	rpcrdma_count_add(stats->registered_bytes, bytes);
	return 0;
}

void rpcrdma_buf_dereg(struct rpcrdma_buf *buf, struct rpcrdma_stats *stats)
{
	if (buf->mr) {
		ibv_dereg_mr(buf->mr);
		rpcrdma_count_sub(stats->registered_bytes, rpcrdma_buf_bytes(buf));
		buf->mr = NULL;
	}
}

void *rpcrdma_buf_detach(struct rpcrdma_buf *buf, struct rpcrdma_stats *stats)
{
	void *data = buf->data;

	rpcrdma_buf_dereg(buf, stats);
	if (data)
		rpcrdma_count_sub(stats->heap_bytes, rpcrdma_buf_bytes(buf));
	memset(buf, 0, sizeof(*buf));
	return data;
}

void rpcrdma_buf_free(struct rpcrdma_buf *buf, struct rpcrdma_stats *stats)
{
	size_t map_len = buf->map_len;
	void *data;

	if (!buf->data)
		return;
	data = rpcrdma_buf_detach(buf, stats);
	if (map_len)
		munmap(data, map_len);
	else
		free(data);
}

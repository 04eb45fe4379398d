/* SPDX-License-Identifier: MIT */
/*
 * The registered buffer pool of rpcrdma_svc_buf_alloc(): buffers a service
 * fills with DDP-eligible results (NFS READ data) that a reply then sends
 * by RDMA Write with no copy.
 *
 * Each buffer is page-aligned memory registered with every PD of its
 * listener's server, in size classes of 4 KiB to 4 MiB kept for reuse. A
 * buffer has a count of references: the service's, from allocation to
 * rpcrdma_svc_buf_free(), and one per reply sending from it, dropped at
 * that reply's Send completion (tpool_buf_put()). One process-wide table
 * maps a buffer's address to its header, so that freeing needs no
 * transport and a reply can recognize a pool buffer among its results.
 *
 * The registrations go before the server's PDs do: the server calls
 * tpool_retire() when it is freed, which deregisters everything; buffers
 * still held are plain memory from then on.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/clnt.h>

#include "list.h"
#include "mem.h"
#include "svc_rdma.h"
#include "tirpc_pool.h"
#include "util.h"

#define TPOOL_MIN_SHIFT 12		/* the smallest class: 4 KiB */
#define TPOOL_CLASSES 11		/* ... to 4 MiB */
#define TPOOL_CACHE 64			/* free buffers kept per class */
#define TPOOL_BUCKETS 1024
#define TPOOL_PAGE 4096

struct tpool_buf {
	unsigned char *data;
	size_t cap;
	int cls;			/* -1: larger than every class, never cached */
	atomic_uint refs;
	struct tpool *pool;		/* NULL: plain memory */
	struct rpcrdma_mem *mem;	/* NULL: not registered */
	struct tpool_buf *next;		/* its class's free list */
	struct tpool_buf *hnext;	/* tpool_table */
};

struct tpool {
	pthread_mutex_t lock;
	struct rpcrdma_svc *native;	/* NULL once retired */
	struct list_node mems;
	struct tpool_buf *free[TPOOL_CLASSES];
	unsigned int nfree[TPOOL_CLASSES];
	unsigned int held;		/* buffers allocated and not yet back */
};

static pthread_mutex_t tpool_table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tpool_buf *tpool_table[TPOOL_BUCKETS];

/*
 * Buffers of transports that are not ours (TCP): plain memory, kept too,
 * a few per class up to 1 MiB (8 MiB at most in all), so that a service
 * over TCP does not map, fault in and unmap a fresh megabyte per READ.
 */
#define TPOOL_PLAIN_CLASSES 9		/* 4 KiB to 1 MiB */
#define TPOOL_PLAIN_CACHE 4
static pthread_mutex_t tpool_plain_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tpool_buf *tpool_plain[TPOOL_PLAIN_CLASSES];
static unsigned int tpool_nplain[TPOOL_PLAIN_CLASSES];

static size_t tpool_bucket(const void *data)
{
	return ((uintptr_t)data >> TPOOL_MIN_SHIFT) % TPOOL_BUCKETS;
}

static void tpool_table_add(struct tpool_buf *b)
{
	size_t h = tpool_bucket(b->data);

	pthread_mutex_lock(&tpool_table_lock);
	b->hnext = tpool_table[h];
	tpool_table[h] = b;
	pthread_mutex_unlock(&tpool_table_lock);
}

/* The header of the buffer that starts at @data, taken out of the table with @remove. */
static struct tpool_buf *tpool_table_find(const void *data, bool remove)
{
	struct tpool_buf **link = &tpool_table[tpool_bucket(data)], *b;

	pthread_mutex_lock(&tpool_table_lock);
	while ((b = *link) && b->data != data)
		link = &b->hnext;
	if (b && remove)
		*link = b->hnext;
	pthread_mutex_unlock(&tpool_table_lock);
	return b;
}

static int tpool_class(size_t len, size_t *cap)
{
	int cls;

	for (cls = 0; cls < TPOOL_CLASSES; cls++) {
		*cap = (size_t)1 << (TPOOL_MIN_SHIFT + cls);
		if (len <= *cap)
			return cls;
	}
	*cap = (len + TPOOL_PAGE - 1) & ~(size_t)(TPOOL_PAGE - 1);
	return -1;
}

struct tpool *tpool_create(struct rpcrdma_svc *native)
{
	struct tpool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	list_init(&p->mems);
	p->native = native;
	return p;
}

/* Register @b with every PD of the server; plain memory if that fails. */
static void tpool_register_locked(struct tpool *p, struct tpool_buf *b)
{
	if (svc_rdma_mem_register_on(p->native, &p->mems, b->data, b->cap, &b->mem))
		b->mem = NULL;
}

static struct tpool_buf *tpool_new_buf(struct tpool *p, size_t len)
{
	struct tpool_buf *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->cls = tpool_class(len, &b->cap);
	b->data = aligned_alloc(TPOOL_PAGE, b->cap);
	if (!b->data) {
		free(b);
		return NULL;
	}
	b->pool = p;
	return b;
}

void *tpool_alloc(struct tpool *p, size_t len)
{
	struct tpool_buf *b = NULL;
	size_t cap;
	int cls = tpool_class(len ? len : 1, &cap);

	if (p) {
		pthread_mutex_lock(&p->lock);
		if (cls >= 0 && p->free[cls]) {
			b = p->free[cls];
			p->free[cls] = b->next;
			p->nfree[cls]--;
		}
		pthread_mutex_unlock(&p->lock);
	} else if (cls >= 0 && cls < TPOOL_PLAIN_CLASSES) {
		pthread_mutex_lock(&tpool_plain_lock);
		if ((b = tpool_plain[cls])) {
			tpool_plain[cls] = b->next;
			tpool_nplain[cls]--;
		}
		pthread_mutex_unlock(&tpool_plain_lock);
	}
	if (!b) {
		b = tpool_new_buf(p, len ? len : 1);
		if (!b) {
			errno = ENOMEM;
			return NULL;
		}
		if (p) {
			pthread_mutex_lock(&p->lock);
			if (p->native)
				tpool_register_locked(p, b);
			pthread_mutex_unlock(&p->lock);
		}
	}
	atomic_store(&b->refs, 1);
	if (p) {
		pthread_mutex_lock(&p->lock);
		p->held++;
		pthread_mutex_unlock(&p->lock);
	}
	tpool_table_add(b);
	return b->data;
}

static void tpool_buf_destroy(struct tpool_buf *b)
{
	if (b->mem)
		rpcrdma_mem_deregister(b->mem);
	free(b->data);
	free(b);
}

static void tpool_free_pool(struct tpool *p)
{
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* The last reference is gone: back to its class, or freed. */
static void tpool_buf_done(struct tpool_buf *b)
{
	struct tpool *p = b->pool;
	bool free_pool = false;

	if (!p) {
		if (b->cls >= 0 && b->cls < TPOOL_PLAIN_CLASSES && !b->mem) {
			pthread_mutex_lock(&tpool_plain_lock);
			if (tpool_nplain[b->cls] < TPOOL_PLAIN_CACHE) {
				b->next = tpool_plain[b->cls];
				tpool_plain[b->cls] = b;
				tpool_nplain[b->cls]++;
				b = NULL;
			}
			pthread_mutex_unlock(&tpool_plain_lock);
		}
		if (b)
			tpool_buf_destroy(b);
		return;
	}
	pthread_mutex_lock(&p->lock);
	p->held--;
	if (p->native && b->cls >= 0 && b->mem && p->nfree[b->cls] < TPOOL_CACHE) {
		b->next = p->free[b->cls];
		p->free[b->cls] = b;
		p->nfree[b->cls]++;
		b = NULL;
	} else if (b->mem) {
		rpcrdma_mem_deregister(b->mem);
		b->mem = NULL;
	}
	free_pool = !p->native && !p->held;
	pthread_mutex_unlock(&p->lock);
	if (b) {
		free(b->data);
		free(b);
	}
	if (free_pool)
		tpool_free_pool(p);
}

void tpool_buf_put(void *arg)
{
	struct tpool_buf *b = arg;

	if (atomic_fetch_sub(&b->refs, 1) == 1)
		tpool_buf_done(b);
}

int tpool_free(void *data)
{
	struct tpool_buf *b;

	if (!data)
		return 0;
	b = tpool_table_find(data, true);
	if (!b)
		return -ENOENT;
	tpool_buf_put(b);
	return 0;
}

/*
 * A reply sends @len bytes at @data: if that is the start of a registered
 * pool buffer of @p's, take a reference for the reply and say which
 * registration to send from. Returns the buffer (the argument of
 * tpool_buf_put()), or NULL: not one, the reply copies.
 */
struct tpool_buf *tpool_take(struct tpool *p, const void *data, size_t len,
			     const struct rpcrdma_mem **mem)
{
	struct tpool_buf *b;

	if (!p || !data)
		return NULL;
	pthread_mutex_lock(&tpool_table_lock);
	for (b = tpool_table[tpool_bucket(data)]; b && b->data != data; b = b->hnext)
		;
	if (b && (b->pool != p || !b->mem || len > b->cap))
		b = NULL;
	if (b)
		atomic_fetch_add(&b->refs, 1);
	pthread_mutex_unlock(&tpool_table_lock);
	if (b)
		*mem = b->mem;
	return b;
}

/*
 * The server is being freed: its PDs go next. Deregister everything;
 * buffers the service still holds stay valid as plain memory, and the
 * pool itself goes with the last of them.
 */
void tpool_retire(void *arg)
{
	struct tpool *p = arg;
	struct tpool_buf *b;
	bool free_pool;
	int cls;

	pthread_mutex_lock(&p->lock);
	for (cls = 0; cls < TPOOL_CLASSES; cls++) {
		while ((b = p->free[cls])) {
			p->free[cls] = b->next;
			tpool_buf_destroy(b);
		}
		p->nfree[cls] = 0;
	}
	p->native = NULL;
	/* Buffers still held: their registrations go now, with the pool's list. */
	pthread_mutex_lock(&tpool_table_lock);
	for (cls = 0; cls < TPOOL_BUCKETS; cls++)
		for (b = tpool_table[cls]; b; b = b->hnext)
			if (b->pool == p)
				b->mem = NULL;
	pthread_mutex_unlock(&tpool_table_lock);
	rpcrdma_mem_destroy_all(&p->mems);
	free_pool = !p->held;
	pthread_mutex_unlock(&p->lock);
	if (free_pool)
		tpool_free_pool(p);
}

/* SPDX-License-Identifier: MIT */
/*
 * The key table (wire_shm_keys.h): this process's, which the verbs keep,
 * and the peers', which requesters read. The table is made when the first
 * key or QP is granted (under the fabric lock: an MR's registration or a
 * QP's change comes before any window is bound on a fast path), so that
 * it holds everything from the start, whenever a peer comes.
 */
#define _GNU_SOURCE	/* memfd_create */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "wire_shm_keys.h"

#define KEYS_MAGIC	0x4b455931u	/* 'KEY1' */
/* Keys by index (rkey >> 8), QPs by number in the process's block (net_qpn.c). */
#define KEYS_NKEYS	(1u << 16)
#define KEYS_NQPS	(1u << 16)

#define QPG_READY	1u
#define QPG_READS	2u

/* Both kinds of entry start with the sequence: odd while the owner rewrites it. */
struct shm_key_slot {
	_Atomic uint32_t seq;
	uint32_t rkey;			/* 0: nothing granted */
	uint32_t access;
	uint32_t qpn;
	uint64_t pd;
	uint64_t va;
	uint64_t len;
	uint64_t base;
};

struct shm_qp_slot {
	_Atomic uint32_t seq;
	uint32_t qpn;			/* 0: nothing granted */
	uint32_t dest_qpn;
	uint32_t access;
	uint32_t flags;			/* QPG_* */
	uint32_t pad;
	uint64_t pd;
};

struct shm_keys {
	uint32_t magic;
	uint32_t nkeys;
	uint32_t nqps;
	_Atomic uint32_t closed;	/* the owner captures: send it everything */
	uint8_t pad[48];
	struct shm_key_slot key[KEYS_NKEYS];
	struct shm_qp_slot qp[KEYS_NQPS];
};

/* This process's table: made under the fabric lock, then only written by its owners. */
static struct {
	struct shm_keys *map;
	int fd;
	bool tried;
} own = { .fd = -1 };

/*
 * A process under valgrind publishes nothing: bytes another process wrote
 * into it unannounced would be undefined to memcheck. Served as records,
 * it copies them itself, or is told (SOFT_MEM_WRITTEN()).
 */
static bool keys_wanted(void)
{
	const char *shm = getenv("SOFTRDMA_SHM");
	const char *one = getenv("SOFTRDMA_SHM_ONESIDED");

	return (!shm || strcmp(shm, "0") != 0) && (!one || strcmp(one, "0") != 0) &&
	       !SOFT_UNDER_VALGRIND();
}

/* Sparse: only the pages of the entries written take memory. */
static struct shm_keys *own_table(void)
{
	void *map;
	int fd;

	if (own.map || own.tried)
		return own.map;
	own.tried = true;
	if (!keys_wanted())
		return NULL;
	fd = memfd_create("softrdma-keys", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, sizeof(struct shm_keys)) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
	    (map = mmap(NULL, sizeof(struct shm_keys), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			0)) == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	own.map = map;
	own.fd = fd;
	own.map->nkeys = KEYS_NKEYS;
	own.map->nqps = KEYS_NQPS;
	own.map->magic = KEYS_MAGIC;
	return own.map;
}

int shm_keys_offer_fd(void)
{
	return own_table() ? dup(own.fd) : -1;
}

/* ---- the owner's side: a seqlock per entry ---------------------------------------- */

static uint32_t write_begin(_Atomic uint32_t *seq)
{
	uint32_t s = atomic_load_explicit(seq, memory_order_relaxed);

	/* seq_cst: a revocation's store comes before it reads the peers' announcements. */
	atomic_store_explicit(seq, s + 1, memory_order_seq_cst);
	return s + 2;
}

static void write_end(_Atomic uint32_t *seq, uint32_t next)
{
	atomic_store_explicit(seq, next, memory_order_release);
}

void wire_key_grant(const struct wire_key *k)
{
	struct shm_keys *t = own_table();
	struct shm_key_slot *slot;
	uint32_t idx = k->rkey >> 8, next;

	if (!t || !idx || idx >= KEYS_NKEYS)
		return;
	slot = &t->key[idx];
	next = write_begin(&slot->seq);
	slot->access = k->access;
	slot->qpn = k->qpn;
	slot->pd = k->pd;
	slot->va = k->va;
	slot->len = k->len;
	slot->base = k->base;
	slot->rkey = k->rkey;
	write_end(&slot->seq, next);
}

void wire_key_revoke(uint32_t rkey)
{
	struct shm_key_slot *slot;
	uint32_t idx = rkey >> 8, next;

	if (!own.map || !idx || idx >= KEYS_NKEYS || own.map->key[idx].rkey != rkey)
		return;
	slot = &own.map->key[idx];
	next = write_begin(&slot->seq);
	slot->rkey = 0;
	slot->access = 0;
	/* A copy that passed its checks before the store above is waited for. */
	shm_keys_quiesce();
	write_end(&slot->seq, next);
}

void wire_qp_grant(const struct wire_qp_grant *g)
{
	struct shm_keys *t = own_table();
	struct shm_qp_slot *slot;
	uint32_t next;

	if (!t)
		return;
	slot = &t->qp[g->qpn % KEYS_NQPS];
	next = write_begin(&slot->seq);
	slot->qpn = g->qpn;
	slot->dest_qpn = g->dest_qpn;
	slot->access = g->access;
	slot->pd = g->pd;
	slot->flags = (g->ready ? QPG_READY : 0) | (g->reads ? QPG_READS : 0);
	write_end(&slot->seq, next);
}

void wire_keys_capture(bool on)
{
	struct shm_keys *t = own_table();

	if (t)
		atomic_store_explicit(&t->closed, on, memory_order_seq_cst);
}

void shm_keys_fork_child(void)
{
	/* The mapping is shared with the parent: the child must not write it. */
	if (own.map)
		munmap(own.map, sizeof(*own.map));
	if (own.fd >= 0)
		close(own.fd);
	own.map = NULL;
	own.fd = -1;
	own.tried = true;
}

/* ---- a peer's table ------------------------------------------------------------------ */

const struct shm_keys *shm_keys_map(int fd)
{
	const struct shm_keys *t;
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);
	void *map;

	/* Sealed at its size: the owner cannot shrink it under our mapping (SIGBUS). */
	if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size != (off_t)sizeof(struct shm_keys))
		return NULL;
	map = mmap(NULL, sizeof(struct shm_keys), PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return NULL;
	t = map;
	if (t->magic != KEYS_MAGIC || t->nkeys != KEYS_NKEYS || t->nqps != KEYS_NQPS) {
		munmap(map, sizeof(struct shm_keys));
		return NULL;
	}
	return t;
}

void shm_keys_unmap(const struct shm_keys *t)
{
	if (t)
		munmap((void *)(uintptr_t)t, sizeof(*t));
}

/*
 * The copy of an entry is done before its sequence is read again. TSan has
 * no fences (gcc refuses them), and sees nothing of the other process that
 * writes the table anyway: there a compiler barrier stands in, which x86,
 * where loads keep their order, needs alone.
 */
#if defined(__SANITIZE_THREAD__)
#define keys_read_fence() __asm__ __volatile__("" ::: "memory")
#else
#define keys_read_fence() atomic_thread_fence(memory_order_acquire)
#endif

/* Copy @len bytes of an entry at @src to @dst between two equal even sequences. */
static bool read_entry(const _Atomic uint32_t *seq, const void *src, void *dst, size_t len,
		       uint32_t *got)
{
	uint32_t s = atomic_load_explicit(seq, memory_order_acquire);

	if (s & 1)
		return false;
	memcpy(dst, src, len);
	keys_read_fence();
	*got = s;
	return atomic_load_explicit(seq, memory_order_relaxed) == s;
}

/* [va, va + len) inside [start, start + size), without overflow. */
static bool in_range(uint64_t va, uint64_t len, uint64_t start, uint64_t size)
{
	return va >= start && len <= size && va - start <= size - len;
}

static bool qp_allows(const struct shm_qp_slot *q, const struct wire_req *req, uint32_t need)
{
	return q->qpn == req->dst_qpn && q->dest_qpn == req->src_qpn && (q->flags & QPG_READY) &&
	       (q->access & need) == need && (req->op != WIRE_READ || (q->flags & QPG_READS));
}

static bool key_allows(const struct shm_key_slot *k, const struct shm_qp_slot *q,
		       const struct wire_req *req, uint32_t need)
{
	return k->rkey == req->rkey && k->pd == q->pd && (k->access & need) == need &&
	       (!k->qpn || k->qpn == q->qpn) && in_range(req->raddr, req->length, k->va, k->len) &&
	       k->base + (req->raddr - k->va) >= k->base;
}

bool shm_keys_resolve(const struct shm_keys *t, const struct wire_req *req,
		      struct shm_keys_hold *h)
{
	uint32_t need = req->op == WIRE_READ ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE;
	struct shm_key_slot k;
	struct shm_qp_slot q;

	h->t = t;
	h->kidx = req->rkey >> 8;
	h->qidx = req->dst_qpn % KEYS_NQPS;
	if (!h->kidx || h->kidx >= KEYS_NKEYS ||
	    atomic_load_explicit(&t->closed, memory_order_relaxed))
		return false;
	if (!read_entry(&t->qp[h->qidx].seq, &t->qp[h->qidx], &q, sizeof(q), &h->qseq) ||
	    !read_entry(&t->key[h->kidx].seq, &t->key[h->kidx], &k, sizeof(k), &h->kseq) ||
	    !qp_allows(&q, req, need) || !key_allows(&k, &q, req, need))
		return false;
	h->addr = k.base + (req->raddr - k.va);
	return true;
}

bool shm_keys_still(const struct shm_keys_hold *h)
{
	const struct shm_keys *t = h->t;

	/* seq_cst: after the announcement of the copy, which the owner reads after its store. */
	return atomic_load_explicit(&t->key[h->kidx].seq, memory_order_seq_cst) == h->kseq &&
	       atomic_load_explicit(&t->qp[h->qidx].seq, memory_order_seq_cst) == h->qseq &&
	       !atomic_load_explicit(&t->closed, memory_order_seq_cst);
}

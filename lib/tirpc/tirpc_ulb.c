/* SPDX-License-Identifier: MIT */
/*
 * The registry of upper-layer bindings (rpcrdma_ulb_register()), and the
 * NFS version 3 binding of RFC 8267.
 *
 * Every call looks its binding up, so lookups take no lock: a binding is
 * an immutable entry that a slot points to. Unregistering clears the slot
 * and retires a registered copy without freeing it (a thread may still be
 * reading it); copies are a few kilobytes and unregistering is rare.
 *
 * RFC 8267's bindings for program 100003 are in force from the start, as
 * every NFS/RDMA peer expects: the slots begin pointing to static entries
 * (ulb_builtin[]), so that an rpcgen NFS program gets direct data placement
 * with nothing but its create call changed. A program opts out by
 * unregistering one; a registration for the same program version replaces
 * it. A static entry is never retired or freed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/tirpc.h>

#include "sized.h"
#include "tirpc_ulb.h"
#include "util.h"

#define ULB_SLOTS 64
#define ULB_MAX_PROCS 256
#define ULB_DEFAULT_DDP_MIN 1024

struct ulb_entry {
	uint32_t prog;
	uint32_t vers;
	uint32_t ddp_min;
	unsigned int nprocs;
	const struct rpcrdma_ulb_proc *procs;	/* sorted by proc */
	bool builtin;				/* static: never retired nor freed */
	struct ulb_entry *retired_next;
};

/*
 * RFC 1813's procedures, their items and reply bounds (RFC 8267 section 4).
 * A bound is the RPC reply header with an empty verifier (24 bytes) and the
 * largest results but the DDP item: fattr3 is 84 bytes, post_op_attr 88,
 * wcc_data 116, post_op_fh3 72 (a 64-byte handle). Sorted by procedure, as
 * lookups bsearch() it in place.
 */
#define NFS3_HDR 24
static const struct rpcrdma_ulb_proc nfs3_procs[] = {
	{ .proc = 0, .reply_max = NFS3_HDR },				/* NULL */
	{ .proc = 1, .reply_max = NFS3_HDR + 4 + 84 },			/* GETATTR */
	{ .proc = 2, .reply_max = NFS3_HDR + 4 + 116 },			/* SETATTR */
	{ .proc = 3, .reply_max = NFS3_HDR + 4 + 68 + 88 + 88 },	/* LOOKUP */
	{ .proc = 4, .reply_max = NFS3_HDR + 4 + 88 + 4 },		/* ACCESS */
	{ .proc = 5, .res_item = 1, .res_max = 4096,			/* READLINK */
	  .reply_max = NFS3_HDR + 4 + 88 + 4, .flags = RPCRDMA_ULB_RES_NO_PRESET },
	{ .proc = 6, .res_item = 1, .res_max = 1u << 20,		/* READ */
	  .reply_max = NFS3_HDR + 4 + 88 + 4 + 4 + 4 },
	{ .proc = 7, .arg_item = 2, .reply_max = NFS3_HDR + 4 + 116 + 4 + 4 + 8 },	/* WRITE */
	{ .proc = 8, .reply_max = NFS3_HDR + 4 + 72 + 88 + 116 },	/* CREATE */
	{ .proc = 9, .reply_max = NFS3_HDR + 4 + 72 + 88 + 116 },	/* MKDIR */
	{ .proc = 10, .arg_item = 3, .reply_max = NFS3_HDR + 4 + 72 + 88 + 116 }, /* SYMLINK */
	{ .proc = 11, .reply_max = NFS3_HDR + 4 + 72 + 88 + 116 },	/* MKNOD */
	{ .proc = 12, .reply_max = NFS3_HDR + 4 + 116 },		/* REMOVE */
	{ .proc = 13, .reply_max = NFS3_HDR + 4 + 116 },		/* RMDIR */
	{ .proc = 14, .reply_max = NFS3_HDR + 4 + 116 + 116 },		/* RENAME */
	{ .proc = 15, .reply_max = NFS3_HDR + 4 + 88 + 116 },		/* LINK */
	/* READDIR (16) and READDIRPLUS (17): as long as the client's count. */
	{ .proc = 18, .reply_max = NFS3_HDR + 4 + 88 + 6 * 8 + 4 },	/* FSSTAT */
	{ .proc = 19, .reply_max = NFS3_HDR + 4 + 88 + 7 * 4 + 8 + 8 + 4 }, /* FSINFO */
	{ .proc = 20, .reply_max = NFS3_HDR + 4 + 88 + 2 * 4 + 4 * 4 },	/* PATHCONF */
	{ .proc = 21, .reply_max = NFS3_HDR + 4 + 116 + 8 },		/* COMMIT */
};

#define NFS3_NPROCS (sizeof(nfs3_procs) / sizeof(nfs3_procs[0]))

static const struct rpcrdma_ulb nfs3_ulb = {
	.struct_size = sizeof(struct rpcrdma_ulb),
	.prog = 100003,
	.vers = 3,
	.procs = nfs3_procs,
	.nprocs = NFS3_NPROCS,
};

/*
 * The bindings in force before any registration: one entry per NFS
 * version RFC 8267 binds, each in the slot of its index.
 */
static struct ulb_entry ulb_builtin[] = {
	{ .prog = 100003, .vers = 3, .ddp_min = ULB_DEFAULT_DDP_MIN, .nprocs = NFS3_NPROCS,
	  .procs = nfs3_procs, .builtin = true },
};

#define ULB_NBUILTIN ((int)(sizeof(ulb_builtin) / sizeof(ulb_builtin[0])))

/* ulb_builtin[i] starts in slot i. */
static _Atomic(struct ulb_entry *) ulb_slots[ULB_SLOTS] = { &ulb_builtin[0] };
/* Slots at and beyond this one were never filled: lookups stop there. */
static _Atomic int ulb_high = ULB_NBUILTIN;
static pthread_mutex_t ulb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ulb_entry *ulb_retired;		/* ulb_lock */

#define ULB_SIZE_0_2 offsetofend(struct rpcrdma_ulb, ddp_min)

static int proc_cmp(const void *a, const void *b)
{
	const struct rpcrdma_ulb_proc *x = a, *y = b;

	return x->proc < y->proc ? -1 : x->proc > y->proc;
}

/* A copy of @u with its procedures sorted, or NULL with *@rc set. */
static struct ulb_entry *ulb_copy(const struct rpcrdma_ulb *u, int *rc)
{
	struct rpcrdma_ulb_proc *procs;
	struct ulb_entry *e;
	unsigned int i;

	*rc = -EINVAL;
	if (u->nprocs > ULB_MAX_PROCS || (u->nprocs && !u->procs))
		return NULL;
	/* The procedures right after the entry (its size, a multiple of 8, keeps them aligned). */
	e = calloc(1, sizeof(*e) + u->nprocs * sizeof(*procs));
	if (!e) {
		*rc = -ENOMEM;
		return NULL;
	}
	procs = (struct rpcrdma_ulb_proc *)(e + 1);
	e->prog = u->prog;
	e->vers = u->vers;
	e->ddp_min = u->ddp_min ? u->ddp_min : ULB_DEFAULT_DDP_MIN;
	e->nprocs = u->nprocs;
	e->procs = procs;
	if (u->nprocs)
		memcpy(procs, u->procs, u->nprocs * sizeof(*procs));
	qsort(procs, e->nprocs, sizeof(*procs), proc_cmp);
	for (i = 0; i < e->nprocs; i++) {
		const struct rpcrdma_ulb_proc *p = &procs[i];

		if (p->proc > UINT16_MAX || (i && p->proc == procs[i - 1].proc) ||
		    (p->res_item && !p->res_max) || (p->flags & ~RPCRDMA_ULB_RES_NO_PRESET))
			goto bad;
	}
	*rc = 0;
	return e;
bad:
	free(e);
	return NULL;
}

static int ulb_find_slot_locked(uint32_t prog, uint32_t vers)
{
	int i;

	for (i = 0; i < ULB_SLOTS; i++) {
		struct ulb_entry *e = atomic_load_explicit(&ulb_slots[i], memory_order_relaxed);

		if (e && e->prog == prog && e->vers == vers)
			return i;
	}
	return -1;
}

/* Put @e in a free slot, or in @i's when it holds a built-in binding. 0 or -ENOSPC. */
static int ulb_install_locked(struct ulb_entry *e, int i)
{
	if (i < 0) {
		for (i = 0; i < ULB_SLOTS; i++)
			if (!atomic_load_explicit(&ulb_slots[i], memory_order_relaxed))
				break;
		if (i == ULB_SLOTS)
			return -ENOSPC;
	}
	/* Lookups that found the built-in entry read it on: it is static. */
	atomic_store_explicit(&ulb_slots[i], e, memory_order_release);
	if (i >= atomic_load_explicit(&ulb_high, memory_order_relaxed))
		atomic_store_explicit(&ulb_high, i + 1, memory_order_release);
	return 0;
}

RPCRDMA_EXPORT int rpcrdma_ulb_register(const struct rpcrdma_ulb *ulb)
{
	const struct ulb_entry *old;
	struct rpcrdma_ulb u;
	struct ulb_entry *e;
	int rc, i;

	if (!ulb)
		return -EINVAL;
	rc = rpcrdma_sized_in(&u, sizeof(u), ulb, ULB_SIZE_0_2);
	if (rc)
		return rc;
	e = ulb_copy(&u, &rc);
	if (!e)
		return rc;
	pthread_mutex_lock(&ulb_lock);
	i = ulb_find_slot_locked(u.prog, u.vers);
	old = i >= 0 ? atomic_load_explicit(&ulb_slots[i], memory_order_relaxed) : NULL;
	/* Only a registration is in the way: a built-in binding gives way to one. */
	rc = old && !old->builtin ? -EEXIST : ulb_install_locked(e, i);
	if (!rc)
		e = NULL;
	pthread_mutex_unlock(&ulb_lock);
	free(e);
	return rc;
}

RPCRDMA_EXPORT int rpcrdma_ulb_unregister(uint32_t prog, uint32_t vers)
{
	struct ulb_entry *e;
	int i;

	pthread_mutex_lock(&ulb_lock);
	i = ulb_find_slot_locked(prog, vers);
	if (i < 0) {
		pthread_mutex_unlock(&ulb_lock);
		return -ENOENT;
	}
	e = atomic_exchange_explicit(&ulb_slots[i], NULL, memory_order_acq_rel);
	if (!e->builtin) {
		e->retired_next = ulb_retired;
		ulb_retired = e;
	}
	pthread_mutex_unlock(&ulb_lock);
	return 0;
}

void tirpc_ulb_lookup(uint32_t prog, uint32_t vers, uint32_t proc, struct tirpc_ulb_call *out)
{
	struct rpcrdma_ulb_proc key = { .proc = proc };
	int i, high = atomic_load_explicit(&ulb_high, memory_order_acquire);

	memset(out, 0, sizeof(*out));
	for (i = 0; i < high; i++) {
		const struct ulb_entry *e = atomic_load_explicit(&ulb_slots[i],
								  memory_order_acquire);

		if (!e || e->prog != prog || e->vers != vers)
			continue;
		out->bound = true;
		out->ddp_min = e->ddp_min;
		out->proc = bsearch(&key, e->procs, e->nprocs, sizeof(e->procs[0]), proc_cmp);
		return;
	}
}

RPCRDMA_EXPORT const struct rpcrdma_ulb *rpcrdma_ulb_nfs3(void)
{
	return &nfs3_ulb;
}

/* SPDX-License-Identifier: MIT */
/* Memory regions and the address checks every local and remote access passes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "soft.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define SOFT_MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
			IBV_ACCESS_MW_BIND | IBV_ACCESS_OPTIONAL_RANGE)
#define SOFT_REMOTE_ACCESS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			    IBV_ACCESS_REMOTE_ATOMIC)

/* What a peer may reach through @smr's rkey, for one-sided requests. */
static void mr_publish_locked(const struct soft_mr *smr)
{
	struct wire_key k = {
		.rkey = smr->mr.rkey,
		.access = (uint32_t)smr->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
		.pd = pd_id(smr->pd),
		.va = smr->iova,
		.len = smr->length,
		.base = (uint64_t)(uintptr_t)smr->base,
	};

	if (k.access)
		wire_key_grant(&k);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	struct soft_mr *smr;
	uint32_t idx;
	uint8_t key;

	if (length == 0 || length > SOFT_MAX_MR_SIZE || (access & ~SOFT_MR_ACCESS) ||
	    /* Remote write needs local write (ib_check_mr_access). */
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE))) {
		errno = EINVAL;
		return NULL;
	}
	if (!addr) {
		errno = EFAULT;
		return NULL;
	}
	smr = calloc(1, sizeof(*smr));
	if (!smr) {
		errno = ENOMEM;
		return NULL;
	}
	fab_lock();
	idx = key_alloc_locked(SOFT_KEY_MR, smr, &key);
	if (!idx) {
		fab_unlock();
		free(smr);
		errno = ENOMEM;
		return NULL;
	}
	smr->pd = to_spd(pd);
	smr->pd->users++;
	smr->base = addr;
	smr->iova = iova;
	smr->length = length;
	smr->access = (int)access;
	smr->mr.context = pd->context;
	smr->mr.pd = pd;
	smr->mr.addr = addr;
	smr->mr.length = length;
	smr->mr.handle = idx;
	smr->mr.lkey = idx << 8 | key;
	smr->mr.rkey = smr->mr.lkey;
	mr_publish_locked(smr);
	fab.counts.mrs++;
	fab_unlock();
	return &smr->mr;
}

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				 int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct soft_mr *smr = container_of(mr, struct soft_mr, mr);

	fab_lock();
	/* Windows bound to it would reach freed memory (rxe refuses too). */
	if (__atomic_load_n(&smr->bound_mws, __ATOMIC_RELAXED)) {
		fab_unlock();
		return EBUSY;
	}
	/* No peer copies through it once it is gone (wire_shm_keys.h). */
	wire_key_revoke(mr->rkey);
	key_free_locked(mr->handle);
	if (smr->refs)
		wire_mem_detach_locked(smr, NULL);
	smr->pd->users--;
	fab.counts.mrs--;
	fab_unlock();
	free(smr);
	return 0;
}

/* [va, va + len) inside [start, start + size), without overflow. */
static bool in_range(uint64_t va, uint64_t len, uint64_t start, uint64_t size)
{
	return va >= start && len <= size && va - start <= size - len;
}

uint8_t *mem_local_locked(struct soft_pd *pd, uint32_t lkey, uint64_t va, uint64_t len, int need,
			  struct soft_mr **mr)
{
	struct soft_mr *smr = key_lookup_locked(lkey, SOFT_KEY_MR);

	if (!smr || smr->mr.lkey != lkey || !pd_same(smr->pd, pd) || (smr->access & need) != need ||
	    !in_range(va, len, smr->iova, smr->length))
		return NULL;
	if (mr)
		*mr = smr;
	return smr->base + (va - smr->iova);
}

uint8_t *mem_remote_locked(struct soft_qp *qp, uint32_t rkey, uint64_t va, uint64_t len, int need,
			   struct soft_mr **mr, struct soft_mw **mw)
{
	struct soft_mr *smr = key_lookup_locked(rkey, SOFT_KEY_MR);
	struct soft_mw *smw;

	if (smr) {
		if (smr->mr.rkey != rkey || !pd_same(smr->pd, qp->pd) ||
		    (smr->access & need) != need || !in_range(va, len, smr->iova, smr->length))
			return NULL;
		if (mr) {
			*mr = smr;
			*mw = NULL;
		}
		return smr->base + (va - smr->iova);
	}
	smw = key_lookup_locked(rkey, SOFT_KEY_MW);
	/* qp first, alone: a window bound elsewhere may be changing on another fast path. */
	if (!smw || __atomic_load_n(&smw->qp, __ATOMIC_ACQUIRE) != qp || smw->rkey != rkey ||
	    smw->state != SOFTRDMA_MW_VALID || !pd_same(smw->pd, qp->pd) ||
	    (smw->access & need) != need || !in_range(va, len, smw->addr, smw->length))
		return NULL;
	if (mr) {
		*mr = smw->mr;
		*mw = smw;
	}
	return smw->mr->base + (va - smw->mr->iova);
}

void mem_pin_locked(struct soft_mr *mr, struct soft_mw *mw)
{
	mr->refs++;
	if (mw)
		mw->refs++;
}

void mem_unpin_locked(struct soft_mr *mr, struct soft_mw *mw)
{
	mr->refs--;
	if (mw)
		mw->refs--;
}

int mem_reach_locked(uint32_t rkey, uint64_t *addr, uint64_t *length, int *access)
{
	struct soft_mr *smr = key_lookup_locked(rkey, SOFT_KEY_MR);
	struct soft_mw *smw;

	if (smr && smr->mr.rkey == rkey && (smr->access & SOFT_REMOTE_ACCESS)) {
		*addr = smr->iova;
		*length = smr->length;
		*access = smr->access & SOFT_REMOTE_ACCESS;
		return 0;
	}
	smw = key_lookup_locked(rkey, SOFT_KEY_MW);
	if (smw && smw->rkey == rkey && smw->state == SOFTRDMA_MW_VALID && smw->qp) {
		*addr = smw->addr;
		*length = smw->length;
		*access = smw->access & SOFT_REMOTE_ACCESS;
		return 0;
	}
	return -ENOENT;
}

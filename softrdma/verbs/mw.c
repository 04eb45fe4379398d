/* SPDX-License-Identifier: MIT */
/*
 * Type 2B memory windows. A window is FREE after allocation and after an
 * invalidate; an IBV_WR_BIND_MW makes it VALID under the key byte the WR
 * carries, bound to the QP that posted it: only that QP's connection reaches it.
 */
#include <errno.h>
#include <stdlib.h>

#include "soft.h"

/*
 * The rights a bind may give a window. A window is reached only by rkey, so
 * local write means nothing for it; rxe and mlx5 accept the bit all the
 * same (applications pass the MR's flags along), and so do we.
 */
#define SOFT_MW_ACCESS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE)

static struct soft_mw *to_smw(const struct ibv_mw *mw)
{
	return container_of(mw, struct soft_mw, mw);
}

struct ibv_mw *soft_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct soft_mw *smw;
	uint32_t idx;
	uint8_t key;

	/* Type 1 windows (ibv_bind_mw) are not modelled; siw has none at all. */
	if (type != IBV_MW_TYPE_2 || !soft_profile()->mw) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	smw = calloc(1, sizeof(*smw));
	if (!smw) {
		errno = ENOMEM;
		return NULL;
	}
	fab_lock();
	idx = key_alloc_locked(SOFT_KEY_MW, smw, &key);
	if (!idx) {
		fab_unlock();
		free(smw);
		errno = ENOMEM;
		return NULL;
	}
	smw->pd = to_spd(pd);
	smw->pd->users++;
	smw->state = SOFTRDMA_MW_FREE;
	smw->rkey = idx << 8 | key;
	smw->mw.context = pd->context;
	smw->mw.pd = pd;
	smw->mw.rkey = smw->rkey;
	smw->mw.handle = idx;
	smw->mw.type = type;
	fab.counts.mws++;
	fab_unlock();
	return &smw->mw;
}

static void mw_unbind_locked(struct soft_mw *smw)
{
	/* No peer copies through it from here on (wire_shm_keys.h). */
	if (smw->state == SOFTRDMA_MW_VALID)
		wire_key_revoke(smw->rkey);
	/* A Read response still going out was read before the window went. */
	if (smw->refs)
		wire_mem_detach_locked(NULL, smw);
	__atomic_store_n(&smw->qp, NULL, __ATOMIC_RELAXED);
	if (smw->mr)
		__atomic_sub_fetch(&smw->mr->bound_mws, 1, __ATOMIC_RELAXED);
	smw->mr = NULL;
	smw->addr = 0;
	smw->length = 0;
	smw->access = 0;
	/* Last: a bind on another QP's fast path may claim it from here on. */
	__atomic_store_n(&smw->state, SOFTRDMA_MW_FREE, __ATOMIC_RELEASE);
}

int soft_dealloc_mw(struct ibv_mw *mw)
{
	struct soft_mw *smw = to_smw(mw);

	fab_lock();
	mw_unbind_locked(smw);
	key_free_locked(mw->handle);
	smw->pd->users--;
	fab.counts.mws--;
	fab_unlock();
	free(smw);
	return 0;
}

/* ibv_bind_mw() (type 1 only, in the header) never reaches here for type 2. */
int soft_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	(void)qp;
	(void)mw;
	(void)bind;
	return EOPNOTSUPP;
}

/* The bind's checks, the window's state aside. */
static bool mw_bind_valid(const struct soft_qp *qp, const struct ibv_mw *mw, uint32_t rkey,
			  const struct ibv_mw_bind_info *info)
{
	const struct soft_mw *smw;
	const struct soft_mr *smr;

	if (!mw || mw->type != IBV_MW_TYPE_2)
		return false;
	smw = to_smw(mw);
	smr = info->mr ? container_of(info->mr, struct soft_mr, mr) : NULL;
	return pd_same(smw->pd, qp->pd) && (rkey >> 8) == mw->handle && smr && info->length &&
	       pd_same(smr->pd, smw->pd) && (smr->access & IBV_ACCESS_MW_BIND) &&
	       !(info->mw_access_flags & ~(unsigned int)SOFT_MW_ACCESS) &&
	       (!(info->mw_access_flags & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) ||
		(smr->access & IBV_ACCESS_LOCAL_WRITE)) &&
	       info->addr >= smr->iova && info->length <= smr->length &&
	       info->addr - smr->iova <= smr->length - info->length;
}

/* What a peer may reach through @smr, bound to @qp, for one-sided requests. */
static void mw_publish(const struct soft_mw *smw, const struct soft_qp *qp)
{
	struct wire_key k = {
		.rkey = smw->rkey,
		.access = (uint32_t)smw->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
		.qpn = qp->qp.qp_num,
		.pd = pd_id(smw->pd),
		.va = smw->addr,
		.len = smw->length,
		.base = (uint64_t)(uintptr_t)(smw->mr->base + (smw->addr - smw->mr->iova)),
	};

	if (k.access)
		wire_key_grant(&k);
}

bool mw_bind_claim(const struct soft_qp *qp, const struct ibv_mw *mw, uint32_t rkey,
		   const struct ibv_mw_bind_info *info)
{
	int free_state = SOFTRDMA_MW_FREE;

	/* A bound window is not bound again (rxe: the MW must be free for a type 2 bind). */
	return mw_bind_valid(qp, mw, rkey, info) &&
	       __atomic_compare_exchange_n(&to_smw(mw)->state, &free_state, SOFT_MW_CLAIMED,
					   false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

void mw_bind_claimed(struct soft_qp *qp, const struct ibv_mw *mw, uint32_t rkey,
		     const struct ibv_mw_bind_info *info)
{
	struct soft_mw *smw = to_smw(mw);
	struct soft_mr *smr = container_of(info->mr, struct soft_mr, mr);

	smw->rkey = rkey;
	smw->addr = info->addr;
	smw->length = info->length;
	smw->access = (int)info->mw_access_flags;
	smw->mr = smr;
	__atomic_add_fetch(&smr->bound_mws, 1, __ATOMIC_RELAXED);
	smw->state = SOFTRDMA_MW_VALID;
	/* Last: a fast path reaching it through this QP may use it from here on. */
	__atomic_store_n(&smw->qp, qp, __ATOMIC_RELEASE);
	mw_publish(smw, qp);
}

enum ibv_wc_status mw_bind_locked(struct soft_qp *qp, const struct ibv_mw *mw, uint32_t rkey,
				  const struct ibv_mw_bind_info *info)
{
	if (!mw_bind_claim(qp, mw, rkey, info))
		return IBV_WC_MW_BIND_ERR;
	mw_bind_claimed(qp, mw, rkey, info);
	return IBV_WC_SUCCESS;
}

/*
 * Local or remote invalidate. A window must be VALID under exactly this key,
 * on qp's PD and bound to qp. MRs from ibv_reg_mr are not fast-register MRs:
 * rxe refuses to invalidate them, and so do we.
 */
static struct soft_mw *mw_to_invalidate(const struct soft_qp *qp, uint32_t rkey)
{
	struct soft_mw *smw = key_lookup_locked(rkey, SOFT_KEY_MW);

	/* Bound to qp, or nothing more of it is read: another QP's fast path may own it. */
	if (!smw || __atomic_load_n(&smw->qp, __ATOMIC_ACQUIRE) != qp || smw->rkey != rkey ||
	    smw->state != SOFTRDMA_MW_VALID || !pd_same(smw->pd, qp->pd))
		return NULL;
	return smw;
}

int mem_invalidate_locked(struct soft_qp *qp, uint32_t rkey)
{
	struct soft_mw *smw = mw_to_invalidate(qp, rkey);

	if (!smw)
		return -EINVAL;
	mw_unbind_locked(smw);
	return 0;
}

bool mem_invalidate_fast_ok(const struct soft_qp *qp, uint32_t rkey)
{
	const struct soft_mw *smw = mw_to_invalidate(qp, rkey);

	/* A message still to read through it is another process's: fab.lock's. */
	return smw && !smw->refs;
}

void mw_qp_gone_locked(struct soft_qp *qp)
{
	uint32_t i;

	for (i = 1; i < fab.nkeys; i++) {
		struct soft_mw *smw;

		if (key_slot(i)->kind != SOFT_KEY_MW)
			continue;
		smw = key_slot(i)->obj;
		if (__atomic_load_n(&smw->qp, __ATOMIC_RELAXED) != qp)
			continue;
		wire_key_revoke(smw->rkey);
		__atomic_store_n(&smw->qp, NULL, __ATOMIC_RELAXED);
	}
}

enum softrdma_mw_state softrdma_mw_state(uint32_t rkey)
{
	struct soft_mw *smw;
	enum softrdma_mw_state state = SOFTRDMA_MW_NONE;

	fab_lock();
	smw = key_lookup_locked(rkey, SOFT_KEY_MW);
	if (smw)
		state = smw->state;
	fab_unlock();
	return state;
}

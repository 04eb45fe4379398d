/* SPDX-License-Identifier: MIT */
/*
 * Thread domains and parent domains (ibv_alloc_td, ibv_alloc_parent_domain),
 * for the profiles whose provider has them (mlx5's, and softrdma's own;
 * rxe and siw have none: the ops stay NULL and libibverbs answers
 * EOPNOTSUPP). A parent domain is a PD in every use: objects made on it
 * share its PD's keys (soft_pd.protection), and it counts them, so that
 * ibv_dealloc_pd() on it is EBUSY while they live, as on mlx5. It holds
 * its PD and its TD (EBUSY on those too) until it goes.
 *
 * A thread domain promises that one thread at a time uses the objects
 * made with it, which lets mlx5 drop its locks; softrdma keeps its locks
 * (the promise costs nothing if kept, and a broken one is still safe).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "soft.h"

#define SOFT_BUF_ALIGN	64

struct soft_td {
	struct ibv_td td;
	unsigned int users;		/* parent domains on it (fab.lock) */
};

struct soft_parent_domain {
	struct soft_pd spd;		/* spd.protection: the PD it was made from */
	struct soft_pd *pd;		/* the ibv_pd it was made from (holds a user of it) */
	struct soft_td *td;		/* or NULL */
	/* IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS: both set, or neither. */
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
		       uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);
	void *pd_context;
};

static struct soft_parent_domain *to_parent(struct soft_pd *spd)
{
	return container_of(spd, struct soft_parent_domain, spd);
}

static bool is_parent(const struct soft_pd *spd)
{
	return spd->protection != spd;
}

struct ibv_td *soft_alloc_td(struct ibv_context *context, struct ibv_td_init_attr *attr)
{
	struct soft_td *std;

	/* No fields are defined yet (mlx5_alloc_td: EINVAL). */
	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	std = calloc(1, sizeof(*std));
	if (!std) {
		errno = ENOMEM;
		return NULL;
	}
	std->td.context = context;
	fab_lock();
	to_sctx(context)->objects++;
	fab_unlock();
	return &std->td;
}

int soft_dealloc_td(struct ibv_td *td)
{
	struct soft_td *std = container_of(td, struct soft_td, td);

	fab_lock();
	if (std->users) {
		fab_unlock();
		return EBUSY;
	}
	to_sctx(td->context)->objects--;
	fab_unlock();
	free(std);
	return 0;
}

static int parent_check(struct ibv_context *context,
			const struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;

	/* "pd: reference to a protection domain, can't be NULL" (libibverbs' check). */
	if (!attr->pd || attr->pd->context != context)
		return EINVAL;
	if (attr->td && attr->td->context != context)
		return EINVAL;
	if (attr->comp_mask & ~known)
		return EINVAL;
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (!attr->alloc || !attr->free))
		return EINVAL;
	return 0;
}

struct ibv_pd *soft_alloc_parent_domain(struct ibv_context *context,
					struct ibv_parent_domain_init_attr *attr)
{
	struct soft_parent_domain *par;
	int ret = parent_check(context, attr);

	if (ret) {
		errno = ret;
		return NULL;
	}
	par = calloc(1, sizeof(*par));
	if (!par) {
		errno = ENOMEM;
		return NULL;
	}
	par->pd = to_spd(attr->pd);
	par->spd.protection = par->pd->protection;
	par->td = attr->td ? container_of(attr->td, struct soft_td, td) : NULL;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		par->alloc = attr->alloc;
		par->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		par->pd_context = attr->pd_context;
	/* As libibverbs' ibv_initialize_parent_domain(): the PD's context and handle. */
	par->spd.pd.context = context;
	par->spd.pd.handle = attr->pd->handle;
	fab_lock();
	par->pd->users++;
	if (par->td)
		par->td->users++;
	fab.counts.pds++;
	to_sctx(context)->objects++;
	fab_unlock();
	return &par->spd.pd;
}

int parent_domain_dealloc(struct soft_pd *spd)
{
	struct soft_parent_domain *par = to_parent(spd);

	fab_lock();
	/* "All resources created with the parent domain should be destroyed prior." */
	if (spd->users) {
		fab_unlock();
		return EBUSY;
	}
	par->pd->users--;
	if (par->td)
		par->td->users--;
	fab.counts.pds--;
	to_sctx(spd->pd.context)->objects--;
	fab_unlock();
	free(par);
	return 0;
}

void *pd_buf_alloc(struct soft_pd *pd, size_t size, uint64_t type, bool *custom)
{
	struct soft_parent_domain *par = pd && is_parent(pd) ? to_parent(pd) : NULL;
	void *ptr;

	*custom = false;
	if (par && par->alloc) {
		ptr = par->alloc(&pd->pd, par->pd_context, size, SOFT_BUF_ALIGN, type);
		if (ptr != IBV_ALLOCATOR_USE_DEFAULT) {
			/*
			 * Zeroing is the callback's duty (ibv_alloc_parent_domain(3)),
			 * but rdma-core's own tests hand out posix_memalign()'s
			 * memory: zeroed here, so that no ring depends on it.
			 */
			if (ptr)
				memset(ptr, 0, size);
			*custom = ptr != NULL;
			return ptr;
		}
	}
	return calloc(1, size);
}

void pd_buf_free(struct soft_pd *pd, void *ptr, uint64_t type, bool custom)
{
	if (custom)
		to_parent(pd)->free(&pd->pd, to_parent(pd)->pd_context, ptr, type);
	else
		free(ptr);
}

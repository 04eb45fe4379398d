/* SPDX-License-Identifier: MIT */
/* Protection domains (parent domains: td.c). */
#include <errno.h>
#include <stdlib.h>

#include "soft.h"

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct soft_pd *spd = calloc(1, sizeof(*spd));

	if (!spd) {
		errno = ENOMEM;
		return NULL;
	}
	spd->pd.context = context;
	spd->protection = spd;
	fab_lock();
	spd->pd.handle = ++fab.counts.pds;
	to_sctx(context)->objects++;
	fab_unlock();
	return &spd->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct soft_pd *spd = to_spd(pd);

	if (spd->protection != spd)
		return parent_domain_dealloc(spd);
	fab_lock();
	/* The kernel refuses while anything still lives on the PD. */
	if (spd->users) {
		fab_unlock();
		return EBUSY;
	}
	fab.counts.pds--;
	to_sctx(pd->context)->objects--;
	fab_unlock();
	free(spd);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The extended verbs a context offers, by profile: what the provider it
 * plays fills in its verbs_context. An op left NULL makes libibverbs'
 * inline wrapper answer EOPNOTSUPP, as it does for a provider without it
 * (siw has none of these; rxe has no thread or parent domains).
 */
#include "soft.h"

void ext_set_ops(struct verbs_context *vctx)
{
	const struct soft_profile *p = soft_profile();

	if (p->cq_wc_flags)
		vctx->create_cq_ex = soft_create_cq_ex;
	if (p->qp_send_ops)
		vctx->create_qp_ex = soft_create_qp_ex;
	if (p->parent_domain) {
		vctx->alloc_td = soft_alloc_td;
		vctx->dealloc_td = soft_dealloc_td;
		vctx->alloc_parent_domain = soft_alloc_parent_domain;
	}
}

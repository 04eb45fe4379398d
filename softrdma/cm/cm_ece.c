/* SPDX-License-Identifier: MIT */
/*
 * Enhanced Connection Establishment, as librdmacm carries it: the vendor ID
 * and options an id is given (rdma_set_local_ece) go out in its REQ, the
 * passive side answers with that vendor and its own options in the REP,
 * and each side reads what came (rdma_get_remote_ece). What the options mean
 * is the provider's business, and softrdma0 has none (ibv_query_ece and
 * ibv_set_ece are EOPNOTSUPP): so, as librdmacm on such a provider,
 * rdma_create_qp leaves the id's local ECE empty, and only an application
 * that drives its own QP sends what it set. iWARP carries none: the
 * kernel's iWARP CM has no field for it.
 */
#include <errno.h>

#include "cm.h"

static int fail(int err)
{
	errno = err;
	return -1;
}

/* Once the id has a QP, the QP's ECE is the provider's to tell. */
int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || id->qp || !ece || !ece->vendor_id || ece->comp_mask)
		return fail(EINVAL);
	fab_lock();
	to_scm(id)->local_ece.vendor_id = ece->vendor_id;
	to_scm(id)->local_ece.options = ece->options;
	fab_unlock();
	return 0;
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || id->qp || !ece)
		return fail(EINVAL);
	fab_lock();
	ece->vendor_id = to_scm(id)->remote_ece.vendor_id;
	ece->options = to_scm(id)->remote_ece.options;
	fab_unlock();
	ece->comp_mask = 0;
	return 0;
}

void cm_ece_req_locked(const struct soft_cm_id *sid, struct cm_params *req)
{
	if (cm_id_iwarp(sid))
		return;
	req->ece_vendor_id = sid->local_ece.vendor_id;
	req->ece_options = sid->local_ece.options;
}

/* librdmacm answers with the vendor it was offered, and its own options. */
void cm_ece_rep_locked(const struct soft_cm_id *sid, struct cm_params *rep)
{
	if (cm_id_iwarp(sid))
		return;
	rep->ece_vendor_id = sid->remote_ece.vendor_id;
	rep->ece_options = sid->local_ece.options;
}

void cm_ece_req_arrived_locked(struct soft_cm_id *child, const struct cm_params *req)
{
	child->remote_ece.vendor_id = req->ece_vendor_id;
	child->remote_ece.options = req->ece_options;
}

/*
 * An id with its own QP (rdma_create_qp) hands the REP's ECE to the QP,
 * which softrdma0 cannot take; librdmacm then keeps the vendor only.
 */
void cm_ece_rep_arrived_locked(struct soft_cm_id *client, const struct cm_params *rep)
{
	client->remote_ece.vendor_id = rep->ece_vendor_id;
	if (!client->id.qp)
		client->remote_ece.options = rep->ece_options;
}

/* librdmacm takes the QP's ECE for the id's: softrdma0's QPs have none. */
void cm_ece_qp_created_locked(struct soft_cm_id *sid)
{
	sid->local_ece.vendor_id = 0;
	sid->local_ece.options = 0;
}

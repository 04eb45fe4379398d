/* SPDX-License-Identifier: MIT */
/*
 * Multicast, which is not modelled: UD QPs exist (RDMA_PS_UDP ids have
 * them), multicast groups do not, and softrdma0 reports max_mcast_grp 0
 * (ibv_attach_mcast is EOPNOTSUPP). The calls check their arguments as
 * librdmacm does, then a join is refused as the kernel's CM refuses one on
 * an id that is not UD (EINVAL; on rxe a UDP id would join); no join ever
 * succeeding, a leave finds no group (EADDRNOTAVAIL, as librdmacm).
 */
#include <errno.h>

#include "cm.h"

static int fail(int err)
{
	errno = err;
	return -1;
}

/* librdmacm's ucma_addrlen(): only an IP address names a group here (no AF_IB). */
static bool group_addr_ok(const struct sockaddr *addr)
{
	return addr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6);
}

/* A bad address is librdmacm's EINVAL; a good one is the kernel's, on an RC id. */
int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	return fail(EINVAL);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	if (mc_join_attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return fail(EOPNOTSUPP);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    mc_join_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return fail(EINVAL);
	return rdma_join_multicast(id, mc_join_attr->addr, context);
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	if (!group_addr_ok(addr))
		return fail(EINVAL);
	return fail(EADDRNOTAVAIL);
}

/* SPDX-License-Identifier: MIT */
/*
 * Verbs that softrdma0 does not model, answered at call time as libibverbs
 * answers them for a provider that lacks the operation (its dummy ops:
 * NULL with errno EOPNOTSUPP, or EOPNOTSUPP returned), after the checks
 * libibverbs makes itself. So a program linked against rdma-core loads
 * and learns, when it asks, that the device cannot, rather than failing to
 * start. Here: multicast (UD QPs exist, multicast groups do not), importing
 * objects from another process's context, Enhanced Connection Establishment,
 * dma-buf registrations, re-registration, and L2 address resolution.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>

#include "soft.h"

/* ---- multicast ----------------------------------------------------------------- */

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

/* ---- importing another process's objects ------------------------------------ */

/*
 * libibverbs finds the device by the character device behind cmd_fd:
 * anything else is EINVAL. softrdma0's contexts hold SOFT_CMD_FD_DEV
 * there (device.c): its own, whose provider cannot import a context
 * (EOPNOTSUPP, as libibverbs answers for a provider without
 * import_context); any other device is none of softrdma's (ENODEV).
 */
struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct stat st, own;

	if (fstat(cmd_fd, &st) || !S_ISCHR(st.st_mode)) {
		errno = EINVAL;
		return NULL;
	}
	if (!stat(SOFT_CMD_FD_DEV, &own) && S_ISCHR(own.st_mode) && own.st_rdev == st.st_rdev)
		errno = EOPNOTSUPP;
	else
		errno = ENODEV;
	return NULL;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/* Nothing is ever imported, so there is nothing to let go of. */
void ibv_unimport_pd(struct ibv_pd *pd)
{
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
}

/* ---- Enhanced Connection Establishment ---------------------------------------- */

/* libibverbs refuses a vendor ID of 0 itself, and says so in errno too. */
int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (!ece->vendor_id)
		errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

/* ---- memory registration ---------------------------------------------------------- */

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				 uint64_t iova, int fd, int access)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/*
 * libibverbs checks the request first (IBV_REREG_MR_ERR_INPUT, EINVAL);
 * a well-formed one fails in the provider, which libibverbs reports as
 * IBV_REREG_MR_ERR_CMD with the provider's errno. The MR is unchanged.
 */
int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		 int access)
{
	if ((flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!length || !addr)) ||
	    (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_CMD;
}

/* ---- L2 addresses ---------------------------------------------------------------------- */

/*
 * Providers call this to address RoCE packets to a neighbour's MAC. softrdma0
 * sends nothing over Ethernet: no neighbour of its GIDs has an L2 address to
 * resolve, which libibverbs reports as -EHOSTUNREACH.
 */
int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
				uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
	return -EHOSTUNREACH;
}

/* SPDX-License-Identifier: MIT */
/*
 * Fork protection. libibverbs marks registered memory MADV_DONTFORK (unless
 * the kernel keeps pinned pages across fork()) so that the HCA never writes
 * into a page that copy-on-write has taken from the parent. softrdma has no
 * DMA: the fabric reaches registered memory through the registering
 * process's own addresses (memcpy(), or process_vm_readv()/writev() by its
 * pid), which always name the pages that process sees after a fork. So
 * protection is unneeded, as on a kernel with copy-on-fork for pinned pages,
 * and these say so.
 */
#include <stddef.h>

#include "soft.h"

/* In rdma-core's driver.h, which is not installed; exported all the same. */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/* As libibverbs when fork protection is unneeded: nothing to prepare. */
int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Structs that carry their own size: copying them in and out (see sized.h). */
#include <string.h>

#include "sized.h"

int rpcrdma_sized_in(void *dst, size_t dst_size, const void *src, size_t min)
{
	uint32_t size;
	int rc;

	memcpy(&size, src, sizeof(size));
	rc = rpcrdma_sized_check(size, min, dst_size);
	if (rc)
		return rc;
	memcpy(dst, src, size);
	memset((unsigned char *)dst + size, 0, dst_size - size);
	return 0;
}

int rpcrdma_sized_out(void *dst, const void *src, size_t src_size, size_t min)
{
	uint32_t size;
	int rc;

	memcpy(&size, dst, sizeof(size));
	rc = rpcrdma_sized_check(size, min, src_size);
	if (rc)
		return rc;
	/* Everything after struct_size, which stays the caller's. */
	memcpy((unsigned char *)dst + sizeof(size), (const unsigned char *)src + sizeof(size),
	       size - sizeof(size));
	return 0;
}

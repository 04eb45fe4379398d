/* SPDX-License-Identifier: MIT */
/*
 * Structs that carry their own size (the scheme of rpcrdma.h's conventions
 * block): a caller's struct_size checked against what this library knows,
 * and such a struct copied in and out at the caller's size. The layouts
 * from before struct_size (0.1's) are lib/compat/'s.
 */
#ifndef RPCRDMA_SIZED_H
#define RPCRDMA_SIZED_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define offsetofend(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))

/*
 * The first version of each sized struct (0.2): a caller's struct_size is
 * at least this. When fields are appended, these stay as they are.
 */
#define RPCRDMA_CLNT_ATTR_SIZE_0_2 offsetofend(struct rpcrdma_clnt_attr, max_segment)
#define RPCRDMA_SVC_ATTR_SIZE_0_2 offsetofend(struct rpcrdma_svc_attr, max_reply)
#define RPCRDMA_CALL_SIZE_0_2 offsetofend(struct rpcrdma_call, result_len)
#define RPCRDMA_STATS_SIZE_0_2 offsetofend(struct rpcrdma_stats, heap_bytes)
#define RPCRDMA_CLNT_INFO_SIZE_0_2 offsetofend(struct rpcrdma_clnt_info, vers_high)

/*
 * Check a caller's struct_size against what this library knows (@known)
 * and the first version (@min): -EINVAL for less than @min (0 included),
 * -EOPNOTSUPP for more than @known (a newer header: fields this library
 * would not read or fill).
 */
static inline int rpcrdma_sized_check(uint32_t struct_size, size_t min, size_t known)
{
	if (struct_size < min)
		return -EINVAL;
	if (struct_size > known)
		return -EOPNOTSUPP;
	return 0;
}

/*
 * A caller's sized struct @src into the library's @dst (@dst_size bytes):
 * the fields it has, the others zero (their defaults). Returns 0 or as
 * rpcrdma_sized_check().
 */
int rpcrdma_sized_in(void *dst, size_t dst_size, const void *src, size_t min);

/*
 * The library's @src (@src_size bytes) into a caller's sized struct @dst,
 * as much of it as @dst holds; dst's struct_size stays. Returns 0 or as
 * rpcrdma_sized_check().
 */
int rpcrdma_sized_out(void *dst, const void *src, size_t src_size, size_t min);

#endif /* RPCRDMA_SIZED_H */

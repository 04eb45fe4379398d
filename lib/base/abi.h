/* SPDX-License-Identifier: MIT */
/*
 * The ABI's moving parts: structs that carry their own size (the scheme of
 * rpcrdma.h's conventions block), and symbol versions for the entry points
 * whose structs changed layout, so that programs built against an older
 * header keep the layout they were built with (lib/compat/compat_0_1.c).
 */
#ifndef RPCRDMA_ABI_H
#define RPCRDMA_ABI_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

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

/*
 * @name's definition from version node RPCRDMA_@node on (the default a new
 * program links to) is the function @name##_##node; older nodes keep their
 * own definitions (RPCRDMA_SYMVER_COMPAT). Put it before the definition.
 */
#define RPCRDMA_SYMVER_DEFAULT(name, node)                 \
	__typeof__(name) name##_##node RPCRDMA_EXPORT;   \
	__asm__(".symver " #name "_" #node ", " #name "@@RPCRDMA_" RPCRDMA_NODE_##node)

/* @impl is @name as version node RPCRDMA_@node had it. */
#define RPCRDMA_SYMVER_COMPAT(impl, name, node) \
	__asm__(".symver " #impl ", " #name "@RPCRDMA_" RPCRDMA_NODE_##node)

#define RPCRDMA_NODE_0_1 "0.1"
#define RPCRDMA_NODE_0_2 "0.2"

#endif /* RPCRDMA_ABI_H */

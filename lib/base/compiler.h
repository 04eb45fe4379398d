/* SPDX-License-Identifier: MIT */
/* Internal helpers shared by every file of the library. */
#ifndef RPCRDMA_COMPILER_H
#define RPCRDMA_COMPILER_H

#include <stddef.h>

/* Marks a definition that belongs to the public ABI (see librpcrdma.map). */
#define RPCRDMA_EXPORT __attribute__((visibility("default")))

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

/*
 * A hot-path step inlined into every caller, where gcc's heuristics would
 * leave a call: measured with tests/bench/rpc-callgrind.sh, not assumed.
 */
#define rpcrdma_always_inline inline __attribute__((always_inline))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* In a polling loop: lets a sibling hyperthread (or the hypervisor) run. */
static inline void rpcrdma_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

#endif /* RPCRDMA_COMPILER_H */

/* SPDX-License-Identifier: MIT */
/*
 * One thread at a time inside an object: a client (clnt.h), a server's
 * poller (svc.h). A second thread entering while one is inside (calls from
 * a callback are the same thread, nested) has its call fail with -EBUSY
 * and a message, where it would corrupt the object or hang. Every build
 * checks, NDEBUG or not: a misuse that hangs a release build is found
 * only in production, and the check is one uncontended compare-and-swap
 * on entry and a store on the way out. Put RPCRDMA_GUARD(guard, what,
 * what to do on failure); after the argument checks: the guard ends
 * wherever the function returns.
 */
#ifndef RPCRDMA_GUARD_H
#define RPCRDMA_GUARD_H

#include <stdatomic.h>
#include <stdint.h>

#include "compiler.h"

struct rpcrdma_guard {
	_Atomic uintptr_t inside;	/* the thread inside, or 0 */
	unsigned int depth;		/* its nesting */
};

/*
 * One byte per thread: its address names the thread, never 0. initial-exec,
 * so that the address takes two instructions, not a call to
 * __tls_get_addr() (or pthread_self()) on every hot call; one byte of the
 * static TLS glibc keeps for libraries, even for one loaded by dlopen().
 */
extern __thread char rpcrdma_thread_token __attribute__((tls_model("initial-exec")));

static inline uintptr_t rpcrdma_thread_self(void)
{
	return (uintptr_t)&rpcrdma_thread_token;
}

/* Out of line: the refusal's message, naming @fn and the object @what. NULL. */
struct rpcrdma_guard *rpcrdma_guard_refuse(const char *fn, const char *what);

static inline struct rpcrdma_guard *rpcrdma_guard_begin(struct rpcrdma_guard *g, const char *fn,
							const char *what)
{
	uintptr_t self = rpcrdma_thread_self(), none = 0;

	if (likely(atomic_compare_exchange_strong_explicit(&g->inside, &none, self,
							    memory_order_acquire,
							    memory_order_relaxed))) {
		g->depth = 1;
		return g;
	}
	if (none == self) {
		g->depth++;
		return g;
	}
	return rpcrdma_guard_refuse(fn, what);
}

static inline void rpcrdma_guard_end(struct rpcrdma_guard **guard)
{
	struct rpcrdma_guard *g = *guard;

	if (g && --g->depth == 0)
		atomic_store_explicit(&g->inside, 0, memory_order_release);
}

#define RPCRDMA_GUARD(g, what, fail)                                                    \
	struct rpcrdma_guard *rpcrdma_guard_ __attribute__((cleanup(rpcrdma_guard_end))) = \
		rpcrdma_guard_begin(g, __func__, what);                                 \
	if (!rpcrdma_guard_)                                                            \
		fail

#endif /* RPCRDMA_GUARD_H */

/* SPDX-License-Identifier: MIT */
/* The thread token and the refusal of a second thread (guard.h). */
#include "guard.h"
#include "util.h"

__thread char rpcrdma_thread_token;

struct rpcrdma_guard *rpcrdma_guard_refuse(const char *fn, const char *what)
{
	rpcrdma_err("%s: another thread is inside this %s", fn, what);
	return NULL;
}

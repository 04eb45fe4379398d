/* SPDX-License-Identifier: MIT */
#include <rpcrdma/rpcrdma.h>

#include "compiler.h"
#include "config.h"

_Static_assert(RPCRDMA_VERSION_MAJOR == RPCRDMA_BUILD_MAJOR &&
		       RPCRDMA_VERSION_MINOR == RPCRDMA_BUILD_MINOR &&
		       RPCRDMA_VERSION_MICRO == RPCRDMA_BUILD_MICRO,
	       "rpcrdma.h's RPCRDMA_VERSION_* differ from meson's project version");

RPCRDMA_EXPORT const char *rpcrdma_version_string(void)
{
	return RPCRDMA_VERSION_STRING;
}

/* SPDX-License-Identifier: MIT */
#include <rpcrdma/rpcrdma.h>

#include "compiler.h"
#include "config.h"

RPCRDMA_EXPORT const char *rpcrdma_version_string(void)
{
	return RPCRDMA_VERSION_STRING;
}

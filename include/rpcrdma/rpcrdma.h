/* SPDX-License-Identifier: MIT */
/*
 * librpcrdma: RPC-over-RDMA Version 1 (RFC 8166) for userspace.
 *
 * Conventions that hold for every public function unless its comment says
 * otherwise: functions return 0 (or a non-negative count) on success and a
 * negative errno on failure, and leave errno alone; constructors fill an out
 * parameter; every destroy function accepts NULL.
 */
#ifndef RPCRDMA_RPCRDMA_H
#define RPCRDMA_RPCRDMA_H

#include <rpcrdma/proto.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RPCRDMA_VERSION_MAJOR 0
#define RPCRDMA_VERSION_MINOR 1
#define RPCRDMA_VERSION_MICRO 0

/**
 * rpcrdma_version_string - the library's version, "major.minor.micro"
 *
 * Returns a static string of the library actually loaded, which may differ
 * from the RPCRDMA_VERSION_* macros the caller was compiled with.
 */
const char *rpcrdma_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* RPCRDMA_RPCRDMA_H */

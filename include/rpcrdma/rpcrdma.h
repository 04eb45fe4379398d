/* SPDX-License-Identifier: MIT */
/*
 * librpcrdma: RPC-over-RDMA Version 1 (RFC 8166) for userspace.
 *
 * The umbrella, for programs: the conventions, version, log and counters
 * (<rpcrdma/base.h>), the wire codec (<rpcrdma/proto.h>), the native client
 * (<rpcrdma/clnt.h>) and server (<rpcrdma/svc.h>). The libtirpc adapters
 * are <rpcrdma/tirpc.h>, apart, as it needs libtirpc's headers; it brings
 * this one along.
 */
#ifndef RPCRDMA_RPCRDMA_H
#define RPCRDMA_RPCRDMA_H

#include <rpcrdma/base.h>
#include <rpcrdma/proto.h>
#include <rpcrdma/clnt.h>
#include <rpcrdma/svc.h>

#endif /* RPCRDMA_RPCRDMA_H */

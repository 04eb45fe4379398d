/* SPDX-License-Identifier: MIT */
/* Accepted replies' RPC headers in one XDR_INLINE (tirpc_msg.c). */
#ifndef RPCRDMA_TIRPC_MSG_H
#define RPCRDMA_TIRPC_MSG_H

#include <rpc/rpc.h>

/* xdr_replymsg(), XDR_ENCODE, the same bytes. */
bool_t tirpc_encode_replymsg(XDR *xdrs, struct rpc_msg *msg);
/* xdr_replymsg(), XDR_DECODE, the same result. */
bool_t tirpc_decode_replymsg(XDR *xdrs, struct rpc_msg *msg);

#endif /* RPCRDMA_TIRPC_MSG_H */

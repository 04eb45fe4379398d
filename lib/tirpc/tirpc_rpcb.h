/* SPDX-License-Identifier: MIT */
/*
 * rpcbind for netids libtirpc does not know: its rpcb_set() and
 * rpcb_getaddr() convert addresses only for the netids of its own table
 * (udp, tcp, udp6, tcp6, local), so "rdma" and "rdma6" are spoken to
 * rpcbind directly, with universal addresses made here.
 */
#ifndef RPCRDMA_TIRPC_RPCB_H
#define RPCRDMA_TIRPC_RPCB_H

#include <stdbool.h>
#include <sys/socket.h>

#include <rpc/rpc.h>

/*
 * RPCBPROC_SET (@set) or RPCBPROC_UNSET of (@prog, @vers, @netid) at @addr
 * with the local rpcbind. Returns rpcbind's answer, FALSE with
 * rpc_createerr set when it cannot be asked.
 */
bool_t tirpc_rpcb_set(bool set, rpcprog_t prog, rpcvers_t vers, const char *netid,
		      const struct sockaddr *addr);

#endif /* RPCRDMA_TIRPC_RPCB_H */

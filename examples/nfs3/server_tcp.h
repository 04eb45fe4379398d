/* SPDX-License-Identifier: MIT */
/*
 * The server's TCP side (server.h says why it is not svc_run()): an
 * acceptor thread, and one thread per connection dispatching through
 * svc_getreq_common().
 */
#ifndef NFS3_SERVER_TCP_H
#define NFS3_SERVER_TCP_H

#include <netinet/in.h>

#include <rpc/rpc.h>

struct nfs3_tcp;

/*
 * Listen at @addr and serve up to @max connections at once; beyond, a new
 * one takes the place of the connection idle the longest (no call in
 * progress, none for a second), or is closed if none is idle. A
 * connection that made no call for @idle_ms (0: never) is closed.
 * nfs3_tcp_listener() is svc_vc's SVCXPRT of the listening socket, for
 * svc_reg() and rpcbind; it is never polled (the acceptor accepts).
 * Returns 0 or -errno.
 */
int nfs3_tcp_start(const struct sockaddr_in *addr, unsigned int max, int idle_ms,
		   struct nfs3_tcp **out);
SVCXPRT *nfs3_tcp_listener(const struct nfs3_tcp *t);
void nfs3_tcp_addr(const struct nfs3_tcp *t, struct sockaddr_in *addr);
unsigned int nfs3_tcp_conns(struct nfs3_tcp *t);

/* Stop accepting, shut every connection down, join the threads, free. */
void nfs3_tcp_stop(struct nfs3_tcp *t);

#endif /* NFS3_SERVER_TCP_H */

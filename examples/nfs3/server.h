/* SPDX-License-Identifier: MIT */
/*
 * The NFSv3 server as a library: one directory exported over RPC-over-RDMA
 * and TCP at once, with the MOUNT protocol beside NFS on both.
 *
 * RDMA: a listener of rpcrdma_svc_create_attr() served by rpcrdma_svc_run()
 * on its threads, under the library's built-in NFSv3 binding
 * (rpcrdma_ulb_nfs3()), with nothing registered: READ data leaves by RDMA
 * Write from the registered pool, WRITE data
 * arrives by RDMA Read, READDIR replies come back in Reply chunks.
 *
 * TCP: not svc_run(), which would poll the RDMA connections' descriptors
 * too (libtirpc registers every transport in one table) and race
 * rpcrdma_svc_run()'s threads for them. The server accepts its TCP
 * connections itself, makes each an SVCXPRT (svc_fd_create()) and serves
 * it on a thread of its own, through svc_getreq_common(): the same
 * dispatchers, one thread per client, and no descriptor shared with RDMA.
 *
 * One server per process: rpcgen's service routines reach the export
 * through a global.
 */
#ifndef NFS3_SERVER_H
#define NFS3_SERVER_H

#include <stdbool.h>
#include <netinet/in.h>

#include <rpcrdma/tirpc.h>

#define NFS3_TCP_PORT 2049
#define NFS3_DEFAULT_THREADS 4
#define NFS3_DEFAULT_MAX_TCP 64
/* knfsd's idle period, and librpcrdma's default idle timeout. */
#define NFS3_DEFAULT_IDLE_S 360
#define NFS3_MAX_IDLE_S (24 * 3600)

struct nfs3_server;

/**
 * struct nfs3_server_opts - what to serve, and how
 * @export_path: the directory
 * @rdma: serve over RDMA, at @rdma_addr (port 0: any)
 * @tcp: serve over TCP, at @tcp_addr (port 0: any)
 * @threads: RDMA serving threads, 1..RPCRDMA_SVC_MAX_THREADS
 * @max_tcp: TCP connections at once; beyond, a new one takes the place of
 *	the one idle the longest (no call in progress, none for a second),
 *	or is closed when accepted if none is idle
 * @idle_s: close a connection, TCP or RDMA, that made no call for this
 *	many seconds (0: never; at most NFS3_MAX_IDLE_S). RDMA connections
 *	also have librpcrdma's keepalive and make room at its max_connections
 *	(1024) the same way
 * @max_nodes: the node table's size (0: the default, export.h)
 * @rpcbind: register NFS (rdma and tcp) and MOUNT (tcp) with the local
 *	rpcbind; a refusal or no rpcbind is reported, not fatal. Off by default:
 *	a server in a test must not take the host's NFS entries
 */
struct nfs3_server_opts {
	const char *export_path;
	bool rdma;
	struct sockaddr_in rdma_addr;
	bool tcp;
	struct sockaddr_in tcp_addr;
	unsigned int threads;
	unsigned int max_tcp;
	unsigned int idle_s;
	unsigned int max_nodes;
	bool rpcbind;
};

/* Both transports on every address, at ports 20049 (RDMA) and 2049 (TCP). */
void nfs3_server_opts_init(struct nfs3_server_opts *o);

/**
 * nfs3_server_start - open the export and start serving
 * @o: the options
 * @out: set to the server
 *
 * Returns 0 once every listener listens, or -errno: -EBUSY (a server runs
 * in this process already), -EINVAL, the export's error (export.h), a
 * listener's (-EADDRINUSE, -ENODEV: no RDMA device, ...).
 */
int nfs3_server_start(const struct nfs3_server_opts *o, struct nfs3_server **out);

/* Where a transport listens (its port picked when 0 was asked); false if it does not. */
bool nfs3_server_rdma_addr(const struct nfs3_server *s, struct sockaddr_in *addr);
bool nfs3_server_tcp_addr(const struct nfs3_server *s, struct sockaddr_in *addr);

/* The RDMA server's counters (rpcrdma_svc_stats()); -ENOENT without RDMA. */
int nfs3_server_rdma_stats(struct nfs3_server *s, struct rpcrdma_stats *st);

/* TCP connections being served now. */
unsigned int nfs3_server_tcp_conns(struct nfs3_server *s);

/*
 * Stop serving and free everything: TCP connections are shut down, the
 * RDMA threads stopped (svc_exit(): it ends any svc_run() in the process
 * too), rpcbind registrations withdrawn. Call from a thread of the
 * program's, not from a service routine.
 */
void nfs3_server_stop(struct nfs3_server *s);

#endif /* NFS3_SERVER_H */

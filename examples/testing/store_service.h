/* SPDX-License-Identifier: MIT */
/* The block store's server, as the application would run it, and what its tests observe. */
#ifndef STORE_SERVICE_H
#define STORE_SERVICE_H

#include <netinet/in.h>
#include <pthread.h>

#include <rpc/rpc.h>

struct store_server {
	SVCXPRT *listener;
	pthread_t thread;
	struct sockaddr_in addr;	/* where it listens (127.0.0.1, a port of its own) */
	int run_rc;
};

/* rpcgen's dispatcher (store_svc.c). */
void store_prog_1(struct svc_req *rqstp, SVCXPRT *transp);

/* Listen over RPC-over-RDMA and serve on a thread of its own. Returns 0 or -errno. */
int store_server_start(struct store_server *s);
/* Stop serving and free everything the server holds. */
void store_server_stop(struct store_server *s);

/* Release callbacks of GET's placed data so far. */
unsigned int store_ddp_releases(void);
/* Forget the kept block. */
void store_reset(void);

#endif /* STORE_SERVICE_H */

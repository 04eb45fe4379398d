/* SPDX-License-Identifier: MIT */
/*
 * A libtirpc listener of rpcrdma_svc_create_mt() on 127.0.0.1, served by
 * rpcrdma_svc_run() on a thread of its own, for the suites that call it
 * from the test's thread (test_ulb.c, test_nfs3bind.c).
 */
#ifndef TIRPC_MTSRV_H
#define TIRPC_MTSRV_H

#include <netinet/in.h>
#include <pthread.h>

#include <rpc/rpc.h>

#include <rpcrdma/rpcrdma.h>

struct mtsrv_prog {
	rpcprog_t prog;
	rpcvers_t vers;
	void (*dispatch)(struct svc_req *rq, SVCXPRT *xprt);
};

struct mtsrv {
	SVCXPRT *listener;
	pthread_t thread;
	struct sockaddr_in addr;	/* where it listens */
	const struct mtsrv_prog *progs;
	unsigned int nprogs;
};

/* Listen, register @nprogs programs of @progs and serve. Returns 0 or -1 (a cmocka setup's). */
int mtsrv_start(struct mtsrv *s, const struct mtsrv_prog *progs, unsigned int nprogs);

/*
 * Stop serving, unregister and destroy; then the fabric must hold nothing
 * of the server's or its clients'. Returns 0, or -1 with a message.
 */
int mtsrv_stop(struct mtsrv *s);

/* The listener's server's counters (rpcrdma_svc_stats()), asserting they came. */
void mtsrv_stats(struct mtsrv *s, struct rpcrdma_stats *st);

/* A CLIENT's counters (RPCRDMA_CLGET_STATS), asserting they came. */
void mtsrv_clnt_stats(CLIENT *cl, struct rpcrdma_stats *st);

#endif /* TIRPC_MTSRV_H */

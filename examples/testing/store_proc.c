/* SPDX-License-Identifier: MIT */
/*
 * The service: the application code under test, written for libtirpc with
 * rpcgen -M. Over RPC-over-RDMA, GET names its data for direct placement
 * (rpcrdma_svc_reply_ddp()), from memory registered with the server, so the
 * bytes go by RDMA Write into the client's buffer without a copy.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/rpcrdma.h>
#include <rpcrdma/tirpc.h>

#include "store.h"
#include "store_service.h"

/* The most a block may hold. */
#define STORE_MAX (1u << 20)

static unsigned char *kept;		/* STORE_MAX bytes, allocated at the first PUT */
static size_t kept_len;
static struct rpcrdma_mem *kept_mem;	/* released with the server (svc_destroy) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int ddp_releases;

static bool_t is_rdma(SVCXPRT *xprt)
{
	return xprt->xp_netid && strncmp(xprt->xp_netid, "rdma", 4) == 0;
}

static void get_released(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&ddp_releases, 1, __ATOMIC_RELAXED);
}

unsigned int store_ddp_releases(void)
{
	return __atomic_load_n(&ddp_releases, __ATOMIC_RELAXED);
}

/* After the server is destroyed, which released the registration. */
void store_reset(void)
{
	pthread_mutex_lock(&lock);
	free(kept);
	kept = NULL;
	kept_mem = NULL;
	kept_len = 0;
	pthread_mutex_unlock(&lock);
}

bool_t store_null_1_svc(void *argp, void *result, struct svc_req *rqstp)
{
	(void)argp;
	(void)result;
	(void)rqstp;
	return TRUE;
}

bool_t store_put_1_svc(store_block *argp, u_int *result, struct svc_req *rqstp)
{
	SVCXPRT *xprt = rqstp->rq_xprt;

	if (argp->store_block_len > STORE_MAX)
		return FALSE;
	pthread_mutex_lock(&lock);
	if (!kept) {
		kept = malloc(STORE_MAX);
		/* Registered, GET's data goes out with no copy at all. */
		if (kept && is_rdma(xprt) &&
		    rpcrdma_svc_mem_register(rpcrdma_svc_native(xprt), kept, STORE_MAX, &kept_mem))
			kept_mem = NULL;
	}
	if (!kept) {
		pthread_mutex_unlock(&lock);
		return FALSE;
	}
	memcpy(kept, argp->store_block_val, argp->store_block_len);
	kept_len = argp->store_block_len;
	*result = (u_int)kept_len;
	pthread_mutex_unlock(&lock);
	return TRUE;
}

bool_t store_get_1_svc(u_int *argp, store_block *result, struct svc_req *rqstp)
{
	u_int n = *argp;

	pthread_mutex_lock(&lock);
	if (n > kept_len)
		n = (u_int)kept_len;
	result->store_block_len = n;
	result->store_block_val = (char *)kept;
	pthread_mutex_unlock(&lock);
	if (n && is_rdma(rqstp->rq_xprt))
		rpcrdma_svc_reply_ddp(rqstp->rq_xprt, kept, n, get_released, NULL);
	return TRUE;
}

/* No reply: the client's call stays in flight until the test ends it. */
bool_t store_hang_1_svc(void *argp, void *result, struct svc_req *rqstp)
{
	(void)argp;
	(void)result;
	(void)rqstp;
	return FALSE;
}

int store_prog_1_freeresult(SVCXPRT *xprt, xdrproc_t xdr_result, caddr_t result)
{
	(void)xprt;
	/* GET's data is the kept block itself, not the decoder's to free. */
	if (xdr_result == (xdrproc_t)xdr_store_block)
		((store_block *)result)->store_block_val = NULL;
	xdr_free(xdr_result, result);
	return 1;
}

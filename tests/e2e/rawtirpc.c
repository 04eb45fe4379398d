/* SPDX-License-Identifier: MIT */
/* A raw client facing a libtirpc service the test drives (rawtirpc.h). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "rawtirpc.h"

#define RAWTIRPC_CONNECT_ROUNDS 500	/* of 10 ms */

void rawtirpc_round(int ms)
{
	struct pollfd fds[64];
	int i, n = 0;

	for (i = 0; i < svc_max_pollfd && n < 64; i++)
		if (svc_pollfd[i].fd >= 0)
			fds[n++] = svc_pollfd[i];
	if (poll(fds, (nfds_t)n, ms) > 0)
		svc_getreq_poll(fds, n);
}

struct rawtirpc_connect {
	struct rawpeer *rp;
	const struct sockaddr *addr;
	struct rawpeer_opts opts;
	atomic_int rc;
	atomic_bool done;
};

static void *rawtirpc_connect_main(void *arg)
{
	struct rawtirpc_connect *c = arg;

	atomic_store(&c->rc, rawpeer_connect_opts(c->rp, c->addr, &c->opts));
	atomic_store(&c->done, true);
	return NULL;
}

int rawtirpc_connect(struct rawpeer *rp, SVCXPRT *lx, const struct rpcrdma_cm_private *pd,
		     uint8_t responder_resources)
{
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN];
	struct rawtirpc_connect c = {
		.rp = rp,
		.addr = (const struct sockaddr *)lx->xp_ltaddr.buf,
		.opts = { .pdata = pdata, .pdata_len = sizeof(pdata),
			  .responder_resources = responder_resources },
	};
	pthread_t th;
	int i;

	if (rpcrdma_cm_private_encode(pdata, sizeof(pdata), pd) != RPCRDMA_CM_PRIVATE_LEN)
		return -EINVAL;
	/* The service answers the connection on this thread: connect from another. */
	if (pthread_create(&th, NULL, rawtirpc_connect_main, &c))
		return -EAGAIN;
	for (i = 0; i < RAWTIRPC_CONNECT_ROUNDS && !atomic_load(&c.done); i++)
		rawtirpc_round(10);
	pthread_join(th, NULL);
	return atomic_load(&c.rc);
}

int rawtirpc_recv(struct rawpeer *rp, struct rawpeer_call *rc, int timeout_ms)
{
	int i, got = -ETIMEDOUT;

	for (i = 0; i <= timeout_ms / 10 && got == -ETIMEDOUT; i++) {
		rawtirpc_round(10);
		got = rawpeer_recv_call(rp, rc, 0);
	}
	return got;
}

/* SPDX-License-Identifier: MIT */
/*
 * The server's main, made startable from a test: a listener of
 * rpcrdma_svc_create_mt() on 127.0.0.1, the rpcgen dispatcher registered on
 * it, and rpcrdma_svc_run() on a thread until svc_exit().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <rpcrdma/tirpc.h>

#include "store.h"
#include "store_service.h"

static void *serve(void *arg)
{
	struct store_server *s = arg;

	s->run_rc = rpcrdma_svc_run(s->listener);
	return NULL;
}

int store_server_start(struct store_server *s)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	memset(s, 0, sizeof(*s));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->listener = rpcrdma_svc_create_mt((const struct sockaddr *)&sin, 0, 0, 1);
	if (!s->listener)
		return -errno;
	if (!svc_reg(s->listener, STORE_PROG, STORE_VERS, store_prog_1, NULL)) {
		svc_destroy(s->listener);
		return -EEXIST;
	}
	memcpy(&s->addr, s->listener->xp_ltaddr.buf, sizeof(s->addr));
	if (pthread_create(&s->thread, NULL, serve, s)) {
		svc_unreg(STORE_PROG, STORE_VERS);
		svc_destroy(s->listener);
		return -EAGAIN;
	}
	return 0;
}

void store_server_stop(struct store_server *s)
{
	svc_exit();
	pthread_join(s->thread, NULL);
	svc_unreg(STORE_PROG, STORE_VERS);
	svc_destroy(s->listener);	/* and the registrations made on it */
	store_reset();
}

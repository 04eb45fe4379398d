/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "rawclnt.h"

const struct rpcrdma_cm_private cfix_peer_pd = { 4096, 4096, 0 };

void cfix_up(struct cfix *f, bool bounce)
{
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN];
	struct rpcrdma_clnt_attr attr;

	memset(f, 0, sizeof(*f));
	f->bounce = bounce;
	f->xid = 0x9000;
	assert_int_equal(rpcrdma_cm_private_encode(pdata, sizeof(pdata), &cfix_peer_pd),
			 RPCRDMA_CM_PRIVATE_LEN);
	assert_int_equal(rawpeer_listen(&f->srv), 0);
	assert_int_equal(rawpeer_accept_start(&f->srv, pdata, sizeof(pdata)), 0);
	RPCRDMA_INIT(&attr);
	attr.addr = (const struct sockaddr *)&f->srv.addr;
	attr.connect_timeout_ms = 5000;
	attr.call_timeout_ms = 10000;
	attr.max_segment = CFIX_SEG;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &f->clnt), 0);
	assert_int_equal(rawpeer_accept_join(&f->srv), 0);
	f->local = aligned_alloc(4096, CFIX_MEM);
	f->arena = aligned_alloc(4096, CFIX_MEM);
	assert_non_null(f->local);
	assert_non_null(f->arena);
	memset(f->arena, 0x3c, CFIX_MEM);
	assert_non_null(rawpeer_reg(&f->srv, f->local, CFIX_MEM, IBV_ACCESS_LOCAL_WRITE));
	if (!bounce)
		assert_int_equal(rpcrdma_clnt_mem_register(f->clnt, f->arena, CFIX_MEM, &f->mem),
				 0);
}

void cfix_down(struct cfix *f)
{
	rpcrdma_clnt_destroy(f->clnt);
	rawpeer_close(&f->srv);
	free(f->arena);
	free(f->local);
	harness_assert_fabric_idle();
}

void cfix_count_done(struct rpcrdma_call *call)
{
	(*(int *)call->arg)++;
}

void cfix_run(struct cfix *f, const int *finished, int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		rpcrdma_clnt_poll(f->clnt, 16);
		if (*finished)
			return;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			return;
		poll(NULL, 0, 1);
	}
}

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

#include "ddp.h"
#include "harness.h"
#include "rawclnt.h"

const struct rpcrdma_cm_private cfix_peer_pd = { 4096, 4096, 0 };

void cfix_up(struct cfix *f, bool bounce)
{
	cfix_up_flags(f, bounce, 0);
}

void cfix_up_flags(struct cfix *f, bool bounce, uint32_t flags)
{
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN];
	struct rpcrdma_clnt_attr attr;

	memset(f, 0, sizeof(*f));
	f->bounce = bounce;
	f->xid = 0x9000;
	assert_int_equal(rpcrdma_cm_private_encode(pdata, sizeof(pdata), &cfix_peer_pd),
			 RPCRDMA_CM_PRIVATE_LEN);
	RPCRDMA_INIT(&attr);
	attr.connect_timeout_ms = 5000;
	attr.call_timeout_ms = 10000;
	attr.max_segment = CFIX_SEG;
	attr.flags = flags;
	assert_int_equal(rawpeer_serve_client(&f->srv, &attr, pdata, sizeof(pdata), &f->clnt), 0);
	f->local = aligned_alloc(4096, CFIX_MEM);
	f->arena = aligned_alloc(4096, CFIX_MEM);
	assert_non_null(f->local);
	assert_non_null(f->arena);
	memset(f->arena, 0x3c, CFIX_MEM);
	assert_non_null(rawpeer_reg_sink(&f->srv, f->local, CFIX_MEM));
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

static void ccall_key(struct ccall *c, uint32_t handle, uint64_t offset)
{
	assert_true(c->nkeys < sizeof(c->rkeys) / sizeof(c->rkeys[0]));
	c->offs[c->nkeys] = offset;
	c->rkeys[c->nkeys++] = handle;
}

void cfix_call_start(struct cfix *f, struct ccall *c, unsigned int slot, size_t result_max,
		     size_t reply_max, int timeout_ms)
{
	unsigned char *base = f->arena + slot * 65536;
	struct rpcrdma_read_segment rs;
	struct rpcrdma_segment seg;
	uint32_t i, j;

	memset(c, 0, sizeof(*c));
	if (f->bounce) {
		c->msg = malloc(16);
		c->result = result_max ? malloc(result_max) : NULL;
		c->reply = malloc(reply_max);
		if (c->result)
			memset(c->result, 0x3c, result_max);
		if (c->reply)
			memset(c->reply, 0x3c, reply_max);
	} else {
		assert_true((slot + 1) * 65536 <= CFIX_MEM && result_max <= 32768 - 64 &&
			    reply_max <= 32768);
		c->msg = base;
		c->result = result_max ? base + 64 : NULL;
		c->reply = base + 64 + 32768;
	}
	assert_non_null(c->msg);
	assert_non_null(c->reply);
	ddp_fill(c->msg, 16, ++f->xid);
	rpcmsg_call_head(c->msg, f->xid);
	c->call.struct_size = sizeof(c->call);
	c->call.msg = c->msg;
	c->call.msg_len = 16;
	c->call.result = c->result;
	c->call.result_max = result_max;
	c->call.reply = c->reply;
	c->call.reply_max = reply_max;
	c->call.timeout_ms = timeout_ms;
	c->call.done = cfix_count_done;
	c->call.arg = &c->finished;
	assert_int_equal(rpcrdma_clnt_submit(f->clnt, &c->call), 0);

	assert_int_equal(rawpeer_recv_call(&f->srv, &c->rc, 3000), 0);
	assert_int_equal(c->rc.hdr.xid, f->xid);
	for (i = 0; i < c->rc.hdr.read_segs; i++) {
		rpcrdma_hdr_read_segment(&c->rc.hdr, i, &rs);
		ccall_key(c, rs.seg.handle, rs.seg.offset);
	}
	for (i = 0; i < c->rc.hdr.write_chunks; i++) {
		for (j = 0; j < c->rc.hdr.write[i].nsegs; j++) {
			rpcrdma_chunk_segment(&c->rc.hdr.write[i], j, &seg);
			ccall_key(c, seg.handle, seg.offset);
		}
	}
	for (j = 0; c->rc.hdr.has_reply && j < c->rc.hdr.reply.nsegs; j++) {
		rpcrdma_chunk_segment(&c->rc.hdr.reply, j, &seg);
		ccall_key(c, seg.handle, seg.offset);
	}
}

void cfix_call_free(struct cfix *f, struct ccall *c)
{
	if (f->bounce) {
		free(c->msg);
		free(c->result);
		free(c->reply);
	}
}

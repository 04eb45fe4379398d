/* SPDX-License-Identifier: MIT */
/*
 * Read lists with zero-length chunks get an answer, through the native
 * server and through the libtirpc adapter alike (RFC 8166 section 3.4.5 has
 * a Read chunk's segments carry what the position names, and nothing
 * forbids none). A raw client sends an RPC NULL call shaped each way:
 *
 * - alone: RDMA_MSG, one Read chunk of length 0 after the message;
 * - beside data: a chunk of 8 bytes, then a zero-length one after it;
 * - zero in a long call: RDMA_NOMSG, the message in a position-zero chunk,
 *   a zero-length chunk after it;
 * - position zero: RDMA_NOMSG whose position-zero chunk is empty, which
 *   carries no message at all: RDMA_ERROR / ERR_CHUNK (section 4.5).
 *
 * Such a call has nothing to pull. The server once queued it for "the next
 * pass", and the adapter's poll-then-arm path slept without one: the call
 * was never answered.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include <rpc/rpc.h>

#include <rpcrdma/proto.h>
#include <rpcrdma/tirpc.h>

#include "ddp.h"
#include "harness.h"
#include "rawpeer.h"
#include "rawtirpc.h"

#define GRANT 8
#define MEM 8192u
#define ANSWER_MS 3000
#define ZPROG 0x20000097u
#define ZVERS 1u
#define NULL_CALL_LEN 40	/* xid CALL rpcvers prog vers proc, AUTH_NONE cred and verf */

static const struct rpcrdma_cm_private peer_pd = { 4096, 4096, 0 };

/* Which server the raw client faces. */
struct zrig {
	struct harness_server hs;	/* native */
	SVCXPRT *lx;			/* or the libtirpc listener, driven by this thread */
	struct rawpeer rp;
	unsigned char *mem;		/* what the server pulls from */
	struct ibv_mr *mr;
	uint32_t xid;
};

static void zdispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	if (rq->rq_proc == 0)
		svc_sendreply(xprt, (xdrproc_t)(void (*)(void))xdr_void, NULL);
	else
		svcerr_noproc(xprt);
}

static void zrig_up(struct zrig *r, bool tirpc)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN];
	struct rawpeer_opts opts = {
		.pdata = pdata,
		.pdata_len = sizeof(pdata),
		.responder_resources = 16,
	};

	memset(r, 0, sizeof(*r));
	r->xid = 0x7a00;
	if (tirpc) {
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		r->lx = rpcrdma_svc_create((struct sockaddr *)&sin, 0, 0);
		assert_non_null(r->lx);
		assert_true(svc_reg(r->lx, ZPROG, ZVERS, zdispatch, NULL));
		assert_int_equal(rawtirpc_connect(&r->rp, r->lx, &peer_pd, 16), 0);
	} else {
		assert_int_equal(harness_server_start(&r->hs, GRANT, 0, HARNESS_ECHO), 0);
		assert_int_equal(rpcrdma_cm_private_encode(pdata, sizeof(pdata), &peer_pd),
				 RPCRDMA_CM_PRIVATE_LEN);
		assert_int_equal(rawpeer_connect_opts(&r->rp, (struct sockaddr *)&r->hs.addr,
						      &opts), 0);
		assert_true(harness_wait_established(&r->hs, 1, 3000));
	}
	r->mem = aligned_alloc(4096, MEM);
	assert_non_null(r->mem);
	memset(r->mem, 0x5a, MEM);
	r->mr = rawpeer_reg(&r->rp, r->mem, MEM, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(r->mr);
}

static void zrig_down(struct zrig *r)
{
	int i;

	rawpeer_close(&r->rp);
	if (r->lx) {
		for (i = 0; i < 20; i++)
			rawtirpc_round(5);
		svc_unreg(ZPROG, ZVERS);
		svc_destroy(r->lx);
	} else {
		harness_server_stop(&r->hs);
	}
	free(r->mem);
	harness_assert_fabric_idle();
}

/* An RPC NULL call with AUTH_NONE, @xid, into @msg (NULL_CALL_LEN bytes). */
static void znull_call(unsigned char *msg, uint32_t xid)
{
	const uint32_t words[NULL_CALL_LEN / 4] = { xid, 0, 2, ZPROG, ZVERS, 0, 0, 0, 0, 0 };
	size_t k;

	for (k = 0; k < NULL_CALL_LEN / 4; k++)
		put32(msg, k, words[k]);
}

/* A Read segment over @len bytes of the rig's memory at @off, at XDR @position. */
static struct rpcrdma_read_segment zseg(const struct zrig *r, uint32_t position, uint32_t off,
					uint32_t len)
{
	struct rpcrdma_read_segment s = {
		.position = position,
		.seg = { .handle = r->mr->rkey, .length = len, .offset = (uintptr_t)r->mem + off },
	};

	return s;
}

/*
 * Send @nsegs Read segments with @proc (RDMA_NOMSG: the NULL call sits in
 * the rig's memory at 0 for a position-zero chunk to name; RDMA_MSG: it is
 * inline) and wait, driving the service, for the answer in @rc.
 */
static void zsend(struct zrig *r, uint32_t proc, const struct rpcrdma_read_segment *segs,
		  uint32_t nsegs, struct rawpeer_call *rc)
{
	struct rpcrdma_hdr_enc enc = { .xid = ++r->xid, .credit = GRANT, .proc = proc,
				       .read_segs = nsegs, .read = segs };
	unsigned char buf[RAWPEER_BUF];
	long n;
	int got;

	n = rpcrdma_hdr_encode(buf, sizeof(buf), &enc);
	assert_true(n > 0);
	znull_call(r->mem, r->xid);
	if (proc == RPCRDMA_MSG) {
		znull_call(buf + n, r->xid);
		n += NULL_CALL_LEN;
	}
	assert_int_equal(rawpeer_send(&r->rp, buf, (size_t)n), 0);
	got = r->lx ? rawtirpc_recv(&r->rp, rc, ANSWER_MS) :
		      rawpeer_recv_call(&r->rp, rc, ANSWER_MS);
	if (got == -ETIMEDOUT)
		fail_msg("%s server: no answer to XID 0x%x within %d ms",
			 r->lx ? "libtirpc" : "native", r->xid, ANSWER_MS);
	assert_int_equal(got, 0);
	assert_int_equal(rc->hdr.xid, r->xid);
}

/* The answer is an RPC reply to the call, inline. */
static void zexpect_reply(const struct zrig *r, const struct rawpeer_call *rc)
{
	const unsigned char *b = rc->buf + rc->hdr.hdr_len;

	if (rc->hdr.proc != RPCRDMA_MSG)
		fail_msg("XID 0x%x: proc %u (err %u), expected an RDMA_MSG reply", r->xid,
			 rc->hdr.proc, rc->hdr.err);
	assert_true(rc->len - (int)rc->hdr.hdr_len >= 12);
	assert_int_equal(get32(b, 0), r->xid);
	if (r->lx) {
		/* libtirpc: REPLY, MSG_ACCEPTED, AUTH_NONE, SUCCESS, no results. */
		assert_int_equal(rc->len - (int)rc->hdr.hdr_len, 24);
		assert_int_equal(get32(b, 1), 1);
		assert_int_equal(get32(b, 2), 0);
		assert_int_equal(get32(b, 5), 0);
	}
}

static void zero_shapes(bool tirpc)
{
	static struct rawpeer_call rc;
	struct rpcrdma_read_segment segs[2];
	struct zrig r;

	zrig_up(&r, tirpc);

	/* Alone: an empty chunk after the message. */
	segs[0] = zseg(&r, NULL_CALL_LEN, 1024, 0);
	zsend(&r, RPCRDMA_MSG, segs, 1, &rc);
	zexpect_reply(&r, &rc);

	/* Beside data: 8 bytes at the end of the message, then an empty chunk. */
	segs[0] = zseg(&r, NULL_CALL_LEN, 1024, 8);
	segs[1] = zseg(&r, NULL_CALL_LEN + 8, 2048, 0);
	zsend(&r, RPCRDMA_MSG, segs, 2, &rc);
	zexpect_reply(&r, &rc);

	/* A long call, its message pulled from position zero, then an empty chunk. */
	segs[0] = zseg(&r, 0, 0, NULL_CALL_LEN);
	segs[1] = zseg(&r, NULL_CALL_LEN, 1024, 0);
	zsend(&r, RPCRDMA_NOMSG, segs, 2, &rc);
	zexpect_reply(&r, &rc);

	/* Position zero, empty: no RPC message at all. */
	segs[0] = zseg(&r, 0, 0, 0);
	zsend(&r, RPCRDMA_NOMSG, segs, 1, &rc);
	if (rc.hdr.proc != RPCRDMA_ERROR || rc.hdr.err != RPCRDMA_ERR_CHUNK)
		fail_msg("empty long call: proc %u err %u, expected RDMA_ERROR / ERR_CHUNK",
			 rc.hdr.proc, rc.hdr.err);

	/* And the connection serves on: the first shape again. */
	segs[0] = zseg(&r, NULL_CALL_LEN, 1024, 0);
	zsend(&r, RPCRDMA_MSG, segs, 1, &rc);
	zexpect_reply(&r, &rc);
	zrig_down(&r);
}

static void t_native_zero_length_chunks(void **state)
{
	(void)state;
	zero_shapes(false);
}

static void t_tirpc_zero_length_chunks(void **state)
{
	(void)state;
	/* The adapter's service runs on this thread, with its own fabric objects. */
	harness_require_inproc("the libtirpc service runs in the test process");
	zero_shapes(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_native_zero_length_chunks),
		cmocka_unit_test(t_tirpc_zero_length_chunks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

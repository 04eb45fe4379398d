/* SPDX-License-Identifier: MIT */
/*
 * Credits (RFC 8166 section 3.3.1), both sides, on their own.
 *
 * The server's grant (svc_rdma_grant(), lib/svcrdma/svc_sendto.c): the
 * receives it has posted, at most max_requests, never 0 (a grant of 0
 * deadlocks the client). The client's rdma_credit is only a request: the
 * grant does not read it, and max_requests is the server's ceiling.
 *
 * The client's handling of each reply's rdma_credit (rpc_rdma.c, on the
 * plain path and the general one): clamped to [1, max_requests], the new
 * grant in force at once, and calls beyond it held back. A raw server on
 * softrdma sends the replies, so the credits are exactly the test's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rpcrdma/rpcrdma.h>

#include "../e2e/rawpeer.h"
#include "svc_rdma.h"
#include "xprt_rdma.h"

#define MAX_REQ 4
#define WAIT_MS 5000

static struct rawpeer rp;
static struct rpcrdma_clnt *clnt;

/* A call in flight, with its bytes. */
struct pending {
	struct rpcrdma_call call;
	unsigned char msg[24];
	unsigned char reply[256];
	bool done;
};

static void pending_done(struct rpcrdma_call *call)
{
	((struct pending *)call->arg)->done = true;
}

static void put32(unsigned char *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static void submit(struct pending *p, uint32_t xid)
{
	memset(p, 0, sizeof(*p));
	put32(p->msg, xid);	/* CALL, then anything: the raw server reads only the XID */
	p->call = (struct rpcrdma_call){ RPCRDMA_SIZED(p->call) };
	p->call.msg = p->msg;
	p->call.msg_len = sizeof(p->msg);
	p->call.reply = p->reply;
	p->call.reply_max = sizeof(p->reply);
	p->call.done = pending_done;
	p->call.arg = p;
	assert_int_equal(rpcrdma_clnt_submit(clnt, &p->call), 0);
}

/* The raw server takes the next call; returns its XID. */
static uint32_t recv_call(void)
{
	static struct rawpeer_call c;

	assert_int_equal(rawpeer_recv_call(&rp, &c, WAIT_MS), 0);
	return c.hdr.xid;
}

/* Nothing more was sent to the raw server. */
static void nothing_sent(void)
{
	unsigned char buf[64];

	assert_int_equal(rawpeer_recv(&rp, buf, sizeof(buf), 0), -ETIMEDOUT);
}

/* An RDMA_MSG reply granting @credit: an accepted, successful RPC reply. */
static void reply_msg(uint32_t xid, uint32_t credit)
{
	struct rpcrdma_hdr_enc enc = { .xid = xid, .credit = credit, .proc = RPCRDMA_MSG };
	unsigned char buf[RPCRDMA_HDR_MIN_LEN + 24] = { 0 };

	assert_int_equal(rpcrdma_hdr_encode(buf, sizeof(buf), &enc), RPCRDMA_HDR_MIN_LEN);
	put32(buf + RPCRDMA_HDR_MIN_LEN, xid);
	put32(buf + RPCRDMA_HDR_MIN_LEN + 4, 1);	/* REPLY; MSG_ACCEPTED, AUTH_NONE, SUCCESS */
	assert_int_equal(rawpeer_send(&rp, buf, sizeof(buf)), 0);
}

/* RDMA_ERROR / ERR_CHUNK granting @credit: the general reply path. */
static void reply_err(uint32_t xid, uint32_t credit)
{
	struct rpcrdma_hdr_enc enc = { .xid = xid, .credit = credit, .proc = RPCRDMA_ERROR,
				       .err = RPCRDMA_ERR_CHUNK };
	unsigned char buf[64];
	long len = rpcrdma_hdr_encode(buf, sizeof(buf), &enc);

	assert_true(len > 0);
	assert_int_equal(rawpeer_send(&rp, buf, (size_t)len), 0);
}

/* Poll the client until @p is done (bounded by WAIT_MS). */
static void wait_done(struct pending *p)
{
	int i;

	for (i = 0; i < WAIT_MS / 10 && !p->done; i++)
		assert_true(rpcrdma_clnt_wait(clnt, 10) >= 0);
	assert_true(p->done);
}

static uint32_t credits(void)
{
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };

	assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);
	assert_int_equal(rpcrdma_clnt_xprt(clnt)->rx_credits, info.credits);
	return info.credits;
}

static uint32_t next_xid = 0x1000;

/* One call answered with @credit by the plain or general path: the grant after it. */
static uint32_t grant_after(uint32_t credit, bool error_reply)
{
	struct pending p;
	uint32_t xid = next_xid++;

	submit(&p, xid);
	assert_int_equal(recv_call(), xid);
	if (error_reply)
		reply_err(xid, credit);
	else
		reply_msg(xid, credit);
	wait_done(&p);
	assert_int_equal(p.call.status, error_reply ? -EREMOTEIO : 0);
	return credits();
}

/* The server's grant: receives posted, clamped to [1, max_requests]. */
static void test_server_grant(void **state)
{
	static struct svcxprt_rdma rdma;

	(void)state;
	memset(&rdma, 0, sizeof(rdma));
	rdma.sc_max_requests = 8;
	rdma.sc_ep.recv_posted = 5;
	assert_int_equal(svc_rdma_grant(&rdma), 5);
	rdma.sc_ep.recv_posted = 8;
	assert_int_equal(svc_rdma_grant(&rdma), 8);
	rdma.sc_ep.recv_posted = 9;
	assert_int_equal(svc_rdma_grant(&rdma), 8);
	rdma.sc_ep.recv_posted = UINT32_MAX;
	assert_int_equal(svc_rdma_grant(&rdma), 8);
	/* Nothing posted (all receives consumed): still one, never 0. */
	rdma.sc_ep.recv_posted = 0;
	assert_int_equal(svc_rdma_grant(&rdma), 1);
	rdma.sc_ep.recv_posted = 1;
	assert_int_equal(svc_rdma_grant(&rdma), 1);
	/* A ceiling of 1 (max_requests 1): 1 whatever is posted. */
	rdma.sc_max_requests = 1;
	rdma.sc_ep.recv_posted = 64;
	assert_int_equal(svc_rdma_grant(&rdma), 1);
}

/* Before any reply the client has one credit (RFC 8166 3.3.1). */
static void test_client_initial(void **state)
{
	(void)state;
	assert_int_equal(credits(), 1);
}

/* Grants on the plain path (chunkless RDMA_MSG): [1, MAX_REQ]. */
static void test_client_clamp_plain(void **state)
{
	(void)state;
	assert_int_equal(grant_after(3, false), 3);
	assert_int_equal(grant_after(MAX_REQ, false), MAX_REQ);
	assert_int_equal(grant_after(MAX_REQ + 1, false), MAX_REQ);
	assert_int_equal(grant_after(UINT32_MAX, false), MAX_REQ);
	assert_int_equal(grant_after(0, false), 1);
	assert_int_equal(grant_after(2, false), 2);	/* a grant may shrink */
	assert_int_equal(grant_after(1, false), 1);
}

/* The same on the general path (an RDMA_ERROR reply, decoded in full). */
static void test_client_clamp_general(void **state)
{
	(void)state;
	assert_int_equal(grant_after(2, true), 2);
	assert_int_equal(grant_after(1000, true), MAX_REQ);
	assert_int_equal(grant_after(0, true), 1);
	assert_int_equal(grant_after(MAX_REQ, true), MAX_REQ);
}

/* A reply discarded (no call has its XID: RFC 8166 4.5) grants nothing. */
static void test_client_dropped_reply(void **state)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	uint64_t dropped;
	int i;

	(void)state;
	assert_int_equal(grant_after(2, false), 2);
	assert_int_equal(rpcrdma_clnt_stats(clnt, &st), 0);
	dropped = st.dropped;
	reply_msg(0xdead, MAX_REQ);
	reply_err(0xbeef, 0);
	for (i = 0; i < WAIT_MS / 10 && st.dropped < dropped + 2; i++) {
		assert_true(rpcrdma_clnt_wait(clnt, 10) >= 0);
		assert_int_equal(rpcrdma_clnt_stats(clnt, &st), 0);
	}
	assert_int_equal(st.dropped, dropped + 2);
	assert_int_equal(credits(), 2);
}

/*
 * A grant clamped to 1 (the server said 0) holds the second call back
 * until the first is answered; the answer's grant of 2 then lets both of
 * the next two go at once, and no third.
 */
static void test_client_within_grant(void **state)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);
	struct pending a, b, c, d, e;
	uint32_t xa, xb, xc, xd, xe;
	int i;

	(void)state;
	assert_int_equal(grant_after(0, false), 1);
	xa = next_xid++;
	xb = next_xid++;
	submit(&a, xa);
	submit(&b, xb);
	assert_int_equal(recv_call(), xa);
	for (i = 0; i < 3; i++)
		assert_true(rpcrdma_clnt_poll(clnt, 16) >= 0);
	assert_int_equal(x->rx_outstanding, 1);
	nothing_sent();
	reply_msg(xa, 2);
	wait_done(&a);
	assert_int_equal(credits(), 2);
	assert_int_equal(recv_call(), xb);

	xc = next_xid++;
	xd = next_xid++;
	xe = next_xid++;
	submit(&c, xc);
	submit(&d, xd);
	submit(&e, xe);
	assert_int_equal(recv_call(), xc);
	assert_int_equal(x->rx_outstanding, 2);
	nothing_sent();
	reply_msg(xb, 2);
	wait_done(&b);
	assert_int_equal(recv_call(), xd);
	reply_msg(xc, MAX_REQ);
	reply_msg(xd, MAX_REQ);
	wait_done(&c);
	wait_done(&d);
	assert_int_equal(recv_call(), xe);
	reply_msg(xe, MAX_REQ);
	wait_done(&e);
	assert_int_equal(credits(), MAX_REQ);
}

static int connect_client(void)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };

	memset(&rp, 0, sizeof(rp));
	attr.max_requests = MAX_REQ;
	attr.connect_timeout_ms = WAIT_MS;
	attr.call_timeout_ms = 30000;
	return rawpeer_serve_client(&rp, &attr, NULL, 0, &clnt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_grant),
		/* In this order: the first sees the connection's initial credit. */
		cmocka_unit_test(test_client_initial),
		cmocka_unit_test(test_client_clamp_plain),
		cmocka_unit_test(test_client_clamp_general),
		cmocka_unit_test(test_client_dropped_reply),
		cmocka_unit_test(test_client_within_grant),
	};
	int rc = connect_client();

	if (rc) {
		fprintf(stderr, "skip: no softrdma connection to a raw server (%s)\n",
			strerror(-rc));
		rawpeer_close(&rp);
		return 77;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rpcrdma_clnt_destroy(clnt);
	rawpeer_close(&rp);
	return rc;
}

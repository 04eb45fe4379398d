/* SPDX-License-Identifier: MIT */
/*
 * RFC 8166 conformance, rule by rule, against a raw peer (rawpeer.h) that
 * speaks the wire format itself.
 *
 * Server (a raw client against the library server in HARNESS_DDP mode):
 * ERR_VERS echoes the failing message's rdma_vers with low = high = 1
 * (section 4.5); a message shorter than 28 bytes is dropped and counted; an
 * empty Write chunk returns its result item inline and is echoed empty in
 * the reply's Write list (sections 3.4.6, 4.3.2); an application may answer
 * a call with RDMA_ERROR / ERR_CHUNK (section 3.4.5).
 *
 * Client (a raw server against the library client): an inline reply to a
 * call that offered a Reply chunk, with the chunk absent or echoed with zero
 * lengths, lands intact (section 4.3.3), through windows and bounce buffers
 * alike, and through the libtirpc CLIENT; replies the client cannot accept
 * are dropped, counted, and leave the call pending until a valid reply or
 * its timeout (section 4.5), among them a reply whose RPC message does not
 * start with the call's XID, REPLY and a reply_stat (RFC 5531 section 9),
 * whichever way it came: inline, after a Write chunk, or in the Reply chunk
 * (windows, per-call MRs, persistent registration, bounce buffers), and
 * through the libtirpc CLIENT; ERR_VERS and ERR_CHUNK end a call with their
 * own statuses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rpc/rpc.h>

#include <rpcrdma/proto.h>
#include <rpcrdma/tirpc.h>
#include <softrdma.h>

#include "ddp.h"
#include "harness.h"
#include "rawclnt.h"
#include "rawpeer.h"
#include "rawtirpc.h"
#include "xprt_rdma.h"

#define GRANT 8
#define MEM (256u * 1024)
#define SEG 4096u
#define DROP_WAIT_MS 150

static const struct rpcrdma_cm_private peer_pd = { 4096, 4096, 0 };

/* ---- A raw client against the library server ------------------------------------------- */

struct srig {
	struct harness_server hs;
	struct rawpeer rp;
	unsigned char *mem;
	struct ibv_mr *mr;
	uint32_t xid;
};

static void srig_up(struct srig *r)
{
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN];
	struct rawpeer_opts opts = {
		.pdata = pdata,
		.pdata_len = sizeof(pdata),
		.responder_resources = 16,
	};

	memset(r, 0, sizeof(*r));
	memset(&ddp_counters, 0, sizeof(ddp_counters));
	r->xid = 0x5000;
	assert_int_equal(harness_server_start(&r->hs, GRANT, 0, HARNESS_DDP), 0);
	r->mem = aligned_alloc(4096, MEM);
	assert_non_null(r->mem);
	memset(r->mem, 0, MEM);
	assert_int_equal(rpcrdma_cm_private_encode(pdata, sizeof(pdata), &peer_pd),
			 RPCRDMA_CM_PRIVATE_LEN);
	assert_int_equal(rawpeer_connect_opts(&r->rp, (struct sockaddr *)&r->hs.addr, &opts), 0);
	r->mr = rawpeer_reg(&r->rp, r->mem, MEM, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(r->mr);
	/* Sends before ESTABLISHED is seen are fine; the count makes teardown exact. */
	assert_true(harness_wait_established(&r->hs, 1, 3000));
}

static struct rpcrdma_stats srig_stats(struct srig *r)
{
	return harness_server_stats(&r->hs);
}

static void srig_down(struct srig *r)
{
	rawpeer_close(&r->rp);
	harness_server_stop(&r->hs);
	assert_int_equal(atomic_load(&ddp_counters.released), atomic_load(&ddp_counters.named));
	free(r->mem);
	harness_assert_fabric_idle();
}

/* Send the transport header @enc followed by @body. */
static void srig_send(struct srig *r, const struct rpcrdma_hdr_enc *enc, const void *body,
		      size_t len)
{
	unsigned char buf[RAWPEER_BUF];
	long n = rpcrdma_hdr_encode(buf, sizeof(buf), enc);

	assert_true(n > 0 && (size_t)n + len <= sizeof(buf));
	memcpy(buf + n, body, len);
	assert_int_equal(rawpeer_send(&r->rp, buf, (size_t)n + len), 0);
}

/* A DDP-protocol call (ddp.h) of DDP_CALL_LEN bytes. */
static void srig_msg(struct srig *r, unsigned char *msg, uint32_t op, uint32_t arg0, uint32_t arg1)
{
	ddp_call_msg(msg, ++r->xid, op, arg0, arg1);
}

/* A call is still served: an echo comes back inline. */
static void srig_good_call(struct srig *r)
{
	struct rpcrdma_hdr_enc enc = { .credit = GRANT, .proc = RPCRDMA_MSG };
	static struct rawpeer_call rc;
	unsigned char msg[DDP_CALL_LEN];

	srig_msg(r, msg, DDP_OP_ECHO, 0, 0);
	enc.xid = r->xid;
	srig_send(r, &enc, msg, sizeof(msg));
	assert_int_equal(rawpeer_recv_call(&r->rp, &rc, 3000), 0);
	assert_int_equal(rc.hdr.xid, r->xid);
	assert_int_equal(rc.hdr.proc, RPCRDMA_MSG);
	assert_int_equal(rc.len - (int)rc.hdr.hdr_len, sizeof(msg));
	harness_assert_echo(rc.buf + rc.hdr.hdr_len, msg, sizeof(msg));
}

/*
 * Section 4.5: an RDMA_ERROR carries the failing message's rdma_xid and
 * rdma_vers; ERR_VERS names the versions the responder supports (1 to 1).
 */
static void t_svc_err_vers_echoes_vers(void **state)
{
	static const uint32_t versions[] = { 0, 2, 7, 0xffffffffu };
	struct srig r;
	size_t i;

	srig_up(&r);
	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		unsigned char call[28 + 16], reply[RAWPEER_BUF];
		uint32_t xid = 0x7100 + (uint32_t)i;
		int n;

		memset(call, 0, sizeof(call));
		put32(call, 0, xid);
		put32(call, 1, versions[i]);
		put32(call, 2, GRANT);
		put32(call, 3, RPCRDMA_MSG);
		put32(call, 7, xid);
		assert_int_equal(rawpeer_send(&r.rp, call, sizeof(call)), 0);
		n = rawpeer_recv(&r.rp, reply, sizeof(reply), 3000);
		if (n != 28 || get32(reply, 0) != xid || get32(reply, 3) != RPCRDMA_ERROR ||
		    get32(reply, 4) != RPCRDMA_ERR_VERS)
			fail_msg("version %u: expected a 28-byte ERR_VERS, got %d bytes", versions[i],
				 n);
		if (get32(reply, 1) != versions[i])
			fail_msg("version %u: ERR_VERS carries rdma_vers %u", versions[i],
				 get32(reply, 1));
		assert_true(get32(reply, 2) >= 1);
		assert_int_equal(get32(reply, 5), 1);
		assert_int_equal(get32(reply, 6), 1);
	}
	srig_good_call(&r);
	srig_down(&r);
}

/* Section 4.5: a message too short for an RPC-over-RDMA header (28 bytes) is discarded. */
static void t_svc_short_message_dropped(void **state)
{
	static const size_t lens[] = { 4, 15, 16, 20, 24, 27 };
	struct rpcrdma_stats before = { RPCRDMA_SIZED(before) }, after = { RPCRDMA_SIZED(after) };
	struct srig r;
	size_t i;

	srig_up(&r);
	srig_good_call(&r);
	before = srig_stats(&r);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		unsigned char msg[28], reply[RAWPEER_BUF];
		int n;

		/* [xid 1 credit RDMA_MSG 0 0 0], cut to the length. */
		memset(msg, 0, sizeof(msg));
		put32(msg, 0, 0x7200 + (uint32_t)i);
		put32(msg, 1, RPCRDMA_VERSION);
		put32(msg, 2, GRANT);
		put32(msg, 3, RPCRDMA_MSG);
		assert_int_equal(rawpeer_send(&r.rp, msg, lens[i]), 0);
		n = rawpeer_recv(&r.rp, reply, sizeof(reply), DROP_WAIT_MS);
		if (n != -ETIMEDOUT)
			fail_msg("a %zu-byte message was answered (%d bytes, proc %u)", lens[i], n,
				 n >= 16 ? get32(reply, 3) : 0);
	}
	after = srig_stats(&r);
	assert_int_equal(after.dropped - before.dropped, sizeof(lens) / sizeof(lens[0]));
	assert_int_equal(after.rdma_errors, before.rdma_errors);
	srig_good_call(&r);
	srig_down(&r);
}

/*
 * Sections 3.4.6 and 4.3.2: a Write chunk with no segments asks for its
 * result item inline. DDP_OP_READ names a 100-byte result at DDP_READ_POS:
 * the reply is a reply head and the 100 bytes (padded), and its Write list
 * holds one chunk with no segments. No RDMA Write is posted.
 */
static void t_svc_empty_write_chunk_read(void **state)
{
	struct rpcrdma_chunk_desc wdesc = { 0, NULL };
	struct rpcrdma_hdr_enc enc = {
		.credit = GRANT, .proc = RPCRDMA_MSG, .write_chunks = 1, .write = &wdesc,
	};
	static struct rawpeer_call rc;
	unsigned char msg[DDP_CALL_LEN], want[DDP_READ_POS + 100];
	unsigned long writes = softrdma_executed(IBV_WR_RDMA_WRITE);
	struct srig r;

	srig_up(&r);
	srig_msg(&r, msg, DDP_OP_READ, 100, 33);
	enc.xid = r.xid;
	srig_send(&r, &enc, msg, sizeof(msg));
	assert_int_equal(rawpeer_recv_call(&r.rp, &rc, 3000), 0);
	if (rc.hdr.proc != RPCRDMA_MSG)
		fail_msg("empty Write chunk: proc %u (err %u), expected RDMA_MSG", rc.hdr.proc,
			 rc.hdr.err);
	assert_int_equal(rc.hdr.xid, r.xid);
	assert_int_equal(rc.hdr.write_chunks, 1);
	assert_int_equal(rc.hdr.write[0].nsegs, 0);
	assert_int_equal(rc.hdr.has_reply, 0);
	rpcmsg_reply_head(want, r.xid);
	ddp_fill(want + DDP_READ_POS, 100, 33);
	assert_int_equal(rc.len - (int)rc.hdr.hdr_len, DDP_READ_POS + 100);
	assert_memory_equal(rc.buf + rc.hdr.hdr_len, want, sizeof(want));
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_WRITE), writes);
	srig_good_call(&r);
	srig_down(&r);
}

/*
 * Two result items, the first for an empty Write chunk and the second for a
 * real one: an echo of a call with two payloads (Read chunks at message
 * offsets DDP_ARG_POS and DDP_ARG_POS + 4). The first comes back inline, the
 * second by RDMA Write into the second chunk, which the reply echoes with
 * its length.
 */
static void t_svc_empty_write_chunk_mixed(void **state)
{
	struct rpcrdma_segment wseg;
	struct rpcrdma_read_segment reads[2];
	struct rpcrdma_chunk_desc wdesc[2] = { { 0, NULL }, { 1, &wseg } };
	struct rpcrdma_hdr_enc enc = {
		.credit = GRANT, .proc = RPCRDMA_MSG, .read_segs = 2, .read = reads,
		.write_chunks = 2, .write = wdesc,
	};
	static struct rawpeer_call rc;
	unsigned char msg[DDP_CALL_LEN], want[DDP_CALL_LEN + 12];
	unsigned char *p0, *p1, *sink;
	struct rpcrdma_segment seg;
	struct srig r;

	srig_up(&r);
	p0 = r.mem;
	p1 = r.mem + 4096;
	sink = r.mem + 8192;
	memset(p0, 0xa1, 10);
	memset(p1, 0xb2, 300);
	memset(sink, 0, 4096);
	srig_msg(&r, msg, DDP_OP_ECHO, 0, 0);
	enc.xid = r.xid;
	reads[0] = (struct rpcrdma_read_segment){ DDP_ARG_POS, { r.mr->rkey, 10, (uintptr_t)p0 } };
	/* The second payload follows the first's 12 padded bytes in the full stream. */
	reads[1] = (struct rpcrdma_read_segment){ DDP_ARG_POS + 4 + 12,
						  { r.mr->rkey, 300, (uintptr_t)p1 } };
	wseg = (struct rpcrdma_segment){ r.mr->rkey, 4096, (uintptr_t)sink };
	srig_send(&r, &enc, msg, sizeof(msg));
	assert_int_equal(rawpeer_recv_call(&r.rp, &rc, 3000), 0);
	if (rc.hdr.proc != RPCRDMA_MSG)
		fail_msg("empty then real Write chunk: proc %u (err %u), expected RDMA_MSG",
			 rc.hdr.proc, rc.hdr.err);
	assert_int_equal(rc.hdr.write_chunks, 2);
	assert_int_equal(rc.hdr.write[0].nsegs, 0);
	assert_int_equal(rc.hdr.write[1].nsegs, 1);
	assert_int_equal(rc.hdr.write[1].total, 300);
	rpcrdma_chunk_segment(&rc.hdr.write[1], 0, &seg);
	assert_int_equal(seg.handle, r.mr->rkey);
	assert_int_equal(seg.offset, (uintptr_t)sink);
	/* The echo with the first payload (10 bytes, padded) spliced in at DDP_ARG_POS. */
	memcpy(want, msg, DDP_ARG_POS);
	memset(want + DDP_ARG_POS, 0xa1, 10);
	memset(want + DDP_ARG_POS + 10, 0, 2);
	memcpy(want + DDP_ARG_POS + 12, msg + DDP_ARG_POS, DDP_CALL_LEN - DDP_ARG_POS);
	rpcmsg_echo(want, sizeof(want));
	assert_int_equal(rc.len - (int)rc.hdr.hdr_len, sizeof(want));
	assert_memory_equal(rc.buf + rc.hdr.hdr_len, want, sizeof(want));
	for (size_t k = 0; k < 300; k++)
		assert_int_equal(sink[k], 0xb2);
	srig_good_call(&r);
	srig_down(&r);
}

/*
 * Section 3.4.5: the application refuses a call for how its chunks are made
 * (rpcrdma_svc_reply_err_chunk): the raw client gets RDMA_ERROR / ERR_CHUNK
 * with the call's XID, the payload named for the reply is released, and the
 * connection serves on; the library client sees -EREMOTEIO.
 */
static void t_svc_app_err_chunk(void **state)
{
	struct rpcrdma_hdr_enc enc = { .credit = GRANT, .proc = RPCRDMA_MSG };
	unsigned char msg[DDP_CALL_LEN], reply[RAWPEER_BUF];
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_stats before = { RPCRDMA_SIZED(before) }, after = { RPCRDMA_SIZED(after) };
	size_t rlen;
	struct srig r;
	int n;

	srig_up(&r);
	before = srig_stats(&r);
	srig_msg(&r, msg, DDP_OP_ERR_CHUNK, 0, 0);
	enc.xid = r.xid;
	srig_send(&r, &enc, msg, sizeof(msg));
	n = rawpeer_recv(&r.rp, reply, sizeof(reply), 3000);
	if (n != 20 || get32(reply, 0) != r.xid || get32(reply, 1) != RPCRDMA_VERSION ||
	    get32(reply, 3) != RPCRDMA_ERROR || get32(reply, 4) != RPCRDMA_ERR_CHUNK)
		fail_msg("expected ERR_CHUNK for 0x%x, got %d bytes (proc %u)", r.xid, n,
			 n >= 16 ? get32(reply, 3) : 0);
	assert_true(get32(reply, 2) >= 1);
	after = srig_stats(&r);
	assert_int_equal(after.rdma_errors - before.rdma_errors, 1);
	assert_int_equal(atomic_load(&ddp_counters.reply_errors), 0);
	srig_good_call(&r);

	harness_clnt_attr(&r.hs, &attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	srig_msg(&r, msg, DDP_OP_ERR_CHUNK, 0, 0);
	rlen = sizeof(reply);
	assert_int_equal(rpcrdma_clnt_call(clnt, msg, sizeof(msg), reply, &rlen, 5000), -EREMOTEIO);
	rpcrdma_clnt_destroy(clnt);
	srig_down(&r);
}

/* ---- A raw client against a libtirpc service on rpcrdma_svc_create() ------------------- */

#define SPROG 0x20000098u
#define SVERS 1u
enum { SPROC_NULL = 0, SPROC_READ2 = 1, SPROC_REFUSE = 2 };

/* What SPROC_READ2 returns: two opaque items, each a DDP candidate. */
struct read2_res {
	u_int a_len;
	char *a;
	u_int b_len;
	char *b;
};

static bool_t xdr_read2_res(XDR *xdrs, struct read2_res *r)
{
	return xdr_bytes(xdrs, &r->a, &r->a_len, 1u << 20) &&
	       xdr_bytes(xdrs, &r->b, &r->b_len, 1u << 20);
}

static unsigned char read2_a[100], read2_b[300];
static atomic_uint read2_released;
static int refuse_rc = 1;

static void read2_release(void *arg)
{
	atomic_fetch_add(&read2_released, 1);
}

/*
 * An rpcgen-style dispatcher: READ2 names both results for DDP; REFUSE
 * answers RDMA_ERROR / ERR_CHUNK, as a service does for an argument that
 * arrived reduced but must be inline (RFC 8166 3.4.5).
 */
static void sdispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	struct read2_res res = { sizeof(read2_a), (char *)read2_a, sizeof(read2_b),
				 (char *)read2_b };

	switch (rq->rq_proc) {
	case SPROC_NULL:
		svc_sendreply(xprt, (xdrproc_t)(void (*)(void))xdr_void, NULL);
		break;
	case SPROC_READ2:
		rpcrdma_svc_reply_ddp(xprt, read2_a, sizeof(read2_a), read2_release, NULL);
		rpcrdma_svc_reply_ddp(xprt, read2_b, sizeof(read2_b), read2_release, NULL);
		svc_sendreply(xprt, (xdrproc_t)xdr_read2_res, (char *)&res);
		break;
	case SPROC_REFUSE:
		rpcrdma_svc_reply_ddp(xprt, read2_a, sizeof(read2_a), read2_release, NULL);
		refuse_rc = rpcrdma_svcerr_chunk(xprt);
		if (refuse_rc)
			svcerr_decode(xprt);
		break;
	default:
		svcerr_noproc(xprt);
	}
}

/* Send an RPC call (AUTH_NONE, no arguments) of @proc with @enc's chunks; drive the service
 * until the answer arrives in @rc. */
static void tcall(struct rawpeer *rp, struct rpcrdma_hdr_enc *enc, uint32_t xid, uint32_t proc,
		  struct rawpeer_call *rc)
{
	const uint32_t words[] = { xid, 0, 2, SPROG, SVERS, proc, 0, 0, 0, 0 };
	unsigned char buf[RAWPEER_BUF];
	long n;
	size_t k;

	enc->xid = xid;
	n = rpcrdma_hdr_encode(buf, sizeof(buf), enc);
	assert_true(n > 0);
	for (k = 0; k < sizeof(words) / 4; k++)
		put32(buf + n, k, words[k]);
	assert_int_equal(rawpeer_send(rp, buf, (size_t)n + sizeof(words)), 0);
	assert_int_equal(rawtirpc_recv(rp, rc, 3000), 0);
	assert_int_equal(rc->hdr.xid, xid);
}

/* The accepted-reply words before the results: xid REPLY MSG_ACCEPTED AUTH_NONE(0,0) SUCCESS. */
static void check_accepted(const struct rawpeer_call *rc, uint32_t xid)
{
	const unsigned char *b = rc->buf + rc->hdr.hdr_len;

	assert_true(rc->len - (int)rc->hdr.hdr_len >= 24);
	assert_int_equal(get32(b, 0), xid);
	assert_int_equal(get32(b, 1), 1);
	assert_int_equal(get32(b, 2), 0);
	assert_int_equal(get32(b, 5), 0);
}

/*
 * Through the libtirpc adapter: an empty first Write chunk returns the first
 * DDP result inline, and the second result still meets the second chunk;
 * rpcrdma_svcerr_chunk() answers ERR_CHUNK; the connection serves on.
 */
static void t_tirpc_svc_empty_chunk_and_err_chunk(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rpcrdma_segment wseg;
	struct rpcrdma_chunk_desc wdesc[2] = { { 0, NULL }, { 1, &wseg } };
	struct rpcrdma_hdr_enc enc = { .credit = GRANT, .proc = RPCRDMA_MSG };
	static struct rawpeer_call rc;
	const unsigned char *b;
	unsigned char *mem;
	struct rawpeer rp;
	struct ibv_mr *mr;
	SVCXPRT *lx;
	int i;

	memset(read2_a, 0xa5, sizeof(read2_a));
	memset(read2_b, 0x5b, sizeof(read2_b));
	atomic_store(&read2_released, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lx = rpcrdma_svc_create((struct sockaddr *)&sin, 0, 0);
	assert_non_null(lx);
	assert_true(svc_reg(lx, SPROG, SVERS, sdispatch, NULL));
	memset(&rp, 0, sizeof(rp));
	assert_int_equal(rawtirpc_connect(&rp, lx, &peer_pd, 0), 0);
	mem = aligned_alloc(4096, 8192);
	assert_non_null(mem);
	memset(mem, 0, 8192);
	mr = rawpeer_reg(&rp, mem, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);

	wseg = (struct rpcrdma_segment){ mr->rkey, 4096, (uintptr_t)mem };
	enc.write_chunks = 2;
	enc.write = wdesc;
	tcall(&rp, &enc, 0x7301, SPROC_READ2, &rc);
	if (rc.hdr.proc != RPCRDMA_MSG)
		fail_msg("tirpc READ2: proc %u (err %u), expected RDMA_MSG", rc.hdr.proc,
			 rc.hdr.err);
	check_accepted(&rc, 0x7301);
	assert_int_equal(rc.hdr.write_chunks, 2);
	assert_int_equal(rc.hdr.write[0].nsegs, 0);
	assert_int_equal(rc.hdr.write[1].nsegs, 1);
	assert_int_equal(rc.hdr.write[1].total, sizeof(read2_b));
	/* Results: a (100 bytes, inline), then b's length with its bytes in the chunk. */
	b = rc.buf + rc.hdr.hdr_len + 24;
	assert_int_equal(rc.len - (int)rc.hdr.hdr_len, 24 + 4 + 100 + 4);
	assert_int_equal(get32(b, 0), sizeof(read2_a));
	assert_memory_equal(b + 4, read2_a, sizeof(read2_a));
	assert_int_equal(get32(b + 104, 0), sizeof(read2_b));
	assert_memory_equal(mem, read2_b, sizeof(read2_b));

	enc.write_chunks = 0;
	tcall(&rp, &enc, 0x7302, SPROC_REFUSE, &rc);
	assert_int_equal(refuse_rc, 0);
	if (rc.hdr.proc != RPCRDMA_ERROR || rc.hdr.err != RPCRDMA_ERR_CHUNK)
		fail_msg("tirpc REFUSE: proc %u err %u, expected ERR_CHUNK", rc.hdr.proc,
			 rc.hdr.err);
	assert_int_equal(rc.len, 20);

	tcall(&rp, &enc, 0x7303, SPROC_NULL, &rc);
	assert_int_equal(rc.hdr.proc, RPCRDMA_MSG);
	check_accepted(&rc, 0x7303);
	assert_int_equal(atomic_load(&read2_released), 3);

	rawpeer_close(&rp);
	for (i = 0; i < 20; i++)
		rawtirpc_round(5);
	svc_unreg(SPROG, SVERS);
	svc_destroy(lx);
	free(mem);
	harness_assert_fabric_idle();
}

/* ---- A raw server against the library client ------------------------------------------- */

static struct rpcrdma_stats cfix_stats(struct cfix *f)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };

	assert_int_equal(rpcrdma_clnt_stats(f->clnt, &st), 0);
	return st;
}

/* Encode @enc, append @body, Send it from the raw server. */
static void srv_send(struct cfix *f, const struct rpcrdma_hdr_enc *enc, const void *body,
		     size_t len)
{
	unsigned char out[RAWPEER_BUF];
	long n = rpcrdma_hdr_encode(out, sizeof(out), enc);

	assert_true(n > 0 && (size_t)n + len <= sizeof(out));
	if (len)
		memcpy(out + n, body, len);
	assert_int_equal(rawpeer_send(&f->srv, out, (size_t)n + len), 0);
}

/* @chunk echoed as a Responder that did not use it: its segments, each 0 bytes long. */
static void echo_unused(const struct rpcrdma_chunk *chunk, struct rpcrdma_segment *segs,
			struct rpcrdma_chunk_desc *desc)
{
	uint32_t i;

	for (i = 0; i < chunk->nsegs; i++) {
		rpcrdma_chunk_segment(chunk, i, &segs[i]);
		segs[i].length = 0;
	}
	desc->nsegs = chunk->nsegs;
	desc->segs = segs;
}

/* An RPC reply of @len bytes: a reply's head (rpcmsg.h), then a pattern. */
static void reply_body(unsigned char *body, size_t len, uint32_t xid)
{
	ddp_fill(body, len, xid + 77);
	rpcmsg_reply_head(body, xid);
}

/*
 * Section 4.3.3: a Responder may answer inline although a Reply chunk was
 * offered, leaving the chunk out or echoing it with zero-length segments.
 * The reply lands intact, and memory the server never wrote is untouched.
 */
static void inline_reply_case(bool bounce, bool echo_zero, bool with_result)
{
	struct rpcrdma_segment zero[RPCRDMA_CLNT_MAX_SEGS], wecho[RPCRDMA_CLNT_MAX_SEGS];
	struct rpcrdma_chunk_desc rdesc, wdesc;
	struct rpcrdma_hdr_enc enc = { .credit = GRANT, .proc = RPCRDMA_MSG };
	const char *shape = echo_zero ? "zero-length Reply chunk" : "no Reply chunk";
	static struct ccall c;
	unsigned char body[600];
	struct cfix f;
	uint32_t i;

	cfix_up(&f, bounce);
	cfix_call_start(&f, &c, 0, with_result ? 3000 : 0, 20000, 0);
	assert_true(c.rc.hdr.has_reply);
	enc.xid = c.rc.hdr.xid;
	if (echo_zero) {
		echo_unused(&c.rc.hdr.reply, zero, &rdesc);
		enc.reply = &rdesc;
	}
	if (with_result) {
		/* The result is placed: its Write chunk comes back with the bytes written. */
		ddp_fill(f.local, 1000, 5);
		assert_int_equal(rawpeer_push(&f.srv, &c.rc.hdr.write[0], f.local, 1000, wecho), 0);
		wdesc.nsegs = c.rc.hdr.write[0].nsegs;
		wdesc.segs = wecho;
		enc.write_chunks = 1;
		enc.write = &wdesc;
	}
	reply_body(body, sizeof(body), enc.xid);
	srv_send(&f, &enc, body, sizeof(body));
	cfix_run(&f, &c.finished, 5000);
	assert_int_equal(c.finished, 1);
	if (c.call.status != 0)
		fail_msg("%s (%s): status %d", shape, bounce ? "bounce" : "windows", c.call.status);
	assert_int_equal(c.call.reply_len, sizeof(body));
	if (memcmp(c.reply, body, sizeof(body)) != 0)
		fail_msg("%s (%s): the inline reply was overwritten (first byte 0x%02x)", shape,
			 bounce ? "bounce" : "windows", c.reply[4]);
	for (i = sizeof(body); i < 20000; i++)
		if (c.reply[i] != 0x3c)
			fail_msg("%s: reply byte %u written", shape, i);
	if (with_result) {
		assert_int_equal(c.call.result_len, 1000);
		assert_int_equal(ddp_check(c.result, 1000, 5), 1000);
		for (i = 1000; i < 3000; i++)
			if (c.result[i] != 0x3c)
				fail_msg("%s: result byte %u written", shape, i);
	}
	cfix_call_free(&f, &c);
	cfix_down(&f);
}

static void t_clnt_inline_reply_windows(void **state)
{
	inline_reply_case(false, false, false);
	inline_reply_case(false, true, false);
	inline_reply_case(false, false, true);
	inline_reply_case(false, true, true);
}

static void t_clnt_inline_reply_bounce(void **state)
{
	inline_reply_case(true, false, false);
	inline_reply_case(true, true, false);
	inline_reply_case(true, false, true);
	inline_reply_case(true, true, true);
}

/*
 * A Write chunk offered and not used (the server left the Write list empty,
 * or echoed the chunk with zero lengths): result_len is 0 and not a byte of
 * the result buffer changes.
 */
static void unused_write_case(bool bounce, bool echo_zero)
{
	struct rpcrdma_segment zero[RPCRDMA_CLNT_MAX_SEGS];
	struct rpcrdma_chunk_desc wdesc;
	struct rpcrdma_hdr_enc enc = { .credit = GRANT, .proc = RPCRDMA_MSG };
	static struct ccall c;
	unsigned char body[64];
	struct cfix f;
	uint32_t i;

	cfix_up(&f, bounce);
	cfix_call_start(&f, &c, 0, 3000, 64, 0);
	enc.xid = c.rc.hdr.xid;
	if (echo_zero) {
		echo_unused(&c.rc.hdr.write[0], zero, &wdesc);
		enc.write_chunks = 1;
		enc.write = &wdesc;
	}
	reply_body(body, sizeof(body), enc.xid);
	srv_send(&f, &enc, body, sizeof(body));
	cfix_run(&f, &c.finished, 5000);
	assert_int_equal(c.finished, 1);
	assert_int_equal(c.call.status, 0);
	assert_int_equal(c.call.reply_len, sizeof(body));
	assert_memory_equal(c.reply, body, sizeof(body));
	assert_int_equal(c.call.result_len, 0);
	for (i = 0; i < 3000; i++)
		if (c.result[i] != 0x3c)
			fail_msg("unused Write chunk (%s): result byte %u written",
				 bounce ? "bounce" : "windows", i);
	cfix_call_free(&f, &c);
	cfix_down(&f);
}

static void t_clnt_unused_write_chunk(void **state)
{
	unused_write_case(false, false);
	unused_write_case(false, true);
	unused_write_case(true, false);
	unused_write_case(true, true);
}

/* ---- The libtirpc CLIENT against a raw server that answers inline ------------------------ */

#define TPROG 0x20000099u
#define TVERS 1u

struct tsrv {
	struct rawpeer *srv;
	uint32_t value;		/* what the procedure returns */
	size_t pad;		/* bytes of opaque result after it */
	bool echo_zero;		/* echo the Reply chunk with zero lengths */
	int rc;
	uint32_t has_reply;
};

/* The raw server's side: one call, answered inline with an accepted reply. */
static void *tsrv_main(void *arg)
{
	struct tsrv *t = arg;
	static struct rawpeer_call rc;
	struct rpcrdma_segment zero[RPCRDMA_CLNT_MAX_SEGS];
	struct rpcrdma_chunk_desc rdesc;
	struct rpcrdma_hdr_enc enc = { .credit = GRANT, .proc = RPCRDMA_MSG };
	unsigned char out[RAWPEER_BUF];
	uint32_t words[8];
	long n;

	t->rc = rawpeer_recv_call(t->srv, &rc, 5000);
	if (t->rc)
		return NULL;
	t->has_reply = rc.hdr.has_reply;
	enc.xid = rc.hdr.xid;
	if (t->echo_zero && rc.hdr.has_reply) {
		echo_unused(&rc.hdr.reply, zero, &rdesc);
		enc.reply = &rdesc;
	}
	n = rpcrdma_hdr_encode(out, sizeof(out), &enc);
	/* xid, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS, the result. */
	words[0] = htonl(rc.hdr.xid);
	words[1] = htonl(1);
	words[2] = htonl(0);
	words[3] = htonl(0);
	words[4] = htonl(0);
	words[5] = htonl(0);
	words[6] = htonl(t->value);
	words[7] = htonl((uint32_t)t->pad);
	memcpy(out + n, words, sizeof(words));
	memset(out + n + sizeof(words), 0x5a, t->pad);
	t->rc = rawpeer_send(t->srv, out, (size_t)n + sizeof(words) + t->pad);
	return NULL;
}

struct tres {
	u_int value;
	u_int len;
	char buf[2048];
};

static bool_t xdr_tres(XDR *xdrs, struct tres *r)
{
	char *p = r->buf;

	return xdr_u_int(xdrs, &r->value) && xdr_bytes(xdrs, &p, &r->len, sizeof(r->buf));
}

/*
 * A libtirpc CLIENT of program TPROG connected to the raw server @srv
 * (listening and accepting here). Its recvsize is above the inline size:
 * every call offers a Reply chunk.
 */
static CLIENT *tclnt_to_raw(struct rawpeer *srv)
{
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN];
	CLIENT *cl;

	memset(srv, 0, sizeof(*srv));
	assert_int_equal(rpcrdma_cm_private_encode(pdata, sizeof(pdata), &peer_pd),
			 RPCRDMA_CM_PRIVATE_LEN);
	assert_int_equal(rawpeer_listen(srv), 0);
	assert_int_equal(rawpeer_accept_start(srv, pdata, sizeof(pdata)), 0);
	cl = rpcrdma_clnt_create((struct sockaddr *)&srv->addr, TPROG, TVERS, 0, 65536);
	assert_non_null(cl);
	assert_int_equal(rawpeer_accept_join(srv), 0);
	return cl;
}

static void tirpc_inline_case(bool echo_zero)
{
	struct timeval tv = { 5, 0 };
	struct tsrv t = { .value = 0x600df00d, .pad = 1500, .echo_zero = echo_zero };
	static struct tres res;
	struct rawpeer srv;
	pthread_t th;
	enum clnt_stat st;
	CLIENT *cl;
	u_int i;

	cl = tclnt_to_raw(&srv);
	t.srv = &srv;
	assert_int_equal(pthread_create(&th, NULL, tsrv_main, &t), 0);
	memset(&res, 0, sizeof(res));
	st = clnt_call(cl, 1, (xdrproc_t)(void (*)(void))xdr_void, NULL, (xdrproc_t)xdr_tres, (char *)&res, tv);
	pthread_join(th, NULL);
	assert_int_equal(t.rc, 0);
	assert_true(t.has_reply);
	if (st != RPC_SUCCESS)
		fail_msg("tirpc, %s: clnt_call: %s", echo_zero ? "zero-length Reply chunk" :
			 "no Reply chunk", clnt_sperrno(st));
	if (res.value != t.value)
		fail_msg("tirpc, %s: result 0x%x, expected 0x%x", echo_zero ?
			 "zero-length Reply chunk" : "no Reply chunk", res.value, t.value);
	assert_int_equal(res.len, t.pad);
	for (i = 0; i < res.len; i++)
		assert_int_equal((unsigned char)res.buf[i], 0x5a);
	clnt_destroy(cl);
	rawpeer_close(&srv);
	harness_assert_fabric_idle();
}

static void t_tirpc_inline_reply(void **state)
{
	tirpc_inline_case(false);
	tirpc_inline_case(true);
}

/* ---- Replies the client cannot accept are dropped (section 4.5) ------------------------- */

enum bad_kind {
	BAD_PROC_MSGP,		/* rdma_proc RDMA_MSGP */
	BAD_PROC_DONE,		/* rdma_proc RDMA_DONE */
	BAD_PROC_UNKNOWN,	/* rdma_proc 9 */
	BAD_READ_LIST,		/* RDMA_MSG carrying a Read list */
	BAD_ERR_UNKNOWN,	/* RDMA_ERROR with rdma_err 7 */
	BAD_WRITE_LONGER,	/* a returned Write segment longer than offered */
	BAD_WRITE_HANDLE,	/* ... with a handle the call did not offer */
	BAD_NOMSG_UNOFFERED,	/* RDMA_NOMSG when no Reply chunk was offered */
	BAD_NOMSG_NO_CHUNK,	/* RDMA_NOMSG carrying no Reply chunk */
	BAD_RPC_XID,		/* an RPC message whose XID differs */
};

struct bad_case {
	const char *name;
	enum bad_kind kind;
	size_t result_max;
	size_t reply_max;
};

static const struct bad_case bad_cases[] = {
	{ "RDMA_MSGP", BAD_PROC_MSGP, 0, 64 },
	{ "RDMA_DONE", BAD_PROC_DONE, 0, 64 },
	{ "rdma_proc 9", BAD_PROC_UNKNOWN, 0, 64 },
	{ "RDMA_MSG with a Read list", BAD_READ_LIST, 0, 64 },
	{ "RDMA_ERROR with rdma_err 7", BAD_ERR_UNKNOWN, 0, 64 },
	{ "a Write segment longer than offered", BAD_WRITE_LONGER, 3000, 64 },
	{ "a Write segment with a foreign handle", BAD_WRITE_HANDLE, 3000, 64 },
	{ "RDMA_NOMSG, no Reply chunk offered", BAD_NOMSG_UNOFFERED, 0, 64 },
	{ "RDMA_NOMSG without a Reply chunk", BAD_NOMSG_NO_CHUNK, 0, 20000 },
	{ "an RPC XID not the call's", BAD_RPC_XID, 0, 64 },
};

/* Send the raw words of a header that our encoder would refuse. */
static void srv_send_words(struct cfix *f, const uint32_t *w, size_t n, const void *body,
			   size_t len)
{
	unsigned char out[256];
	size_t i;

	for (i = 0; i < n; i++)
		put32(out, i, w[i]);
	if (len)
		memcpy(out + 4 * n, body, len);
	assert_int_equal(rawpeer_send(&f->srv, out, 4 * n + len), 0);
}

static void send_bad_reply(struct cfix *f, const struct bad_case *bc, struct ccall *c,
			   const unsigned char *body)
{
	struct rpcrdma_read_segment rs = { 8, { 0x1234, 16, 0x10000 } };
	struct rpcrdma_segment wecho[RPCRDMA_CLNT_MAX_SEGS], rseg = { 0x4321, 8, 0x20000 };
	struct rpcrdma_chunk_desc wdesc, rdesc = { 1, &rseg };
	struct rpcrdma_hdr_enc enc = { .xid = c->rc.hdr.xid, .credit = GRANT, .proc = RPCRDMA_MSG };
	uint32_t xid = c->rc.hdr.xid;
	unsigned char other[RPCMSG_HEAD];

	switch (bc->kind) {
	case BAD_PROC_MSGP: {
		/* xid 1 credit MSGP, three empty lists, align, threshold: then the message. */
		const uint32_t w[] = { xid, 1, GRANT, RPCRDMA_MSGP, 0, 0, 0, 4, 4 };

		srv_send_words(f, w, 9, body, RPCMSG_HEAD);
		break;
	}
	case BAD_PROC_DONE: {
		const uint32_t w[] = { xid, 1, GRANT, RPCRDMA_DONE };

		srv_send_words(f, w, 4, NULL, 0);
		break;
	}
	case BAD_PROC_UNKNOWN: {
		const uint32_t w[] = { xid, 1, GRANT, 9, 0, 0, 0 };

		srv_send_words(f, w, 7, body, RPCMSG_HEAD);
		break;
	}
	case BAD_ERR_UNKNOWN: {
		const uint32_t w[] = { xid, 1, GRANT, RPCRDMA_ERROR, 7 };

		srv_send_words(f, w, 5, NULL, 0);
		break;
	}
	case BAD_READ_LIST:
		enc.read_segs = 1;
		enc.read = &rs;
		srv_send(f, &enc, body, RPCMSG_HEAD);
		break;
	case BAD_WRITE_LONGER:
	case BAD_WRITE_HANDLE: {
		uint32_t i, n = c->rc.hdr.write[0].nsegs;

		for (i = 0; i < n; i++)
			rpcrdma_chunk_segment(&c->rc.hdr.write[0], i, &wecho[i]);
		/* Nothing was written; the echo claims one byte more than offered. */
		if (bc->kind == BAD_WRITE_LONGER)
			wecho[n - 1].length++;
		else
			wecho[0].handle ^= 0x100;
		wdesc.nsegs = n;
		wdesc.segs = wecho;
		enc.write_chunks = 1;
		enc.write = &wdesc;
		srv_send(f, &enc, body, RPCMSG_HEAD);
		break;
	}
	case BAD_NOMSG_UNOFFERED:
		enc.proc = RPCRDMA_NOMSG;
		enc.reply = &rdesc;
		srv_send(f, &enc, NULL, 0);
		break;
	case BAD_NOMSG_NO_CHUNK: {
		/* Our encoder refuses a NOMSG with no chunk at all: write it by hand. */
		const uint32_t w[] = { xid, 1, GRANT, RPCRDMA_NOMSG, 0, 0, 0 };

		srv_send_words(f, w, 7, NULL, 0);
		break;
	}
	case BAD_RPC_XID:
		memcpy(other, body, RPCMSG_HEAD);
		put32(other, 0, xid + 1);
		srv_send(f, &enc, other, RPCMSG_HEAD);
		break;
	}
}

/* Poll the client until it has dropped @want replies since @before, the call ended, or 5 s. */
static uint64_t head_wait_dropped(struct cfix *f, const struct rpcrdma_stats *before,
				  uint64_t want, const int *finished)
{
	struct timespec t0, t;
	uint64_t n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		rpcrdma_clnt_poll(f->clnt, 16);
		n = cfix_stats(f).dropped - before->dropped;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (n >= want || *finished || (t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 > 5000)
			return n;
		poll(NULL, 0, 1);
	}
}

static void dropped_reply_case(const struct bad_case *bc, bool bounce)
{
	struct rpcrdma_hdr_enc enc = { .credit = GRANT, .proc = RPCRDMA_MSG };
	struct rpcrdma_stats before = { RPCRDMA_SIZED(before) }, after = { RPCRDMA_SIZED(after) };
	const char *how = bounce ? "bounce" : "windows";
	static struct ccall c;
	unsigned char body[RPCMSG_HEAD];
	struct cfix f;

	cfix_up(&f, bounce);
	before = cfix_stats(&f);
	cfix_call_start(&f, &c, 0, bc->result_max, bc->reply_max, 0);
	reply_body(body, sizeof(body), c.rc.hdr.xid);
	send_bad_reply(&f, bc, &c, body);
	head_wait_dropped(&f, &before, 1, &c.finished);
	if (c.finished)
		fail_msg("%s (%s): the call ended (status %d) instead of staying pending",
			 bc->name, how, c.call.status);
	after = cfix_stats(&f);
	if (after.dropped - before.dropped != 1)
		fail_msg("%s (%s): %llu replies counted as dropped", bc->name, how,
			 (unsigned long long)(after.dropped - before.dropped));

	/* The valid reply with the same XID ends the call. */
	enc.xid = c.rc.hdr.xid;
	srv_send(&f, &enc, body, sizeof(body));
	cfix_run(&f, &c.finished, 5000);
	assert_int_equal(c.finished, 1);
	if (c.call.status != 0)
		fail_msg("%s (%s): the valid reply after it ended the call with %d", bc->name, how,
			 c.call.status);
	assert_int_equal(c.call.reply_len, sizeof(body));
	assert_memory_equal(c.reply, body, sizeof(body));
	assert_int_equal(c.call.result_len, 0);
	after = cfix_stats(&f);
	assert_int_equal(after.dropped - before.dropped, 1);
	cfix_call_free(&f, &c);
	cfix_down(&f);
}

static void t_clnt_drops_bad_replies(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		dropped_reply_case(&bad_cases[i], false);
		dropped_reply_case(&bad_cases[i], true);
	}
}

/* A dropped reply leaves the call to its timeout when no valid one follows. */
static void t_clnt_dropped_reply_times_out(void **state)
{
	static struct ccall c;
	unsigned char body[RPCMSG_HEAD];
	struct cfix f;

	cfix_up(&f, false);
	cfix_call_start(&f, &c, 0, 0, 64, 300);
	reply_body(body, sizeof(body), c.rc.hdr.xid);
	send_bad_reply(&f, &bad_cases[2], &c, body);
	cfix_run(&f, &c.finished, 3000);
	assert_int_equal(c.finished, 1);
	assert_int_equal(c.call.status, -ETIMEDOUT);
	cfix_call_free(&f, &c);
	cfix_down(&f);
}

/* ---- The RPC reply's head, whatever way the reply came (RFC 5531 9, RFC 8166 4.5) ------ */

/*
 * How a reply's RPC message can fail to answer its call. Memory a dying
 * peer wrote into a Reply chunk looks like HEAD_ZERO: the expected length,
 * and XID 0.
 */
enum head_kind { HEAD_XID, HEAD_CALL, HEAD_STAT, HEAD_ZERO, HEAD_SHORT, HEAD_KINDS };

static const char *const head_names[HEAD_KINDS] = {
	"another RPC XID", "msg_type CALL", "reply_stat 2", "all zeros", "8 bytes",
};

/* The ways a reply's RPC message travels. */
enum head_shape { SHAPE_INLINE, SHAPE_WRITE, SHAPE_NOMSG, SHAPES };

static const char *const shape_names[SHAPES] = {
	"inline RDMA_MSG", "RDMA_MSG with a Write chunk filled", "RDMA_NOMSG",
};

/*
 * Where the client's Reply chunk lands: the registered arena (memory
 * windows, or per-call MRs on a device without them, the siw profile) or
 * bounce buffers, through windows or persistent registration.
 */
struct head_reg {
	const char *name;
	bool bounce;
	uint32_t flags;
};

static const struct head_reg head_regs[] = {
	{ NULL, false, 0 },	/* head_reg_name() */
	{ "bounce", true, 0 },
	{ "persistent", false, RPCRDMA_CLNT_PERSISTENT_REG },
	{ "persistent bounce", true, RPCRDMA_CLNT_PERSISTENT_REG },
};

/* Which registration the client's registered arena gets: the device says. */
static const char *head_reg_name(const struct head_reg *reg)
{
	if (reg->name)
		return reg->name;
	return harness_device_windows() ? "memory windows" : "per-call MRs";
}

#define HEAD_INLINE_LEN 200	/* bytes of a good inline reply */
#define HEAD_LONG_LEN 6000	/* bytes of a good reply through the Reply chunk */
#define HEAD_REPLY_MAX 20000	/* room that gets a Reply chunk offered */
#define HEAD_RESULT 3000	/* bytes of result a good reply writes; a bad one writes 1000 */

/* Copy @good (@len bytes, a reply to @xid) into @out made bad as @kind says; returns its length. */
static size_t head_bad_body(enum head_kind kind, unsigned char *out, const unsigned char *good,
			    size_t len, uint32_t xid)
{
	memcpy(out, good, len);
	switch (kind) {
	case HEAD_XID:
		put32(out, 0, xid + 1);
		break;
	case HEAD_CALL:
		rpcmsg_call_head(out, xid);
		break;
	case HEAD_STAT:
		put32(out, 2, 2);
		break;
	case HEAD_ZERO:
		memset(out, 0, len);
		break;
	case HEAD_SHORT:
		return 8;
	case HEAD_KINDS:
		break;
	}
	return len;
}

/*
 * Answer call @c in @shape with the RPC message @body (@len bytes): inline;
 * inline after writing @result_len bytes of pattern @seed into its Write
 * chunk; or written whole into its Reply chunk (RDMA_NOMSG).
 */
static void head_reply(struct cfix *f, const struct ccall *c, enum head_shape shape,
		       const unsigned char *body, size_t len, size_t result_len, uint32_t seed)
{
	struct rpcrdma_hdr_enc enc = { .xid = c->rc.hdr.xid, .credit = GRANT, .proc = RPCRDMA_MSG };
	struct rpcrdma_segment echo[RPCRDMA_CLNT_MAX_SEGS];
	struct rpcrdma_chunk_desc desc = { 0, echo };

	if (shape == SHAPE_WRITE) {
		ddp_fill(f->local, result_len, seed);
		assert_int_equal(rawpeer_push(&f->srv, &c->rc.hdr.write[0], f->local, result_len,
					      echo), 0);
		desc.nsegs = c->rc.hdr.write[0].nsegs;
		enc.write_chunks = 1;
		enc.write = &desc;
	} else if (shape == SHAPE_NOMSG) {
		memcpy(f->local, body, len);
		assert_int_equal(rawpeer_push(&f->srv, &c->rc.hdr.reply, f->local, len, echo), 0);
		desc.nsegs = c->rc.hdr.reply.nsegs;
		enc.reply = &desc;
		enc.proc = RPCRDMA_NOMSG;
		len = 0;
	}
	srv_send(f, &enc, body, len);
}

/* A call of @shape (with @timeout_ms) as the raw server receives it. */
static void head_call_start(struct cfix *f, struct ccall *c, enum head_shape shape, int timeout_ms)
{
	cfix_call_start(f, c, 0, shape == SHAPE_WRITE ? HEAD_RESULT : 0,
			shape == SHAPE_NOMSG ? HEAD_REPLY_MAX : 1024, timeout_ms);
	assert_int_equal(c->rc.hdr.write_chunks, shape == SHAPE_WRITE);
	assert_int_equal(c->rc.hdr.has_reply, shape == SHAPE_NOMSG);
}


/*
 * A reply whose RPC message does not answer the call (@kind), in @shape,
 * is dropped and counted, and leaves the call pending; the good reply that
 * follows ends the call with its own bytes (and its result). On @f's
 * client, which stays connected.
 */
static void head_case(struct cfix *f, const char *reg, enum head_shape shape,
		      enum head_kind kind)
{
	static unsigned char good[HEAD_LONG_LEN], bad[HEAD_LONG_LEN];
	size_t len = shape == SHAPE_NOMSG ? HEAD_LONG_LEN : HEAD_INLINE_LEN, bad_len;
	struct rpcrdma_stats before = cfix_stats(f);
	static struct ccall c;
	uint64_t dropped;

	head_call_start(f, &c, shape, 0);
	reply_body(good, len, c.rc.hdr.xid);
	bad_len = head_bad_body(kind, bad, good, len, c.rc.hdr.xid);
	head_reply(f, &c, shape, bad, bad_len, HEAD_RESULT / 3, 1);
	dropped = head_wait_dropped(f, &before, 1, &c.finished);
	if (c.finished || dropped != 1)
		fail_msg("%s, %s, %s: the call ended (%d, status %d), %llu replies dropped", reg,
			 shape_names[shape], head_names[kind], c.finished, c.call.status,
			 (unsigned long long)dropped);

	head_reply(f, &c, shape, good, len, HEAD_RESULT, 2);
	cfix_run(f, &c.finished, 5000);
	assert_int_equal(c.finished, 1);
	if (c.call.status != 0)
		fail_msg("%s, %s, %s: the good reply after it ended the call with %d", reg,
			 shape_names[shape], head_names[kind], c.call.status);
	assert_int_equal(c.call.reply_len, len);
	assert_memory_equal(c.reply, good, len);
	assert_int_equal(c.call.result_len, shape == SHAPE_WRITE ? HEAD_RESULT : 0);
	if (shape == SHAPE_WRITE)
		assert_int_equal(ddp_check(c.result, HEAD_RESULT, 2), HEAD_RESULT);
	assert_int_equal(cfix_stats(f).dropped - before.dropped, 1);
	cfix_call_free(f, &c);
}

/* A MSG_DENIED reply (RPC_MISMATCH 2 to 2) answers its call, in @shape, like any reply. */
static void head_denied_case(struct cfix *f, const char *reg, enum head_shape shape)
{
	static unsigned char denied[HEAD_LONG_LEN];
	size_t len = shape == SHAPE_NOMSG ? HEAD_LONG_LEN : HEAD_INLINE_LEN;
	struct rpcrdma_stats before = cfix_stats(f);
	static struct ccall c;

	head_call_start(f, &c, shape, 0);
	reply_body(denied, len, c.rc.hdr.xid);
	put32(denied, 2, RPCMSG_DENIED);
	put32(denied, 3, 0);
	put32(denied, 4, 2);
	put32(denied, 5, 2);
	head_reply(f, &c, shape, denied, len, HEAD_RESULT, 4);
	cfix_run(f, &c.finished, 5000);
	assert_int_equal(c.finished, 1);
	if (c.call.status != 0)
		fail_msg("%s, %s: MSG_DENIED ended the call with %d", reg, shape_names[shape],
			 c.call.status);
	assert_int_equal(c.call.reply_len, len);
	assert_memory_equal(c.reply, denied, len);
	assert_int_equal(cfix_stats(f).dropped, before.dropped);
	cfix_call_free(f, &c);
}

/*
 * The library checks the head of the RPC reply (its XID, msg_type REPLY, a
 * reply_stat) on every path before a call completes: inline, after Write
 * chunks, and in the Reply chunk of RDMA_NOMSG, wherever that landed. Both
 * reply_stats pass.
 */
static void t_clnt_reply_head_checked(void **state)
{
	size_t r;
	int s, k;
	struct cfix f;

	for (r = 0; r < sizeof(head_regs) / sizeof(head_regs[0]); r++) {
		cfix_up_flags(&f, head_regs[r].bounce, head_regs[r].flags);
		for (s = 0; s < SHAPES; s++) {
			for (k = 0; k < HEAD_KINDS; k++)
				head_case(&f, head_reg_name(&head_regs[r]), (enum head_shape)s,
					  (enum head_kind)k);
			head_denied_case(&f, head_reg_name(&head_regs[r]), (enum head_shape)s);
		}
		cfix_down(&f);
	}
}

/*
 * A call that gets only replies it cannot accept, one of each kind, times
 * out (-ETIMEDOUT) and never completes with them. They are all sent before
 * the client polls once: the last one written into a Reply chunk, zeros,
 * is what each RDMA_NOMSG finds there.
 */
static void t_clnt_bad_heads_time_out(void **state)
{
	static const enum head_kind order[HEAD_KINDS] = {
		HEAD_SHORT, HEAD_XID, HEAD_CALL, HEAD_STAT, HEAD_ZERO,
	};
	static unsigned char good[HEAD_LONG_LEN], bad[HEAD_LONG_LEN];
	static struct ccall c;
	struct rpcrdma_stats before;
	size_t r, len, bad_len;
	struct cfix f;
	int s, k;

	/* Each drop is shown in every registration above: the timeout, in two. */
	for (r = 0; r < 2; r++) {
		for (s = 0; s < SHAPES; s++) {
			cfix_up_flags(&f, head_regs[r].bounce, head_regs[r].flags);
			before = cfix_stats(&f);
			len = s == SHAPE_NOMSG ? HEAD_LONG_LEN : HEAD_INLINE_LEN;
			head_call_start(&f, &c, (enum head_shape)s, 300);
			reply_body(good, len, c.rc.hdr.xid);
			for (k = 0; k < HEAD_KINDS; k++) {
				bad_len = head_bad_body(order[k], bad, good, len, c.rc.hdr.xid);
				head_reply(&f, &c, (enum head_shape)s, bad, bad_len, HEAD_RESULT,
					   3);
			}
			cfix_run(&f, &c.finished, 5000);
			assert_int_equal(c.finished, 1);
			if (c.call.status != -ETIMEDOUT)
				fail_msg("%s, %s: bad replies only: status %d",
					 head_reg_name(&head_regs[r]), shape_names[s],
					 c.call.status);
			assert_int_equal(c.call.reply_len, 0);
			assert_int_equal(c.call.result_len, 0);
			assert_int_equal(cfix_stats(&f).dropped - before.dropped, HEAD_KINDS);
			cfix_call_free(&f, &c);
			cfix_down(&f);
		}
	}
}

/* ---- The libtirpc CLIENT against a raw server that answers with bad heads --------------- */

struct tbad {
	struct rawpeer *srv;
	unsigned char *local;	/* the raw server's registered memory */
	enum head_kind kind;	/* the bad reply's defect */
	bool nomsg;		/* the bad reply in the Reply chunk (RDMA_NOMSG), else inline */
	bool good;		/* then the good reply, inline */
	uint32_t value;		/* what the procedure returns */
	int rc;
};

/* Send @body (@len bytes) after the header @enc. */
static int tbad_send(struct tbad *t, const struct rpcrdma_hdr_enc *enc, const void *body,
		     size_t len)
{
	unsigned char out[RAWPEER_BUF];
	long n = rpcrdma_hdr_encode(out, sizeof(out), enc);

	if (n <= 0)
		return -EINVAL;
	memcpy(out + n, body, len);
	return rawpeer_send(t->srv, out, (size_t)n + len);
}

/* The raw server's side: one call, answered badly, then (if @good) well. */
static void *tbad_main(void *arg)
{
	struct tbad *t = arg;
	static struct rawpeer_call rc;
	struct rpcrdma_hdr_enc enc = { .credit = GRANT, .proc = RPCRDMA_MSG };
	struct rpcrdma_segment echo[RPCRDMA_CLNT_MAX_SEGS];
	struct rpcrdma_chunk_desc desc = { 0, echo };
	unsigned char good[32], bad[32];
	size_t bad_len;

	t->rc = rawpeer_recv_call(t->srv, &rc, 5000);
	if (t->rc)
		return NULL;
	if (!rc.hdr.has_reply) {
		t->rc = -EPROTO;
		return NULL;
	}
	enc.xid = rc.hdr.xid;
	/* xid, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS, the value, no bytes. */
	memset(good, 0, sizeof(good));
	rpcmsg_reply_head(good, rc.hdr.xid);
	put32(good, 6, t->value);
	bad_len = head_bad_body(t->kind, bad, good, sizeof(good), rc.hdr.xid);
	if (t->nomsg) {
		memcpy(t->local, bad, bad_len);
		t->rc = rawpeer_push(t->srv, &rc.hdr.reply, t->local, bad_len, echo);
		desc.nsegs = rc.hdr.reply.nsegs;
		enc.reply = &desc;
		enc.proc = RPCRDMA_NOMSG;
		bad_len = 0;
	}
	if (!t->rc)
		t->rc = tbad_send(t, &enc, bad, bad_len);
	if (t->rc || !t->good)
		return NULL;
	/* Inline, the Reply chunk left out (section 4.3.3): what it holds stays bad. */
	enc.reply = NULL;
	enc.proc = RPCRDMA_MSG;
	t->rc = tbad_send(t, &enc, good, sizeof(good));
	return NULL;
}

/*
 * Through the libtirpc CLIENT: a reply whose RPC head does not answer the
 * call, inline or in the Reply chunk, is dropped (and counted), and
 * clnt_call() returns the results of the good reply after it; with no good
 * reply, RPC_TIMEDOUT, never RPC_SUCCESS.
 */
static void t_tirpc_reply_head_checked(void **state)
{
	struct timeval tv = { 5, 0 }, brief = { 0, 300000 };
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	static struct tres res;
	unsigned char *local = aligned_alloc(4096, 65536);
	uint64_t dropped = 0;
	struct rawpeer srv;
	enum clnt_stat cs;
	struct tbad t;
	pthread_t th;
	CLIENT *cl;
	int k, nomsg;

	assert_non_null(local);
	cl = tclnt_to_raw(&srv);
	assert_non_null(rawpeer_reg(&srv, local, 65536, IBV_ACCESS_LOCAL_WRITE));
	for (nomsg = 0; nomsg < 2; nomsg++) {
		for (k = 0; k < HEAD_KINDS; k++) {
			t = (struct tbad){ &srv, local, (enum head_kind)k, nomsg, true,
					   0x600d0000u + (uint32_t)(2 * k + nomsg), 0 };
			assert_int_equal(pthread_create(&th, NULL, tbad_main, &t), 0);
			memset(&res, 0, sizeof(res));
			cs = clnt_call(cl, 1, (xdrproc_t)(void (*)(void))xdr_void, NULL,
				       (xdrproc_t)xdr_tres, (char *)&res, tv);
			pthread_join(th, NULL);
			assert_int_equal(t.rc, 0);
			if (cs != RPC_SUCCESS || res.value != t.value)
				fail_msg("tirpc, %s %s: clnt_call: %s, result 0x%x, expected 0x%x",
					 nomsg ? "RDMA_NOMSG" : "inline", head_names[k],
					 clnt_sperrno(cs), res.value, t.value);
			assert_int_equal(res.len, 0);
			assert_true(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&st));
			assert_int_equal(st.dropped, ++dropped);
		}
	}
	/* Only the bad reply: the call times out. */
	t = (struct tbad){ &srv, local, HEAD_ZERO, true, false, 0x600dffffu, 0 };
	assert_int_equal(pthread_create(&th, NULL, tbad_main, &t), 0);
	memset(&res, 0, sizeof(res));
	cs = clnt_call(cl, 1, (xdrproc_t)(void (*)(void))xdr_void, NULL, (xdrproc_t)xdr_tres,
		       (char *)&res, brief);
	pthread_join(th, NULL);
	assert_int_equal(t.rc, 0);
	if (cs != RPC_TIMEDOUT)
		fail_msg("tirpc, a zeroed Reply chunk only: clnt_call: %s", clnt_sperrno(cs));
	assert_int_equal(res.value, 0);
	clnt_destroy(cl);
	rawpeer_close(&srv);
	free(local);
	harness_assert_fabric_idle();
}

/*
 * RDMA_ERROR ends the call: ERR_CHUNK with -EREMOTEIO, ERR_VERS with
 * -EPROTONOSUPPORT and the versions the server named in rpcrdma_clnt_info().
 */
static void t_clnt_rdma_error_statuses(void **state)
{
	struct rpcrdma_hdr_enc enc = { .credit = GRANT, .proc = RPCRDMA_ERROR };
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	struct rpcrdma_stats before = { RPCRDMA_SIZED(before) }, after = { RPCRDMA_SIZED(after) };
	static struct ccall c;
	struct cfix f;

	cfix_up(&f, true);
	assert_int_equal(rpcrdma_clnt_info(f.clnt, &info), 0);
	assert_int_equal(info.vers_low, 0);
	assert_int_equal(info.vers_high, 0);
	before = cfix_stats(&f);

	cfix_call_start(&f, &c, 0, 0, 20000, 0);
	enc.xid = c.rc.hdr.xid;
	enc.err = RPCRDMA_ERR_CHUNK;
	srv_send(&f, &enc, NULL, 0);
	cfix_run(&f, &c.finished, 5000);
	assert_int_equal(c.finished, 1);
	assert_int_equal(c.call.status, -EREMOTEIO);
	assert_int_equal(c.call.reply_len, 0);
	cfix_call_free(&f, &c);

	cfix_call_start(&f, &c, 0, 3000, 64, 0);
	enc.xid = c.rc.hdr.xid;
	enc.err = RPCRDMA_ERR_VERS;
	enc.vers_low = 2;
	enc.vers_high = 3;
	enc.vers = RPCRDMA_VERSION;	/* the version of the call it refuses */
	srv_send(&f, &enc, NULL, 0);
	cfix_run(&f, &c.finished, 5000);
	assert_int_equal(c.finished, 1);
	assert_int_equal(c.call.status, -EPROTONOSUPPORT);
	assert_int_equal(c.call.reply_len, 0);
	assert_int_equal(c.call.result_len, 0);
	assert_int_equal(rpcrdma_clnt_info(f.clnt, &info), 0);
	assert_int_equal(info.vers_low, 2);
	assert_int_equal(info.vers_high, 3);
	cfix_call_free(&f, &c);

	after = cfix_stats(&f);
	assert_int_equal(after.rdma_errors - before.rdma_errors, 2);
	assert_int_equal(after.dropped, before.dropped);
	cfix_down(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_svc_err_vers_echoes_vers),
		cmocka_unit_test(t_svc_short_message_dropped),
		cmocka_unit_test(t_svc_empty_write_chunk_read),
		cmocka_unit_test(t_svc_empty_write_chunk_mixed),
		cmocka_unit_test(t_svc_app_err_chunk),
		cmocka_unit_test(t_tirpc_svc_empty_chunk_and_err_chunk),
		cmocka_unit_test(t_clnt_inline_reply_windows),
		cmocka_unit_test(t_clnt_inline_reply_bounce),
		cmocka_unit_test(t_clnt_unused_write_chunk),
		cmocka_unit_test(t_tirpc_inline_reply),
		cmocka_unit_test(t_clnt_drops_bad_replies),
		cmocka_unit_test(t_clnt_dropped_reply_times_out),
		cmocka_unit_test(t_clnt_reply_head_checked),
		cmocka_unit_test(t_clnt_bad_heads_time_out),
		cmocka_unit_test(t_tirpc_reply_head_checked),
		cmocka_unit_test(t_clnt_rdma_error_statuses),
	};

	/* RFC8166_FILTER=t_clnt_* runs some of them. */
	if (getenv("RFC8166_FILTER"))
		cmocka_set_test_filter(getenv("RFC8166_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * Exposure: what the peer can reach of our memory, and for how long.
 *
 * Client side, against a raw server (rawpeer.h) that serves every chunk with
 * its own RDMA Reads and Writes: while a call is in flight each rkey it
 * advertised reaches exactly its segment's bytes with only the right it
 * needs (remote read for Read chunks, remote write for Write and Reply
 * chunks); once done() has run every one of them is dead, and a real RDMA
 * access with one fails with a remote access error. That holds for long
 * calls, payloads, results, long replies and all of them at once, through
 * memory windows over registered memory and over bounce buffers, with the
 * windows invalidated locally or by the server's Send With Invalidate (then
 * without a LOCAL_INV), and with a server that sends no private data (1 KiB
 * inline); a reused window carries a new key byte at every bind.
 * Persistent registration trades this away, and says so: the region
 * stays reachable after the call, and the client does not offer remote
 * invalidation.
 *
 * Server side: the library server exposes no memory at all, during calls
 * and after them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rpcrdma/proto.h>
#include <softrdma.h>

#include "ddp.h"
#include "harness.h"
#include "rawpeer.h"
#include "svc_rdma.h"
#include "xprt_rdma.h"

#define ARENA (1u << 20)
#define LOCAL (1u << 20)
#define SEG 4096u		/* the client's max_segment: several segments at small sizes */
#define GRANT 8
#define MAX_KEYS 64

enum reg_mode { REG_BOUNCE, REG_WINDOWS, REG_PERSISTENT };

static const char *const reg_names[] = { "bounce", "windows", "persistent" };

/* A library client connected to a raw server. */
struct fixture {
	struct rawpeer srv;
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_mem *mem;
	enum reg_mode mode;
	unsigned char *arena;	/* registered with the client (not for REG_BOUNCE) */
	size_t used;
	unsigned char *local;	/* the raw server's memory for RDMA */
	uint32_t inline_recv;	/* the largest reply the client takes inline */
	uint32_t xid;
};

/* What one call advertised, as the raw server decoded it. */
struct advert {
	uint32_t n;
	struct rpcrdma_segment seg[MAX_KEYS];
	int access[MAX_KEYS];
	uint32_t npzrc, npayload, nwrite, nreply;	/* segments of each kind, in this order */
};

static const struct rpcrdma_cm_private srv_pd = { 4096, 4096, 0 };

/*
 * A raw server, accepting with RFC 8797 private data @pd (NULL: none), and
 * a library client connected to it.
 */
static void fixture_up_pd(struct fixture *fx, enum reg_mode mode,
			  const struct rpcrdma_cm_private *pd)
{
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN];
	struct rpcrdma_cm_private req;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };

	memset(fx, 0, sizeof(*fx));
	fx->mode = mode;
	fx->xid = 0x7000;
	if (pd)
		assert_int_equal(rpcrdma_cm_private_encode(pdata, sizeof(pdata), pd),
				 RPCRDMA_CM_PRIVATE_LEN);
	assert_int_equal(rawpeer_listen(&fx->srv), 0);
	assert_int_equal(rawpeer_accept_start(&fx->srv, pd ? pdata : NULL,
					      pd ? sizeof(pdata) : 0), 0);
	RPCRDMA_INIT(&attr);
	attr.addr = (const struct sockaddr *)&fx->srv.addr;
	attr.connect_timeout_ms = 5000;
	attr.call_timeout_ms = 10000;
	attr.max_segment = SEG;
	if (mode == REG_PERSISTENT)
		attr.flags = RPCRDMA_CLNT_PERSISTENT_REG;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &fx->clnt), 0);
	assert_int_equal(rawpeer_accept_join(&fx->srv), 0);

	/*
	 * RFC 8797: remote invalidation is offered exactly when windows are
	 * used; a device without them gets MRs registered per call.
	 */
	assert_int_equal(rpcrdma_cm_private_decode(fx->srv.pdata, fx->srv.pdata_len, &req), 0);
	assert_int_equal(req.flags, mode != REG_PERSISTENT && harness_device_windows() ?
			 RPCRDMA_CM_REMOTE_INVALIDATE : 0);
	assert_int_equal(rpcrdma_clnt_info(fx->clnt, &info), 0);
	assert_int_equal(info.remote_invalidate,
			 pd && (pd->flags & RPCRDMA_CM_REMOTE_INVALIDATE));
	/* Without private data, RFC 8797's 1 KiB both ways. */
	assert_int_equal(info.inline_send, pd ? pd->recv_size : RPCRDMA_CM_DEFAULT_INLINE);
	assert_int_equal(info.inline_recv, pd ? pd->send_size : RPCRDMA_CM_DEFAULT_INLINE);
	fx->inline_recv = info.inline_recv;

	fx->local = aligned_alloc(4096, LOCAL);
	assert_non_null(fx->local);
	assert_non_null(rawpeer_reg_sink(&fx->srv, fx->local, LOCAL));
	if (mode != REG_BOUNCE) {
		fx->arena = aligned_alloc(4096, ARENA);
		assert_non_null(fx->arena);
		assert_int_equal(rpcrdma_clnt_mem_register(fx->clnt, fx->arena, ARENA, &fx->mem),
				 0);
	}
}

static void fixture_up(struct fixture *fx, enum reg_mode mode, uint32_t srv_flags)
{
	struct rpcrdma_cm_private pd = srv_pd;

	pd.flags = srv_flags;
	fixture_up_pd(fx, mode, &pd);
}

static void fixture_down(struct fixture *fx)
{
	/* Destroying the client releases its registration too. */
	rpcrdma_clnt_destroy(fx->clnt);
	rawpeer_close(&fx->srv);
	free(fx->arena);
	free(fx->local);
	harness_assert_fabric_idle();
}

static struct ibv_pd *clnt_pd(struct fixture *fx)
{
	return rpcrdma_clnt_xprt(fx->clnt)->rx_pd;
}

static void *buf_get(struct fixture *fx, size_t len)
{
	void *p;

	if (fx->mode == REG_BOUNCE)
		return malloc(len ? len : 1);
	len = (len + 63) & ~(size_t)63;
	assert_true(fx->used + len <= ARENA);
	p = fx->arena + fx->used;
	fx->used += len;
	return p;
}

static void buf_put(struct fixture *fx, void *p)
{
	if (fx->mode == REG_BOUNCE)
		free(p);
}

static void call_done(struct rpcrdma_call *call)
{
	(*(int *)call->arg)++;
}

static void submit(struct fixture *fx, struct rpcrdma_call *call, int *finished)
{
	*finished = 0;
	call->done = call_done;
	call->arg = finished;
	assert_int_equal(rpcrdma_clnt_submit(fx->clnt, call), 0);
}

/* Poll the client until @finished is set; fail after 5 s. */
static void wait_done(struct fixture *fx, const int *finished)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!*finished) {
		rpcrdma_clnt_poll(fx->clnt, 16);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			fail_msg("the call did not complete");
		if (!*finished)
			poll(NULL, 0, 1);
	}
	assert_int_equal(*finished, 1);
}

/* Receive the next call at the raw server and list what it advertised. */
static void recv_call(struct fixture *fx, struct rawpeer_call *rc, struct advert *ad)
{
	struct rpcrdma_read_segment rs;
	uint32_t i, j;

	assert_int_equal(rawpeer_recv_call(&fx->srv, rc, 3000), 0);
	memset(ad, 0, sizeof(*ad));
	/* The client lists the position-zero chunk first. */
	for (i = 0; i < rc->hdr.read_segs; i++) {
		rpcrdma_hdr_read_segment(&rc->hdr, i, &rs);
		if (rs.position == 0)
			ad->npzrc++;
		else
			ad->npayload++;
		ad->access[ad->n] = IBV_ACCESS_REMOTE_READ;
		ad->seg[ad->n++] = rs.seg;
	}
	for (i = 0; i < rc->hdr.write_chunks; i++) {
		for (j = 0; j < rc->hdr.write[i].nsegs; j++) {
			ad->access[ad->n] = IBV_ACCESS_REMOTE_WRITE;
			rpcrdma_chunk_segment(&rc->hdr.write[i], j, &ad->seg[ad->n++]);
			ad->nwrite++;
		}
	}
	for (j = 0; rc->hdr.has_reply && j < rc->hdr.reply.nsegs; j++) {
		ad->access[ad->n] = IBV_ACCESS_REMOTE_WRITE;
		rpcrdma_chunk_segment(&rc->hdr.reply, j, &ad->seg[ad->n++]);
		ad->nreply++;
	}
}

/*
 * In flight: through windows, each rkey reaches its segment exactly, with
 * only the right its chunk needs, and nothing else of the client's is
 * reachable; with persistent registration the rkey is the region's.
 */
static void check_in_flight(struct fixture *fx, const struct advert *ad)
{
	uint64_t addr, len, total = 0;
	uint32_t i, j;
	int access;

	for (i = 0; i < ad->n; i++) {
		const struct rpcrdma_segment *s = &ad->seg[i];

		if (softrdma_rkey_reach(s->handle, &addr, &len, &access))
			fail_msg("%s: segment %u (rkey 0x%x) unreachable in flight",
				 reg_names[fx->mode], i, s->handle);
		assert_true(s->length > 0 && s->length <= SEG);
		if (fx->mode == REG_PERSISTENT) {
			assert_int_equal(addr, (uintptr_t)fx->arena);
			assert_int_equal(len, ARENA);
			assert_int_equal(access, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
			continue;
		}
		if (addr != s->offset || len != s->length || access != ad->access[i])
			fail_msg("%s: segment %u reaches 0x%llx+%llu access 0x%x, advertised "
				 "0x%llx+%u access 0x%x", reg_names[fx->mode], i,
				 (unsigned long long)addr, (unsigned long long)len, access,
				 (unsigned long long)s->offset, s->length, ad->access[i]);
		for (j = 0; j < i; j++)
			assert_int_not_equal(ad->seg[j].handle, s->handle);
		total += s->length;
	}
	if (fx->mode == REG_PERSISTENT)
		assert_int_equal(softrdma_pd_exposed_bytes(clnt_pd(fx)), ARENA);
	else
		assert_int_equal(softrdma_pd_exposed_bytes(clnt_pd(fx)), total);
}

/* After done(): no advertised rkey reaches anything, nothing is exposed. */
static void check_dead(struct fixture *fx, const struct advert *ad)
{
	uint32_t i;

	for (i = 0; i < ad->n; i++)
		if (softrdma_rkey_reach(ad->seg[i].handle, NULL, NULL, NULL) != -ENOENT)
			fail_msg("%s: rkey 0x%x of segment %u still reachable after done()",
				 reg_names[fx->mode], ad->seg[i].handle, i);
	assert_int_equal(softrdma_pd_exposed_bytes(clnt_pd(fx)), 0);
}

/* The segments of one kind cover a buffer of @len bytes contiguously (at @buf through windows). */
static void check_cover(struct fixture *fx, const struct advert *ad, uint32_t first, uint32_t n,
			const void *buf, size_t len)
{
	uint64_t start = n ? ad->seg[first].offset : 0, off = 0;
	uint32_t i;

	assert_true(n == (len + SEG - 1) / SEG);
	if (fx->mode != REG_BOUNCE)
		assert_int_equal(start, (uintptr_t)buf);
	for (i = first; i < first + n; i++) {
		assert_int_equal(ad->seg[i].offset, start + off);
		off += ad->seg[i].length;
	}
	assert_int_equal(off, len);
}

/*
 * One access with a dead rkey: a Read where a Read chunk's rkey allowed
 * reading, a Write otherwise. It must fail with a remote access error (which
 * breaks the connection: one probe per fixture).
 */
static void probe_dead(struct fixture *fx, const struct rpcrdma_segment *s, int access)
{
	uint32_t len = s->length < 256 ? s->length : 256;
	enum ibv_wr_opcode op = access == IBV_ACCESS_REMOTE_READ ? IBV_WR_RDMA_READ :
								   IBV_WR_RDMA_WRITE;
	int st;

	memset(fx->local + LOCAL - 256, 0xee, 256);
	st = rawpeer_rdma(&fx->srv, op, fx->local + LOCAL - 256, len, s->offset, s->handle);
	if (st != IBV_WC_REM_ACCESS_ERR)
		fail_msg("%s: RDMA %s with dead rkey 0x%x completed with %d, not "
			 "IBV_WC_REM_ACCESS_ERR", reg_names[fx->mode],
			 op == IBV_WR_RDMA_READ ? "Read" : "Write", s->handle, st);
}

/* One call's shape, and what the raw server answers. */
struct shape {
	const char *name;
	size_t msg_len;
	size_t payload_len;
	uint32_t payload_pos;
	size_t result_max;
	size_t result_len;	/* bytes the server writes into the Write chunk */
	size_t reply_max;
	size_t reply_len;	/* the reply message's length */
	uint32_t reminv;	/* answer with Send With Invalidate of this rkey (1-based), or 0 */
};

enum probe_kind { PROBE_NONE, PROBE_PZRC, PROBE_PAYLOAD, PROBE_WRITE, PROBE_REPLY };

/*
 * Run one call of @sh through the raw server, checking the exposure in
 * flight and after done(), then probe one rkey of the kind @probe (its last
 * segment) for real. Returns the rkeys' count.
 */
static uint32_t run_shape(struct fixture *fx, const struct shape *sh, enum probe_kind probe,
			  struct advert *ad)
{
	unsigned char *msg = buf_get(fx, sh->msg_len);
	unsigned char *payload = sh->payload_len ? buf_get(fx, sh->payload_len) : NULL;
	unsigned char *result = sh->result_max ? buf_get(fx, sh->result_max) : NULL;
	unsigned char *reply = buf_get(fx, sh->reply_max);
	unsigned char *rmsg = fx->local + LOCAL / 2;	/* the reply, at the raw server */
	unsigned char out[RAWPEER_BUF];
	struct rpcrdma_segment wecho[RPCRDMA_CLNT_MAX_SEGS], recho[RPCRDMA_CLNT_MAX_SEGS];
	struct rpcrdma_chunk_desc wdesc, rdesc;
	struct rpcrdma_hdr_enc enc = { .credit = GRANT, .proc = RPCRDMA_MSG };
	struct rawpeer_call *rc = malloc(sizeof(*rc));
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	struct rpcrdma_call call = { RPCRDMA_SIZED(call) };
	unsigned long linv, first = 0;
	uint32_t xid = ++fx->xid, nkeys, i;
	long n, hlen;
	int finished, st_send;

	assert_non_null(rc);
	ddp_fill(msg, sh->msg_len, xid);
	rpcmsg_call_head(msg, xid);
	if (payload)
		ddp_fill(payload, sh->payload_len, xid + 1);
	RPCRDMA_INIT(&call);
	call.msg = msg;
	call.msg_len = sh->msg_len;
	call.payload = payload;
	call.payload_len = sh->payload_len;
	call.payload_pos = sh->payload_pos;
	call.result = result;
	call.result_max = sh->result_max;
	call.reply = reply;
	call.reply_max = sh->reply_max;
	linv = softrdma_executed(IBV_WR_LOCAL_INV);
	submit(fx, &call, &finished);

	recv_call(fx, rc, ad);
	nkeys = ad->n;
	assert_int_equal(rc->hdr.xid, xid);
	check_in_flight(fx, ad);

	/* A long call: the message is a position-zero Read chunk, and nothing inline. */
	if (ad->npzrc) {
		assert_int_equal(rc->hdr.proc, RPCRDMA_NOMSG);
		assert_int_equal(rc->len, rc->hdr.hdr_len);
		check_cover(fx, ad, 0, ad->npzrc, msg, sh->msg_len);
		n = rawpeer_pull(&fx->srv, &rc->hdr, 0, fx->local, LOCAL / 4);
		assert_int_equal(n, sh->msg_len);
		assert_memory_equal(fx->local, msg, sh->msg_len);
	} else {
		assert_int_equal(rc->hdr.proc, RPCRDMA_MSG);
		assert_int_equal(rc->len - rc->hdr.hdr_len, sh->msg_len);
		assert_memory_equal(rc->buf + rc->hdr.hdr_len, msg, sh->msg_len);
	}
	if (ad->npayload) {
		check_cover(fx, ad, ad->npzrc, ad->npayload, payload, sh->payload_len);
		n = rawpeer_pull(&fx->srv, &rc->hdr, sh->payload_pos, fx->local + LOCAL / 4,
				 LOCAL / 4);
		assert_int_equal(n, sh->payload_len);
		assert_int_equal(ddp_check(fx->local + LOCAL / 4, sh->payload_len, xid + 1),
				 sh->payload_len);
	}
	assert_int_equal(rc->hdr.write_chunks, sh->result_max ? 1 : 0);
	if (rc->hdr.write_chunks) {
		check_cover(fx, ad, ad->npzrc + ad->npayload, ad->nwrite, result, sh->result_max);
		ddp_fill(fx->local + 3 * (LOCAL / 4), sh->result_len, xid + 2);
		assert_int_equal(rawpeer_push(&fx->srv, &rc->hdr.write[0],
					      fx->local + 3 * (LOCAL / 4), sh->result_len, wecho),
				 0);
		wdesc.nsegs = rc->hdr.write[0].nsegs;
		wdesc.segs = wecho;
		enc.write_chunks = 1;
		enc.write = &wdesc;
	}

	/* The reply message: a reply's head (rpcmsg.h), then a pattern. */
	ddp_fill(rmsg, sh->reply_len, xid + 3);
	rpcmsg_reply_head(rmsg, xid);
	enc.xid = xid;
	if (rc->hdr.has_reply) {
		check_cover(fx, ad, ad->n - ad->nreply, ad->nreply, reply, sh->reply_max);
		assert_int_equal(rawpeer_push(&fx->srv, &rc->hdr.reply, rmsg, sh->reply_len, recho),
				 0);
		rdesc.nsegs = rc->hdr.reply.nsegs;
		rdesc.segs = recho;
		enc.reply = &rdesc;
		enc.proc = RPCRDMA_NOMSG;
	}
	hlen = rpcrdma_hdr_encode(out, sizeof(out), &enc);
	assert_true(hlen > 0);
	if (enc.proc == RPCRDMA_MSG) {
		assert_true((size_t)hlen + sh->reply_len <= fx->inline_recv);
		memcpy(out + hlen, rmsg, sh->reply_len);
		hlen += (long)sh->reply_len;
	}
	if (sh->reminv) {
		assert_true(sh->reminv <= nkeys);
		st_send = rawpeer_send_inv(&fx->srv, out, (size_t)hlen,
					   ad->seg[sh->reminv - 1].handle);
		assert_int_equal(st_send, IBV_WC_SUCCESS);
	} else {
		assert_int_equal(rawpeer_send(&fx->srv, out, (size_t)hlen), 0);
	}

	wait_done(fx, &finished);
	if (call.status)
		fail_msg("%s, %s: status %d", reg_names[fx->mode], sh->name, call.status);
	assert_int_equal(call.reply_len, sh->reply_len);
	assert_memory_equal(reply, rmsg, sh->reply_len);
	assert_int_equal(call.result_len, sh->result_len);
	if (sh->result_len)
		assert_int_equal(ddp_check(result, sh->result_len, xid + 2), sh->result_len);

	if (fx->mode == REG_PERSISTENT) {
		/* The trade: every rkey still reaches the whole region. */
		for (i = 0; i < nkeys; i++)
			assert_int_equal(softrdma_rkey_reach(ad->seg[i].handle, NULL, NULL, NULL),
					 0);
		assert_int_equal(softrdma_pd_exposed_bytes(clnt_pd(fx)), ARENA);
		assert_int_equal(softrdma_executed(IBV_WR_LOCAL_INV), linv);
	} else {
		check_dead(fx, ad);
		/*
		 * Fenced by LOCAL_INV, one per window but the one the server
		 * invalidated; per-call MRs by their deregistration alone.
		 */
		assert_int_equal(softrdma_executed(IBV_WR_LOCAL_INV) - linv,
				 harness_device_windows() ? nkeys - (sh->reminv ? 1 : 0) : 0);
		if (sh->reminv)
			assert_int_equal(softrdma_mw_state(ad->seg[sh->reminv - 1].handle),
					 SOFTRDMA_MW_FREE);
	}
	assert_int_equal(rpcrdma_clnt_stats(fx->clnt, &st), 0);
	if (fx->mode == REG_BOUNCE)
		assert_true(st.bounce_bytes > 0);
	else
		assert_int_equal(st.bounce_bytes, 0);

	switch (probe) {
	case PROBE_NONE:
		break;
	case PROBE_PZRC:
		assert_true(ad->npzrc > 0);
		first = ad->npzrc - 1;
		break;
	case PROBE_PAYLOAD:
		assert_true(ad->npayload > 0);
		first = ad->npzrc + ad->npayload - 1;
		break;
	case PROBE_WRITE:
		assert_true(ad->nwrite > 0);
		first = ad->npzrc + ad->npayload + ad->nwrite - 1;
		break;
	case PROBE_REPLY:
		assert_true(ad->nreply > 0);
		first = ad->n - 1;
		break;
	}
	if (probe != PROBE_NONE) {
		probe_dead(fx, &ad->seg[first], ad->access[first]);
		/* The failed Write changed nothing. */
		assert_memory_equal(reply, rmsg, sh->reply_len);
		if (sh->result_len)
			assert_int_equal(ddp_check(result, sh->result_len, xid + 2),
					 sh->result_len);
	}
	buf_put(fx, msg);
	if (payload)
		buf_put(fx, payload);
	if (result)
		buf_put(fx, result);
	buf_put(fx, reply);
	free(rc);
	return nkeys;
}

static const struct shape shapes[] = {
	/* 9000 bytes do not fit 4 KiB inline: a position-zero Read chunk of 3 segments. */
	{ .name = "long call", .msg_len = 9000, .reply_max = 64, .reply_len = 12 },
	{ .name = "payload", .msg_len = 40, .payload_len = 10000, .payload_pos = 24,
	  .reply_max = 64, .reply_len = 40 },
	{ .name = "result", .msg_len = 16, .result_max = 10000, .result_len = 9001,
	  .reply_max = 64, .reply_len = 12 },
	{ .name = "long reply", .msg_len = 16, .reply_max = 20000, .reply_len = 12345 },
	{ .name = "all", .msg_len = 9000, .payload_len = 5000, .payload_pos = 8000,
	  .result_max = 6000, .result_len = 6000, .reply_max = 20000, .reply_len = 12345 },
};

static const enum probe_kind shape_probe[] = {
	PROBE_PZRC, PROBE_PAYLOAD, PROBE_WRITE, PROBE_REPLY, PROBE_NONE,
};

static void run_kinds(enum reg_mode mode)
{
	struct fixture fx;
	struct advert ad;
	size_t i;
	int p;

	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		fixture_up(&fx, mode, 0);
		run_shape(&fx, &shapes[i], shape_probe[i], &ad);
		fixture_down(&fx);
	}
	/* Everything at once, probing each kind of chunk on a connection of its own. */
	for (p = PROBE_PZRC; p <= PROBE_REPLY; p++) {
		fixture_up(&fx, mode, 0);
		assert_int_equal(run_shape(&fx, &shapes[4], (enum probe_kind)p, &ad),
				 3 + 2 + 2 + 5);
		fixture_down(&fx);
	}
}

static void t_windows_every_chunk(void **state)
{
	run_kinds(REG_WINDOWS);
}

static void t_bounce_every_chunk(void **state)
{
	run_kinds(REG_BOUNCE);
}

/* Calls with exactly one rkey, answered by Send With Invalidate of it. */
static const struct shape reminv_shapes[] = {
	{ .name = "reminv result", .msg_len = 16, .result_max = 3000, .result_len = 2999,
	  .reply_max = 64, .reply_len = 12, .reminv = 1 },
	{ .name = "reminv long reply", .msg_len = 16, .reply_max = 4096, .reply_len = 4001,
	  .reminv = 1 },
	{ .name = "reminv long call", .msg_len = 4080, .reply_max = 64, .reply_len = 12,
	  .reminv = 1 },
};

static const enum probe_kind reminv_probe[] = { PROBE_WRITE, PROBE_REPLY, PROBE_PZRC };

/* Every kind of chunk, the server invalidating one of the 12 rkeys: a Write chunk's. */
static const struct shape reminv_one_of_many = {
	.name = "reminv one of many", .msg_len = 9000, .payload_len = 5000, .payload_pos = 8000,
	.result_max = 6000, .result_len = 6000, .reply_max = 20000, .reply_len = 12345,
	.reminv = 3 + 2 + 2,
};

/*
 * Remote invalidation retires the window without a LOCAL_INV, the call
 * completes, and the rkey is as dead as after a local invalidation. When
 * the call had more windows (the server may invalidate only one), the
 * others get their LOCAL_INV.
 */
static void t_remote_invalidation(void **state)
{
	static const enum reg_mode modes[] = { REG_WINDOWS, REG_BOUNCE };
	struct fixture fx;
	struct advert ad;
	size_t m, i;

	harness_require_windows("remote invalidation retires windows; MRs are never offered to it");
	for (m = 0; m < 2; m++) {
		for (i = 0; i < sizeof(reminv_shapes) / sizeof(reminv_shapes[0]); i++) {
			fixture_up(&fx, modes[m], 0);
			assert_int_equal(run_shape(&fx, &reminv_shapes[i], reminv_probe[i], &ad),
					 1);
			fixture_down(&fx);
		}
		fixture_up(&fx, modes[m], 0);
		assert_int_equal(run_shape(&fx, &reminv_one_of_many, PROBE_WRITE, &ad), 12);
		fixture_down(&fx);
	}
}

/*
 * One window, reused call after call (invalidated locally and remotely in
 * turn): the same index, a new key byte at every bind, so an rkey from an
 * earlier call never reaches the memory of a later one.
 */
static void t_key_byte_changes(void **state)
{
	static const enum reg_mode modes[] = { REG_WINDOWS, REG_BOUNCE };
	struct shape sh = reminv_shapes[0];
	uint32_t keys[12], i, j;
	struct fixture fx;
	struct advert ad;
	size_t m;

	harness_require_windows("a window's key byte; a per-call MR gets a new rkey each time");
	for (m = 0; m < 2; m++) {
		fixture_up(&fx, modes[m], RPCRDMA_CM_REMOTE_INVALIDATE);
		for (i = 0; i < 12; i++) {
			sh.reminv = i & 1;
			fx.used = 0;
			assert_int_equal(run_shape(&fx, &sh, PROBE_NONE, &ad), 1);
			keys[i] = ad.seg[0].handle;
			/* The previous call's rkey is dead, and stays dead. */
			for (j = 0; j < i; j++) {
				assert_int_equal(keys[j] >> 8, keys[i] >> 8);
				assert_int_not_equal(keys[j], keys[i]);
				assert_int_equal(softrdma_rkey_reach(keys[j], NULL, NULL, NULL),
						 -ENOENT);
			}
			if (i)
				assert_int_not_equal(keys[i] & 0xff, keys[i - 1] & 0xff);
		}
		/* The first call's rkey, for real: its key byte is long stale. */
		ad.seg[0].handle = keys[0];
		probe_dead(&fx, &ad.seg[0], ad.access[0]);
		fixture_down(&fx);
	}
}

/*
 * A server that sends no private data: the client assumes 1 KiB inline
 * (RFC 8797), so a 2000-byte call is a long call and a 2000-byte reply
 * needs a Reply chunk; no remote invalidation is announced to it. The
 * windows are as exact and as dead as ever.
 */
static void t_no_private_data(void **state)
{
	static const struct shape sh = {
		.name = "1 KiB inline", .msg_len = 2000, .reply_max = 2000, .reply_len = 1500,
	};
	static const enum reg_mode modes[] = { REG_WINDOWS, REG_BOUNCE };
	static const enum probe_kind probes[] = { PROBE_PZRC, PROBE_REPLY };
	struct fixture fx;
	struct advert ad;
	size_t m, p;

	for (m = 0; m < 2; m++) {
		for (p = 0; p < 2; p++) {
			fixture_up_pd(&fx, modes[m], NULL);
			assert_int_equal(run_shape(&fx, &sh, probes[p], &ad), 2);
			assert_int_equal(ad.npzrc, 1);
			assert_int_equal(ad.nreply, 1);
			fixture_down(&fx);
		}
	}
}

/*
 * RPCRDMA_CLNT_PERSISTENT_REG, the documented trade: no windows (no bind,
 * no invalidation), the region's own rkey advertised, still reachable for
 * reading and writing after the call, and no remote invalidation offered
 * (checked in fixture_up()).
 */
static void t_persistent_stays_exposed(void **state)
{
	static const struct shape sh = {
		.name = "persistent", .msg_len = 40, .payload_len = 10000, .payload_pos = 24,
		.result_max = 3000, .result_len = 3000, .reply_max = 64, .reply_len = 40,
	};
	unsigned long binds = softrdma_executed(IBV_WR_BIND_MW);
	struct fixture fx;
	struct advert ad;
	uint32_t i;

	fixture_up(&fx, REG_PERSISTENT, 0);
	run_shape(&fx, &sh, PROBE_NONE, &ad);
	assert_int_equal(softrdma_executed(IBV_WR_BIND_MW), binds);
	for (i = 1; i < ad.n; i++)
		assert_int_equal(ad.seg[i].handle, ad.seg[0].handle);
	/* After done(): the server still reads the payload's memory, and writes the result's. */
	assert_int_equal(rawpeer_rdma(&fx.srv, IBV_WR_RDMA_READ, fx.local, 100, ad.seg[0].offset,
				      ad.seg[0].handle), IBV_WC_SUCCESS);
	assert_memory_equal(fx.local, (const void *)(uintptr_t)ad.seg[0].offset, 100);
	memset(fx.local, 0x5c, 100);
	assert_int_equal(rawpeer_rdma(&fx.srv, IBV_WR_RDMA_WRITE, fx.local, 100,
				      ad.seg[ad.n - 1].offset, ad.seg[ad.n - 1].handle),
			 IBV_WC_SUCCESS);
	assert_memory_equal((const void *)(uintptr_t)ad.seg[ad.n - 1].offset, fx.local, 100);
	/* Anywhere in the region, not only where the call's buffers were. */
	assert_int_equal(rawpeer_rdma(&fx.srv, IBV_WR_RDMA_READ, fx.local, 64,
				      (uintptr_t)fx.arena + ARENA - 64, ad.seg[0].handle),
			 IBV_WC_SUCCESS);
	fixture_down(&fx);
}

/* Library server: a sampler of the exposure of every PD the server allocated. */
struct sampler {
	struct rpcrdma_svc *svc;
	pthread_t thread;
	atomic_bool stop;
	atomic_ulong samples;
	atomic_ulong exposed_max;
};

static size_t svc_exposed(const struct rpcrdma_svc *svc)
{
	size_t total = 0;
	unsigned int i;

	for (i = 0; i < svc->sv_npds; i++)
		total += softrdma_pd_exposed_bytes(svc->sv_pds[i].pd);
	return total;
}

static bool server_iwarp(const struct rpcrdma_svc *svc)
{
	return svc->sv_npds && svc->sv_pds[0].pd->context->device->transport_type ==
				       IBV_TRANSPORT_IWARP;
}

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;

	while (!atomic_load(&s->stop)) {
		size_t e = svc_exposed(s->svc);

		if (e > atomic_load(&s->exposed_max))
			atomic_store(&s->exposed_max, e);
		atomic_fetch_add(&s->samples, 1);
		poll(NULL, 0, 0);
	}
	return NULL;
}

struct svc_reg {
	void *addr;
	struct rpcrdma_mem *mem;
	int rc;
};

/* On the server thread, which owns the server: register memory to send from. */
static void svc_register(struct harness_server *hs, void *arg)
{
	struct svc_reg *reg = arg;

	reg->rc = rpcrdma_svc_mem_register(hs->svc, reg->addr, ARENA, &reg->mem);
}

static bool payloads_released(void *arg)
{
	return atomic_load(&ddp_counters.released) == atomic_load(&ddp_counters.named);
}

static void sync_done(struct rpcrdma_call *call)
{
	*(int *)call->arg = 1;
}

/* A call, with at least one sample of the server's exposure taken while it is in flight. */
static int run_sampled(struct rpcrdma_clnt *clnt, struct rpcrdma_call *call, struct sampler *s)
{
	unsigned long seen;
	int finished = 0, rc;

	call->done = sync_done;
	call->arg = &finished;
	seen = atomic_load(&s->samples);
	rc = rpcrdma_clnt_submit(clnt, call);
	if (rc)
		return rc;
	/* done() runs only from our polls: until then the call is in flight. */
	while (atomic_load(&s->samples) < seen + 2)
		poll(NULL, 0, 0);
	while (!finished)
		rpcrdma_clnt_wait(clnt, 100);
	return call->status;
}

/*
 * The library server reads and writes the client's memory and exposes none
 * of its own: every PD it allocated reaches 0 bytes remotely, while a call
 * is held after its Read chunks were pulled (when the client's PD does
 * expose the call's windows), during a stream of DDP calls of every kind
 * (sampled from another thread), and after, even with memory registered by
 * the application for sending from.
 */
static void t_server_exposes_nothing(void **state)
{
	harness_require_inproc("reads the server's registrations and protection domains");
	struct harness_server hs;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *clnt;
	struct svc_reg reg = { 0 };
	struct rpcrdma_mem *cmem;
	struct rpcrdma_stats sst = { RPCRDMA_SIZED(sst) };
	struct sampler smp;
	unsigned char *arena, *sregion;
	struct rpcrdma_call call = { RPCRDMA_SIZED(call) };
	int finished = 0, i;

	memset(&ddp_counters, 0, sizeof(ddp_counters));
	assert_int_equal(harness_server_start(&hs, 16, 0, HARNESS_HOLD), 0);
	assert_true(hs.svc->sv_npds >= 1);
	sregion = malloc(ARENA);
	assert_non_null(sregion);
	reg.addr = sregion;
	harness_server_run(&hs, svc_register, &reg);
	assert_int_equal(reg.rc, 0);
	assert_int_equal(svc_exposed(hs.svc), 0);
	harness_clnt_attr(&hs, &attr);
	attr.max_segment = SEG;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	arena = aligned_alloc(4096, ARENA);
	assert_non_null(arena);
	assert_int_equal(rpcrdma_clnt_mem_register(clnt, arena, ARENA, &cmem), 0);

	/* A long call offering a Reply chunk, held by the server once pulled. */
	ddp_fill(arena, 9000, 1);
	rpcmsg_call_head(arena, 0x100);
	RPCRDMA_INIT(&call);
	call.msg = arena;
	call.msg_len = 9000;
	call.reply = arena + 16384;
	call.reply_max = 9000;
	call.done = sync_done;
	call.arg = &finished;
	assert_int_equal(rpcrdma_clnt_submit(clnt, &call), 0);
	assert_true(harness_wait_for(harness_holds_one, &hs, 5000));
	assert_int_equal(svc_exposed(hs.svc), 0);
	assert_int_equal(softrdma_pd_exposed_bytes(rpcrdma_clnt_xprt(clnt)->rx_pd), 9000 + 9000);
	assert_int_equal(rpcrdma_svc_stats(hs.svc, &sst), 0);
	assert_true(sst.registered_bytes > 0);
	harness_server_release(&hs);
	while (!finished)
		rpcrdma_clnt_wait(clnt, 100);
	assert_int_equal(call.status, 0);
	assert_int_equal(call.reply_len, 9000);
	harness_assert_echo(call.reply, call.msg, 9000);
	assert_int_equal(svc_exposed(hs.svc), 0);

	/* DDP calls of every kind while another thread samples the server's exposure. */
	atomic_store(&hs.sh->mode, HARNESS_DDP);
	memset(&smp, 0, sizeof(smp));
	smp.svc = hs.svc;
	assert_int_equal(pthread_create(&smp.thread, NULL, sampler_main, &smp), 0);
	for (i = 0; i < 40; i++) {
		unsigned char *msg = arena, *payload = arena + 65536, *reply = arena + 131072;
		unsigned char *result = arena + 262144;
		size_t msg_len = i % 2 ? 9000 : 40, pay = (size_t)(i % 4) * 3000 + 1;

		RPCRDMA_INIT(&call);
		ddp_fill(msg, msg_len, (uint32_t)i);
		rpcmsg_call_head(msg, 0x200 + (uint32_t)i);
		put32(msg, DDP_W_OP, DDP_OP_ECHO);
		ddp_fill(payload, pay, (uint32_t)i + 100);
		call.msg = msg;
		call.msg_len = msg_len;
		call.payload = payload;
		call.payload_len = pay;
		call.payload_pos = DDP_ARG_POS;
		call.reply = reply;
		if (i % 3 == 0) {
			call.reply_max = msg_len;
			call.result = result;
			call.result_max = pay;
		} else {
			call.reply_max = msg_len + ((pay + 3) & ~(size_t)3);
		}
		assert_int_equal(run_sampled(clnt, &call, &smp), 0);
		if (call.result)
			assert_int_equal(ddp_check(result, pay, (uint32_t)i + 100), pay);
		else
			assert_int_equal(ddp_check(reply + DDP_ARG_POS, pay, (uint32_t)i + 100),
					 pay);
	}
	atomic_store(&smp.stop, true);
	pthread_join(smp.thread, NULL);
	assert_true(atomic_load(&smp.samples) >= 2 * 40);
	/*
	 * iWARP places Read data by the sink's STag, so a sink is open to
	 * remote write while it is pulled, and only then: at most one call's
	 * sinks here (9000 bytes of message, 9004 of payload).
	 */
	if (server_iwarp(hs.svc))
		assert_in_range(atomic_load(&smp.exposed_max), 0, 9000 + 9004);
	else
		assert_int_equal(atomic_load(&smp.exposed_max), 0);
	assert_int_equal(svc_exposed(hs.svc), 0);
	assert_int_equal(atomic_load(&ddp_counters.calls), 40);
	/* The last payload goes back at the server's Send completion, maybe after our done(). */
	assert_true(harness_wait_for(payloads_released, NULL, 3000));
	assert_int_equal(atomic_load(&ddp_counters.reply_errors), 0);

	rpcrdma_clnt_destroy(clnt);
	free(arena);
	assert_int_equal(svc_exposed(hs.svc), 0);
	harness_server_stop(&hs);
	free(sregion);
	harness_assert_fabric_idle();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_windows_every_chunk),
		cmocka_unit_test(t_bounce_every_chunk),
		cmocka_unit_test(t_remote_invalidation),
		cmocka_unit_test(t_key_byte_changes),
		cmocka_unit_test(t_no_private_data),
		cmocka_unit_test(t_persistent_stays_exposed),
		cmocka_unit_test(t_server_exposes_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

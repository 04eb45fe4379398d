/* SPDX-License-Identifier: MIT */
/*
 * Bad DDP peers, on both sides.
 *
 * A raw client (rawpeer.h) sends the library server calls whose chunks are
 * wrong: Read and Write lists beyond the caps (and exactly at them, served),
 * zero-length segments (legal: served, touching no rkey), segments whose
 * offset + length wraps, Read chunks beyond the server's read limit or the
 * XDR stream, rkeys the client never registered or registered without the
 * right, a Reply chunk or Write chunk too small, RDMA_NOMSG without a
 * position-zero chunk, RDMA_MSG with one, overlapping or misplaced data
 * chunks, a long call whose pulled message is shorter than an XID or carries
 * another one. Each gets its exact answer: served, RDMA_ERROR / ERR_CHUNK (the
 * connection stays up: the next call is served), or, when an RDMA Read or
 * Write of the server fails, silence and a closed connection, the call
 * never handed up and every payload released once. The server serves
 * another client throughout, and nothing is left behind.
 *
 * A raw server sends the library client replies that do not fit the call:
 * Write-list echoes longer than offered, with foreign handles or offsets,
 * or more chunks than offered; Reply chunks not offered or echoed longer;
 * RDMA_NOMSG without a Reply chunk; a Read list; a malformed header; an RPC
 * XID that differs; a reply too long; RDMA_ERROR; Send With Invalidate of
 * rkeys the call never offered; replies for unknown XIDs. A reply the client
 * cannot accept is dropped and the call waits for the valid one that
 * follows (RFC 8166 4.5); the others end the call with its documented
 * status; every window it opened is dead after done().
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
#include "rawclnt.h"
#include "rawpeer.h"
#include "xprt_rdma.h"

#define MEM (256u * 1024)
#define GRANT 8
#define SEG 4096u
#define MiB (1024u * 1024)

static const struct rpcrdma_cm_private peer_pd = { 4096, 4096, 0 };

/* ---- A raw client against the library server ------------------------------------------- */

struct rig {
	struct harness_server hs;
	struct rawpeer rp;
	unsigned char *mem;	/* remote read and write */
	unsigned char *wo;	/* remote write, no remote read */
	unsigned char *lo;	/* local access only */
	struct ibv_mr *mr, *wo_mr, *lo_mr;
	struct rpcrdma_clnt *other;	/* another client of the server, served throughout */
	uint32_t xid;
	unsigned int err_chunks;	/* RDMA_ERRORs the server must have sent */
	unsigned int reply_errors;	/* replies ddp_serve_call() must have seen fail */
	unsigned int calls_before;	/* the server's counts when the last call was sent */
	unsigned int closed_before;
};

static void rig_connect(struct rig *r)
{
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN];
	struct rawpeer_opts opts = {
		.pdata = pdata,
		.pdata_len = sizeof(pdata),
		.responder_resources = 16,	/* the server may RDMA Read our memory */
	};
	unsigned int want = atomic_load(&r->hs.sh->conns_established) + 1;

	assert_int_equal(rpcrdma_cm_private_encode(pdata, sizeof(pdata), &peer_pd),
			 RPCRDMA_CM_PRIVATE_LEN);
	assert_int_equal(rawpeer_connect_opts(&r->rp, (struct sockaddr *)&r->hs.addr, &opts), 0);
	r->mr = rawpeer_reg(&r->rp, r->mem, MEM, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	r->wo_mr = rawpeer_reg(&r->rp, r->wo, MEM, IBV_ACCESS_LOCAL_WRITE |
			       IBV_ACCESS_REMOTE_WRITE);
	r->lo_mr = rawpeer_reg(&r->rp, r->lo, MEM, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(r->mr);
	assert_non_null(r->wo_mr);
	assert_non_null(r->lo_mr);
	/* The server has seen it: a close is then reported (on_conn) too. */
	assert_true(harness_wait_established(&r->hs, want, 3000));
}

/* The other client is served, whatever the raw one did. */
static void other_call(struct rig *r)
{
	unsigned char msg[64], reply[64];
	size_t rlen = sizeof(reply);

	r->xid++;
	harness_fill_msg(msg, sizeof(msg), r->xid, r->xid);
	put32(msg, DDP_W_OP, DDP_OP_ECHO);
	assert_int_equal(rpcrdma_clnt_call(r->other, msg, sizeof(msg), reply, &rlen, 5000), 0);
	assert_int_equal(rlen, sizeof(msg));
	harness_assert_echo(reply, msg, sizeof(msg));
}

static void rig_up(struct rig *r)
{
	harness_require_inproc("counts the server's RDMA Reads and Writes in this process's fabric");
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };

	memset(r, 0, sizeof(*r));
	memset(&ddp_counters, 0, sizeof(ddp_counters));
	r->xid = 0x4000;
	assert_int_equal(harness_server_start(&r->hs, GRANT, 0, HARNESS_DDP), 0);
	r->mem = aligned_alloc(4096, MEM);
	r->wo = aligned_alloc(4096, MEM);
	r->lo = aligned_alloc(4096, MEM);
	assert_non_null(r->mem);
	assert_non_null(r->wo);
	assert_non_null(r->lo);
	ddp_fill(r->mem, MEM, 7);
	ddp_fill(r->wo, MEM, 8);
	ddp_fill(r->lo, MEM, 9);
	harness_clnt_attr(&r->hs, &attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &r->other), 0);
	/* Seen by the server before the raw client comes: each counts its own. */
	other_call(r);
	assert_int_equal(atomic_load(&r->hs.sh->conns_established), 1);
	rig_connect(r);
}

static void rig_down(struct rig *r)
{
	struct rpcrdma_stats st;

	other_call(r);
	st = harness_server_stats(&r->hs);
	assert_int_equal(st.rdma_errors, r->err_chunks);
	rawpeer_close(&r->rp);
	rpcrdma_clnt_destroy(r->other);
	harness_server_stop(&r->hs);
	assert_int_equal(atomic_load(&ddp_counters.released), atomic_load(&ddp_counters.named));
	assert_int_equal(atomic_load(&ddp_counters.reply_errors), r->reply_errors);
	free(r->mem);
	free(r->wo);
	free(r->lo);
	harness_assert_fabric_idle();
}

/* A call's transport header and RPC message, as the raw client sends them. */
struct vcall {
	const char *name;
	uint32_t xid;
	uint32_t proc;
	uint32_t nread;
	struct rpcrdma_read_segment read[80];
	uint32_t nwrite;
	struct rpcrdma_chunk_desc write[10];
	struct rpcrdma_segment wsegs[10][20];
	bool has_reply;
	struct rpcrdma_chunk_desc reply;
	struct rpcrdma_segment rsegs[20];
	unsigned char body[2048];
	size_t body_len;
};

/* A call @name with an RPC message of @len bytes: a call's head, @op, @arg0, @arg1, a pattern. */
static void vcall_init(struct rig *r, struct vcall *v, const char *name, size_t len, uint32_t op,
		       uint32_t arg0, uint32_t arg1)
{
	memset(v, 0, sizeof(*v));
	v->name = name;
	v->xid = ++r->xid;
	v->proc = RPCRDMA_MSG;
	assert_true(len >= DDP_CALL_LEN && len <= sizeof(v->body));
	ddp_fill(v->body, len, v->xid);
	ddp_call_msg(v->body, v->xid, op, arg0, arg1);
	v->body_len = len;
}

static void vcall_read(struct vcall *v, uint32_t pos, uint32_t handle, uint32_t len, uint64_t off)
{
	struct rpcrdma_read_segment *rs = &v->read[v->nread++];

	rs->position = pos;
	rs->seg.handle = handle;
	rs->seg.length = len;
	rs->seg.offset = off;
}

/* Add a segment to Write chunk @c (chunks are added in order). */
static void vcall_write(struct vcall *v, uint32_t c, uint32_t handle, uint32_t len, uint64_t off)
{
	struct rpcrdma_segment *s;

	if (c == v->nwrite) {
		v->write[c].segs = v->wsegs[c];
		v->nwrite++;
	}
	s = &v->wsegs[c][v->write[c].nsegs++];
	s->handle = handle;
	s->length = len;
	s->offset = off;
}

static void vcall_reply(struct vcall *v, uint32_t handle, uint32_t len, uint64_t off)
{
	struct rpcrdma_segment *s = &v->rsegs[v->reply.nsegs++];

	v->has_reply = true;
	v->reply.segs = v->rsegs;
	s->handle = handle;
	s->length = len;
	s->offset = off;
}

static void vcall_send(struct rig *r, const struct vcall *v)
{
	struct rpcrdma_hdr_enc enc = {
		.xid = v->xid,
		.credit = GRANT,
		.proc = v->proc,
		.read_segs = v->nread,
		.read = v->read,
		.write_chunks = v->nwrite,
		.write = v->write,
		.reply = v->has_reply ? &v->reply : NULL,
	};
	unsigned char buf[RAWPEER_BUF];
	long n = rpcrdma_hdr_encode(buf, sizeof(buf), &enc);

	assert_true(n > 0);
	r->calls_before = atomic_load(&r->hs.sh->calls);
	r->closed_before = atomic_load(&r->hs.sh->conns_closed);
	if (v->proc == RPCRDMA_MSG) {
		assert_true((size_t)n + v->body_len <= sizeof(buf));
		memcpy(buf + n, v->body, v->body_len);
		n += (long)v->body_len;
	}
	if (rawpeer_send(&r->rp, buf, (size_t)n))
		fail_msg("%s: the raw client's Send failed", v->name);
}

/* Answered RDMA_ERROR / ERR_CHUNK (20 bytes), and the connection still serves a call. */
static void expect_err_chunk(struct rig *r, const struct vcall *v)
{
	unsigned char reply[RAWPEER_BUF];
	int n = rawpeer_recv(&r->rp, reply, sizeof(reply), 3000);

	if (n != 20 || get32(reply, 0) != v->xid || get32(reply, 1) != RPCRDMA_VERSION ||
	    get32(reply, 2) < 1 || get32(reply, 3) != RPCRDMA_ERROR ||
	    get32(reply, 4) != RPCRDMA_ERR_CHUNK)
		fail_msg("%s: expected ERR_CHUNK for 0x%x, got %d bytes (proc %u)", v->name, v->xid,
			 n, n >= 16 ? get32(reply, 3) : 0);
	r->err_chunks++;
}

/*
 * Answered RDMA_MSG with the RPC message @body (@len bytes) inline and no
 * Reply chunk; @rc keeps the reply for the caller to inspect its Write list.
 */
static void expect_msg(struct rig *r, const struct vcall *v, struct rawpeer_call *rc,
		       const void *body, size_t len)
{
	int rc_recv = rawpeer_recv_call(&r->rp, rc, 3000);

	if (rc_recv)
		fail_msg("%s: expected a reply, got %d", v->name, rc_recv);
	if (rc->hdr.xid != v->xid || rc->hdr.proc != RPCRDMA_MSG || rc->hdr.credit < 1 ||
	    rc->hdr.read_segs || rc->hdr.has_reply)
		fail_msg("%s: reply 0x%x proc %u, %u Read segments, Reply chunk %u", v->name,
			 rc->hdr.xid, rc->hdr.proc, rc->hdr.read_segs, rc->hdr.has_reply);
	if ((size_t)rc->len - rc->hdr.hdr_len != len ||
	    memcmp(rc->buf + rc->hdr.hdr_len, body, len) != 0)
		fail_msg("%s: reply of %d bytes after a %u-byte header, expected %zu", v->name,
			 rc->len, rc->hdr.hdr_len, len);
}

/*
 * The XDR stream of an echo: the message with the payloads spliced in,
 * padded to 4, under the reply head (rpcmsg_echo()).
 */
static size_t echo_stream(const struct vcall *v, unsigned char *out, size_t max,
			  const unsigned char *const *payloads, const size_t *lens,
			  const uint32_t *msg_pos, unsigned int n)
{
	size_t off = 0, from = 0, pad;
	unsigned int i;

	for (i = 0; i < n; i++) {
		pad = (lens[i] + 3) & ~(size_t)3;
		assert_true(off + (msg_pos[i] - from) + pad <= max);
		memcpy(out + off, v->body + from, msg_pos[i] - from);
		off += msg_pos[i] - from;
		from = msg_pos[i];
		memcpy(out + off, payloads[i], lens[i]);
		memset(out + off + lens[i], 0, pad - lens[i]);
		off += pad;
	}
	assert_true(off + v->body_len - from <= max);
	memcpy(out + off, v->body + from, v->body_len - from);
	off += v->body_len - from;
	rpcmsg_echo(out, off);
	return off;
}

/*
 * An echo call carrying @nchunks payloads of @segs segments each (1 to 5
 * bytes a segment, from the raw client's memory), the payload of chunk c
 * belonging at message offset DDP_ARG_POS + 4c. Served: the reply is the echo
 * of the message with the payloads spliced in. Else: ERR_CHUNK, without a single RDMA Read.
 */
static void payload_case(struct rig *r, const char *name, unsigned int nchunks,
			 unsigned int segs, bool served)
{
	static struct vcall v;
	static unsigned char pay[16][128], stream[4096];
	static struct rawpeer_call rc;
	const unsigned char *payloads[16];
	size_t lens[16], mem_off = 0, stream_len, consumed = 0;
	uint32_t msg_pos[16];
	unsigned long reads = softrdma_executed(IBV_WR_RDMA_READ);
	unsigned int c, k;

	assert_true(nchunks <= 16 && DDP_ARG_POS + 4 * (nchunks - 1) <= 64);
	vcall_init(r, &v, name, 64, DDP_OP_ECHO, 0, 0);
	for (c = 0; c < nchunks; c++) {
		lens[c] = 0;
		msg_pos[c] = DDP_ARG_POS + 4 * c;
		for (k = 0; k < segs; k++) {
			uint32_t len = 1 + (c * 7 + k) % 5;

			memcpy(pay[c] + lens[c], r->mem + mem_off, len);
			vcall_read(&v, msg_pos[c] + (uint32_t)consumed, r->mr->rkey, len,
				   (uintptr_t)(r->mem + mem_off));
			lens[c] += len;
			mem_off += len + 3;
		}
		payloads[c] = pay[c];
		consumed += (lens[c] + 3) & ~(size_t)3;
	}
	vcall_send(r, &v);
	if (!served) {
		expect_err_chunk(r, &v);
		assert_int_equal(softrdma_executed(IBV_WR_RDMA_READ), reads);
		return;
	}
	stream_len = echo_stream(&v, stream, sizeof(stream), payloads, lens, msg_pos, nchunks);
	expect_msg(r, &v, &rc, stream, stream_len);
	assert_int_equal(rc.hdr.write_chunks, 0);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_READ) - reads, nchunks * segs);
}

/* An echo call of 64 bytes, served inline: the connection is up. */
static void good_call(struct rig *r)
{
	static struct vcall v;
	static struct rawpeer_call rc;

	static unsigned char want[64];

	vcall_init(r, &v, "a good call", 64, DDP_OP_ECHO, 0, 0);
	vcall_send(r, &v);
	expect_msg(r, &v, &rc, want, echo_stream(&v, want, sizeof(want), NULL, NULL, NULL, 0));
}

/*
 * Silence, then the connection is gone; the server handed the call up only
 * if @handed_up (it failed at the reply).
 */
static void expect_closed(struct rig *r, const struct vcall *v, bool handed_up)
{
	unsigned char reply[RAWPEER_BUF];
	int n;

	n = rawpeer_recv(&r->rp, reply, sizeof(reply), 3000);
	if (n != -EIO)
		fail_msg("%s: expected the connection to close, got %d", v->name, n);
	if (!harness_wait_closed(&r->hs, r->closed_before + 1, 3000))
		fail_msg("%s: the server did not close the connection", v->name);
	assert_int_equal(atomic_load(&r->hs.sh->conns_closed), r->closed_before + 1);
	assert_int_equal(atomic_load(&r->hs.sh->calls), r->calls_before + handed_up);
	/* A new connection for what comes next; the other client is served meanwhile. */
	rawpeer_close(&r->rp);
	other_call(r);
	rig_connect(r);
}

/*
 * Read-list caps (RFC 8166 leaves them to the implementation; ours are 16
 * segments a chunk, 8 chunks, 64 segments): at the caps the call is served,
 * one beyond them it is answered ERR_CHUNK; so is a Read list larger than
 * the server pulls (max_read) or ending beyond 2^32 - 1 bytes of XDR stream,
 * before any RDMA Read. The connection serves on.
 */
static void t_read_list_caps(void **state)
{
	static struct vcall v;
	struct rig r;
	unsigned long reads;

	rig_up(&r);
	payload_case(&r, "16 segments in one Read chunk", 1, 16, true);
	payload_case(&r, "8 Read chunks", 8, 1, true);
	payload_case(&r, "64 Read segments (8 chunks of 8)", 8, 8, true);
	payload_case(&r, "17 segments in one Read chunk", 1, 17, false);
	good_call(&r);
	payload_case(&r, "9 Read chunks", 9, 1, false);
	good_call(&r);
	payload_case(&r, "65 Read segments (5 chunks of 13)", 5, 13, false);
	good_call(&r);
	other_call(&r);

	reads = softrdma_executed(IBV_WR_RDMA_READ);
	vcall_init(&r, &v, "a Read chunk beyond max_read", 64, DDP_OP_ECHO, 0, 0);
	vcall_read(&v, DDP_ARG_POS, r.mr->rkey, 64 * MiB + 4, (uintptr_t)r.mem);
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);

	vcall_init(&r, &v, "a Read chunk ending beyond 2^32 - 1", 64, DDP_OP_ECHO, 0, 0);
	vcall_read(&v, DDP_ARG_POS, r.mr->rkey, 0xfffffffcu, (uintptr_t)r.mem);
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_READ), reads);
	assert_int_equal(atomic_load(&ddp_counters.calls), 1 + 3 + 5 + 1);
	rig_down(&r);
}

static bool payloads_released(void *arg)
{
	return atomic_load(&ddp_counters.released) == atomic_load(&ddp_counters.named);
}

/* A DDP_OP_READ of @bytes with the pattern @seed. */
static void read_call(struct rig *r, struct vcall *v, const char *name, uint32_t bytes,
		      uint32_t seed)
{
	vcall_init(r, v, name, DDP_CALL_LEN, DDP_OP_READ, bytes, seed);
}

/*
 * Write-list caps: 8 Write chunks are served (the result fills the first,
 * the others come back with zero lengths), 9 are ERR_CHUNK; 16 segments in
 * a Write chunk are filled in order, 17 are ERR_CHUNK, and so is a Reply
 * chunk of 17. A result larger than its Write chunk is ERR_CHUNK too, the
 * chunk untouched, the payload released.
 */
static void t_write_list_caps(void **state)
{
	static struct vcall v;
	static struct rawpeer_call rc;
	struct rpcrdma_segment seg;
	unsigned char rhead[RPCMSG_HEAD];
	uint32_t c, k;
	unsigned long writes;
	struct rig r;

	rig_up(&r);
	memset(r.mem, 0xaa, 64 * 1024);

	read_call(&r, &v, "8 Write chunks", 10, 21);
	for (c = 0; c < 8; c++)
		vcall_write(&v, c, r.mr->rkey, 64, (uintptr_t)(r.mem + 128 * c));
	vcall_send(&r, &v);
	rpcmsg_reply_head(rhead, v.xid);
	expect_msg(&r, &v, &rc, rhead, sizeof(rhead));
	assert_int_equal(rc.hdr.write_chunks, 8);
	for (c = 0; c < 8; c++) {
		assert_int_equal(rc.hdr.write[c].nsegs, 1);
		rpcrdma_chunk_segment(&rc.hdr.write[c], 0, &seg);
		assert_int_equal(seg.handle, r.mr->rkey);
		assert_int_equal(seg.offset, (uintptr_t)(r.mem + 128 * c));
		assert_int_equal(seg.length, c ? 0 : 10);
	}
	assert_int_equal(ddp_check(r.mem, 10, 21), 10);
	for (k = 10; k < 8 * 128; k++)
		assert_int_equal(r.mem[k], 0xaa);

	read_call(&r, &v, "9 Write chunks", 10, 22);
	for (c = 0; c < 9; c++)
		vcall_write(&v, c, r.mr->rkey, 64, (uintptr_t)(r.mem + 4096 + 128 * c));
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);

	writes = softrdma_executed(IBV_WR_RDMA_WRITE);
	read_call(&r, &v, "16 segments in a Write chunk", 16 * 8, 23);
	for (k = 0; k < 16; k++)
		vcall_write(&v, 0, r.mr->rkey, 8, (uintptr_t)(r.mem + 8192 + 8 * k));
	vcall_send(&r, &v);
	rpcmsg_reply_head(rhead, v.xid);
	expect_msg(&r, &v, &rc, rhead, sizeof(rhead));
	assert_int_equal(rc.hdr.write_chunks, 1);
	assert_int_equal(rc.hdr.write[0].nsegs, 16);
	assert_int_equal(rc.hdr.write[0].total, 16 * 8);
	assert_int_equal(ddp_check(r.mem + 8192, 16 * 8, 23), 16 * 8);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_WRITE) - writes, 16);

	read_call(&r, &v, "17 segments in a Write chunk", 17 * 8, 24);
	for (k = 0; k < 17; k++)
		vcall_write(&v, 0, r.mr->rkey, 8, (uintptr_t)(r.mem + 12288 + 8 * k));
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);

	vcall_init(&r, &v, "17 segments in a Reply chunk", 64, DDP_OP_ECHO, 0, 0);
	for (k = 0; k < 17; k++)
		vcall_reply(&v, r.mr->rkey, 256, (uintptr_t)(r.mem + 16384 + 256 * k));
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);

	/* A result of 100 bytes for a Write chunk of 64: never a truncated result. */
	writes = softrdma_executed(IBV_WR_RDMA_WRITE);
	read_call(&r, &v, "a Write chunk too small", 100, 25);
	vcall_write(&v, 0, r.mr->rkey, 64, (uintptr_t)(r.mem + 32768));
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	r.reply_errors++;
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_WRITE), writes);
	for (k = 0; k < 64; k++)
		assert_int_equal(r.mem[32768 + k], 0xaa);
	good_call(&r);
	/* Payloads go back at the server's Send completions, maybe after our receives. */
	assert_true(harness_wait_for(payloads_released, NULL, 3000));
	rig_down(&r);
}

/*
 * Zero-length segments are legal (RFC 8166 4.4.x): they are served, and
 * their rkeys, here never registered, are never used.
 */
static void t_zero_length_segments(void **state)
{
	static struct vcall v;
	static struct rawpeer_call rc;
	static unsigned char stream[4096];
	const uint32_t bogus = 0xdead0000u | 0x42;
	unsigned long reads, writes;
	unsigned char rhead[RPCMSG_HEAD];
	uint32_t pos = DDP_ARG_POS;
	const unsigned char *payloads[1];
	struct rpcrdma_segment seg;
	unsigned char pay[16];
	size_t len;
	struct rig r;

	rig_up(&r);

	reads = softrdma_executed(IBV_WR_RDMA_READ);
	vcall_init(&r, &v, "a zero-length Read chunk", 64, DDP_OP_ECHO, 0, 0);
	vcall_read(&v, DDP_ARG_POS, bogus, 0, 0x1000);
	vcall_send(&r, &v);
	len = echo_stream(&v, stream, sizeof(stream), NULL, NULL, NULL, 0);
	expect_msg(&r, &v, &rc, stream, len);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_READ), reads);

	vcall_init(&r, &v, "a zero-length Read segment between two", 64, DDP_OP_ECHO, 0, 0);
	vcall_read(&v, DDP_ARG_POS, r.mr->rkey, 4, (uintptr_t)r.mem);
	vcall_read(&v, DDP_ARG_POS, bogus, 0, 0x1000);
	vcall_read(&v, DDP_ARG_POS, r.mr->rkey, 5, (uintptr_t)(r.mem + 100));
	vcall_send(&r, &v);
	memcpy(pay, r.mem, 4);
	memcpy(pay + 4, r.mem + 100, 5);
	payloads[0] = pay;
	len = 9;
	len = echo_stream(&v, stream, sizeof(stream), payloads, &len, &pos, 1);
	expect_msg(&r, &v, &rc, stream, len);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_READ) - reads, 2);

	writes = softrdma_executed(IBV_WR_RDMA_WRITE);
	read_call(&r, &v, "an empty result into a zero-length Write chunk", 0, 31);
	vcall_write(&v, 0, bogus, 0, 0x1000);
	vcall_send(&r, &v);
	rpcmsg_reply_head(rhead, v.xid);
	expect_msg(&r, &v, &rc, rhead, sizeof(rhead));
	assert_int_equal(rc.hdr.write_chunks, 1);
	rpcrdma_chunk_segment(&rc.hdr.write[0], 0, &seg);
	assert_int_equal(seg.handle, bogus);
	assert_int_equal(seg.length, 0);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_WRITE), writes);

	read_call(&r, &v, "a zero-length Write segment, then a real one", 10, 32);
	vcall_write(&v, 0, bogus, 0, 0x1000);
	vcall_write(&v, 0, r.mr->rkey, 64, (uintptr_t)(r.mem + 4096));
	vcall_send(&r, &v);
	rpcmsg_reply_head(rhead, v.xid);
	expect_msg(&r, &v, &rc, rhead, sizeof(rhead));
	assert_int_equal(rc.hdr.write[0].nsegs, 2);
	rpcrdma_chunk_segment(&rc.hdr.write[0], 0, &seg);
	assert_int_equal(seg.length, 0);
	rpcrdma_chunk_segment(&rc.hdr.write[0], 1, &seg);
	assert_int_equal(seg.length, 10);
	assert_int_equal(ddp_check(r.mem + 4096, 10, 32), 10);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_WRITE) - writes, 1);

	/* A long reply skips a zero-length Reply segment too. */
	vcall_init(&r, &v, "a zero-length Reply segment, then a real one", 200, DDP_OP_ECHO, 0, 0);
	vcall_reply(&v, bogus, 0, 0x1000);
	vcall_reply(&v, r.mr->rkey, 4096, (uintptr_t)(r.mem + 8192));
	vcall_send(&r, &v);
	assert_int_equal(rawpeer_recv_call(&r.rp, &rc, 3000), 0);
	assert_int_equal(rc.hdr.xid, v.xid);
	assert_int_equal(rc.hdr.proc, RPCRDMA_NOMSG);
	assert_int_equal(rc.len, rc.hdr.hdr_len);
	assert_true(rc.hdr.has_reply);
	assert_int_equal(rc.hdr.reply.nsegs, 2);
	assert_int_equal(rc.hdr.reply.total, 200);
	rpcrdma_chunk_segment(&rc.hdr.reply, 0, &seg);
	assert_int_equal(seg.length, 0);
	harness_assert_echo(r.mem + 8192, v.body, 200);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_WRITE) - writes, 2);
	rig_down(&r);
}

/* Segments whose offset + length wraps are ERR_CHUNK, in each list. */
static void t_wrapping_segments(void **state)
{
	static struct vcall v;
	const uint64_t top = 0xfffffffffffffff0ull;
	struct rig r;

	rig_up(&r);
	vcall_init(&r, &v, "a wrapping Read segment", 64, DDP_OP_ECHO, 0, 0);
	vcall_read(&v, DDP_ARG_POS, r.mr->rkey, 64, top);
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);

	read_call(&r, &v, "a wrapping Write segment", 10, 1);
	vcall_write(&v, 0, r.mr->rkey, 64, top);
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);

	vcall_init(&r, &v, "a wrapping Reply segment", 64, DDP_OP_ECHO, 0, 0);
	vcall_reply(&v, r.mr->rkey, 64, top);
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);

	rig_down(&r);
}

/*
 * RDMA Reads and Writes the server cannot do: the rkey was never registered
 * (a stale key byte), or registered without the right. The connection
 * closes without an answer, the call is never handed up, and a named
 * payload is released exactly once.
 */
static void t_bad_rkeys(void **state)
{
	static struct vcall v;
	unsigned int named;
	struct rig r;

	rig_up(&r);
	vcall_init(&r, &v, "a Read chunk with an rkey never registered", 64, DDP_OP_ECHO, 0, 0);
	vcall_read(&v, DDP_ARG_POS, r.mr->rkey ^ 0x80, 64, (uintptr_t)r.mem);
	vcall_send(&r, &v);
	expect_closed(&r, &v, false);

	vcall_init(&r, &v, "a Read chunk registered without remote read", 64, DDP_OP_ECHO, 0, 0);
	vcall_read(&v, DDP_ARG_POS, r.wo_mr->rkey, 64, (uintptr_t)r.wo);
	vcall_send(&r, &v);
	expect_closed(&r, &v, false);

	vcall_init(&r, &v, "a long call whose message is unreachable", 64, DDP_OP_ECHO, 0, 0);
	v.proc = RPCRDMA_NOMSG;
	vcall_read(&v, 0, r.lo_mr->lkey, 64, (uintptr_t)r.lo);
	vcall_send(&r, &v);
	expect_closed(&r, &v, false);
	/* Only the other client's calls reached the application. */
	assert_int_equal(atomic_load(&ddp_counters.calls), 1 + 3);
	assert_int_equal(atomic_load(&ddp_counters.named), 0);

	/* The result's Write fails: the call was handed up, its payload is released once. */
	named = atomic_load(&ddp_counters.named);
	read_call(&r, &v, "a Write chunk with an rkey never registered", 100, 41);
	vcall_write(&v, 0, r.mr->rkey ^ 0x80, 128, (uintptr_t)r.mem);
	vcall_send(&r, &v);
	expect_closed(&r, &v, true);
	assert_int_equal(atomic_load(&ddp_counters.named), named + 1);
	assert_int_equal(atomic_load(&ddp_counters.released), named + 1);

	read_call(&r, &v, "a Write chunk registered without remote write", 100, 42);
	vcall_write(&v, 0, r.lo_mr->lkey, 128, (uintptr_t)r.lo);
	vcall_send(&r, &v);
	expect_closed(&r, &v, true);
	assert_int_equal(atomic_load(&ddp_counters.named), named + 2);
	assert_int_equal(atomic_load(&ddp_counters.released), named + 2);
	assert_int_equal(ddp_check(r.lo, MEM, 9), MEM);

	vcall_init(&r, &v, "a Reply chunk with an rkey never registered", 200, DDP_OP_ECHO, 0, 0);
	vcall_reply(&v, r.mr->rkey ^ 0x80, 4096, (uintptr_t)r.mem);
	vcall_send(&r, &v);
	expect_closed(&r, &v, true);
	good_call(&r);
	assert_int_equal(ddp_check(r.mem, MEM, 7), MEM);
	rig_down(&r);
}

/*
 * Chunks in roles RFC 8166 does not allow: RDMA_NOMSG without a
 * position-zero Read chunk, RDMA_MSG with one, data chunks that overlap or
 * lie beyond the message, a Reply chunk too small for the reply (never a
 * truncated reply). Each is ERR_CHUNK without touching the client's memory.
 * A well-formed long call with a long reply is served.
 */
static void t_chunk_roles(void **state)
{
	static struct vcall v;
	static struct rawpeer_call rc;
	unsigned long reads, writes;
	unsigned char *msg;
	struct rig r;
	uint32_t k;

	rig_up(&r);
	reads = softrdma_executed(IBV_WR_RDMA_READ);
	writes = softrdma_executed(IBV_WR_RDMA_WRITE);

	vcall_init(&r, &v, "RDMA_NOMSG without chunks", 64, DDP_OP_ECHO, 0, 0);
	v.proc = RPCRDMA_NOMSG;
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);

	vcall_init(&r, &v, "RDMA_NOMSG with only a data chunk", 64, DDP_OP_ECHO, 0, 0);
	v.proc = RPCRDMA_NOMSG;
	vcall_read(&v, DDP_ARG_POS, r.mr->rkey, 64, (uintptr_t)r.mem);
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);

	vcall_init(&r, &v, "RDMA_MSG with a position-zero chunk", 64, DDP_OP_ECHO, 0, 0);
	vcall_read(&v, 0, r.mr->rkey, 64, (uintptr_t)r.mem);
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);

	vcall_init(&r, &v, "overlapping data chunks", 64, DDP_OP_ECHO, 0, 0);
	vcall_read(&v, DDP_ARG_POS, r.mr->rkey, 100, (uintptr_t)r.mem);
	vcall_read(&v, DDP_ARG_POS + 4, r.mr->rkey, 100, (uintptr_t)(r.mem + 128));
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);

	vcall_init(&r, &v, "a data chunk beyond the message", 64, DDP_OP_ECHO, 0, 0);
	vcall_read(&v, 1000, r.mr->rkey, 100, (uintptr_t)r.mem);
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	good_call(&r);

	memset(r.mem + 65536, 0xaa, 4096);
	vcall_init(&r, &v, "a Reply chunk too small", 200, DDP_OP_ECHO, 0, 0);
	vcall_reply(&v, r.mr->rkey, 100, (uintptr_t)(r.mem + 65536));
	vcall_send(&r, &v);
	expect_err_chunk(&r, &v);
	r.reply_errors++;
	for (k = 0; k < 4096; k++)
		assert_int_equal(r.mem[65536 + k], 0xaa);
	good_call(&r);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_READ), reads);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_WRITE), writes);

	/* The same machinery, used well: a 5000-byte long call, echoed through a Reply chunk. */
	msg = r.mem + 131072;
	vcall_init(&r, &v, "a long call with a long reply", 64, DDP_OP_ECHO, 0, 0);
	ddp_fill(msg, 5000, v.xid);
	rpcmsg_call_head(msg, v.xid);
	put32(msg, DDP_W_OP, DDP_OP_ECHO);
	v.proc = RPCRDMA_NOMSG;
	vcall_read(&v, 0, r.mr->rkey, 4096, (uintptr_t)msg);
	vcall_read(&v, 0, r.mr->rkey, 904, (uintptr_t)(msg + 4096));
	vcall_reply(&v, r.mr->rkey, 8192, (uintptr_t)(r.mem + 196608));
	vcall_send(&r, &v);
	assert_int_equal(rawpeer_recv_call(&r.rp, &rc, 3000), 0);
	assert_int_equal(rc.hdr.xid, v.xid);
	assert_int_equal(rc.hdr.proc, RPCRDMA_NOMSG);
	assert_int_equal(rc.hdr.reply.total, 5000);
	harness_assert_echo(r.mem + 196608, msg, 5000);
	rig_down(&r);
}

/* ---- A raw server against the library client ------------------------------------------- */

/* cfix_call_start(), and every rkey the call named is reachable while it is in flight. */
static void ccall_start(struct cfix *f, struct ccall *c, unsigned int slot, size_t result_max,
			size_t reply_max)
{
	uint32_t i;

	cfix_call_start(f, c, slot, result_max, reply_max, 0);
	assert_int_equal(c->rc.hdr.write_chunks, result_max ? 1 : 0);
	for (i = 0; i < c->nkeys; i++)
		assert_int_equal(softrdma_rkey_reach(c->rkeys[i], NULL, NULL, NULL), 0);
}

/* After done(): the call's windows are dead and the client exposes nothing. */
static void ccall_check_dead(struct cfix *f, const struct ccall *c, const char *name)
{
	uint32_t i;

	for (i = 0; i < c->nkeys; i++)
		if (softrdma_rkey_reach(c->rkeys[i], NULL, NULL, NULL) != -ENOENT)
			fail_msg("%s: rkey 0x%x still reachable after done()", name, c->rkeys[i]);
	assert_int_equal(softrdma_pd_exposed_bytes(rpcrdma_clnt_xprt(f->clnt)->rx_pd), 0);
}

enum bad_reply {
	BAD_WRITE_LONGER,	/* Write-list echo longer than the offered segment */
	BAD_WRITE_HANDLE,	/* ... with a foreign handle */
	BAD_WRITE_OFFSET,	/* ... with a foreign offset */
	BAD_WRITE_EXTRA,	/* two Write chunks for the one offered */
	BAD_WRITE_UNOFFERED,	/* a Write chunk for a call that offered none */
	BAD_REPLY_UNOFFERED,	/* a Reply chunk for a call that offered none */
	BAD_REPLY_LONGER,	/* a Reply-chunk echo longer than offered */
	BAD_NOMSG_NO_REPLY,	/* RDMA_NOMSG without a Reply chunk */
	BAD_READ_LIST,		/* a Read list in a reply */
	BAD_HEADER,		/* an undecodable header with the call's XID */
	BAD_RPC_XID,		/* an RPC message whose XID is not the call's */
	BAD_TOO_LONG,		/* an inline reply longer than reply_max */
	BAD_RDMA_ERROR,		/* RDMA_ERROR / ERR_CHUNK */
	BAD_INV_STALE,		/* Send With Invalidate of an rkey no window has */
	BAD_UNKNOWN_XID,	/* a reply for no call, then the right one */
};

struct bad_case {
	const char *name;
	enum bad_reply kind;
	size_t result_max;
	size_t reply_max;
	int status;		/* the call's documented status */
	unsigned int dropped;	/* replies the client counts as dropped */
	bool probe;		/* the connection survives: probe a dead rkey for real */
	bool retry;		/* dropped: the call waits, and the valid reply follows */
};

static const struct bad_case bad_cases[] = {
	{ "Write echo longer than offered", BAD_WRITE_LONGER, 3000, 64, 0, 1, true, true },
	{ "Write echo with a foreign handle", BAD_WRITE_HANDLE, 3000, 64, 0, 1, true, true },
	{ "Write echo with a foreign offset", BAD_WRITE_OFFSET, 3000, 64, 0, 1, true, true },
	{ "more Write chunks than offered", BAD_WRITE_EXTRA, 3000, 64, 0, 1, true, true },
	{ "a Write chunk never offered", BAD_WRITE_UNOFFERED, 0, 20000, 0, 1, true, true },
	{ "a Reply chunk never offered", BAD_REPLY_UNOFFERED, 3000, 64, 0, 1, true, true },
	{ "Reply echo longer than offered", BAD_REPLY_LONGER, 0, 20000, 0, 1, true, true },
	{ "RDMA_NOMSG without a Reply chunk", BAD_NOMSG_NO_REPLY, 3000, 20000, 0, 1, true, true },
	{ "a Read list in a reply", BAD_READ_LIST, 3000, 64, 0, 1, true, true },
	{ "an undecodable reply header", BAD_HEADER, 3000, 20000, 0, 1, true, true },
	{ "an RPC XID not the call's", BAD_RPC_XID, 3000, 64, 0, 1, true, true },
	{ "a reply longer than reply_max", BAD_TOO_LONG, 3000, 64, -EMSGSIZE, 0, true, false },
	{ "RDMA_ERROR", BAD_RDMA_ERROR, 3000, 20000, -EREMOTEIO, 0, true, false },
	{ "Send With Invalidate of a stale rkey", BAD_INV_STALE, 3000, 64, -ECONNRESET, 0, false,
	  false },
	{ "a reply for an unknown XID", BAD_UNKNOWN_XID, 3000, 20000, 0, 1, true, false },
};

/* Encode @enc, append @body, send (with invalidation of @inv if not 0); returns the status. */
static int srv_reply(struct cfix *f, const struct rpcrdma_hdr_enc *enc, const void *body,
		     size_t len, uint32_t inv)
{
	unsigned char out[RAWPEER_BUF];
	long n = rpcrdma_hdr_encode(out, sizeof(out), enc);

	assert_true(n > 0 && (size_t)n + len <= sizeof(out));
	memcpy(out + n, body, len);
	if (inv)
		return rawpeer_send_inv(&f->srv, out, (size_t)n + len, inv);
	return rawpeer_send(&f->srv, out, (size_t)n + len) ? -EIO : IBV_WC_SUCCESS;
}

static void bad_reply_case(const struct bad_case *bc, bool bounce)
{
	struct rpcrdma_hdr_enc enc = { .credit = GRANT, .proc = RPCRDMA_MSG };
	struct rpcrdma_segment wecho[2][RPCRDMA_CLNT_MAX_SEGS], recho[RPCRDMA_CLNT_MAX_SEGS];
	struct rpcrdma_segment good_wecho[2][RPCRDMA_CLNT_MAX_SEGS], good_recho[RPCRDMA_CLNT_MAX_SEGS];
	struct rpcrdma_chunk_desc wdesc[2] = { { 0, NULL } }, rdesc = { 0, NULL };
	struct rpcrdma_chunk_desc good_wdesc[2], good_rdesc;
	struct rpcrdma_hdr_enc good_enc;
	struct rpcrdma_read_segment rs = { 8, { 0x1234, 16, 0x10000 } };
	struct rpcrdma_stats before = { RPCRDMA_SIZED(before) }, after = { RPCRDMA_SIZED(after) };
	unsigned char body[256], hdr_bad[64];
	static struct ccall c;
	struct cfix f;
	uint32_t i, nsegs;
	int st;

	cfix_up(&f, bounce);
	assert_int_equal(rpcrdma_clnt_stats(f.clnt, &before), 0);
	ccall_start(&f, &c, 0, bc->result_max, bc->reply_max);
	enc.xid = c.rc.hdr.xid;
	memset(body, 0, sizeof(body));
	rpcmsg_reply_head(body, enc.xid);

	/* By default, answer well: the result placed, every chunk echoed as used. */
	if (c.rc.hdr.write_chunks) {
		ddp_fill(f.local, 3000, 5);
		assert_int_equal(rawpeer_push(&f.srv, &c.rc.hdr.write[0], f.local, 3000, wecho[0]),
				 0);
		wdesc[0].nsegs = c.rc.hdr.write[0].nsegs;
		wdesc[0].segs = wecho[0];
		enc.write_chunks = 1;
		enc.write = wdesc;
	}
	if (c.rc.hdr.has_reply) {
		memcpy(f.local + 4096, body, RPCMSG_HEAD);
		assert_int_equal(rawpeer_push(&f.srv, &c.rc.hdr.reply, f.local + 4096, RPCMSG_HEAD,
					      recho), 0);
		rdesc.nsegs = c.rc.hdr.reply.nsegs;
		rdesc.segs = recho;
		enc.reply = &rdesc;
		enc.proc = RPCRDMA_NOMSG;
	}
	nsegs = c.rc.hdr.write_chunks ? c.rc.hdr.write[0].nsegs : 0;
	/* The good answer, sent after a bad one that the client must drop. */
	good_enc = enc;
	memcpy(good_wecho, wecho, sizeof(wecho));
	memcpy(good_recho, recho, sizeof(recho));
	memcpy(good_wdesc, wdesc, sizeof(wdesc));
	good_rdesc = rdesc;

	switch (bc->kind) {
	case BAD_WRITE_LONGER:
		wecho[0][nsegs - 1].length++;
		break;
	case BAD_WRITE_HANDLE:
		wecho[0][0].handle += 0x100;
		break;
	case BAD_WRITE_OFFSET:
		wecho[0][0].offset += 8;
		break;
	case BAD_WRITE_EXTRA:
		memcpy(wecho[1], wecho[0], sizeof(wecho[0]));
		wdesc[1] = wdesc[0];
		wdesc[1].segs = wecho[1];
		enc.write_chunks = 2;
		break;
	case BAD_WRITE_UNOFFERED:
		wecho[0][0] = rs.seg;
		wdesc[0].nsegs = 1;
		wdesc[0].segs = wecho[0];
		enc.write_chunks = 1;
		enc.write = wdesc;
		break;
	case BAD_REPLY_UNOFFERED:
		recho[0] = rs.seg;
		rdesc.nsegs = 1;
		rdesc.segs = recho;
		enc.reply = &rdesc;
		enc.proc = RPCRDMA_NOMSG;
		break;
	case BAD_REPLY_LONGER:
		recho[0].length = recho[0].length + SEG + 1;
		break;
	case BAD_NOMSG_NO_REPLY:
		enc.reply = NULL;
		break;
	case BAD_READ_LIST:
		enc.read_segs = 1;
		enc.read = &rs;
		break;
	default:
		break;
	}

	switch (bc->kind) {
	case BAD_HEADER:
		/* The call's XID, version 1, RDMA_MSG, then a Read-list discriminator of 7. */
		put32(hdr_bad, 0, enc.xid);
		put32(hdr_bad, 1, RPCRDMA_VERSION);
		put32(hdr_bad, 2, GRANT);
		put32(hdr_bad, 3, RPCRDMA_MSG);
		put32(hdr_bad, 4, 7);
		assert_int_equal(rawpeer_send(&f.srv, hdr_bad, 20), 0);
		break;
	case BAD_RPC_XID:
		put32(body, 0, enc.xid + 1);
		assert_int_equal(srv_reply(&f, &enc, body, RPCMSG_HEAD, 0), IBV_WC_SUCCESS);
		put32(body, 0, enc.xid);
		break;
	case BAD_TOO_LONG:
		assert_int_equal(srv_reply(&f, &enc, body, 65, 0), IBV_WC_SUCCESS);
		break;
	case BAD_RDMA_ERROR:
		enc.proc = RPCRDMA_ERROR;
		enc.err = RPCRDMA_ERR_CHUNK;
		assert_int_equal(srv_reply(&f, &enc, body, 0, 0), IBV_WC_SUCCESS);
		break;
	case BAD_INV_STALE:
		/*
		 * The call's window under a key byte it does not have: nothing to
		 * invalidate. As on rxe, the Send succeeds and the client's
		 * receive fails, taking its connection down.
		 */
		st = srv_reply(&f, &enc, body, RPCMSG_HEAD, c.rkeys[0] ^ 0x80);
		assert_int_equal(st, IBV_WC_SUCCESS);
		break;
	case BAD_UNKNOWN_XID:
		enc.xid += 1000;
		put32(body, 0, enc.xid);
		assert_int_equal(srv_reply(&f, &enc, body, RPCMSG_HEAD, 0), IBV_WC_SUCCESS);
		cfix_run(&f, &c.finished, 100);
		assert_int_equal(c.finished, 0);
		assert_int_equal(rpcrdma_clnt_stats(f.clnt, &after), 0);
		assert_int_equal(after.dropped - before.dropped, 1);
		for (i = 0; i < c.nkeys; i++)
			assert_int_equal(softrdma_rkey_reach(c.rkeys[i], NULL, NULL, NULL), 0);
		enc.xid -= 1000;
		put32(body, 0, enc.xid);
		assert_int_equal(srv_reply(&f, &enc, body, RPCMSG_HEAD, 0), IBV_WC_SUCCESS);
		break;
	default:
		assert_int_equal(srv_reply(&f, &enc, body,
					   enc.proc == RPCRDMA_MSG ? RPCMSG_HEAD : 0, 0),
				 IBV_WC_SUCCESS);
		break;
	}

	if (bc->retry) {
		cfix_run(&f, &c.finished, 100);
		if (c.finished)
			fail_msg("%s (%s): the call ended (%d) on a reply it must drop", bc->name,
				 bounce ? "bounce" : "windows", c.call.status);
		memcpy(wecho, good_wecho, sizeof(wecho));
		memcpy(recho, good_recho, sizeof(recho));
		memcpy(wdesc, good_wdesc, sizeof(wdesc));
		rdesc = good_rdesc;
		assert_int_equal(srv_reply(&f, &good_enc, body,
					   good_enc.proc == RPCRDMA_MSG ? RPCMSG_HEAD : 0, 0),
				 IBV_WC_SUCCESS);
	}
	cfix_run(&f, &c.finished, 5000);
	if (c.finished != 1)
		fail_msg("%s (%s): the call did not complete", bc->name,
			 bounce ? "bounce" : "windows");
	if (c.call.status != bc->status)
		fail_msg("%s (%s): status %d, expected %d", bc->name, bounce ? "bounce" : "windows",
			 c.call.status, bc->status);
	if (bc->status) {
		assert_int_equal(c.call.reply_len, 0);
		assert_int_equal(c.call.result_len, 0);
	} else {
		assert_int_equal(c.call.reply_len, RPCMSG_HEAD);
		assert_memory_equal(c.reply, body, RPCMSG_HEAD);
		assert_int_equal(c.call.result_len, bc->result_max ? 3000 : 0);
		if (bc->result_max)
			assert_int_equal(ddp_check(c.result, 3000, 5), 3000);
	}
	assert_int_equal(rpcrdma_clnt_stats(f.clnt, &after), 0);
	assert_int_equal(after.dropped - before.dropped, bc->dropped);
	assert_int_equal(after.rdma_errors - before.rdma_errors, bc->kind == BAD_RDMA_ERROR);
	/* The bounce buffers are gone with the call. */
	assert_int_equal(after.registered_bytes, before.registered_bytes);
	ccall_check_dead(&f, &c, bc->name);
	if (bc->probe) {
		/* For real: a Write with the first rkey fails, and changes nothing. */
		unsigned char *target = c.result ? c.result : c.reply, saved[64];

		memcpy(saved, target, sizeof(saved));
		memset(f.local + 8192, 0x77, 64);
		st = rawpeer_rdma(&f.srv, IBV_WR_RDMA_WRITE, f.local + 8192, 64, c.offs[0],
				  c.rkeys[0]);
		assert_int_equal(st, IBV_WC_REM_ACCESS_ERR);
		if (!bounce)
			assert_memory_equal(target, saved, sizeof(saved));
	}
	cfix_call_free(&f, &c);
	cfix_down(&f);
}

static void t_bad_replies_windows(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++)
		bad_reply_case(&bad_cases[i], false);
}

static void t_bad_replies_bounce(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++)
		bad_reply_case(&bad_cases[i], true);
}

/*
 * Send With Invalidate of an rkey the reply's call never offered, but a
 * valid one: another call's window, which the fabric duly invalidates. The
 * client treats it as the protocol violation it is: the call replied to ends
 * with -EPROTO, whatever the timing of its own LOCAL_INV against the close
 * of the connection; the other call fails with -ECONNRESET; every window of
 * both is dead, nothing leaks.
 */
static void inv_other_call(void)
{
	struct rpcrdma_hdr_enc enc = { .credit = GRANT, .proc = RPCRDMA_MSG };
	struct rpcrdma_segment wecho[RPCRDMA_CLNT_MAX_SEGS];
	struct rpcrdma_chunk_desc wdesc;
	static struct ccall w, a, b;
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	unsigned char body[RPCMSG_HEAD];
	struct cfix f;

	cfix_up(&f, false);
	/* A first call, answered with a grant of GRANT credits: two calls may then be in flight. */
	ccall_start(&f, &w, 0, 0, 64);
	enc.xid = w.rc.hdr.xid;
	rpcmsg_reply_head(body, enc.xid);
	assert_int_equal(srv_reply(&f, &enc, body, sizeof(body), 0), IBV_WC_SUCCESS);
	cfix_run(&f, &w.finished, 5000);
	assert_int_equal(w.finished, 1);
	assert_int_equal(w.call.status, 0);

	ccall_start(&f, &a, 1, 3000, 64);
	ccall_start(&f, &b, 2, 3000, 64);
	assert_int_equal(a.nkeys, 1);
	assert_int_equal(b.nkeys, 1);
	ddp_fill(f.local, 3000, 5);
	assert_int_equal(rawpeer_push(&f.srv, &a.rc.hdr.write[0], f.local, 3000, wecho), 0);
	wdesc.nsegs = 1;
	wdesc.segs = wecho;
	enc.write_chunks = 1;
	enc.write = &wdesc;
	enc.xid = a.rc.hdr.xid;
	rpcmsg_reply_head(body, enc.xid);
	assert_int_equal(srv_reply(&f, &enc, body, sizeof(body), b.rkeys[0]), IBV_WC_SUCCESS);
	/* The fabric did invalidate B's window. */
	assert_int_equal(softrdma_rkey_reach(b.rkeys[0], NULL, NULL, NULL), -ENOENT);
	cfix_run(&f, &a.finished, 5000);
	cfix_run(&f, &b.finished, 5000);
	assert_int_equal(a.finished, 1);
	assert_int_equal(a.call.status, -EPROTO);
	assert_int_equal(a.call.result_len, 0);
	assert_int_equal(b.finished, 1);
	assert_int_equal(b.call.status, -ECONNRESET);
	assert_int_equal(rpcrdma_clnt_stats(f.clnt, &st), 0);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.disconnects, 1);
	ccall_check_dead(&f, &a, "the call replied to");
	ccall_check_dead(&f, &b, "the call whose window was invalidated");
	cfix_down(&f);
}

/* The status once depended on timing: run it often enough to see a race. */
static void t_inv_other_call(void **state)
{
	int i;

	harness_require_windows("the server invalidates another call's window");
	for (i = 0; i < 20; i++)
		inv_other_call();
}

/*
 * A long call whose RPC message, pulled from its position-zero Read chunk,
 * is shorter than an XID or carries an XID other than rdma_xid is answered
 * ERR_CHUNK and never handed up (RFC 8166 4.1: they are equal), as the same
 * message sent inline is.
 */
static void t_long_call_rpc_xid(void **state)
{
	static const struct {
		const char *name;
		uint32_t len;
		uint32_t xid_delta;
	} cases[] = {
		{ "a long call whose RPC XID is not rdma_xid", 100, 77 },
		{ "a long call of 2 bytes", 2, 0 },
		{ "a long call of 0 bytes", 0, 0 },
	};
	static struct vcall v;
	unsigned char *msg;
	unsigned long reads;
	struct rig r;
	size_t i;

	rig_up(&r);
	msg = r.mem + 131072;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		reads = softrdma_executed(IBV_WR_RDMA_READ);
		vcall_init(&r, &v, cases[i].name, 64, DDP_OP_ECHO, 0, 0);
		ddp_fill(msg, 100, v.xid);
		rpcmsg_call_head(msg, v.xid + cases[i].xid_delta);
		put32(msg, DDP_W_OP, DDP_OP_ECHO);
		v.proc = RPCRDMA_NOMSG;
		vcall_read(&v, 0, r.mr->rkey, cases[i].len, (uintptr_t)msg);
		vcall_send(&r, &v);
		expect_err_chunk(&r, &v);
		/* Pulled (when there was anything to pull), then refused. */
		assert_int_equal(softrdma_executed(IBV_WR_RDMA_READ) - reads, cases[i].len ? 1 : 0);
		assert_int_equal(atomic_load(&r.hs.sh->calls), r.calls_before);
		good_call(&r);
	}
	rig_down(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_read_list_caps),
		cmocka_unit_test(t_write_list_caps),
		cmocka_unit_test(t_zero_length_segments),
		cmocka_unit_test(t_wrapping_segments),
		cmocka_unit_test(t_bad_rkeys),
		cmocka_unit_test(t_chunk_roles),
		cmocka_unit_test(t_long_call_rpc_xid),
		cmocka_unit_test(t_bad_replies_windows),
		cmocka_unit_test(t_bad_replies_bounce),
		cmocka_unit_test(t_inv_other_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

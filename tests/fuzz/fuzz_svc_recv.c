/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the server's receive path, through softrdma: each
 * input is one whole message a raw peer (tests/e2e/rawpeer.h) sends a
 * library server running in this process (svc_peer.h), and everything the
 * server does about it: decode, checks, RDMA Reads of Read chunks from the
 * peer's memory, the program's reply, RDMA Writes into Write and Reply
 * chunks, RDMA_ERROR, closing.
 *
 * Input: byte 0 chooses, bits 0-1, how the chunk segments are treated
 * (0 as they are; 1 and 3 pointed into the peer's regions, valid rkeys and
 * in-range offsets; 2 a mix of valid and bogus rkeys, offsets and lengths,
 * from bits of each segment's own bytes) and, bits 2-3, the server's program
 * (echo, echo in place, DDP echo: svc_peer.h), and, bits 4-5, how many
 * copies of it go out back to back (1 to 4: calls in flight together, Read
 * waves side by side). The rest is the message.
 *
 * Oracle (abort() on failure):
 * - at most one message comes back per copy sent; each carries the call's XID and a credit
 *   in [1, SVC_PEER_CREDITS], and decodes with rpcrdma_hdr_decode() as
 *   RDMA_MSG, RDMA_NOMSG, or RDMA_ERROR with ERR_CHUNK; or it is an
 *   ERR_VERS (which carries the refused version) for a call of another
 *   version; nothing comes back for what RFC 8166 says to drop;
 * - what the decoder's verdict on the call says to answer with an error is
 *   answered with that error, and a header it refuses never gets a reply;
 * - a reply names no Read chunk, and only segments the call offered, with
 *   their rkey and offset and no more bytes; echoes carry the call's bytes
 *   under a reply head (rpcmsg_echo()), inline or through the Reply chunk;
 * - no byte of the peer's regions changes outside the Write and Reply
 *   chunk segments the call named;
 * - every 64 inputs, and after every lost connection, a known-good call
 *   is answered correctly (the server keeps serving);
 * - ASan/UBSan, and the server never crashes or hangs the exchange.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rpcrdma/proto.h>

#include "fuzz.h"
#include "rpcmsg.h"
#include "svc_peer.h"

/*
 * One exchange may take this long before it counts as hung (never
 * expected): FUZZ_SVC_TIMEOUT_MS, else 300 ms. The suite's replays, under
 * valgrind or sanitizers beside other tests, set 10 s.
 */
static int exchange_timeout_ms(void)
{
	static int ms;

	if (!ms) {
		const char *v = getenv("FUZZ_SVC_TIMEOUT_MS");

		ms = v && atoi(v) > 0 ? atoi(v) : 300;
	}
	return ms;
}
#define PROBE_EVERY 64
/* More segments than any cap the server enforces: the rest cannot be used. */
#define MAX_NAMED 256

enum patch_mode { PATCH_NONE, PATCH_VALID, PATCH_MIXED };
enum seg_kind { SEG_READ, SEG_WRITE, SEG_REPLY };

/* The Write and Reply chunk segments a message named: where the server may write. */
struct named {
	unsigned int n;
	struct rpcrdma_segment segs[MAX_NAMED];
};

struct walker {
	unsigned char *p;
	size_t len;
	size_t off;
	enum patch_mode mode;
	struct svc_peer *sp;
	struct named *named;
};

static struct svc_peer sp;
/* Named segments overlap: a later Write may overwrite an earlier one's bytes. */
static bool overlapping;
static bool started;
static bool verbose;
static unsigned long inputs;

static uint32_t be32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static void put_be32(unsigned char *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint64_t be64(const unsigned char *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static void put_be64(unsigned char *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

/* The next XDR word, or false at the end of the message. */
static bool walk_word(struct walker *w, uint32_t *v)
{
	if (w->off > w->len || w->len - w->off < 4)
		return false;
	*v = be32(w->p + w->off);
	w->off += 4;
	return true;
}

/* Point @seg (handle, length, offset) into one of the peer's regions, or near one. */
static void patch_segment(struct walker *w, unsigned char *seg)
{
	uint32_t sel = be32(seg), len = be32(seg + 4);
	uint64_t off = be64(seg + 8);
	struct ibv_mr *mr = w->sp->mrs[sel % SVC_PEER_MRS].mr;
	uint32_t in = (uint32_t)(off % SVC_PEER_MEM);
	unsigned int how = w->mode == PATCH_MIXED ? (sel >> 8) & 7 : 0;

	if (!mr || how == 7)	/* 7: the raw bytes */
		return;
	len %= SVC_PEER_MEM - in + 1;
	switch (how) {
	case 4:		/* an rkey nobody registered */
		put_be32(seg, mr->rkey ^ 0x00800000u);
		break;
	case 5:		/* starts before the region */
		put_be32(seg, mr->rkey);
		put_be64(seg + 8, (uintptr_t)mr->addr - 1 - (sel >> 16));
		break;
	case 6:		/* runs past its end */
		put_be32(seg, mr->rkey);
		put_be32(seg + 4, len + SVC_PEER_MEM - in + 1 + (sel >> 16));
		put_be64(seg + 8, (uintptr_t)mr->addr + in);
		break;
	default:	/* within it */
		put_be32(seg, mr->rkey);
		put_be32(seg + 4, len);
		put_be64(seg + 8, (uintptr_t)mr->addr + in);
		break;
	}
}

/* One segment at the walker: patch it, and note it if the server may write there. */
static bool walk_segment(struct walker *w, enum seg_kind kind)
{
	unsigned char *seg = w->p + w->off;
	struct named *nm = w->named;

	if (w->off > w->len || w->len - w->off < 16)
		return false;
	if (w->mode != PATCH_NONE)
		patch_segment(w, seg);
	if (kind != SEG_READ && nm->n < MAX_NAMED) {
		nm->segs[nm->n].handle = be32(seg);
		nm->segs[nm->n].length = be32(seg + 4);
		nm->segs[nm->n].offset = be64(seg + 8);
		nm->n++;
	}
	w->off += 16;
	return true;
}

static bool walk_chunk(struct walker *w, enum seg_kind kind)
{
	uint32_t nsegs, i;

	if (!walk_word(w, &nsegs))
		return false;
	for (i = 0; i < nsegs && i < MAX_NAMED; i++)
		if (!walk_segment(w, kind))
			return false;
	return true;
}

/*
 * Walk the chunk lists as RFC 8166 lays them out, as far as the message
 * goes, whatever the decoder will say about them.
 */
static void walk_message(struct walker *w)
{
	uint32_t proc, disc = 1, pos;	/* a list that is not there ends the walk */
	unsigned int i;

	w->off = 12;
	if (!walk_word(w, &proc) || (proc != RPCRDMA_MSG && proc != RPCRDMA_NOMSG))
		return;
	for (i = 0; i < MAX_NAMED && walk_word(w, &disc) && disc == 1; i++)
		if (!walk_word(w, &pos) || !walk_segment(w, SEG_READ))
			return;
	if (disc != 0)
		return;
	for (i = 0; i < MAX_NAMED && walk_word(w, &disc) && disc == 1; i++)
		if (!walk_chunk(w, SEG_WRITE))
			return;
	if (disc != 0)
		return;
	if (walk_word(w, &disc) && disc == 1)
		walk_chunk(w, SEG_REPLY);
}

/* Does a segment the call named for writing hold @addr under @mr's rkey? */
static bool named_covers(const struct named *nm, const struct ibv_mr *mr, uint64_t addr)
{
	unsigned int i;

	for (i = 0; i < nm->n; i++) {
		const struct rpcrdma_segment *s = &nm->segs[i];

		if (s->handle == mr->rkey && addr >= s->offset && addr - s->offset < s->length)
			return true;
	}
	return false;
}

static bool named_overlap(const struct named *nm)
{
	unsigned int i, j;

	for (i = 0; i < nm->n; i++) {
		const struct rpcrdma_segment *a = &nm->segs[i];

		for (j = i + 1; j < nm->n; j++) {
			const struct rpcrdma_segment *b = &nm->segs[j];

			/* Unsigned: one of the differences is the distance forward, the other wraps. */
			if (a->handle == b->handle && a->length && b->length &&
			    (a->offset - b->offset < b->length || b->offset - a->offset < a->length))
				return true;
		}
	}
	return false;
}

/* No byte outside the named segments changed; then the pattern goes back. */
static void check_regions(const struct named *nm)
{
	unsigned int i;
	size_t b;

	for (i = 0; i < SVC_PEER_MRS; i++) {
		const unsigned char *want = sp.pattern + (size_t)i * SVC_PEER_MEM;
		struct svc_peer_mr *m = &sp.mrs[i];

		if (!m->mr || memcmp(m->mem, want, SVC_PEER_MEM) == 0)
			continue;
		for (b = 0; b < SVC_PEER_MEM; b++) {
			if (m->mem[b] == want[b])
				continue;
			if (!named_covers(nm, m->mr, (uintptr_t)m->mr->addr + b)) {
				fprintf(stderr, "region %u byte %zu changed, not in a named chunk\n",
					i, b);
				abort();
			}
		}
		svc_peer_mr_reset(&sp, i);
	}
}

/* Reply segment @got must be call segment @want, with no more bytes. */
static void check_echoed(const struct rpcrdma_chunk *want, const struct rpcrdma_chunk *got)
{
	struct rpcrdma_segment w, g;
	uint32_t i;

	CHECK(got->nsegs <= want->nsegs);
	for (i = 0; i < got->nsegs; i++) {
		rpcrdma_chunk_segment(want, i, &w);
		rpcrdma_chunk_segment(got, i, &g);
		CHECK(g.handle == w.handle && g.offset == w.offset && g.length <= w.length);
	}
}

/*
 * The bytes the Reply chunk's echoed segments carry must be @body, unless
 * the call's segments overlap (the peer's own doing).
 */
static void check_reply_chunk(const struct rpcrdma_chunk *got, const unsigned char *body,
			      size_t len)
{
	struct rpcrdma_segment g;
	size_t at = 0;
	uint32_t i;

	for (i = 0; i < got->nsegs; i++) {
		struct svc_peer_mr *m;

		rpcrdma_chunk_segment(got, i, &g);
		if (!g.length)
			continue;
		/* A Write that failed would have flushed the Send behind it. */
		m = svc_peer_mr_by_rkey(&sp, g.handle);
		CHECK(m && g.offset >= (uintptr_t)m->mr->addr);
		CHECK(g.offset - (uintptr_t)m->mr->addr <= SVC_PEER_MEM - g.length);
		CHECK(at + g.length <= len);
		CHECK(overlapping || memcmp(m->mem + (g.offset - (uintptr_t)m->mr->addr), body + at,
			     g.length) == 0);
		at += g.length;
	}
	CHECK(at == len);
}

/*
 * The message of an RDMA_NOMSG call is its position-zero Read chunk, as the
 * regions held it (the pattern) when the server pulled it: into @out (room
 * for @max bytes). Returns its length, or -1 if it is not such a call or a
 * segment lies outside the regions the server could read (no echo then).
 */
static long pulled_message(const struct rpcrdma_hdr *call, unsigned char *out, size_t max)
{
	struct rpcrdma_read_segment rs;
	size_t at = 0;
	uint32_t i;

	if (call->proc != RPCRDMA_NOMSG || call->read_chunks != 1)
		return -1;
	for (i = 0; i < call->read_segs; i++) {
		struct svc_peer_mr *m;
		uint64_t off;

		rpcrdma_hdr_read_segment(call, i, &rs);
		m = svc_peer_mr_by_rkey(&sp, rs.seg.handle);
		if (rs.position != 0 || !m || rs.seg.offset < (uintptr_t)m->mr->addr)
			return -1;
		off = rs.seg.offset - (uintptr_t)m->mr->addr;
		if (off > SVC_PEER_MEM || rs.seg.length > SVC_PEER_MEM - off ||
		    rs.seg.length > max - at)
			return -1;
		memcpy(out + at, sp.pattern + (size_t)(m - sp.mrs) * SVC_PEER_MEM + off,
		       rs.seg.length);
		at += rs.seg.length;
	}
	return (long)at;
}

/*
 * An echo carries the echo of @body (@len bytes, rpcmsg_echo()): inline
 * after the header, or in the Reply chunk.
 */
static void check_echo(const struct rpcrdma_hdr *r, const unsigned char *reply, size_t rlen,
		       const unsigned char *call_body, size_t len)
{
	static unsigned char body[SVC_PEER_MRS * SVC_PEER_MEM];

	CHECK(len <= sizeof(body));
	memcpy(body, call_body, len);
	rpcmsg_echo(body, len);
	if (r->proc == RPCRDMA_MSG) {
		CHECK(rlen - r->hdr_len == len);
		CHECK(memcmp(reply + r->hdr_len, body, len) == 0);
	} else {
		check_reply_chunk(&r->reply, body, len);
	}
}

/* A reply to a call that decoded: what it names, and for echoes, what it carries. */
static void check_reply_to(const struct rpcrdma_hdr *call, const unsigned char *msg, size_t len,
			   const struct rpcrdma_hdr *r, const unsigned char *reply, size_t rlen)
{
	static unsigned char pulled[SVC_PEER_MRS * SVC_PEER_MEM];
	bool echo = sp.program != SVC_PEER_DDP;
	long n;
	uint32_t i;

	CHECK(r->read_segs == 0);
	CHECK(r->write_chunks <= call->write_chunks);
	for (i = 0; i < r->write_chunks; i++)
		check_echoed(&call->write[i], &r->write[i]);
	CHECK(!r->has_reply || call->has_reply);
	if (r->has_reply)
		check_echoed(&call->reply, &r->reply);
	if (r->proc == RPCRDMA_NOMSG)
		CHECK(r->has_reply && rlen == r->hdr_len);
	if (!echo)
		return;
	if (call->proc == RPCRDMA_MSG && !call->read_segs) {
		check_echo(r, reply, rlen, msg + call->hdr_len, len - call->hdr_len);
		return;
	}
	n = pulled_message(call, pulled, sizeof(pulled));
	if (n >= 0)
		check_echo(r, reply, rlen, pulled, (size_t)n);
}

/* ERR_VERS carries the refused message's rdma_vers, so our decoder refuses it too. */
static void check_err_vers(const unsigned char *msg, const unsigned char *reply, size_t rlen)
{
	CHECK(rlen == 28);
	CHECK(be32(reply + 4) == be32(msg + 4) && be32(msg + 4) != RPCRDMA_VERSION);
	CHECK(be32(reply + 12) == RPCRDMA_ERROR && be32(reply + 16) == RPCRDMA_ERR_VERS);
	CHECK(be32(reply + 20) <= RPCRDMA_VERSION && be32(reply + 24) >= RPCRDMA_VERSION);
}

/* Reply @i to @msg, a call the decoder's verdict on which is @verdict. */
static void check_reply(unsigned int i, const unsigned char *msg, size_t len,
			const struct rpcrdma_hdr *call, enum rpcrdma_verdict verdict)
{
	const unsigned char *reply = sp.replies[i];
	size_t rlen = (size_t)sp.reply_len[i];
	struct rpcrdma_hdr r;

	CHECK(rlen >= RPCRDMA_HDR_FIXED_LEN && rlen <= RAWPEER_BUF);
	CHECK(be32(reply) == be32(msg));
	CHECK(be32(reply + 8) >= 1 && be32(reply + 8) <= SVC_PEER_CREDITS);
	if (verdict == RPCRDMA_REPLY_ERR_VERS) {
		check_err_vers(msg, reply, rlen);
		return;
	}
	CHECK(rpcrdma_hdr_decode(reply, rlen, NULL, &r) == 0);
	if (r.proc == RPCRDMA_ERROR) {
		CHECK(r.err == RPCRDMA_ERR_CHUNK && rlen == r.hdr_len);
		return;
	}
	CHECK(verdict == RPCRDMA_ACCEPT);
	CHECK(r.proc == RPCRDMA_MSG || r.proc == RPCRDMA_NOMSG);
	check_reply_to(call, msg, len, &r, reply, rlen);
}

/* What came back for @copies of @msg, given the decoder's own verdict on it. */
static void check_answer(const unsigned char *msg, size_t len, unsigned int copies, bool sent)
{
	enum rpcrdma_verdict verdict;
	struct rpcrdma_hdr call;
	unsigned int i;
	int rc;

	CHECK(sp.nreplies <= copies);
	rc = rpcrdma_hdr_decode(msg, len, NULL, &call);
	verdict = rpcrdma_hdr_verdict(rc, &call);
	/* Too short for a version 1 call, or a message no one answers (RFC 8166 4.5). */
	if ((rc != -EPROTONOSUPPORT && len < RPCRDMA_HDR_MIN_LEN) || verdict == RPCRDMA_DROP) {
		CHECK(sp.nreplies == 0);
		return;
	}
	/* Refusals are answered, unless the connection went down under them. */
	if (verdict != RPCRDMA_ACCEPT && sent && !svc_peer_lost(&sp))
		CHECK(sp.nreplies == copies);
	for (i = 0; i < sp.nreplies && i < SVC_PEER_MAX_REPLIES; i++)
		check_reply(i, msg, len, &call, verdict);
}

static void reconnect(void)
{
	int rc = svc_peer_connect(&sp);

	if (rc) {
		fprintf(stderr, "fuzz-svc-recv: cannot connect to the server: %s\n",
			strerror(-rc));
		abort();
	}
}

/* A plain inline call; the echo must come back whole. Returns false if the connection dropped. */
static bool probe_once(uint32_t xid)
{
	unsigned char msg[RPCRDMA_HDR_MIN_LEN + 64];
	struct named nm = { 0 };
	size_t i;

	put_be32(msg, xid);
	put_be32(msg + 4, RPCRDMA_VERSION);
	put_be32(msg + 8, SVC_PEER_CREDITS);
	put_be32(msg + 12, RPCRDMA_MSG);
	memset(msg + 16, 0, 12);
	rpcmsg_call_head(msg + RPCRDMA_HDR_MIN_LEN, xid);
	for (i = RPCRDMA_HDR_MIN_LEN + RPCMSG_HEAD; i < sizeof(msg); i++)
		msg[i] = (unsigned char)(i * 7 + xid);
	sp.program = SVC_PEER_ECHO;
	if (svc_peer_exchange(&sp, msg, sizeof(msg), 1, 2000) != 0 || sp.peer_lost)
		return false;
	CHECK(sp.nreplies == 1 && sp.reply_len[0] == (int)sizeof(msg));
	check_answer(msg, sizeof(msg), 1, true);
	check_regions(&nm);
	return true;
}

/* The server keeps serving: a good call is answered, on a fresh connection if need be. */
static void probe(void)
{
	static uint32_t xid = 0xfeed0000u;

	if (probe_once(++xid))
		return;
	reconnect();
	if (!probe_once(++xid)) {
		fprintf(stderr, "fuzz-svc-recv: the server stopped serving\n");
		abort();
	}
}

static void stop(void)
{
	fprintf(stderr, "fuzz-svc-recv: %lu inputs, %lu server calls, %u connections, "
		"%lu exchanges timed out\n", inputs, sp.calls, sp.established, sp.timeouts);
	svc_peer_stop(&sp);
}

static void start(void)
{
	int rc = svc_peer_start(&sp);

	if (rc) {
		fprintf(stderr, "fuzz-svc-recv: cannot start the server: %s\n", strerror(-rc));
		abort();
	}
	verbose = getenv("FUZZ_SVC_TRACE") != NULL;
	reconnect();
	atexit(stop);
	started = true;
}

/* FUZZ_SVC_TRACE=1: a line per input, to see what the seeds make the server do. */
static long long us_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static void trace(int rc, long long t0)
{
	const unsigned char *r = sp.replies[0];
	int n = sp.reply_len[0];

	fprintf(stderr, "input %lu: exchange %d in %lld us, %u replies", inputs, rc,
		us_now() - t0, sp.nreplies);
	if (sp.nreplies && n >= 20)
		fprintf(stderr, " (%d bytes, proc %u, word 4 %u)", n, be32(r + 12), be32(r + 16));
	fprintf(stderr, "%s%s\n", sp.peer_lost ? ", peer lost" : "",
		sp.conn_closed ? ", server closed" : "");
}

/*
 * An exchange that does not go quiet: a loaded machine may stall one, a
 * server that never finishes stalls it again. Say what was still busy,
 * retry once on a fresh connection, and abort if it stalls again.
 */
static void timed_out(const uint8_t *data, size_t size)
{
	static bool retrying;
	size_t i;

	fprintf(stderr, "fuzz-svc-recv: input %lu not quiet after %d ms (busy 0x%x):", inputs,
		exchange_timeout_ms(), sp.busy);
	for (i = 0; i < size && i < 64; i++)
		fprintf(stderr, " %02x", data[i]);
	fprintf(stderr, "%s\n", size > 64 ? " ..." : "");
	if (retrying) {
		fprintf(stderr, "fuzz-svc-recv: it stalls again: the server hangs\n");
		abort();
	}
	reconnect();
	retrying = true;
	LLVMFuzzerTestOneInput(data, size);
	retrying = false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char msg[RAWPEER_BUF];
	static struct named nm;
	unsigned int copies;
	struct walker w;
	long long t0;
	size_t len;
	int rc;

	if (size < 1 || size - 1 > sizeof(msg))
		return 0;
	if (!started)
		start();
	inputs++;
	len = size - 1;
	memcpy(msg, data + 1, len);
	nm.n = 0;
	w = (struct walker){ .p = msg, .len = len, .sp = &sp, .named = &nm };
	w.mode = (data[0] & 3) == 3 ? PATCH_VALID : (enum patch_mode)(data[0] & 3);
	walk_message(&w);
	overlapping = named_overlap(&nm);
	sp.program = ((data[0] >> 2) & 3) % 3;
	copies = 1 + ((data[0] >> 4) & 3);

	t0 = us_now();
	rc = svc_peer_exchange(&sp, msg, len, copies, exchange_timeout_ms());
	if (verbose)
		trace(rc, t0);
	if (rc != -ETIMEDOUT)
		check_answer(msg, len, copies, rc != -EIO);
	check_regions(&nm);
	t0 = us_now();
	if (rc == -ETIMEDOUT)
		timed_out(data, size);
	if (rc == -ETIMEDOUT || svc_peer_lost(&sp)) {
		reconnect();
		probe();
	} else if (inputs % PROBE_EVERY == 0) {
		probe();
	}
	if (verbose)
		fprintf(stderr, "input %lu: reconnect and probe in %lld us\n", inputs, us_now() - t0);
	return 0;
}

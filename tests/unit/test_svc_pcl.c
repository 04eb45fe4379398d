/* SPDX-License-Identifier: MIT */
/*
 * Parsed chunk lists (lib/svcrdma/svc_pcl.c, svc_pcl.h), on their own: Read
 * lists as a client puts them on the wire, decoded by the codec as the
 * server decodes them, then grouped into chunks by svc_rdma_map_reads();
 * and the reply helpers that lay a message out with its inline payloads.
 *
 * The rules come from RFC 8166: a Read chunk is the run of Read segments
 * sharing one XDR position (section 3.4.5); a position counts the bytes of
 * the XDR stream, XDR padding of the data items before it included (section
 * 3.4.7); the position-zero chunk of RDMA_NOMSG is the whole message (section
 * 3.5.3); a Read list that cannot be reassembled is answered with ERR_CHUNK
 * (section 4.5). The server keeps ch_pos as the offset in the message that
 * lacks the payloads, which is what the tests check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "svc_pcl.h"
#include "svc_rdma.h"

/* What a client's Read list entry says. */
struct rd {
	uint32_t pos;
	uint32_t len;
};

/* The first segment's offset, when a test names one. */
static uint64_t first_offset;

static struct svcxprt_rdma rdma;
static struct rpcrdma_svc svc;
static struct rpcrdma_hdr hdr;
static struct rpcrdma_svc_call call;
static unsigned char wire[RPCRDMA_HDR_MIN_LEN + 5000 * RPCRDMA_READ_ENTRY_LEN];

static unsigned char *put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
	return p + 4;
}

/*
 * A call header with the Read list @rs[0..n) exactly as given (no check:
 * the tests send what a hostile client could), empty Write list, no Reply
 * chunk. Returns its length.
 */
static size_t build(uint32_t proc, const struct rd *rs, uint32_t n)
{
	unsigned char *p = wire;
	uint32_t i;

	p = put32(p, 0x1234);
	p = put32(p, RPCRDMA_VERSION);
	p = put32(p, 8);
	p = put32(p, proc);
	for (i = 0; i < n; i++) {
		uint64_t off = i == 0 && first_offset ? first_offset : 0x10000ull * (i + 1);

		p = put32(p, 1);
		p = put32(p, rs[i].pos);
		p = put32(p, 0x100 + i);
		p = put32(p, rs[i].len);
		p = put32(p, (uint32_t)(off >> 32));
		p = put32(p, (uint32_t)off);
	}
	p = put32(p, 0);	/* end of the Read list */
	p = put32(p, 0);	/* no Write list */
	p = put32(p, 0);	/* no Reply chunk */
	return (size_t)(p - wire);
}

/* Decode the header as the server does: the codec's verdict, or 0. */
static int decode(uint32_t proc, const struct rd *rs, uint32_t n, const struct rpcrdma_limits *lim)
{
	size_t len = build(proc, rs, n);

	memset(&hdr, 0, sizeof(hdr));
	return rpcrdma_hdr_decode(wire, len, lim, &hdr);
}

/* The call as svc_rdma_check_call() hands it over: stale bytes everywhere. */
static void call_reset(void)
{
	memset(&call, 0xa5, sizeof(call));
	call.rdma = &rdma;
	call.hdr = &hdr;
	call.chunks = NULL;
	call.nchunks = 0;
	call.has_pzrc = true;		/* stale: map_reads must say */
}

/* Decode (must succeed), then group: what svc_rdma_map_reads() returns. */
static int map_lim(uint32_t proc, const struct rd *rs, uint32_t n, size_t inline_len,
		   const struct rpcrdma_limits *lim)
{
	assert_int_equal(decode(proc, rs, n, lim), 0);
	call_reset();
	return svc_rdma_map_reads(&rdma, &call, inline_len);
}

static int map(uint32_t proc, const struct rd *rs, uint32_t n, size_t inline_len)
{
	return map_lim(proc, rs, n, inline_len, NULL);
}

/*
 * Release what map_reads allocated, as the server does: one entry per Read
 * chunk of the header, whatever nchunks says. The connection's heap count
 * must come back to nothing: the allocation was exactly that.
 */
static void release(void)
{
	svc_rdma_free_mem(&rdma, call.chunks, hdr.read_chunks * sizeof(*call.chunks));
	call.chunks = NULL;
	assert_int_equal(rdma.sc_heap, 0);
}

static void check_chunk(unsigned int i, uint32_t pos, uint64_t len, uint32_t first, uint32_t nsegs)
{
	const struct svc_rdma_chunk *ch = &call.chunks[i];

	assert_int_equal(ch->ch_pos, pos);
	assert_int_equal(ch->ch_len, len);
	assert_int_equal(ch->ch_first_seg, first);
	assert_int_equal(ch->ch_nsegs, nsegs);
}

static int setup(void **state)
{
	(void)state;
	memset(&rdma, 0, sizeof(rdma));
	memset(&svc, 0, sizeof(svc));
	rdma.sc_stats = &rdma.sc_own_stats;
	rdma.sc_svc = NULL;	/* the default max_read */
	return 0;
}

/* One segment after 8 bytes of message: one chunk there. */
static void test_one_chunk(void **state)
{
	const struct rd rs[] = { { 8, 100 } };

	(void)state;
	assert_int_equal(map(RPCRDMA_MSG, rs, 1, 64), 0);
	assert_false(call.has_pzrc);
	assert_int_equal(call.nchunks, 1);
	check_chunk(0, 8, 100, 0, 1);
	release();
}

/*
 * Runs of one position are one chunk (RFC 8166 3.4.5), whatever their
 * segments' lengths; a later chunk's position counts the earlier payloads
 * with their XDR padding (3.4.7), and ch_pos takes them out again.
 */
static void test_grouping(void **state)
{
	/* A: 8293 bytes at 8 (8296 padded); B: 16 bytes 12 bytes later; C right after B. */
	const struct rd rs[] = {
		{ 8, 4096 }, { 8, 4096 }, { 8, 101 },
		{ 8 + 8296 + 12, 10 }, { 8 + 8296 + 12, 6 },
		{ 8 + 8296 + 12 + 16, 3 },
	};

	(void)state;
	assert_int_equal(map(RPCRDMA_MSG, rs, 6, 40), 0);
	assert_int_equal(hdr.read_chunks, 3);
	assert_int_equal(call.nchunks, 3);
	check_chunk(0, 8, 8293, 0, 3);
	check_chunk(1, 20, 16, 3, 2);
	check_chunk(2, 20, 3, 5, 1);	/* adjacent payloads share a message offset */
	release();
}

/* XDR padding (RFC 8166 3.4.7): a 5-byte payload takes 8 bytes of the stream. */
static void test_roundup(void **state)
{
	const struct rd ok[] = { { 8, 5 }, { 16, 4 } };
	const struct rd in_pad[] = { { 8, 5 }, { 12, 4 } };

	(void)state;
	assert_int_equal(map(RPCRDMA_MSG, ok, 2, 64), 0);
	check_chunk(0, 8, 5, 0, 1);
	check_chunk(1, 8, 4, 1, 1);
	release();
	/* The second starts inside the first's padded bytes. */
	assert_int_equal(map(RPCRDMA_MSG, in_pad, 2, 64), -EINVAL);
	release();
}

/* Chunks that overlap cannot be reassembled: -EINVAL (ERR_CHUNK, RFC 8166 4.5). */
static void test_overlap(void **state)
{
	/* B starts before the bytes A alone takes up: position < payloads before it. */
	const struct rd before[] = { { 4, 100 }, { 8, 4 } };
	/* B starts inside A: its message offset would go back. */
	const struct rd inside[] = { { 100, 8 }, { 104, 4 } };
	/* B starts where A ends: fine. */
	const struct rd after[] = { { 100, 8 }, { 108, 4 } };

	(void)state;
	assert_int_equal(map(RPCRDMA_MSG, before, 2, 256), -EINVAL);
	release();
	assert_int_equal(map(RPCRDMA_MSG, inside, 2, 256), -EINVAL);
	release();
	assert_int_equal(map(RPCRDMA_MSG, after, 2, 256), 0);
	check_chunk(1, 100, 4, 1, 1);
	release();
}

/* A payload may end the message but not start past it. */
static void test_beyond_message(void **state)
{
	const struct rd at_end[] = { { 64, 4 } };
	const struct rd past[] = { { 68, 4 } };
	const struct rd second_at_end[] = { { 8, 4 }, { 68, 4 } };
	const struct rd second_past[] = { { 8, 4 }, { 72, 4 } };

	(void)state;
	assert_int_equal(map(RPCRDMA_MSG, at_end, 1, 64), 0);
	check_chunk(0, 64, 4, 0, 1);
	release();
	assert_int_equal(map(RPCRDMA_MSG, past, 1, 64), -EINVAL);
	release();
	assert_int_equal(map(RPCRDMA_MSG, second_at_end, 2, 64), 0);
	check_chunk(1, 64, 4, 1, 1);
	release();
	assert_int_equal(map(RPCRDMA_MSG, second_past, 2, 64), -EINVAL);
	release();
}

/*
 * Misordered and misaligned positions, and a position that comes back
 * after another, never reach map_reads: the codec refuses them with
 * -EILSEQ, which the server answers with ERR_CHUNK (RFC 8166 4.5).
 */
static void test_misordered(void **state)
{
	const struct rd decreasing[] = { { 16, 4 }, { 8, 4 } };
	const struct rd misaligned[] = { { 6, 4 } };
	const struct rd split_run[] = { { 8, 4 }, { 12, 4 }, { 8, 4 } };

	(void)state;
	assert_int_equal(decode(RPCRDMA_MSG, decreasing, 2, NULL), -EILSEQ);
	assert_int_equal(rpcrdma_hdr_verdict(-EILSEQ, &hdr), RPCRDMA_REPLY_ERR_CHUNK);
	assert_int_equal(decode(RPCRDMA_MSG, misaligned, 1, NULL), -EILSEQ);
	assert_int_equal(decode(RPCRDMA_MSG, split_run, 3, NULL), -EILSEQ);
}

/*
 * Zero-length chunks (RFC 8166 3.4.5 forbids none): kept, of length 0,
 * taking no room in the stream; the pull has nothing to do for them.
 */
static void test_zero_length(void **state)
{
	const struct rd alone[] = { { 8, 0 } };
	const struct rd after_data[] = { { 8, 8 }, { 16, 0 } };
	const struct rd before_data[] = { { 8, 0 }, { 12, 4 } };

	(void)state;
	assert_int_equal(map(RPCRDMA_MSG, alone, 1, 64), 0);
	assert_int_equal(call.nchunks, 1);
	check_chunk(0, 8, 0, 0, 1);
	release();
	assert_int_equal(map(RPCRDMA_MSG, after_data, 2, 64), 0);
	check_chunk(1, 8, 0, 1, 1);
	release();
	assert_int_equal(map(RPCRDMA_MSG, before_data, 2, 64), 0);
	check_chunk(0, 8, 0, 0, 1);
	check_chunk(1, 12, 4, 1, 1);
	release();
}

/*
 * The position-zero chunk (RFC 8166 3.5.3) is the message: not a payload,
 * its segments gathered apart, and it, not the inline bytes, bounds where
 * the payloads go. Its fields start afresh: the call held stale ones.
 */
static void test_position_zero(void **state)
{
	const struct rd pzrc[] = { { 0, 60 }, { 0, 40 } };
	const struct rd with_data[] = { { 0, 60 }, { 0, 40 }, { 16, 8 }, { 100 + 8, 4 } };
	const struct rd data_past[] = { { 0, 60 }, { 0, 40 }, { 104, 4 } };

	(void)state;
	assert_int_equal(map(RPCRDMA_NOMSG, pzrc, 2, 0), 0);
	assert_true(call.has_pzrc);
	assert_int_equal(call.pzrc.ch_len, 100);
	assert_int_equal(call.pzrc.ch_nsegs, 2);
	assert_int_equal(call.pzrc.ch_first_seg, 0);
	assert_int_equal(call.nchunks, 0);
	release();

	assert_int_equal(map(RPCRDMA_NOMSG, with_data, 4, 0), 0);
	assert_int_equal(call.pzrc.ch_len, 100);
	assert_int_equal(call.nchunks, 2);
	check_chunk(0, 16, 8, 2, 1);
	check_chunk(1, 100, 4, 3, 1);	/* at the message's end */
	release();

	/* Past the 100 bytes of message, even with inline bytes to spare. */
	assert_int_equal(map(RPCRDMA_NOMSG, data_past, 3, 0), -EINVAL);
	release();
	assert_int_equal(map(RPCRDMA_MSG, data_past, 3, 4096), -EINVAL);
	release();

	/* Without one, a stale has_pzrc is cleared. */
	assert_int_equal(map(RPCRDMA_MSG, data_past + 2, 1, 4096), 0);
	assert_false(call.has_pzrc);
	release();
}

/*
 * The whole Read list, position-zero chunk included, is bounded by the
 * server's max_read (rpcrdma_svc_attr; 64 MiB by default): -E2BIG beyond.
 */
static void test_max_read(void **state)
{
	const struct rd exact[] = { { 0, 600 }, { 8, 200 }, { 8, 200 } };
	const struct rd over[] = { { 0, 600 }, { 8, 200 }, { 8, 201 } };
	const struct rd def_exact[] = { { 8, 32u << 20 }, { 8, 32u << 20 } };
	const struct rd def_over[] = { { 8, 32u << 20 }, { 8, (32u << 20) + 4 } };

	(void)state;
	assert_int_equal(map(RPCRDMA_MSG, def_exact, 2, 64), 0);
	release();
	assert_int_equal(map(RPCRDMA_MSG, def_over, 2, 64), -E2BIG);
	release();

	svc.sv_attr.max_read = 1000;
	rdma.sc_svc = &svc;
	assert_int_equal(map(RPCRDMA_NOMSG, exact, 3, 0), 0);
	release();
	assert_int_equal(map(RPCRDMA_NOMSG, over, 3, 0), -E2BIG);
	release();
	rdma.sc_svc = NULL;
}

/*
 * Lengths near 2^32: the codec refuses a chunk ending past 2^32 - 1 bytes
 * of stream, or a segment whose offset + length wraps (-EOVERFLOW, RFC
 * 8166 4.5: ERR_CHUNK). What it lets through is summed in 64 bits.
 */
static void test_length_overflow(void **state)
{
	const struct rd end_wraps[] = { { 8, 0xfffffff8u } };
	const struct rd segs_wrap[] = { { 8, 0x80000000u }, { 8, 0x80000000u } };
	const struct rd last_wraps[] = { { 8, 0xfffffff0u }, { 0xfffffff8u, 8 } };
	const struct rd offset_wraps[] = { { 8, 16 } };
	const struct rd wraps_back[] = { { 8, 0xfffffff0u }, { 12, 4 } };
	const struct rd big[] = { { 8, 0x7ffffff0u }, { 8, 0x7ffffff0u }, { 8 + 0xffffffe0u, 16 } };

	(void)state;
	assert_int_equal(decode(RPCRDMA_MSG, end_wraps, 1, NULL), -EOVERFLOW);
	assert_int_equal(decode(RPCRDMA_MSG, segs_wrap, 2, NULL), -EOVERFLOW);
	assert_int_equal(decode(RPCRDMA_MSG, last_wraps, 2, NULL), -EOVERFLOW);
	first_offset = 0xfffffffffffffff8ull;
	assert_int_equal(decode(RPCRDMA_MSG, offset_wraps, 1, NULL), -EOVERFLOW);
	first_offset = 0;
	assert_int_equal(rpcrdma_hdr_verdict(-EOVERFLOW, &hdr), RPCRDMA_REPLY_ERR_CHUNK);

	/* Beyond the default max_read; with none to speak of, kept whole. */
	assert_int_equal(map(RPCRDMA_MSG, big, 3, 64), -E2BIG);
	release();
	svc.sv_attr.max_read = UINT64_MAX;
	rdma.sc_svc = &svc;
	assert_int_equal(map(RPCRDMA_MSG, big, 3, 64), 0);
	check_chunk(0, 8, 0xffffffe0ull, 0, 2);
	check_chunk(1, 8, 16, 2, 1);
	release();
	/*
	 * B inside A, whose length wraps B's message offset to 28 in 32 bits:
	 * within the message and after A's, were it not refused before.
	 */
	assert_int_equal(map(RPCRDMA_MSG, wraps_back, 2, 64), -EINVAL);
	release();
	rdma.sc_svc = NULL;
}

/* A Read list of @nchunks chunks of @segs segments each, 4 bytes a segment. */
static uint32_t fill(struct rd *rs, uint32_t nchunks, uint32_t segs)
{
	uint32_t c, s, n = 0;

	for (c = 0; c < nchunks; c++)
		for (s = 0; s < segs; s++)
			rs[n++] = (struct rd){ 8 + c * 4 * (segs + 1), 4 };
	return n;
}

/*
 * The codec's caps (rpcrdma_limits: chunks, segments per chunk, segments
 * in all; -E2BIG beyond, ERR_CHUNK) bound what map_reads sees; at the
 * ceilings it groups them all, into an array of exactly read_chunks.
 */
static void test_max_counts(void **state)
{
	static struct rd rs[4200];
	const struct rpcrdma_limits ceil = { .max_chunk_segs = RPCRDMA_MAX_SEGS_LIMIT,
					     .max_chunks = RPCRDMA_MAX_CHUNKS_LIMIT,
					     .max_read_segs = RPCRDMA_MAX_SEGS_LIMIT };
	const struct rpcrdma_limits wide = { .max_chunk_segs = RPCRDMA_DEFAULT_MAX_READ_SEGS };
	const struct rpcrdma_limits above = { .max_chunks = RPCRDMA_MAX_CHUNKS_LIMIT + 1 };
	uint32_t n, i;

	(void)state;
	n = fill(rs, RPCRDMA_DEFAULT_MAX_CHUNKS, 1);
	assert_int_equal(decode(RPCRDMA_MSG, rs, n, NULL), 0);
	n = fill(rs, RPCRDMA_DEFAULT_MAX_CHUNKS + 1, 1);
	assert_int_equal(decode(RPCRDMA_MSG, rs, n, NULL), -E2BIG);
	n = fill(rs, 1, RPCRDMA_DEFAULT_MAX_CHUNK_SEGS);
	assert_int_equal(decode(RPCRDMA_MSG, rs, n, NULL), 0);
	n = fill(rs, 1, RPCRDMA_DEFAULT_MAX_CHUNK_SEGS + 1);
	assert_int_equal(decode(RPCRDMA_MSG, rs, n, NULL), -E2BIG);
	/* Segments in all, with room in each chunk. */
	n = fill(rs, 2, RPCRDMA_DEFAULT_MAX_READ_SEGS / 2);
	assert_int_equal(decode(RPCRDMA_MSG, rs, n, &wide), 0);
	rs[n] = rs[n - 1];
	assert_int_equal(decode(RPCRDMA_MSG, rs, n + 1, &wide), -E2BIG);
	assert_int_equal(rpcrdma_hdr_verdict(-E2BIG, &hdr), RPCRDMA_REPLY_ERR_CHUNK);
	assert_int_equal(decode(RPCRDMA_MSG, rs, 1, &above), -EINVAL);

	/* 32 chunks of 128 segments: 4096 in all. */
	n = fill(rs, RPCRDMA_MAX_CHUNKS_LIMIT, RPCRDMA_MAX_SEGS_LIMIT / RPCRDMA_MAX_CHUNKS_LIMIT);
	assert_int_equal(n, RPCRDMA_MAX_SEGS_LIMIT);
	assert_int_equal(map_lim(RPCRDMA_MSG, rs, n, 8 + 4 * 129 * 32, &ceil), 0);
	assert_int_equal(hdr.read_chunks, RPCRDMA_MAX_CHUNKS_LIMIT);
	assert_int_equal(call.nchunks, RPCRDMA_MAX_CHUNKS_LIMIT);
	for (i = 0; i < RPCRDMA_MAX_CHUNKS_LIMIT; i++)
		check_chunk(i, 8 + i * 4, 4 * 128, i * 128, 128);
	assert_int_equal(rdma.sc_heap, RPCRDMA_MAX_CHUNKS_LIMIT * sizeof(*call.chunks));
	release();
	/* One more segment is past the ceiling: the codec says so. */
	rs[n] = rs[n - 1];
	assert_int_equal(decode(RPCRDMA_MSG, rs, n + 1, &ceil), -E2BIG);
}

/*
 * A reply's message with its inline payloads: each at its offset, padded
 * to 4 with zeroes (RFC 8166 3.4.7), the message's bytes around them in
 * order; in place or into another buffer.
 */
static void test_splice(void **state)
{
	static const unsigned char msg[] = "AAAABBBBCCCC";
	static const unsigned char want[] = "AAAAxyz\0BBBB12345\0\0\0CCCC";
	const struct svc_rdma_payload p[] = {
		{ .pos = 4, .buf = (const unsigned char *)"xyz", .len = 3 },
		{ .pos = 8, .buf = (const unsigned char *)"12345", .len = 5 },
	};
	unsigned char dst[64];

	(void)state;
	memset(dst, 0xee, sizeof(dst));
	svc_rdma_splice(dst, msg, 12, p, 2);
	assert_memory_equal(dst, want, 24);
	assert_int_equal(dst[24], 0xee);

	/* In place: the message is at dst, with room after it. */
	memset(dst, 0xee, sizeof(dst));
	memcpy(dst, msg, 12);
	svc_rdma_splice(dst, dst, 12, p, 2);
	assert_memory_equal(dst, want, 24);
	assert_int_equal(dst[24], 0xee);

	/* No payloads: the message alone. */
	memset(dst, 0xee, sizeof(dst));
	svc_rdma_splice(dst, msg, 12, p, 0);
	assert_memory_equal(dst, msg, 12);
	assert_int_equal(dst[12], 0xee);
}

/* Payloads at offset 0, at the message's end, at one offset, and empty. */
static void test_splice_edges(void **state)
{
	static const unsigned char msg[] = "MMMMNNNN";
	static const unsigned char want[] = "abcdMMMMNNNNef\0\0ghij";
	const struct svc_rdma_payload p[] = {
		{ .pos = 0, .buf = (const unsigned char *)"abcd", .len = 4 },
		{ .pos = 0, .buf = (const unsigned char *)"", .len = 0 },
		{ .pos = 8, .buf = (const unsigned char *)"ef", .len = 2 },
		{ .pos = 8, .buf = (const unsigned char *)"ghij", .len = 4 },
	};
	unsigned char dst[64];

	(void)state;
	memset(dst, 0xee, sizeof(dst));
	memcpy(dst, msg, 8);
	svc_rdma_splice(dst, dst, 8, p, 4);
	assert_memory_equal(dst, want, 20);
	assert_int_equal(dst[20], 0xee);
}

/*
 * The payloads that go inline: those beyond the Write list, or whose Write
 * chunk is empty (the client asks for that item inline, RFC 8166 3.4.6);
 * the others go by RDMA Write. In order.
 */
static void test_inline_payloads(void **state)
{
	struct svc_rdma_payload pl[4], out[4];
	unsigned int i;

	(void)state;
	memset(&hdr, 0, sizeof(hdr));
	for (i = 0; i < 4; i++)
		pl[i] = (struct svc_rdma_payload){ .pos = 4 * i, .len = i + 1 };
	call_reset();
	call.payloads = pl;
	call.npayloads = 4;

	/* No Write list: all inline. */
	assert_int_equal(svc_rdma_inline_payloads(&call, out), 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(out[i].len, i + 1);

	/* Chunk 0 has a segment, chunk 1 is empty, 2 and 3 are beyond the list. */
	hdr.write_chunks = 2;
	hdr.write[0].nsegs = 1;
	hdr.write[1].nsegs = 0;
	assert_int_equal(svc_rdma_inline_payloads(&call, out), 3);
	assert_int_equal(out[0].len, 2);
	assert_int_equal(out[1].len, 3);
	assert_int_equal(out[2].len, 4);

	/* Every payload has a chunk with segments: none inline. */
	hdr.write_chunks = 4;
	for (i = 0; i < 4; i++)
		hdr.write[i].nsegs = 1;
	assert_int_equal(svc_rdma_inline_payloads(&call, out), 0);
	call.payloads = NULL;
	call.npayloads = 0;
}

static unsigned int releases;

static void count_release(void *arg)
{
	(void)arg;
	releases++;
}

/*
 * What svc_rdma_splice() relies on is checked where the application names
 * the payloads: positions multiples of 4, never decreasing, at most
 * SVC_RDMA_MAX_PAYLOADS of them; a refused payload is released at once.
 */
static void test_payload_order(void **state)
{
	unsigned int i;

	(void)state;
	memset(&hdr, 0, sizeof(hdr));
	call_reset();
	call.payloads = NULL;
	call.npayloads = 0;
	rdma.sc_state = SVCXPRT_CONNECTED;
	releases = 0;

	assert_int_equal(rpcrdma_svc_reply_payload(&call, 8, "x", 1, count_release, NULL), 0);
	assert_int_equal(rpcrdma_svc_reply_payload(&call, 6, "x", 1, count_release, NULL),
			 -EINVAL);
	assert_int_equal(releases, 1);
	assert_int_equal(rpcrdma_svc_reply_payload(&call, 4, "x", 1, count_release, NULL),
			 -EINVAL);
	assert_int_equal(releases, 2);
	assert_int_equal(rpcrdma_svc_reply_payload(&call, 8, NULL, 1, count_release, NULL),
			 -EINVAL);
	assert_int_equal(releases, 3);
	for (i = 1; i < SVC_RDMA_MAX_PAYLOADS; i++)
		assert_int_equal(rpcrdma_svc_reply_payload(&call, 8 + 4 * i, "x", 1,
							   count_release, NULL), 0);
	assert_int_equal(call.npayloads, SVC_RDMA_MAX_PAYLOADS);
	assert_int_equal(rpcrdma_svc_reply_payload(&call, 1024, "x", 1, count_release, NULL),
			 -EINVAL);
	assert_int_equal(releases, 4);
	svc_rdma_release_payloads(&call);
	assert_int_equal(releases, 4 + SVC_RDMA_MAX_PAYLOADS);
	assert_int_equal(rdma.sc_heap, 0);
	rdma.sc_state = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_one_chunk, setup),
		cmocka_unit_test_setup(test_grouping, setup),
		cmocka_unit_test_setup(test_roundup, setup),
		cmocka_unit_test_setup(test_overlap, setup),
		cmocka_unit_test_setup(test_beyond_message, setup),
		cmocka_unit_test_setup(test_misordered, setup),
		cmocka_unit_test_setup(test_zero_length, setup),
		cmocka_unit_test_setup(test_position_zero, setup),
		cmocka_unit_test_setup(test_max_read, setup),
		cmocka_unit_test_setup(test_length_overflow, setup),
		cmocka_unit_test_setup(test_max_counts, setup),
		cmocka_unit_test_setup(test_splice, setup),
		cmocka_unit_test_setup(test_splice_edges, setup),
		cmocka_unit_test_setup(test_inline_payloads, setup),
		cmocka_unit_test_setup(test_payload_order, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

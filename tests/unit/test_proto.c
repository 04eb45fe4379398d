/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the RPC-over-RDMA Version 1 codec (lib/proto/proto.c) against byte
 * vectors built by hand from the RFC 8166 layout. Every decode reads from an
 * exactly-sized heap copy, so that AddressSanitizer and valgrind catch any
 * read past the bytes received.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rpcrdma/proto.h>

#include "proto_plain.h"
#include "proto_wire.h"

/* A decode from an exactly-sized heap copy; @copy backs the header's views. */
struct decoded {
	unsigned char *copy;
	struct rpcrdma_hdr hdr;
	int rc;
};

static void decode_exact(struct decoded *d, const unsigned char *bytes, size_t len,
			 const struct rpcrdma_limits *lim)
{
	/* malloc(0) may return NULL, which the decoder rejects as EINVAL. */
	d->copy = malloc(len ? len : 1);
	assert_non_null(d->copy);
	memcpy(d->copy, bytes, len);
	memset(&d->hdr, 0xa5, sizeof(d->hdr));
	d->rc = rpcrdma_hdr_decode(d->copy, len, lim, &d->hdr);
}

static void decoded_free(struct decoded *d)
{
	free(d->copy);
	d->copy = NULL;
}

/* Decode @w whole (or its first @len bytes) and return the result. */
static int decode_rc(const struct wire *w, size_t len, const struct rpcrdma_limits *lim)
{
	struct decoded d;
	int rc;

	decode_exact(&d, w->b, len, lim);
	rc = d.rc;
	decoded_free(&d);
	return rc;
}

/*
 * A header described by its parts, from which the tests build the wire bytes
 * by hand, the encoder's input, and the expected decode.
 */
#define SPEC_MAX_READ 64
#define SPEC_MAX_WRITE 8
#define SPEC_MAX_SEGS 16

struct spec {
	uint32_t xid;
	uint32_t credit;
	uint32_t proc;
	uint32_t nread;
	struct rpcrdma_read_segment read[SPEC_MAX_READ];
	uint32_t nwrite;
	uint32_t wnsegs[SPEC_MAX_WRITE];
	struct rpcrdma_segment wseg[SPEC_MAX_WRITE][SPEC_MAX_SEGS];
	int has_reply;
	uint32_t rnsegs;
	struct rpcrdma_segment rseg[SPEC_MAX_SEGS];

	/* Encoder input built by spec_enc(). */
	struct rpcrdma_chunk_desc wdesc[SPEC_MAX_WRITE];
	struct rpcrdma_chunk_desc rdesc;
};

/* Distinct, byte-asymmetric values so that a swapped or shifted field shows. */
static struct rpcrdma_segment seg_val(uint32_t k)
{
	struct rpcrdma_segment s = {
		.handle = 0x10203000u + k,
		.length = 0x100u * k + 7,
		.offset = 0x0123456789ab0000ull + ((uint64_t)k << 4),
	};
	return s;
}

static void spec_init(struct spec *s, uint32_t proc)
{
	memset(s, 0, sizeof(*s));
	s->xid = 0xdeadbeef;
	s->credit = 128;
	s->proc = proc;
}

static void spec_add_read(struct spec *s, uint32_t pos)
{
	assert_true(s->nread < SPEC_MAX_READ);
	s->read[s->nread].position = pos;
	s->read[s->nread].seg = seg_val(100 + s->nread);
	s->nread++;
}

static void spec_add_write(struct spec *s, uint32_t nsegs)
{
	uint32_t i, c = s->nwrite++;

	assert_true(c < SPEC_MAX_WRITE && nsegs <= SPEC_MAX_SEGS);
	s->wnsegs[c] = nsegs;
	for (i = 0; i < nsegs; i++)
		s->wseg[c][i] = seg_val(200 + 20 * c + i);
}

static void spec_set_reply(struct spec *s, uint32_t nsegs)
{
	uint32_t i;

	assert_true(nsegs <= SPEC_MAX_SEGS);
	s->has_reply = 1;
	s->rnsegs = nsegs;
	for (i = 0; i < nsegs; i++)
		s->rseg[i] = seg_val(300 + i);
}

static void spec_wire(const struct spec *s, struct wire *w)
{
	uint32_t i, c;

	w_fixed(w, s->xid, 1, s->credit, s->proc);
	for (i = 0; i < s->nread; i++)
		w_read(w, s->read[i].position, s->read[i].seg.handle, s->read[i].seg.length,
		       s->read[i].seg.offset);
	w32(w, 0);
	for (c = 0; c < s->nwrite; c++) {
		w32(w, 1);
		w32(w, s->wnsegs[c]);
		for (i = 0; i < s->wnsegs[c]; i++)
			w_seg(w, s->wseg[c][i].handle, s->wseg[c][i].length, s->wseg[c][i].offset);
	}
	w32(w, 0);
	if (s->has_reply) {
		w32(w, 1);
		w32(w, s->rnsegs);
		for (i = 0; i < s->rnsegs; i++)
			w_seg(w, s->rseg[i].handle, s->rseg[i].length, s->rseg[i].offset);
	} else {
		w32(w, 0);
	}
}

static void spec_enc(struct spec *s, struct rpcrdma_hdr_enc *enc)
{
	uint32_t c;

	memset(enc, 0, sizeof(*enc));
	enc->xid = s->xid;
	enc->credit = s->credit;
	enc->proc = s->proc;
	enc->read_segs = s->nread;
	enc->read = s->nread ? s->read : NULL;
	for (c = 0; c < s->nwrite; c++) {
		s->wdesc[c].nsegs = s->wnsegs[c];
		s->wdesc[c].segs = s->wseg[c];
	}
	enc->write_chunks = s->nwrite;
	enc->write = s->nwrite ? s->wdesc : NULL;
	s->rdesc.nsegs = s->rnsegs;
	s->rdesc.segs = s->rseg;
	enc->reply = s->has_reply ? &s->rdesc : NULL;
}

static void assert_seg_equal(const struct rpcrdma_segment *got,
			     const struct rpcrdma_segment *want)
{
	assert_int_equal(got->handle, want->handle);
	assert_int_equal(got->length, want->length);
	assert_int_equal(got->offset, want->offset);
}

static void check_chunk(const struct rpcrdma_chunk *chunk, uint32_t nsegs,
			const struct rpcrdma_segment *segs)
{
	struct rpcrdma_segment got;
	uint64_t total = 0;
	uint32_t i;

	assert_int_equal(chunk->nsegs, nsegs);
	for (i = 0; i < nsegs; i++) {
		rpcrdma_chunk_segment(chunk, i, &got);
		assert_seg_equal(&got, &segs[i]);
		total += segs[i].length;
	}
	assert_int_equal(chunk->total, total);
}

static void check_decoded(const struct spec *s, const struct rpcrdma_hdr *hdr, size_t hdr_len)
{
	struct rpcrdma_read_segment rs;
	uint32_t i, chunks = 0;

	assert_int_equal(hdr->xid, s->xid);
	assert_int_equal(hdr->vers, 1);
	assert_int_equal(hdr->credit, s->credit);
	assert_int_equal(hdr->proc, s->proc);
	assert_int_equal(hdr->hdr_len, hdr_len);
	assert_int_equal(hdr->err, 0);
	assert_int_equal(hdr->vers_low, 0);
	assert_int_equal(hdr->vers_high, 0);

	assert_int_equal(hdr->read_segs, s->nread);
	for (i = 0; i < s->nread; i++) {
		if (i == 0 || s->read[i].position != s->read[i - 1].position)
			chunks++;
		rpcrdma_hdr_read_segment(hdr, i, &rs);
		assert_int_equal(rs.position, s->read[i].position);
		assert_seg_equal(&rs.seg, &s->read[i].seg);
	}
	assert_int_equal(hdr->read_chunks, chunks);
	if (!s->nread)
		assert_null(hdr->read_list);

	assert_int_equal(hdr->write_chunks, s->nwrite);
	for (i = 0; i < s->nwrite; i++)
		check_chunk(&hdr->write[i], s->wnsegs[i], s->wseg[i]);

	assert_int_equal(hdr->has_reply, s->has_reply);
	if (s->has_reply)
		check_chunk(&hdr->reply, s->rnsegs, s->rseg);
}

/*
 * Decode the hand-built bytes of @s (plus a payload that must not be taken
 * for header), check every field, then check that the encoder produces the
 * very same bytes and that encoded_len agrees.
 */
static void check_spec(struct spec *s)
{
	static const unsigned char payload[] = { 0x80, 0, 0, 0x1c, 0xde, 0xad };
	struct rpcrdma_hdr_enc enc;
	struct wire w = { 0 };
	struct decoded d;
	unsigned char *out;
	size_t hdr_len;
	long n;

	spec_wire(s, &w);
	hdr_len = w.n;
	for (size_t i = 0; i < sizeof(payload); i++) {
		wire_reserve(&w, 1);
		w.b[w.n++] = payload[i];
	}

	decode_exact(&d, w.b, hdr_len, NULL);
	assert_int_equal(d.rc, 0);
	check_decoded(s, &d.hdr, hdr_len);
	assert_int_equal(rpcrdma_hdr_verdict(d.rc, &d.hdr), RPCRDMA_ACCEPT);
	decoded_free(&d);

	decode_exact(&d, w.b, w.n, NULL);
	assert_int_equal(d.rc, 0);
	check_decoded(s, &d.hdr, hdr_len);
	decoded_free(&d);

	spec_enc(s, &enc);
	assert_int_equal(rpcrdma_hdr_encoded_len(&enc), hdr_len);
	out = malloc(hdr_len);
	assert_non_null(out);
	n = rpcrdma_hdr_encode(out, hdr_len, &enc);
	assert_int_equal(n, hdr_len);
	assert_memory_equal(out, w.b, hdr_len);
	free(out);
	wire_free(&w);
}

/* Decoding: procedures and list shapes. */

static void test_decode_msg_chunkless(void **state)
{
	struct spec s;

	(void)state;
	spec_init(&s, RPCRDMA_MSG);
	check_spec(&s);
	spec_init(&s, RPCRDMA_NOMSG);
	s.xid = 0;
	s.credit = UINT32_MAX;
	check_spec(&s);
}

static void test_decode_list_combinations(void **state)
{
	uint32_t proc, mask;
	struct spec s;

	(void)state;
	for (proc = RPCRDMA_MSG; proc <= RPCRDMA_NOMSG; proc++) {
		for (mask = 0; mask < 8; mask++) {
			spec_init(&s, proc);
			s.xid = 0x01020304u + mask;
			if (mask & 1) {
				spec_add_read(&s, 0);
				spec_add_read(&s, 0);
				spec_add_read(&s, 132);
			}
			if (mask & 2) {
				spec_add_write(&s, 1);
				spec_add_write(&s, 3);
			}
			if (mask & 4)
				spec_set_reply(&s, 2);
			check_spec(&s);
		}
	}
}

static void test_decode_read_positions(void **state)
{
	static const uint32_t positions[][6] = {
		{ 0 },
		{ 4 },
		{ 0, 0, 0, 0, 0, 0 },
		{ 0, 4, 8, 12, 16, 20 },
		{ 8, 8, 1024, 1024, 1024, 0xffff0000u },
		{ 124, 124, 124, 4096, 4096, 0x7ffffff0u },
	};
	static const uint32_t counts[] = { 1, 1, 6, 6, 6, 6 };
	struct spec s;
	size_t t;
	uint32_t i;

	(void)state;
	for (t = 0; t < ARRAY_SIZE(positions); t++) {
		spec_init(&s, RPCRDMA_NOMSG);
		for (i = 0; i < counts[t]; i++)
			spec_add_read(&s, positions[t][i]);
		spec_set_reply(&s, 1);
		check_spec(&s);
	}
}

static void test_decode_write_chunks(void **state)
{
	struct spec s;

	(void)state;
	spec_init(&s, RPCRDMA_MSG);
	spec_add_write(&s, 1);
	spec_add_write(&s, 16);
	spec_add_write(&s, 2);
	check_spec(&s);

	/* A Write chunk without segments is valid XDR and decodes as such. */
	spec_init(&s, RPCRDMA_MSG);
	spec_add_write(&s, 0);
	spec_add_write(&s, 1);
	check_spec(&s);
}

static void test_decode_reply_chunk_empty(void **state)
{
	struct spec s;
	struct wire w = { 0 };
	struct decoded d;

	(void)state;
	spec_init(&s, RPCRDMA_NOMSG);
	spec_set_reply(&s, 0);
	check_spec(&s);

	/* Discriminator 1, nsegs 0: present and empty. */
	spec_wire(&s, &w);
	decode_exact(&d, w.b, w.n, NULL);
	assert_int_equal(d.rc, 0);
	assert_int_equal(d.hdr.has_reply, 1);
	assert_int_equal(d.hdr.reply.nsegs, 0);
	assert_int_equal(d.hdr.reply.total, 0);
	assert_int_equal(d.hdr.hdr_len, 32);
	decoded_free(&d);
	wire_free(&w);
}

static void test_decode_unaligned_buffer(void **state)
{
	struct spec s;
	struct wire w = { 0 };
	struct rpcrdma_hdr hdr;
	unsigned char *mem;
	size_t shift;

	(void)state;
	spec_init(&s, RPCRDMA_MSG);
	spec_add_read(&s, 8);
	spec_add_write(&s, 2);
	spec_set_reply(&s, 1);
	spec_wire(&s, &w);
	for (shift = 1; shift < 8; shift++) {
		mem = malloc(w.n + shift);
		assert_non_null(mem);
		memcpy(mem + shift, w.b, w.n);
		assert_int_equal(rpcrdma_hdr_decode(mem + shift, w.n, NULL, &hdr), 0);
		check_decoded(&s, &hdr, w.n);
		free(mem);
	}
	wire_free(&w);
}

static void test_decode_fields_zeroed(void **state)
{
	struct wire w = { 0 };
	struct decoded d;

	(void)state;
	/* A previous decode's results must not leak into the next one. */
	w_fixed(&w, 7, 1, 3, RPCRDMA_MSG);
	w_lists_end(&w);
	decode_exact(&d, w.b, w.n, NULL);
	assert_int_equal(d.rc, 0);
	assert_int_equal(d.hdr.err, 0);
	assert_int_equal(d.hdr.vers_low, 0);
	assert_int_equal(d.hdr.vers_high, 0);
	assert_int_equal(d.hdr.read_segs, 0);
	assert_int_equal(d.hdr.read_chunks, 0);
	assert_null(d.hdr.read_list);
	assert_int_equal(d.hdr.write_chunks, 0);
	assert_int_equal(d.hdr.has_reply, 0);
	decoded_free(&d);
	wire_free(&w);
}

/* Decoding: other procedures and bad fixed fields. */

static void test_decode_bad_version(void **state)
{
	static const uint32_t versions[] = { 0, 2, 0x01000000u, UINT32_MAX };
	struct wire w = { 0 };
	struct decoded d;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(versions); i++) {
		w.n = 0;
		w_fixed(&w, 0xcafef00d, versions[i], 5, RPCRDMA_MSG);
		w_lists_end(&w);
		decode_exact(&d, w.b, w.n, NULL);
		assert_int_equal(d.rc, -EPROTONOSUPPORT);
		assert_int_equal(d.hdr.xid, 0xcafef00d);
		assert_int_equal(d.hdr.vers, versions[i]);
		assert_int_equal(rpcrdma_hdr_verdict(d.rc, &d.hdr), RPCRDMA_REPLY_ERR_VERS);
		decoded_free(&d);
		/* Only the fixed part is needed to answer ERR_VERS. */
		decode_exact(&d, w.b, RPCRDMA_HDR_FIXED_LEN, NULL);
		assert_int_equal(d.rc, -EPROTONOSUPPORT);
		assert_int_equal(d.hdr.xid, 0xcafef00d);
		decoded_free(&d);
		assert_int_equal(decode_rc(&w, RPCRDMA_HDR_FIXED_LEN - 1, NULL), -ENODATA);
	}
	wire_free(&w);
}

static void test_decode_unknown_proc(void **state)
{
	static const uint32_t procs[] = { 5, 6, 0x01000000u, UINT32_MAX };
	struct wire w = { 0 };
	struct decoded d;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(procs); i++) {
		w.n = 0;
		w_fixed(&w, 11, 1, 1, procs[i]);
		w_lists_end(&w);
		decode_exact(&d, w.b, w.n, NULL);
		assert_int_equal(d.rc, -EBADRQC);
		assert_int_equal(d.hdr.xid, 11);
		assert_int_equal(rpcrdma_hdr_verdict(d.rc, &d.hdr), RPCRDMA_REPLY_ERR_CHUNK);
		decoded_free(&d);
		assert_int_equal(decode_rc(&w, RPCRDMA_HDR_FIXED_LEN, NULL), -EBADRQC);
	}
	wire_free(&w);
}

static void test_decode_msgp(void **state)
{
	struct wire w = { 0 };
	struct decoded d;

	(void)state;
	/* RDMA_MSGP: fixed part, rdma_align, rdma_thresh, three empty lists. */
	w_fixed(&w, 12, 1, 1, RPCRDMA_MSGP);
	w32(&w, 4096);
	w32(&w, 1024);
	w_lists_end(&w);
	decode_exact(&d, w.b, w.n, NULL);
	assert_int_equal(d.rc, -EOPNOTSUPP);
	assert_int_equal(d.hdr.xid, 12);
	assert_int_equal(rpcrdma_hdr_verdict(d.rc, &d.hdr), RPCRDMA_REPLY_ERR_CHUNK);
	decoded_free(&d);
	assert_int_equal(decode_rc(&w, RPCRDMA_HDR_FIXED_LEN, NULL), -EOPNOTSUPP);
	wire_free(&w);
}

static void test_decode_done(void **state)
{
	struct wire w = { 0 };
	struct decoded d;

	(void)state;
	w_fixed(&w, 13, 1, 2, RPCRDMA_DONE);
	decode_exact(&d, w.b, w.n, NULL);
	assert_int_equal(d.rc, 0);
	assert_int_equal(d.hdr.xid, 13);
	assert_int_equal(d.hdr.credit, 2);
	assert_int_equal(d.hdr.proc, RPCRDMA_DONE);
	assert_int_equal(d.hdr.hdr_len, RPCRDMA_HDR_FIXED_LEN);
	assert_int_equal(d.hdr.read_segs, 0);
	assert_int_equal(d.hdr.write_chunks, 0);
	assert_int_equal(d.hdr.has_reply, 0);
	assert_int_equal(d.hdr.err, 0);
	assert_int_equal(rpcrdma_hdr_verdict(d.rc, &d.hdr), RPCRDMA_DROP);
	decoded_free(&d);

	/* Whatever follows is not looked at. */
	w32(&w, 0xffffffff);
	decode_exact(&d, w.b, w.n, NULL);
	assert_int_equal(d.rc, 0);
	assert_int_equal(d.hdr.hdr_len, RPCRDMA_HDR_FIXED_LEN);
	decoded_free(&d);
	wire_free(&w);
}

static void test_decode_error(void **state)
{
	struct wire w = { 0 };
	struct decoded d;
	size_t cut;

	(void)state;
	w_fixed(&w, 14, 1, 0, RPCRDMA_ERROR);
	w32(&w, RPCRDMA_ERR_VERS);
	w32(&w, 1);
	w32(&w, 3);
	decode_exact(&d, w.b, w.n, NULL);
	assert_int_equal(d.rc, 0);
	assert_int_equal(d.hdr.xid, 14);
	assert_int_equal(d.hdr.proc, RPCRDMA_ERROR);
	assert_int_equal(d.hdr.err, RPCRDMA_ERR_VERS);
	assert_int_equal(d.hdr.vers_low, 1);
	assert_int_equal(d.hdr.vers_high, 3);
	assert_int_equal(d.hdr.hdr_len, 28);
	assert_int_equal(d.hdr.read_segs, 0);
	assert_int_equal(d.hdr.write_chunks, 0);
	assert_int_equal(d.hdr.has_reply, 0);
	assert_int_equal(rpcrdma_hdr_verdict(d.rc, &d.hdr), RPCRDMA_DROP);
	decoded_free(&d);
	for (cut = 0; cut < w.n; cut++)
		assert_int_equal(decode_rc(&w, cut, NULL),
				 cut < RPCRDMA_HDR_FIXED_LEN ? -ENODATA : -EMSGSIZE);

	w.n = 0;
	w_fixed(&w, 15, 1, 0, RPCRDMA_ERROR);
	w32(&w, RPCRDMA_ERR_CHUNK);
	decode_exact(&d, w.b, w.n, NULL);
	assert_int_equal(d.rc, 0);
	assert_int_equal(d.hdr.err, RPCRDMA_ERR_CHUNK);
	assert_int_equal(d.hdr.vers_low, 0);
	assert_int_equal(d.hdr.vers_high, 0);
	assert_int_equal(d.hdr.hdr_len, 20);
	assert_int_equal(rpcrdma_hdr_verdict(d.rc, &d.hdr), RPCRDMA_DROP);
	decoded_free(&d);
	for (cut = 0; cut < w.n; cut++)
		assert_int_equal(decode_rc(&w, cut, NULL),
				 cut < RPCRDMA_HDR_FIXED_LEN ? -ENODATA : -EMSGSIZE);

	/* Unknown rdma_err values. */
	w.n = 0;
	w_fixed(&w, 16, 1, 0, RPCRDMA_ERROR);
	w32(&w, 0);
	w32(&w, 0);
	w32(&w, 0);
	assert_int_equal(decode_rc(&w, w.n, NULL), -EBADMSG);
	w.n = 16;
	w32(&w, 3);
	assert_int_equal(decode_rc(&w, w.n, NULL), -EBADMSG);
	w.n = 16;
	w32(&w, 0x01000000u);
	assert_int_equal(decode_rc(&w, w.n, NULL), -EBADMSG);
	wire_free(&w);
}

static void test_decode_bad_discriminators(void **state)
{
	static const uint32_t discs[] = { 2, 3, 0x01000000u, 0x00000100u, UINT32_MAX };
	struct wire w = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(discs); i++) {
		/* Read list, first entry. */
		w.n = 0;
		w_fixed(&w, 1, 1, 1, RPCRDMA_MSG);
		w32(&w, discs[i]);
		w32(&w, 0);
		w32(&w, 0);
		assert_int_equal(decode_rc(&w, w.n, NULL), -EBADMSG);
		/* Read list, after an entry. */
		w.n = 16;
		w_read(&w, 0, 1, 2, 3);
		w32(&w, discs[i]);
		w32(&w, 0);
		w32(&w, 0);
		assert_int_equal(decode_rc(&w, w.n, NULL), -EBADMSG);
		/* Write list, first and after a chunk. */
		w.n = 16;
		w32(&w, 0);
		w32(&w, discs[i]);
		w32(&w, 0);
		assert_int_equal(decode_rc(&w, w.n, NULL), -EBADMSG);
		w.n = 20;
		w32(&w, 1);
		w32(&w, 1);
		w_seg(&w, 1, 2, 3);
		w32(&w, discs[i]);
		w32(&w, 0);
		assert_int_equal(decode_rc(&w, w.n, NULL), -EBADMSG);
		/* Reply chunk. */
		w.n = 16;
		w32(&w, 0);
		w32(&w, 0);
		w32(&w, discs[i]);
		assert_int_equal(decode_rc(&w, w.n, NULL), -EBADMSG);
	}
	wire_free(&w);
}

/* Truncation of valid headers at every byte: never a read past the end. */
static void check_truncations(const struct wire *w)
{
	struct decoded d;
	size_t cut;

	decode_exact(&d, w->b, w->n, NULL);
	assert_int_equal(d.rc, 0);
	assert_int_equal(d.hdr.hdr_len, w->n);
	decoded_free(&d);
	for (cut = 0; cut < w->n; cut++) {
		decode_exact(&d, w->b, cut, NULL);
		assert_int_equal(d.rc, cut < RPCRDMA_HDR_FIXED_LEN ? -ENODATA : -EMSGSIZE);
		if (cut >= RPCRDMA_HDR_FIXED_LEN)
			assert_int_equal(rpcrdma_hdr_verdict(d.rc, &d.hdr),
					 RPCRDMA_REPLY_ERR_CHUNK);
		else
			assert_int_equal(rpcrdma_hdr_verdict(d.rc, &d.hdr), RPCRDMA_DROP);
		decoded_free(&d);
	}
}

static void test_decode_truncated(void **state)
{
	struct wire w = { 0 };
	struct spec s;
	uint32_t mask;

	(void)state;
	for (mask = 0; mask < 8; mask++) {
		spec_init(&s, RPCRDMA_MSG);
		if (mask & 1) {
			spec_add_read(&s, 0);
			spec_add_read(&s, 16);
			spec_add_read(&s, 16);
		}
		if (mask & 2) {
			spec_add_write(&s, 2);
			spec_add_write(&s, 0);
			spec_add_write(&s, 1);
		}
		if (mask & 4)
			spec_set_reply(&s, 3);
		w.n = 0;
		spec_wire(&s, &w);
		check_truncations(&w);
	}
	spec_init(&s, RPCRDMA_NOMSG);
	spec_set_reply(&s, 0);
	w.n = 0;
	spec_wire(&s, &w);
	check_truncations(&w);
	wire_free(&w);
}

/* Caps. */

/* A Write list of @nchunks chunks of @nsegs segments. */
static void wire_write_list(struct wire *w, uint32_t nchunks, uint32_t nsegs)
{
	uint32_t c, i;

	w->n = 0;
	w_fixed(w, 21, 1, 1, RPCRDMA_MSG);
	w32(w, 0);
	for (c = 0; c < nchunks; c++) {
		w32(w, 1);
		w32(w, nsegs);
		for (i = 0; i < nsegs; i++)
			w_seg(w, i, 512, 4096ull * i);
	}
	w32(w, 0);
	w32(w, 0);
}

static void wire_reply(struct wire *w, uint32_t nsegs)
{
	uint32_t i;

	w->n = 0;
	w_fixed(w, 22, 1, 1, RPCRDMA_NOMSG);
	w32(w, 0);
	w32(w, 0);
	w32(w, 1);
	w32(w, nsegs);
	for (i = 0; i < nsegs; i++)
		w_seg(w, i, 512, 4096ull * i);
}

/*
 * A Read list of @total segments spread evenly over @nchunks chunks at
 * positions 0, 4, 8, ...
 */
static void wire_read_spread(struct wire *w, uint32_t total, uint32_t nchunks)
{
	uint32_t i;

	w->n = 0;
	w_fixed(w, 23, 1, 1, RPCRDMA_NOMSG);
	for (i = 0; i < total; i++)
		w_read(w, 4 * (uint32_t)((uint64_t)i * nchunks / total), i, 16, 4096ull * i);
	w32(w, 0);
	w32(w, 0);
	w32(w, 0);
}

/* One segment at position 0, then @nsegs at position 8. */
static void wire_read_second_chunk(struct wire *w, uint32_t nsegs)
{
	uint32_t i;

	w->n = 0;
	w_fixed(w, 24, 1, 1, RPCRDMA_NOMSG);
	w_read(w, 0, 1, 1, 0);
	for (i = 0; i < nsegs; i++)
		w_read(w, 8, i, 1, 0);
	w32(w, 0);
	w32(w, 0);
	w32(w, 0);
}

/* Check each cap at and one past its value @segs / @chunks / @reads. */
static void check_caps(const struct rpcrdma_limits *lim, uint32_t segs, uint32_t chunks,
		       uint32_t reads)
{
	struct wire w = { 0 };
	struct decoded d;
	uint32_t n;

	wire_write_list(&w, 1, segs);
	decode_exact(&d, w.b, w.n, lim);
	assert_int_equal(d.rc, 0);
	assert_int_equal(d.hdr.write[0].nsegs, segs);
	assert_int_equal(d.hdr.write[0].total, 512ull * segs);
	decoded_free(&d);
	wire_write_list(&w, 1, segs + 1);
	assert_int_equal(decode_rc(&w, w.n, lim), -E2BIG);

	wire_write_list(&w, chunks, 1);
	decode_exact(&d, w.b, w.n, lim);
	assert_int_equal(d.rc, 0);
	assert_int_equal(d.hdr.write_chunks, chunks);
	decoded_free(&d);
	wire_write_list(&w, chunks + 1, 1);
	assert_int_equal(decode_rc(&w, w.n, lim), -E2BIG);
	wire_write_list(&w, chunks + 1, 0);
	assert_int_equal(decode_rc(&w, w.n, lim), -E2BIG);

	wire_reply(&w, segs);
	decode_exact(&d, w.b, w.n, lim);
	assert_int_equal(d.rc, 0);
	assert_int_equal(d.hdr.reply.nsegs, segs);
	decoded_free(&d);
	wire_reply(&w, segs + 1);
	assert_int_equal(decode_rc(&w, w.n, lim), -E2BIG);

	/* Segments in one Read chunk, the first or a later one. */
	if (segs <= reads) {
		wire_read_spread(&w, segs, 1);
		decode_exact(&d, w.b, w.n, lim);
		assert_int_equal(d.rc, 0);
		assert_int_equal(d.hdr.read_segs, segs);
		assert_int_equal(d.hdr.read_chunks, 1);
		decoded_free(&d);
		wire_read_spread(&w, segs + 1, 1);
		assert_int_equal(decode_rc(&w, w.n, lim), -E2BIG);
	}
	if (chunks >= 2 && segs + 2 <= reads) {
		wire_read_second_chunk(&w, segs);
		assert_int_equal(decode_rc(&w, w.n, lim), 0);
		wire_read_second_chunk(&w, segs + 1);
		assert_int_equal(decode_rc(&w, w.n, lim), -E2BIG);
	}

	/* Read chunks in the Read list. */
	if (chunks <= reads) {
		wire_read_spread(&w, chunks, chunks);
		decode_exact(&d, w.b, w.n, lim);
		assert_int_equal(d.rc, 0);
		assert_int_equal(d.hdr.read_chunks, chunks);
		decoded_free(&d);
	}
	if (chunks + 1 <= reads) {
		wire_read_spread(&w, chunks + 1, chunks + 1);
		assert_int_equal(decode_rc(&w, w.n, lim), -E2BIG);
	}

	/* Read segments in the Read list, where the other caps allow one more. */
	n = chunks < reads + 1 ? chunks : reads + 1;
	if ((reads + 1 + n - 1) / n <= segs) {
		wire_read_spread(&w, reads, n);
		decode_exact(&d, w.b, w.n, lim);
		assert_int_equal(d.rc, 0);
		assert_int_equal(d.hdr.read_segs, reads);
		decoded_free(&d);
		wire_read_spread(&w, reads + 1, n);
		assert_int_equal(decode_rc(&w, w.n, lim), -E2BIG);
	}
	wire_free(&w);
}

static void test_caps_default(void **state)
{
	static const struct rpcrdma_limits zero = { 0 };
	struct wire w = { 0 };

	(void)state;
	check_caps(NULL, RPCRDMA_DEFAULT_MAX_CHUNK_SEGS, RPCRDMA_DEFAULT_MAX_CHUNKS,
		   RPCRDMA_DEFAULT_MAX_READ_SEGS);
	check_caps(&zero, RPCRDMA_DEFAULT_MAX_CHUNK_SEGS, RPCRDMA_DEFAULT_MAX_CHUNKS,
		   RPCRDMA_DEFAULT_MAX_READ_SEGS);

	/* 64 Read segments in 4 chunks of 16; 65 in 5 chunks of 13. */
	wire_read_spread(&w, 64, 4);
	assert_int_equal(decode_rc(&w, w.n, NULL), 0);
	wire_read_spread(&w, 65, 5);
	assert_int_equal(decode_rc(&w, w.n, NULL), -E2BIG);
	wire_free(&w);
}

static void test_caps_custom(void **state)
{
	const struct rpcrdma_limits tight = { .max_chunk_segs = 2, .max_chunks = 3,
					      .max_read_segs = 6 };
	const struct rpcrdma_limits one = { .max_chunk_segs = 1, .max_chunks = 1,
					    .max_read_segs = 1 };
	const struct rpcrdma_limits wide = { .max_chunk_segs = 100, .max_chunks = 20,
					     .max_read_segs = 200 };
	const struct rpcrdma_limits segs_only = { .max_chunk_segs = 5 };
	const struct rpcrdma_limits reads = { .max_chunk_segs = 4, .max_chunks = 4,
					      .max_read_segs = 10 };

	(void)state;
	check_caps(&tight, 2, 3, 6);
	check_caps(&one, 1, 1, 1);
	check_caps(&wide, 100, 20, 200);
	check_caps(&segs_only, 5, RPCRDMA_DEFAULT_MAX_CHUNKS, RPCRDMA_DEFAULT_MAX_READ_SEGS);
	check_caps(&reads, 4, 4, 10);
}

static void test_caps_ceiling(void **state)
{
	const struct rpcrdma_limits max = { .max_chunk_segs = RPCRDMA_MAX_SEGS_LIMIT,
					    .max_chunks = RPCRDMA_MAX_CHUNKS_LIMIT,
					    .max_read_segs = RPCRDMA_MAX_SEGS_LIMIT };
	struct rpcrdma_limits over;
	struct wire w = { 0 };
	struct rpcrdma_hdr hdr;

	(void)state;
	check_caps(&max, RPCRDMA_MAX_SEGS_LIMIT, RPCRDMA_MAX_CHUNKS_LIMIT,
		   RPCRDMA_MAX_SEGS_LIMIT);

	/* Above a ceiling: rejected before the buffer is looked at. */
	wire_write_list(&w, 1, 1);
	over = max;
	over.max_chunk_segs++;
	assert_int_equal(rpcrdma_hdr_decode(w.b, w.n, &over, &hdr), -EINVAL);
	over = max;
	over.max_chunks++;
	assert_int_equal(rpcrdma_hdr_decode(w.b, w.n, &over, &hdr), -EINVAL);
	over = max;
	over.max_read_segs++;
	assert_int_equal(rpcrdma_hdr_decode(w.b, w.n, &over, &hdr), -EINVAL);
	over = max;
	over.max_chunks = UINT32_MAX;
	assert_int_equal(rpcrdma_hdr_decode(w.b, 4, &over, &hdr), -EINVAL);
	wire_free(&w);
}

static void test_decode_huge_counts(void **state)
{
	const struct rpcrdma_limits max = { .max_chunk_segs = RPCRDMA_MAX_SEGS_LIMIT,
					    .max_chunks = RPCRDMA_MAX_CHUNKS_LIMIT,
					    .max_read_segs = RPCRDMA_MAX_SEGS_LIMIT };
	static const uint32_t counts[] = { UINT32_MAX, 0x80000000u, 0x10000000u, 0x10000001u,
					   RPCRDMA_MAX_SEGS_LIMIT + 1 };
	struct wire w = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(counts); i++) {
		/* Counts whose byte length overflows 32 bits, with few bytes behind. */
		w.n = 0;
		w_fixed(&w, 1, 1, 1, RPCRDMA_MSG);
		w32(&w, 0);
		w32(&w, 1);
		w32(&w, counts[i]);
		w_seg(&w, 1, 1, 1);
		w32(&w, 0);
		w32(&w, 0);
		assert_int_equal(decode_rc(&w, w.n, NULL), -E2BIG);
		assert_int_equal(decode_rc(&w, w.n, &max), -E2BIG);
		w.n = 16;
		w32(&w, 0);
		w32(&w, 0);
		w32(&w, 1);
		w32(&w, counts[i]);
		assert_int_equal(decode_rc(&w, w.n, NULL), -E2BIG);
		assert_int_equal(decode_rc(&w, w.n, &max), -E2BIG);
	}
	/* A count within the caps but beyond the bytes received. */
	w.n = 16;
	w32(&w, 0);
	w32(&w, 1);
	w32(&w, 16);
	w_seg(&w, 1, 1, 1);
	assert_int_equal(decode_rc(&w, w.n, NULL), -EMSGSIZE);
	wire_free(&w);
}

/* Arithmetic bounds of segments and Read chunks. */

/*
 * A NOMSG with one segment of @length at @offset: in the Read list (@where
 * 0), as the second of a Write chunk's two (1), in the Reply chunk (2), or
 * as a Write chunk's only one (3).
 */
static void wire_one_segment(struct wire *w, int where, uint32_t length, uint64_t offset)
{
	w->n = 0;
	w_fixed(w, 1, 1, 1, RPCRDMA_NOMSG);
	if (where == 0)
		w_read(w, 0, 1, length, offset);
	w32(w, 0);
	if (where == 1) {
		w32(w, 1);
		w32(w, 2);
		w_seg(w, 1, 1, 0);
		w_seg(w, 1, length, offset);
	}
	if (where == 3) {
		/* The NFS READ call's shape, which the decoder takes a short way. */
		w32(w, 1);
		w32(w, 1);
		w_seg(w, 1, length, offset);
	}
	w32(w, 0);
	if (where == 2) {
		w32(w, 1);
		w32(w, 1);
		w_seg(w, 1, length, offset);
	} else {
		w32(w, 0);
	}
}

static void test_decode_offset_wrap(void **state)
{
	static const uint32_t lengths[] = { 1, 2, 0x1000, 0x80000000u, UINT32_MAX };
	struct wire w = { 0 };
	size_t i;
	int where;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(lengths); i++) {
		for (where = 0; where < 4; where++) {
			/* The largest offset whose end does not wrap, then one more. */
			wire_one_segment(&w, where, lengths[i], UINT64_MAX - lengths[i]);
			assert_int_equal(decode_rc(&w, w.n, NULL), 0);
			wire_one_segment(&w, where, lengths[i], UINT64_MAX - lengths[i] + 1);
			assert_int_equal(decode_rc(&w, w.n, NULL), -EOVERFLOW);
			wire_one_segment(&w, where, lengths[i], UINT64_MAX);
			assert_int_equal(decode_rc(&w, w.n, NULL), -EOVERFLOW);
			/* An all-ones high word alone is fine. */
			wire_one_segment(&w, where, lengths[i], 0xffffffff00000000ull);
			assert_int_equal(decode_rc(&w, w.n, NULL), 0);
		}
	}
	/* Zero length never wraps. */
	for (where = 0; where < 4; where++) {
		wire_one_segment(&w, where, 0, UINT64_MAX);
		assert_int_equal(decode_rc(&w, w.n, NULL), 0);
	}
	wire_free(&w);
}

static void test_decode_read_chunk_overflow(void **state)
{
	struct wire w = { 0 };

	(void)state;
	/* Position + length may reach 2^32 - 1, not beyond. */
	w_fixed(&w, 1, 1, 1, RPCRDMA_NOMSG);
	w_read(&w, 0xfffffff0u, 1, 0xf, 0);
	w_lists_end(&w);
	assert_int_equal(decode_rc(&w, w.n, NULL), 0);
	w.n = 16;
	w_read(&w, 0xfffffff0u, 1, 0x10, 0);
	w_lists_end(&w);
	assert_int_equal(decode_rc(&w, w.n, NULL), -EOVERFLOW);

	/* The sum of a chunk's segments counts, for the first and last chunk. */
	w.n = 16;
	w_read(&w, 0x80000000u, 1, 0x40000000u, 0);
	w_read(&w, 0x80000000u, 2, 0x40000000u, 0);
	w_read(&w, 0xfffffffcu, 3, 1, 0);
	w_lists_end(&w);
	assert_int_equal(decode_rc(&w, w.n, NULL), -EOVERFLOW);
	w.n = 16;
	w_read(&w, 0x80000000u, 1, 0x40000000u, 0);
	w_read(&w, 0x80000000u, 2, 0x3fffffffu, 0);
	w_read(&w, 0xfffffffcu, 3, 3, 0);
	w_lists_end(&w);
	assert_int_equal(decode_rc(&w, w.n, NULL), 0);
	w.n = 16;
	w_read(&w, 0, 1, 10, 0);
	w_read(&w, 0xfffffff0u, 2, UINT32_MAX, 0);
	w_read(&w, 0xfffffff0u, 2, UINT32_MAX, 0);
	w_lists_end(&w);
	assert_int_equal(decode_rc(&w, w.n, NULL), -EOVERFLOW);
	wire_free(&w);
}

static void test_decode_bad_positions(void **state)
{
	static const uint32_t first[] = { 1, 2, 3, 6, 0xffffffffu };
	struct wire w = { 0 };
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(first); i++) {
		w.n = 0;
		w_fixed(&w, 1, 1, 1, RPCRDMA_NOMSG);
		w_read(&w, first[i], 1, 1, 0);
		w_lists_end(&w);
		assert_int_equal(decode_rc(&w, w.n, NULL), -EILSEQ);
		/* Misaligned in a later chunk. */
		w.n = 16;
		w_read(&w, 0, 1, 1, 0);
		w_read(&w, first[i] + 8, 1, 1, 0);
		w_lists_end(&w);
		assert_int_equal(decode_rc(&w, w.n, NULL), -EILSEQ);
	}
	/* Decreasing positions, right after a chunk and after several. */
	w.n = 16;
	w_read(&w, 8, 1, 1, 0);
	w_read(&w, 4, 1, 1, 0);
	w_lists_end(&w);
	assert_int_equal(decode_rc(&w, w.n, NULL), -EILSEQ);
	w.n = 16;
	w_read(&w, 0, 1, 1, 0);
	w_read(&w, 8, 1, 1, 0);
	w_read(&w, 8, 1, 1, 0);
	w_read(&w, 0, 1, 1, 0);
	w_lists_end(&w);
	assert_int_equal(decode_rc(&w, w.n, NULL), -EILSEQ);
	/* Positions that come back to an earlier chunk's are decreasing too. */
	w.n = 16;
	w_read(&w, 0, 1, 1, 0);
	w_read(&w, 4, 1, 1, 0);
	w_read(&w, 0, 1, 1, 0);
	w_lists_end(&w);
	assert_int_equal(decode_rc(&w, w.n, NULL), -EILSEQ);
	wire_free(&w);
}

static void test_decode_invalid_args(void **state)
{
	struct wire w = { 0 };
	struct rpcrdma_hdr hdr;

	(void)state;
	w_fixed(&w, 1, 1, 1, RPCRDMA_MSG);
	w_lists_end(&w);
	assert_int_equal(rpcrdma_hdr_decode(NULL, w.n, NULL, &hdr), -EINVAL);
	assert_int_equal(rpcrdma_hdr_decode(NULL, 0, NULL, &hdr), -EINVAL);
	assert_int_equal(rpcrdma_hdr_decode(w.b, w.n, NULL, NULL), -EINVAL);
	assert_int_equal(rpcrdma_hdr_decode(w.b, 0, NULL, &hdr), -ENODATA);
	assert_int_equal(rpcrdma_hdr_decode(w.b, w.n, NULL, &hdr), 0);
	wire_free(&w);
}

static void test_verdict(void **state)
{
	struct rpcrdma_hdr hdr;
	uint32_t proc;
	static const int chunk_errors[] = { -EOPNOTSUPP, -EBADRQC, -EMSGSIZE, -EBADMSG,
					    -E2BIG, -EILSEQ, -EOVERFLOW };
	static const int drops[] = { -ENODATA, -EINVAL, -ENOMEM, 1 };
	size_t i;

	(void)state;
	memset(&hdr, 0, sizeof(hdr));
	for (proc = 0; proc < 8; proc++) {
		hdr.proc = proc;
		assert_int_equal(rpcrdma_hdr_verdict(0, &hdr),
				 proc <= RPCRDMA_NOMSG ? RPCRDMA_ACCEPT : RPCRDMA_DROP);
	}
	assert_int_equal(rpcrdma_hdr_verdict(0, NULL), RPCRDMA_DROP);
	assert_int_equal(rpcrdma_hdr_verdict(-EPROTONOSUPPORT, &hdr), RPCRDMA_REPLY_ERR_VERS);
	for (i = 0; i < ARRAY_SIZE(chunk_errors); i++) {
		assert_int_equal(rpcrdma_hdr_verdict(chunk_errors[i], &hdr),
				 RPCRDMA_REPLY_ERR_CHUNK);
		assert_int_equal(rpcrdma_hdr_verdict(chunk_errors[i], NULL),
				 RPCRDMA_REPLY_ERR_CHUNK);
	}
	for (i = 0; i < ARRAY_SIZE(drops); i++)
		assert_int_equal(rpcrdma_hdr_verdict(drops[i], &hdr), RPCRDMA_DROP);
}

/* Encoding. */

static void test_encode_exact_bytes(void **state)
{
	static const unsigned char chunkless[] = {
		0x12, 0x34, 0x56, 0x78, 0, 0, 0, 1, 0, 0, 0, 0x20, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	static const unsigned char err_vers[] = {
		0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 4,
		0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1,
	};
	static const unsigned char err_chunk[] = {
		0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 2,
	};
	static const unsigned char one_write[] = {
		0xa0, 0xb0, 0xc0, 0xd0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0,
		0, 0, 0, 0,
		0, 0, 0, 1, 0, 0, 0, 1,
		0x11, 0x22, 0x33, 0x44, 0, 0, 0x10, 0,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0, 0, 0, 0,
		0, 0, 0, 0,
	};
	static const struct rpcrdma_segment seg = {
		.handle = 0x11223344, .length = 4096, .offset = 0x0102030405060708ull,
	};
	const struct rpcrdma_chunk_desc write = { .nsegs = 1, .segs = &seg };
	struct rpcrdma_hdr_enc enc = { .xid = 0x12345678, .credit = 32, .proc = RPCRDMA_MSG };
	unsigned char out[64];

	(void)state;
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), sizeof(chunkless));
	assert_memory_equal(out, chunkless, sizeof(chunkless));

	/* ERR_VERS answers a version-2 message: it carries that version (RFC 8166 4.5). */
	enc = (struct rpcrdma_hdr_enc){ .xid = 9, .proc = RPCRDMA_ERROR, .err = RPCRDMA_ERR_VERS,
					.vers_low = 1, .vers_high = 1, .vers = 2 };
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), sizeof(err_vers));
	assert_memory_equal(out, err_vers, sizeof(err_vers));

	/* Lists are ignored for RDMA_ERROR, and so are the versions for ERR_CHUNK. */
	enc = (struct rpcrdma_hdr_enc){ .xid = 9, .proc = RPCRDMA_ERROR, .err = RPCRDMA_ERR_CHUNK,
					.vers_low = 5, .vers_high = 6, .write_chunks = 1,
					.write = &write, .reply = &write };
	assert_int_equal(rpcrdma_hdr_encoded_len(&enc), sizeof(err_chunk));
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), sizeof(err_chunk));
	assert_memory_equal(out, err_chunk, sizeof(err_chunk));

	enc = (struct rpcrdma_hdr_enc){ .xid = 0xa0b0c0d0, .credit = 1, .proc = RPCRDMA_MSG,
					.write_chunks = 1, .write = &write };
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), sizeof(one_write));
	assert_memory_equal(out, one_write, sizeof(one_write));
}

/* Every too-small buffer: -EMSGSIZE and not one byte written. */
static void check_encode_sizes(const struct rpcrdma_hdr_enc *enc)
{
	long n = rpcrdma_hdr_encoded_len(enc);
	unsigned char *buf, *canary;
	size_t size;

	assert_true(n > 0);
	canary = malloc((size_t)n);
	assert_non_null(canary);
	memset(canary, 0x5a, (size_t)n);
	for (size = 0; size < (size_t)n; size++) {
		buf = malloc(size ? size : 1);
		assert_non_null(buf);
		memset(buf, 0x5a, size ? size : 1);
		assert_int_equal(rpcrdma_hdr_encode(buf, size, enc), -EMSGSIZE);
		assert_memory_equal(buf, canary, size ? size : 1);
		free(buf);
	}
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(rpcrdma_hdr_encode(buf, (size_t)n, enc), n);
	free(buf);
	free(canary);
}

static void test_encode_too_small(void **state)
{
	struct rpcrdma_hdr_enc enc;
	struct spec s;

	(void)state;
	spec_init(&s, RPCRDMA_MSG);
	spec_enc(&s, &enc);
	check_encode_sizes(&enc);

	spec_init(&s, RPCRDMA_NOMSG);
	spec_add_read(&s, 0);
	spec_add_read(&s, 4);
	spec_add_write(&s, 2);
	spec_set_reply(&s, 3);
	spec_enc(&s, &enc);
	check_encode_sizes(&enc);

	enc = (struct rpcrdma_hdr_enc){ .proc = RPCRDMA_ERROR, .err = RPCRDMA_ERR_VERS };
	check_encode_sizes(&enc);
	enc.err = RPCRDMA_ERR_CHUNK;
	check_encode_sizes(&enc);
}

static void test_encode_invalid(void **state)
{
	struct rpcrdma_read_segment read[3] = {
		{ .position = 0 }, { .position = 8 }, { .position = 8 },
	};
	struct rpcrdma_segment segs[1] = { { .handle = 1 } };
	struct rpcrdma_chunk_desc chunk = { .nsegs = 1, .segs = segs };
	struct rpcrdma_chunk_desc chunks[RPCRDMA_MAX_CHUNKS_LIMIT + 1];
	struct rpcrdma_hdr_enc enc = { .proc = RPCRDMA_MSG };
	unsigned char out[2048];
	uint32_t i;

	(void)state;
	memset(out, 0x33, sizeof(out));
	assert_int_equal(rpcrdma_hdr_encode(NULL, sizeof(out), &enc), -EINVAL);
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), NULL), -EINVAL);
	assert_int_equal(rpcrdma_hdr_encoded_len(NULL), -EINVAL);

	for (i = 0; i < 8; i++) {
		if (i == RPCRDMA_MSG || i == RPCRDMA_NOMSG)
			continue;
		enc = (struct rpcrdma_hdr_enc){ .proc = i, .err = RPCRDMA_ERR_CHUNK };
		if (i == RPCRDMA_ERROR)
			enc.err = 3;
		assert_int_equal(rpcrdma_hdr_encoded_len(&enc), -EINVAL);
		assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), -EINVAL);
	}
	enc = (struct rpcrdma_hdr_enc){ .proc = RPCRDMA_ERROR, .err = 0 };
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), -EINVAL);

	/* Read positions: valid, then misaligned, then decreasing. */
	enc = (struct rpcrdma_hdr_enc){ .proc = RPCRDMA_NOMSG, .read_segs = 3, .read = read };
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), 28 + 3 * 24);
	read[2].position = 10;
	assert_int_equal(rpcrdma_hdr_encoded_len(&enc), -EINVAL);
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), -EINVAL);
	read[2].position = 4;
	assert_int_equal(rpcrdma_hdr_encoded_len(&enc), -EINVAL);
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), -EINVAL);
	read[2].position = 8;
	read[0].position = 1;
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), -EINVAL);
	read[0].position = 0;
	/* Invalid input is reported before a small buffer. */
	read[1].position = 2;
	assert_int_equal(rpcrdma_hdr_encode(out, 4, &enc), -EINVAL);
	read[1].position = 8;

	/* NULL arrays behind non-zero counts. */
	enc = (struct rpcrdma_hdr_enc){ .proc = RPCRDMA_MSG, .read_segs = 1 };
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), -EINVAL);
	enc = (struct rpcrdma_hdr_enc){ .proc = RPCRDMA_MSG, .write_chunks = 1 };
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), -EINVAL);
	chunk.segs = NULL;
	enc = (struct rpcrdma_hdr_enc){ .proc = RPCRDMA_MSG, .write_chunks = 1, .write = &chunk };
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), -EINVAL);
	enc = (struct rpcrdma_hdr_enc){ .proc = RPCRDMA_MSG, .reply = &chunk };
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), -EINVAL);
	chunk.nsegs = 0;
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), 32);
	chunk.segs = segs;

	/* Counts above the ceilings. */
	enc = (struct rpcrdma_hdr_enc){ .proc = RPCRDMA_MSG,
					.read_segs = RPCRDMA_MAX_SEGS_LIMIT + 1, .read = read };
	assert_int_equal(rpcrdma_hdr_encoded_len(&enc), -EINVAL);
	enc.read_segs = UINT32_MAX;
	assert_int_equal(rpcrdma_hdr_encoded_len(&enc), -EINVAL);
	chunk.nsegs = RPCRDMA_MAX_SEGS_LIMIT + 1;
	enc = (struct rpcrdma_hdr_enc){ .proc = RPCRDMA_MSG, .write_chunks = 1, .write = &chunk };
	assert_int_equal(rpcrdma_hdr_encoded_len(&enc), -EINVAL);
	enc = (struct rpcrdma_hdr_enc){ .proc = RPCRDMA_MSG, .reply = &chunk };
	assert_int_equal(rpcrdma_hdr_encoded_len(&enc), -EINVAL);
	chunk.nsegs = UINT32_MAX;
	assert_int_equal(rpcrdma_hdr_encoded_len(&enc), -EINVAL);
	for (i = 0; i < ARRAY_SIZE(chunks); i++)
		chunks[i] = (struct rpcrdma_chunk_desc){ .nsegs = 1, .segs = segs };
	enc = (struct rpcrdma_hdr_enc){ .proc = RPCRDMA_MSG,
					.write_chunks = RPCRDMA_MAX_CHUNKS_LIMIT, .write = chunks };
	assert_int_equal(rpcrdma_hdr_encoded_len(&enc), 28 + RPCRDMA_MAX_CHUNKS_LIMIT * 24);
	enc.write_chunks++;
	assert_int_equal(rpcrdma_hdr_encoded_len(&enc), -EINVAL);
	assert_int_equal(rpcrdma_hdr_encode(out, sizeof(out), &enc), -EINVAL);
}

static void test_encode_at_ceiling(void **state)
{
	const struct rpcrdma_limits max = { .max_chunk_segs = RPCRDMA_MAX_SEGS_LIMIT,
					    .max_chunks = RPCRDMA_MAX_CHUNKS_LIMIT,
					    .max_read_segs = RPCRDMA_MAX_SEGS_LIMIT };
	struct rpcrdma_segment *segs = calloc(RPCRDMA_MAX_SEGS_LIMIT, sizeof(*segs));
	struct rpcrdma_read_segment *read = calloc(RPCRDMA_MAX_SEGS_LIMIT, sizeof(*read));
	struct rpcrdma_chunk_desc chunk = { .nsegs = RPCRDMA_MAX_SEGS_LIMIT, .segs = segs };
	struct rpcrdma_hdr_enc enc = { .xid = 3, .proc = RPCRDMA_NOMSG,
				       .read_segs = RPCRDMA_MAX_SEGS_LIMIT, .read = read,
				       .write_chunks = 1, .write = &chunk, .reply = &chunk };
	struct rpcrdma_segment got;
	struct decoded d;
	unsigned char *buf;
	long n, want;
	uint32_t i;

	(void)state;
	assert_non_null(segs);
	assert_non_null(read);
	for (i = 0; i < RPCRDMA_MAX_SEGS_LIMIT; i++) {
		segs[i] = seg_val(i);
		read[i].position = 4 * (i / 128);
		read[i].seg = seg_val(i + 7);
	}
	want = 28 + RPCRDMA_MAX_SEGS_LIMIT * (24 + 16 + 16) + 8 + 4;
	n = rpcrdma_hdr_encoded_len(&enc);
	assert_int_equal(n, want);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(rpcrdma_hdr_encode(buf, (size_t)n, &enc), n);
	decode_exact(&d, buf, (size_t)n, &max);
	assert_int_equal(d.rc, 0);
	assert_int_equal(d.hdr.read_segs, RPCRDMA_MAX_SEGS_LIMIT);
	assert_int_equal(d.hdr.read_chunks, RPCRDMA_MAX_SEGS_LIMIT / 128);
	assert_int_equal(d.hdr.reply.nsegs, RPCRDMA_MAX_SEGS_LIMIT);
	rpcrdma_chunk_segment(&d.hdr.write[0], RPCRDMA_MAX_SEGS_LIMIT - 1, &got);
	assert_seg_equal(&got, &segs[RPCRDMA_MAX_SEGS_LIMIT - 1]);
	decoded_free(&d);
	/* The defaults refuse what the ceilings allow. */
	decode_exact(&d, buf, (size_t)n, NULL);
	assert_int_equal(d.rc, -E2BIG);
	decoded_free(&d);
	free(buf);
	free(read);
	free(segs);
}

static void test_encode_unaligned_buffer(void **state)
{
	struct rpcrdma_hdr_enc enc;
	struct wire w = { 0 };
	unsigned char *mem;
	struct spec s;
	size_t shift;

	(void)state;
	spec_init(&s, RPCRDMA_MSG);
	spec_add_read(&s, 4);
	spec_add_write(&s, 3);
	spec_set_reply(&s, 1);
	spec_wire(&s, &w);
	spec_enc(&s, &enc);
	for (shift = 1; shift < 8; shift++) {
		mem = calloc(1, w.n + shift);
		assert_non_null(mem);
		assert_int_equal(rpcrdma_hdr_encode(mem + shift, w.n, &enc), w.n);
		assert_memory_equal(mem + shift, w.b, w.n);
		free(mem);
	}
	wire_free(&w);
}

/* RFC 8797 private data. */

static void test_cm_encode(void **state)
{
	static const unsigned char want[] = { 0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 7 };
	static const unsigned char want_min[] = { 0xf6, 0xab, 0x0e, 0x18, 1, 0, 0, 255 };
	struct rpcrdma_cm_private pd = { .send_size = 4096, .recv_size = 8192,
					 .flags = RPCRDMA_CM_REMOTE_INVALIDATE };
	unsigned char out[RPCRDMA_CM_PRIVATE_LEN + 1];

	(void)state;
	out[RPCRDMA_CM_PRIVATE_LEN] = 0x77;
	assert_int_equal(rpcrdma_cm_private_encode(out, sizeof(out), &pd), RPCRDMA_CM_PRIVATE_LEN);
	assert_memory_equal(out, want, sizeof(want));
	assert_int_equal(out[RPCRDMA_CM_PRIVATE_LEN], 0x77);

	pd = (struct rpcrdma_cm_private){ .send_size = 1024, .recv_size = RPCRDMA_CM_MAX_INLINE };
	assert_int_equal(rpcrdma_cm_private_encode(out, RPCRDMA_CM_PRIVATE_LEN, &pd),
			 RPCRDMA_CM_PRIVATE_LEN);
	assert_memory_equal(out, want_min, sizeof(want_min));

	/* Sizes round down to a multiple of 1024. */
	pd = (struct rpcrdma_cm_private){ .send_size = 2047, .recv_size = 262143 };
	assert_int_equal(rpcrdma_cm_private_encode(out, sizeof(out), &pd), RPCRDMA_CM_PRIVATE_LEN);
	assert_int_equal(out[6], 0);
	assert_int_equal(out[7], 254);
	pd = (struct rpcrdma_cm_private){ .send_size = 1500, .recv_size = 3072 };
	assert_int_equal(rpcrdma_cm_private_encode(out, sizeof(out), &pd), RPCRDMA_CM_PRIVATE_LEN);
	assert_int_equal(out[6], 0);
	assert_int_equal(out[7], 2);
}

static void test_cm_encode_invalid(void **state)
{
	const struct rpcrdma_cm_private good = { .send_size = 1024, .recv_size = 1024 };
	struct rpcrdma_cm_private pd;
	unsigned char out[RPCRDMA_CM_PRIVATE_LEN];
	size_t len;

	(void)state;
	assert_int_equal(rpcrdma_cm_private_encode(NULL, sizeof(out), &good), -EINVAL);
	assert_int_equal(rpcrdma_cm_private_encode(out, sizeof(out), NULL), -EINVAL);
	for (len = 0; len < RPCRDMA_CM_PRIVATE_LEN; len++) {
		memset(out, 0x44, sizeof(out));
		assert_int_equal(rpcrdma_cm_private_encode(out, len, &good), -EMSGSIZE);
		assert_int_equal(out[0], 0x44);
		assert_int_equal(out[RPCRDMA_CM_PRIVATE_LEN - 1], 0x44);
	}
	pd = good;
	pd.send_size = 1023;
	assert_int_equal(rpcrdma_cm_private_encode(out, sizeof(out), &pd), -EINVAL);
	pd = good;
	pd.recv_size = 0;
	assert_int_equal(rpcrdma_cm_private_encode(out, sizeof(out), &pd), -EINVAL);
	pd = good;
	pd.send_size = RPCRDMA_CM_MAX_INLINE + 1;
	assert_int_equal(rpcrdma_cm_private_encode(out, sizeof(out), &pd), -EINVAL);
	pd = good;
	pd.recv_size = UINT32_MAX;
	assert_int_equal(rpcrdma_cm_private_encode(out, sizeof(out), &pd), -EINVAL);
	pd = good;
	pd.flags = 2;
	assert_int_equal(rpcrdma_cm_private_encode(out, sizeof(out), &pd), -EINVAL);
	pd.flags = RPCRDMA_CM_REMOTE_INVALIDATE | 0x80;
	assert_int_equal(rpcrdma_cm_private_encode(out, sizeof(out), &pd), -EINVAL);
}

/* Decode @len bytes of @bytes from an exactly-sized copy. */
static int cm_decode_exact(const unsigned char *bytes, size_t len, struct rpcrdma_cm_private *pd)
{
	unsigned char *copy = malloc(len ? len : 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, bytes, len);
	pd->send_size = 0xdead;
	pd->recv_size = 0xbeef;
	pd->flags = 0xff;
	rc = rpcrdma_cm_private_decode(copy, len, pd);
	free(copy);
	return rc;
}

static void assert_cm_defaults(const struct rpcrdma_cm_private *pd)
{
	assert_int_equal(pd->send_size, RPCRDMA_CM_DEFAULT_INLINE);
	assert_int_equal(pd->recv_size, RPCRDMA_CM_DEFAULT_INLINE);
	assert_int_equal(pd->flags, 0);
}

static void test_cm_decode(void **state)
{
	unsigned char data[196];
	struct rpcrdma_cm_private pd;
	size_t len;

	(void)state;
	memset(data, 0, sizeof(data));
	memcpy(data, (const unsigned char[]){ 0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 7 }, 8);
	/* Exact, and as IB/RoCE deliver it on a REQ (56) and a REP (196). */
	for (len = 8; len <= sizeof(data); len++) {
		assert_int_equal(cm_decode_exact(data, len, &pd), 0);
		assert_int_equal(pd.send_size, 4096);
		assert_int_equal(pd.recv_size, 8192);
		assert_int_equal(pd.flags, RPCRDMA_CM_REMOTE_INVALIDATE);
	}
	assert_int_equal(cm_decode_exact(data, 56, &pd), 0);
	assert_int_equal(cm_decode_exact(data, 196, &pd), 0);

	/* Short: defaults. */
	for (len = 0; len < 8; len++) {
		assert_int_equal(cm_decode_exact(data, len, &pd), -ENODATA);
		assert_cm_defaults(&pd);
	}
	pd.flags = 9;
	assert_int_equal(rpcrdma_cm_private_decode(NULL, 0, &pd), -ENODATA);
	assert_cm_defaults(&pd);
	pd.flags = 9;
	assert_int_equal(rpcrdma_cm_private_decode(NULL, 56, &pd), -ENODATA);
	assert_cm_defaults(&pd);
	assert_int_equal(rpcrdma_cm_private_decode(data, 8, NULL), -EINVAL);

	/* All-zero padding only (a peer that sends no RFC 8797 data). */
	memset(data, 0, sizeof(data));
	assert_int_equal(cm_decode_exact(data, 56, &pd), -ENODATA);
	assert_cm_defaults(&pd);

	/* Foreign magic, byte-swapped magic, other versions. */
	memcpy(data, (const unsigned char[]){ 0xf6, 0xab, 0x0e, 0x19, 1, 1, 3, 7 }, 8);
	assert_int_equal(cm_decode_exact(data, 56, &pd), -ENODATA);
	assert_cm_defaults(&pd);
	memcpy(data, (const unsigned char[]){ 0x18, 0x0e, 0xab, 0xf6, 1, 1, 3, 7 }, 8);
	assert_int_equal(cm_decode_exact(data, 8, &pd), -ENODATA);
	assert_cm_defaults(&pd);
	memcpy(data, (const unsigned char[]){ 0xf6, 0xab, 0x0e, 0x18, 2, 1, 3, 7 }, 8);
	assert_int_equal(cm_decode_exact(data, 196, &pd), -ENODATA);
	assert_cm_defaults(&pd);
	data[4] = 0;
	assert_int_equal(cm_decode_exact(data, 8, &pd), -ENODATA);
	assert_cm_defaults(&pd);

	/* Unknown flag bits are ignored; sizes span 1 KiB .. 256 KiB. */
	memcpy(data, (const unsigned char[]){ 0xf6, 0xab, 0x0e, 0x18, 1, 0xfe, 0, 255 }, 8);
	assert_int_equal(cm_decode_exact(data, 8, &pd), 0);
	assert_int_equal(pd.flags, 0);
	assert_int_equal(pd.send_size, 1024);
	assert_int_equal(pd.recv_size, RPCRDMA_CM_MAX_INLINE);
	data[5] = 0xff;
	assert_int_equal(cm_decode_exact(data, 8, &pd), 0);
	assert_int_equal(pd.flags, RPCRDMA_CM_REMOTE_INVALIDATE);
}

static void test_cm_round_trip(void **state)
{
	struct rpcrdma_cm_private in, out;
	unsigned char buf[56];
	uint32_t kib;

	(void)state;
	for (kib = 1; kib <= 256; kib++) {
		memset(buf, 0, sizeof(buf));
		in = (struct rpcrdma_cm_private){ .send_size = kib << 10,
						  .recv_size = (257 - kib) << 10,
						  .flags = kib & 1 };
		assert_int_equal(rpcrdma_cm_private_encode(buf, sizeof(buf), &in),
				 RPCRDMA_CM_PRIVATE_LEN);
		assert_int_equal(cm_decode_exact(buf, sizeof(buf), &out), 0);
		assert_int_equal(out.send_size, in.send_size);
		assert_int_equal(out.recv_size, in.recv_size);
		assert_int_equal(out.flags, in.flags);
	}
}

/* rpcrdma_hdr_plain_fill() sets each field the general decode set, as it did. */
static void check_plain_fill(const struct rpcrdma_hdr *decoded, uint32_t xid, uint32_t credit)
{
	struct rpcrdma_hdr h;

	memset(&h, 0xa5, sizeof(h));
	rpcrdma_hdr_plain_fill(&h, xid, credit);
	assert_int_equal(h.xid, decoded->xid);
	assert_int_equal(h.vers, decoded->vers);
	assert_int_equal(h.credit, decoded->credit);
	assert_int_equal(h.proc, decoded->proc);
	assert_int_equal(h.hdr_len, decoded->hdr_len);
	assert_int_equal(h.err, decoded->err);
	assert_int_equal(h.vers_low, decoded->vers_low);
	assert_int_equal(h.vers_high, decoded->vers_high);
	assert_int_equal(h.read_segs, decoded->read_segs);
	assert_int_equal(h.read_chunks, decoded->read_chunks);
	assert_ptr_equal(h.read_list, decoded->read_list);
	assert_int_equal(h.write_chunks, decoded->write_chunks);
	assert_int_equal(h.has_reply, decoded->has_reply);
}

/* rpcrdma_hdr_plain_encode() writes what the general encoder writes, the header received. */
static void check_plain_encode(const unsigned char *received, uint32_t xid, uint32_t credit)
{
	const struct rpcrdma_hdr_enc enc = { .xid = xid, .credit = credit, .proc = RPCRDMA_MSG };
	unsigned char general[RPCRDMA_HDR_MIN_LEN], plain[RPCRDMA_HDR_MIN_LEN + 1];

	memset(plain, 0xa5, sizeof(plain));
	rpcrdma_hdr_plain_encode(plain, xid, credit);
	assert_int_equal(rpcrdma_hdr_encode(general, sizeof(general), &enc), RPCRDMA_HDR_MIN_LEN);
	assert_memory_equal(plain, general, RPCRDMA_HDR_MIN_LEN);
	assert_memory_equal(plain, received, RPCRDMA_HDR_MIN_LEN);
	assert_int_equal(plain[RPCRDMA_HDR_MIN_LEN], 0xa5);
}

/* rpcrdma_hdr_plain() on @len bytes at @b says what the general decode says of them. */
static void check_plain(const unsigned char *b, size_t len)
{
	uint32_t xid = 0, credit = 0;
	struct decoded d;
	bool plain, general;

	decode_exact(&d, b, len, NULL);
	plain = rpcrdma_hdr_plain(d.copy, len, &xid, &credit);
	general = d.rc == 0 && d.hdr.proc == RPCRDMA_MSG && d.hdr.hdr_len == RPCRDMA_HDR_MIN_LEN &&
		  !d.hdr.read_segs && !d.hdr.write_chunks && !d.hdr.has_reply;
	assert_int_equal(plain, general);
	if (plain) {
		check_plain_fill(&d.hdr, xid, credit);
		check_plain_encode(d.copy, xid, credit);
	}
	decoded_free(&d);
}

/*
 * The receive paths' shortcut for the commonest header agrees with the
 * general decode: every byte of a plain RDMA_MSG header changed to a few
 * values, every length around the header's, and random headers biased
 * towards valid ones.
 */
static void test_hdr_plain_agrees(void **state)
{
	static const unsigned char values[] = { 0x00, 0x01, 0x02, 0x03, 0x80, 0xff };
	unsigned char b[40] = {
		0x12, 0x34, 0x56, 0x78, 0, 0, 0, 1, 0, 0, 0, 32, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78,
	};
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	size_t i, v, len;

	(void)state;
	for (len = 0; len <= sizeof(b); len++)
		check_plain(b, len);
	for (i = 0; i < RPCRDMA_HDR_MIN_LEN; i++) {
		unsigned char was = b[i];

		for (v = 0; v < sizeof(values); v++) {
			b[i] = values[v];
			check_plain(b, 32);
			check_plain(b, RPCRDMA_HDR_MIN_LEN);
		}
		b[i] = was;
	}
	for (i = 0; i < 100000; i++) {
		unsigned char r[40];
		size_t j;

		for (j = 0; j < sizeof(r); j++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			/* Mostly zeros and small words: valid headers come up often. */
			r[j] = (seed & 7) ? 0 : (unsigned char)(seed >> 8) & (seed & 8 ? 3 : 0xff);
		}
		r[7] = (seed & 0x30) ? 1 : r[7];
		check_plain(r, 20 + (size_t)(seed >> 40) % 21);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_msg_chunkless),
		cmocka_unit_test(test_decode_list_combinations),
		cmocka_unit_test(test_decode_read_positions),
		cmocka_unit_test(test_decode_write_chunks),
		cmocka_unit_test(test_decode_reply_chunk_empty),
		cmocka_unit_test(test_decode_unaligned_buffer),
		cmocka_unit_test(test_decode_fields_zeroed),
		cmocka_unit_test(test_decode_bad_version),
		cmocka_unit_test(test_decode_unknown_proc),
		cmocka_unit_test(test_decode_msgp),
		cmocka_unit_test(test_decode_done),
		cmocka_unit_test(test_decode_error),
		cmocka_unit_test(test_decode_bad_discriminators),
		cmocka_unit_test(test_decode_truncated),
		cmocka_unit_test(test_caps_default),
		cmocka_unit_test(test_caps_custom),
		cmocka_unit_test(test_caps_ceiling),
		cmocka_unit_test(test_decode_huge_counts),
		cmocka_unit_test(test_decode_offset_wrap),
		cmocka_unit_test(test_decode_read_chunk_overflow),
		cmocka_unit_test(test_decode_bad_positions),
		cmocka_unit_test(test_decode_invalid_args),
		cmocka_unit_test(test_verdict),
		cmocka_unit_test(test_encode_exact_bytes),
		cmocka_unit_test(test_encode_too_small),
		cmocka_unit_test(test_encode_invalid),
		cmocka_unit_test(test_encode_at_ceiling),
		cmocka_unit_test(test_encode_unaligned_buffer),
		cmocka_unit_test(test_cm_encode),
		cmocka_unit_test(test_cm_encode_invalid),
		cmocka_unit_test(test_cm_decode),
		cmocka_unit_test(test_cm_round_trip),
		cmocka_unit_test(test_hdr_plain_agrees),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

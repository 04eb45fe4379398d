/* SPDX-License-Identifier: MIT */
/*
 * Differential test of the codec against rpcgen's XDR routines for the
 * RFC 8166 section 5 description in rpcrdma1.x: pseudo-random headers (fixed
 * seed) encoded by one side are decoded by the other and compared field by
 * field, and truncations that rpcgen cannot decode must be refused by ours.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rpc/rpc.h>
#include <rpcrdma/proto.h>

#include "rpcrdma1.h"

/*
 * Headers per direction; PROTO_DIFF_ITERATIONS lowers it (CI's memcheck
 * run, where every header costs fifty times as much, takes 4000).
 */
#define ITERATIONS_MAX 20000
static int iterations = ITERATIONS_MAX;
#define SEED 0x8166d1ffu

#define MAX_READ RPCRDMA_DEFAULT_MAX_READ_SEGS
#define MAX_CHUNKS RPCRDMA_DEFAULT_MAX_CHUNKS
#define MAX_SEGS RPCRDMA_DEFAULT_MAX_CHUNK_SEGS
/* The largest header within the default caps, with room to spare. */
#define BUF_LEN 8192

static uint64_t rng_state;

/* splitmix64: a fixed sequence, so any failure reproduces. */
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rnd_below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

/* A random header within the default caps. */
struct hspec {
	uint32_t xid, credit, proc;
	uint32_t err, vers_low, vers_high;
	uint32_t vers;		/* for ERR_VERS: the rdma_vers of the refused call */
	uint32_t nread;
	struct rpcrdma_read_segment read[MAX_READ];
	uint32_t nwrite;
	struct rpcrdma_chunk_desc write[MAX_CHUNKS];
	struct rpcrdma_segment wseg[MAX_CHUNKS][MAX_SEGS];
	int has_reply;
	struct rpcrdma_chunk_desc reply;
	struct rpcrdma_segment rseg[MAX_SEGS];
};

static struct rpcrdma_segment rnd_segment(uint32_t max_length)
{
	struct rpcrdma_segment s;

	s.handle = (uint32_t)rnd();
	s.length = (uint32_t)(rnd() % ((uint64_t)max_length + 1));
	switch (rnd_below(4)) {
	case 0:
		/* Offsets at the very top of the address space, not wrapping. */
		s.offset = UINT64_MAX - s.length - rnd_below(2);
		if (s.offset + s.length < s.offset)
			s.offset = UINT64_MAX - s.length;
		break;
	case 1:
		s.offset = rnd() & 0xfffff000u;
		break;
	default:
		s.offset = rnd();
		if (s.offset + s.length < s.offset)
			s.offset -= s.length;
		break;
	}
	return s;
}

static uint32_t rnd_count(uint32_t max)
{
	/* Small counts most of the time, the cap itself now and then. */
	switch (rnd_below(8)) {
	case 0:
		return 0;
	case 1:
		return max;
	default:
		return rnd_below(4) ? rnd_below(4) : rnd_below(max + 1);
	}
}

static void gen_read_list(struct hspec *h)
{
	uint32_t nchunks = rnd_count(MAX_CHUNKS);
	uint32_t pos = rnd_below(2) ? 0 : 4 * rnd_below(64);
	uint32_t c, i, n;

	h->nread = 0;
	for (c = 0; c < nchunks; c++) {
		n = 1 + rnd_below(MAX_SEGS);
		if (n > MAX_READ - h->nread)
			n = MAX_READ - h->nread;
		if (!n)
			break;
		/* Lengths below 2^24 keep each chunk's end below 2^32. */
		for (i = 0; i < n; i++) {
			h->read[h->nread].position = pos;
			h->read[h->nread].seg = rnd_segment(0xffffff);
			h->nread++;
		}
		pos += 4 * (1 + rnd_below(1 << 20));
	}
}

static void gen_chunk(struct rpcrdma_chunk_desc *desc, struct rpcrdma_segment *segs)
{
	uint32_t i;

	desc->nsegs = rnd_count(MAX_SEGS);
	desc->segs = segs;
	for (i = 0; i < desc->nsegs; i++)
		segs[i] = rnd_segment(UINT32_MAX);
}

static void gen_hspec(struct hspec *h)
{
	uint32_t c, kind = rnd_below(16);

	memset(h, 0, sizeof(*h));
	h->xid = (uint32_t)rnd();
	h->credit = rnd_below(2) ? rnd_below(256) : (uint32_t)rnd();
	if (kind < 7) {
		h->proc = RPCRDMA_MSG;
	} else if (kind < 14) {
		h->proc = RPCRDMA_NOMSG;
	} else {
		h->proc = RPCRDMA_ERROR;
		h->err = rnd_below(2) ? RPCRDMA_ERR_VERS : RPCRDMA_ERR_CHUNK;
		if (h->err == RPCRDMA_ERR_VERS) {
			h->vers_low = (uint32_t)rnd();
			h->vers_high = (uint32_t)rnd();
			/* The refused call's version: ours, or it could not be read back. */
			h->vers = RPCRDMA_VERSION;
		}
		return;
	}
	if (rnd_below(2))
		gen_read_list(h);
	if (rnd_below(2)) {
		h->nwrite = rnd_count(MAX_CHUNKS);
		for (c = 0; c < h->nwrite; c++)
			gen_chunk(&h->write[c], h->wseg[c]);
	}
	if (rnd_below(2)) {
		h->has_reply = 1;
		gen_chunk(&h->reply, h->rseg);
	}
}

static void hspec_enc(const struct hspec *h, struct rpcrdma_hdr_enc *enc)
{
	memset(enc, 0, sizeof(*enc));
	enc->xid = h->xid;
	enc->credit = h->credit;
	enc->proc = h->proc;
	enc->read_segs = h->nread;
	enc->read = h->read;
	enc->write_chunks = h->nwrite;
	enc->write = h->write;
	enc->reply = h->has_reply ? &h->reply : NULL;
	enc->err = h->err;
	enc->vers_low = h->vers_low;
	enc->vers_high = h->vers_high;
	enc->vers = h->vers;
}

/* rpcrdma_hdr_len() for @h's lists. */
static size_t hspec_len(const struct hspec *h)
{
	uint32_t i, wsegs = 0;

	for (i = 0; i < h->nwrite; i++)
		wsegs += h->write[i].nsegs;
	return rpcrdma_hdr_len(h->nread, h->nwrite, wsegs, h->has_reply,
			       h->has_reply ? h->reply.nsegs : 0);
}

/*
 * rpcgen's structure for @h. The list nodes and arrays live in @nodes and
 * point into @h: XDR_ENCODE only reads them, and nothing here is freed.
 */
struct x_nodes {
	x_read_list read[MAX_READ];
	x_write_list write[MAX_CHUNKS];
	x_write_chunk reply;
	x_rdma_segment wseg[MAX_CHUNKS][MAX_SEGS];
	x_rdma_segment rseg[MAX_SEGS];
};

static void x_segment(x_rdma_segment *x, const struct rpcrdma_segment *s)
{
	x->handle = s->handle;
	x->length = s->length;
	x->offset = s->offset;
}

static void x_chunk(x_write_chunk *x, x_rdma_segment *xsegs, const struct rpcrdma_chunk_desc *d)
{
	uint32_t i;

	for (i = 0; i < d->nsegs; i++)
		x_segment(&xsegs[i], &d->segs[i]);
	x->target.target_len = d->nsegs;
	x->target.target_val = xsegs;
}

static void hspec_x(const struct hspec *h, x_rdma_msg *msg, struct x_nodes *nodes)
{
	x_rpc_rdma_header *body;
	uint32_t i;

	memset(msg, 0, sizeof(*msg));
	msg->rdma_xid = h->xid;
	msg->rdma_vers = RPCRDMA_VERSION;
	msg->rdma_credit = h->credit;
	msg->rdma_body.proc = (x_rdma_proc)h->proc;
	if (h->proc == RPCRDMA_ERROR) {
		x_rpc_rdma_error *e = &msg->rdma_body.x_rpc_rdma_body_u.rdma_error;

		e->err = (x_rpc_rdma_errcode)h->err;
		e->x_rpc_rdma_error_u.range.rdma_vers_low = h->vers_low;
		e->x_rpc_rdma_error_u.range.rdma_vers_high = h->vers_high;
		return;
	}
	/* RDMA_MSG and RDMA_NOMSG have the same members in the same order. */
	body = &msg->rdma_body.x_rpc_rdma_body_u.rdma_msg;
	for (i = 0; i < h->nread; i++) {
		nodes->read[i].entry.position = h->read[i].position;
		x_segment(&nodes->read[i].entry.target, &h->read[i].seg);
		nodes->read[i].next = i + 1 < h->nread ? &nodes->read[i + 1] : NULL;
	}
	body->rdma_reads = h->nread ? &nodes->read[0] : NULL;
	for (i = 0; i < h->nwrite; i++) {
		x_chunk(&nodes->write[i].entry, nodes->wseg[i], &h->write[i]);
		nodes->write[i].next = i + 1 < h->nwrite ? &nodes->write[i + 1] : NULL;
	}
	body->rdma_writes = h->nwrite ? &nodes->write[0] : NULL;
	if (h->has_reply) {
		x_chunk(&nodes->reply, nodes->rseg, &h->reply);
		body->rdma_reply = &nodes->reply;
	}
}

static const x_rpc_rdma_header *x_lists(const x_rdma_msg *msg)
{
	const x_rpc_rdma_body *b = &msg->rdma_body;

	if (b->proc == X_RDMA_NOMSG)
		return (const x_rpc_rdma_header *)&b->x_rpc_rdma_body_u.rdma_nomsg;
	return &b->x_rpc_rdma_body_u.rdma_msg;
}

static void assert_x_segment(const x_rdma_segment *x, const struct rpcrdma_segment *s)
{
	assert_int_equal(x->handle, s->handle);
	assert_int_equal(x->length, s->length);
	assert_int_equal(x->offset, s->offset);
}

/* (a) rpcgen's decode of our encoding against the encoder's input. */
static void compare_x_with_hspec(const x_rdma_msg *msg, const struct hspec *h)
{
	const x_rpc_rdma_header *l;
	const x_read_list *r;
	const x_write_list *w;
	uint32_t i, c;

	assert_int_equal(msg->rdma_xid, h->xid);
	/* ERR_VERS carries the refused message's version (RFC 8166 4.5). */
	assert_int_equal(msg->rdma_vers, h->proc == RPCRDMA_ERROR && h->err == RPCRDMA_ERR_VERS ?
			 h->vers : RPCRDMA_VERSION);
	assert_int_equal(msg->rdma_credit, h->credit);
	assert_int_equal(msg->rdma_body.proc, h->proc);
	if (h->proc == RPCRDMA_ERROR) {
		const x_rpc_rdma_error *e = &msg->rdma_body.x_rpc_rdma_body_u.rdma_error;

		assert_int_equal(e->err, h->err);
		if (h->err == RPCRDMA_ERR_VERS) {
			assert_int_equal(e->x_rpc_rdma_error_u.range.rdma_vers_low, h->vers_low);
			assert_int_equal(e->x_rpc_rdma_error_u.range.rdma_vers_high, h->vers_high);
		}
		return;
	}
	l = x_lists(msg);
	for (r = l->rdma_reads, i = 0; r; r = r->next, i++) {
		assert_true(i < h->nread);
		assert_int_equal(r->entry.position, h->read[i].position);
		assert_x_segment(&r->entry.target, &h->read[i].seg);
	}
	assert_int_equal(i, h->nread);
	for (w = l->rdma_writes, c = 0; w; w = w->next, c++) {
		assert_true(c < h->nwrite);
		assert_int_equal(w->entry.target.target_len, h->write[c].nsegs);
		for (i = 0; i < h->write[c].nsegs; i++)
			assert_x_segment(&w->entry.target.target_val[i], &h->write[c].segs[i]);
	}
	assert_int_equal(c, h->nwrite);
	if (!h->has_reply) {
		assert_null(l->rdma_reply);
		return;
	}
	assert_non_null(l->rdma_reply);
	assert_int_equal(l->rdma_reply->target.target_len, h->reply.nsegs);
	for (i = 0; i < h->reply.nsegs; i++)
		assert_x_segment(&l->rdma_reply->target.target_val[i], &h->reply.segs[i]);
}

static void compare_chunk_with_x(const struct rpcrdma_chunk *chunk, const x_write_chunk *x)
{
	struct rpcrdma_segment seg;
	uint64_t total = 0;
	uint32_t i;

	assert_int_equal(chunk->nsegs, x->target.target_len);
	for (i = 0; i < chunk->nsegs; i++) {
		rpcrdma_chunk_segment(chunk, i, &seg);
		assert_x_segment(&x->target.target_val[i], &seg);
		total += seg.length;
	}
	assert_int_equal(chunk->total, total);
}

/* (b) our decode of rpcgen's encoding against rpcgen's structure. */
static void compare_hdr_with_x(const struct rpcrdma_hdr *hdr, const x_rdma_msg *msg)
{
	const x_rpc_rdma_header *l;
	struct rpcrdma_read_segment rs;
	const x_read_list *r;
	const x_write_list *w;
	uint32_t i, chunks = 0, prev = 0;

	assert_int_equal(hdr->xid, msg->rdma_xid);
	assert_int_equal(hdr->vers, msg->rdma_vers);
	assert_int_equal(hdr->credit, msg->rdma_credit);
	assert_int_equal(hdr->proc, msg->rdma_body.proc);
	if (msg->rdma_body.proc == X_RDMA_ERROR) {
		const x_rpc_rdma_error *e = &msg->rdma_body.x_rpc_rdma_body_u.rdma_error;
		const x_rpc_rdma_errvers *range = &e->x_rpc_rdma_error_u.range;

		assert_int_equal(hdr->err, e->err);
		if (e->err == X_ERR_VERS) {
			assert_int_equal(hdr->vers_low, range->rdma_vers_low);
			assert_int_equal(hdr->vers_high, range->rdma_vers_high);
		}
		return;
	}
	if (msg->rdma_body.proc == X_RDMA_DONE)
		return;
	l = x_lists(msg);
	for (r = l->rdma_reads, i = 0; r; r = r->next, i++) {
		assert_true(i < hdr->read_segs);
		rpcrdma_hdr_read_segment(hdr, i, &rs);
		assert_int_equal(rs.position, r->entry.position);
		assert_x_segment(&r->entry.target, &rs.seg);
		if (i == 0 || r->entry.position != prev)
			chunks++;
		prev = r->entry.position;
	}
	assert_int_equal(hdr->read_segs, i);
	assert_int_equal(hdr->read_chunks, chunks);
	for (w = l->rdma_writes, i = 0; w; w = w->next, i++) {
		assert_true(i < hdr->write_chunks);
		compare_chunk_with_x(&hdr->write[i], &w->entry);
	}
	assert_int_equal(hdr->write_chunks, i);
	assert_int_equal(hdr->has_reply, l->rdma_reply != NULL);
	if (l->rdma_reply)
		compare_chunk_with_x(&hdr->reply, l->rdma_reply);
}

/* rpcgen's decode of @len bytes; returns whether it succeeded. */
static int x_decode(const unsigned char *buf, size_t len, x_rdma_msg *msg, u_int *used)
{
	XDR xdrs;
	int ok;

	memset(msg, 0, sizeof(*msg));
	xdrmem_create(&xdrs, (char *)(uintptr_t)buf, (u_int)len, XDR_DECODE);
	ok = xdr_x_rdma_msg(&xdrs, msg);
	if (used)
		*used = xdr_getpos(&xdrs);
	xdr_destroy(&xdrs);
	return ok;
}

static void x_free(x_rdma_msg *msg)
{
	xdr_free((xdrproc_t)xdr_x_rdma_msg, (char *)msg);
}

static int x_encode(x_rdma_msg *msg, unsigned char *buf, size_t len, u_int *used)
{
	XDR xdrs;
	int ok;

	xdrmem_create(&xdrs, (char *)buf, (u_int)len, XDR_ENCODE);
	ok = xdr_x_rdma_msg(&xdrs, msg);
	*used = xdr_getpos(&xdrs);
	xdr_destroy(&xdrs);
	return ok;
}

static int decode_exact(const unsigned char *bytes, size_t len, struct rpcrdma_hdr *hdr,
			unsigned char **copy)
{
	*copy = malloc(len ? len : 1);
	assert_non_null(*copy);
	memcpy(*copy, bytes, len);
	return rpcrdma_hdr_decode(*copy, len, NULL, hdr);
}

struct diff_state {
	struct hspec h;
	struct x_nodes nodes;
	unsigned char ours[BUF_LEN];
	unsigned char theirs[BUF_LEN];
};

static void test_ours_to_rpcgen(void **state)
{
	struct diff_state *st = *state;
	struct rpcrdma_hdr_enc enc;
	x_rdma_msg msg;
	u_int used;
	long n;
	int i;

	rng_state = SEED;
	for (i = 0; i < iterations; i++) {
		gen_hspec(&st->h);
		hspec_enc(&st->h, &enc);
		n = rpcrdma_hdr_encode(st->ours, sizeof(st->ours), &enc);
		assert_true(n >= 20);
		assert_int_equal(n, rpcrdma_hdr_encoded_len(&enc));
		if (st->h.proc != RPCRDMA_ERROR)
			assert_int_equal(n, hspec_len(&st->h));
		assert_true(x_decode(st->ours, (size_t)n, &msg, &used));
		assert_int_equal(used, n);
		compare_x_with_hspec(&msg, &st->h);
		x_free(&msg);
	}
}

static void test_rpcgen_to_ours(void **state)
{
	struct diff_state *st = *state;
	struct rpcrdma_hdr_enc enc;
	struct rpcrdma_hdr hdr;
	unsigned char *copy;
	x_rdma_msg msg;
	u_int used;
	long n;
	int i;

	rng_state = SEED ^ 0x5a5a5a5au;
	for (i = 0; i < iterations; i++) {
		gen_hspec(&st->h);
		hspec_x(&st->h, &msg, &st->nodes);
		assert_true(x_encode(&msg, st->theirs, sizeof(st->theirs), &used));
		assert_int_equal(decode_exact(st->theirs, used, &hdr, &copy), 0);
		assert_int_equal(hdr.hdr_len, used);
		compare_hdr_with_x(&hdr, &msg);
		assert_int_equal(rpcrdma_hdr_verdict(0, &hdr),
				 st->h.proc == RPCRDMA_ERROR ? RPCRDMA_DROP : RPCRDMA_ACCEPT);
		free(copy);

		/* Both encoders produce the same bytes. */
		hspec_enc(&st->h, &enc);
		n = rpcrdma_hdr_encode(st->ours, sizeof(st->ours), &enc);
		assert_int_equal(n, used);
		assert_memory_equal(st->ours, st->theirs, used);
	}
}

/* Whatever rpcgen cannot decode for lack of bytes, ours refuses too. */
static void test_truncations(void **state)
{
	struct diff_state *st = *state;
	struct rpcrdma_hdr_enc enc;
	struct rpcrdma_hdr hdr;
	unsigned char *copy;
	x_rdma_msg msg;
	size_t cut, step;
	int i, rc;
	long n;

	rng_state = SEED ^ 0xc0ffeeu;
	for (i = 0; i < iterations / 10; i++) {
		gen_hspec(&st->h);
		hspec_enc(&st->h, &enc);
		n = rpcrdma_hdr_encode(st->ours, sizeof(st->ours), &enc);
		assert_true(n > 0);
		/* Every cut of small headers, a sample of large ones. */
		step = n > 256 ? 1 + rnd_below(13) : 1;
		for (cut = 0; cut < (size_t)n; cut += step) {
			assert_false(x_decode(st->ours, cut, &msg, NULL));
			x_free(&msg);
			rc = decode_exact(st->ours, cut, &hdr, &copy);
			assert_int_equal(rc, cut < RPCRDMA_HDR_FIXED_LEN ? -ENODATA : -EMSGSIZE);
			free(copy);
		}
	}
}

/* RDMA_MSGP and RDMA_DONE, which our encoder refuses, from rpcgen's. */
static void test_deprecated_procs(void **state)
{
	struct diff_state *st = *state;
	x_rpc_rdma_header_padded *p;
	x_rpc_rdma_header lists;
	struct rpcrdma_hdr hdr;
	unsigned char *copy;
	x_rdma_msg msg;
	u_int used;
	int i;

	rng_state = SEED ^ 0xd0e;
	for (i = 0; i < 1000; i++) {
		gen_hspec(&st->h);
		st->h.proc = RPCRDMA_NOMSG;
		hspec_x(&st->h, &msg, &st->nodes);
		/* Move the lists into the padded body. */
		lists = msg.rdma_body.x_rpc_rdma_body_u.rdma_msg;
		msg.rdma_body.proc = X_RDMA_MSGP;
		p = &msg.rdma_body.x_rpc_rdma_body_u.rdma_msgp;
		p->rdma_align = 4096;
		p->rdma_thresh = 1024;
		p->rdma_reads = lists.rdma_reads;
		p->rdma_writes = lists.rdma_writes;
		p->rdma_reply = lists.rdma_reply;
		assert_true(x_encode(&msg, st->theirs, sizeof(st->theirs), &used));
		assert_int_equal(decode_exact(st->theirs, used, &hdr, &copy), -EOPNOTSUPP);
		assert_int_equal(hdr.xid, st->h.xid);
		assert_int_equal(rpcrdma_hdr_verdict(-EOPNOTSUPP, &hdr), RPCRDMA_REPLY_ERR_CHUNK);
		free(copy);

		msg.rdma_body.proc = X_RDMA_DONE;
		assert_true(x_encode(&msg, st->theirs, sizeof(st->theirs), &used));
		assert_int_equal(used, RPCRDMA_HDR_FIXED_LEN);
		assert_int_equal(decode_exact(st->theirs, used, &hdr, &copy), 0);
		compare_hdr_with_x(&hdr, &msg);
		assert_int_equal(hdr.hdr_len, RPCRDMA_HDR_FIXED_LEN);
		assert_int_equal(rpcrdma_hdr_verdict(0, &hdr), RPCRDMA_DROP);
		free(copy);
	}
}

static int setup(void **state)
{
	*state = calloc(1, sizeof(struct diff_state));
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

int main(void)
{
	const char *env = getenv("PROTO_DIFF_ITERATIONS");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ours_to_rpcgen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rpcgen_to_ours, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deprecated_procs, setup, teardown),
	};

	if (env) {
		long n = strtol(env, NULL, 10);

		if (n < 100 || n > ITERATIONS_MAX) {
			fprintf(stderr, "PROTO_DIFF_ITERATIONS: 100 to %d\n", ITERATIONS_MAX);
			return 1;
		}
		iterations = (int)n;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}

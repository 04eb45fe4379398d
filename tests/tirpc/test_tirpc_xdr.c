/* SPDX-License-Identifier: MIT */
/*
 * The adapters' XDR streams against libtirpc's own routines: what the
 * encoder leaves out and where, what the splicing decoder puts back, and
 * how the DDP-result decoder serves a result from the caller's buffer; and
 * the reply headers of tirpc_msg.c, byte for byte as xdr_replymsg().
 *
 * The sanitizers intercept libtirpc's xdr_* entry points by name; a call
 * that only they provide would let the linker drop libtirpc (--as-needed),
 * so the test also uses xdr_free(), which they do not intercept.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "tirpc_msg.h"
#include "tirpc_xdr.h"

static void fill(char *p, size_t n, int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (char)(i * 3 + (size_t)seed);
}

/* An int, 5 opaque bytes (watched), an int, 8 opaque bytes (watched), an int. */
static void test_enc_leaves_payloads_out(void **state)
{
	char buf[128], p1[5], p2[8], *pp1 = p1, *pp2 = p2;
	u_int l1 = sizeof(p1), l2 = sizeof(p2);
	struct tirpc_ddp ddp[2] = { { .buf = p1, .len = 5 }, { .buf = p2, .len = 8 } };
	struct tirpc_xdr_enc enc;
	int a = 1, b = 2, c = 3;
	uint32_t w;
	XDR x;

	fill(p1, sizeof(p1), 1);
	fill(p2, sizeof(p2), 2);
	tirpc_xdr_enc_create(&x, &enc, buf, sizeof(buf), ddp, 2);
	assert_true(xdr_int(&x, &a));
	assert_true(xdr_bytes(&x, &pp1, &l1, 100));
	assert_true(xdr_int(&x, &b));
	assert_true(xdr_bytes(&x, &pp2, &l2, 100));
	assert_true(xdr_int(&x, &c));
	/* a, len 5, b, len 8, c: the data and the padding after the 5 bytes are out. */
	assert_int_equal(enc.pos, 20);
	assert_true(ddp[0].found);
	assert_int_equal(ddp[0].pos, 8);
	assert_true(ddp[1].found);
	assert_int_equal(ddp[1].pos, 16);
	memcpy(&w, buf + 12, 4);
	assert_int_equal(ntohl(w), 8);
	memcpy(&w, buf + 16, 4);
	assert_int_equal(ntohl(w), 3);
}

/* Same bytes at another address, or another length: encoded like any bytes. */
static void test_enc_exact_match_only(void **state)
{
	char buf[64], p[8], copy[8], *pc = copy;
	u_int len = sizeof(copy);
	struct tirpc_ddp ddp = { .buf = p, .len = 8 };
	struct tirpc_xdr_enc enc;
	XDR x;

	char ref[64];
	XDR mem;

	fill(p, sizeof(p), 4);
	memcpy(copy, p, sizeof(p));
	tirpc_xdr_enc_create(&x, &enc, buf, sizeof(buf), &ddp, 1);
	assert_true(xdr_bytes(&x, &pc, &len, 100));
	assert_false(ddp.found);
	assert_int_equal(enc.pos, 12);
	/* Byte for byte what xdrmem encodes. */
	xdrmem_create(&mem, ref, sizeof(ref), XDR_ENCODE);
	assert_true(xdr_bytes(&mem, &pc, &len, 100));
	assert_int_equal(XDR_GETPOS(&mem), 12);
	assert_memory_equal(buf, ref, 12);
	/* And a buffer too small fails the encoding instead of overflowing. */
	tirpc_xdr_enc_create(&x, &enc, buf, 8, NULL, 0);
	assert_false(xdr_bytes(&x, &pc, &len, 100));
}

/* The message of the first test, decoded with its payloads spliced back. */
static void test_splice_restores(void **state)
{
	char msg[20], p1[5], p2[8], *o1 = NULL, *o2 = NULL;
	struct tirpc_splice parts[2];
	struct tirpc_xdr_splice sp;
	uint32_t words[5] = { htonl(1), htonl(5), htonl(2), htonl(8), htonl(3) };
	u_int l1 = 0, l2 = 0;
	int a = 0, b = 0, c = 0;
	XDR x;

	memcpy(msg, words, sizeof(words));
	fill(p1, sizeof(p1), 1);
	fill(p2, sizeof(p2), 2);
	parts[0] = (struct tirpc_splice){ .data = (unsigned char *)p1, .len = 5, .pos = 8 };
	parts[1] = (struct tirpc_splice){ .data = (unsigned char *)p2, .len = 8, .pos = 16 };
	tirpc_xdr_splice_create(&x, &sp, msg, sizeof(msg), parts, 2);
	assert_int_equal(sp.total, 20 + 8 + 8);
	assert_true(xdr_int(&x, &a));
	assert_true(xdr_bytes(&x, &o1, &l1, 100));
	assert_true(xdr_int(&x, &b));
	assert_true(xdr_bytes(&x, &o2, &l2, 100));
	assert_true(xdr_int(&x, &c));
	assert_int_equal(a, 1);
	assert_int_equal(b, 2);
	assert_int_equal(c, 3);
	assert_int_equal(l1, 5);
	assert_memory_equal(o1, p1, 5);
	assert_int_equal(l2, 8);
	assert_memory_equal(o2, p2, 8);
	assert_int_equal(XDR_GETPOS(&x), 36);
	/* Nothing past the end. */
	assert_false(xdr_int(&x, &a));
	/* Positions are logical: back to the second int. */
	assert_true(XDR_SETPOS(&x, 16));
	assert_true(xdr_int(&x, &b));
	assert_int_equal(b, 2);
	free(o1);
	free(o2);
	/* An argument structure freed the libtirpc way, as svc_freeargs() does. */
	o1 = strdup("abc");
	assert_non_null(o1);
	xdr_free((xdrproc_t)xdr_wrapstring, (char *)&o1);
	assert_null(o1);
}

/* A destination that is the payload itself is not copied onto itself. */
static void test_splice_in_place(void **state)
{
	uint32_t words[2] = { htonl(6), htonl(9) };
	unsigned char p[6] = { 1, 2, 3, 4, 5, 6 };
	struct tirpc_splice part = { .data = p, .len = 6, .pos = 4 };
	struct tirpc_xdr_splice sp;
	char *dst = (char *)p;
	u_int len = 0;
	int v = 0;
	XDR x;

	tirpc_xdr_splice_create(&x, &sp, words, sizeof(words), &part, 1);
	assert_true(xdr_bytes(&x, &dst, &len, 100));
	assert_ptr_equal(dst, p);
	assert_int_equal(len, 6);
	assert_true(xdr_int(&x, &v));
	assert_int_equal(v, 9);
}

/* A reply whose result went to the caller's buffer. */
static void test_result_served(void **state)
{
	uint32_t words[3] = { htonl(7), htonl(10), htonl(42) };
	char result[10], *dst = NULL, *in_place = result;
	struct tirpc_xdr_result rs;
	u_int len = 0;
	int a = 0, b = 0;
	XDR x;

	fill(result, sizeof(result), 9);
	tirpc_xdr_result_create(&x, &rs, words, sizeof(words), result, sizeof(result), 0);
	assert_true(xdr_int(&x, &a));
	assert_true(xdr_bytes(&x, &dst, &len, 100));
	assert_true(xdr_int(&x, &b));
	assert_int_equal(a, 7);
	assert_int_equal(len, 10);
	assert_memory_equal(dst, result, 10);
	assert_int_equal(b, 42);
	free(dst);

	/* In place: the destination is the result buffer. */
	tirpc_xdr_result_create(&x, &rs, words, sizeof(words), result, sizeof(result), 0);
	assert_true(xdr_int(&x, &a));
	assert_true(xdr_bytes(&x, &in_place, &len, 100));
	assert_ptr_equal(in_place, result);
	assert_true(xdr_int(&x, &b));
	assert_int_equal(b, 42);

	/* Nothing written (result_len 0): everything comes from the message. */
	tirpc_xdr_result_create(&x, &rs, words, sizeof(words), result, 0, 0);
	assert_true(xdr_int(&x, &a));
	assert_true(xdr_int(&x, &a));
	assert_int_equal(a, 10);
}

/* A reply of @stat, accepted (@astat) or denied, with a verifier of @vlen bytes. */
static void reply_of(struct rpc_msg *m, enum reply_stat stat, enum accept_stat astat,
		     char *verf, u_int vlen, int *result)
{
	memset(m, 0, sizeof(*m));
	m->rm_xid = 0x01020304;
	m->rm_direction = REPLY;
	m->rm_reply.rp_stat = stat;
	if (stat == MSG_ACCEPTED) {
		m->acpted_rply.ar_verf.oa_flavor = vlen ? AUTH_SYS : AUTH_NONE;
		m->acpted_rply.ar_verf.oa_base = vlen ? verf : NULL;
		m->acpted_rply.ar_verf.oa_length = vlen;
		m->acpted_rply.ar_stat = astat;
		if (astat == PROG_MISMATCH) {
			/* ar_vers shares its place with ar_results. */
			m->acpted_rply.ar_vers.low = 2;
			m->acpted_rply.ar_vers.high = 4;
		} else {
			m->acpted_rply.ar_results.where = (caddr_t)result;
			m->acpted_rply.ar_results.proc = (xdrproc_t)xdr_int;
		}
	} else {
		m->rjcted_rply.rj_stat = AUTH_ERROR;
		m->rjcted_rply.rj_why = AUTH_TOOWEAK;
	}
}

/* Encoded by tirpc_encode_replymsg(): the bytes of xdr_replymsg(), or the same failure. */
static void assert_encodes_alike(struct rpc_msg *m, u_int room)
{
	char ours[128], theirs[128];
	struct tirpc_xdr_enc enc;
	bool_t a, b;
	XDR x, y;

	memset(ours, 0x5a, sizeof(ours));
	memset(theirs, 0x5a, sizeof(theirs));
	tirpc_xdr_enc_create(&x, &enc, ours, room, NULL, 0);
	xdrmem_create(&y, theirs, room, XDR_ENCODE);
	a = tirpc_encode_replymsg(&x, m);
	b = xdr_replymsg(&y, m);
	assert_int_equal(a, b);
	if (a) {
		assert_int_equal(enc.pos, xdr_getpos(&y));
		assert_memory_equal(ours, theirs, enc.pos);
	}
	/* On xdrmem too, the other stream the adapters encode replies on. */
	memset(ours, 0x5a, sizeof(ours));
	xdrmem_create(&x, ours, room, XDR_ENCODE);
	assert_int_equal(tirpc_encode_replymsg(&x, m), b);
	if (b)
		assert_memory_equal(ours, theirs, xdr_getpos(&y));
}

static void test_replymsg_encode(void **state)
{
	char verf[MAX_AUTH_BYTES + 4];
	struct rpc_msg m;
	int result = 42;

	fill(verf, sizeof(verf), 9);
	reply_of(&m, MSG_ACCEPTED, SUCCESS, verf, 0, &result);
	assert_encodes_alike(&m, 128);
	assert_encodes_alike(&m, 27);		/* no room for the result */
	assert_encodes_alike(&m, 23);		/* no room for the header */
	reply_of(&m, MSG_ACCEPTED, SUCCESS, verf, 5, &result);	/* padded */
	assert_encodes_alike(&m, 128);
	reply_of(&m, MSG_ACCEPTED, SUCCESS, verf, 8, &result);
	assert_encodes_alike(&m, 128);
	reply_of(&m, MSG_ACCEPTED, SUCCESS, verf, MAX_AUTH_BYTES + 1, &result);	/* refused alike */
	assert_encodes_alike(&m, 128);
	reply_of(&m, MSG_ACCEPTED, PROG_MISMATCH, verf, 0, &result);
	assert_encodes_alike(&m, 128);
	reply_of(&m, MSG_ACCEPTED, GARBAGE_ARGS, verf, 8, &result);
	assert_encodes_alike(&m, 128);
	reply_of(&m, MSG_DENIED, SUCCESS, verf, 0, &result);
	assert_encodes_alike(&m, 128);
}

/* Decoded by tirpc_decode_replymsg() as by xdr_replymsg(), from @len bytes of @wire. */
static void assert_decodes_alike(const char *wire, u_int len)
{
	struct rpc_msg a, b;
	int ra = -1, rb = -1;
	bool_t oka, okb;
	XDR x, y;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.acpted_rply.ar_results.where = (caddr_t)&ra;
	a.acpted_rply.ar_results.proc = (xdrproc_t)xdr_int;
	b.acpted_rply.ar_results.where = (caddr_t)&rb;
	b.acpted_rply.ar_results.proc = (xdrproc_t)xdr_int;
	xdrmem_create(&x, (char *)wire, len, XDR_DECODE);
	xdrmem_create(&y, (char *)wire, len, XDR_DECODE);
	oka = tirpc_decode_replymsg(&x, &a);
	okb = xdr_replymsg(&y, &b);
	assert_int_equal(oka, okb);
	if (okb) {
		assert_int_equal(xdr_getpos(&x), xdr_getpos(&y));
		assert_int_equal(a.rm_xid, b.rm_xid);
		assert_int_equal(a.rm_reply.rp_stat, b.rm_reply.rp_stat);
		assert_int_equal(ra, rb);
		if (b.rm_reply.rp_stat == MSG_ACCEPTED) {
			assert_int_equal(a.acpted_rply.ar_stat, b.acpted_rply.ar_stat);
			assert_int_equal(a.acpted_rply.ar_verf.oa_flavor,
					 b.acpted_rply.ar_verf.oa_flavor);
			assert_int_equal(a.acpted_rply.ar_verf.oa_length,
					 b.acpted_rply.ar_verf.oa_length);
			if (b.acpted_rply.ar_verf.oa_length)
				assert_memory_equal(a.acpted_rply.ar_verf.oa_base,
						    b.acpted_rply.ar_verf.oa_base,
						    b.acpted_rply.ar_verf.oa_length);
		}
	}
	x.x_op = XDR_FREE;
	y.x_op = XDR_FREE;
	xdr_opaque_auth(&x, &a.acpted_rply.ar_verf);
	xdr_opaque_auth(&y, &b.acpted_rply.ar_verf);
}

static void test_replymsg_decode(void **state)
{
	char verf[8], wire[128];
	struct rpc_msg m;
	int result = 42;
	XDR x;
	u_int len, cut;

	fill(verf, sizeof(verf), 3);
	reply_of(&m, MSG_ACCEPTED, SUCCESS, verf, 0, &result);
	xdrmem_create(&x, wire, sizeof(wire), XDR_ENCODE);
	assert_true(xdr_replymsg(&x, &m));
	len = xdr_getpos(&x);
	/* Whole, and cut anywhere: the same answer. */
	for (cut = 0; cut <= len; cut++)
		assert_decodes_alike(wire, cut);
	/* A verifier: the general path, which allocates its body. */
	reply_of(&m, MSG_ACCEPTED, SUCCESS, verf, 8, &result);
	xdrmem_create(&x, wire, sizeof(wire), XDR_ENCODE);
	assert_true(xdr_replymsg(&x, &m));
	assert_decodes_alike(wire, xdr_getpos(&x));
	reply_of(&m, MSG_ACCEPTED, PROG_MISMATCH, verf, 0, &result);
	xdrmem_create(&x, wire, sizeof(wire), XDR_ENCODE);
	assert_true(xdr_replymsg(&x, &m));
	assert_decodes_alike(wire, xdr_getpos(&x));
	reply_of(&m, MSG_DENIED, SUCCESS, verf, 0, &result);
	xdrmem_create(&x, wire, sizeof(wire), XDR_ENCODE);
	assert_true(xdr_replymsg(&x, &m));
	assert_decodes_alike(wire, xdr_getpos(&x));
	/* A call, not a reply. */
	m.rm_direction = CALL;
	xdrmem_create(&x, wire, sizeof(wire), XDR_ENCODE);
	assert_true(xdr_u_int32_t(&x, &m.rm_xid));
	assert_true(xdr_enum(&x, (enum_t *)&m.rm_direction));
	memset(wire + 8, 0, 40);
	assert_decodes_alike(wire, 48);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enc_leaves_payloads_out),
		cmocka_unit_test(test_enc_exact_match_only),
		cmocka_unit_test(test_splice_restores),
		cmocka_unit_test(test_splice_in_place),
		cmocka_unit_test(test_result_served),
		cmocka_unit_test(test_replymsg_encode),
		cmocka_unit_test(test_replymsg_decode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * A raw peer sends the server malformed transport headers of every defect
 * class the codec distinguishes; each is answered with ERR_VERS, answered
 * with ERR_CHUNK, or dropped, as RFC 8166 says, and the server keeps serving
 * that peer and another client.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <rpcrdma/proto.h>
#include <softrdma.h>

#include "harness.h"
#include "rawpeer.h"

enum expect { EXPECT_DROP, EXPECT_ERR_VERS, EXPECT_ERR_CHUNK, EXPECT_ECHO };

struct vec {
	const char *name;
	unsigned char buf[2048];
	size_t len;
	enum expect expect;
};

static size_t put(unsigned char *buf, size_t off, uint32_t v)
{
	v = htonl(v);
	memcpy(buf + off, &v, 4);
	return off + 4;
}

/* xid, vers, credit, proc; then the given words. */
static void build(struct vec *v, const char *name, enum expect expect, uint32_t xid,
		  uint32_t vers, uint32_t proc, const uint32_t *words, size_t nwords)
{
	size_t off = 0, i;

	memset(v, 0, sizeof(*v));
	v->name = name;
	v->expect = expect;
	off = put(v->buf, off, xid);
	off = put(v->buf, off, vers);
	off = put(v->buf, off, 8);
	off = put(v->buf, off, proc);
	for (i = 0; i < nwords; i++)
		off = put(v->buf, off, words[i]);
	v->len = off;
}

/* Append an RPC call: a call's head with @xid (rpcmsg.h), then @extra bytes. */
static void body(struct vec *v, uint32_t xid, size_t extra)
{
	rpcmsg_call_head(v->buf + v->len, xid);
	v->len += RPCMSG_HEAD;
	memset(v->buf + v->len, 0x5a, extra);
	v->len += extra;
}

static uint32_t get(const unsigned char *p, size_t i)
{
	uint32_t w;

	memcpy(&w, p + 4 * i, 4);
	return ntohl(w);
}

static void check_answer(struct rawpeer *rp, const struct vec *v, uint32_t xid)
{
	unsigned char reply[RAWPEER_BUF];
	int n;

	n = rawpeer_recv(rp, reply, sizeof(reply), v->expect == EXPECT_DROP ? 150 : 3000);
	switch (v->expect) {
	case EXPECT_DROP:
		if (n != -ETIMEDOUT)
			fail_msg("%s: expected no answer, got %d bytes", v->name, n);
		break;
	case EXPECT_ERR_VERS:
		/* It carries the refused message's rdma_vers (RFC 8166 4.5). */
		if (n != 28 || get(reply, 0) != xid || get(reply, 1) != get(v->buf, 1) ||
		    get(reply, 3) != 4 || get(reply, 4) != 1 || get(reply, 5) != 1 ||
		    get(reply, 6) != 1)
			fail_msg("%s: expected ERR_VERS(1,1) for 0x%x, got %d bytes", v->name, xid,
				 n);
		assert_true(get(reply, 2) >= 1);
		break;
	case EXPECT_ERR_CHUNK:
		if (n != 20 || get(reply, 0) != xid || get(reply, 1) != 1 || get(reply, 3) != 4 ||
		    get(reply, 4) != 2)
			fail_msg("%s: expected ERR_CHUNK for 0x%x, got %d bytes", v->name, xid, n);
		assert_true(get(reply, 2) >= 1);
		break;
	case EXPECT_ECHO:
		if (n != (int)v->len || get(reply, 0) != xid || get(reply, 1) != 1 ||
		    get(reply, 3) != 0 || !rpcmsg_echoes(reply + 28, v->buf + 28, v->len - 28))
			fail_msg("%s: expected an echo, got %d bytes", v->name, n);
		break;
	}
}

static void t_every_defect_class(void **state)
{
	static struct vec vecs[32];
	struct harness_server hs;
	struct rawpeer rp;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *clnt;
	unsigned char pd[RPCRDMA_CM_PRIVATE_LEN];
	struct rpcrdma_cm_private mine = { 4096, 4096, 0 };
	unsigned char msg[64], reply[64];
	uint32_t empty3[] = { 0, 0, 0 };
	size_t n = 0, i, rlen;

	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_ECHO), 0);
	assert_int_equal(rpcrdma_cm_private_encode(pd, sizeof(pd), &mine), RPCRDMA_CM_PRIVATE_LEN);
	assert_int_equal(rawpeer_connect(&rp, (struct sockaddr *)&hs.addr, pd, sizeof(pd), 0), 0);

	/* Every class the codec tells apart, and the transport's own checks. */
	build(&vecs[n], "short (12 bytes)", EXPECT_DROP, 0x100, 1, 0, NULL, 0);
	vecs[n++].len = 12;
	build(&vecs[n], "version 2", EXPECT_ERR_VERS, 0x101, 2, 0, empty3, 3);
	body(&vecs[n++], 0x101, 40);
	build(&vecs[n], "version 0", EXPECT_ERR_VERS, 0x102, 0, 0, empty3, 3);
	body(&vecs[n++], 0x102, 40);
	build(&vecs[n], "RDMA_MSGP", EXPECT_ERR_CHUNK, 0x103, 1, RPCRDMA_MSGP,
	      (uint32_t[]){ 4, 1024, 0, 0, 0 }, 5);
	body(&vecs[n++], 0x103, 40);
	build(&vecs[n], "unknown proc 7", EXPECT_ERR_CHUNK, 0x104, 1, 7, empty3, 3);
	body(&vecs[n++], 0x104, 40);
	build(&vecs[n], "RDMA_DONE", EXPECT_DROP, 0x105, 1, RPCRDMA_DONE, NULL, 0);
	n++;
	build(&vecs[n], "RDMA_ERROR from a requester", EXPECT_DROP, 0x106, 1, RPCRDMA_ERROR,
	      (uint32_t[]){ 2 }, 1);
	n++;
	build(&vecs[n], "truncated read list", EXPECT_ERR_CHUNK, 0x107, 1, 0,
	      (uint32_t[]){ 1, 0, 0x1234 }, 3);
	n++;
	/* 16 bytes: too short for a version 1 call, dropped (RFC 8166 4.5). */
	build(&vecs[n], "missing lists", EXPECT_DROP, 0x108, 1, 0, NULL, 0);
	n++;
	build(&vecs[n], "discriminator 2", EXPECT_ERR_CHUNK, 0x109, 1, 0,
	      (uint32_t[]){ 2, 0, 0 }, 3);
	body(&vecs[n++], 0x109, 40);
	{
		uint32_t w[2 + 17 * 4 + 2];
		size_t k = 0, s;

		w[k++] = 1;	/* one Write chunk of 17 segments: one past the cap */
		w[k++] = 17;
		for (s = 0; s < 17; s++) {
			w[k++] = 0x77;
			w[k++] = 64;
			w[k++] = 0;
			w[k++] = (uint32_t)(s * 64);
		}
		w[k++] = 0;
		w[k++] = 0;
		build(&vecs[n], "17 segments in a Write chunk", EXPECT_ERR_CHUNK, 0x10a, 1, 0,
		      (uint32_t[]){ 0 }, 1);
		for (s = 0; s < k; s++)
			vecs[n].len = put(vecs[n].buf, vecs[n].len, w[s]);
		body(&vecs[n++], 0x10a, 40);
	}
	build(&vecs[n], "segment count 0xffffffff", EXPECT_ERR_CHUNK, 0x10b, 1, 0,
	      (uint32_t[]){ 0, 1, 0xffffffffu, 0x77, 64, 0, 0 }, 7);
	body(&vecs[n++], 0x10b, 40);
	build(&vecs[n], "misaligned position", EXPECT_ERR_CHUNK, 0x10c, 1, 0,
	      (uint32_t[]){ 1, 6, 0x77, 64, 0, 0, 0, 0, 0 }, 9);
	body(&vecs[n++], 0x10c, 40);
	build(&vecs[n], "offset + length wraps", EXPECT_ERR_CHUNK, 0x10d, 1, 0,
	      (uint32_t[]){ 0, 1, 1, 0x77, 64, 0xffffffffu, 0xfffffff0u, 0, 0 }, 9);
	body(&vecs[n++], 0x10d, 40);
	build(&vecs[n], "RPC XID differs from rdma_xid", EXPECT_ERR_CHUNK, 0x10e, 1, 0, empty3, 3);
	body(&vecs[n++], 0xdead, 40);
	build(&vecs[n], "RDMA_MSG without an RPC message", EXPECT_ERR_CHUNK, 0x10f, 1, 0, empty3, 3);
	n++;
	/* The server's shortcut for plain calls leaves these to the general checks. */
	build(&vecs[n], "RDMA_MSG with 3 bytes of RPC message", EXPECT_ERR_CHUNK, 0x113, 1, 0,
	      empty3, 3);
	body(&vecs[n], 0x113, 0);
	vecs[n++].len -= RPCMSG_HEAD - 3;
	build(&vecs[n], "RDMA_NOMSG without a Read chunk", EXPECT_ERR_CHUNK, 0x114, 1,
	      RPCRDMA_NOMSG, empty3, 3);
	body(&vecs[n++], 0x114, 40);
	build(&vecs[n], "RPC XID differs in its last byte", EXPECT_ERR_CHUNK, 0x115, 1, 0, empty3,
	      3);
	body(&vecs[n++], 0x114, 40);
	build(&vecs[n], "a good call", EXPECT_ECHO, 0x110, 1, 0, empty3, 3);
	body(&vecs[n++], 0x110, 100);
	build(&vecs[n], "another short one (3 bytes)", EXPECT_DROP, 0x111, 1, 0, NULL, 0);
	vecs[n++].len = 3;
	build(&vecs[n], "a good call after all that", EXPECT_ECHO, 0x112, 1, 0, empty3, 3);
	body(&vecs[n++], 0x112, 1000);

	for (i = 0; i < n; i++) {
		if (rawpeer_send(&rp, vecs[i].buf, vecs[i].len))
			fail_msg("%s: send failed (%zu bytes)", vecs[i].name, vecs[i].len);
		check_answer(&rp, &vecs[i], get(vecs[i].buf, 0));
	}

	/* Meanwhile another client is served normally. */
	harness_clnt_attr(&hs, &attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	for (i = 0; i < 100; i++) {
		rlen = sizeof(reply);
		harness_fill_msg(msg, sizeof(msg), (uint32_t)(0x5000 + i), (uint32_t)i);
		assert_int_equal(rpcrdma_clnt_call(clnt, msg, sizeof(msg), reply, &rlen, 0), 0);
		harness_assert_echo(reply, msg, sizeof(msg));
	}
	rpcrdma_clnt_destroy(clnt);
	rawpeer_close(&rp);
	harness_server_stop(&hs);
}

/* A peer that sends no private data gets replies no larger than 1024 bytes. */
static void t_no_private_data_means_1024(void **state)
{
	struct harness_server hs;
	struct rawpeer rp;
	struct vec v;
	unsigned char reply[RAWPEER_BUF];
	uint32_t empty3[] = { 0, 0, 0 };
	int n;

	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_ECHO), 0);
	assert_int_equal(rawpeer_connect(&rp, (struct sockaddr *)&hs.addr, NULL, 0, 0), 0);
	/* The server's own private data arrives padded (196 bytes on RoCE). */
	assert_true(rp.pdata_len >= RPCRDMA_CM_PRIVATE_LEN);
	assert_int_equal(get(rp.pdata, 0), RPCRDMA_CM_MAGIC);

	/* A reply of exactly 1024 bytes fits. */
	build(&v, "1024-byte echo", EXPECT_ECHO, 0x200, 1, 0, empty3, 3);
	body(&v, 0x200, 1024 - 28 - RPCMSG_HEAD);
	assert_int_equal(rawpeer_send(&rp, v.buf, v.len), 0);
	check_answer(&rp, &v, 0x200);
	/* One more byte would overflow the peer's 1024-byte receive: ERR_CHUNK instead. */
	build(&v, "1025-byte echo", EXPECT_ERR_CHUNK, 0x201, 1, 0, empty3, 3);
	body(&v, 0x201, 1024 - 28 - RPCMSG_HEAD + 1);
	assert_int_equal(rawpeer_send(&rp, v.buf, v.len), 0);
	n = rawpeer_recv(&rp, reply, sizeof(reply), 3000);
	assert_int_equal(n, 20);
	assert_int_equal(get(reply, 0), 0x201);
	assert_int_equal(get(reply, 4), RPCRDMA_ERR_CHUNK);
	rawpeer_close(&rp);
	harness_server_stop(&hs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_every_defect_class),
		cmocka_unit_test(t_no_private_data_means_1024),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * The NFSv3 binding of RFC 8267 is in force by default: an rpcgen NFSv3
 * server and client (nfs3bind.x) that changed only their create calls, and
 * registered nothing, move READ data by RDMA Write into a Write chunk and
 * WRITE data as a Read chunk. A raw client that calls as the Linux client
 * does (READ data in a Write chunk, no Reply chunk) gets its data placed.
 * After rpcrdma_ulb_unregister(100003, 3), the opt-out, neither side uses a
 * binding, and a reply that does not fit the room the client offered is
 * answered RDMA_ERROR / ERR_CHUNK (RFC 8166 section 4.5) and counted in
 * reply_overflows, never SYSTEM_ERR. Registering a binding replaces the
 * built-in one. Client and server are in this process, over softrdma.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rpc/rpc.h>
#include <rpcrdma/rpcrdma.h>
#include <rpcrdma/tirpc.h>
#include <softrdma.h>

#include "mtsrv.h"
#include "nfs3bind.h"
#include "rawpeer.h"

void nfs_program_3(struct svc_req *rqstp, SVCXPRT *transp);

#define KiB 1024u
#define MiB (1024u * 1024u)
#define WAIT_MS 10000
/* A program beside NFS on the same listener: its results routine fails. */
#define FAIL_PROG 0x2000F00Fu
#define FAIL_VERS 1u

static unsigned char pattern(uint64_t offset, size_t i)
{
	uint64_t x = (offset + i) * 0x9e3779b97f4a7c15ull;

	return (unsigned char)(x >> 41);
}

/* The offset of the first byte of @p that is not the file's at @offset, or @n. */
static size_t check(const unsigned char *p, size_t n, uint64_t offset)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != pattern(offset, i))
			return i;
	return n;
}

static uint32_t sum(const unsigned char *p, size_t n)
{
	uint32_t s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s = s * 31 + p[i];
	return s;
}

/* The service, as it would be over TCP: a file whose bytes are pattern(offset). */

bool_t nfsproc3_null_3_svc(void *argp, void *result, struct svc_req *rqstp)
{
	return TRUE;
}

static void file_attributes(post_op_attr *a, uint64_t size)
{
	a->attributes_follow = TRUE;
	a->post_op_attr_u.attributes = (fattr3){ .type = NF3REG, .mode = 0644, .nlink = 1,
						 .size = size, .used = size, .fileid = 7 };
}

bool_t nfsproc3_read_3_svc(READ3args *argp, READ3res *result, struct svc_req *rqstp)
{
	READ3resok *ok = &result->READ3res_u.resok;
	uint32_t i;

	ok->data.data_val = malloc(argp->count ? argp->count : 1);
	if (!ok->data.data_val)
		return FALSE;
	for (i = 0; i < argp->count; i++)
		ok->data.data_val[i] = (char)pattern(argp->offset, i);
	ok->data.data_len = argp->count;
	ok->count = argp->count;
	ok->eof = FALSE;
	file_attributes(&ok->file_attributes, argp->offset + argp->count);
	result->status = NFS3_OK;
	return TRUE;
}

/* WRITE calls whose data arrived as a Read chunk of its own (not a long call's). */
static atomic_uint write_payloads;

/* The verifier carries the sum of the data's bytes, for the test to check. */
bool_t nfsproc3_write_3_svc(WRITE3args *argp, WRITE3res *result, struct svc_req *rqstp)
{
	WRITE3resok *ok = &result->WRITE3res_u.resok;
	uint32_t s = htonl(sum((unsigned char *)argp->data.data_val, argp->data.data_len));
	void *data;
	size_t len;

	if (rpcrdma_svc_getpayload(rqstp->rq_xprt, 0, &data, &len) == 0) {
		if (len == argp->data.data_len)
			atomic_fetch_add(&write_payloads, 1);
		rpcrdma_svc_payload_free(data);
	}
	memset(ok, 0, sizeof(*ok));
	ok->count = argp->data.data_len;
	ok->committed = FILE_SYNC;
	memcpy(ok->verf, &s, sizeof(s));
	result->status = NFS3_OK;
	return TRUE;
}

int nfs_program_3_freeresult(SVCXPRT *transp, xdrproc_t xdr_result, caddr_t result)
{
	xdr_free(xdr_result, result);
	return 1;
}

static bool_t xdr_fail(XDR *xdrs, void *obj)
{
	return FALSE;
}

/* A dispatcher as rpcgen writes them, with results whose XDR routine fails. */
static void fail_dispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	if (!svc_sendreply(xprt, (xdrproc_t)xdr_fail, NULL))
		svcerr_systemerr(xprt);
}

/* Info lines saying a reply did not fit the room its client offered. */
static atomic_uint overflow_logs;

static void on_log(int level, const char *msg, void *arg)
{
	if (level == RPCRDMA_LOG_INFO && strstr(msg, "does not fit the room the client offered"))
		atomic_fetch_add(&overflow_logs, 1);
}

static struct mtsrv srv;
static const struct mtsrv_prog srv_progs[] = {
	{ NFS_PROGRAM, NFS_V3, nfs_program_3 },
	{ FAIL_PROG, FAIL_VERS, fail_dispatch },
};

/* The server registers no binding: its create call is all that differs from TCP. */
static int group_up(void **state)
{
	(void)state;
	rpcrdma_set_log(on_log, NULL, RPCRDMA_LOG_INFO);
	return mtsrv_start(&srv, srv_progs, 2);
}

static int group_down(void **state)
{
	(void)state;
	return mtsrv_stop(&srv);
}

static CLIENT *client(rpcprog_t prog, rpcvers_t vers, u_int recvsize)
{
	CLIENT *cl = rpcrdma_clnt_create((const struct sockaddr *)&srv.addr, prog, vers, 0,
					 recvsize);

	if (!cl)
		fail_msg("rpcrdma_clnt_create: %s", clnt_spcreateerror("nfs3bind"));
	return cl;
}


static const unsigned char fh_bytes[8] = { 'n', 'f', 's', '3', 0, 0, 0, 1 };

/* READ @count bytes at @offset with a zeroed result, as an rpcgen caller does. */
static enum clnt_stat read_call(CLIENT *cl, uint64_t offset, uint32_t count, READ3res *res)
{
	READ3args a = { .file = { { sizeof(fh_bytes), (char *)fh_bytes } }, .offset = offset,
			.count = count };

	memset(res, 0, sizeof(*res));
	return nfsproc3_read_3(&a, res, cl);
}

/* A READ that succeeded returned the file's bytes. */
static void assert_read_ok(const READ3res *res, uint64_t offset, uint32_t count)
{
	const READ3resok *ok = &res->READ3res_u.resok;

	assert_int_equal(res->status, NFS3_OK);
	assert_int_equal(ok->count, count);
	assert_int_equal(ok->data.data_len, count);
	assert_true(ok->file_attributes.attributes_follow);
	assert_int_equal(ok->file_attributes.post_op_attr_u.attributes.size, offset + count);
	assert_int_equal(check((unsigned char *)ok->data.data_val, count, offset), count);
}

/*
 * Neither side registered anything: READ data above the inline size comes
 * by RDMA Write into a Write chunk, with no Reply chunk (the binding's
 * bound fits inline) and nothing refused.
 */
static void t_read_by_default(void **state)
{
	static const uint32_t sizes[] = { 5000, 65536, MiB };
	struct rpcrdma_stats c0, c1, s0, s1;
	CLIENT *cl = client(NFS_PROGRAM, NFS_V3, 0);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		READ3res res;

		mtsrv_clnt_stats(cl, &c0);
		mtsrv_stats(&srv, &s0);
		assert_int_equal(read_call(cl, 4096 * i, sizes[i], &res), RPC_SUCCESS);
		mtsrv_clnt_stats(cl, &c1);
		mtsrv_stats(&srv, &s1);
		assert_read_ok(&res, 4096 * i, sizes[i]);
		assert_int_equal(c1.write_chunks - c0.write_chunks, 1);
		assert_int_equal(c1.reply_chunks - c0.reply_chunks, 0);
		assert_int_equal(s1.write_chunks - s0.write_chunks, 1);
		assert_int_equal(s1.reply_overflows - s0.reply_overflows, 0);
		clnt_freeres(cl, (xdrproc_t)xdr_READ3res, (caddr_t)&res);
	}
	clnt_destroy(cl);
}

/*
 * WRITE data (item 2) goes as a Read chunk of its own by default, the rest
 * of the call inline; without the binding the call would go whole as a
 * long call (a Read chunk at position zero).
 */
static void t_write_by_default(void **state)
{
	static unsigned char data[200000];
	WRITE3args a = { .file = { { sizeof(fh_bytes), (char *)fh_bytes } }, .offset = 0,
			 .count = sizeof(data), .stable = FILE_SYNC,
			 .data = { sizeof(data), (char *)data } };
	unsigned int payloads = atomic_load(&write_payloads);
	struct rpcrdma_stats c0, c1;
	CLIENT *cl = client(NFS_PROGRAM, NFS_V3, 0);
	WRITE3res res;
	uint32_t s;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = pattern(3, i);
	memset(&res, 0, sizeof(res));
	mtsrv_clnt_stats(cl, &c0);
	assert_int_equal(nfsproc3_write_3(&a, &res, cl), RPC_SUCCESS);
	mtsrv_clnt_stats(cl, &c1);
	assert_int_equal(res.status, NFS3_OK);
	assert_int_equal(res.WRITE3res_u.resok.count, sizeof(data));
	memcpy(&s, res.WRITE3res_u.resok.verf, sizeof(s));
	assert_int_equal(ntohl(s), sum(data, sizeof(data)));
	assert_int_equal(c1.read_chunks - c0.read_chunks, 1);
	assert_int_equal(atomic_load(&write_payloads) - payloads, 1);
	clnt_freeres(cl, (xdrproc_t)xdr_WRITE3res, (caddr_t)&res);
	clnt_destroy(cl);
}

/* ---- A raw client that calls as the Linux client does ----------------------------------- */

struct linux_clnt {
	struct rawpeer rp;
	unsigned char *mem;	/* the pages READ data is placed in */
	struct ibv_mr *mr;
};

/*
 * Connect with RFC 8797 private data of 4 KiB each way, as Linux sends by
 * default (@inline_4k), or with none: 1 KiB each way.
 */
static void linux_up(struct linux_clnt *lc, bool inline_4k)
{
	static const struct rpcrdma_cm_private pd = { 4096, 4096, 0 };
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN];

	memset(lc, 0, sizeof(*lc));
	assert_int_equal(rpcrdma_cm_private_encode(pdata, sizeof(pdata), &pd),
			 RPCRDMA_CM_PRIVATE_LEN);
	assert_int_equal(rawpeer_connect(&lc->rp, (const struct sockaddr *)&srv.addr,
					 inline_4k ? pdata : NULL, inline_4k ? sizeof(pdata) : 0, 0),
			 0);
	lc->mem = aligned_alloc(4096, MiB);
	assert_non_null(lc->mem);
	lc->mr = rawpeer_reg(&lc->rp, lc->mem, MiB,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(lc->mr);
}

static void linux_down(struct linux_clnt *lc)
{
	rawpeer_close(&lc->rp);
	free(lc->mem);
}

/*
 * Call READ of @count bytes at @offset: RDMA_MSG with one Write chunk of
 * @chunk bytes (one segment over lc->mem) and no Reply chunk, the way the
 * Linux client's rpcrdma_marshal_req() sends a READ. Wait for the answer.
 */
static void linux_read(struct linux_clnt *lc, uint32_t xid, uint64_t offset, uint32_t count,
		       uint32_t chunk, struct rawpeer_call *rc)
{
	struct rpcrdma_segment seg = { lc->mr->rkey, chunk, (uintptr_t)lc->mem };
	struct rpcrdma_chunk_desc wdesc = { 1, &seg };
	struct rpcrdma_hdr_enc enc = { .xid = xid, .credit = 8, .proc = RPCRDMA_MSG,
				       .write_chunks = 1, .write = &wdesc };
	READ3args a = { .file = { { sizeof(fh_bytes), (char *)fh_bytes } }, .offset = offset,
			.count = count };
	struct rpc_msg msg = { .rm_xid = xid, .rm_direction = CALL };
	unsigned char buf[RAWPEER_BUF];
	long n;
	XDR x;

	msg.rm_call.cb_rpcvers = RPC_MSG_VERSION;
	msg.rm_call.cb_prog = NFS_PROGRAM;
	msg.rm_call.cb_vers = NFS_V3;
	msg.rm_call.cb_proc = NFSPROC3_READ;
	msg.rm_call.cb_cred = _null_auth;
	msg.rm_call.cb_verf = _null_auth;
	n = rpcrdma_hdr_encode(buf, sizeof(buf), &enc);
	assert_true(n > 0);
	xdrmem_create(&x, (char *)buf + n, (u_int)(sizeof(buf) - (size_t)n), XDR_ENCODE);
	assert_true(xdr_callmsg(&x, &msg) && xdr_READ3args(&x, &a));
	memset(lc->mem, 0, MiB);
	assert_int_equal(rawpeer_send(&lc->rp, buf, (size_t)n + xdr_getpos(&x)), 0);
	assert_int_equal(rawpeer_recv_call(&lc->rp, rc, WAIT_MS), 0);
	assert_int_equal(rc->hdr.xid, xid);
}

/*
 * The answer is an RPC reply whose READ data went to the Write chunk: its
 * echo says @count bytes, the message holds the results without them (the
 * data's length, then nothing), and lc->mem holds the file's bytes.
 */
static void assert_placed(const struct linux_clnt *lc, const struct rawpeer_call *rc,
			  uint64_t offset, uint32_t count)
{
	struct rpc_msg reply = { 0 };
	u_int len = 0, got = 0;
	bool_t follows = FALSE, eof = TRUE;
	fattr3 attrs;
	nfsstat3 status = NFS3ERR_IO;
	XDR x;

	if (rc->hdr.proc != RPCRDMA_MSG)
		fail_msg("READ: proc %u (err %u), expected RDMA_MSG", rc->hdr.proc, rc->hdr.err);
	assert_int_equal(rc->hdr.write_chunks, 1);
	assert_int_equal(rc->hdr.write[0].total, count);
	assert_int_equal(rc->hdr.has_reply, 0);
	xdrmem_create(&x, (char *)rc->buf + rc->hdr.hdr_len, (u_int)(rc->len - rc->hdr.hdr_len),
		      XDR_DECODE);
	reply.acpted_rply.ar_results.proc = (xdrproc_t)(void (*)(void))xdr_void;
	assert_true(xdr_replymsg(&x, &reply));
	assert_int_equal(reply.rm_reply.rp_stat, MSG_ACCEPTED);
	assert_int_equal(reply.acpted_rply.ar_stat, SUCCESS);
	assert_true(xdr_nfsstat3(&x, &status) && xdr_bool(&x, &follows) &&
		    xdr_fattr3(&x, &attrs) && xdr_u_int(&x, &got) && xdr_bool(&x, &eof) &&
		    xdr_u_int(&x, &len));
	assert_int_equal(status, NFS3_OK);
	assert_true(follows);
	assert_int_equal(attrs.size, offset + count);
	assert_int_equal(got, count);
	assert_false(eof);
	assert_int_equal(len, count);
	/* Nothing after the length: the bytes are in the chunk (RFC 8166 3.4.4). */
	assert_int_equal(xdr_getpos(&x), (u_int)(rc->len - rc->hdr.hdr_len));
	assert_int_equal(check(lc->mem, count, offset), count);
}

/* The answer is RDMA_ERROR / ERR_CHUNK: rdma_xid, vers, credit, proc, err. */
static void assert_err_chunk(const struct rawpeer_call *rc)
{
	if (rc->hdr.proc != RPCRDMA_ERROR || rc->hdr.err != RPCRDMA_ERR_CHUNK)
		fail_msg("proc %u err %u, expected RDMA_ERROR / ERR_CHUNK (an RPC reply is "
			 "%s)", rc->hdr.proc, rc->hdr.err,
			 rc->hdr.proc == RPCRDMA_MSG ? "what the server made up" : "not it");
	assert_int_equal(rc->len, 20);
}

/*
 * One info line since @before said the reply did not fit. The server logs
 * it on its own thread once the answer the test waited for is posted: the
 * line is looked for until a deadline.
 */
static void assert_overflow_logged(unsigned int before)
{
	struct timespec ts = { 0, 1000000 };
	int i;

	for (i = 0; i < WAIT_MS && atomic_load(&overflow_logs) == before; i++)
		nanosleep(&ts, NULL);
	assert_int_equal(atomic_load(&overflow_logs) - before, 1);
}

/*
 * A server that registered nothing places a Linux client's READ data in
 * its Write chunk, at every size up to the chunk, though the reply has no
 * Reply chunk to fall back on.
 */
static void t_linux_client_placed(void **state)
{
	static const uint32_t sizes[] = { 4096, 65536, MiB };
	static struct rawpeer_call rc;
	struct rpcrdma_stats s0, s1;
	struct linux_clnt lc;
	size_t i;

	(void)state;
	linux_up(&lc, true);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		mtsrv_stats(&srv, &s0);
		linux_read(&lc, 0x5100 + (uint32_t)i, 12345 * i, sizes[i], sizes[i], &rc);
		mtsrv_stats(&srv, &s1);
		assert_placed(&lc, &rc, 12345 * i, sizes[i]);
		assert_int_equal(s1.write_chunks - s0.write_chunks, 1);
	}
	linux_down(&lc);
}

/* READ 64 KiB on @cl; how many Write and Reply chunks it took. */
static void read_chunks(CLIENT *cl, uint64_t *write_chunks, uint64_t *reply_chunks)
{
	struct rpcrdma_stats c0, c1;
	READ3res res;

	mtsrv_clnt_stats(cl, &c0);
	assert_int_equal(read_call(cl, 0, 65536, &res), RPC_SUCCESS);
	mtsrv_clnt_stats(cl, &c1);
	assert_read_ok(&res, 0, 65536);
	clnt_freeres(cl, (xdrproc_t)xdr_READ3res, (caddr_t)&res);
	*write_chunks = c1.write_chunks - c0.write_chunks;
	*reply_chunks = c1.reply_chunks - c0.reply_chunks;
}

/*
 * Programs that register rpcrdma_ulb_nfs3() themselves, as they had to
 * before it was built in, keep working: registering over the built-in
 * binding replaces it (no -EEXIST), a second registration meets the first.
 * A binding of one's own for 100003 version 3 is the one used; after
 * unregistering, a second unregister finds none; registering
 * rpcrdma_ulb_nfs3() puts the binding back.
 */
static void t_register_over_builtin(void **state)
{
	static const struct rpcrdma_ulb_proc no_ddp[] = { { .proc = NFSPROC3_READ } };
	const struct rpcrdma_ulb mine = {
		.struct_size = sizeof(mine), .prog = NFS_PROGRAM, .vers = NFS_V3,
		.procs = no_ddp, .nprocs = 1,
	};
	CLIENT *cl = client(NFS_PROGRAM, NFS_V3, 2 * MiB);
	uint64_t w, r;

	(void)state;
	/* Built in: the Write chunk, and no Reply chunk though recvsize is 2 MiB. */
	read_chunks(cl, &w, &r);
	assert_int_equal(w, 1);
	assert_int_equal(r, 0);
	assert_int_equal(rpcrdma_ulb_register(rpcrdma_ulb_nfs3()), 0);
	assert_int_equal(rpcrdma_ulb_register(rpcrdma_ulb_nfs3()), -EEXIST);
	assert_int_equal(rpcrdma_ulb_register(&mine), -EEXIST);
	read_chunks(cl, &w, &r);
	assert_int_equal(w, 1);
	assert_int_equal(r, 0);

	/* One's own binding: READ without an item and without a bound, so a Reply chunk. */
	assert_int_equal(rpcrdma_ulb_unregister(NFS_PROGRAM, NFS_V3), 0);
	assert_int_equal(rpcrdma_ulb_unregister(NFS_PROGRAM, NFS_V3), -ENOENT);
	assert_int_equal(rpcrdma_ulb_register(&mine), 0);
	read_chunks(cl, &w, &r);
	assert_int_equal(w, 0);
	assert_int_equal(r, 1);

	assert_int_equal(rpcrdma_ulb_unregister(NFS_PROGRAM, NFS_V3), 0);
	assert_int_equal(rpcrdma_ulb_register(rpcrdma_ulb_nfs3()), 0);
	read_chunks(cl, &w, &r);
	assert_int_equal(w, 1);
	clnt_destroy(cl);
}

/*
 * A server that opted out has no binding to place a Linux client's READ
 * data with: the reply does not fit the room offered (no Reply chunk), so
 * the client gets RDMA_ERROR / ERR_CHUNK, not an RPC reply of SYSTEM_ERR,
 * and reply_overflows counts it. Both ways it can happen: the results do
 * not fit the server's buffer (the adapter finds it encoding them), or
 * they do but not the client's 1 KiB inline receive (the engine finds it
 * sending). With the binding, a Write chunk too small for the data is
 * refused the same way. The connection serves on, and after the binding
 * is registered again the data is placed.
 */
static void t_linux_client_opted_out(void **state)
{
	static struct rawpeer_call rc;
	struct rpcrdma_stats s0, s1;
	struct linux_clnt lc, small;
	unsigned int logs;

	(void)state;
	linux_up(&lc, true);
	linux_up(&small, false);
	assert_int_equal(rpcrdma_ulb_unregister(NFS_PROGRAM, NFS_V3), 0);

	mtsrv_stats(&srv, &s0);
	logs = atomic_load(&overflow_logs);
	linux_read(&lc, 0x5201, 0, 65536, 65536, &rc);
	mtsrv_stats(&srv, &s1);
	assert_err_chunk(&rc);
	assert_int_equal(s1.reply_overflows - s0.reply_overflows, 1);
	assert_int_equal(s1.write_chunks - s0.write_chunks, 0);
	assert_overflow_logged(logs);

	mtsrv_stats(&srv, &s0);
	logs = atomic_load(&overflow_logs);
	linux_read(&small, 0x5202, 0, 2000, 65536, &rc);
	mtsrv_stats(&srv, &s1);
	assert_err_chunk(&rc);
	assert_int_equal(s1.reply_overflows - s0.reply_overflows, 1);
	assert_overflow_logged(logs);

	assert_int_equal(rpcrdma_ulb_register(rpcrdma_ulb_nfs3()), 0);
	mtsrv_stats(&srv, &s0);
	logs = atomic_load(&overflow_logs);
	linux_read(&lc, 0x5203, 0, 65536, 4096, &rc);
	mtsrv_stats(&srv, &s1);
	assert_err_chunk(&rc);
	assert_int_equal(s1.reply_overflows - s0.reply_overflows, 1);
	assert_overflow_logged(logs);

	mtsrv_stats(&srv, &s0);
	linux_read(&lc, 0x5204, 777, 65536, 65536, &rc);
	mtsrv_stats(&srv, &s1);
	assert_placed(&lc, &rc, 777, 65536);
	assert_int_equal(s1.reply_overflows - s0.reply_overflows, 0);
	linux_read(&small, 0x5205, 0, 2000, 65536, &rc);
	assert_placed(&small, &rc, 0, 2000);
	linux_down(&small);
	linux_down(&lc);
}

/*
 * A client that opted out offers no Write chunk: with no Reply chunk
 * either (recvsize 0) its READ is refused with ERR_CHUNK, counted, and
 * fails as the CLIENT reports a reply it could not take; a Reply chunk too
 * small for the reply fares the same; a large enough one carries the data.
 */
static void t_client_opted_out(void **state)
{
	struct rpcrdma_stats c0, c1, s0, s1;
	CLIENT *inl = client(NFS_PROGRAM, NFS_V3, 0);
	CLIENT *small = client(NFS_PROGRAM, NFS_V3, 16 * KiB);
	CLIENT *big = client(NFS_PROGRAM, NFS_V3, 2 * MiB);
	unsigned int logs;
	READ3res res;

	(void)state;
	assert_int_equal(rpcrdma_ulb_unregister(NFS_PROGRAM, NFS_V3), 0);

	mtsrv_clnt_stats(inl, &c0);
	mtsrv_stats(&srv, &s0);
	logs = atomic_load(&overflow_logs);
	assert_int_equal(read_call(inl, 0, 65536, &res), RPC_CANTDECODERES);
	mtsrv_clnt_stats(inl, &c1);
	mtsrv_stats(&srv, &s1);
	assert_int_equal(c1.write_chunks - c0.write_chunks, 0);
	assert_int_equal(s1.reply_overflows - s0.reply_overflows, 1);
	assert_overflow_logged(logs);

	mtsrv_stats(&srv, &s0);
	logs = atomic_load(&overflow_logs);
	assert_int_equal(read_call(small, 0, 65536, &res), RPC_CANTDECODERES);
	mtsrv_stats(&srv, &s1);
	assert_int_equal(s1.reply_overflows - s0.reply_overflows, 1);
	assert_overflow_logged(logs);

	mtsrv_clnt_stats(big, &c0);
	assert_int_equal(read_call(big, 0, 65536, &res), RPC_SUCCESS);
	mtsrv_clnt_stats(big, &c1);
	assert_read_ok(&res, 0, 65536);
	clnt_freeres(big, (xdrproc_t)xdr_READ3res, (caddr_t)&res);
	assert_int_equal(c1.write_chunks - c0.write_chunks, 0);
	assert_int_equal(c1.reply_chunks - c0.reply_chunks, 1);

	/* Registered again, the same CLIENT places READ data once more. */
	assert_int_equal(rpcrdma_ulb_register(rpcrdma_ulb_nfs3()), 0);
	mtsrv_clnt_stats(inl, &c0);
	assert_int_equal(read_call(inl, 0, 65536, &res), RPC_SUCCESS);
	mtsrv_clnt_stats(inl, &c1);
	assert_read_ok(&res, 0, 65536);
	clnt_freeres(inl, (xdrproc_t)xdr_READ3res, (caddr_t)&res);
	assert_int_equal(c1.write_chunks - c0.write_chunks, 1);
	clnt_destroy(big);
	clnt_destroy(small);
	clnt_destroy(inl);
}

/*
 * Results whose XDR routine fails for its own reasons are not a reply that
 * does not fit: libtirpc's behaviour stands (the dispatcher's SYSTEM_ERR),
 * and nothing is counted.
 */
static void t_results_fail_systemerr(void **state)
{
	struct timeval tv = { 10, 0 };
	struct rpcrdma_stats s0, s1;
	CLIENT *cl = client(FAIL_PROG, FAIL_VERS, 0);

	(void)state;
	mtsrv_stats(&srv, &s0);
	assert_int_equal(clnt_call(cl, 1, (xdrproc_t)(void (*)(void))xdr_void, NULL,
				   (xdrproc_t)(void (*)(void))xdr_void, NULL, tv),
			 RPC_SYSTEMERROR);
	mtsrv_stats(&srv, &s1);
	assert_int_equal(s1.reply_overflows - s0.reply_overflows, 0);
	clnt_destroy(cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_read_by_default),
		cmocka_unit_test(t_write_by_default),
		cmocka_unit_test(t_linux_client_placed),
		cmocka_unit_test(t_register_over_builtin),
		cmocka_unit_test(t_linux_client_opted_out),
		cmocka_unit_test(t_client_opted_out),
		cmocka_unit_test(t_results_fail_systemerr),
	};

	return cmocka_run_group_tests(tests, group_up, group_down);
}

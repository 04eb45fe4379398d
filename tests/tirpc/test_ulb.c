/* SPDX-License-Identifier: MIT */
/*
 * Upper-layer bindings: an rpcgen program, unmodified but for the buffer
 * pool its READ_POOL uses, moves its data by direct data placement because
 * a binding says which items may: Write chunks for READ results (into the
 * caller's buffer when it presets one), Read chunks for WRITE data, no
 * Reply chunk where the reply's bound fits inline, ERR_CHUNK for a Read
 * chunk the binding does not allow, and calls longer than sendsize sent as
 * long calls. Client and server are in this process, over softrdma.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <rpc/rpc.h>
#include <rpcrdma/rpcrdma.h>
#include <rpcrdma/tirpc.h>
#include <softrdma.h>

#include "mtsrv.h"
#include "ulbtest.h"

void ulb_prog_1(struct svc_req *rqstp, SVCXPRT *transp);

#define MiB (1u << 20)

static struct {
	atomic_uint writes;		/* WRITE calls that ran */
	atomic_uint write_payloads;	/* ... whose data came as a Read chunk */
	atomic_uint sums;
} served;

static unsigned char pattern(size_t i, unsigned int seed)
{
	return (unsigned char)(i * 131 + seed * 7 + (i >> 9));
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = pattern(i, seed);
}

static bool check(const unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != pattern(i, seed))
			return false;
	return true;
}

static unsigned int sum(const unsigned char *p, size_t n)
{
	unsigned int s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s = s * 31 + p[i];
	return s;
}

/* The service, as it would be over TCP. */

bool_t ulb_null_1_svc(void *argp, void *result, struct svc_req *rqstp)
{
	return TRUE;
}

bool_t ulb_read_1_svc(u_int *argp, ulb_data *result, struct svc_req *rqstp)
{
	result->ulb_data_val = malloc(*argp ? *argp : 1);
	if (!result->ulb_data_val)
		return FALSE;
	result->ulb_data_len = *argp;
	fill((unsigned char *)result->ulb_data_val, *argp, *argp);
	return TRUE;
}

bool_t ulb_read_pool_1_svc(u_int *argp, ulb_data *result, struct svc_req *rqstp)
{
	result->ulb_data_val = rpcrdma_svc_buf_alloc(rqstp->rq_xprt, *argp);
	if (!result->ulb_data_val)
		return FALSE;
	result->ulb_data_len = *argp;
	fill((unsigned char *)result->ulb_data_val, *argp, *argp);
	return TRUE;
}

bool_t ulb_write_1_svc(ulb_write_args *argp, u_int *result, struct svc_req *rqstp)
{
	void *data;
	size_t len;

	atomic_fetch_add(&served.writes, 1);
	*result = sum((unsigned char *)argp->data.ulb_data_val, argp->data.ulb_data_len);
	if (rpcrdma_svc_getpayload(rqstp->rq_xprt, 0, &data, &len) == 0) {
		if (len == argp->data.ulb_data_len)
			atomic_fetch_add(&served.write_payloads, 1);
		rpcrdma_svc_payload_free(data);
	}
	return TRUE;
}

bool_t ulb_sum_1_svc(ulb_data *argp, u_int *result, struct svc_req *rqstp)
{
	atomic_fetch_add(&served.sums, 1);
	*result = sum((unsigned char *)argp->ulb_data_val, argp->ulb_data_len);
	return TRUE;
}

bool_t ulb_pair_1_svc(ulb_pair *argp, u_int *result, struct svc_req *rqstp)
{
	*result = sum((unsigned char *)argp->first.ulb_data_val, argp->first.ulb_data_len) +
		  sum((unsigned char *)argp->second.ulb_data_val, argp->second.ulb_data_len);
	return TRUE;
}

bool_t ulb_name_1_svc(u_int *argp, char **result, struct svc_req *rqstp)
{
	*result = malloc(*argp + 1);
	if (!*result)
		return FALSE;
	memset(*result, 'n', *argp);
	(*result)[*argp] = '\0';
	return TRUE;
}

int ulb_prog_1_freeresult(SVCXPRT *transp, xdrproc_t xdr_result, caddr_t result)
{
	/* READ_POOL's buffer goes back to the pool, not to free(). */
	if (xdr_result == (xdrproc_t)xdr_ulb_data &&
	    rpcrdma_svc_buf_free(((ulb_data *)result)->ulb_data_val) == 0)
		((ulb_data *)result)->ulb_data_val = NULL;
	xdr_free(xdr_result, result);
	return 1;
}

/* The binding, as an application registers it. */
static const struct rpcrdma_ulb_proc ulb_procs[] = {
	{ .proc = ULB_NULL, .reply_max = 24 },
	{ .proc = ULB_READ, .res_item = 1, .res_max = 4 * MiB, .reply_max = 28 },
	{ .proc = ULB_READ_POOL, .res_item = 1, .res_max = 4 * MiB, .reply_max = 28 },
	{ .proc = ULB_WRITE, .arg_item = 2, .reply_max = 28 },
	{ .proc = ULB_NAME, .res_item = 1, .res_max = 8192, .reply_max = 28,
	  .flags = RPCRDMA_ULB_RES_NO_PRESET },
};

static const struct rpcrdma_ulb ulb = {
	.struct_size = sizeof(struct rpcrdma_ulb),
	.prog = ULB_PROG,
	.vers = ULB_VERS,
	.procs = ulb_procs,
	.nprocs = sizeof(ulb_procs) / sizeof(ulb_procs[0]),
};

static struct mtsrv srv;
static const struct mtsrv_prog srv_progs[] = { { ULB_PROG, ULB_VERS, ulb_prog_1 } };

static int group_up(void **state)
{
	(void)state;
	if (mtsrv_start(&srv, srv_progs, 1) || rpcrdma_ulb_register(&ulb))
		return -1;
	return 0;
}

static int group_down(void **state)
{
	(void)state;
	rpcrdma_ulb_unregister(ULB_PROG, ULB_VERS);
	return mtsrv_stop(&srv);
}

static CLIENT *client(u_int sendsize, u_int recvsize)
{
	CLIENT *cl = rpcrdma_clnt_create((const struct sockaddr *)&srv.addr, ULB_PROG, ULB_VERS,
					 sendsize, recvsize);

	if (!cl)
		fail_msg("rpcrdma_clnt_create: %s", clnt_spcreateerror("ulb"));
	return cl;
}


/*
 * READ with a malloc'd result and a zeroed result struct: the data comes by
 * RDMA Write into a Write chunk of the library's, copied once on each side;
 * no Reply chunk, as the reply's bound fits inline, though recvsize is 8 MiB.
 */
static void t_read_placed(void **state)
{
	static const u_int sizes[] = { 1024, 65536, MiB, 3 * MiB + 5 };
	struct rpcrdma_stats c0, c1, s0, s1;
	CLIENT *cl = client(0, 8 * MiB);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ulb_data res;
		u_int n = sizes[i];

		memset(&res, 0, sizeof(res));
		mtsrv_clnt_stats(cl, &c0);
		mtsrv_stats(&srv, &s0);
		assert_int_equal(ulb_read_1(&n, &res, cl), RPC_SUCCESS);
		mtsrv_clnt_stats(cl, &c1);
		mtsrv_stats(&srv, &s1);
		assert_int_equal(res.ulb_data_len, n);
		assert_true(check((unsigned char *)res.ulb_data_val, n, n));
		assert_int_equal(c1.write_chunks - c0.write_chunks, 1);
		assert_int_equal(c1.reply_chunks - c0.reply_chunks, 0);
		assert_int_equal(s1.write_chunks - s0.write_chunks, 1);
		/* The service's malloc'd bytes: copied once, before svc_sendreply() returned. */
		assert_int_equal(s1.bounce_bytes - s0.bounce_bytes, n);
		clnt_freeres(cl, (xdrproc_t)xdr_ulb_data, (caddr_t)&res);
	}
	clnt_destroy(cl);
}

/*
 * READ_POOL into the caller's preset, registered buffer: not a byte copied
 * on either side, the result decoded in place, 200 times over (the pool's
 * buffers go back at each Send completion and are reused).
 */
static void t_read_pool_zero_copy(void **state)
{
	u_int n = 256 * 1024;
	unsigned char *buf = malloc(n);
	struct rpcrdma_ddp_buf reg = { .buf = buf, .len = n };
	struct rpcrdma_stats c0, c1, s0, s1;
	CLIENT *cl = client(0, 0);
	int round;

	(void)state;
	assert_non_null(buf);
	assert_true(clnt_control(cl, RPCRDMA_CLSET_MEM_REGISTER, (char *)&reg));
	mtsrv_clnt_stats(cl, &c0);
	mtsrv_stats(&srv, &s0);
	for (round = 0; round < 200; round++) {
		ulb_data res = { .ulb_data_len = n, .ulb_data_val = (char *)buf };
		u_int len = n - (u_int)round;

		res.ulb_data_len = len;
		memset(buf, 0, n);
		assert_int_equal(ulb_read_pool_1(&len, &res, cl), RPC_SUCCESS);
		assert_ptr_equal(res.ulb_data_val, buf);
		assert_int_equal(res.ulb_data_len, len);
		assert_true(check(buf, len, len));
	}
	mtsrv_clnt_stats(cl, &c1);
	mtsrv_stats(&srv, &s1);
	assert_int_equal(c1.write_chunks - c0.write_chunks, 200);
	assert_int_equal(c1.bounce_bytes - c0.bounce_bytes, 0);
	assert_int_equal(s1.bounce_bytes - s0.bounce_bytes, 0);
	clnt_destroy(cl);
	free(buf);
}

/* WRITE's data (item 2) goes as a Read chunk, the file handle (item 1) inline; a small one inline. */
static void t_write_read_chunk(void **state)
{
	static unsigned char fh[32], data[200000];
	struct rpcrdma_stats c0, c1;
	unsigned int writes = atomic_load(&served.writes);
	unsigned int payloads = atomic_load(&served.write_payloads);
	CLIENT *cl = client(0, 0);
	ulb_write_args a = { .fh = { sizeof(fh), (char *)fh }, .offset = 7 };
	u_int s = 0;

	(void)state;
	fill(fh, sizeof(fh), 9);
	fill(data, sizeof(data), 3);
	a.data.ulb_data_len = sizeof(data);
	a.data.ulb_data_val = (char *)data;
	mtsrv_clnt_stats(cl, &c0);
	assert_int_equal(ulb_write_1(&a, &s, cl), RPC_SUCCESS);
	mtsrv_clnt_stats(cl, &c1);
	assert_int_equal(s, sum(data, sizeof(data)));
	assert_int_equal(c1.read_chunks - c0.read_chunks, 1);
	assert_int_equal(atomic_load(&served.write_payloads) - payloads, 1);

	/* Below ddp_min (1 KiB): inline. */
	a.data.ulb_data_len = 100;
	mtsrv_clnt_stats(cl, &c0);
	assert_int_equal(ulb_write_1(&a, &s, cl), RPC_SUCCESS);
	mtsrv_clnt_stats(cl, &c1);
	assert_int_equal(s, sum(data, 100));
	assert_int_equal(c1.read_chunks - c0.read_chunks, 0);
	assert_int_equal(atomic_load(&served.writes) - writes, 2);
	clnt_destroy(cl);
}

/* A Reply chunk only where the binding's bound does not fit inline; without it, always. */
static void t_reply_chunk_when_needed(void **state)
{
	struct rpcrdma_stats c0, c1;
	CLIENT *cl = client(0, 64 * 1024);

	(void)state;
	mtsrv_clnt_stats(cl, &c0);
	assert_int_equal(ulb_null_1(NULL, NULL, cl), RPC_SUCCESS);
	mtsrv_clnt_stats(cl, &c1);
	assert_int_equal(c1.reply_chunks - c0.reply_chunks, 0);

	assert_int_equal(rpcrdma_ulb_unregister(ULB_PROG, ULB_VERS), 0);
	mtsrv_clnt_stats(cl, &c0);
	assert_int_equal(ulb_null_1(NULL, NULL, cl), RPC_SUCCESS);
	mtsrv_clnt_stats(cl, &c1);
	assert_int_equal(c1.reply_chunks - c0.reply_chunks, 1);
	assert_int_equal(rpcrdma_ulb_register(&ulb), 0);
	assert_int_equal(rpcrdma_ulb_register(&ulb), -EEXIST);
	clnt_destroy(cl);
}

/*
 * SUM's argument is not DDP-eligible: sent as a Read chunk anyway (by hand,
 * RPCRDMA_CLSET_DDP_ARG), the call is refused with ERR_CHUNK and never
 * runs (RFC 8166 3.4.5). Without a binding the server cannot tell, and
 * takes it.
 */
static void t_err_chunk(void **state)
{
	static unsigned char data[8192];
	struct rpcrdma_ddp_buf darg = { .buf = data, .len = sizeof(data) };
	ulb_data a = { .ulb_data_len = sizeof(data), .ulb_data_val = (char *)data };
	unsigned int sums = atomic_load(&served.sums);
	CLIENT *cl = client(0, 0);
	u_int s = 0;

	(void)state;
	fill(data, sizeof(data), 5);
	assert_true(clnt_control(cl, RPCRDMA_CLSET_DDP_ARG, (char *)&darg));
	assert_int_not_equal(ulb_sum_1(&a, &s, cl), RPC_SUCCESS);
	assert_int_equal(atomic_load(&served.sums), sums);

	assert_int_equal(rpcrdma_ulb_unregister(ULB_PROG, ULB_VERS), 0);
	assert_true(clnt_control(cl, RPCRDMA_CLSET_DDP_ARG, (char *)&darg));
	assert_int_equal(ulb_sum_1(&a, &s, cl), RPC_SUCCESS);
	assert_int_equal(s, sum(data, sizeof(data)));
	assert_int_equal(atomic_load(&served.sums), sums + 1);
	assert_int_equal(rpcrdma_ulb_register(&ulb), 0);
	clnt_destroy(cl);
}

/* A call larger than sendsize goes as a long call, as TCP would carry it. */
static void t_long_call(void **state)
{
	static unsigned char data[300000];
	ulb_data a = { .ulb_data_len = sizeof(data), .ulb_data_val = (char *)data };
	CLIENT *cl = client(0, 0);
	u_int s = 0;

	(void)state;
	fill(data, sizeof(data), 8);
	assert_int_equal(ulb_sum_1(&a, &s, cl), RPC_SUCCESS);
	assert_int_equal(s, sum(data, sizeof(data)));
	clnt_destroy(cl);
}

/* Threads sharing one CLIENT, each reading into its own preset buffer at once. */
struct reader {
	CLIENT *cl;
	pthread_t thread;
	unsigned int seed;
	int bad;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	u_int n = 65536 + r->seed * 4096;
	unsigned char *buf = malloc(n);
	int i;

	for (i = 0; buf && i < 50; i++) {
		ulb_data res = { .ulb_data_len = n, .ulb_data_val = (char *)buf };
		u_int len = n - (u_int)i;

		res.ulb_data_len = len;
		if (ulb_read_pool_1(&len, &res, r->cl) != RPC_SUCCESS ||
		    res.ulb_data_val != (char *)buf || res.ulb_data_len != len ||
		    !check(buf, len, len))
			r->bad++;
	}
	if (!buf)
		r->bad++;
	free(buf);
	return NULL;
}

static void t_threads_share_client(void **state)
{
	struct reader readers[4];
	CLIENT *cl = client(0, 0);
	int i;

	(void)state;
	for (i = 0; i < 4; i++) {
		readers[i] = (struct reader){ .cl = cl, .seed = (unsigned int)i };
		assert_int_equal(pthread_create(&readers[i].thread, NULL, reader_main,
						&readers[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(readers[i].thread, NULL);
		assert_int_equal(readers[i].bad, 0);
	}
	clnt_destroy(cl);
}

/*
 * ULB_PAIR's arguments with the first opaque whole and the second only
 * announced (its length, no bytes): what a peer may send.
 */
static bool_t xdr_pair_cut_short(XDR *xdrs, void *arg)
{
	ulb_pair *p = arg;

	return xdr_ulb_data(xdrs, &p->first) && xdr_u_int(xdrs, &p->second.ulb_data_len);
}

static size_t heap_in_use(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}

/*
 * Arguments that fail to decode halfway: rpcgen's dispatcher returns
 * without svc_freeargs() when svc_getargs() fails, so the transport frees
 * what the decoder made before it failed (here 1 MiB a call), or 64 such
 * calls would leave 64 MiB behind on the server. The call is refused
 * (GARBAGE_ARGS) and never runs.
 */
static void t_partial_args_freed(void **state)
{
	static unsigned char first[MiB];
	ulb_pair p = { .first = { sizeof(first), (char *)first }, .second = { 100, NULL } };
	struct timeval tv = { 10, 0 };
	CLIENT *cl = client(0, 0);
	u_int s = 0;
	size_t before;
	int i;

	(void)state;
	fill(first, sizeof(first), 11);
	assert_int_equal(clnt_call(cl, ULB_PAIR, (xdrproc_t)xdr_pair_cut_short, (caddr_t)&p,
				   (xdrproc_t)xdr_u_int, (caddr_t)&s, tv), RPC_CANTDECODEARGS);
	before = heap_in_use();
	for (i = 0; i < 64; i++)
		assert_int_equal(clnt_call(cl, ULB_PAIR, (xdrproc_t)xdr_pair_cut_short,
					   (caddr_t)&p, (xdrproc_t)xdr_u_int, (caddr_t)&s, tv),
				 RPC_CANTDECODEARGS);
	assert_true(heap_in_use() < before + 16 * MiB);
	/* Whole, the same arguments are served. */
	p.second.ulb_data_len = 0;
	assert_int_equal(ulb_pair_1(&p, &s, cl), RPC_SUCCESS);
	assert_int_equal(s, sum(first, sizeof(first)));
	clnt_destroy(cl);
}

/*
 * A string result: placed in a Write chunk of the library's when long, the
 * caller's NULL pointer left alone until decoding allocates. With
 * RPCRDMA_ULB_RES_NO_PRESET the client does not encode the results to look
 * for a preset buffer (under AddressSanitizer that encode crashed in its
 * xdr_string() interceptor, on the NULL string).
 */
static void t_string_result(void **state)
{
	static const u_int lens[] = { 10, 5000 };
	struct rpcrdma_stats c0, c1;
	CLIENT *cl = client(0, 0);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		u_int n = lens[i];
		char *name = NULL;

		mtsrv_clnt_stats(cl, &c0);
		assert_int_equal(ulb_name_1(&n, &name, cl), RPC_SUCCESS);
		mtsrv_clnt_stats(cl, &c1);
		assert_non_null(name);
		assert_int_equal(strlen(name), n);
		assert_int_equal(strspn(name, "n"), n);
		assert_int_equal(c1.write_chunks - c0.write_chunks, 1);
		clnt_freeres(cl, (xdrproc_t)xdr_wrapstring, (caddr_t)&name);
	}
	clnt_destroy(cl);
}

/* Bindings are checked when registered. */
static void t_register_checks(void **state)
{
	struct rpcrdma_ulb_proc twice[] = { { .proc = 1 }, { .proc = 1 } };
	struct rpcrdma_ulb_proc no_max[] = { { .proc = 1, .res_item = 1 } };
	struct rpcrdma_ulb_proc bad_flag[] = { { .proc = 1, .res_item = 1, .res_max = 8,
						 .flags = 0x80 } };
	struct rpcrdma_ulb bad = ulb;

	(void)state;
	bad.prog = ULB_PROG + 1;
	bad.procs = twice;
	bad.nprocs = 2;
	assert_int_equal(rpcrdma_ulb_register(&bad), -EINVAL);
	bad.procs = no_max;
	bad.nprocs = 1;
	assert_int_equal(rpcrdma_ulb_register(&bad), -EINVAL);
	bad.procs = bad_flag;
	assert_int_equal(rpcrdma_ulb_register(&bad), -EINVAL);
	assert_int_equal(rpcrdma_ulb_register(NULL), -EINVAL);
	assert_int_equal(rpcrdma_ulb_unregister(ULB_PROG + 1, 1), -ENOENT);
	assert_int_equal(rpcrdma_ulb_register(rpcrdma_ulb_nfs3()), 0);
	assert_int_equal(rpcrdma_ulb_unregister(100003, 3), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_read_placed),
		cmocka_unit_test(t_read_pool_zero_copy),
		cmocka_unit_test(t_write_read_chunk),
		cmocka_unit_test(t_reply_chunk_when_needed),
		cmocka_unit_test(t_err_chunk),
		cmocka_unit_test(t_long_call),
		cmocka_unit_test(t_threads_share_client),
		cmocka_unit_test(t_partial_args_freed),
		cmocka_unit_test(t_string_result),
		cmocka_unit_test(t_register_checks),
	};

	return cmocka_run_group_tests(tests, group_up, group_down);
}

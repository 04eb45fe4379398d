/* SPDX-License-Identifier: MIT */
/*
 * One rpcgen program's suite, run twice with the same assertions: over TCP
 * loopback (libtirpc's own svc_vc/clnt_vc) and over RDMA (librpcrdma's
 * SVCXPRT and CLIENT, on softrdma). The server is svc_run() on a thread of
 * its own in both cases.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <softrdma.h>
#ifdef HAVE_VALGRIND_H
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#include "compat_0_1.h"
#include "tt.h"

/* xdr_void as an xdrproc_t, through the type any function pointer casts to. */
#define XDR_VOID ((xdrproc_t)(void (*)(void))xdr_void)

static const struct timeval tt_timeout = { .tv_sec = 10 };

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait (bounded) until @v reaches @want. */
static bool wait_for(atomic_uint *v, unsigned int want)
{
	int64_t deadline = now_ms() + 5000;

	while (atomic_load(v) < want) {
		if (now_ms() > deadline)
			return false;
		poll(NULL, 0, 1);
	}
	return true;
}

static struct tt_server *srv_of(void **state)
{
	return *state;
}

static int setup_tcp(void **state)
{
	static struct tt_server srv;

	if (tt_server_start(&srv, false))
		return -1;
	*state = &srv;
	return 0;
}

static int setup_rdma(void **state)
{
	static struct tt_server srv;

	if (tt_server_start(&srv, true))
		return -1;
	*state = &srv;
	return 0;
}

static int teardown(void **state)
{
	tt_server_stop(srv_of(state));
	return 0;
}

static enum clnt_stat echo(CLIENT *cl, size_t len, unsigned int seed)
{
	tt_blob arg, res;
	enum clnt_stat st;

	arg.tt_blob_len = (u_int)len;
	arg.tt_blob_val = malloc(len ? len : 1);
	assert_non_null(arg.tt_blob_val);
	tt_fill((unsigned char *)arg.tt_blob_val, len, seed);
	memset(&res, 0, sizeof(res));
	st = clnt_call(cl, TT_ECHO, (xdrproc_t)xdr_tt_blob, &arg, (xdrproc_t)xdr_tt_blob, &res,
		       tt_timeout);
	if (st == RPC_SUCCESS) {
		assert_int_equal(res.tt_blob_len, len);
		assert_true(tt_check((unsigned char *)res.tt_blob_val, len, seed));
		clnt_freeres(cl, (xdrproc_t)xdr_tt_blob, &res);
	}
	free(arg.tt_blob_val);
	return st;
}

static void test_null(void **state)
{
	CLIENT *cl = tt_client(srv_of(state), TT_PROG, TT_VERS, 0, 0);

	assert_non_null(cl);
	assert_int_equal(tt_null_1(NULL, NULL, cl), RPC_SUCCESS);
	assert_int_equal(clnt_call(cl, TT_NULL, XDR_VOID, NULL, XDR_VOID,
				   NULL, tt_timeout), RPC_SUCCESS);
	clnt_destroy(cl);
}

/* Inline-sized calls on a client with default sizes. */
static void test_echo_small(void **state)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 4, 5, 7, 8, 100, 1000, 2047, 3000 };
	CLIENT *cl = tt_client(srv_of(state), TT_PROG, TT_VERS, 0, 0);
	size_t i;

	assert_non_null(cl);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		assert_int_equal(echo(cl, sizes[i], (unsigned int)i), RPC_SUCCESS);
	clnt_destroy(cl);
}

/* Around and far beyond the inline size: long calls and Reply chunks over RDMA. */
static void test_echo_large(void **state)
{
	static const size_t sizes[] = { 3900, 4000, 4092, 4093, 4096, 4100, 5000, 8192,
					65536, 65537, 1024 * 1024 };
	struct tt_server *srv = srv_of(state);
	CLIENT *cl = tt_client(srv, TT_PROG, TT_VERS, TT_BIG, TT_BIG);
	struct rpcrdma_stats before = { RPCRDMA_SIZED(before) }, after = { RPCRDMA_SIZED(after) };
	size_t i;

	assert_non_null(cl);
	if (srv->rdma)
		assert_true(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&before));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		assert_int_equal(echo(cl, sizes[i], (unsigned int)i + 50), RPC_SUCCESS);
	/* Small again on the same client. */
	assert_int_equal(echo(cl, 10, 1), RPC_SUCCESS);
	if (srv->rdma) {
		/*
		 * recvsize above the inline size: every call offered a Reply
		 * chunk; the ten calls from 4000 bytes on, whose transport header
		 * with that Reply chunk leaves too little room inline, went as long
		 * calls (a Read chunk each); the call buffers are registered, so
		 * nothing bounced.
		 */
		assert_true(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&after));
		assert_int_equal(after.reply_chunks - before.reply_chunks, 12);
		assert_int_equal(after.read_chunks - before.read_chunks, 10);
		assert_int_equal(after.bounce_bytes - before.bounce_bytes, 0);
		/* 0.1's control code answers with 0.1's layout: 18 counters, no struct_size. */
		uint64_t old[18];

		assert_true(clnt_control(cl, RPCRDMA_CLGET_STATS_0_1, (char *)old));
		assert_int_equal(old[0], after.calls);
		assert_int_equal(old[6], after.reply_chunks);
		assert_int_equal(old[14], after.connects);
	}
	clnt_destroy(cl);
}

/* A small argument and a 1 MiB result; a 1 MiB argument and a small result. */
static void test_large_one_way(void **state)
{
	CLIENT *cl = tt_client(srv_of(state), TT_PROG, TT_VERS, TT_BIG, TT_BIG);
	u_int n = 1024 * 1024, sum = 0;
	tt_blob res, arg;

	assert_non_null(cl);
	memset(&res, 0, sizeof(res));
	assert_int_equal(tt_fill_1(&n, &res, cl), RPC_SUCCESS);
	assert_int_equal(res.tt_blob_len, n);
	assert_true(tt_check((unsigned char *)res.tt_blob_val, n, n));
	clnt_freeres(cl, (xdrproc_t)xdr_tt_blob, &res);

	arg.tt_blob_len = n;
	arg.tt_blob_val = malloc(n);
	assert_non_null(arg.tt_blob_val);
	tt_fill((unsigned char *)arg.tt_blob_val, n, 9);
	assert_int_equal(tt_sum_1(&arg, &sum, cl), RPC_SUCCESS);
	assert_int_equal(sum, tt_sum((unsigned char *)arg.tt_blob_val, n));
	free(arg.tt_blob_val);
	clnt_destroy(cl);
}

/* Every procedure, interleaved, on one client. */
static void test_many_procedures(void **state)
{
	CLIENT *cl = tt_client(srv_of(state), TT_PROG, TT_VERS, 0, 0);
	int i;

	assert_non_null(cl);
	for (i = 0; i < 100; i++) {
		tt_pair pair = { .a = i, .b = -3 * i };
		char word[] = "hello, rdma", *in = word, *up = NULL;
		u_int n = (u_int)(i * 13 % 2000);
		tt_blob blob;
		int sum = 0;

		assert_int_equal(tt_add_1(&pair, &sum, cl), RPC_SUCCESS);
		assert_int_equal(sum, -2 * i);
		assert_int_equal(tt_upper_1(&in, &up, cl), RPC_SUCCESS);
		assert_string_equal(up, "HELLO, RDMA");
		clnt_freeres(cl, (xdrproc_t)xdr_wrapstring, &up);
		memset(&blob, 0, sizeof(blob));
		assert_int_equal(tt_fill_1(&n, &blob, cl), RPC_SUCCESS);
		assert_int_equal(blob.tt_blob_len, n);
		assert_true(tt_check((unsigned char *)blob.tt_blob_val, n, n));
		clnt_freeres(cl, (xdrproc_t)xdr_tt_blob, &blob);
		assert_int_equal(tt_null_1(NULL, NULL, cl), RPC_SUCCESS);
	}
	clnt_destroy(cl);
}

static void creds_call(CLIENT *cl, tt_creds *res)
{
	memset(res, 0, sizeof(*res));
	assert_int_equal(tt_creds_1(NULL, res, cl), RPC_SUCCESS);
}

/* AUTH_NONE by default; AUTH_SYS credentials reach the service intact. */
static void test_auth(void **state)
{
	struct tt_server *srv = srv_of(state);
	CLIENT *cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	gid_t gids[3] = { 100, 200, 300 };
	AUTH *none;
	tt_creds res;

	assert_non_null(cl);
	creds_call(cl, &res);
	assert_int_equal(res.flavor, AUTH_NONE);
	assert_int_equal(res.caller_family, AF_INET);
	assert_string_equal(res.netid, srv->rdma ? "rdma" : "tcp");
	clnt_freeres(cl, (xdrproc_t)xdr_tt_creds, &res);

	none = cl->cl_auth;
	cl->cl_auth = authunix_create("tirpc-test", 4321, 8765, 3, gids);
	assert_non_null(cl->cl_auth);
	creds_call(cl, &res);
	assert_int_equal(res.flavor, AUTH_SYS);
	assert_int_equal(res.uid, 4321);
	assert_int_equal(res.gid, 8765);
	assert_int_equal(res.gids.gids_len, 3);
	assert_int_equal(res.gids.gids_val[0], 100);
	assert_int_equal(res.gids.gids_val[2], 300);
	assert_string_equal(res.machine, "tirpc-test");
	clnt_freeres(cl, (xdrproc_t)xdr_tt_creds, &res);
	auth_destroy(cl->cl_auth);
	cl->cl_auth = none;
	auth_destroy(none);
	clnt_destroy(cl);
}

static void expect_error(CLIENT *cl, rpcproc_t proc, xdrproc_t xargs, void *args,
			 enum clnt_stat want)
{
	struct rpc_err err;

	assert_int_equal(clnt_call(cl, proc, xargs, args, XDR_VOID, NULL, tt_timeout),
			 want);
	clnt_geterr(cl, &err);
	assert_int_equal(err.re_status, want);
}

/* Encodes one int where the procedure expects two: the server cannot decode it. */
static bool_t xdr_half_pair(XDR *xdrs, int *a)
{
	return xdr_int(xdrs, a);
}

static void test_errors(void **state)
{
	struct tt_server *srv = srv_of(state);
	CLIENT *cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	CLIENT *noprog = tt_client(srv, TT_PROG + 1, TT_VERS, 0, 0);
	CLIENT *novers = tt_client(srv, TT_PROG, TT_VERS + 6, 0, 0);
	struct rpc_err err;
	tt_pair pair = { 1, 2 };
	int half = 5, sum = 0;

	assert_non_null(cl);
	assert_non_null(noprog);
	assert_non_null(novers);
	expect_error(cl, 99, XDR_VOID, NULL, RPC_PROCUNAVAIL);
	expect_error(noprog, TT_NULL, XDR_VOID, NULL, RPC_PROGUNAVAIL);
	expect_error(novers, TT_NULL, XDR_VOID, NULL, RPC_PROGVERSMISMATCH);
	clnt_geterr(novers, &err);
	assert_int_equal(err.re_vers.low, TT_VERS);
	assert_int_equal(err.re_vers.high, TT_VERS);
	expect_error(cl, TT_ADD, (xdrproc_t)xdr_half_pair, &half, RPC_CANTDECODEARGS);
	/* The connection is still good after each of them. */
	assert_int_equal(tt_add_1(&pair, &sum, cl), RPC_SUCCESS);
	assert_int_equal(sum, 3);
	clnt_destroy(novers);
	clnt_destroy(noprog);
	clnt_destroy(cl);
}

/*
 * A procedure that outlasts the caller's timeout; the client stays usable.
 * The procedure blocks until the test lets it go, after the client gave
 * up: a client on a loaded machine may not run again before a fixed
 * sleep ends, and would then find the reply waiting.
 */
static void test_timeout(void **state)
{
	CLIENT *cl = tt_client(srv_of(state), TT_PROG, TT_VERS, 0, 0);
	struct timeval short_wait = { .tv_usec = 150 * 1000 }, got;
	struct rpc_err err;
	tt_pair pair = { 20, 22 };
	u_int ms = TT_SLEEP_BLOCKING;
	int64_t t0, dt;
	enum clnt_stat st;
	int sum = 0;

	assert_non_null(cl);
	atomic_store(&tt_stats.release_blocked, false);
	t0 = now_ms();
	st = clnt_call(cl, TT_SLEEP, (xdrproc_t)xdr_u_int, &ms, XDR_VOID, NULL, short_wait);
	dt = now_ms() - t0;
	/* The single-threaded servers serve the next call only once this one returns. */
	atomic_store(&tt_stats.release_blocked, true);
	assert_int_equal(st, RPC_TIMEDOUT);
	/* It gave up on its own: the procedure blocks for 10 s unless let go. */
	assert_true(dt >= 140 && dt < 5000);
	clnt_geterr(cl, &err);
	assert_int_equal(err.re_status, RPC_TIMEDOUT);
	/* CLSET_TIMEOUT overrides the per-call timeout, as clnt_vc's does. */
	assert_true(clnt_control(cl, CLSET_TIMEOUT, (char *)&tt_timeout));
	assert_true(clnt_control(cl, CLGET_TIMEOUT, (char *)&got));
	assert_int_equal(got.tv_sec, tt_timeout.tv_sec);
	assert_int_equal(clnt_call(cl, TT_ADD, (xdrproc_t)xdr_tt_pair, &pair, (xdrproc_t)xdr_int,
				   &sum, short_wait), RPC_SUCCESS);
	assert_int_equal(sum, 42);
	clnt_destroy(cl);
}

/* Nobody listening: NULL, and the reason in rpc_createerr, as clnt_vc_create() reports it. */
static void test_create_refused(void **state)
{
	struct tt_server srv = *(struct tt_server *)*state;
	struct sockaddr_in *sin = (struct sockaddr_in *)&srv.addr;
	struct sockaddr_in spare = { .sin_family = AF_INET };
	socklen_t len = sizeof(spare);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	/* A port bound and not listening: TCP refuses it, and softrdma has nobody there. */
	spare.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&spare, sizeof(spare)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&spare, &len), 0);
	sin->sin_port = spare.sin_port;
	memset(&rpc_createerr, 0, sizeof(rpc_createerr));
	assert_null(tt_client(&srv, TT_PROG, TT_VERS, 0, 0));
	assert_int_equal(rpc_createerr.cf_stat, RPC_SYSTEMERROR);
	assert_int_equal(rpc_createerr.cf_error.re_errno, ECONNREFUSED);
	close(fd);
}

/* clnt_control requests that both transports share. */
static void test_control(void **state)
{
	struct tt_server *srv = srv_of(state);
	CLIENT *cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	struct sockaddr_storage ss;
	struct netbuf nb;
	u_int32_t v, xid;

	assert_non_null(cl);
	assert_true(clnt_control(cl, CLGET_PROG, (char *)&v));
	assert_int_equal(v, TT_PROG);
	assert_true(clnt_control(cl, CLGET_VERS, (char *)&v));
	assert_int_equal(v, TT_VERS);
	v = TT_VERS + 6;
	assert_true(clnt_control(cl, CLSET_VERS, (char *)&v));
	expect_error(cl, TT_NULL, XDR_VOID, NULL, RPC_PROGVERSMISMATCH);
	v = TT_VERS;
	assert_true(clnt_control(cl, CLSET_VERS, (char *)&v));
	xid = 0x12345678;
	assert_true(clnt_control(cl, CLSET_XID, (char *)&xid));
	assert_int_equal(tt_null_1(NULL, NULL, cl), RPC_SUCCESS);
	assert_true(clnt_control(cl, CLGET_XID, (char *)&v));
	/*
	 * clnt_vc stores xid + 1 in network order and decrements that as a
	 * host integer before each call: on a little-endian machine the call
	 * goes out, and CLGET_XID reports, a different xid than was set.
	 */
	if (srv->rdma || htonl(1) == 1)
		assert_int_equal(v, xid);
	else
		assert_int_equal(v, ntohl(htonl(xid + 1) - 1));
	assert_true(clnt_control(cl, CLGET_SVC_ADDR, (char *)&nb));
	assert_int_equal(nb.len, sizeof(struct sockaddr_in));
	assert_memory_equal(nb.buf, &srv->addr, sizeof(struct sockaddr_in));
	assert_true(clnt_control(cl, CLGET_SERVER_ADDR, (char *)&ss));
	assert_memory_equal(&ss, &srv->addr, sizeof(struct sockaddr_in));
	assert_true(clnt_control(cl, CLGET_FD, (char *)&v));
	assert_false(clnt_control(cl, 0x7fff, (char *)&v));
	clnt_destroy(cl);
}

struct worker {
	CLIENT *cl;
	unsigned int id;
	int failures;
	atomic_bool done;
	pthread_t thread;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	unsigned int i;

	for (i = 0; i < 60; i++) {
		size_t len = (w->id * 97 + i * 31) % 2500;
		tt_blob a, r;

		a.tt_blob_len = (u_int)len;
		a.tt_blob_val = malloc(len + 1);
		if (!a.tt_blob_val) {
			w->failures++;
			continue;
		}
		tt_fill((unsigned char *)a.tt_blob_val, len, w->id + i);
		memset(&r, 0, sizeof(r));
		if (tt_echo_1(&a, &r, w->cl) != RPC_SUCCESS || r.tt_blob_len != len ||
		    !tt_check((unsigned char *)r.tt_blob_val, len, w->id + i))
			w->failures++;
		xdr_free((xdrproc_t)xdr_tt_blob, &r);
		free(a.tt_blob_val);
	}
	atomic_store(&w->done, true);
	return NULL;
}

/* Several clients at once, and several threads on one client, against one svc_run. */
static void test_concurrent(void **state)
{
	struct tt_server *srv = srv_of(state);
	struct worker w[10];
	CLIENT *shared;
	unsigned int i;

	shared = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	assert_non_null(shared);
	for (i = 0; i < 10; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		w[i].cl = i < 6 ? tt_client(srv, TT_PROG, TT_VERS, 0, 0) : shared;
		assert_non_null(w[i].cl);
	}
	for (i = 0; i < 10; i++)
		assert_int_equal(pthread_create(&w[i].thread, NULL, worker_run, &w[i]), 0);
	for (i = 0; i < 10; i++) {
		pthread_join(w[i].thread, NULL);
		assert_int_equal(w[i].failures, 0);
		if (w[i].cl != shared)
			clnt_destroy(w[i].cl);
	}
	clnt_destroy(shared);
}

struct hammer {
	CLIENT *cl;
	atomic_bool *stop;
	atomic_int *started;
	unsigned int calls;
	int failures;
	pthread_t thread;
};

static void *hammer_run(void *arg)
{
	struct hammer *h = arg;

	u_int ms = 1;

	atomic_fetch_add(h->started, 1);
	/* Calls that take the server a millisecond each keep its queue full. */
	while (!atomic_load(h->stop)) {
		if (tt_sleep_1(&ms, NULL, h->cl) != RPC_SUCCESS)
			h->failures++;
		h->calls++;
	}
	return NULL;
}

/*
 * One connection kept busy by eight threads does not starve another: the
 * other's sequential calls all complete, each well within its timeout.
 */
static void test_fairness(void **state)
{
	struct tt_server *srv = srv_of(state);
	struct timeval wait = { .tv_sec = 2 };
	CLIENT *busy = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	CLIENT *quiet = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	struct hammer h[8];
	atomic_bool stop = false;
	atomic_int started = 0;
	int64_t until;
	int i, slow = 0;

	assert_non_null(busy);
	assert_non_null(quiet);
	for (i = 0; i < 8; i++) {
		h[i] = (struct hammer){ .cl = busy, .stop = &stop, .started = &started };
		assert_int_equal(pthread_create(&h[i].thread, NULL, hammer_run, &h[i]), 0);
	}
	/* Every hammer running (a loaded machine may start one late), then the pipeline full. */
	until = now_ms() + 10000;
	while (atomic_load(&started) < 8 && now_ms() < until)
		poll(NULL, 0, 1);
	assert_int_equal(atomic_load(&started), 8);
	poll(NULL, 0, 50);
	for (i = 0; i < 40; i++) {
		tt_pair pair = { i, 1 };
		int64_t t0 = now_ms();
		int sum = 0;

		assert_int_equal(clnt_call(quiet, TT_ADD, (xdrproc_t)xdr_tt_pair, &pair,
					   (xdrproc_t)xdr_int, &sum, wait), RPC_SUCCESS);
		assert_int_equal(sum, i + 1);
		if (now_ms() - t0 > 500)
			slow++;
	}
	atomic_store(&stop, true);
	for (i = 0; i < 8; i++) {
		pthread_join(h[i].thread, NULL);
		assert_int_equal(h[i].failures, 0);
		assert_true(h[i].calls > 0);
	}
	assert_int_equal(slow, 0);
	clnt_destroy(quiet);
	clnt_destroy(busy);
}

/*
 * Connections that clients closed are destroyed by libtirpc (XPRT_DIED):
 * in the end only the listener and the asking connection are registered.
 */
static void test_conns_reaped(void **state)
{
	struct tt_server *srv = srv_of(state);
	CLIENT *asking = tt_client(srv, TT_PROG, TT_VERS, 0, 0), *cl[5];
	int64_t deadline;
	int i, n = 0;

	assert_non_null(asking);
	for (i = 0; i < 5; i++) {
		cl[i] = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
		assert_non_null(cl[i]);
		assert_int_equal(tt_null_1(NULL, NULL, cl[i]), RPC_SUCCESS);
	}
	assert_int_equal(tt_xprts_1(NULL, &n, asking), RPC_SUCCESS);
	assert_true(n >= 7);
	for (i = 0; i < 5; i++)
		clnt_destroy(cl[i]);
	deadline = now_ms() + 5000;
	do {
		poll(NULL, 0, 5);
		assert_int_equal(tt_xprts_1(NULL, &n, asking), RPC_SUCCESS);
	} while (n != 2 && now_ms() < deadline);
	assert_int_equal(n, 2);
	clnt_destroy(asking);
}

/*
 * A client that gives up on a call and goes away while the server works on
 * it (a procedure that blocks until the client is gone, as test_timeout's).
 */
static void test_client_gone_mid_call(void **state)
{
	struct tt_server *srv = srv_of(state);
	struct timeval short_wait = { .tv_usec = 50 * 1000 };
	CLIENT *cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	u_int ms = TT_SLEEP_BLOCKING;
	tt_pair pair = { 2, 3 };
	enum clnt_stat st;
	int sum = 0, i;

	assert_non_null(cl);
	atomic_store(&tt_stats.release_blocked, false);
	st = clnt_call(cl, TT_SLEEP, (xdrproc_t)xdr_u_int, &ms, XDR_VOID, NULL, short_wait);
	clnt_destroy(cl);
	atomic_store(&tt_stats.release_blocked, true);
	assert_int_equal(st, RPC_TIMEDOUT);
	/* The server answers into the void, notices, and goes on serving. */
	for (i = 0; i < 3; i++) {
		cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
		assert_non_null(cl);
		assert_int_equal(tt_add_1(&pair, &sum, cl), RPC_SUCCESS);
		assert_int_equal(sum, 5);
		clnt_destroy(cl);
	}
}

struct held_call {
	CLIENT *cl;
	enum clnt_stat st;
	int64_t took;
	pthread_t thread;
};

static void *held_run(void *arg)
{
	struct held_call *h = arg;
	int64_t t0 = now_ms();

	h->st = clnt_call(h->cl, TT_HOLD, XDR_VOID, NULL, XDR_VOID, NULL,
			  tt_timeout);
	h->took = now_ms() - t0;
	return NULL;
}

/* The server destroys a connection (svc_destroy) while a call on it is in flight. */
static void test_server_destroys_conn(void **state)
{
	struct tt_server *srv = srv_of(state);
	CLIENT *killer = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	struct held_call h = { .cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0) };
	unsigned int held = atomic_load(&tt_stats.held);
	tt_pair pair = { 7, 8 };
	int killed = 0, sum = 0;

	assert_non_null(killer);
	assert_non_null(h.cl);
	assert_int_equal(pthread_create(&h.thread, NULL, held_run, &h), 0);
	assert_true(wait_for(&tt_stats.held, held + 1));
	assert_int_equal(tt_kill_held_1(NULL, &killed, killer), RPC_SUCCESS);
	assert_int_equal(killed, 1);
	pthread_join(h.thread, NULL);
	assert_int_equal(h.st, RPC_CANTRECV);
	assert_true(h.took < 5000);
	/* The server and the other connection are unharmed. */
	assert_int_equal(tt_add_1(&pair, &sum, killer), RPC_SUCCESS);
	assert_int_equal(sum, 15);
	/*
	 * Where the transports differ: clnt_vc's socket is dead for good, our
	 * CLIENT connects again for the next call.
	 */
	if (srv->rdma)
		assert_int_equal(tt_null_1(NULL, NULL, h.cl), RPC_SUCCESS);
	else
		assert_int_not_equal(tt_null_1(NULL, NULL, h.cl), RPC_SUCCESS);
	clnt_destroy(h.cl);
	clnt_destroy(killer);
}

/*
 * READ- and WRITE-like transfers of 1 MiB on clients of default sizes. Over
 * RDMA they go by direct data placement: the result into the caller's
 * buffer (named with RPCRDMA_CLSET_DDP_RESULT, decoded in place), the
 * argument by RDMA Read from the caller's buffer; neither fits inline.
 */
static void test_ddp(void **state)
{
	struct tt_server *srv = srv_of(state);
	CLIENT *cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	struct rpcrdma_stats before = { RPCRDMA_SIZED(before) }, after = { RPCRDMA_SIZED(after) };
	u_int n = 1024 * 1024, sum = 0;
	struct rpcrdma_ddp_buf ddp;
	unsigned char *buf;
	unsigned int releases = atomic_load(&tt_stats.read_releases);
	unsigned int payloads = atomic_load(&tt_stats.write_payloads);
	tt_blob res, arg;
	int round;

	assert_non_null(cl);
	buf = malloc(n);
	assert_non_null(buf);
	ddp.buf = buf;
	ddp.len = n;
	if (srv->rdma) {
		assert_true(clnt_control(cl, RPCRDMA_CLSET_MEM_REGISTER, (char *)&ddp));
		assert_true(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&before));
	}
	for (round = 0; round < 3; round++) {
		u_int len = round == 2 ? 1001 : n;

		memset(buf, 0, n);
		if (srv->rdma)
			assert_true(clnt_control(cl, RPCRDMA_CLSET_DDP_RESULT, (char *)&ddp));
		/* Decode in place: the result's data pointer is the DDP buffer. */
		res.tt_blob_len = len;
		res.tt_blob_val = (char *)buf;
		assert_int_equal(tt_read_1(&len, &res, cl), RPC_SUCCESS);
		assert_ptr_equal(res.tt_blob_val, buf);
		assert_int_equal(res.tt_blob_len, len);
		assert_true(tt_check(buf, len, len + 1));

		tt_fill(buf, len, 77 + (unsigned int)round);
		arg.tt_blob_len = len;
		arg.tt_blob_val = (char *)buf;
		if (srv->rdma) {
			struct rpcrdma_ddp_buf darg = { .buf = buf, .len = len };

			assert_true(clnt_control(cl, RPCRDMA_CLSET_DDP_ARG, (char *)&darg));
		}
		sum = 0;
		assert_int_equal(tt_write_1(&arg, &sum, cl), RPC_SUCCESS);
		assert_int_equal(sum, tt_sum(buf, len));
	}
	if (srv->rdma) {
		assert_true(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&after));
		assert_int_equal(after.write_chunks - before.write_chunks, 3);
		assert_int_equal(after.read_chunks - before.read_chunks, 3);
		assert_int_equal(after.reply_chunks - before.reply_chunks, 0);
		/* Registered memory: not a byte through a bounce buffer. */
		assert_int_equal(after.bounce_bytes - before.bounce_bytes, 0);
		assert_true(wait_for(&tt_stats.read_releases, releases + 3));
		assert_int_equal(atomic_load(&tt_stats.write_payloads) - payloads, 3);
		assert_int_equal(atomic_load(&tt_stats.write_mismatch), 0);
	}
	clnt_destroy(cl);
	free(buf);
}

/*
 * RDMA only: a service destroys the listener while a call on another
 * connection is in flight. The listener takes its connections along (unlike
 * svc_vc's): the held call fails at once, and the destroying call's own reply
 * is not sent; libtirpc destroys that connection when the dispatch returns.
 */
static void test_listener_destroyed_in_flight(void **state)
{
	struct tt_server *srv = srv_of(state);
	CLIENT *killer = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	struct held_call h = { .cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0) };
	unsigned int held = atomic_load(&tt_stats.held);
	struct timeval wait = { .tv_sec = 2 };
	int ended = 0;
	int64_t t0;

	assert_non_null(killer);
	assert_non_null(h.cl);
	assert_int_equal(pthread_create(&h.thread, NULL, held_run, &h), 0);
	assert_true(wait_for(&tt_stats.held, held + 1));
	t0 = now_ms();
	assert_int_equal(clnt_call(killer, TT_END_LISTENER, XDR_VOID, NULL, (xdrproc_t)xdr_int,
				   &ended, wait), RPC_CANTRECV);
	assert_true(now_ms() - t0 < 2000);
	pthread_join(h.thread, NULL);
	assert_int_equal(h.st, RPC_CANTRECV);
	assert_true(h.took < 5000);
	atomic_fetch_sub(&tt_stats.held, 1);
	srv->stopped = true;
	clnt_destroy(h.cl);
	clnt_destroy(killer);
}

/* A TT_SLEEP call on a thread of its own: @ms is TT_SLEEP_DEFERRED or _BLOCKING. */
struct sleep_call {
	CLIENT *cl;
	u_int ms;
	enum clnt_stat st;
	atomic_bool done;
	pthread_t thread;
};

static void *sleep_run(void *arg)
{
	struct sleep_call *d = arg;

	d->st = clnt_call(d->cl, TT_SLEEP, (xdrproc_t)xdr_u_int, (caddr_t)&d->ms, XDR_VOID, NULL,
			  tt_timeout);
	atomic_store(&d->done, true);
	return NULL;
}

/*
 * RPCRDMA_SVCSET_SPIN_US on the listener: bounded, read back. Under
 * svc_run(), a connection polled for its next call is never armed while
 * the client (polling too) keeps calling; under rpcrdma_svc_run() the
 * poller's passes arm what they drain, so there the calls must just work.
 */
static void server_spin(struct tt_server *srv, CLIENT *cl)
{
	struct softrdma_qp_stats before, after;
	u_int us;
	int i;

	assert_true(SVC_CONTROL(srv->listener, RPCRDMA_SVCGET_SPIN_US, &us));
	assert_int_equal(us, 0);
	us = 1000001;
	assert_false(SVC_CONTROL(srv->listener, RPCRDMA_SVCSET_SPIN_US, &us));
	assert_false(SVC_CONTROL(srv->listener, RPCRDMA_SVCSET_SPIN_US, NULL));
	us = 1000000;
	assert_true(SVC_CONTROL(srv->listener, RPCRDMA_SVCSET_SPIN_US, &us));
	us = 0;
	assert_true(SVC_CONTROL(srv->listener, RPCRDMA_SVCGET_SPIN_US, &us));
	assert_int_equal(us, 1000000);
	assert_int_equal(tt_null_1(NULL, NULL, cl), RPC_SUCCESS);
	softrdma_qp_stats_sum(NULL, &before);
	for (i = 0; i < 50; i++)
		assert_int_equal(tt_null_1(NULL, NULL, cl), RPC_SUCCESS);
	softrdma_qp_stats_sum(NULL, &after);
	if (!tt_threads())
		assert_int_equal(after.recv_cq_arms, before.recv_cq_arms);
	us = 0;
	assert_true(SVC_CONTROL(srv->listener, RPCRDMA_SVCSET_SPIN_US, &us));
}

/*
 * RPCRDMA_SPIN_US: the default of the CLIENTs and listeners made
 * afterwards; garbage is ignored. Returns the window both got. The
 * listener is made on the server's thread (TT_SPIN_DEFAULT), which owns
 * every registered listener while it runs svc_run().
 */
static u_int spin_default_from_env(void **state, const char *value)
{
	u_int us = 12345;
	int svc_us = 54321;
	CLIENT *cl;

	assert_int_equal(setenv("RPCRDMA_SPIN_US", value, 1), 0);
	cl = tt_client(srv_of(state), TT_PROG, TT_VERS, 0, 0);
	unsetenv("RPCRDMA_SPIN_US");
	assert_non_null(cl);
	assert_true(clnt_control(cl, RPCRDMA_CLGET_SPIN_US, (char *)&us));
	assert_int_equal(tt_spin_default_1((char **)&value, &svc_us, cl), RPC_SUCCESS);
	assert_int_equal((int)us, svc_us);
	clnt_destroy(cl);
	return us;
}

/*
 * RPCRDMA_CLSET_SPIN_US: bounded, read back; a client that polls long
 * enough never arms its receive CQ (no sleep, no wake-up), one that does not
 * poll does; and neither the window nor the sleep after it outlasts the
 * call's timeout.
 */
static void test_spin(void **state)
{
	CLIENT *cl = tt_client(srv_of(state), TT_PROG, TT_VERS, 0, 0);
	struct timeval short_wait = { .tv_usec = 600 * 1000 };
	struct softrdma_qp_stats before, after;
	u_int us, ms = 1500, late = 20;
	int64_t t0, dt;
	int i;

	assert_int_equal(spin_default_from_env(state, "250"), 250);
	assert_int_equal(spin_default_from_env(state, "1000001"), 0);
	assert_int_equal(spin_default_from_env(state, "-5"), 0);
	assert_int_equal(spin_default_from_env(state, "20us"), 0);
	assert_non_null(cl);
	us = 0;
	assert_true(clnt_control(cl, RPCRDMA_CLSET_SPIN_US, (char *)&us));
	us = 1000001;
	assert_false(clnt_control(cl, RPCRDMA_CLSET_SPIN_US, (char *)&us));
	assert_true(clnt_control(cl, RPCRDMA_CLGET_SPIN_US, (char *)&us));
	assert_int_equal(us, 0);
	assert_int_equal(tt_null_1(NULL, NULL, cl), RPC_SUCCESS);

	/*
	 * Without the window the client sleeps for its replies: replies that
	 * come 20 ms late find it armed (each one disarms it again).
	 */
	softrdma_qp_stats_sum(&before, NULL);
	for (i = 0; i < 3; i++)
		assert_int_equal(clnt_call(cl, TT_SLEEP, (xdrproc_t)xdr_u_int, &late, XDR_VOID,
					   NULL, tt_timeout), RPC_SUCCESS);
	softrdma_qp_stats_sum(&after, NULL);
	assert_true(after.recv_cq_arms >= before.recv_cq_arms + 2);

	us = 1000000;
	assert_true(clnt_control(cl, RPCRDMA_CLSET_SPIN_US, (char *)&us));
	assert_true(clnt_control(cl, RPCRDMA_CLGET_SPIN_US, (char *)&us));
	assert_int_equal(us, 1000000);
	/* With it, neither quick nor late replies find it armed. */
	softrdma_qp_stats_sum(&before, NULL);
	for (i = 0; i < 50; i++)
		assert_int_equal(tt_null_1(NULL, NULL, cl), RPC_SUCCESS);
	for (i = 0; i < 3; i++)
		assert_int_equal(clnt_call(cl, TT_SLEEP, (xdrproc_t)xdr_u_int, &late, XDR_VOID,
					   NULL, tt_timeout), RPC_SUCCESS);
	softrdma_qp_stats_sum(&after, NULL);
	assert_int_equal(after.recv_cq_arms, before.recv_cq_arms);

	/*
	 * A second's window, a 600 ms timeout: the call times out at 600 ms,
	 * not at 1200 (a sleep timed from before the window; the server's
	 * reply comes at 1500). The bound leaves room for a loaded machine
	 * under valgrind.
	 */
	t0 = now_ms();
	assert_int_equal(clnt_call(cl, TT_SLEEP, (xdrproc_t)xdr_u_int, &ms, XDR_VOID,
				   NULL, short_wait), RPC_TIMEDOUT);
	dt = now_ms() - t0;
	if (dt < 590 || dt >= 1150)
		fail_msg("timed out after %lld ms, not 600", (long long)dt);
	server_spin(srv_of(state), cl);
	clnt_destroy(cl);
}

/* Receive CQ arms of @n calls of @proc with argument @ms (TT_SLEEP) or none. */
static unsigned long arms_of(CLIENT *cl, int n, u_int proc, u_int ms)
{
	struct softrdma_qp_stats before, after;

	softrdma_qp_stats_sum(&before, NULL);
	while (n-- > 0)
		assert_int_equal(clnt_call(cl, proc, proc == TT_SLEEP ? (xdrproc_t)xdr_u_int :
					   XDR_VOID, &ms, XDR_VOID, NULL, tt_timeout), RPC_SUCCESS);
	softrdma_qp_stats_sum(&after, NULL);
	return after.recv_cq_arms - before.recv_cq_arms;
}

/*
 * Runs of 400 quick NULL calls test_spin_auto() may take to see the window
 * catch one. Five were seen to miss (all 2,000 calls slept) with the suite
 * running two tests at a time beside a busy process; each run takes about
 * 20 ms, so twenty stay well inside the test's time.
 */
#define SPIN_AUTO_RUNS	20

/* Microseconds per NULL call over @n calls, polling up to 50 us for each reply. */
static double us_per_null_polling(CLIENT *cl, int n)
{
	struct timespec t0, t1;
	u_int us = 50;

	assert_true(clnt_control(cl, RPCRDMA_CLSET_SPIN_US, (char *)&us));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	arms_of(cl, n, TT_NULL, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	us = RPCRDMA_SPIN_AUTO;
	assert_true(clnt_control(cl, RPCRDMA_CLSET_SPIN_US, (char *)&us));
	return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3 / n;
}

/*
 * RPCRDMA_SPIN_AUTO, the default window: read back, set again; slow
 * replies find the CLIENT asleep (armed) each time, and quick ones, once
 * more after slow ones, are caught by polling. Quick means well inside the
 * window's 50 us cap, measured first with polling forced: not so under
 * valgrind, which runs one thread at a time (the server cannot answer while
 * the client polls), nor, at times, under TSan with a threaded server,
 * whose hand-offs then take longer than the cap.
 */
static void test_spin_auto(void **state)
{
	CLIENT *cl = tt_client(srv_of(state), TT_PROG, TT_VERS, 0, 0);
	u_int us = 12345;
	unsigned long arms;

	assert_non_null(cl);
	assert_true(clnt_control(cl, RPCRDMA_CLGET_SPIN_US, (char *)&us));
	assert_int_equal(us, RPCRDMA_SPIN_AUTO);
	us = RPCRDMA_SPIN_AUTO - 1;
	assert_false(clnt_control(cl, RPCRDMA_CLSET_SPIN_US, (char *)&us));
	us = 0;
	assert_true(clnt_control(cl, RPCRDMA_CLSET_SPIN_US, (char *)&us));
	us = RPCRDMA_SPIN_AUTO;
	assert_true(clnt_control(cl, RPCRDMA_CLSET_SPIN_US, (char *)&us));
	us = 0;
	assert_true(clnt_control(cl, RPCRDMA_CLGET_SPIN_US, (char *)&us));
	assert_int_equal(us, RPCRDMA_SPIN_AUTO);
	/* The server has no adaptive window. */
	us = RPCRDMA_SPIN_AUTO;
	assert_false(SVC_CONTROL(srv_of(state)->listener, RPCRDMA_SVCSET_SPIN_US, &us));

	/* Replies 5 ms late: every call sleeps for its reply. */
	arms = arms_of(cl, 6, TT_SLEEP, 5);
	assert_true(arms >= 6);
	/*
	 * A window that a preempted poller did not pay for is skipped for up
	 * to 256 calls: on a loaded machine (tests in parallel) a run of 400
	 * may see none tried. A few runs, each with its replies quick, must
	 * see one catch.
	 */
	if (!RUNNING_ON_VALGRIND) {
		double us_each = 0;
		int run;

		for (run = 0, arms = 400; run < SPIN_AUTO_RUNS && arms >= 400; run++) {
			us_each = us_per_null_polling(cl, 100);
			arms = us_each > 25 ? 0 : arms_of(cl, 400, TT_NULL, 0);
		}
		if (us_each > 25)
			print_message("replies took %.0f us each with polling here, too close to the "
				      "window's 50 us cap: the window's catch is not checked\n", us_each);
		else if (arms >= 400)
			fail_msg("%d runs of 400 quick replies (the last %.1f us each): %lu arms, "
				 "none caught by the window", run, us_each, arms);
	}
	clnt_destroy(cl);
}

/*
 * A service routine defers its call to a worker (rpcrdma_svc_defer()):
 * svc_run() goes on serving another client while the call is held, and
 * the worker's answer reaches the caller.
 */
static void test_deferred_reply(void **state)
{
	struct tt_server *srv = srv_of(state);
	struct sleep_call d = { .cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0),
				.ms = TT_SLEEP_DEFERRED };
	CLIENT *other = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	unsigned int deferred = atomic_load(&tt_stats.deferred);
	tt_pair pair = { 20, 22 };
	int sum = 0, i;

	assert_non_null(d.cl);
	assert_non_null(other);
	atomic_store(&tt_stats.release_deferred, false);
	assert_int_equal(pthread_create(&d.thread, NULL, sleep_run, &d), 0);
	assert_true(wait_for(&tt_stats.deferred, deferred + 1));
	for (i = 0; i < 50; i++) {
		assert_int_equal(tt_add_1(&pair, &sum, other), RPC_SUCCESS);
		assert_int_equal(sum, 42);
	}
	assert_false(atomic_load(&d.done));
	atomic_store(&tt_stats.release_deferred, true);
	pthread_join(d.thread, NULL);
	assert_int_equal(d.st, RPC_SUCCESS);
	clnt_destroy(other);
	clnt_destroy(d.cl);
}

#define ADDERS 3

/*
 * rpcrdma_svc_run() on 3 threads: a service routine that blocks its thread
 * (no deferral: an unmodified rpcgen server whose READ waits on the disk)
 * holds only the connections of that thread. Of the 3 clients connected
 * after the blocked one, given round robin, 2 are served by the other
 * threads: their calls complete while the blocked call has not.
 */
static void test_blocked_thread_spares_others(void **state)
{
	struct tt_server *srv = srv_of(state);
	struct sleep_call b = { .cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0),
				.ms = TT_SLEEP_BLOCKING };
	struct worker a[ADDERS];
	unsigned int i, done = 0, rounds;

	if (tt_threads() < 3) {
		fprintf(stderr, "skipped: needs TT_THREADS=3 (suite tirpc-mt)\n");
		clnt_destroy(b.cl);
		skip();
	}
	assert_non_null(b.cl);
	/* Connected first: a blocked thread does not accept the connections given to it either. */
	for (i = 0; i < ADDERS; i++) {
		memset(&a[i], 0, sizeof(a[i]));
		a[i].id = i;
		a[i].cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
		assert_non_null(a[i].cl);
	}
	atomic_store(&tt_stats.release_blocked, false);
	assert_int_equal(pthread_create(&b.thread, NULL, sleep_run, &b), 0);
	assert_true(wait_for(&tt_stats.blocked, 1));
	for (i = 0; i < ADDERS; i++)
		assert_int_equal(pthread_create(&a[i].thread, NULL, worker_run, &a[i]), 0);
	for (rounds = 0; rounds < 5000 && done < ADDERS - 1; rounds++) {
		poll(NULL, 0, 1);
		for (i = 0, done = 0; i < ADDERS; i++)
			done += atomic_load(&a[i].done);
	}
	/* Two clients were served while the third thread stayed blocked. */
	assert_true(done >= ADDERS - 1);
	assert_false(atomic_load(&b.done));
	assert_int_equal(atomic_load(&tt_stats.blocked), 1);
	atomic_store(&tt_stats.release_blocked, true);
	pthread_join(b.thread, NULL);
	assert_int_equal(b.st, RPC_SUCCESS);
	for (i = 0; i < ADDERS; i++) {
		pthread_join(a[i].thread, NULL);
		assert_int_equal(a[i].failures, 0);
		clnt_destroy(a[i].cl);
	}
	clnt_destroy(b.cl);
}

/* A second rpcrdma_svc_run() of a listener being run is refused, and the first serves on. */
static void test_second_run_refused(void **state)
{
	struct tt_server *srv = srv_of(state);
	CLIENT *cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0);

	if (!srv->rdma || !tt_threads()) {
		fprintf(stderr, "skipped: needs rpcrdma_svc_run() (suite tirpc-mt)\n");
		if (cl)
			clnt_destroy(cl);
		skip();
	}
	assert_non_null(cl);
	/* Served: the run is under way. */
	assert_int_equal(tt_null_1(NULL, NULL, cl), RPC_SUCCESS);
	assert_int_equal(rpcrdma_svc_run(srv->listener), -EBUSY);
	assert_int_equal(tt_null_1(NULL, NULL, cl), RPC_SUCCESS);
	clnt_destroy(cl);
}

/* The listener's counters, read from the test thread (rpcrdma_svc_stats() allows it). */
static struct rpcrdma_stats svc_counters(const struct tt_server *srv)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };

	assert_int_equal(rpcrdma_svc_stats(rpcrdma_svc_native(srv->listener), &st), 0);
	return st;
}

/*
 * Wait (2 s at most) until the fabric holds a CM event nobody has read:
 * the client's DISCONNECTED, which softrdma delivers after the server's
 * drain may have finished.
 */
static void cm_event_delivered(void)
{
	struct softrdma_counts c;
	int i;

	for (i = 0; i < 200; i++) {
		softrdma_get_counts(&c);
		if (c.unacked_events)
			return;
		poll(NULL, 0, 10);
	}
	fail_msg("no CM event delivered in 2 s");
}

/* A listener of rpcrdma_svc_create_attr() closes idle clients; they come back on their next call. */
static void test_tuned_idle_close(void **state)
{
	struct tt_server *srv = srv_of(state);
	CLIENT *cl = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	struct rpcrdma_stats before, after;
	int64_t deadline;

	assert_non_null(cl);
	assert_int_equal(tt_null_1(NULL, NULL, cl), RPC_SUCCESS);
	before = svc_counters(srv);
	deadline = now_ms() + 5000;
	do {
		poll(NULL, 0, 10);
		after = svc_counters(srv);
	} while (after.idle_closes == before.idle_closes && now_ms() < deadline);
	assert_true(after.idle_closes > before.idle_closes);
	/* Drained: the server disconnected, and the client has its event by now. */
	while (after.disconnects == before.disconnects && now_ms() < deadline) {
		poll(NULL, 0, 10);
		after = svc_counters(srv);
	}
	assert_true(after.disconnects > before.disconnects);
	cm_event_delivered();
	/* The CLIENT reconnects: the call is served on a new connection. */
	assert_int_equal(tt_null_1(NULL, NULL, cl), RPC_SUCCESS);
	after = svc_counters(srv);
	assert_true(after.connects > before.connects);
	fprintf(stderr, "idle closes %llu, keepalive probes %llu, connections %llu\n",
		(unsigned long long)after.idle_closes, (unsigned long long)after.keepalives,
		(unsigned long long)after.connects);
	clnt_destroy(cl);
}

static void assert_create_attr_refused(const struct rpcrdma_svc_attr *tune,
				       unsigned int nthreads, int err)
{
	errno = 0;
	assert_null(rpcrdma_svc_create_attr(tune, 0, 0, nthreads));
	assert_int_equal(errno, err);
}

/* What rpcrdma_svc_create_attr() leaves to the adapter is refused when set. */
static void test_create_attr_refused(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rpcrdma_svc_attr tune = { RPCRDMA_SIZED(tune), .addr = (struct sockaddr *)&sin };
	struct rpcrdma_svc_attr bad;

	(void)state;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_create_attr_refused(NULL, 0, EINVAL);
	assert_create_attr_refused(&tune, RPCRDMA_SVC_MAX_THREADS + 1, EINVAL);
	bad = tune;
	bad.pollers = 2;
	assert_create_attr_refused(&bad, 0, EINVAL);
	bad = tune;
	bad.flags = RPCRDMA_SVC_WORKERS;
	assert_create_attr_refused(&bad, 0, EINVAL);
	bad = tune;
	bad.max_read = 4096;
	assert_create_attr_refused(&bad, 0, EINVAL);
	bad = tune;
	bad.arg = &bad;
	assert_create_attr_refused(&bad, 0, EINVAL);
	bad = tune;
	bad.struct_size = 8;
	assert_create_attr_refused(&bad, 0, EINVAL);
	bad = tune;
	bad.struct_size = sizeof(bad) + 8;
	assert_create_attr_refused(&bad, 0, EOPNOTSUPP);
	bad = tune;
	bad.keepalive_ms = 5;
	assert_create_attr_refused(&bad, 0, EINVAL);
	bad = tune;
	bad.flags = RPCRDMA_SVC_SRQ;
	assert_create_attr_refused(&bad, 0, EOPNOTSUPP);
}

static int setup_rdma_tuned(void **state)
{
	static struct rpcrdma_svc_attr tune = {
		RPCRDMA_SIZED(tune), .idle_timeout_ms = 300, .keepalive_ms = 100,
	};
	static struct tt_server srv;

	if (tt_server_start_tuned(&srv, &tune))
		return -1;
	*state = &srv;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_null),
		cmocka_unit_test(test_echo_small),
		cmocka_unit_test(test_echo_large),
		cmocka_unit_test(test_large_one_way),
		cmocka_unit_test(test_many_procedures),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_control),
		cmocka_unit_test(test_create_refused),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_fairness),
		cmocka_unit_test(test_client_gone_mid_call),
		cmocka_unit_test(test_server_destroys_conn),
		cmocka_unit_test(test_ddp),
		cmocka_unit_test(test_conns_reaped),
	};
	const struct CMUnitTest rdma_only[] = {
		cmocka_unit_test(test_deferred_reply),
		cmocka_unit_test(test_spin),
		cmocka_unit_test(test_spin_auto),
		cmocka_unit_test(test_blocked_thread_spares_others),
		cmocka_unit_test(test_second_run_refused),
		cmocka_unit_test(test_listener_destroyed_in_flight),
	};
	const struct CMUnitTest rdma_tuned[] = {
		cmocka_unit_test(test_create_attr_refused),
		cmocka_unit_test(test_tuned_idle_close),
		cmocka_unit_test(test_null),
		cmocka_unit_test(test_echo_large),
		cmocka_unit_test(test_ddp),
	};
	int failed;

	/* A TCP server writing to a client that went away must not die of it. */
	signal(SIGPIPE, SIG_IGN);
	failed = cmocka_run_group_tests_name("tcp", tests, setup_tcp, teardown);
	failed += cmocka_run_group_tests_name("rdma", tests, setup_rdma, teardown);
	failed += cmocka_run_group_tests_name("rdma-listener", rdma_only, setup_rdma, teardown);
	failed += cmocka_run_group_tests_name("rdma-tuned", rdma_tuned, setup_rdma_tuned, teardown);
	return failed ? 1 : 0;
}

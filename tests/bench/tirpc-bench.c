/* SPDX-License-Identifier: MIT */
/*
 * libtirpc over RDMA (librpcrdma's SVCXPRT and CLIENT, on softrdma) next to
 * libtirpc over TCP loopback (svc_vc, clnt_vc), in the same run: the same
 * rpcgen program (tests/tirpc/tirpctest.x) and server (svc_run() on its own
 * thread), only the transport differs.
 *
 * Figures: NULL call rate and median latency (one caller), NULL call rate
 * with several threads sharing one CLIENT, and the throughput of 1 MiB
 * transfers: a 1 MiB result (RDMA: Reply chunk), a 1 MiB argument (RDMA:
 * long call), and a READ-like 1 MiB result sent by direct data placement
 * (RDMA: Write chunk into registered memory, no copy on either side).
 *
 * tirpc-bench [-n null-calls] [-m mib-transfers] [-t threads]
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tt.h"

#include "bench.h"

struct figures {
	double null_per_s;
	double null_median_us;
	double null_mt_per_s;
	double result_mib_s;
	double arg_mib_s;
	double ddp_mib_s;
};

static int bench_null(CLIENT *cl, unsigned int n, struct figures *f)
{
	double *lat = calloc(n, sizeof(*lat)), t0, t1;
	unsigned int i;

	if (!lat)
		return -1;
	/* Warm up: connection, buffers, caches. */
	for (i = 0; i < 100; i++)
		if (tt_null_1(NULL, NULL, cl) != RPC_SUCCESS)
			goto fail;
	t0 = bench_now_s();
	for (i = 0; i < n; i++) {
		double s = bench_now_s();

		if (tt_null_1(NULL, NULL, cl) != RPC_SUCCESS)
			goto fail;
		lat[i] = bench_now_s() - s;
	}
	t1 = bench_now_s();
	f->null_per_s = n / (t1 - t0);
	f->null_median_us = bench_median(lat, n) * 1e6;
	free(lat);
	return 0;
fail:
	free(lat);
	return -1;
}

struct mt_arg {
	CLIENT *cl;
	unsigned int n;
	int failed;
	pthread_t thread;
};

static void *mt_run(void *p)
{
	struct mt_arg *a = p;
	unsigned int i;

	for (i = 0; i < a->n; i++)
		if (tt_null_1(NULL, NULL, a->cl) != RPC_SUCCESS)
			a->failed = 1;
	return NULL;
}

static int bench_null_mt(CLIENT *cl, unsigned int n, unsigned int threads, struct figures *f)
{
	struct mt_arg a[64];
	unsigned int i;
	double t0;
	int failed = 0;

	if (threads > 64)
		threads = 64;
	t0 = bench_now_s();
	for (i = 0; i < threads; i++) {
		a[i].cl = cl;
		a[i].n = n / threads;
		a[i].failed = 0;
		if (pthread_create(&a[i].thread, NULL, mt_run, &a[i]))
			return -1;
	}
	for (i = 0; i < threads; i++) {
		pthread_join(a[i].thread, NULL);
		failed |= a[i].failed;
	}
	f->null_mt_per_s = (n / threads) * threads / (bench_now_s() - t0);
	return failed ? -1 : 0;
}

static int bench_mib(const struct tt_server *srv, CLIENT *large, unsigned int n, struct figures *f)
{
	u_int mib = 1024 * 1024, sum;
	unsigned char *buf = malloc(mib);
	struct rpcrdma_ddp_buf ddp = { .buf = buf, .len = mib };
	CLIENT *small = tt_client(srv, TT_PROG, TT_VERS, 0, 0);
	unsigned int i;
	tt_blob blob;
	double t0;
	int rc = -1;

	if (!buf || !small)
		goto out;
	tt_fill(buf, mib, 3);
	t0 = bench_now_s();
	for (i = 0; i < n; i++) {
		memset(&blob, 0, sizeof(blob));
		if (tt_fill_1(&mib, &blob, large) != RPC_SUCCESS || blob.tt_blob_len != mib)
			goto out;
		clnt_freeres(large, (xdrproc_t)xdr_tt_blob, (char *)&blob);
	}
	f->result_mib_s = n / (bench_now_s() - t0);

	blob.tt_blob_len = mib;
	blob.tt_blob_val = (char *)buf;
	t0 = bench_now_s();
	for (i = 0; i < n; i++)
		if (tt_sum_1(&blob, &sum, large) != RPC_SUCCESS)
			goto out;
	f->arg_mib_s = n / (bench_now_s() - t0);

	/* READ-like, on a client of default sizes: the data goes by DDP over RDMA. */
	if (srv->rdma && !clnt_control(small, RPCRDMA_CLSET_MEM_REGISTER, (char *)&ddp))
		goto out;
	t0 = bench_now_s();
	for (i = 0; i < n; i++) {
		if (srv->rdma && !clnt_control(small, RPCRDMA_CLSET_DDP_RESULT, (char *)&ddp))
			goto out;
		blob.tt_blob_len = mib;
		blob.tt_blob_val = (char *)buf;
		if (tt_read_1(&mib, &blob, small) != RPC_SUCCESS || blob.tt_blob_len != mib)
			goto out;
	}
	f->ddp_mib_s = n / (bench_now_s() - t0);
	rc = tt_check(buf, mib, mib + 1) ? 0 : -1;
out:
	if (small)
		clnt_destroy(small);
	free(buf);
	return rc;
}

static int bench(bool rdma, unsigned int nulls, unsigned int mibs, unsigned int threads,
		 struct figures *f)
{
	struct tt_server srv;
	CLIENT *cl = NULL, *large = NULL;
	int rc = -1;

	memset(f, 0, sizeof(*f));
	if (tt_server_start(&srv, rdma))
		return -1;
	cl = tt_client(&srv, TT_PROG, TT_VERS, 0, 0);
	large = tt_client(&srv, TT_PROG, TT_VERS, TT_BIG, TT_BIG);
	if (cl && large && !bench_null(cl, nulls, f) && !bench_null_mt(cl, nulls, threads, f) &&
	    !bench_mib(&srv, large, mibs, f))
		rc = 0;
	if (large)
		clnt_destroy(large);
	if (cl)
		clnt_destroy(cl);
	tt_server_stop(&srv);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned int nulls = 50000, mibs = 300, threads = 4;
	struct figures tcp, rdma;
	int opt;

	while ((opt = getopt(argc, argv, "n:m:t:")) != -1) {
		switch (opt) {
		case 'n':
			nulls = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'm':
			mibs = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 't':
			threads = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-n null-calls] [-m mib-transfers] [-t threads]\n",
				argv[0]);
			return 2;
		}
	}
	if (!nulls || !mibs || !threads)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	if (bench(false, nulls, mibs, threads, &tcp) || bench(true, nulls, mibs, threads, &rdma)) {
		fprintf(stderr, "tirpc-bench: a call failed\n");
		return 1;
	}
	printf("libtirpc, same rpcgen program         %14s %16s\n", "TCP loopback", "RDMA (softrdma)");
	printf("NULL calls/s, 1 caller                %14.0f %16.0f\n", tcp.null_per_s,
	       rdma.null_per_s);
	printf("NULL median latency (us), 1 caller    %14.1f %16.1f\n", tcp.null_median_us,
	       rdma.null_median_us);
	printf("NULL calls/s, %2u threads, 1 CLIENT    %14.0f %16.0f\n", threads, tcp.null_mt_per_s,
	       rdma.null_mt_per_s);
	printf("1 MiB results, MiB/s                  %14.0f %16.0f\n", tcp.result_mib_s,
	       rdma.result_mib_s);
	printf("1 MiB arguments, MiB/s                %14.0f %16.0f\n", tcp.arg_mib_s,
	       rdma.arg_mib_s);
	printf("1 MiB READ-like (RDMA: DDP), MiB/s    %14.0f %16.0f\n", tcp.ddp_mib_s,
	       rdma.ddp_mib_s);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The echo client's work, the same whatever the transport: round trips
 * checked byte for byte, the caller's credentials, the NULL call rate,
 * median latency and context switches per call, and the throughput of 1 MiB
 * results.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <rpcrdma/tirpc.h>

#include "echo_demo.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Voluntary and involuntary context switches of all of this process's threads so far. */
static long context_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int echo_sizes(CLIENT *cl, struct echo_figures *fig)
{
	static const unsigned int sizes[] = { 0, 1, 3, 100, 1000, 4000, 65536, 1024 * 1024 };
	echo_data arg, res;
	size_t i;
	int failed = 0;

	arg.echo_data_val = malloc(1024 * 1024);
	if (!arg.echo_data_val)
		return 1;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && !failed; i++) {
		enum clnt_stat st;

		arg.echo_data_len = sizes[i];
		echo_pattern((unsigned char *)arg.echo_data_val, sizes[i]);
		memset(&res, 0, sizeof(res));
		st = echo_echo_1(&arg, &res, cl);
		if (st != RPC_SUCCESS) {
			fprintf(stderr, "echo of %u bytes: %s\n", sizes[i], clnt_sperrno(st));
			failed = 1;
			continue;
		}
		if (res.echo_data_len != sizes[i] ||
		    (sizes[i] && memcmp(res.echo_data_val, arg.echo_data_val, sizes[i]))) {
			fprintf(stderr, "echo of %u bytes: the reply differs\n", sizes[i]);
			failed = 1;
		}
		clnt_freeres(cl, (xdrproc_t)xdr_echo_data, (char *)&res);
		fig->checked++;
	}
	free(arg.echo_data_val);
	return failed;
}

static int echo_whoami(CLIENT *cl, struct echo_figures *fig)
{
	AUTH *none = cl->cl_auth;
	echo_caller who;
	enum clnt_stat st;
	int failed = 0;

	cl->cl_auth = authunix_create_default();
	memset(&who, 0, sizeof(who));
	st = echo_whoami_1(NULL, &who, cl);
	if (st != RPC_SUCCESS || who.flavor != AUTH_SYS || who.uid != (unsigned int)geteuid()) {
		fprintf(stderr, "whoami: %s\n", st != RPC_SUCCESS ? clnt_sperrno(st) : "wrong caller");
		failed = 1;
	} else {
		snprintf(fig->caller, sizeof(fig->caller), "uid %u gid %u on %s via %s", who.uid,
			 who.gid, who.machine, who.netid);
		clnt_freeres(cl, (xdrproc_t)xdr_echo_caller, (char *)&who);
	}
	auth_destroy(cl->cl_auth);
	cl->cl_auth = none;
	return failed;
}

static int echo_null_rate(CLIENT *cl, unsigned int n, struct echo_figures *fig)
{
	double *lat = calloc(n ? n : 1, sizeof(*lat)), t0, t1;
	unsigned int i;
	long csw0;

	if (!lat)
		return 1;
	csw0 = context_switches();
	t0 = now_us();
	for (i = 0; i < n; i++) {
		double start = now_us();

		if (echo_null_1(NULL, NULL, cl) != RPC_SUCCESS) {
			fprintf(stderr, "null call %u failed\n", i);
			free(lat);
			return 1;
		}
		lat[i] = now_us() - start;
	}
	t1 = now_us();
	fig->null_csw_per_call = n ? (double)(context_switches() - csw0) / n : 0;
	qsort(lat, n, sizeof(*lat), cmp_double);
	fig->null_calls = n;
	fig->null_per_s = n / ((t1 - t0) / 1e6);
	fig->null_median_us = n ? lat[n / 2] : 0;
	free(lat);
	return 0;
}

/*
 * ECHO_BIG's results, decoded into the caller's buffer (rpcgen's stub would
 * allocate one per call), never past ECHO_BIG_MAX: xdr_bytes() does not
 * know the size of a buffer it is given, only the bound it is passed.
 */
static bool_t xdr_echo_big_res(XDR *xdrs, echo_data *res)
{
	return xdr_bytes(xdrs, &res->echo_data_val, &res->echo_data_len, ECHO_BIG_MAX);
}

/*
 * The first result is checked byte for byte, the others by length. Over
 * RDMA @buf is registered with the CLIENT (a request clnt_vc refuses), so
 * that the server writes the results there with no bounce copy.
 */
static int echo_big_rate(CLIENT *cl, unsigned char *buf, unsigned int n, struct echo_figures *fig)
{
	struct rpcrdma_ddp_buf reg = { .buf = buf, .len = ECHO_BIG_MAX };
	struct timeval timeout = { 25, 0 };
	u_int size = ECHO_BIG_MAX;
	unsigned char *want = malloc(size);
	double t0, t1;
	unsigned int i;
	int rc = 1;

	if (!want)
		goto out;
	(void)clnt_control(cl, RPCRDMA_CLSET_MEM_REGISTER, (char *)&reg);
	echo_pattern(want, size);
	t0 = now_us();
	for (i = 0; i < n; i++) {
		echo_data res = { .echo_data_len = size, .echo_data_val = (char *)buf };

		if (clnt_call(cl, ECHO_BIG, (xdrproc_t)xdr_u_int, (char *)&size,
			      (xdrproc_t)xdr_echo_big_res, (char *)&res, timeout) != RPC_SUCCESS ||
		    res.echo_data_len != size || res.echo_data_val != (char *)buf ||
		    (i == 0 && memcmp(buf, want, size))) {
			fprintf(stderr, "1 MiB result %u failed\n", i);
			goto out;
		}
	}
	t1 = now_us();
	fig->big_calls = n;
	fig->big_mib_per_s = n / ((t1 - t0) / 1e6);
	rc = 0;
out:
	free(want);
	return rc;
}

int echo_exercise(CLIENT *small, CLIENT *large, unsigned int null_calls, unsigned int big_calls,
		  struct echo_figures *fig)
{
	memset(fig, 0, sizeof(*fig));
	if (echo_bind()) {
		fprintf(stderr, "cannot register the echo binding\n");
		return 1;
	}
	fig->big_buf = malloc(ECHO_BIG_MAX);
	if (!fig->big_buf || echo_sizes(large, fig) || echo_whoami(small, fig) ||
	    echo_null_rate(small, null_calls, fig) ||
	    echo_big_rate(large, fig->big_buf, big_calls, fig))
		return 1;
	return 0;
}

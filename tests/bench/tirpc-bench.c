/* SPDX-License-Identifier: MIT */
/*
 * libtirpc over RDMA (librpcrdma's SVCXPRT and CLIENT, on softrdma) next to
 * libtirpc over TCP loopback (svc_vc, clnt_vc), in the same run: the same
 * rpcgen program (tests/tirpc/tirpctest.x) and server (svc_run() on its own
 * thread), only the transport differs.
 *
 * Figures: NULL call rate, median latency, context switches, doorbells and
 * signaled send completions per call (one
 * caller), NULL call rate with several threads sharing one CLIENT, and the
 * throughput of 1 MiB transfers: a 1 MiB result (RDMA: Reply chunk), a 1 MiB
 * argument (RDMA: long call), and a READ-like 1 MiB result sent by direct
 * data placement (RDMA: Write chunk into registered memory, no copy on
 * either side).
 *
 * The machine is assumed noisy: each of -r rounds measures every figure on
 * both transports, the first transport alternating from round to round, and
 * the table gives each figure's median over the rounds and the median of the
 * per-round RDMA/TCP ratios. Context switches come from getrusage(RUSAGE_SELF)
 * around the timed NULL loop; this process holds the client and the server,
 * so both sides' switches are counted. -x runs one transport only (for
 * strace or callgrind), and prints its column alone.
 *
 * -m 0 and -t 0 leave out the transfers and the threaded calls (their rows
 * read 0), as tests/bench/tirpc-callgrind.sh does to count the NULL calls'
 * instructions alone.
 *
 * The first 1-caller NULL loop runs with the library's defaults: the RDMA
 * CLIENT's adaptive polling window (RPCRDMA_SPIN_AUTO), none on the server.
 * A second runs with no window on either side (RPCRDMA_CLSET_SPIN_US and
 * RPCRDMA_SVCSET_SPIN_US 0), a third with -s microseconds on both (default
 * 100; 0 leaves it out). -z runs the first loop with no window and leaves
 * the others out, as tests/bench/tirpc-callgrind.sh needs.
 *
 * tirpc-bench [-n null-calls] [-m mib-transfers] [-t threads] [-r rounds] [-s spin-us]
 *             [-z] [-x tcp|rdma]
 */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <softrdma.h>

#include "tt.h"

#include "bench.h"

/* A 1-caller NULL loop run again with other polling windows. */
struct null_loop {
	double per_s, median_us, csw_per_call, syscalls_per_call;
};

struct figures {
	double null_per_s;
	double null_median_us;
	double null_csw_per_call;	/* both sides: client and server share this process */
	double null_syscalls_per_call;	/* likewise (bench_syscalls()) */
	/* RDMA: no polling window; TCP: as above. */
	struct null_loop off;
	/* RDMA: both sides poll -s microseconds before sleeping; TCP: as above. */
	struct null_loop spin;
	double null_mt_per_s;
	/* RDMA only (softrdma's per-QP counters): doorbells and signaled send CQEs per call. */
	double null_clnt_posts, null_svc_posts, null_clnt_signaled, null_svc_signaled;
	double result_mib_s;
	double arg_mib_s;
	double ddp_mib_s;
};

/* Voluntary and involuntary context switches of every thread of this process so far. */
static long bench_csw(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static int bench_null(CLIENT *cl, unsigned int n, struct figures *f)
{
	double *lat = calloc(n, sizeof(*lat)), t0, t1;
	struct softrdma_qp_stats cb, sb, ca, sa;
	unsigned int i;
	long long sys0;
	long csw0;

	if (!lat)
		return -1;
	/* Warm up: connection, buffers, caches. */
	for (i = 0; i < 100; i++)
		if (tt_null_1(NULL, NULL, cl) != RPC_SUCCESS)
			goto fail;
	softrdma_qp_stats_sum(&cb, &sb);
	csw0 = bench_csw();
	sys0 = bench_syscalls();
	t0 = bench_now_s();
	for (i = 0; i < n; i++) {
		double s = bench_now_s();

		if (tt_null_1(NULL, NULL, cl) != RPC_SUCCESS)
			goto fail;
		lat[i] = bench_now_s() - s;
	}
	t1 = bench_now_s();
	f->null_syscalls_per_call = bench_syscalls_per(sys0, n);
	f->null_csw_per_call = (double)(bench_csw() - csw0) / n;
	softrdma_qp_stats_sum(&ca, &sa);
	f->null_clnt_posts = (double)(ca.send_posts + ca.recv_posts - cb.send_posts -
				      cb.recv_posts) / n;
	f->null_svc_posts = (double)(sa.send_posts + sa.recv_posts - sb.send_posts -
				     sb.recv_posts) / n;
	f->null_clnt_signaled = (double)(ca.send_cqes - cb.send_cqes) / n;
	f->null_svc_signaled = (double)(sa.send_cqes - sb.send_cqes) / n;
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

/* RDMA: set the CLIENT's and the listener's polling windows; TCP: nothing to set. */
static bool bench_windows(const struct tt_server *srv, CLIENT *cl, u_int clnt_us, u_int svc_us)
{
	return !srv->rdma || (clnt_control(cl, RPCRDMA_CLSET_SPIN_US, (char *)&clnt_us) &&
			      SVC_CONTROL(srv->listener, RPCRDMA_SVCSET_SPIN_US, &svc_us));
}

/*
 * The 1-caller NULL loop again, RDMA's CLIENT polling @clnt_us and its
 * server @svc_us before they sleep, into @out; then the defaults again.
 * TCP has no such windows: @out repeats the first loop's figures.
 */
static int bench_null_window(const struct tt_server *srv, CLIENT *cl, unsigned int n,
			     u_int clnt_us, u_int svc_us, const struct figures *f,
			     struct null_loop *out)
{
	struct figures s = *f;
	int rc = 0;

	if (srv->rdma) {
		if (!bench_windows(srv, cl, clnt_us, svc_us))
			return -1;
		rc = bench_null(cl, n, &s);
		if (!bench_windows(srv, cl, RPCRDMA_SPIN_AUTO, 0))
			rc = -1;
	}
	out->per_s = s.null_per_s;
	out->median_us = s.null_median_us;
	out->csw_per_call = s.null_csw_per_call;
	out->syscalls_per_call = s.null_syscalls_per_call;
	return rc;
}

static int bench(bool rdma, unsigned int nulls, unsigned int mibs, unsigned int threads,
		 u_int spin_us, bool no_windows, struct figures *f)
{
	struct tt_server srv;
	CLIENT *cl = NULL, *large = NULL;
	int rc = -1;

	memset(f, 0, sizeof(*f));
	if (tt_server_start(&srv, rdma))
		return -1;
	cl = tt_client(&srv, TT_PROG, TT_VERS, 0, 0);
	large = tt_client(&srv, TT_PROG, TT_VERS, TT_BIG, TT_BIG);
	if (cl && large && (!no_windows || bench_windows(&srv, cl, 0, 0)) &&
	    !bench_null(cl, nulls, f) &&
	    (no_windows || !bench_null_window(&srv, cl, nulls, 0, 0, f, &f->off)) &&
	    (no_windows || !spin_us ||
	     !bench_null_window(&srv, cl, nulls, spin_us, spin_us, f, &f->spin)) &&
	    (!threads || !bench_null_mt(cl, nulls, threads, f)) &&
	    (!mibs || !bench_mib(&srv, large, mibs, f)))
		rc = 0;
	if (large)
		clnt_destroy(large);
	if (cl)
		clnt_destroy(cl);
	tt_server_stop(&srv);
	return rc;
}

enum bench_transports {
	BENCH_TCP = 1 << 0,
	BENCH_RDMA = 1 << 1,
};

/* One line of the table: a member of struct figures. */
struct figure_row {
	const char *label;
	size_t offset;
	int decimals;
};

#define FIGURE(member) offsetof(struct figures, member)

static double figure_of(const struct figures *f, const struct figure_row *row)
{
	return *(const double *)((const char *)f + row->offset);
}

/* The median of @row over @rounds rounds of @f; @v has room for @rounds values. */
static double row_median(const struct figures *f, unsigned int rounds,
			 const struct figure_row *row, double *v)
{
	unsigned int r;

	for (r = 0; r < rounds; r++)
		v[r] = figure_of(&f[r], row);
	return bench_median(v, rounds);
}

/* The median of the per-round RDMA/TCP ratios of @row; NAN if TCP measured 0 every time. */
static double row_ratio(const struct figures *tcp, const struct figures *rdma,
			unsigned int rounds, const struct figure_row *row, double *v)
{
	unsigned int r, n = 0;

	for (r = 0; r < rounds; r++)
		if (figure_of(&tcp[r], row) > 0)
			v[n++] = figure_of(&rdma[r], row) / figure_of(&tcp[r], row);
	return n ? bench_median(v, n) : NAN;
}

static void print_table(const struct figures *tcp, const struct figures *rdma,
			unsigned int rounds, unsigned int threads, u_int spin_us, bool no_windows,
			unsigned int which, double *v)
{
	char mt_label[48], spin_label[4][48];
	const struct figure_row rows[] = {
		{ "NULL calls/s, 1 caller (*)", FIGURE(null_per_s), 0 },
		{ "NULL median latency (us), 1 caller", FIGURE(null_median_us), 1 },
		{ "ctx switches/NULL call, 1 caller (**)", FIGURE(null_csw_per_call), 2 },
		{ "system calls/NULL call, 1 caller (**)", FIGURE(null_syscalls_per_call), 2 },
		{ "posts/NULL call, client (RDMA)", FIGURE(null_clnt_posts), 2 },
		{ "posts/NULL call, server (RDMA)", FIGURE(null_svc_posts), 2 },
		{ "signaled send CQEs/NULL call, client", FIGURE(null_clnt_signaled), 2 },
		{ "signaled send CQEs/NULL call, server", FIGURE(null_svc_signaled), 2 },
		{ "NULL calls/s, no polling (***)", FIGURE(off.per_s), 0 },
		{ "NULL median latency (us), no polling", FIGURE(off.median_us), 1 },
		{ "ctx switches/NULL call, no polling", FIGURE(off.csw_per_call), 2 },
		{ "system calls/NULL call, no polling", FIGURE(off.syscalls_per_call), 2 },
		{ spin_label[0], FIGURE(spin.per_s), 0 },
		{ spin_label[1], FIGURE(spin.median_us), 1 },
		{ spin_label[2], FIGURE(spin.csw_per_call), 2 },
		{ spin_label[3], FIGURE(spin.syscalls_per_call), 2 },
		{ mt_label, FIGURE(null_mt_per_s), 0 },
		{ "1 MiB results, MiB/s", FIGURE(result_mib_s), 0 },
		{ "1 MiB arguments, MiB/s", FIGURE(arg_mib_s), 0 },
		{ "1 MiB READ-like (RDMA: DDP), MiB/s", FIGURE(ddp_mib_s), 0 },
	};
	size_t i;

	snprintf(mt_label, sizeof(mt_label), "NULL calls/s, %u threads, 1 CLIENT", threads);
	snprintf(spin_label[0], sizeof(spin_label[0]), "NULL calls/s, spin %u us (***)", spin_us);
	snprintf(spin_label[1], sizeof(spin_label[1]), "NULL median latency (us), spin %u us", spin_us);
	snprintf(spin_label[2], sizeof(spin_label[2]), "ctx switches/NULL call, spin %u us", spin_us);
	snprintf(spin_label[3], sizeof(spin_label[3]), "system calls/NULL call, spin %u us", spin_us);
	printf("%-38s", "libtirpc, same rpcgen program");
	if (which & BENCH_TCP)
		printf(" %14s", "TCP loopback");
	if (which & BENCH_RDMA)
		printf(" %16s", "RDMA (softrdma)");
	if (which == (BENCH_TCP | BENCH_RDMA))
		printf(" %9s", "RDMA/TCP");
	printf("\n");
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct figure_row *row = &rows[i];

		printf("%-38s", row->label);
		if (which & BENCH_TCP)
			printf(" %14.*f", row->decimals, row_median(tcp, rounds, row, v));
		if (which & BENCH_RDMA)
			printf(" %16.*f", row->decimals, row_median(rdma, rounds, row, v));
		if (which == (BENCH_TCP | BENCH_RDMA))
			printf(" %9.2f", row_ratio(tcp, rdma, rounds, row, v));
		printf("\n");
	}
	printf("(*) the library's defaults: over RDMA the CLIENT polls for each reply\n"
	       "    in a window that follows how soon replies come (RPCRDMA_SPIN_AUTO),\n"
	       "    the server sleeps at once%s.\n",
	       no_windows ? " (-z: both sleep at once here)" : "");
	printf("(**) getrusage(RUSAGE_SELF), and the system calls the kernel's raw_syscalls\n"
	       "    tracepoint counted (nan where perf_event_open is refused), over the\n"
	       "    1-caller NULL loop, divided by the calls: client and server share this\n"
	       "    process, so both sides' count.\n");
	printf("(***) 1 caller; over RDMA the CLIENT polls for each reply and the server\n"
	       "    each connection for its next call for the window given (none, or\n"
	       "    %u us) before sleeping (RPCRDMA_CLSET_SPIN_US, RPCRDMA_SVCSET_SPIN_US;\n"
	       "    rows left out by -s 0 or -z read 0); TCP: the first loop's figures\n"
	       "    again, as libtirpc's TCP has no such mode.\n",
	       spin_us);
	printf("Each figure: the median of %u round%s", rounds, rounds == 1 ? "" : "s");
	if (rounds > 1 && which == (BENCH_TCP | BENCH_RDMA))
		printf(", transports interleaved (the first alternating);\n"
		       "RDMA/TCP: the median of the per-round ratios (above 1: RDMA is higher,\n"
		       "which for latency and switches is worse).\n");
	else
		printf(".\n");
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-n null-calls] [-m mib-transfers] [-t threads] [-r rounds] "
		"[-s spin-us] [-z] [-x tcp|rdma]\n", prog);
}

int main(int argc, char **argv)
{
	unsigned int nulls = 20000, mibs = 100, threads = 4, rounds = 5, r, k;
	u_int spin_us = 100;
	unsigned int which = BENCH_TCP | BENCH_RDMA;
	bool no_windows = false;
	struct figures *tcp, *rdma;
	double *scratch;
	int opt, rc = 0;

	while ((opt = getopt(argc, argv, "n:m:t:r:s:zx:")) != -1) {
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
		case 'r':
			rounds = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 's':
			spin_us = (u_int)strtoul(optarg, NULL, 0);
			break;
		case 'z':
			no_windows = true;
			break;
		case 'x':
			if (!strcmp(optarg, "tcp")) {
				which = BENCH_TCP;
			} else if (!strcmp(optarg, "rdma")) {
				which = BENCH_RDMA;
			} else {
				usage(argv[0]);
				return 2;
			}
			break;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	if (!nulls || !rounds) {
		usage(argv[0]);
		return 2;
	}
	tcp = calloc(rounds, sizeof(*tcp));
	rdma = calloc(rounds, sizeof(*rdma));
	scratch = calloc(rounds, sizeof(*scratch));
	if (!tcp || !rdma || !scratch) {
		rc = 1;
		goto out;
	}
	bench_print_machine();
	signal(SIGPIPE, SIG_IGN);
	bench_syscalls();	/* before the first thread: it counts the threads to come */
	/* Even rounds start with TCP, odd ones with RDMA: drift hits both alike. */
	for (r = 0; r < rounds; r++) {
		for (k = 0; k < 2; k++) {
			bool use_rdma = (k == 0) == (r % 2 == 1);

			if (!(which & (use_rdma ? BENCH_RDMA : BENCH_TCP)))
				continue;
			if (bench(use_rdma, nulls, mibs, threads, spin_us, no_windows,
				  use_rdma ? &rdma[r] : &tcp[r])) {
				fprintf(stderr, "tirpc-bench: a call failed (%s, round %u)\n",
					use_rdma ? "RDMA" : "TCP", r + 1);
				rc = 1;
				goto out;
			}
		}
	}
	print_table(tcp, rdma, rounds, threads, spin_us, no_windows, which, scratch);
out:
	free(scratch);
	free(rdma);
	free(tcp);
	return rc;
}

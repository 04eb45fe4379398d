/* SPDX-License-Identifier: MIT */
/*
 * rpcrdma-ping: NULL calls (or, with -s, echo calls) over RPC-over-RDMA to
 * one program version of a server, timed one by one and summed up as ping
 * sums up its echoes. Exit status 0 when at least one call was answered, 1
 * when none was, 2 for a usage error or no connection.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>
#include <rpcrdma/tirpc.h>

/* The procedure an echo-like server answers with its argument's bytes. */
#define PING_ECHO_PROC 1
#define PING_DEFAULT_PROG 100003	/* NFS */
#define PING_DEFAULT_VERS 3
/* Any XDR routine as an xdrproc_t (through void (*)(void), the type any function casts to). */
#define PING_XDR(f) ((xdrproc_t)(void (*)(void))(f))

struct ping_opts {
	long count;			/* 0: until interrupted */
	double interval;		/* seconds */
	unsigned int size;		/* 0: NULL calls */
	int timeout_ms;
	const char *host;
	const char *port;
	rpcprog_t prog;
	rpcvers_t vers;
};

struct ping_stats {
	long sent, answered;
	double min, max, sum, sum2;	/* milliseconds */
};

/* An opaque<> of at most @max bytes, decoded into @val as it stands. */
struct ping_bytes {
	u_int len;
	char *val;
	u_int max;
};

static volatile sig_atomic_t interrupted;

static bool_t xdr_ping_bytes(XDR *xdrs, struct ping_bytes *b)
{
	return xdr_bytes(xdrs, &b->val, &b->len, b->max);
}

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-c count] [-i interval] [-s size] [-W timeout] [-p port] HOST [PROG [VERS]]\n"
		"  NULL calls to PROG (default %u, NFS) version VERS (default %u) over RDMA;\n"
		"  with -s, calls of procedure %u carrying SIZE bytes the server must echo\n"
		"  (the echo example's ECHO_ECHO). The port defaults to %u.\n",
		prog, PING_DEFAULT_PROG, PING_DEFAULT_VERS, PING_ECHO_PROC, RPCRDMA_NFS_PORT);
}

static bool parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 0);
	return !errno && *s && !*end && *out <= max;
}

static int parse_args(int argc, char **argv, struct ping_opts *o)
{
	unsigned long v;
	char *end;
	int opt;

	while ((opt = getopt(argc, argv, "c:i:s:W:p:h")) != -1) {
		switch (opt) {
		case 'c':
			if (!parse_ulong(optarg, 1000000000, &v) || !v)
				return -1;
			o->count = (long)v;
			break;
		case 'i':
			o->interval = strtod(optarg, &end);
			if (*end || o->interval < 0.001 || o->interval > 3600)
				return -1;
			break;
		case 's':
			if (!parse_ulong(optarg, 16u << 20, &v))
				return -1;
			o->size = (unsigned int)v;
			break;
		case 'W':
			if (!parse_ulong(optarg, 3600, &v) || !v)
				return -1;
			o->timeout_ms = (int)v * 1000;
			break;
		case 'p':
			o->port = optarg;
			break;
		default:
			return -1;
		}
	}
	if (optind >= argc || argc - optind > 3)
		return -1;
	o->host = argv[optind++];
	if (optind < argc) {
		if (!parse_ulong(argv[optind++], UINT32_MAX, &v))
			return -1;
		o->prog = (rpcprog_t)v;
	}
	if (optind < argc) {
		if (!parse_ulong(argv[optind++], UINT32_MAX, &v))
			return -1;
		o->vers = (rpcvers_t)v;
	}
	return 0;
}

static int resolve(const struct ping_opts *o, struct sockaddr_storage *ss, char *name,
		   size_t len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char port[16];
	int rc;

	snprintf(port, sizeof(port), "%u", RPCRDMA_NFS_PORT);
	rc = getaddrinfo(o->host, o->port ? o->port : port, &hints, &ai);
	if (rc) {
		fprintf(stderr, "rpcrdma-ping: %s: %s\n", o->host, gai_strerror(rc));
		return -1;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	getnameinfo(ai->ai_addr, ai->ai_addrlen, name, (socklen_t)len, NULL, 0, NI_NUMERICHOST);
	freeaddrinfo(ai);
	return 0;
}

/* One call: its round trip in milliseconds, or a negative value with why in @err. */
static double ping_once(CLIENT *cl, const struct ping_opts *o, char *out, char *in,
			struct rpc_err *err)
{
	struct timeval tv = { o->timeout_ms / 1000, 0 };
	u_int in_len = o->size;
	enum clnt_stat st;
	double t0 = now_ms(), t1;

	if (!o->size) {
		st = clnt_call(cl, NULLPROC, PING_XDR(xdr_void), NULL, PING_XDR(xdr_void), NULL,
			       tv);
	} else {
		struct ping_bytes arg = { o->size, out, o->size }, res = { in_len, in, o->size };

		st = clnt_call(cl, PING_ECHO_PROC, PING_XDR(xdr_ping_bytes), (char *)&arg,
			       PING_XDR(xdr_ping_bytes), (char *)&res, tv);
		if (st == RPC_SUCCESS && (res.len != o->size || memcmp(in, out, o->size))) {
			err->re_status = RPC_CANTDECODERES;
			return -2;
		}
	}
	t1 = now_ms();
	if (st != RPC_SUCCESS) {
		clnt_geterr(cl, err);
		return -1;
	}
	return t1 - t0;
}

static void report(const struct ping_opts *o, const char *name, const struct ping_stats *st,
		   double elapsed)
{
	double avg, mdev;

	printf("\n--- %s rpcrdma-ping statistics ---\n", name);
	printf("%ld calls sent, %ld answered, %.0f%% lost, time %.0f ms\n", st->sent,
	       st->answered, st->sent ? 100.0 * (double)(st->sent - st->answered) / st->sent : 0.0,
	       elapsed);
	if (!st->answered)
		return;
	avg = st->sum / st->answered;
	mdev = sqrt(fmax(0.0, st->sum2 / st->answered - avg * avg));
	printf("rtt min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f ms\n", st->min, avg, st->max, mdev);
}

static void pause_for(double ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1e3);
	ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1e3) * 1e6);
	while (nanosleep(&ts, &ts) && errno == EINTR && !interrupted)
		;
}

static void account(struct ping_stats *st, double ms)
{
	st->answered++;
	st->sum += ms;
	st->sum2 += ms * ms;
	if (st->answered == 1 || ms < st->min)
		st->min = ms;
	if (ms > st->max)
		st->max = ms;
}

int main(int argc, char **argv)
{
	struct ping_opts o = { .interval = 1.0, .timeout_ms = 5000, .prog = PING_DEFAULT_PROG,
			       .vers = PING_DEFAULT_VERS };
	struct sockaddr_storage ss;
	struct ping_stats st = { 0 };
	char name[NI_MAXHOST + 8];
	char *out = NULL, *in = NULL;
	double start;
	CLIENT *cl;
	long seq;

	if (parse_args(argc, argv, &o)) {
		usage(argv[0]);
		return 2;
	}
	if (resolve(&o, &ss, name, sizeof(name)))
		return 2;
	if (o.size) {
		out = malloc(o.size);
		in = malloc(o.size);
		if (!out || !in) {
			fprintf(stderr, "rpcrdma-ping: no memory for %u bytes\n", o.size);
			return 2;
		}
		for (unsigned int i = 0; i < o.size; i++)
			out[i] = (char)(i * 7 + 1);
	}
	cl = rpcrdma_clnt_create((struct sockaddr *)&ss, o.prog, o.vers, o.size ? o.size + 512 : 0,
				 o.size ? o.size + 512 : 0);
	if (!cl) {
		fprintf(stderr, "rpcrdma-ping: %s\n", clnt_spcreateerror(name));
		return 2;
	}
	signal(SIGINT, on_sigint);
	printf("RPCRDMA-PING %s port %u: program %lu version %lu, %s\n", name,
	       ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
						((struct sockaddr_in *)&ss)->sin_port),
	       (unsigned long)o.prog, (unsigned long)o.vers,
	       o.size ? "echo calls" : "NULL calls");
	start = now_ms();
	for (seq = 1; !interrupted && (!o.count || seq <= o.count); seq++) {
		struct rpc_err err = { 0 };
		double t0 = now_ms(), ms;

		st.sent++;
		ms = ping_once(cl, &o, out, in, &err);
		if (ms >= 0) {
			account(&st, ms);
			printf("reply from %s: seq=%ld %s time=%.3f ms\n", name, seq,
			       o.size ? "echoed" : "null", ms);
		} else if (ms < -1.5) {
			printf("from %s: seq=%ld reply differs from the call's bytes\n", name, seq);
		} else {
			printf("from %s: seq=%ld %s\n", name, seq, clnt_sperrno(err.re_status));
		}
		fflush(stdout);
		if (!o.count || seq < o.count)
			pause_for(o.interval * 1e3 - (now_ms() - t0));
	}
	report(&o, name, &st, now_ms() - start);
	clnt_destroy(cl);
	free(out);
	free(in);
	return st.answered ? 0 : 1;
}

/* SPDX-License-Identifier: MIT */
/*
 * The demo: the rpcgen echo program (echo.x) in one process, served by
 * svc_run() on a thread of its own through two listeners at once, one over
 * TCP loopback (libtirpc's svc_vc_create) and one over RPC-over-RDMA
 * (librpcrdma's rpcrdma_svc_create, on softrdma here); the main thread runs
 * the same client code (echo_run.c) over a clnt_vc_create() CLIENT and an
 * rpcrdma_clnt_create() one, and prints what each measured side by side.
 *
 * demo [-n null-calls] [-b big-calls]
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rpcrdma/tirpc.h>

#include "echo_demo.h"

struct server {
	SVCXPRT *tcp;
	SVCXPRT *rdma;
	struct sockaddr_in tcp_addr;
	struct sockaddr_in rdma_addr;
	atomic_int state;	/* 0 starting, 1 serving, -1 failed */
};

static SVCXPRT *listen_tcp(struct sockaddr_in *sin)
{
	socklen_t len = sizeof(*sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	SVCXPRT *xprt;

	if (fd < 0)
		return NULL;
	if (bind(fd, (struct sockaddr *)sin, sizeof(*sin)) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)sin, &len) || !(xprt = svc_vc_create(fd, 0, 0))) {
		close(fd);
		return NULL;
	}
	return xprt;
}

static void *server_thread(void *arg)
{
	struct server *s = arg;

	s->tcp = listen_tcp(&s->tcp_addr);
	s->rdma = rpcrdma_svc_create((struct sockaddr *)&s->rdma_addr, 0, 0);
	if (!s->tcp || !s->rdma || echo_bind() ||
	    !svc_reg(s->tcp, ECHO_PROG, ECHO_VERS, echo_prog_1, NULL) ||
	    !svc_reg(s->rdma, ECHO_PROG, ECHO_VERS, echo_prog_1, NULL)) {
		atomic_store(&s->state, -1);
		return NULL;
	}
	memcpy(&s->rdma_addr, s->rdma->xp_ltaddr.buf, sizeof(s->rdma_addr));
	atomic_store(&s->state, 1);
	svc_run();
	/* Over RDMA this ends the connections still open, too. */
	svc_destroy(s->rdma);
	svc_destroy(s->tcp);
	svc_unreg(ECHO_PROG, ECHO_VERS);
	return NULL;
}

static CLIENT *connect_tcp(const struct sockaddr_in *sin, u_int sendsize, u_int recvsize)
{
	struct netbuf nb = { .maxlen = sizeof(*sin), .len = sizeof(*sin), .buf = (void *)sin };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CLIENT *cl = fd < 0 ? NULL : clnt_vc_create(fd, &nb, ECHO_PROG, ECHO_VERS, sendsize,
						    recvsize);

	if (cl)
		clnt_control(cl, CLSET_FD_CLOSE, NULL);
	else if (fd >= 0)
		close(fd);
	return cl;
}

static CLIENT *connect_rdma(const struct sockaddr_in *sin, u_int sendsize, u_int recvsize)
{
	return rpcrdma_clnt_create((const struct sockaddr *)sin, ECHO_PROG, ECHO_VERS, sendsize,
				   recvsize);
}

static int run(const char *name, CLIENT *(*connect)(const struct sockaddr_in *, u_int, u_int),
	       const struct sockaddr_in *sin, unsigned int nulls, unsigned int bigs,
	       struct echo_figures *fig, bool stop)
{
	CLIENT *small = connect(sin, 0, 0);
	CLIENT *large = small ? connect(sin, ECHO_MAX, ECHO_MAX) : NULL;
	int rc;

	if (!small || !large) {
		clnt_pcreateerror(name);
		if (small)
			clnt_destroy(small);
		return 1;
	}
	printf("demo: %s: connected; echoing 0 B to 1 MiB, then %u NULL calls, %u 1 MiB results\n",
	       name, nulls, bigs);
	rc = echo_exercise(small, large, nulls, bigs, fig);
	if (stop)
		echo_stop_1(NULL, NULL, small);
	clnt_destroy(large);
	free(fig->big_buf);
	clnt_destroy(small);
	return rc;
}

int main(int argc, char **argv)
{
	struct server s = { 0 };
	struct echo_figures tcp, rdma;
	unsigned int nulls = 20000, bigs = 200;
	pthread_t thread;
	int opt, rc;

	while ((opt = getopt(argc, argv, "n:b:")) != -1) {
		switch (opt) {
		case 'n':
			nulls = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'b':
			bigs = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-n null-calls] [-b big-calls]\n", argv[0]);
			return 2;
		}
	}
	/* A TCP server answering a client that went away must not die of it. */
	signal(SIGPIPE, SIG_IGN);
	s.tcp_addr.sin_family = AF_INET;
	s.tcp_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s.rdma_addr = s.tcp_addr;
	if (pthread_create(&thread, NULL, server_thread, &s))
		return 1;
	while (atomic_load(&s.state) == 0)
		usleep(1000);
	if (atomic_load(&s.state) < 0) {
		fprintf(stderr, "demo: the server could not start\n");
		pthread_join(thread, NULL);
		return 1;
	}
	printf("demo: rpcgen echo server in svc_run(): TCP on 127.0.0.1:%u, RDMA (softrdma) on "
	       "127.0.0.1:%u\n", ntohs(s.tcp_addr.sin_port), ntohs(s.rdma_addr.sin_port));
	rc = run("TCP loopback", connect_tcp, &s.tcp_addr, nulls, bigs, &tcp, false);
	rc |= run("RDMA (softrdma)", connect_rdma, &s.rdma_addr, nulls, bigs, &rdma, true);
	pthread_join(thread, NULL);
	if (rc) {
		fprintf(stderr, "demo: FAILED\n");
		return 1;
	}
	printf("\n%-34s %16s %16s\n", "same rpcgen client and server", "TCP loopback",
	       "RDMA (softrdma)");
	printf("%-34s %16u %16u\n", "round trips checked byte for byte", tcp.checked,
	       rdma.checked);
	printf("%-34s %16.0f %16.0f\n", "NULL calls per second", tcp.null_per_s, rdma.null_per_s);
	printf("%-34s %16.1f %16.1f\n", "NULL call median latency (us)", tcp.null_median_us,
	       rdma.null_median_us);
	printf("%-34s %16.0f %16.0f\n", "1 MiB results (MiB/s)", tcp.big_mib_per_s,
	       rdma.big_mib_per_s);
	printf("\nAUTH_SYS seen by the server: %s\n", rdma.caller);
	printf("                         and %s\n", tcp.caller);
	printf("demo: OK\n");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The echo server: echo-server [-a address] [-p port]
 *
 * An ordinary rpcgen server. Built with -DECHO_RDMA it serves over
 * RPC-over-RDMA, without it over TCP: the call that creates the listener is
 * the only difference (echo_listen() below).
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rpc/rpc.h>
#ifdef ECHO_RDMA
#include <rpcrdma/tirpc.h>
#endif

#include "echo_demo.h"

static SVCXPRT *echo_listen(const struct sockaddr_in *sin)
{
#ifdef ECHO_RDMA
	return rpcrdma_svc_create((const struct sockaddr *)sin, 0, 0);
#else
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (const struct sockaddr *)sin, sizeof(*sin)) || listen(fd, 64))
		return NULL;
	return svc_vc_create(fd, 0, 0);
#endif
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(20049) };
	char host[INET_ADDRSTRLEN];
	const struct sockaddr_in *bound;
	SVCXPRT *xprt;
	int opt;

	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	while ((opt = getopt(argc, argv, "a:p:")) != -1) {
		switch (opt) {
		case 'a':
			if (inet_pton(AF_INET, optarg, &sin.sin_addr) != 1)
				goto usage;
			break;
		case 'p':
			sin.sin_port = htons((uint16_t)strtoul(optarg, NULL, 0));
			break;
		default:
			goto usage;
		}
	}
	if (echo_bind()) {
		fprintf(stderr, "echo-server: cannot register the echo binding\n");
		return 1;
	}
	xprt = echo_listen(&sin);
	if (!xprt) {
		perror("echo-server: cannot listen");
		return 1;
	}
	if (!svc_reg(xprt, ECHO_PROG, ECHO_VERS, echo_prog_1, NULL)) {
		fprintf(stderr, "echo-server: svc_reg failed\n");
		svc_destroy(xprt);
		return 1;
	}
	bound = (const struct sockaddr_in *)xprt->xp_ltaddr.buf;
	printf("echo-server: serving on %s port %u (netid %s); ECHO_STOP ends it\n",
	       bound ? inet_ntop(AF_INET, &bound->sin_addr, host, sizeof(host)) : "?",
	       bound ? ntohs(bound->sin_port) : 0, xprt->xp_netid ? xprt->xp_netid : "tcp");
	fflush(stdout);
	svc_run();
	svc_unreg(ECHO_PROG, ECHO_VERS);
	svc_destroy(xprt);
	return 0;
usage:
	fprintf(stderr, "usage: %s [-a address] [-p port]\n", argv[0]);
	return 2;
}

/* SPDX-License-Identifier: MIT */
/* An echo server on the native API: echo-server [-a address] [-p port] [-b] (-b: busy-poll) */
#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/rpcrdma.h>

#include "echo.h"

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	stopping = 1;
}

static void on_call(struct rpcrdma_svc_call *call, void *arg)
{
	echo_serve_call(call);
}

int main(int argc, char **argv)
{
	const char *host = "0.0.0.0", *port = "20049";
	struct rpcrdma_svc_attr attr = { RPCRDMA_SIZED(attr) };
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICHOST };
	struct addrinfo *ai;
	struct rpcrdma_svc *svc;
	int opt, rc, busy = 0;

	while ((opt = getopt(argc, argv, "a:p:b")) != -1) {
		switch (opt) {
		case 'a':
			host = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'b':
			busy = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-a address] [-p port] [-b]\n", argv[0]);
			return 2;
		}
	}
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		fprintf(stderr, "%s: %s\n", host, gai_strerror(rc));
		return 1;
	}
	attr.addr = ai->ai_addr;
	attr.on_call = on_call;
	rc = rpcrdma_svc_listen(&attr, &svc);
	freeaddrinfo(ai);
	if (rc) {
		fprintf(stderr, "rpcrdma_svc_listen: %s\n", strerror(-rc));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("echo server listening on %s port %s\n", host, port);
	/* -b: busy polling, never sleeping; else sleep on the descriptors. */
	while (!stopping)
		if (busy)
			rpcrdma_svc_poll(svc, 64);
		else
			rpcrdma_svc_wait(svc, 200);
	rpcrdma_svc_destroy(svc);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* An echo client on the native API: echo-client -a address [-p port] [-n calls] [-s size] */
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/rpcrdma.h>

#include "echo.h"

int main(int argc, char **argv)
{
	const char *host = NULL, *port = "20049";
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST };
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *clnt;
	struct addrinfo *ai;
	unsigned char data[4096], msg[4200], reply[4200];
	unsigned long n = 1000, size = 64, i;
	int opt, rc;

	while ((opt = getopt(argc, argv, "a:p:n:s:")) != -1) {
		switch (opt) {
		case 'a':
			host = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'n':
			n = strtoul(optarg, NULL, 0);
			break;
		case 's':
			size = strtoul(optarg, NULL, 0);
			break;
		default:
			goto usage;
		}
	}
	if (!host || size > sizeof(data))
		goto usage;
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		fprintf(stderr, "%s: %s\n", host, gai_strerror(rc));
		return 1;
	}
	attr.addr = ai->ai_addr;
	rc = rpcrdma_clnt_connect(&attr, &clnt);
	freeaddrinfo(ai);
	if (rc) {
		fprintf(stderr, "rpcrdma_clnt_connect: %s\n", strerror(-rc));
		return 1;
	}
	for (i = 0; i < size; i++)
		data[i] = (unsigned char)i;
	for (i = 0; i < n; i++) {
		size_t mlen = echo_encode_call(msg, sizeof(msg), (uint32_t)i + 1, data, size);
		size_t rlen = sizeof(reply);

		rc = rpcrdma_clnt_call(clnt, msg, mlen, reply, &rlen, 0);
		if (rc || echo_check_reply(reply, rlen, (uint32_t)i + 1, data, size)) {
			fprintf(stderr, "call %lu failed: %s\n", i, rc ? strerror(-rc) : "bad reply");
			rpcrdma_clnt_destroy(clnt);
			return 1;
		}
	}
	printf("%lu echo calls of %lu bytes: ok\n", n, size);
	rpcrdma_clnt_destroy(clnt);
	return 0;
usage:
	fprintf(stderr, "usage: %s -a address [-p port] [-n calls] [-s size<=4096]\n", argv[0]);
	return 2;
}

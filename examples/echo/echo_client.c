/* SPDX-License-Identifier: MIT */
/*
 * The echo client: echo-client -a address [-p port] [-n null-calls] [-b big-calls] [-s]
 *
 * An ordinary rpcgen client. Built with -DECHO_RDMA it calls over
 * RPC-over-RDMA, without it over TCP: the call that creates the CLIENT is
 * the only difference (echo_connect() below). -s asks the server to stop.
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

static CLIENT *echo_connect(const struct sockaddr_in *sin, u_int sendsize, u_int recvsize)
{
#ifdef ECHO_RDMA
	return rpcrdma_clnt_create((const struct sockaddr *)sin, ECHO_PROG, ECHO_VERS, sendsize,
				   recvsize);
#else
	struct netbuf nb = { .maxlen = sizeof(*sin), .len = sizeof(*sin), .buf = (void *)sin };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CLIENT *cl = fd < 0 ? NULL : clnt_vc_create(fd, &nb, ECHO_PROG, ECHO_VERS, sendsize,
						    recvsize);

	if (cl)
		clnt_control(cl, CLSET_FD_CLOSE, NULL);
	else if (fd >= 0)
		close(fd);
	return cl;
#endif
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(20049) };
	unsigned int nulls = 10000, bigs = 50;
	struct echo_figures fig;
	CLIENT *small, *large;
	int opt, stop = 0, rc;

	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	while ((opt = getopt(argc, argv, "a:p:n:b:s")) != -1) {
		switch (opt) {
		case 'a':
			if (inet_pton(AF_INET, optarg, &sin.sin_addr) != 1)
				goto usage;
			break;
		case 'p':
			sin.sin_port = htons((uint16_t)strtoul(optarg, NULL, 0));
			break;
		case 'n':
			nulls = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'b':
			bigs = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 's':
			stop = 1;
			break;
		default:
			goto usage;
		}
	}
	if (sin.sin_addr.s_addr == htonl(INADDR_ANY))
		goto usage;
	small = echo_connect(&sin, 0, 0);
	large = small ? echo_connect(&sin, ECHO_MAX, ECHO_MAX) : NULL;
	if (!small || !large) {
		clnt_pcreateerror("echo-client");
		return 1;
	}
	rc = echo_exercise(small, large, nulls, bigs, &fig);
	if (!rc)
		printf("echo-client: %u round trips checked; %s\n"
		       "echo-client: %u NULL calls: %.0f calls/s, median %.1f us\n"
		       "echo-client: %u NULL calls: %.2f context switches per call (client)\n"
		       "echo-client: %u 1 MiB results: %.0f MiB/s\n",
		       fig.checked, fig.caller, fig.null_calls, fig.null_per_s, fig.null_median_us,
		       fig.null_calls, fig.null_csw_per_call, fig.big_calls, fig.big_mib_per_s);
	if (stop)
		echo_stop_1(NULL, NULL, small);
	clnt_destroy(large);
	free(fig.big_buf);
	clnt_destroy(small);
	return rc;
usage:
	fprintf(stderr, "usage: %s -a address [-p port] [-n null-calls] [-b big-calls] [-s]\n",
		argv[0]);
	return 2;
}

/* SPDX-License-Identifier: MIT */
/*
 * An echo client on the native API:
 *   echo-client -a address [-p port] [-n calls] [-s size] [-b]
 *
 * Each call is checked; once they all are, it prints their rate, median
 * latency and this process's context switches (getrusage) per call. With
 * -b it busy-polls (rpcrdma_clnt_poll()) instead of sleeping on its
 * descriptor between completions.
 */
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <rpcrdma/rpcrdma.h>

#include "echo.h"

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

static void call_done(struct rpcrdma_call *call)
{
	*(int *)call->arg = 1;
}

/* As rpcrdma_clnt_call(), polling without a pause until the call is done. */
static int call_busy(struct rpcrdma_clnt *clnt, const void *msg, size_t len, void *reply,
		     size_t *rlen)
{
	struct rpcrdma_call call = { RPCRDMA_SIZED(call) };
	int finished = 0, rc;

	call.msg = msg;
	call.msg_len = len;
	call.reply = reply;
	call.reply_max = *rlen;
	call.done = call_done;
	call.arg = &finished;
	rc = rpcrdma_clnt_submit(clnt, &call);
	if (rc)
		return rc;
	while (!finished)
		if (rpcrdma_clnt_poll(clnt, 16) < 0)
			break;
	while (!finished)
		rpcrdma_clnt_wait(clnt, 100);
	*rlen = call.reply_len;
	return call.status;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *host = NULL, *port = "20049";
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST };
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *clnt;
	struct addrinfo *ai;
	unsigned char data[4096], msg[4200], reply[4200];
	unsigned long n = 1000, size = 64, i;
	double *lat, t0, elapsed_us;
	long csw0, csw;
	int opt, rc, busy = 0;

	while ((opt = getopt(argc, argv, "a:p:n:s:b")) != -1) {
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
		case 'b':
			busy = 1;
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
	lat = calloc(n ? n : 1, sizeof(*lat));
	if (!lat) {
		rpcrdma_clnt_destroy(clnt);
		return 1;
	}
	for (i = 0; i < size; i++)
		data[i] = (unsigned char)i;
	csw0 = context_switches();
	t0 = now_us();
	for (i = 0; i < n; i++) {
		size_t mlen = echo_encode_call(msg, sizeof(msg), (uint32_t)i + 1, data, size);
		/* Room for this reply and no more: a larger buffer would be a Reply chunk. */
		size_t rlen = echo_reply_len(size);
		double start = now_us();

		rc = busy ? call_busy(clnt, msg, mlen, reply, &rlen)
			  : rpcrdma_clnt_call(clnt, msg, mlen, reply, &rlen, 0);
		lat[i] = now_us() - start;
		if (rc || echo_check_reply(reply, rlen, (uint32_t)i + 1, data, size)) {
			fprintf(stderr, "call %lu failed: %s\n", i, rc ? strerror(-rc) : "bad reply");
			free(lat);
			rpcrdma_clnt_destroy(clnt);
			return 1;
		}
	}
	elapsed_us = now_us() - t0;
	csw = context_switches() - csw0;
	printf("%lu echo calls of %lu bytes: ok\n", n, size);
	if (n) {
		qsort(lat, n, sizeof(*lat), cmp_double);
		printf("echo-client: %lu calls of %lu bytes: %.0f calls/s, median %.1f us\n"
		       "echo-client: %lu calls: %.2f context switches per call (client)\n",
		       n, size, n / (elapsed_us / 1e6), lat[n / 2], n, (double)csw / n);
	}
	free(lat);
	rpcrdma_clnt_destroy(clnt);
	return 0;
usage:
	fprintf(stderr, "usage: %s -a address [-p port] [-n calls] [-s size<=4096] [-b]\n",
		argv[0]);
	return 2;
}

/* SPDX-License-Identifier: MIT */
/*
 * How long softrdma's rdma_listen() takes to make a port connectable from
 * another process, the window in which a peer told "connect now" is refused
 * (qperf and perftest -R tell it right as they listen).
 *
 * Each round binds an id to a fresh port and times rdma_listen() alone,
 * with the rendezvous directory holding 0, then 256 names of other
 * listeners (the ports before it). It prints the median per call, the
 * 90th percentile and the system calls per call.
 *
 *   listen-bench [rounds]      (default 2000 per directory size)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "bench.h"

#define OTHERS		256
#define BASE_PORT	21000

static struct rdma_cm_id *bound_id(struct rdma_event_channel *ch, unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_cm_id *id;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		perror("rdma_create_id");
		exit(1);
	}
	if (rdma_bind_addr(id, (struct sockaddr *)&sin)) {
		perror("rdma_bind_addr");
		exit(1);
	}
	return id;
}

/* Times @rounds listens on ports from @port; returns the median in µs, sets *p90 and *sys. */
static double time_listens(struct rdma_event_channel *ch, unsigned int port, unsigned int rounds,
			   double *p90, double *sys)
{
	double *us = calloc(rounds, sizeof(*us));
	double total_sys = 0, med;

	if (!us)
		exit(1);
	for (unsigned int i = 0; i < rounds; i++) {
		struct rdma_cm_id *id = bound_id(ch, port + (i % 1000));
		long long s0 = bench_syscalls();
		double t0 = bench_now_s();

		if (rdma_listen(id, 8)) {
			perror("rdma_listen");
			exit(1);
		}
		us[i] = (bench_now_s() - t0) * 1e6;
		total_sys += bench_syscalls_per(s0, 1);
		rdma_destroy_id(id);
	}
	med = bench_median(us, rounds);
	*p90 = us[rounds * 9 / 10];
	*sys = total_sys / rounds;
	free(us);
	return med;
}

int main(int argc, char **argv)
{
	unsigned int rounds = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 10) : 2000;
	struct rdma_cm_id *others[OTHERS];
	struct rdma_event_channel *ch;
	char dir[] = "/tmp/listen-bench-XXXXXX";
	double p90, sys, med;

	if (!rounds)
		rounds = 1;
	if (!getenv("SOFTRDMA_DIR")) {
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			return 1;
		}
		setenv("SOFTRDMA_DIR", dir, 1);
	}
	bench_syscalls();
	ch = rdma_create_event_channel();
	if (!ch) {
		perror("rdma_create_event_channel");
		return 1;
	}
	printf("on softrdma: rdma_listen() of a bound id, %u calls per line\n", rounds);
	printf("%-24s %10s %10s %12s\n", "names in the directory", "median µs", "p90 µs",
	       "syscalls");
	med = time_listens(ch, BASE_PORT + OTHERS, rounds, &p90, &sys);
	printf("%-24d %10.1f %10.1f %12.1f\n", 0, med, p90, sys);
	for (unsigned int i = 0; i < OTHERS; i++) {
		others[i] = bound_id(ch, BASE_PORT + i);
		if (rdma_listen(others[i], 8)) {
			perror("rdma_listen");
			return 1;
		}
	}
	med = time_listens(ch, BASE_PORT + OTHERS, rounds, &p90, &sys);
	printf("%-24d %10.1f %10.1f %12.1f\n", OTHERS, med, p90, sys);
	for (unsigned int i = 0; i < OTHERS; i++)
		rdma_destroy_id(others[i]);
	rdma_destroy_event_channel(ch);
	if (strcmp(getenv("SOFTRDMA_DIR"), dir) == 0) {
		char lock[sizeof(dir) + 8];

		snprintf(lock, sizeof(lock), "%s/.lock", dir);
		unlink(lock);
		rmdir(dir);
	}
	return 0;
}

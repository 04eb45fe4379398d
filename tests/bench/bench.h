/* SPDX-License-Identifier: MIT */
/* Clock, median and system-call count for the benchmark programs. */
#ifndef RPCRDMA_BENCH_H
#define RPCRDMA_BENCH_H

#include <linux/perf_event.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Seconds on the monotonic clock. */
static inline double bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * The machine a figure was taken on: a rate, and a ratio to TCP loopback or
 * to memcpy, holds only there (docs/performance.md). Printed before the
 * benchmark adds its own load, as 2proc-bench.sh does.
 */
static inline void bench_print_machine(void)
{
	double load[3] = { 0, 0, 0 };

	if (getloadavg(load, 3) != 3)
		load[0] = load[1] = load[2] = NAN;
	printf("machine: %ld online cores (%ld in all), load average %.2f %.2f %.2f\n",
	       sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF), load[0], load[1],
	       load[2]);
}

/* Sorts @v (n > 0) in place and returns its median. */
static inline double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return v[n / 2];
}

/*
 * System calls of every thread of this process, counted by the kernel's
 * raw_syscalls:sys_enter tracepoint (perf_event_open(2), inherited by the
 * threads created after the first call): no ptrace, so the calls keep their
 * speed and a polling loop its timing. Open it before any thread starts.
 * Returns -1 where the tracepoint or the permission is missing.
 */
static inline long long bench_syscalls(void)
{
	static int fd = -2;
	long long n;

	if (fd == -2) {
		struct perf_event_attr pa;
		char buf[32];
		FILE *f = fopen("/sys/kernel/tracing/events/raw_syscalls/sys_enter/id", "r");

		if (!f)
			f = fopen("/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id", "r");
		fd = -1;
		if (f && fgets(buf, sizeof(buf), f)) {
			memset(&pa, 0, sizeof(pa));
			pa.type = PERF_TYPE_TRACEPOINT;
			pa.size = sizeof(pa);
			pa.config = strtoull(buf, NULL, 10);
			pa.inherit = 1;
			pa.exclude_kernel = 0;
			fd = (int)syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0);
		}
		if (f)
			fclose(f);
	}
	if (fd < 0 || read(fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
		return -1;
	return n;
}

/* Per @calls, the system calls since @before (from bench_syscalls()); NAN if uncounted. */
static inline double bench_syscalls_per(long long before, unsigned int calls)
{
	long long now = bench_syscalls();

	/* The read of the counter is a system call itself. */
	return before < 0 || now < 0 || !calls ? NAN : (double)(now - before - 1) / calls;
}

#endif /* RPCRDMA_BENCH_H */

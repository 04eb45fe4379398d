/* SPDX-License-Identifier: MIT */
/* What the echo server, client and demo share besides rpcgen's code. */
#ifndef ECHO_DEMO_H
#define ECHO_DEMO_H

#include <stddef.h>

#include "echo.h"

/* The largest call and reply the clients make: 1 MiB of data and headers. */
#define ECHO_MAX (1024 * 1024 + 4096)

/* ECHO_BIG's largest result, and the buffer the client receives it in. */
#define ECHO_BIG_MAX (1024 * 1024)

/*
 * The echo program's upper-layer binding (ECHO_BIG's result is placed by
 * RDMA Write): both sides use it. Returns 0 or -errno.
 */
int echo_bind(void);

/* rpcgen's dispatcher (echo_svc.c, generated with -m: no main()). */
void echo_prog_1(struct svc_req *rqstp, SVCXPRT *transp);

/* The bytes ECHO_BIG returns. */
void echo_pattern(unsigned char *buf, size_t len);

/* What echo_exercise() measured. */
struct echo_figures {
	unsigned int checked;		/* round trips checked byte for byte */
	unsigned int null_calls;
	double null_per_s;
	double null_median_us;
	double null_csw_per_call;	/* this process's context switches per NULL call */
	unsigned int big_calls;		/* 1 MiB results */
	double big_mib_per_s;
	char caller[64];		/* what ECHO_WHOAMI said */
	void *big_buf;			/* the 1 MiB results' buffer, registered with @large */
};

/*
 * Round trips of growing sizes (checked), AUTH_SYS, then @null_calls NULL
 * calls timed one by one, then @big_calls 1 MiB results. @small was created
 * with default sizes, @large with ECHO_MAX for both. Returns 0, or 1 after
 * printing what failed; either way the caller frees @fig->big_buf after
 * clnt_destroy(@large), which is when its registration ends.
 */
int echo_exercise(CLIENT *small, CLIENT *large, unsigned int null_calls, unsigned int big_calls,
		  struct echo_figures *fig);

#endif /* ECHO_DEMO_H */

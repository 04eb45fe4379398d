/* SPDX-License-Identifier: MIT */
/*
 * The libtirpc adapter tests: one rpcgen program (tirpctest.x) served by
 * svc_run() on a thread of its own, over TCP (libtirpc's svc_vc and
 * clnt_vc) or over RDMA (librpcrdma), so that the same assertions run on
 * both.
 */
#ifndef TT_H
#define TT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpcrdma/tirpc.h>

#include "tirpctest.h"

/* Large enough for 1 MiB of data and its headers. */
#define TT_BIG (1024 * 1024 + 8192)

struct tt_server {
	bool rdma;
	bool stopped;			/* svc_run() was left already (TT_END_LISTENER) */
	pthread_t thread;
	struct sockaddr_storage addr;	/* where clients connect */
	atomic_bool ready;
	atomic_bool failed;
	SVCXPRT *listener;		/* the server thread's, once ready */
	const struct rpcrdma_svc_attr *tune; /* RDMA: rpcrdma_svc_create_attr()'s, or NULL */
};

/* What the service saw; the test thread reads these. */
struct tt_stats {
	atomic_uint held;		/* TT_HOLD calls now held */
	atomic_uint read_releases;	/* DDP result payloads released */
	atomic_uint read_ddp;		/* TT_READs answered through rpcrdma_svc_reply_ddp() */
	atomic_uint write_payloads;	/* TT_WRITE payloads taken, equal to the arguments */
	atomic_uint write_mismatch;	/* ... and different from them */
	atomic_uint deferred;		/* TT_SLEEP(TT_SLEEP_DEFERRED) calls a worker holds */
	atomic_bool release_deferred;	/* the test lets the worker answer */
	atomic_uint blocked;		/* TT_SLEEP(TT_SLEEP_BLOCKING) calls blocking their thread */
	atomic_bool release_blocked;	/* the test lets them return */
};

/* TT_SLEEP's argument for "defer to a worker and answer when released" (RDMA). */
#define TT_SLEEP_DEFERRED 0xffffffffu
/* ... and for "block the serving thread until released", as a slow pread() would. */
#define TT_SLEEP_BLOCKING 0xfffffffeu

extern struct tt_stats tt_stats;

/* The rpcgen dispatcher (tirpctest_svc.c, generated with -m). */
void tt_prog_1(struct svc_req *rqstp, SVCXPRT *transp);

/* Start svc_run() on its own thread with a listener of the kind asked for. */
/*
 * TT_THREADS=N (suite tirpc-mt): the RDMA server is rpcrdma_svc_create_mt()
 * served by rpcrdma_svc_run() on N threads instead of svc_run(); 0 if unset.
 */
unsigned int tt_threads(void);
int tt_server_start(struct tt_server *srv, bool rdma);
/* An RDMA server made by rpcrdma_svc_create_attr(@tune), which must outlive it. */
int tt_server_start_tuned(struct tt_server *srv, const struct rpcrdma_svc_attr *tune);
/* Ask it to stop (TT_SHUTDOWN), join it; it destroys its listener. */
void tt_server_stop(struct tt_server *srv);

/* A client of the test program on @srv's transport; NULL on failure. */
CLIENT *tt_client(const struct tt_server *srv, rpcprog_t prog, rpcvers_t vers, u_int sendsize,
		  u_int recvsize);

/* Byte @i of the test pattern @seed. */
static inline unsigned char tt_pattern(size_t i, unsigned int seed)
{
	return (unsigned char)((i * 131 + seed * 7 + (i >> 8)) & 0xff);
}

void tt_fill(unsigned char *buf, size_t len, unsigned int seed);
bool tt_check(const unsigned char *buf, size_t len, unsigned int seed);
uint32_t tt_sum(const unsigned char *buf, size_t len);

#endif /* TT_H */

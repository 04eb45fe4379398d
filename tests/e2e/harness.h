/* SPDX-License-Identifier: MIT */
/*
 * End-to-end test harness: a server driven by its own thread (objects belong
 * to the thread that polls them) and helpers for RPC-like messages. Runs over
 * softrdma in THREAD mode unless a test switches it.
 */
#ifndef E2E_HARNESS_H
#define E2E_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpcrdma/rpcrdma.h>

/* How the harness server answers calls. */
enum harness_mode {
	HARNESS_ECHO = 0,	/* reply with the call's bytes at once */
	HARNESS_HOLD,		/* keep calls until harness_server_release() */
	HARNESS_DROP,		/* finish calls without replying */
	HARNESS_ECHO_BUF,	/* echo through rpcrdma_svc_reply_buf/commit */
	HARNESS_DDP,		/* ddp_serve_call() (ddp.h) */
};

#define HARNESS_MAX_HELD 4096

struct harness_server {
	struct rpcrdma_svc *svc;
	struct rpcrdma_svc_attr attr;
	pthread_t thread;
	atomic_bool stop;
	atomic_int mode;
	struct sockaddr_storage addr;

	/* Counters, readable from the test thread. */
	atomic_uint calls;
	atomic_uint conns_established;
	atomic_uint conns_closed;
	atomic_uint held_now;
	atomic_uint held_max;
	atomic_int reply_errors;

	/* Held calls; touched by the server thread only. */
	struct rpcrdma_svc_call *held[HARNESS_MAX_HELD];
	unsigned int nheld;
	atomic_uint release_requests;	/* the test asks: answer every held call */
	atomic_uint release_done;
	atomic_uint close_requests;	/* the test asks: close every connection */
	atomic_uint close_done;
	void (*run_fn)(struct harness_server *hs, void *arg);	/* harness_server_run() */
	void *run_arg;
	atomic_uint run_requests;
	atomic_uint run_done;
	struct rpcrdma_svc_conn *conns[64];
	unsigned int nconns;
};

/*
 * Start a server on 127.0.0.1, port 0, with @max_requests credits and
 * @inline_size (0 = defaults). Returns 0 or -errno.
 */
int harness_server_start(struct harness_server *hs, uint32_t max_requests, uint32_t inline_size,
			 enum harness_mode mode);
/* Stop the thread and destroy the server (with whatever is still held). */
void harness_server_stop(struct harness_server *hs);
/* Ask the server thread to answer everything it holds; waits until done. */
void harness_server_release(struct harness_server *hs);
/* Ask the server thread to close every connection; waits until done. */
void harness_server_close_conns(struct harness_server *hs);

/* Run @fn(@hs, @arg) on the server thread (which owns the server) and wait for it. */
void harness_server_run(struct harness_server *hs, void (*fn)(struct harness_server *hs, void *arg),
			void *arg);

/* Client attributes aimed at @hs. */
void harness_clnt_attr(const struct harness_server *hs, struct rpcrdma_clnt_attr *attr);

/* Fill @buf with an RPC-like message: the XID, then @len - 4 bytes of pattern. */
void harness_fill_msg(unsigned char *buf, size_t len, uint32_t xid, uint32_t seed);

/*
 * cmocka assertion: the fabric holds nothing of anybody's any more (no QP,
 * CQ, MR, window, PD, CM id, channel, outstanding WR or unacknowledged CM
 * event), as after every test's teardown.
 */
void harness_assert_fabric_idle(void);

/* Wait until @pred(@arg) is true or @timeout_ms passes. Returns the predicate. */
bool harness_wait_for(bool (*pred)(void *arg), void *arg, int timeout_ms);

#endif /* E2E_HARNESS_H */

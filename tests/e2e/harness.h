/* SPDX-License-Identifier: MIT */
/*
 * End-to-end test harness: a server driven by its own thread (objects belong
 * to the thread that polls them), or by a process of its own, and helpers
 * for test calls and their echoes (rpcmsg.h). Runs over the fabric
 * E2E_FABRIC names (below).
 * Include it after cmocka.h.
 */
#ifndef E2E_HARNESS_H
#define E2E_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpcrdma/rpcrdma.h>

#include "rpcmsg.h"
#include "softrdma.h"

/* How the harness server answers calls. */
enum harness_mode {
	HARNESS_ECHO = 0,	/* reply with the call's echo at once (rpcmsg_svc_echo()) */
	HARNESS_HOLD,		/* keep calls until harness_server_release() */
	HARNESS_DROP,		/* finish calls without replying */
	HARNESS_ECHO_BUF,	/* the echo through rpcrdma_svc_reply_buf/commit */
	HARNESS_DDP,		/* ddp_serve_call() (ddp.h) */
};

#define HARNESS_MAX_HELD 4096

/*
 * The fabric the suite runs on, from E2E_FABRIC (meson stamps every e2e
 * program out once per value):
 * - thread (default): softrdma's THREAD mode, work runs in the post that
 *   queued it when nothing older waits, otherwise on its progress thread;
 * - async: the same fabric (harness_fabric() says THREAD), in ASYNC mode:
 *   all work runs on the progress thread, after the post returned;
 * - step: softrdma in STEP mode, stepped one unit at a time by a harness
 *   thread that sleeps while the fabric is idle (units run in global
 *   posting order, delays and retry intervals are not waited for);
 * - proc: the harness server runs in a process of its own, and every
 *   connection crosses processes over softrdma's socket backend.
 */
enum harness_fabric {
	HARNESS_FABRIC_THREAD,
	HARNESS_FABRIC_STEP,
	HARNESS_FABRIC_PROC,
};

enum harness_fabric harness_fabric(void);
const char *harness_fabric_name(void);
/*
 * A white-box suite (both sides in this process, the fabric stepped by its
 * tests) runs once, with E2E_FABRIC=thread: under any other fabric this
 * says why and returns true, and main() returns 77 (skip).
 */
bool harness_white_box_skip(void);
/* The mode a test that stepped for a while returns to: THREAD, or ASYNC. */
enum softrdma_mode harness_run_mode(void);

/* Under E2E_FABRIC=@f, print why and skip the test (cmocka's skip()). */
#define harness_skip_on(f, why)                                                        \
	do {                                                                           \
		if (harness_fabric() == (f)) {                                         \
			fprintf(stderr, "skipped with E2E_FABRIC=%s: %s\n",             \
				harness_fabric_name(), why);                           \
			skip();                                                        \
		}                                                                      \
	} while (0)

/*
 * For a test that needs the server in its own process: it reaches into the
 * server, runs code on its thread, or counts the server's work requests in
 * this process's fabric.
 */
#define harness_require_inproc(why) harness_skip_on(HARNESS_FABRIC_PROC, why)

/* Does the server use shared receive queues (E2E_SRQ=1)? */
bool harness_srq(void);

/*
 * For a test whose premise is a server that grants every credit at once: a
 * server with an SRQ grants by what a client has in progress.
 */
#define harness_skip_srq(why)                                                          \
	do {                                                                           \
		if (harness_srq()) {                                                   \
			fprintf(stderr, "skipped with E2E_SRQ=1: %s\n", why);         \
			skip();                                                        \
		}                                                                      \
	} while (0)

/*
 * Does the device offer type-2 memory windows? Without them (the siw
 * profile) the client registers each call's chunks per call instead.
 */
bool harness_device_windows(void);

/* For a test of windows themselves: binds, invalidation, key bytes. */
#define harness_require_windows(why)                                                   \
	do {                                                                           \
		if (!harness_device_windows()) {                                       \
			fprintf(stderr, "skipped on profile %s, which has no memory "    \
				"windows: %s\n", softrdma_profile(), why);             \
			skip();                                                        \
		}                                                                      \
	} while (0)

/* What the test and the server share, across processes with E2E_FABRIC=proc. */
struct harness_shared {
	atomic_bool stop;
	atomic_int mode;
	atomic_int ready;		/* a server process: 1 listening, < 0 -errno */
	struct sockaddr_storage addr;	/* where it listens */

	/* Counters, readable from the test thread. */
	atomic_uint calls;
	atomic_uint conns_established;
	atomic_uint conns_closed;
	atomic_uint held_now;
	atomic_uint held_max;
	atomic_int reply_errors;
	atomic_ullong reply_buf_registered;	/* most registered by one rpcrdma_svc_reply_buf() */
	atomic_ullong reply_buf_faults;		/* page faults encoding replies in place */
	atomic_ullong reply_buf_addr;		/* the last rpcrdma_svc_reply_buf() buffer */
	atomic_int reply_buf_pid;		/* in this process */

	/* Requests from the test, served by the server thread. */
	atomic_uint release_requests;	/* answer every held call */
	atomic_uint release_done;
	atomic_uint close_requests;	/* close every connection */
	atomic_uint close_done;
	atomic_uint stats_requests;	/* rpcrdma_svc_stats() into @stats */
	atomic_uint stats_done;
	struct rpcrdma_stats stats;
};

struct harness_server {
	struct rpcrdma_svc *svc;	/* NULL when the server runs in another process */
	struct rpcrdma_svc_attr attr;
	pthread_t thread;
	struct harness_shared *sh;	/* &own, or the mapping shared with the server process */
	struct harness_shared own;
	pid_t child;
	struct sockaddr_storage addr;

	/* Held calls; touched by the server thread only. */
	struct rpcrdma_svc_call *held[HARNESS_MAX_HELD];
	unsigned int nheld;
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
/* The server's rpcrdma_svc_stats(), read on its thread (in any E2E_FABRIC). */
struct rpcrdma_stats harness_server_stats(struct harness_server *hs);

/*
 * Run @fn(@hs, @arg) on the server thread (which owns the server) and wait
 * for it. In-process servers only (harness_require_inproc()).
 */
void harness_server_run(struct harness_server *hs, void (*fn)(struct harness_server *hs, void *arg),
			void *arg);

/* Client attributes aimed at @hs. */
void harness_clnt_attr(const struct harness_server *hs, struct rpcrdma_clnt_attr *attr);

/*
 * Fill @buf with a test call of @len bytes (at least RPCMSG_HEAD): a call's
 * head with @xid (rpcmsg.h), then a pattern of @seed. The harness's echo
 * servers answer it with its echo (rpcmsg_echo()).
 */
void harness_fill_msg(unsigned char *buf, size_t len, uint32_t xid, uint32_t seed);

/*
 * cmocka assertion: the first @len bytes at @reply are the echo of those of
 * call @msg (rpcmsg_echoes()), reported at the caller's line.
 */
#define harness_assert_echo(reply, msg, len)                                           \
	harness_assert_echo_at((reply), (msg), (len), __FILE__, __LINE__)
void harness_assert_echo_at(const void *reply, const void *msg, size_t len, const char *file,
			    int line);

/*
 * cmocka assertion: the fabric holds nothing of anybody's any more (no QP,
 * CQ, MR, window, PD, CM id, channel, outstanding WR or unacknowledged CM
 * event), as after every test's teardown.
 */
void harness_assert_fabric_idle(void);

/* A predicate for harness_wait_for(): the server (@hs) holds exactly one call. */
bool harness_holds_one(void *hs);

/* Wait until @pred(@arg) is true or @timeout_ms passes. Returns the predicate. */
bool harness_wait_for(bool (*pred)(void *arg), void *arg, int timeout_ms);
/* A client connected to a native server of the test's own (asserts it connects). */
struct rpcrdma_clnt *harness_connect_to(struct rpcrdma_svc *svc);

/*
 * A thread's worth of calls: @calls echo calls of sizes 16 to 255, the
 * first word after each call's head set to @seed (a server can tell such
 * calls apart), each reply checked; @failures counts the bad ones, @done is
 * set at the end.
 */
#define HARNESS_CALLER_MIN (RPCMSG_HEAD + 4)
struct harness_caller {
	struct rpcrdma_clnt *clnt;
	uint32_t seed;
	unsigned int calls;
	int failures;
	atomic_bool done;
};

void *harness_caller_run(void *caller);
/* The seed of a call (@len bytes at @msg) as harness_caller_run() sets it, or 0. */
uint32_t harness_caller_seed(const void *msg, size_t len);

/* Wait until the server has seen @want connections established (closed) in all. */
bool harness_wait_established(struct harness_server *hs, unsigned int want, int timeout_ms);
bool harness_wait_closed(struct harness_server *hs, unsigned int want, int timeout_ms);

#endif /* E2E_HARNESS_H */

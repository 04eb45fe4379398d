/* SPDX-License-Identifier: MIT */
/*
 * The libtirpc server transports' internals: a listener SVCXPRT (struct
 * tsvc) over the native server, a connection SVCXPRT (struct tconn) per
 * accepted connection, and the threads of rpcrdma_svc_run().
 */
#ifndef RPCRDMA_TIRPC_SVC_H
#define RPCRDMA_TIRPC_SVC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <rpc/rpc.h>
#include <rpc/svc_mt.h>

#include <rpcrdma/svc.h>

#include "list.h"
#include "tirpc_pool.h"
#include "tirpc_ulb.h"
#include "tirpc_xdr.h"

#define TSVC_BUDGET 64
/* Calls one connection dispatches before it lets the others have a turn. */
#define TSVC_TURN 32
/* Bound on waiting for a destroyed connection's flushes, as the engine's. */
#define TSVC_DRAIN_MS 10000

struct tsvc;

/* A connection SVCXPRT. */
struct tconn {
	SVCXPRT xprt;
	SVCXPRT_EXT ext;
	char verf_body[MAX_AUTH_BYTES];
	struct tsvc *svc;
	struct list_node node;			/* tsvc.conns */
	struct rpcrdma_svc_conn *conn;		/* NULL once closed or detached */
	bool closed;				/* the connection is gone: XPRT_DIED */
	bool dying;				/* being destroyed: new calls are dropped */
	bool armed;				/* idle and notification armed */
	int wake_fd;				/* eventfd: readable while a turn is owed */
	bool wake_raised;			/* wake_fd written, not read since */
	unsigned int turn;			/* calls dispatched in this turn */

	struct rpcrdma_svc_call **queue;	/* received, not yet dispatched */
	unsigned int qhead, qlen, qcap;

	struct rpcrdma_svc_call *cur;		/* being dispatched */
	uint32_t xid;
	struct tirpc_ulb_call ulb;		/* cur's binding */
	XDR xdrs;				/* decoding cur */
	struct tirpc_xdr_splice splice;
	struct tirpc_splice *parts;		/* cur's payloads, for the splice */
	unsigned int nparts_max;
	struct tirpc_ddp ddp[TIRPC_XDR_MAX_DDP];	/* rpcrdma_svc_reply_ddp() */
	unsigned int nddp;
	struct list_node ready_node;		/* its thread's ready list (rpcrdma_svc_run()) */
	bool ready;
	struct tsvc_thread *owner;		/* the thread that accepted it, while it runs */
	struct list_node kill_node;		/* owner->kill: destroyed from another thread */
};

/* A thread of rpcrdma_svc_run(): it drives poller @index and its connections. */
struct tsvc_thread {
	struct tsvc *ts;
	unsigned int index;
	pthread_t thread;
	struct list_node ready;			/* connections with calls to dispatch */
	pthread_mutex_t lock;
	struct list_node kill;			/* lock: connections others destroyed */
};

/* A listener SVCXPRT and the native server behind it. */
struct tsvc {
	SVCXPRT xprt;
	SVCXPRT_EXT ext;
	char verf_body[MAX_AUTH_BYTES];
	struct rpcrdma_svc *native;		/* NULL once the listener is destroyed */
	struct tpool *pool;			/* rpcrdma_svc_buf_alloc(); the native server's */
	struct list_node conns;			/* lock */
	bool listener_gone;
	int family;
	unsigned int nthreads;			/* rpcrdma_svc_create_mt(); 0: svc_run() */
	atomic_uint spin_us;			/* RPCRDMA_SVCSET_SPIN_US */
	pthread_mutex_t lock;
	atomic_bool stop;			/* rpcrdma_svc_run() ends */
	atomic_bool running;			/* rpcrdma_svc_run() is serving */
	bool destroy_pending;			/* destroyed from one of its threads */
};

/* The thread of rpcrdma_svc_run() running here, if any; whose call it dispatches. */
extern __thread struct tsvc_thread *tsvc_self;
extern __thread struct tconn *tsvc_dispatching;

struct tsvc *tsvc_of(SVCXPRT *xprt);
/* Disconnect, drain and free a connection SVCXPRT already unregistered. */
void tconn_destroy_now(struct tconn *tc);

#endif /* RPCRDMA_TIRPC_SVC_H */

/* SPDX-License-Identifier: MIT */
/* The client transport's internals (the kernel's xprtrdma side). */
#ifndef RPCRDMA_XPRT_RDMA_H
#define RPCRDMA_XPRT_RDMA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpcrdma/clnt.h>

#include "cm.h"
#include "ep.h"
#include "list.h"

/* A receive buffer for replies. */
struct rpcrdma_rep {
	struct rpcrdma_cqe rr_cqe;		/* rpcrdma_wc_receive */
	struct list_node rr_list;		/* rb_reps_free, or rb_reps_ready */
	struct ibv_recv_wr rr_recv_wr;
	struct ibv_sge rr_sge;
	unsigned char *rr_buf;
	uint32_t rr_byte_len;
	uint32_t rr_inv_rkey;
	bool rr_with_inv;
};

enum rpcrdma_req_flags {
	RPCRDMA_REQ_SEND_PENDING = 1u << 0,	/* Send posted, its completion not yet seen */
	RPCRDMA_REQ_REPLIED = 1u << 1,		/* reply matched and consumed */
	RPCRDMA_REQ_TIMEDOUT = 1u << 2,		/* deadline passed while in flight */
	RPCRDMA_REQ_SENT = 1u << 3,		/* on rb_inflight: sent on this connection */
};

/*
 * A call slot. The call is over (its done() may run) once the reply has been
 * consumed or the connection lost, and its own Send has completed: only then
 * is the send buffer free again.
 */
struct rpcrdma_req {
	struct rpcrdma_cqe rl_cqe;		/* rpcrdma_wc_send */
	struct list_node rl_list;		/* free, pending, in-flight or done */
	struct rpcrdma_req *rl_hash_next;
	struct rpcrdma_call *rl_call;
	struct ibv_send_wr rl_send_wr;
	struct ibv_sge rl_sge;
	unsigned char *rl_buf;			/* transport header, then the RPC message */
	uint32_t rl_xid;
	unsigned int rl_flags;
	unsigned int rl_retries;
	int64_t rl_deadline;
	int rl_status;
};

/* rpcrdma_clnt is the handle; struct rpcrdma_xprt is what it points to. */
struct rpcrdma_xprt {
	struct rpcrdma_clnt_attr rx_attr;
	struct sockaddr_storage rx_addr;
	struct sockaddr_storage rx_src;
	bool rx_has_src;

	struct rdma_event_channel *rx_cm_channel;
	int rx_epfd;
	struct ibv_pd *rx_pd;
	struct rpcrdma_slab rx_send_slab;	/* one inline buffer per req */
	struct rpcrdma_slab rx_recv_slab;	/* one inline buffer per rep */

	struct rpcrdma_req *rx_reqs;
	uint32_t rx_nreqs;
	struct rpcrdma_rep *rx_reps;
	uint32_t rx_nreps;
	struct rpcrdma_req **rx_hash;
	uint32_t rx_hash_mask;

	struct list_node rb_reqs_free;
	struct list_node rb_pending;		/* waiting for a credit or a connection */
	struct list_node rb_inflight;		/* sent, reply not consumed */
	struct list_node rb_done;		/* finished; done() still to run */
	struct list_node rb_reps_free;		/* not posted */
	struct list_node rb_reps_ready;		/* received, to be processed */

	/* The current connection, when rx_connected or draining. */
	struct rpcrdma_ep rx_ep;
	bool rx_have_ep;
	bool rx_connected;
	struct rpcrdma_inline rx_inline;
	uint32_t rx_credits;			/* current grant */
	uint32_t rx_outstanding;		/* sent and unanswered: bounded by rx_credits */
	unsigned int rx_connects;

	bool rx_destroying;
	int64_t rx_next_deadline;		/* earliest deadline to check, or INT64_MAX */
	struct rpcrdma_stats rx_stats;
};

static inline struct rpcrdma_xprt *rpcrdma_clnt_xprt(struct rpcrdma_clnt *clnt)
{
	return (struct rpcrdma_xprt *)clnt;
}

/* Completion handlers (clnt_send.c, clnt_reply.c). */
void rpcrdma_wc_send(struct ibv_cq *cq, struct ibv_wc *wc);
void rpcrdma_wc_receive(struct ibv_cq *cq, struct ibv_wc *wc);

/* clnt_conn.c: establish (blocking, bounded) and lose connections. */
int xprt_rdma_connect(struct rpcrdma_xprt *x);
void xprt_rdma_process_cm(struct rpcrdma_xprt *x);
void xprt_rdma_conn_lost(struct rpcrdma_xprt *x);
void xprt_rdma_free_buffers(struct rpcrdma_xprt *x);

/* clnt_reply.c: match and consume replies, keep receives posted. */
void xprt_rdma_process_replies(struct rpcrdma_xprt *x);
void xprt_rdma_post_reps(struct rpcrdma_xprt *x);

/* clnt_send.c: XID table, sending within the credit grant, finishing calls. */
struct rpcrdma_req *xprt_rdma_lookup(struct rpcrdma_xprt *x, uint32_t xid);
void xprt_rdma_hash_add(struct rpcrdma_xprt *x, struct rpcrdma_req *req);
void xprt_rdma_hash_del(struct rpcrdma_xprt *x, struct rpcrdma_req *req);
void xprt_rdma_kick(struct rpcrdma_xprt *x);
void xprt_rdma_finish(struct rpcrdma_xprt *x, struct rpcrdma_req *req, int status);
void xprt_rdma_run_done(struct rpcrdma_xprt *x);

#endif /* RPCRDMA_XPRT_RDMA_H */

/* SPDX-License-Identifier: MIT */
/* The server transport's internals (the kernel's svcrdma side). */
#ifndef RPCRDMA_SVC_RDMA_H
#define RPCRDMA_SVC_RDMA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpcrdma/svc.h>

#include "cm.h"
#include "ep.h"
#include "list.h"

struct svcxprt_rdma;

/* What a received call is to the application (struct rpcrdma_svc_call). */
struct rpcrdma_svc_call {
	struct svcxprt_rdma *rdma;
	uint32_t xid;
	const unsigned char *msg;
	size_t msg_len;
	struct svc_rdma_send_ctxt *reply_ctxt;	/* taken by rpcrdma_svc_reply_buf() */
	uint32_t hdr_reserve;			/* bytes kept ahead of the reply for its header */
};

/* A receive buffer; while it holds a call the application owns, rc_call is live. */
struct svc_rdma_recv_ctxt {
	struct rpcrdma_cqe rc_cqe;		/* svc_rdma_wc_receive */
	struct list_node rc_list;		/* sc_recv_free, or sc_rq_dto_q */
	struct ibv_recv_wr rc_recv_wr;
	struct ibv_sge rc_recv_sge;
	unsigned char *rc_recv_buf;
	uint32_t rc_byte_len;
	struct rpcrdma_svc_call rc_call;
};

/*
 * A reply in the making and in flight. sc_sqecount counts every WR of the
 * chain ending in its Send; the Send completion (svc_rdma_wc_send) returns
 * them all and releases the context, exactly once, on success or error.
 */
struct svc_rdma_send_ctxt {
	struct rpcrdma_cqe sc_cqe;		/* svc_rdma_wc_send */
	struct list_node sc_list;		/* sc_send_free, sc_send_waiters or sc_orphans */
	struct ibv_send_wr sc_send_wr;
	struct ibv_sge sc_sge;
	struct ibv_send_wr *sc_wr_chain;	/* first WR to post */
	uint32_t sc_sqecount;
	unsigned char *sc_xprt_buf;		/* registered: header, then the inline reply */
};

enum svcxprt_state {
	SVCXPRT_ACCEPTING = 0,	/* accepted; ESTABLISHED not seen yet */
	SVCXPRT_CONNECTED,
	SVCXPRT_CLOSING,	/* draining */
	SVCXPRT_CLOSED,		/* verbs resources freed; memory kept while calls are held */
};

/* One connection: struct rpcrdma_svc_conn is this. */
struct svcxprt_rdma {
	struct rpcrdma_svc *sc_svc;		/* NULL once the server is destroyed */
	struct list_node sc_node;		/* the server's sv_conns or sv_zombies */
	int sc_state;
	bool sc_announced;			/* on_conn(ESTABLISHED) was reported */
	struct rdma_cm_id *sc_cm_id;
	struct rdma_event_channel *sc_cm_channel;
	int sc_epfd;
	struct rpcrdma_ep sc_ep;
	struct rpcrdma_inline sc_inline;
	uint32_t sc_max_requests;		/* grant ceiling = receives kept posted */
	struct rpcrdma_stats *sc_stats;		/* the server's, or sc_own_stats */
	struct rpcrdma_stats sc_own_stats;

	struct rpcrdma_slab sc_recv_slab;
	struct rpcrdma_slab sc_send_slab;
	struct svc_rdma_recv_ctxt *sc_recv_ctxts;
	uint32_t sc_nrecv;
	struct svc_rdma_send_ctxt *sc_send_ctxts;
	uint32_t sc_nsend;
	struct list_node sc_recv_free;
	struct list_node sc_rq_dto_q;		/* received, not yet decoded */
	struct list_node sc_send_free;
	struct list_node sc_send_waiters;	/* FIFO: chains waiting for SQ space */
	struct list_node sc_orphans;		/* partly posted chains, released after the drain */

	uint32_t sc_calls_held;			/* calls lent to the application */
	void *sc_app_ctx;
	struct sockaddr_storage sc_local;
	struct sockaddr_storage sc_peer;
	size_t sc_heap;				/* bytes of heap this connection holds */
};

/* A PD per device, shared by the connections that arrive on it. */
struct svc_rdma_pd {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
};

#define SVC_RDMA_MAX_DEVICES 8

struct rpcrdma_svc {
	struct rpcrdma_svc_attr sv_attr;
	struct sockaddr_storage sv_addr;
	struct rdma_event_channel *sv_cm_channel;
	struct rdma_cm_id *sv_listen_id;
	int sv_epfd;
	struct svc_rdma_pd sv_pds[SVC_RDMA_MAX_DEVICES];
	unsigned int sv_npds;
	struct list_node sv_conns;
	struct list_node sv_zombies;		/* closed, calls still held */
	struct rpcrdma_stats sv_stats;
};

static inline struct svcxprt_rdma *svc_conn_rdma(struct rpcrdma_svc_conn *conn)
{
	return (struct svcxprt_rdma *)conn;
}

static inline struct rpcrdma_svc_conn *svc_rdma_conn(struct svcxprt_rdma *rdma)
{
	return (struct rpcrdma_svc_conn *)rdma;
}

/* svc_conn.c: accepting, polling and closing one connection. */
struct svc_rdma_conn_req {
	struct rdma_cm_id *id;
	unsigned char pdata[256];
	size_t pdata_len;
	uint8_t initiator_depth;
};

int svc_rdma_accept(struct rpcrdma_svc *svc, const struct svc_rdma_conn_req *req);
int svc_rdma_conn_poll(struct svcxprt_rdma *rdma, int budget);
int svc_rdma_conn_arm(struct svcxprt_rdma *rdma);
void svc_rdma_conn_destroy_sync(struct svcxprt_rdma *rdma);
void svc_rdma_conn_put_call(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt);

/* svc_recvfrom.c: the receive path. */
void svc_rdma_wc_receive(struct ibv_cq *cq, struct ibv_wc *wc);
void svc_rdma_refill_recvs(struct svcxprt_rdma *rdma);
void svc_rdma_recvfrom(struct svcxprt_rdma *rdma);

/* svc_sendto.c: the reply path. */
void svc_rdma_wc_send(struct ibv_cq *cq, struct ibv_wc *wc);
struct svc_rdma_send_ctxt *svc_rdma_send_ctxt_get(struct svcxprt_rdma *rdma);
void svc_rdma_send_ctxt_put(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt);
int svc_rdma_send_error(struct svcxprt_rdma *rdma, uint32_t xid, uint32_t err);
void svc_rdma_post_waiters(struct svcxprt_rdma *rdma);
void svc_rdma_fail_waiters(struct svcxprt_rdma *rdma);
uint32_t svc_rdma_grant(const struct svcxprt_rdma *rdma);

#endif /* RPCRDMA_SVC_RDMA_H */

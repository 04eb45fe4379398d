/* SPDX-License-Identifier: MIT */
/* The client transport's internals (the kernel's xprtrdma side). */
#ifndef RPCRDMA_XPRT_RDMA_H
#define RPCRDMA_XPRT_RDMA_H

#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <rpcrdma/clnt.h>

#include "cm.h"
#include "compiler.h"
#include "ep.h"
#include "guard.h"
#include "list.h"
#include "mem.h"
#include "spin.h"
#include "stat.h"

/* Segments per chunk the client offers (the server's default cap). */
#define RPCRDMA_CLNT_MAX_SEGS 16
/* The smallest max_segment an application may ask for. */
#define RPCRDMA_CLNT_MIN_SEGMENT 4096u
/*
 * A call submitted after this long without one first reads the CM channel:
 * a server that closed the quiet connection (an idle timeout) is heard
 * before the call goes, which then waits for a new connection instead of
 * failing on the dead one. Busier clients pay no system call for it.
 */
#define XPRT_RDMA_QUIET_MS 100
/*
 * Inline Sends go unsignaled, as the kernel's client sends them: one in
 * up to this many more is signaled, and its completion gives back the
 * slots of those before it (rpcrdma_sq_reserve_unsignaled(), ep.h). The
 * slots they hold are beyond rx_sq_depth.
 */
#define XPRT_RDMA_UNSIG_MAX 16u

/*
 * How a call's chunks are exposed (frwr.c), chosen once per client when its
 * protection domain is made: by the device's capabilities and the
 * application's flags.
 */
enum rpcrdma_reg_mode {
	RPCRDMA_REG_NONE,	/* no protection domain yet */
	RPCRDMA_REG_MW = RPCRDMA_CLNT_REG_WINDOWS,		/* bound per call */
	RPCRDMA_REG_PER_CALL = RPCRDMA_CLNT_REG_PER_CALL,	/* MRs per call */
	RPCRDMA_REG_PERSISTENT = RPCRDMA_CLNT_REG_PERSISTENT,	/* the regions' own rkeys */
};

/*
 * One exposed segment of a call. In RPCRDMA_REG_MW mode, a type-2 memory
 * window: one rpcrdma_cqe serves its BIND_MW (done = frwr_wc_fastreg, seen
 * only on error: binds are unsignaled) and its LOCAL_INV (frwr_wc_localinv,
 * _done or _wake). In RPCRDMA_REG_PER_CALL mode, an MR of the segment's
 * bytes alone (@mw_mr), with no work requests at all.
 */
struct rpcrdma_mw {
	struct rpcrdma_cqe mw_cqe;
	struct list_node mw_list;		/* rx_mws_free, or its req's rl_registered */
	struct ibv_mw *mw_mw;
	struct ibv_mr *mw_mr;			/* per-call mode: registered for this call */
	uint32_t mw_rkey;			/* the rkey of the last bind */
	struct rpcrdma_req *mw_req;
	bool mw_bad;				/* saw a flush or an error: never reused */
	struct ibv_send_wr mw_wr;
};

/* Which of a call's buffers a bounce buffer stands in for. */
enum rpcrdma_bounce {
	RPCRDMA_BOUNCE_MSG,
	RPCRDMA_BOUNCE_PAYLOAD,
	RPCRDMA_BOUNCE_RESULT,
	RPCRDMA_BOUNCE_REPLY,
	RPCRDMA_BOUNCE_MAX,
};

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
	RPCRDMA_REQ_SENT = 1u << 3,		/* sent on this connection, reply awaited */
	RPCRDMA_REQ_LINV_PENDING = 1u << 4,	/* LOCAL_INVs posted or queued, not all done */
	RPCRDMA_REQ_LINV_FAILED = 1u << 5,	/* an invalidation failed: the reply is void */
	RPCRDMA_REQ_CANCELED = 1u << 6,		/* done() ran; the slot waits for its reply */
	RPCRDMA_REQ_MAPPED = 1u << 7,		/* windows and bounces prepared for this call */
	RPCRDMA_REQ_SQ_WAIT = 1u << 8,		/* on rb_pending with a credit, queued for SQ slots */
};

/*
 * A call slot. The call is over (its done() may run) once the reply has been
 * consumed, its memory windows invalidated (or found remotely invalidated)
 * and its own Send completed, if it was signaled; or once the connection is lost and every WR
 * of it flushed. Only then are its buffers free again.
 */
struct rpcrdma_req {
	struct rpcrdma_cqe rl_cqe;		/* rpcrdma_wc_send */
	struct list_node rl_list;		/* pending, in flight or done; self-linked when free */
	struct rpcrdma_sq_waiter rl_sqw;	/* its Send chain or its LOCAL_INVs, queued */
	struct rpcrdma_req *rl_free_next;	/* rx_free_reqs, while free */
	struct rpcrdma_req *rl_hash_next;	/* the XID table's chain */
	struct rpcrdma_req **rl_hash_pprev;	/* what points to it there; NULL: not in it */
	struct rpcrdma_call *rl_call;
	struct ibv_send_wr rl_send_wr;
	struct ibv_sge rl_sge;
	unsigned char *rl_buf;			/* transport header, then an inline message */
	uint32_t rl_xid;
	unsigned int rl_flags;
	unsigned int rl_retries;
	int64_t rl_deadline;
	int rl_status;

	/* Direct data placement (frwr.c). */
	struct list_node rl_registered;		/* windows bound, or MRs made, for this call */
	uint32_t rl_nmws;			/* windows among them: each needs a LOCAL_INV */
	uint32_t rl_sqecount;			/* WRs of the send chain: binds + Send */
	uint32_t rl_sq_extra;			/* held slots its signaled Send covers (ep.h) */
	uint32_t rl_linv_pending;		/* LOCAL_INVs not yet completed */
	struct rpcrdma_buf rl_bounce[RPCRDMA_BOUNCE_MAX];
	struct rpcrdma_mem *rl_mems[RPCRDMA_BOUNCE_MAX];
	uint32_t rl_nreads;
	struct rpcrdma_read_segment rl_reads[2 * RPCRDMA_CLNT_MAX_SEGS];
	uint32_t rl_nwrite;
	struct rpcrdma_segment rl_write[RPCRDMA_CLNT_MAX_SEGS];
	uint32_t rl_nreply;
	struct rpcrdma_segment rl_reply[RPCRDMA_CLNT_MAX_SEGS];
	uint32_t rl_hdr_len;			/* transport header bytes at rl_buf */
	uint32_t rl_reply_chunk_len;		/* bytes the accepted reply wrote by Reply chunk */
	bool rl_long_call;
	bool rl_msg_copied;			/* inline at first: ours is the only copy */
	bool rl_regions;			/* rl_bounce or rl_mems hold something */
	bool rl_wake;				/* frwr_wc_localinv_wake ran */
};

/* rpcrdma_clnt is the handle; struct rpcrdma_xprt is what it points to. */
struct rpcrdma_xprt {
	struct rpcrdma_clnt_attr rx_attr;
	struct sockaddr_storage rx_addr;
	struct sockaddr_storage rx_src;
	bool rx_has_src;

	struct rdma_event_channel *rx_cm_channel;
	int rx_epfd;
	int rx_ka_fd;				/* the keepalive timer, or -1 */
	struct ibv_pd *rx_pd;
	struct rpcrdma_slab rx_send_slab;	/* one inline buffer per req */
	struct list_node rx_mems;		/* rpcrdma_clnt_mem_register() */
	struct list_node rx_mws_free;
	uint32_t rx_nmws;			/* windows allocated */
	enum rpcrdma_reg_mode rx_reg;		/* set with rx_pd */
	uint32_t rx_sq_depth;			/* slots a send chain may take */
	struct rpcrdma_cqe rx_unsig_cqe;	/* xprt_rdma_wc_send_unsignaled */
	struct rpcrdma_slab rx_recv_slab;	/* one inline buffer per rep */

	struct rpcrdma_req *rx_reqs;
	uint32_t rx_nreqs;
	struct rpcrdma_rep *rx_reps;
	uint32_t rx_nreps;
	struct rpcrdma_req **rx_hash;
	uint32_t rx_hash_mask;

	struct rpcrdma_req *rx_free_reqs;	/* free slots: xprt_rdma_req_get/put */
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
	/* The header of a chunkless RDMA_MSG call, XID 0, encoded once (rpcrdma_marshal_prefix). */
	unsigned char rx_hdr_msg[RPCRDMA_HDR_MIN_LEN];
	uint32_t rx_ird;			/* the QP's max_dest_rd_atomic */
	uint32_t rx_credits;			/* current grant */
	uint32_t rx_outstanding;		/* sent and unanswered: bounded by rx_credits */
	unsigned int rx_connects;
	uint32_t rx_vers_low;			/* from the server's last ERR_VERS, or 0 */
	uint32_t rx_vers_high;

	bool rx_destroying;
	int64_t rx_next_deadline;		/* earliest deadline to check, or INT64_MAX */
	struct rpcrdma_pace rx_poll_pace;	/* polls, to pace the CM channel and the clock */
	int64_t rx_last_submit_ms;		/* when the last call was submitted */
	struct rpcrdma_spin rx_spin;		/* rpcrdma_clnt_call()'s polling window */
	struct rpcrdma_stats rx_stats;
	struct rpcrdma_stat_src rx_stat;	/* rx_stats, as rpcrdma-stat sees them */
	struct rpcrdma_guard rx_guard;		/* one thread inside at a time (done() nests) */
};

/* What a second thread entering a client is told (guard.h). */
#define XPRT_RDMA_GUARD_WHAT                                                            \
	"client: a client belongs to one thread at a time, or to whoever holds the "    \
	"caller's lock (clnt.h)"
#define XPRT_RDMA_GUARD(x, fail) RPCRDMA_GUARD(&(x)->rx_guard, XPRT_RDMA_GUARD_WHAT, fail)

static inline struct rpcrdma_xprt *rpcrdma_clnt_xprt(struct rpcrdma_clnt *clnt)
{
	return (struct rpcrdma_xprt *)clnt;
}

/* Completion handlers (clnt_send.c, clnt_reply.c). */
void rpcrdma_wc_send(struct ibv_cq *cq, struct ibv_wc *wc);
void xprt_rdma_wc_send_unsignaled(struct ibv_cq *cq, struct ibv_wc *wc);
void rpcrdma_wc_receive(struct ibv_cq *cq, struct ibv_wc *wc);

/* clnt_conn.c: establish (blocking, bounded) and lose connections. */
/* Connect within connect_timeout_ms, and by @by (a call's deadline) at the latest. */
int xprt_rdma_connect(struct rpcrdma_xprt *x, int64_t by);
void xprt_rdma_process_cm(struct rpcrdma_xprt *x);
void xprt_rdma_conn_lost(struct rpcrdma_xprt *x);
int xprt_rdma_keepalive_init(struct rpcrdma_xprt *x);
bool xprt_rdma_keepalive(struct rpcrdma_xprt *x);
void xprt_rdma_free_buffers(struct rpcrdma_xprt *x);

/*
 * rpc_rdma.c: check a reply against its call; the call takes its results.
 * The commonest replies first (rpcrdma_reply_plain()), then the rest.
 */
bool rpcrdma_reply_plain(struct rpcrdma_xprt *x, const struct rpcrdma_rep *rep);
void rpcrdma_reply_handler(struct rpcrdma_xprt *x, const struct rpcrdma_rep *rep);

/* clnt_reply.c: receive completions, keeping receives posted. */

/* The replies received in the last batch, in order, to rpcrdma_reply_handler(). */
static inline void xprt_rdma_process_replies(struct rpcrdma_xprt *x)
{
	struct rpcrdma_rep *rep;

	while ((rep = list_pop_entry(&x->rb_reps_ready, struct rpcrdma_rep, rr_list))) {
		if (!rpcrdma_reply_plain(x, rep))
			rpcrdma_reply_handler(x, rep);
		list_add_tail(&rep->rr_list, &x->rb_reps_free);
	}
}

/*
 * Post every unposted receive buffer in one chain, once the receives still
 * posted are down to one per slot: those cover every call the grant lets
 * be in flight (at most rx_nreqs), so the slack comes back in batches of
 * RPCRDMA_CLNT_EXTRA_RECVS, one post each, as xprtrdma's
 * rpcrdma_post_recvs does with its RPCRDMA_MAX_RECV_BATCH.
 */
static inline void xprt_rdma_post_reps(struct rpcrdma_xprt *x)
{
	if (x->rx_ep.recv_posted > x->rx_nreqs)
		return;
	rpcrdma_ep_post_recvs(&x->rx_ep, &x->rb_reps_free, UINT32_MAX,
			      RPCRDMA_RECV_WR_OFF(struct rpcrdma_rep, rr_list, rr_recv_wr));
}

/* rpc_rdma.c: the marshal of a call, and the replies' checks. */
void rpcrdma_marshal_prefix(struct rpcrdma_xprt *x);
int rpcrdma_marshal_chunks(struct rpcrdma_xprt *x, struct rpcrdma_req *req, bool remap);

/* The sizes and buffers of a call the application submits: 0, -EINVAL or -EMSGSIZE. */
static inline int rpcrdma_check_call(const struct rpcrdma_xprt *x,
				     const struct rpcrdma_call *call)
{
	size_t max = (size_t)x->rx_attr.max_segment * RPCRDMA_CLNT_MAX_SEGS;

	if ((call->payload_len && !call->payload) || (call->result_max && !call->result))
		return -EINVAL;
	if (call->payload_len && ((call->payload_pos & 3) || call->payload_pos > call->msg_len))
		return -EINVAL;
	if (call->msg_len > max || call->payload_len > max || call->result_max > max ||
	    call->reply_max > max)
		return -EMSGSIZE;
	return 0;
}

/*
 * The common call, marshalled first: no Read or Write chunk, message and
 * reply inline (so no Reply chunk either). The same decisions as the
 * general path below, taken from the sizes alone. Returns false when the
 * call is not one of these. rx_inline.send_max never exceeds the send
 * buffers: rpcrdma_cm_negotiate() caps it by inline_size, their size.
 */
static inline bool rpcrdma_marshal_inline(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	const struct rpcrdma_call *call = req->rl_call;
	uint32_t xid = htonl(req->rl_xid);

	if ((call->payload_len | call->result_max) ||
	    call->reply_max > x->rx_inline.recv_max - RPCRDMA_HDR_MIN_LEN ||
	    RPCRDMA_HDR_MIN_LEN + call->msg_len > x->rx_inline.send_max)
		return false;
	memcpy(req->rl_buf, x->rx_hdr_msg, RPCRDMA_HDR_MIN_LEN);
	memcpy(req->rl_buf, &xid, sizeof(xid));
	memcpy(req->rl_buf + RPCRDMA_HDR_MIN_LEN, call->msg, call->msg_len);
	req->rl_nreads = req->rl_nwrite = req->rl_nreply = 0;
	req->rl_hdr_len = RPCRDMA_HDR_MIN_LEN;
	req->rl_long_call = false;
	req->rl_msg_copied = true;
	req->rl_sge.length = RPCRDMA_HDR_MIN_LEN + (uint32_t)call->msg_len;
	req->rl_sqecount = 1 + req->rl_nmws;
	req->rl_flags |= RPCRDMA_REQ_MAPPED;
	return true;
}

/*
 * Prepare a call for the current connection (rpc_rdma.c): the common
 * chunkless inline call first, then the general marshal. Returns 0 or
 * -errno.
 */
static inline int rpcrdma_marshal_req(struct rpcrdma_xprt *x, struct rpcrdma_req *req, bool remap)
{
	if (!remap && rpcrdma_marshal_inline(x, req))
		return 0;
	return rpcrdma_marshal_chunks(x, req, remap);
}

/* frwr.c: memory windows for a call's chunks, and their invalidation. */
void frwr_choose_mode(struct rpcrdma_xprt *x, struct ibv_context *verbs);
int frwr_mr_access(const struct rpcrdma_xprt *x);
int frwr_map(struct rpcrdma_xprt *x, struct rpcrdma_req *req, enum rpcrdma_bounce kind,
	     const void *buf, size_t len, bool to_server, struct rpcrdma_segment *segs,
	     uint32_t *nsegs);
int frwr_send_binds(struct rpcrdma_xprt *x, struct rpcrdma_req *req, uint32_t *posted);

/*
 * Post the call: the binds of its windows first on the send queue,
 * unsignaled, the Send last. The caller has taken rl_sqecount slots.
 * Returns as rpcrdma_ep_post_send().
 */
static inline int frwr_send(struct rpcrdma_xprt *x, struct rpcrdma_req *req, uint32_t *posted)
{
	if (likely(!req->rl_nmws))
		return rpcrdma_ep_post_send(&x->rx_ep, &req->rl_send_wr, 1, posted);
	return frwr_send_binds(x, req, posted);
}
bool frwr_reminv(struct rpcrdma_xprt *x, struct rpcrdma_req *req, uint32_t rkey);
void frwr_unmap_segments(struct rpcrdma_xprt *x, struct rpcrdma_req *req);
int frwr_unmap_sync(struct rpcrdma_xprt *x, struct rpcrdma_req *req);
void frwr_release_regions(struct rpcrdma_xprt *x, struct rpcrdma_req *req);

/* After the reply: invalidate what the server did not, without waiting here. */
static inline void frwr_unmap_async(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	/* Most calls have no chunk: nothing was exposed. */
	if (unlikely(req->rl_nmws || x->rx_reg == RPCRDMA_REG_PER_CALL))
		frwr_unmap_segments(x, req);
}

/*
 * The call is finished: bring back what the server placed in bounce
 * buffers (fenced by now), no more than the reply's chunk echoes said it
 * wrote, free them, unpin registrations, and let go of any window still
 * listed (never posted, or of unknown state after a flush).
 */
static inline void frwr_release(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	req->rl_flags &= ~RPCRDMA_REQ_MAPPED;
	/* No chunk, no window: an inline call has nothing to release. */
	if (unlikely(req->rl_regions))
		frwr_release_regions(x, req);
}
void frwr_conn_lost(struct rpcrdma_xprt *x);
void frwr_destroy_all(struct rpcrdma_xprt *x);
void frwr_wc_fastreg(struct ibv_cq *cq, struct ibv_wc *wc);
void frwr_wc_localinv(struct ibv_cq *cq, struct ibv_wc *wc);
void frwr_wc_localinv_done(struct ibv_cq *cq, struct ibv_wc *wc);
void frwr_wc_localinv_wake(struct ibv_cq *cq, struct ibv_wc *wc);

/* clnt_send.c: XID table, sending within the credit grant, finishing calls. */
void xprt_rdma_req_ready(struct rpcrdma_xprt *x, struct rpcrdma_req *req);

static inline struct rpcrdma_req **xprt_rdma_xid_slot(const struct rpcrdma_xprt *x, uint32_t xid)
{
	/* XIDs are usually sequential: a multiplicative hash spreads them. */
	return &x->rx_hash[(xid * 2654435761u) & x->rx_hash_mask];
}

static inline struct rpcrdma_req *xprt_rdma_lookup(const struct rpcrdma_xprt *x, uint32_t xid)
{
	struct rpcrdma_req *req = *xprt_rdma_xid_slot(x, xid);

	while (req && req->rl_xid != xid)
		req = req->rl_hash_next;
	return req;
}

static inline void xprt_rdma_hash_add(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	struct rpcrdma_req **slot = xprt_rdma_xid_slot(x, req->rl_xid);

	req->rl_hash_next = *slot;
	if (*slot)
		(*slot)->rl_hash_pprev = &req->rl_hash_next;
	*slot = req;
	req->rl_hash_pprev = slot;
}

/* Out of the XID table, if it is there: no walk, as the kernel's hlist_del_init(). */
static inline void xprt_rdma_hash_del(struct rpcrdma_req *req)
{
	if (!req->rl_hash_pprev)
		return;
	*req->rl_hash_pprev = req->rl_hash_next;
	if (req->rl_hash_next)
		req->rl_hash_next->rl_hash_pprev = req->rl_hash_pprev;
	req->rl_hash_next = NULL;
	req->rl_hash_pprev = NULL;
}
void xprt_rdma_kick_pending(struct rpcrdma_xprt *x);
void xprt_rdma_send_failed(struct rpcrdma_xprt *x, struct rpcrdma_req *req, int rc);

/*
 * An inline Send holds nothing once posted (the device took its bytes with
 * the WR), nor do the binds chained ahead of it (their windows belong to
 * the call, which fences them after the reply), so the chain may go
 * unsignaled while the send queue's ledger lets it hold its slots
 * (rpcrdma_sq_unsignaled()): no completion to wait for, and no wake-up
 * for one (the server's answer to it is its reply). A signaled Send covers
 * the slots held so far and gives them back when it completes.
 */
static inline void xprt_rdma_send_signal(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	struct ibv_send_wr *wr = &req->rl_send_wr;

	rpcrdma_send_inline(&x->rx_ep, wr);
	if ((wr->send_flags & IBV_SEND_INLINE) &&
	    rpcrdma_sq_unsignaled(&x->rx_ep, req->rl_sqecount)) {
		wr->wr_id = rpcrdma_cqe_id(&x->rx_unsig_cqe);
		wr->send_flags &= ~(unsigned int)IBV_SEND_SIGNALED;
		return;
	}
	req->rl_flags |= RPCRDMA_REQ_SEND_PENDING;
	req->rl_sq_extra = rpcrdma_sq_signaled(&x->rx_ep);
	wr->wr_id = rpcrdma_cqe_id(&req->rl_cqe);
	wr->send_flags |= IBV_SEND_SIGNALED;
}

/* A credit and the chain's slots are taken: post the call (on no list yet). */
static inline void xprt_rdma_send(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	uint32_t posted;
	int rc;

	req->rl_flags |= RPCRDMA_REQ_SENT;
	list_add_tail(&req->rl_list, &x->rb_inflight);
	rpcrdma_count_inc(x->rx_stats.calls);
	xprt_rdma_send_signal(x, req);
	rc = frwr_send(x, req, &posted);
	if (unlikely(rc))
		xprt_rdma_send_failed(x, req, rc);
}

/*
 * The send gate, the one test of whether a call may go now: the
 * connection is up and not closing, and the grant has a credit left (RFC
 * 8166 3.3.1: no more calls in flight than the server granted). The send
 * queue's slots are asked of its ledger after (rpcrdma_sq_get()).
 */
static inline bool xprt_rdma_may_send(const struct rpcrdma_xprt *x)
{
	return x->rx_outstanding < x->rx_credits && x->rx_connected && !x->rx_ep.close_pending;
}

/*
 * Chains queued for the send queue first (Sends and LOCAL_INVs, in order),
 * then the calls on rb_pending while the grant allows.
 */
static inline void xprt_rdma_kick(struct rpcrdma_xprt *x)
{
	if (!x->rx_connected)
		return;
	rpcrdma_sq_wake(&x->rx_ep);
	if (!list_empty(&x->rb_pending))
		xprt_rdma_kick_pending(x);
}

void xprt_rdma_enqueue_pending(struct rpcrdma_xprt *x, struct rpcrdma_req *req);

/*
 * A new call goes now when nothing waits ahead of it, the gate opens and
 * the send queue has its slots with no chain waiting for them: what
 * xprt_rdma_kick() would do with it, without rb_pending. Else it joins
 * rb_pending.
 */
static inline void xprt_rdma_enqueue(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	if (likely(list_empty(&x->rb_pending) && xprt_rdma_may_send(x) &&
		   rpcrdma_sq_get(&x->rx_ep, req->rl_sqecount))) {
		x->rx_outstanding++;
		xprt_rdma_send(x, req);
		return;
	}
	xprt_rdma_enqueue_pending(x, req);
}

void xprt_rdma_finish(struct rpcrdma_xprt *x, struct rpcrdma_req *req, int status);
void xprt_rdma_run_done_list(struct rpcrdma_xprt *x);

/*
 * Free call slots are a stack: the slot freed last, warm in the cache, is
 * the next one taken. A free slot's rl_list is self-linked.
 */
static inline void xprt_rdma_req_put(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	req->rl_free_next = x->rx_free_reqs;
	x->rx_free_reqs = req;
}

static inline struct rpcrdma_req *xprt_rdma_req_get(struct rpcrdma_xprt *x)
{
	struct rpcrdma_req *req = x->rx_free_reqs;

	if (req)
		x->rx_free_reqs = req->rl_free_next;
	return req;
}

/*
 * The call is over (its req on no list): its slot is free again, then
 * done() runs. Never from inside a completion handler.
 */
static inline void xprt_rdma_done(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	struct rpcrdma_call *call = req->rl_call;

	/* Bounced results and replies come back now, past the fence. */
	frwr_release(x, req);
	call->status = req->rl_status;
	req->rl_call = NULL;
	req->rl_flags = 0;
	/* Free the slot first: done() may submit the next call. */
	xprt_rdma_req_put(x, req);
	call->done(call);
}

/* Run done() for the calls finished in handlers or by timeouts (rb_done), in order. */
static inline void xprt_rdma_run_done(struct rpcrdma_xprt *x)
{
	if (unlikely(!list_empty(&x->rb_done)))
		xprt_rdma_run_done_list(x);
}

/*
 * The adapter API: what the libtirpc CLIENT (lib/tirpc) uses beyond the
 * public one. Waits that say which descriptors are ready (enum
 * rpcrdma_ready, ep.h), so that the adapter reads only those where its own
 * event loop would read every channel on every pass.
 */

/* Add @fd (the adapter's wake-up eventfd) to the client's wait set. 0 or -errno. */
int xprt_rdma_watch(struct rpcrdma_clnt *clnt, int fd);
/*
 * Sleep on the client's wait set for up to @timeout_ms (-1: no limit).
 * Returns the &enum rpcrdma_ready tags found ready (RPCRDMA_READY_USER for
 * a watched fd; 0 on timeout or a signal), or -errno.
 */
int xprt_rdma_sleep(struct rpcrdma_clnt *clnt, int timeout_ms);

#endif /* RPCRDMA_XPRT_RDMA_H */

/* SPDX-License-Identifier: MIT */
/*
 * Client memory registration for chunks: each buffer a call exposes (a long
 * call's message, a payload, a result, a long reply) is covered by type-2
 * memory windows bound over its exact bytes, with remote access only as
 * needed (read for Read chunks, write for Write and Reply chunks), by
 * BIND_MW work requests chained unsignaled ahead of the call's Send. The key
 * byte of a window's rkey changes at every bind. After the reply, windows
 * the server invalidated remotely are retired (frwr_reminv) and the others
 * are invalidated with one chain of LOCAL_INVs (frwr_unmap_async), whose
 * last completion lets the call complete: the server can no longer reach the
 * call's memory by then (RFC 8166: fence before the ULP sees the reply).
 * Windows that saw a flush or an error are never reused: they are
 * deallocated, and new ones are allocated on the next connection.
 *
 * A device without memory windows (iWARP's siw, for one) gets per-call
 * registration instead, as the kernel's long-removed RPCRDMA_REGISTER mode
 * did: each segment is an MR of its exact bytes, made for the call and
 * deregistered when the reply arrives. Exposure is as narrow as with
 * windows; the cost is two verbs calls per segment, system calls on
 * hardware.
 *
 * With RPCRDMA_CLNT_PERSISTENT_REG there are no windows: the registrations
 * themselves carry remote access and their rkeys are advertised.
 *
 * The names of the handlers are the kernel's (net/sunrpc/xprtrdma/frwr_ops.c).
 */
#include <errno.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "xprt_rdma.h"

/*
 * Decide how this client exposes chunks, once, when its protection domain
 * is made on @verbs: every registration from then on depends on it.
 */
void frwr_choose_mode(struct rpcrdma_xprt *x, struct ibv_context *verbs)
{
	struct ibv_device_attr dev;

	if (x->rx_attr.flags & RPCRDMA_CLNT_PERSISTENT_REG) {
		x->rx_reg = RPCRDMA_REG_PERSISTENT;
		rpcrdma_warn("client: persistent registration: registered regions and bounce "
			     "buffers are open to the server for reading and writing until "
			     "deregistered, not only during the call that names them");
		return;
	}
	if (ibv_query_device(verbs, &dev) == 0 &&
	    (dev.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B))) {
		x->rx_reg = RPCRDMA_REG_MW;
		return;
	}
	x->rx_reg = RPCRDMA_REG_PER_CALL;
	rpcrdma_info("client: %s has no type-2 memory windows: each call's chunks are "
		     "registered for that call alone and deregistered at its reply "
		     "(two verbs calls per segment)", ibv_get_device_name(verbs->device));
}

/* Access a registration or bounce buffer needs for the exposure mode. */
int frwr_mr_access(const struct rpcrdma_xprt *x)
{
	switch (x->rx_reg) {
	case RPCRDMA_REG_PERSISTENT:
		return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	case RPCRDMA_REG_PER_CALL:
		return IBV_ACCESS_LOCAL_WRITE;
	default:
		return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
	}
}

/* A free segment holder; in window mode with its window allocated. */
static struct rpcrdma_mw *frwr_mw_get(struct rpcrdma_xprt *x)
{
	struct rpcrdma_mw *mw = list_pop_entry(&x->rx_mws_free, struct rpcrdma_mw, mw_list);

	if (mw)
		return mw;
	mw = rpcrdma_zalloc(&x->rx_stats, sizeof(*mw));
	if (!mw)
		return NULL;
	list_init(&mw->mw_list);
	if (x->rx_reg == RPCRDMA_REG_MW) {
		mw->mw_mw = ibv_alloc_mw(x->rx_pd, IBV_MW_TYPE_2);
		if (!mw->mw_mw) {
			rpcrdma_free(&x->rx_stats, mw, sizeof(*mw));
			return NULL;
		}
		mw->mw_rkey = mw->mw_mw->rkey;
	}
	x->rx_nmws++;
	return mw;
}

static void frwr_mw_destroy(struct rpcrdma_xprt *x, struct rpcrdma_mw *mw)
{
	list_del(&mw->mw_list);
	if (mw->mw_mw)
		ibv_dealloc_mw(mw->mw_mw);
	rpcrdma_free(&x->rx_stats, mw, sizeof(*mw));
	x->rx_nmws--;
}

/*
 * A segment is done with this call: a per-call MR is deregistered (the
 * server can no longer reach it once that returns), and the holder goes back
 * to the free list, or is gone if its window's state is unknown.
 */
static void frwr_mw_put(struct rpcrdma_xprt *x, struct rpcrdma_mw *mw)
{
	if (mw->mw_mr) {
		if (ibv_dereg_mr(mw->mw_mr))
			rpcrdma_err("client: cannot deregister a call's MR: %s", strerror(errno));
		mw->mw_mr = NULL;
	} else if (mw->mw_req) {
		mw->mw_req->rl_nmws--;
	}
	mw->mw_req = NULL;
	if (mw->mw_bad) {
		frwr_mw_destroy(x, mw);
		return;
	}
	list_del(&mw->mw_list);
	list_add_tail(&mw->mw_list, &x->rx_mws_free);
}

/*
 * Per-call mode: register @seg's bytes alone with @access. The server
 * writes only where the call asked it to, so local write comes with remote
 * write, as the verbs require, and never with remote read alone: a call's
 * message may lie in memory the application cannot write.
 */
static int frwr_reg_segment(struct rpcrdma_xprt *x, struct rpcrdma_req *req,
			    struct rpcrdma_mw *mw, struct rpcrdma_segment *seg, int access)
{
	if (access & IBV_ACCESS_REMOTE_WRITE)
		access |= IBV_ACCESS_LOCAL_WRITE;
	mw->mw_mr = ibv_reg_mr(x->rx_pd, (void *)(uintptr_t)seg->offset, seg->length, access);
	if (!mw->mw_mr) {
		mw->mw_req = NULL;
		list_add_tail(&mw->mw_list, &x->rx_mws_free);
		return -ENOMEM;
	}
	list_add_tail(&mw->mw_list, &req->rl_registered);
	seg->handle = mw->mw_mr->rkey;
	return 0;
}

/*
 * Expose [@addr, @addr + @len) under @mr with @access, as segments of at
 * most max_segment bytes, each through a window bound for this call.
 */
static int frwr_bind(struct rpcrdma_xprt *x, struct rpcrdma_req *req, struct ibv_mr *mr,
		    const unsigned char *addr, size_t len, int access,
		    struct rpcrdma_segment *segs, uint32_t *nsegs)
{
	size_t off = 0;

	*nsegs = 0;
	while (off < len) {
		uint32_t n = len - off < x->rx_attr.max_segment ? (uint32_t)(len - off) :
								 x->rx_attr.max_segment;
		struct rpcrdma_segment *seg = &segs[(*nsegs)++];
		struct rpcrdma_mw *mw;
		struct ibv_send_wr *wr;

		seg->length = n;
		seg->offset = (uintptr_t)(addr + off);
		off += n;
		if (x->rx_reg == RPCRDMA_REG_PERSISTENT) {
			seg->handle = mr->rkey;
			continue;
		}
		mw = frwr_mw_get(x);
		if (!mw)
			return -ENOMEM;
		mw->mw_req = req;
		if (x->rx_reg == RPCRDMA_REG_PER_CALL) {
			if (frwr_reg_segment(x, req, mw, seg, access))
				return -ENOMEM;
			continue;
		}
		mw->mw_cqe.done = frwr_wc_fastreg;
		mw->mw_rkey = ibv_inc_rkey(mw->mw_rkey);
		wr = &mw->mw_wr;
		memset(wr, 0, sizeof(*wr));
		wr->wr_id = rpcrdma_cqe_id(&mw->mw_cqe);
		wr->opcode = IBV_WR_BIND_MW;
		wr->bind_mw.mw = mw->mw_mw;
		wr->bind_mw.rkey = mw->mw_rkey;
		wr->bind_mw.bind_info.mr = mr;
		wr->bind_mw.bind_info.addr = seg->offset;
		wr->bind_mw.bind_info.length = n;
		wr->bind_mw.bind_info.mw_access_flags = (unsigned int)access;
		list_add_tail(&mw->mw_list, &req->rl_registered);
		req->rl_nmws++;
		seg->handle = mw->mw_rkey;
	}
	return 0;
}

/*
 * The MR a call buffer lies in: a registration of the application's, or a
 * bounce buffer of ours (filled now for what the server reads). Returns
 * the address to expose, or NULL.
 */
static const unsigned char *frwr_region(struct rpcrdma_xprt *x, struct rpcrdma_req *req,
					enum rpcrdma_bounce kind, const void *buf, size_t len,
					bool to_server, struct ibv_mr **mr)
{
	struct rpcrdma_buf *bounce = &req->rl_bounce[kind];
	struct rpcrdma_mem *mem;

	req->rl_regions = true;
	if (!req->rl_mems[kind] && !bounce->data) {
		mem = rpcrdma_mem_find(&x->rx_mems, buf, len, x->rx_pd, mr);
		if (mem) {
			mem->rm_users++;
			req->rl_mems[kind] = mem;
			return buf;
		}
		if (rpcrdma_buf_alloc(bounce, x->rx_pd, len, frwr_mr_access(x), &x->rx_stats))
			return NULL;
		if (to_server) {
			memcpy(bounce->data, buf, len);
			rpcrdma_count_add(x->rx_stats.bounce_bytes, len);
		}
	}
	if (req->rl_mems[kind]) {
		rpcrdma_mem_find(&x->rx_mems, buf, len, x->rx_pd, mr);
		return buf;
	}
	*mr = bounce->mr;
	return bounce->data;
}

/*
 * Register a call buffer for a chunk: @buf, @len bytes, that the server
 * reads (@to_server) or writes, described in @segs (*@nsegs of them). The
 * windows' binds wait for frwr_send(). Returns 0 or -ENOMEM.
 */
int frwr_map(struct rpcrdma_xprt *x, struct rpcrdma_req *req, enum rpcrdma_bounce kind,
	     const void *buf, size_t len, bool to_server, struct rpcrdma_segment *segs,
	     uint32_t *nsegs)
{
	const unsigned char *addr;
	struct ibv_mr *mr;

	addr = frwr_region(x, req, kind, buf, len, to_server, &mr);
	if (!addr)
		return -ENOMEM;
	return frwr_bind(x, req, mr, addr, len,
			 to_server ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE, segs, nsegs);
}

/* frwr_send() of a call with windows: chain their binds ahead of the Send. */
int frwr_send_binds(struct rpcrdma_xprt *x, struct rpcrdma_req *req, uint32_t *posted)
{
	struct ibv_send_wr *first = &req->rl_send_wr, **link = &first;
	struct list_node *pos;

	list_for_each(pos, &req->rl_registered) {
		struct rpcrdma_mw *mw = list_entry(pos, struct rpcrdma_mw, mw_list);

		*link = &mw->mw_wr;
		link = &mw->mw_wr.next;
	}
	*link = &req->rl_send_wr;
	return rpcrdma_ep_post_send(&x->rx_ep, first, req->rl_sqecount, posted);
}

/*
 * The server invalidated @rkey with its Send: that window is free without a
 * LOCAL_INV. Returns false when the rkey is not one of this call's: the
 * server invalidated memory it had no business with, and the connection is
 * closed.
 */
bool frwr_reminv(struct rpcrdma_xprt *x, struct rpcrdma_req *req, uint32_t rkey)
{
	struct list_node *pos;

	list_for_each(pos, &req->rl_registered) {
		struct rpcrdma_mw *mw = list_entry(pos, struct rpcrdma_mw, mw_list);

		if (mw->mw_rkey == rkey) {
			frwr_mw_put(x, mw);
			return true;
		}
	}
	rpcrdma_err("client: XID 0x%08x: server invalidated rkey 0x%x the call never offered",
		    req->rl_xid, rkey);
	rpcrdma_ep_close_deferred(&x->rx_ep);
	return false;
}

/* Chain a LOCAL_INV for each window left; the last one's handler is @last. */
static struct ibv_send_wr *frwr_linv_chain(struct rpcrdma_req *req,
					   void (*last)(struct ibv_cq *, struct ibv_wc *))
{
	struct ibv_send_wr *first = NULL, **link = &first;
	struct list_node *pos;

	list_for_each(pos, &req->rl_registered) {
		struct rpcrdma_mw *mw = list_entry(pos, struct rpcrdma_mw, mw_list);
		struct ibv_send_wr *wr = &mw->mw_wr;

		memset(wr, 0, sizeof(*wr));
		mw->mw_cqe.done = pos->next == &req->rl_registered ? last : frwr_wc_localinv;
		wr->wr_id = rpcrdma_cqe_id(&mw->mw_cqe);
		wr->opcode = IBV_WR_LOCAL_INV;
		wr->send_flags = IBV_SEND_SIGNALED;
		wr->invalidate_rkey = mw->mw_rkey;
		*link = wr;
		link = &wr->next;
	}
	return first;
}

/* The LOCAL_INV chain's slots are taken: post it. */
static void frwr_post_linv(struct rpcrdma_ep *ep, struct rpcrdma_sq_waiter *w)
{
	struct rpcrdma_req *req = container_of(w, struct rpcrdma_req, rl_sqw);
	uint32_t posted = 0;
	int rc;

	rc = rpcrdma_ep_post_send(ep, frwr_linv_chain(req, frwr_wc_localinv_done),
				  req->rl_linv_pending, &posted);
	if (likely(rc == 0))
		return;
	/*
	 * The reply is void: the call goes again on the next connection (or
	 * fails), as the kernel does. What was posted still completes.
	 */
	req->rl_flags |= RPCRDMA_REQ_LINV_FAILED;
	if (rc == -EINPROGRESS) {
		req->rl_linv_pending = posted;
	} else {
		req->rl_linv_pending = 0;
		req->rl_flags &= ~RPCRDMA_REQ_LINV_PENDING;
	}
}

/* The call stays on rb_inflight: the loss of the connection settles it. */
static void frwr_linv_abort(struct rpcrdma_ep *ep, struct rpcrdma_sq_waiter *w)
{
	(void)ep;
	(void)w;
}

/* Let go of every segment the call lists; per-call MRs are fenced once this returns. */
static void frwr_put_all(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	while (!list_empty(&req->rl_registered))
		frwr_mw_put(x, list_first_entry(&req->rl_registered, struct rpcrdma_mw, mw_list));
}

/* frwr_unmap_async() of a call that exposed memory. */
void frwr_unmap_segments(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	if (x->rx_reg == RPCRDMA_REG_PER_CALL)
		frwr_put_all(x, req);
	if (!req->rl_nmws)
		return;
	req->rl_flags |= RPCRDMA_REQ_LINV_PENDING;
	req->rl_linv_pending = req->rl_nmws;
	req->rl_sqw.sqecount = req->rl_nmws;
	req->rl_sqw.post = frwr_post_linv;
	req->rl_sqw.abort = frwr_linv_abort;
	rpcrdma_sq_post(&x->rx_ep, &req->rl_sqw);
}

/*
 * Invalidate a call's windows and wait (polling) until it is done: for a
 * call abandoned while the server may still reach its memory. Returns 0,
 * or -ENOTCONN when the connection went down meanwhile (which fences the
 * windows just as well: they flush, and their QP dies).
 */
int frwr_unmap_sync(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	uint32_t n = req->rl_nmws, posted = 0;
	int64_t deadline = rpcrdma_now_ms() + x->rx_attr.connect_timeout_ms;
	int rc;

	if (x->rx_reg == RPCRDMA_REG_PER_CALL)
		frwr_put_all(x, req);
	if (!n)
		return 0;
	/* Waiters queued for the send queue go first, as they would anyway. */
	while (x->rx_connected && !x->rx_ep.close_pending && !rpcrdma_sq_get(&x->rx_ep, n)) {
		if (rpcrdma_now_ms() > deadline || rpcrdma_ep_poll(&x->rx_ep, 16) < 0)
			return -ENOTCONN;
		rpcrdma_sq_wake(&x->rx_ep);
	}
	if (!x->rx_connected || x->rx_ep.close_pending)
		return -ENOTCONN;
	req->rl_wake = false;
	req->rl_linv_pending = n;
	req->rl_flags |= RPCRDMA_REQ_LINV_PENDING;
	rc = rpcrdma_ep_post_send(&x->rx_ep, frwr_linv_chain(req, frwr_wc_localinv_wake), n,
				  &posted);
	/* An unposted last WR never wakes anyone: wait only when it went out. */
	if (rc)
		return -ENOTCONN;
	while (!req->rl_wake) {
		if (rpcrdma_now_ms() > deadline)
			return -ETIMEDOUT;
		if (rpcrdma_ep_poll(&x->rx_ep, 16) < 0)
			return -ENOTCONN;
	}
	return 0;
}

/* frwr_release() of a call that has bounce buffers, registrations or windows. */
void frwr_release_regions(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	struct rpcrdma_call *call = req->rl_call;
	unsigned int k;

	if (call && req->rl_status == 0) {
		struct rpcrdma_buf *b = &req->rl_bounce[RPCRDMA_BOUNCE_RESULT];

		if (b->data && call->result_len) {
			memcpy(call->result, b->data, call->result_len);
			rpcrdma_count_add(x->rx_stats.bounce_bytes, call->result_len);
		}
		/* Only what came by Reply chunk: an inline reply is in place already. */
		b = &req->rl_bounce[RPCRDMA_BOUNCE_REPLY];
		if (b->data && req->rl_reply_chunk_len) {
			memcpy(call->reply, b->data, req->rl_reply_chunk_len);
			rpcrdma_count_add(x->rx_stats.bounce_bytes, req->rl_reply_chunk_len);
		}
	}
	req->rl_reply_chunk_len = 0;
	for (k = 0; k < RPCRDMA_BOUNCE_MAX; k++) {
		rpcrdma_buf_free(&req->rl_bounce[k], &x->rx_stats);
		if (req->rl_mems[k])
			req->rl_mems[k]->rm_users--;
		req->rl_mems[k] = NULL;
	}
	frwr_put_all(x, req);
	req->rl_nmws = 0;
	req->rl_regions = false;
}

/*
 * The connection is gone and drained: every window a call still lists was
 * bound on the dead QP and may still be valid on it; none is reused.
 * Requests keep their bounce buffers (for sending again) but will bind new
 * windows.
 */
void frwr_conn_lost(struct rpcrdma_xprt *x)
{
	uint32_t i;

	for (i = 0; i < x->rx_nreqs; i++) {
		struct rpcrdma_req *req = &x->rx_reqs[i];

		while (!list_empty(&req->rl_registered)) {
			struct rpcrdma_mw *mw = list_first_entry(&req->rl_registered,
								 struct rpcrdma_mw, mw_list);

			mw->mw_bad = true;
			frwr_mw_put(x, mw);
		}
		req->rl_nmws = 0;
		req->rl_flags &= ~RPCRDMA_REQ_MAPPED;
	}
}

void frwr_destroy_all(struct rpcrdma_xprt *x)
{
	while (!list_empty(&x->rx_mws_free))
		frwr_mw_destroy(x, list_first_entry(&x->rx_mws_free, struct rpcrdma_mw, mw_list));
}

/* A BIND_MW is unsignaled: this runs only when it failed or flushed. */
void frwr_wc_fastreg(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct rpcrdma_xprt *x = cq->cq_context;
	struct rpcrdma_mw *mw = container_of(rpcrdma_wc_cqe(wc), struct rpcrdma_mw, mw_cqe);

	if (wc->status != IBV_WC_SUCCESS) {
		mw->mw_bad = true;
		rpcrdma_ep_wc_error(&x->rx_ep, wc, "client BIND_MW");
	}
}

/* One LOCAL_INV done: the window is free again, or (on error) never reused. */
static struct rpcrdma_req *frwr_mw_done(struct rpcrdma_xprt *x, struct ibv_wc *wc)
{
	struct rpcrdma_mw *mw = container_of(rpcrdma_wc_cqe(wc), struct rpcrdma_mw, mw_cqe);
	struct rpcrdma_req *req = mw->mw_req;

	rpcrdma_sq_put(&x->rx_ep, 1);
	req->rl_linv_pending--;
	if (unlikely(wc->status != IBV_WC_SUCCESS)) {
		mw->mw_bad = true;
		req->rl_flags |= RPCRDMA_REQ_LINV_FAILED;
		rpcrdma_ep_wc_error(&x->rx_ep, wc, "client LOCAL_INV");
	}
	frwr_mw_put(x, mw);
	return req;
}

void frwr_wc_localinv(struct ibv_cq *cq, struct ibv_wc *wc)
{
	frwr_mw_done(cq->cq_context, wc);
}

/* The last LOCAL_INV of a reply's chain: every window of the call is fenced. */
void frwr_wc_localinv_done(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct rpcrdma_xprt *x = cq->cq_context;
	struct rpcrdma_req *req = frwr_mw_done(x, wc);

	req->rl_flags &= ~RPCRDMA_REQ_LINV_PENDING;
	xprt_rdma_req_ready(x, req);
}

/* The last LOCAL_INV of a synchronous unmap: wake the waiter (frwr_unmap_sync). */
void frwr_wc_localinv_wake(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct rpcrdma_xprt *x = cq->cq_context;
	struct rpcrdma_req *req = frwr_mw_done(x, wc);

	req->rl_flags &= ~RPCRDMA_REQ_LINV_PENDING;
	req->rl_wake = true;
}

/* SPDX-License-Identifier: MIT */
/*
 * Client connection management: resolve, connect with RFC 8797 private data,
 * react to CM events, and account for a lost connection (retransmit only on
 * a new one).
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

#include <rpcrdma/proto.h>

#include "xprt_rdma.h"

/*
 * Responder resources offered to the server for RDMA Reads of our memory:
 * all the device has, as the kernel's client offers (the CM carries 8 bits).
 */
#define RPCRDMA_CLNT_MAX_IRD 255

/*
 * Segments no longer than one RDMA operation may carry on the port: the
 * server would have to split them, and not every server does.
 */
static void xprt_rdma_fit_segment(struct rpcrdma_xprt *x, struct rdma_cm_id *id)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(id->verbs, id->port_num ? id->port_num : 1, &pa) == 0 &&
	    pa.max_msg_sz >= RPCRDMA_CLNT_MIN_SEGMENT && pa.max_msg_sz < x->rx_attr.max_segment)
		x->rx_attr.max_segment = pa.max_msg_sz;
}

static int xprt_rdma_buffers(struct rpcrdma_xprt *x, struct rdma_cm_id *id)
{
	struct ibv_context *verbs = id->verbs;
	uint32_t size = x->rx_attr.inline_size;
	uint32_t i;
	size_t slabs;
	int rc;

	if (x->rx_pd)
		return x->rx_pd->context == verbs ? 0 : -ENODEV;

	x->rx_pd = ibv_alloc_pd(verbs);
	if (!x->rx_pd)
		return rpcrdma_errno(-ENOMEM);
	frwr_choose_mode(x, verbs);
	xprt_rdma_fit_segment(x, id);
	/* Only the local device touches these buffers: no remote access. */
	rc = rpcrdma_slab_create(&x->rx_send_slab, x->rx_pd, x->rx_nreqs, size, 0);
	if (rc)
		goto out_pd;
	rc = rpcrdma_slab_create(&x->rx_recv_slab, x->rx_pd, x->rx_nreps, size,
				 IBV_ACCESS_LOCAL_WRITE);
	if (rc)
		goto out_send;

	for (i = 0; i < x->rx_nreqs; i++) {
		struct rpcrdma_req *req = &x->rx_reqs[i];

		req->rl_buf = rpcrdma_slab_buf(&x->rx_send_slab, i);
		req->rl_sge.addr = (uintptr_t)req->rl_buf;
		req->rl_sge.lkey = rpcrdma_slab_lkey(&x->rx_send_slab);
	}
	for (i = 0; i < x->rx_nreps; i++) {
		struct rpcrdma_rep *rep = &x->rx_reps[i];

		rep->rr_buf = rpcrdma_slab_buf(&x->rx_recv_slab, i);
		rep->rr_sge.addr = (uintptr_t)rep->rr_buf;
		rep->rr_sge.length = size;
		rep->rr_sge.lkey = rpcrdma_slab_lkey(&x->rx_recv_slab);
	}
	slabs = rpcrdma_slab_bytes(&x->rx_send_slab) + rpcrdma_slab_bytes(&x->rx_recv_slab);
	rpcrdma_count_add(x->rx_stats.registered_bytes, slabs);
	rpcrdma_count_add(x->rx_stats.heap_bytes, slabs);
	return 0;

out_send:
	rpcrdma_slab_free(&x->rx_send_slab);
out_pd:
	ibv_dealloc_pd(x->rx_pd);
	x->rx_pd = NULL;
	return rc;
}

void xprt_rdma_free_buffers(struct rpcrdma_xprt *x)
{
	size_t slabs;

	if (!x->rx_pd)
		return;
	x->rx_reg = RPCRDMA_REG_NONE;
	frwr_destroy_all(x);
	rpcrdma_mem_destroy_all(&x->rx_mems);
	slabs = rpcrdma_slab_bytes(&x->rx_send_slab) + rpcrdma_slab_bytes(&x->rx_recv_slab);
	rpcrdma_count_sub(x->rx_stats.registered_bytes, slabs);
	rpcrdma_count_sub(x->rx_stats.heap_bytes, slabs);
	rpcrdma_slab_free(&x->rx_send_slab);
	rpcrdma_slab_free(&x->rx_recv_slab);
	ibv_dealloc_pd(x->rx_pd);
	x->rx_pd = NULL;
}

/*
 * Wait for @expected on @id. Events of other ids (left over from an earlier
 * connection) are acknowledged and skipped. On success the caller owns *@out
 * and acknowledges it.
 */
static int xprt_rdma_wait(struct rpcrdma_xprt *x, struct rdma_cm_id *id, int64_t deadline,
			  enum rdma_cm_event_type expected, struct rdma_cm_event **out)
{
	*out = NULL;
	for (;;) {
		struct rdma_cm_event *ev;
		int rc;

		rc = rpcrdma_cm_wait_event(x->rx_cm_channel, deadline, &ev);
		if (rc)
			return rc;
		if (ev->id != id) {
			rdma_ack_cm_event(ev);
			continue;
		}
		if (ev->event == expected) {
			*out = ev;
			return 0;
		}
		rc = rpcrdma_cm_event_errno(ev);
		rpcrdma_info("client: %s while waiting for %s", rdma_event_str(ev->event),
			     rdma_event_str(expected));
		rdma_ack_cm_event(ev);
		return rc;
	}
}

static int xprt_rdma_resolve(struct rpcrdma_xprt *x, struct rdma_cm_id *id, int64_t deadline)
{
	int timeout = (int)(deadline - rpcrdma_now_ms());
	struct rdma_cm_event *ev;
	int rc;

	if (rdma_resolve_addr(id, x->rx_has_src ? (struct sockaddr *)&x->rx_src : NULL,
			      (struct sockaddr *)&x->rx_addr, timeout > 0 ? timeout : 1))
		return rpcrdma_errno(-EHOSTUNREACH);
	rc = xprt_rdma_wait(x, id, deadline, RDMA_CM_EVENT_ADDR_RESOLVED, &ev);
	if (rc)
		return rc;
	rdma_ack_cm_event(ev);

	timeout = (int)(deadline - rpcrdma_now_ms());
	if (rdma_resolve_route(id, timeout > 0 ? timeout : 1))
		return rpcrdma_errno(-EHOSTUNREACH);
	rc = xprt_rdma_wait(x, id, deadline, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev);
	if (rc)
		return rc;
	rdma_ack_cm_event(ev);
	return 0;
}

/* What the CM settled for the Reads the server may have in flight: for rpcrdma_clnt_info(). */
static void xprt_rdma_query_ird(struct rpcrdma_xprt *x, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qa;

	x->rx_ird = 0;
	if (ibv_query_qp(id->qp, &qa, IBV_QP_MAX_DEST_RD_ATOMIC, &init) == 0)
		x->rx_ird = qa.max_dest_rd_atomic;
}

static int xprt_rdma_establish(struct rpcrdma_xprt *x, struct rdma_cm_id *id, int64_t deadline)
{
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN];
	struct rdma_conn_param param;
	struct ibv_device_attr dev;
	struct rdma_cm_event *ev;
	int rc;

	if (ibv_query_device(id->verbs, &dev))
		memset(&dev, 0, sizeof(dev));
	/*
	 * Remote invalidation retires memory windows; in the other modes the
	 * rkeys are MRs, which a peer must not invalidate.
	 */
	rpcrdma_cm_private_build(pdata, x->rx_attr.inline_size,
				 x->rx_reg == RPCRDMA_REG_MW ? RPCRDMA_CM_REMOTE_INVALIDATE : 0);
	memset(&param, 0, sizeof(param));
	param.private_data = pdata;
	param.private_data_len = sizeof(pdata);
	param.responder_resources = (uint8_t)(dev.max_qp_rd_atom < RPCRDMA_CLNT_MAX_IRD ?
					      dev.max_qp_rd_atom : RPCRDMA_CLNT_MAX_IRD);
	param.initiator_depth = 0;
	param.flow_control = 1;
	param.retry_count = 6;
	param.rnr_retry_count = x->rx_attr.rnr_retry;
	if (rdma_connect(id, &param))
		return rpcrdma_errno(-ECONNREFUSED);

	rc = xprt_rdma_wait(x, id, deadline, RDMA_CM_EVENT_ESTABLISHED, &ev);
	if (rc)
		return rc;
	rpcrdma_cm_negotiate(ev->param.conn.private_data, ev->param.conn.private_data_len,
			     x->rx_attr.inline_size, &x->rx_inline);
	rdma_ack_cm_event(ev);
	xprt_rdma_query_ird(x, id);
	return 0;
}

/* Undo a connection attempt that got as far as creating the endpoint. */
static void xprt_rdma_abandon(struct rpcrdma_xprt *x)
{
	/* The receives posted before connecting come back as flushes. */
	rpcrdma_ep_drain_sync(&x->rx_ep, 5000);
	rpcrdma_ep_destroy(&x->rx_ep);
	x->rx_have_ep = false;
}

int xprt_rdma_connect(struct rpcrdma_xprt *x, int64_t by)
{
	int64_t deadline = rpcrdma_now_ms() + x->rx_attr.connect_timeout_ms;
	struct rpcrdma_ep_attr attr = { 0 };
	struct epoll_event epev;
	struct rdma_cm_id *id;
	int rc;

	/* No longer than the calls waiting for it may wait. */
	if (by < deadline)
		deadline = by;
	if (rdma_create_id(x->rx_cm_channel, &id, x, RDMA_PS_TCP))
		return rpcrdma_errno(-ENOMEM);
	rc = xprt_rdma_resolve(x, id, deadline);
	if (rc)
		goto out_id;
	rc = xprt_rdma_buffers(x, id);
	if (rc)
		goto out_id;

	attr.pd = x->rx_pd;
	attr.context = x;
	attr.send_wrs = x->rx_sq_depth + XPRT_RDMA_UNSIG_MAX;
	attr.recv_wrs = x->rx_nreps;
	attr.send_sges = 1;
	rc = rpcrdma_ep_create(&x->rx_ep, id, &attr, &x->rx_stats);
	if (rc)
		goto out_id;
	x->rx_have_ep = true;
	/* A device whose queues are smaller: sends wait for room; receives cannot. */
	x->rx_sq_depth = rpcrdma_sq_reserve_unsignaled(&x->rx_ep, XPRT_RDMA_UNSIG_MAX);
	if (x->rx_ep.rq_depth < x->rx_nreps) {
		rpcrdma_err("client: the device takes %u receives, %u are needed: lower max_requests",
			    x->rx_ep.rq_depth, x->rx_nreps);
		rc = -ENOMEM;
		goto out_ep;
	}

	/* Receives are posted before connecting: a reply can never find none. */
	xprt_rdma_post_reps(x);
	if (x->rx_ep.close_pending) {
		rc = -ENOMEM;
		goto out_ep;
	}
	rc = xprt_rdma_establish(x, id, deadline);
	if (rc)
		goto out_ep;

	epev.events = EPOLLIN;
	epev.data.u32 = RPCRDMA_READY_COMP;
	if (epoll_ctl(x->rx_epfd, EPOLL_CTL_ADD, x->rx_ep.channel->fd, &epev)) {
		rc = -errno;
		goto out_ep;
	}
	/* Sleepers wake for async events too; the device's fd stays in the set. */
	epev.data.u32 = RPCRDMA_READY_ASYNC;
	if (epoll_ctl(x->rx_epfd, EPOLL_CTL_ADD, id->verbs->async_fd, &epev) && errno != EEXIST) {
		rc = -errno;
		epoll_ctl(x->rx_epfd, EPOLL_CTL_DEL, x->rx_ep.channel->fd, NULL);
		goto out_ep;
	}
	x->rx_ep.state = RPCRDMA_EP_CONNECTED;
	x->rx_connected = true;
	x->rx_credits = 1;	/* RFC 8166: one credit until the first grant */
	x->rx_outstanding = 0;
	x->rx_connects++;
	rpcrdma_count_inc(x->rx_stats.connects);
	return 0;

out_ep:
	xprt_rdma_abandon(x);
out_id:
	rdma_destroy_id(id);
	return rc;
}

/* Connection events while connected: anything but TIMEWAIT_EXIT ends it. */
void xprt_rdma_process_cm(struct rpcrdma_xprt *x)
{
	struct rdma_cm_event *ev;

	while (rpcrdma_cm_next_event(x->rx_cm_channel, &ev) == 0) {
		bool ours = x->rx_have_ep && ev->id == x->rx_ep.id;

		switch (ev->event) {
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		case RDMA_CM_EVENT_ESTABLISHED:
			break;
		default:
			if (ours) {
				rpcrdma_info("client: %s", rdma_event_str(ev->event));
				rpcrdma_ep_close_deferred(&x->rx_ep);
			}
			break;
		}
		rdma_ack_cm_event(ev);
	}
}

/*
 * The endpoint is drained: every Send and Receive has completed or flushed,
 * so no handler can touch a request again. Calls that were in flight are
 * sent again on the next connection while they have retries left (RFC 8166:
 * retransmit only on a new connection); the rest fail.
 */
void xprt_rdma_conn_lost(struct rpcrdma_xprt *x)
{
	struct list_node retry;
	struct rpcrdma_req *req;

	list_init(&retry);
	/* Calls queued for the send queue stay pending, unsent; LOCAL_INVs are moot. */
	rpcrdma_sq_flush(&x->rx_ep);
	while ((req = list_pop_entry(&x->rb_inflight, struct rpcrdma_req, rl_list))) {
		/* A reply that was an error ends the call so, whatever its windows did. */
		bool answered = (req->rl_flags & RPCRDMA_REQ_REPLIED) && req->rl_status;

		req->rl_flags &= ~(RPCRDMA_REQ_SENT | RPCRDMA_REQ_SEND_PENDING |
				   RPCRDMA_REQ_LINV_PENDING | RPCRDMA_REQ_LINV_FAILED |
				   RPCRDMA_REQ_REPLIED);
		req->rl_linv_pending = 0;
		if (req->rl_flags & RPCRDMA_REQ_CANCELED) {
			xprt_rdma_hash_del(req);
			frwr_release(x, req);
			req->rl_flags = 0;
			xprt_rdma_req_put(x, req);
		} else if (answered) {
			xprt_rdma_finish(x, req, req->rl_status);
		} else if (req->rl_flags & RPCRDMA_REQ_TIMEDOUT) {
			xprt_rdma_finish(x, req, -ETIMEDOUT);
		} else if (x->rx_destroying) {
			xprt_rdma_finish(x, req, -ECANCELED);
		} else if (req->rl_retries > 0) {
			req->rl_retries--;
			rpcrdma_count_inc(x->rx_stats.retransmits);
			/* A reply consumed before the loss took it out of the XID table. */
			xprt_rdma_hash_del(req);
			xprt_rdma_hash_add(x, req);
			list_add_tail(&req->rl_list, &retry);
		} else {
			xprt_rdma_finish(x, req, -ECONNRESET);
		}
	}
	/* Retransmissions go first, in their original order. */
	list_splice_tail(&x->rb_pending, &retry);
	list_splice_tail(&retry, &x->rb_pending);
	/* Windows bound on the dead QP are not reused; queued calls bind new ones. */
	frwr_conn_lost(x);

	/* Replies that arrived before the loss are no use now. */
	list_splice_tail(&x->rb_reps_ready, &x->rb_reps_free);

	epoll_ctl(x->rx_epfd, EPOLL_CTL_DEL, x->rx_ep.channel->fd, NULL);
	rpcrdma_ep_destroy(&x->rx_ep);
	rdma_destroy_id(x->rx_ep.id);
	x->rx_have_ep = false;
	x->rx_connected = false;
	x->rx_outstanding = 0;
	x->rx_credits = 0;
	rpcrdma_count_inc(x->rx_stats.disconnects);
	rpcrdma_stat_tick(&x->rx_stat, true);
}

static void xprt_rdma_wc_keepalive(struct ibv_cq *cq, struct ibv_wc *wc)
{
	rpcrdma_ka_probe_done(container_of(rpcrdma_wc_cqe(wc), struct rpcrdma_ep, ka.cqe), wc);
}

int xprt_rdma_keepalive_init(struct rpcrdma_xprt *x)
{
	struct rpcrdma_ka_conf conf = { .keepalive_ms = x->rx_attr.keepalive_ms };
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = RPCRDMA_READY_TIMER };
	int fd;

	if (!conf.keepalive_ms)
		return 0;
	fd = rpcrdma_ka_timer_open(x->rx_epfd, &ev, rpcrdma_ka_period_ms(&conf));
	if (fd < 0)
		return fd;
	x->rx_ka_fd = fd;
	return 0;
}

/*
 * Before an arm: a keepalive tick if the timer expired. True when it closed
 * the connection, which the caller then processes.
 */
bool xprt_rdma_keepalive(struct rpcrdma_xprt *x)
{
	struct rpcrdma_ka_conf conf = { .keepalive_ms = x->rx_attr.keepalive_ms };
	const struct rpcrdma_stats *st = &x->rx_stats;
	uint64_t heard;

	if (x->rx_ka_fd < 0)
		return false;
	/* A wait that found the timer not ready spares the read. */
	if (x->rx_have_ep && (x->rx_ep.ready & RPCRDMA_READY_KNOWN) &&
	    !(x->rx_ep.ready & RPCRDMA_READY_TIMER))
		return false;
	/* Read even when not connected: an unread timer keeps the set readable. */
	if (!rpcrdma_ka_timer_expired(x->rx_ka_fd) || !x->rx_have_ep || !x->rx_connected ||
	    x->rx_ep.close_pending)
		return false;
	heard = rpcrdma_count_read(st->replies) + rpcrdma_count_read(st->rdma_errors) +
		rpcrdma_count_read(st->dropped);
	if (rpcrdma_ka_tick(&x->rx_ep, &conf, heard, false, rpcrdma_now_ms(),
			    xprt_rdma_wc_keepalive) != RPCRDMA_KA_SILENT)
		return false;
	rpcrdma_warn("client: the server left a keepalive probe unanswered for %d ms; closing",
		     conf.keepalive_ms);
	rpcrdma_count_inc(x->rx_stats.keepalive_closes);
	rpcrdma_ep_close_deferred(&x->rx_ep);
	return true;
}

/* SPDX-License-Identifier: MIT */
/*
 * One server connection: accept with RFC 8797 private data, poll, close,
 * drain, and free once the application has finished every call it holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <rpcrdma/proto.h>

#include "svc_rdma.h"

/* Receive contexts beyond 2 x credits: the refill batch (kernel's sc_recv_batch). */
#define SVC_RDMA_RECV_BATCH 8
/*
 * Send-queue slots beyond one per send context: the Writes of one reply
 * (Write chunks and a Reply chunk at the default caps: 8 x 16 + 16), plus
 * room for Read waves. Chains wait in FIFO order when the queue is full.
 */
#define SVC_RDMA_SQ_EXTRA 256

static struct ibv_pd *svc_rdma_get_pd(struct rpcrdma_svc *svc, struct ibv_context *verbs)
{
	unsigned int i;

	for (i = 0; i < svc->sv_npds; i++)
		if (svc->sv_pds[i].verbs == verbs)
			return svc->sv_pds[i].pd;
	return NULL;
}

void *svc_rdma_alloc(struct svcxprt_rdma *rdma, size_t size)
{
	void *p = rpcrdma_zalloc(rdma->sc_stats, size);

	if (p)
		rdma->sc_heap += size;
	return p;
}

void *svc_rdma_realloc(struct svcxprt_rdma *rdma, void *p, size_t old, size_t size)
{
	void *q = rpcrdma_realloc(rdma->sc_stats, p, old, size);

	if (q)
		rdma->sc_heap += size - old;
	return q;
}


static int svc_rdma_buffers(struct svcxprt_rdma *rdma, struct ibv_pd *pd, uint32_t inline_size)
{
	size_t slab;
	uint32_t i;
	int rc;

	rdma->sc_nrecv = 2 * rdma->sc_max_requests + SVC_RDMA_RECV_BATCH;
	if (rdma->sc_srq)
		return 0;	/* the poller's pool serves it */
	rdma->sc_recv_ctxts = svc_rdma_alloc(rdma, sizeof(*rdma->sc_recv_ctxts) * rdma->sc_nrecv);
	if (!rdma->sc_recv_ctxts)
		return -ENOMEM;
	/* The server never exposes memory: local access only. */
	rc = rpcrdma_slab_create(&rdma->sc_recv_slab, pd, rdma->sc_nrecv, inline_size,
				 IBV_ACCESS_LOCAL_WRITE);
	if (rc)
		return rc;
	slab = rpcrdma_slab_bytes(&rdma->sc_recv_slab);
	rdma->sc_heap += slab;
	rpcrdma_count_add(rdma->sc_stats->heap_bytes, slab);
	rpcrdma_count_add(rdma->sc_stats->registered_bytes, slab);

	for (i = 0; i < rdma->sc_nrecv; i++) {
		struct svc_rdma_recv_ctxt *ctxt = &rdma->sc_recv_ctxts[i];

		svc_rdma_recv_ctxt_init(ctxt, rpcrdma_slab_buf(&rdma->sc_recv_slab, i), inline_size,
					rpcrdma_slab_lkey(&rdma->sc_recv_slab));
		ctxt->rc_rdma = rdma;
		list_add_tail(&ctxt->rc_list, &rdma->sc_recv_free);
	}
	/* One per call in progress, and room for RDMA_ERROR replies; more when needed. */
	return svc_rdma_send_ctxts_grow(rdma, rdma->sc_max_requests + SVC_RDMA_SEND_EXTRA);
}

/* Free the memory of a connection whose verbs resources are gone. */
void svc_rdma_free(struct svcxprt_rdma *rdma)
{
	list_del(&rdma->sc_node);
	rpcrdma_count_sub(rdma->sc_stats->heap_bytes, rpcrdma_slab_bytes(&rdma->sc_recv_slab));
	svc_rdma_send_ctxts_free(rdma);
	rpcrdma_slab_free(&rdma->sc_recv_slab);
	svc_rdma_free_mem(rdma, rdma->sc_recv_ctxts, sizeof(*rdma->sc_recv_ctxts) * rdma->sc_nrecv);
	rpcrdma_count_sub(rdma->sc_stats->heap_bytes, sizeof(*rdma));
	free(rdma);
}

/* Release the verbs and CM resources of a drained (or never connected) connection. */
static void svc_rdma_release_verbs(struct svcxprt_rdma *rdma)
{
	struct svc_rdma_srq *sh = rdma->sc_srq;
	struct svc_rdma_recv_ctxt *ctxt;
	struct svc_rdma_chain *chain;

	/* The drain is over: partly posted chains can be released now. */
	while ((chain = list_pop_entry(&rdma->sc_orphans, struct svc_rdma_chain, sq.list)))
		chain->release(rdma, chain);
	/* Calls whose Reads finished during the drain are not handed up. */
	svc_rdma_read_complete(rdma);
	svc_rdma_srq_leave(rdma);
	while ((ctxt = list_pop_entry(&rdma->sc_rq_dto_q, struct svc_rdma_recv_ctxt, rc_list)))
		svc_rdma_recv_ctxt_put(rdma, ctxt);
	rpcrdma_ep_destroy(&rdma->sc_ep);
	if (sh)
		svc_rdma_srq_put(sh);
	if (rdma->sc_poller && rdma->sc_epfd >= 0) {
		epoll_ctl(rdma->sc_poller->epfd, EPOLL_CTL_DEL, rdma->sc_epfd, NULL);
		epoll_ctl(rdma->sc_poller->epfd, EPOLL_CTL_DEL, rdma->sc_cm_channel->fd, NULL);
	}
	if (rdma->sc_epfd >= 0)
		close(rdma->sc_epfd);
	rdma->sc_epfd = -1;
	if (rdma->sc_cm_id)
		rdma_destroy_id(rdma->sc_cm_id);
	rdma->sc_cm_id = NULL;
	if (rdma->sc_cm_channel)
		rdma_destroy_event_channel(rdma->sc_cm_channel);
	rdma->sc_cm_channel = NULL;
	if (rdma->sc_recv_slab.mr)
		rpcrdma_count_sub(rdma->sc_stats->registered_bytes,
				  rpcrdma_slab_bytes(&rdma->sc_recv_slab));
	rpcrdma_slab_dereg(&rdma->sc_recv_slab);
	svc_rdma_send_ctxts_dereg(rdma);
}

/*
 * Calls the application still holds keep their memory, but not their
 * registrations: the PD they were made under may go away before them.
 */
static void svc_rdma_dereg_held(struct svcxprt_rdma *rdma)
{
	struct list_node *pos;
	uint32_t j;

	list_for_each(pos, &rdma->sc_held) {
		struct svc_rdma_recv_ctxt *ctxt =
			list_entry(pos, struct svc_rdma_recv_ctxt, rc_held_node);

		if (ctxt->rc_call.has_pzrc)
			rpcrdma_buf_dereg(&ctxt->rc_call.pzrc.ch_buf, rdma->sc_stats);
		rpcrdma_buf_dereg(&ctxt->rc_call.long_reply, rdma->sc_stats);
		for (j = 0; j < ctxt->rc_call.nchunks; j++)
			rpcrdma_buf_dereg(&ctxt->rc_call.chunks[j].ch_buf, rdma->sc_stats);
	}
}

/*
 * Everything posted has completed or flushed. Tear down, tell the
 * application, and free now unless it still holds calls (which keep the
 * connection's memory, not its verbs resources).
 */
static void svc_rdma_finalize(struct svcxprt_rdma *rdma)
{
	struct rpcrdma_svc *svc = rdma->sc_svc;

	svc_rdma_release_verbs(rdma);
	svc_rdma_sinks_free(rdma);
	svc_rdma_dereg_held(rdma);
	rdma->sc_state = SVCXPRT_CLOSED;
	rpcrdma_count_inc(rdma->sc_stats->disconnects);
	/* A connection's end is news: no later pass may come to publish it. */
	if (rdma->sc_poller)
		rpcrdma_stat_tick(&rdma->sc_poller->stat, true);
	svc_rdma_unready(rdma);
	list_del(&rdma->sc_node);
	if (rdma->sc_poller)
		rdma->sc_poller->nconns--;
	if (svc)
		atomic_fetch_sub(&svc->sv_nconns, 1);
	if (svc && rdma->sc_poller)
		list_add_tail(&rdma->sc_node, &rdma->sc_poller->zombies);
	/* Every connection reported ACCEPTED is reported CLOSED, established or not. */
	if (svc && svc->sv_attr.on_conn)
		svc->sv_attr.on_conn(svc_rdma_conn(rdma), RPCRDMA_CONN_CLOSED, svc->sv_attr.arg);
	if (rdma->sc_calls_held == 0)
		svc_rdma_free(rdma);
}


static void svc_rdma_begin_close(struct svcxprt_rdma *rdma)
{
	/* Nothing may reach the send queue behind the drain's marker. */
	svc_rdma_post_batch(rdma);
	rdma->sc_state = SVCXPRT_CLOSING;
	rpcrdma_sq_flush(&rdma->sc_ep);
	rpcrdma_ep_begin_close(&rdma->sc_ep);
}

static void svc_rdma_process_cm(struct svcxprt_rdma *rdma)
{
	struct rdma_cm_event *ev;

	while (rpcrdma_cm_next_event(rdma->sc_cm_channel, &ev) == 0) {
		switch (ev->event) {
		case RDMA_CM_EVENT_ESTABLISHED:
			if (rdma->sc_state == SVCXPRT_ACCEPTING)
				rdma->sc_state = SVCXPRT_CONNECTED;
			break;
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			break;
		default:
			rpcrdma_info("server: connection %s", rdma_event_str(ev->event));
			rpcrdma_ep_close_deferred(&rdma->sc_ep);
			break;
		}
		rdma_ack_cm_event(ev);
	}
	if (rdma->sc_state == SVCXPRT_CONNECTED && !rdma->sc_announced) {
		rdma->sc_announced = true;
		if (rdma->sc_svc->sv_attr.on_conn)
			rdma->sc_svc->sv_attr.on_conn(svc_rdma_conn(rdma), RPCRDMA_CONN_ESTABLISHED,
						      rdma->sc_svc->sv_attr.arg);
	}
}

/*
 * The work handlers deferred: receives, calls, queued replies, close. May
 * free @rdma: returns false when the connection is over (finalized).
 */
static rpcrdma_always_inline bool svc_rdma_after_batch(struct svcxprt_rdma *rdma)
{
	/* Replenish before dispatching, so replies carry the full grant. */
	if (rdma->sc_state < SVCXPRT_CLOSING && !rdma->sc_ep.close_pending)
		svc_rdma_refill_recvs(rdma);
	/*
	 * The replies of the pass, and the chains that waited for room: one
	 * post. A pass with one call to answer has nothing to batch.
	 */
	rdma->sc_batching = rdma->sc_rq_dto_q.next != rdma->sc_rq_dto_q.prev;
	svc_rdma_recvfrom(rdma);
	svc_rdma_wake_send_waiters(rdma);
	svc_rdma_post_batch(rdma);
	if (rdma->sc_ep.close_pending && rdma->sc_state < SVCXPRT_CLOSING)
		svc_rdma_begin_close(rdma);
	if (rdma->sc_state == SVCXPRT_CLOSING && rpcrdma_ep_drained(&rdma->sc_ep)) {
		svc_rdma_finalize(rdma);
		return false;
	}
	return true;
}

int svc_rdma_conn_poll(struct svcxprt_rdma *rdma, int budget)
{
	int n;

	if (rdma->sc_state == SVCXPRT_CLOSED)
		return 0;
	/* Until connected, every pass looks for ESTABLISHED. */
	if (rdma->sc_state != SVCXPRT_CONNECTED || rpcrdma_ep_cm_due(&rdma->sc_ep))
		svc_rdma_process_cm(rdma);
	n = rpcrdma_ep_poll(&rdma->sc_ep, budget);
	if (unlikely(n < 0)) {
		rpcrdma_ep_close_deferred(&rdma->sc_ep);
		n = 0;
	}
	svc_rdma_after_batch(rdma);
	return n;
}

/*
 * With RPCRDMA_SVC_BUSY_POLL, a connection is armed once it has been found
 * drained for a millisecond: polled, not armed, it costs a CQ poll per pass
 * and its next call no completion event, nor the epoll_wait that hears of
 * that event. The clock is read on one idle visit in RPCRDMA_PACE_POLLS.
 */
#define SVC_RDMA_GRACE_US 1000

static bool svc_rdma_in_grace(struct svcxprt_rdma *rdma)
{
	int64_t now;

	if (++rdma->sc_idle_visits % RPCRDMA_PACE_POLLS)
		return true;
	now = rpcrdma_now_us();
	if (!rdma->sc_grace_end)
		rdma->sc_grace_end = now + SVC_RDMA_GRACE_US;
	return now < rdma->sc_grace_end;
}

static void svc_rdma_grace_end(struct svcxprt_rdma *rdma)
{
	rdma->sc_idle_visits = 0;
	rdma->sc_grace_end = 0;
}

/*
 * Arm @rdma in its visit: what the deferred work posts afterwards completes
 * into an armed CQ (already armed, the arm takes a late event). Returns
 * what the poll after the arm found.
 */
static int svc_rdma_visit_arm(struct svcxprt_rdma *rdma, int budget)
{
	int m = rpcrdma_ep_arm(&rdma->sc_ep, budget);

	if (unlikely(m < 0)) {
		rpcrdma_ep_close_deferred(&rdma->sc_ep);
		m = 0;
	}
	if (m > 0 || rdma->sc_ep.close_pending)
		svc_rdma_mark_ready(rdma);
	return m;
}

/*
 * Early arms. A connection that served a call is visited again on the next
 * pass, and arms there if it finds nothing: right for a client with more
 * calls on the way, a visit (a CQ poll and the deferred work's checks)
 * spent for one whose next call comes later, after other connections'. A
 * connection whose look of the next pass found nothing arms in the visit
 * that serves instead, until a wake-up comes within SVC_RDMA_EARLY_PASSES
 * of such an arm (svc_rdma_woken_early()): then its calls follow each
 * other closely again. Busy-polled connections keep their grace
 * (svc_rdma_in_grace()). A connection whose calls are answered after its
 * visit (libtirpc's dispatch answers after the pass) arms as before, once
 * its replies went out: arming before them would cost them their spared
 * doorbells between processes. Nor does a connection arm early inside
 * rpcrdma_svc_poller_wait() (rpcrdma_svc_wait(), rpcrdma_svc_run()): its
 * passes spin before it sleeps, so the visit saved would cost no time,
 * while a call that comes in the pass after its connection's last still
 * finds it awake there, and costs no event.
 */
static bool svc_rdma_arms_early(const struct svcxprt_rdma *rdma, int n, int budget)
{
	const struct svc_rdma_poller *p = rdma->sc_poller;

	return rdma->sc_arm_early && !rdma->sc_defers && n < budget &&
	       !rdma->sc_ep.close_pending && p && !p->waiting && !svc_rdma_caller_spins(p);
}

int svc_rdma_conn_visit(struct svcxprt_rdma *rdma, int budget)
{
	/* The visit may free the connection: its poller outlives it. */
	struct svc_rdma_poller *p = rdma->sc_poller;
	int n, m = 0;

	if (rdma->sc_state == SVCXPRT_CLOSED)
		return 0;
	rpcrdma_count_inc(rdma->sc_stats->conn_visits);
	/* Until connected, every pass looks for ESTABLISHED. */
	if (rdma->sc_state != SVCXPRT_CONNECTED || rdma->sc_cm_due) {
		rdma->sc_cm_due = false;
		svc_rdma_process_cm(rdma);
	}
	if (!rdma->sc_ep.own_cq) {
		/* Its completions came through the shared CQ (svc_srq.c). */
		svc_rdma_after_batch(rdma);
		return 0;
	}
	n = rpcrdma_ep_poll(&rdma->sc_ep, budget);
	if (unlikely(n < 0)) {
		rpcrdma_ep_close_deferred(&rdma->sc_ep);
		n = 0;
	}
	rdma->sc_armed_early = false;
	if (n > 0 && svc_rdma_arms_early(rdma, n, budget)) {
		/* Served, and its next call is likely to come late: asleep now. */
		svc_rdma_grace_end(rdma);
		rdma->sc_armed_pass = p->passes;
		rdma->sc_armed_early = true;
		m = svc_rdma_visit_arm(rdma, budget);
	} else if (n > 0 || rdma->sc_ep.close_pending) {
		/* Busy: look again next pass; a pass that finds nothing arms. */
		svc_rdma_grace_end(rdma);
		svc_rdma_mark_ready(rdma);
	} else if (p && svc_rdma_caller_spins(p) && svc_rdma_in_grace(rdma)) {
		/* The next call may be a pass or two away: an arm would cost its event. */
		svc_rdma_mark_ready(rdma);
	} else {
		svc_rdma_grace_end(rdma);
		rdma->sc_arm_early = true;
		m = svc_rdma_visit_arm(rdma, budget);
		/* Found nothing, asleep now: the pass listens for the others (svc_poller.c). */
		if (p)
			p->armed++;
	}
	/* Counters are published by the pass (svc_rdma_poller_poll()). */
	if (svc_rdma_after_batch(rdma) && n > 0)
		rdma->sc_defers = rdma->sc_calls_held > 0;
	return n + m;
}

int svc_rdma_conn_arm(struct svcxprt_rdma *rdma)
{
	int n;

	if (rdma->sc_state == SVCXPRT_CLOSED)
		return 0;
	/* About to sleep: what the paced polls skipped must not be left unread. */
	if (rdma->sc_poller)
		rpcrdma_stat_tick(&rdma->sc_poller->stat, true);
	if (rpcrdma_ep_cm_due_arm(&rdma->sc_ep))
		svc_rdma_process_cm(rdma);
	n = rpcrdma_ep_close_due(&rdma->sc_ep) ? 1 : rpcrdma_ep_arm(&rdma->sc_ep, 64);
	if (unlikely(n < 0)) {
		rpcrdma_ep_close_deferred(&rdma->sc_ep);
		n = 1;
	}
	if (n > 0)
		svc_rdma_after_batch(rdma);
	return n;
}

void svc_rdma_conn_collect(struct rpcrdma_svc_conn *conn, bool woke)
{
	struct svcxprt_rdma *rdma = svc_conn_rdma(conn);

	if (rdma->sc_state == SVCXPRT_CLOSED || rdma->sc_epfd < 0 || !rdma->sc_ep.own_cq)
		return;
	/*
	 * Not woken (busy since the last look, no arm between), that look
	 * still holds: what it found ready is still to take, and what came
	 * since keeps the descriptor readable, level-triggered, for the look
	 * after the next sleep. Looking again would cost an epoll_wait() per
	 * call.
	 */
	if (woke)
		rpcrdma_ep_collect(&rdma->sc_ep, rdma->sc_epfd, 0);
}

void svc_rdma_close_now(struct svcxprt_rdma *rdma)
{
	if (rdma->sc_state < SVCXPRT_CLOSING)
		svc_rdma_begin_close(rdma);
}

void svc_rdma_conn_destroy_sync(struct svcxprt_rdma *rdma)
{
	if (rdma->sc_state < SVCXPRT_CLOSING)
		svc_rdma_begin_close(rdma);
	rpcrdma_ep_drain_sync(&rdma->sc_ep, 10000);
	svc_rdma_finalize(rdma);
}

/* The largest message one RDMA operation may carry on @id's port. */
static uint32_t svc_rdma_port_max_msg(struct rdma_cm_id *id)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(id->verbs, id->port_num ? id->port_num : 1, &pa) || pa.max_msg_sz < 4096)
		return 1u << 31;
	return pa.max_msg_sz;
}

static void svc_rdma_accept_params(const struct svcxprt_rdma *rdma, struct ibv_context *verbs,
				   uint8_t initiator_depth, unsigned char *pdata,
				   struct rdma_conn_param *param)
{
	struct ibv_device_attr dev;

	if (ibv_query_device(verbs, &dev))
		memset(&dev, 0, sizeof(dev));
	/* The server sends flags 0: it never receives Send With Invalidate. */
	rpcrdma_cm_private_build(pdata, rdma->sc_svc->sv_attr.inline_size, 0);
	memset(param, 0, sizeof(*param));
	param->private_data = pdata;
	param->private_data_len = RPCRDMA_CM_PRIVATE_LEN;
	param->responder_resources = 0;
	param->initiator_depth = (uint8_t)(initiator_depth < dev.max_qp_init_rd_atom ?
					   initiator_depth : dev.max_qp_init_rd_atom);
	param->flow_control = 1;
	param->retry_count = 6;
	param->rnr_retry_count = 0;
}

/* The connection's state before any verbs resource: lists, counters, addresses. */
static struct svcxprt_rdma *svc_rdma_conn_new(struct svc_rdma_poller *p,
					      const struct svc_rdma_conn_req *req)
{
	struct rpcrdma_svc *svc = p->svc;
	struct svcxprt_rdma *rdma = calloc(1, sizeof(*rdma));
	socklen_t len;

	if (!rdma)
		return NULL;
	rdma->sc_svc = svc;
	rdma->sc_workers = svc->sv_attr.flags & RPCRDMA_SVC_WORKERS;
	rdma->sc_poller = p;
	rdma->sc_stats = &p->stats;
	rpcrdma_count_add(rdma->sc_stats->heap_bytes, sizeof(*rdma));
	rdma->sc_heap = sizeof(*rdma);
	rdma->sc_cm_id = req->id;
	rdma->sc_epfd = -1;
	rdma->sc_max_requests = svc->sv_attr.max_requests;
	rdma->sc_buf_size = svc->sv_attr.inline_size;
	list_init(&rdma->sc_node);
	list_init(&rdma->sc_ready_node);
	list_init(&rdma->sc_recv_free);
	list_init(&rdma->sc_rq_dto_q);
	list_init(&rdma->sc_read_complete_q);
	list_init(&rdma->sc_orphans);
	list_init(&rdma->sc_batch);
	list_init(&rdma->sc_held);
	rpcrdma_cm_negotiate(req->pdata, req->pdata_len, svc->sv_attr.inline_size, &rdma->sc_inline);
	/* The client's receive size bounds our replies; ours bounds its calls. */
	rdma->sc_inline.recv_max = svc->sv_attr.inline_size;
	len = rpcrdma_sockaddr_len(rdma_get_local_addr(req->id));
	if (len)
		memcpy(&rdma->sc_local, rdma_get_local_addr(req->id), len);
	len = rpcrdma_sockaddr_len(rdma_get_peer_addr(req->id));
	if (len)
		memcpy(&rdma->sc_peer, rdma_get_peer_addr(req->id), len);
	return rdma;
}

/* Its own CM channel, so it can be polled alone; its QP, CQ or shared ones; receives. */
static int svc_rdma_conn_verbs(struct svc_rdma_poller *p, struct svcxprt_rdma *rdma,
			       struct rdma_cm_id *id)
{
	struct rpcrdma_svc *svc = p->svc;
	struct epoll_event epev = { .events = EPOLLIN };
	struct rpcrdma_ep_attr attr = { 0 };
	struct svc_rdma_srq *sh = NULL;
	int rc;

	rc = rpcrdma_cm_channel_create(&rdma->sc_cm_channel);
	if (rc)
		return rc;
	if (rdma_migrate_id(id, rdma->sc_cm_channel))
		return rpcrdma_errno(-EIO);
	rdma->sc_pd = svc_rdma_get_pd(svc, id->verbs);
	if (!rdma->sc_pd)
		return -ENOMEM;
	rdma->sc_iwarp = id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
	rdma->sc_max_msg = svc_rdma_port_max_msg(id);
	if (svc->sv_attr.flags & RPCRDMA_SVC_SRQ) {
		sh = svc_rdma_srq_get(p, id->verbs);
		if (!sh)
			return -EOPNOTSUPP;
	}
	/* Room for replies, Read waves and the Writes of the largest reply. */
	rdma->sc_sq_depth = rdma->sc_max_requests + SVC_RDMA_SEND_EXTRA + SVC_RDMA_SQ_EXTRA;
	attr.pd = rdma->sc_pd;
	attr.context = rdma;
	attr.send_wrs = rdma->sc_sq_depth;
	attr.recv_wrs = rdma->sc_max_requests + SVC_RDMA_RECV_BATCH - 1;
	attr.send_sges = 1;
	if (sh) {
		rc = svc_rdma_srq_join(sh, rdma, &attr);
		if (rc)
			return rc;
	}
	rc = svc_rdma_buffers(rdma, rdma->sc_pd, svc->sv_attr.inline_size);
	if (rc)
		return rc;
	rc = rpcrdma_ep_create(&rdma->sc_ep, id, &attr, rdma->sc_stats);
	if (rc)
		return rc;
	if (sh)
		svc_rdma_srq_attach(rdma);
	/* A device with smaller queues: grant no more than can be posted. */
	rdma->sc_sq_depth = rpcrdma_sq_reserve_unsignaled(&rdma->sc_ep, SVC_RDMA_UNSIG_MAX);
	rdma->sc_unsig_cqe.done = svc_rdma_wc_send_unsignaled;
	if (!sh && rdma->sc_max_requests > rdma->sc_ep.rq_depth)
		rdma->sc_max_requests = rdma->sc_ep.rq_depth;
	rdma->sc_recv_target = rdma->sc_max_requests + SVC_RDMA_RECV_BATCH - 1;
	if (!sh && rdma->sc_recv_target > rdma->sc_ep.rq_depth)
		rdma->sc_recv_target = rdma->sc_ep.rq_depth;
	/* Receives are posted before accepting: the first call always finds one. */
	svc_rdma_refill_recvs(rdma);
	if (rdma->sc_ep.close_pending)
		return -ENOMEM;
	rdma->sc_epfd = epoll_create1(EPOLL_CLOEXEC);
	epev.data.u32 = RPCRDMA_READY_CM;
	if (rdma->sc_epfd < 0 ||
	    epoll_ctl(rdma->sc_epfd, EPOLL_CTL_ADD, rdma->sc_cm_channel->fd, &epev))
		return -errno;
	epev.data.u32 = RPCRDMA_READY_COMP;
	if (rdma->sc_ep.channel &&
	    epoll_ctl(rdma->sc_epfd, EPOLL_CTL_ADD, rdma->sc_ep.channel->fd, &epev))
		return -errno;
	epev.data.ptr = rdma;
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, rdma->sc_epfd, &epev))
		return -errno;
	/*
	 * The CM channel again, on its own: the poller's wait tells a CM event
	 * from a completion, so a visit reads the channel (a system call) only
	 * when it holds something.
	 */
	epev.data.ptr = svc_rdma_cm_tag(rdma);
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, rdma->sc_cm_channel->fd, &epev))
		return -errno;
	return 0;
}

int svc_rdma_accept(struct svc_rdma_poller *p, const struct svc_rdma_conn_req *req)
{
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN];
	struct rpcrdma_svc *svc = p->svc;
	struct rdma_conn_param param;
	struct svcxprt_rdma *rdma;
	int rc;

	rdma = svc_rdma_conn_new(p, req);
	if (!rdma) {
		rc = -ENOMEM;
		rdma_reject(req->id, NULL, 0);
		rdma_destroy_id(req->id);
		goto out_count;
	}
	rc = svc_rdma_conn_verbs(p, rdma, req->id);
	if (rc)
		goto out_reject;
	svc_rdma_accept_params(rdma, req->id->verbs, req->initiator_depth, pdata, &param);
	rdma->sc_ord = param.initiator_depth;
	/* Idle from its accept, before the client can know of it, until its first call. */
	rpcrdma_ka_start(&rdma->sc_ep.ka, rpcrdma_now_ms());
	if (rdma_accept(req->id, &param)) {
		rc = rpcrdma_errno(-ECONNABORTED);
		goto out_reject;
	}
	/* The QP is ready to send now; ESTABLISHED only confirms it. */
	rdma->sc_ep.state = RPCRDMA_EP_CONNECTED;
	rdma->sc_state = SVCXPRT_ACCEPTING;
	rpcrdma_count_inc(rdma->sc_stats->connects);
	list_add_tail(&rdma->sc_node, &p->conns);
	p->nconns++;
	if (svc->sv_attr.on_conn)
		svc->sv_attr.on_conn(svc_rdma_conn(rdma), RPCRDMA_CONN_ACCEPTED, svc->sv_attr.arg);
	svc_rdma_mark_ready(rdma);	/* its first visit arms it */
	return 0;

out_reject:
	rdma_reject(req->id, NULL, 0);
	if (rdma->sc_ep.qp)
		rpcrdma_ep_drain_sync(&rdma->sc_ep, 5000);
	svc_rdma_release_verbs(rdma);
	svc_rdma_free(rdma);
out_count:
	/* Counted against max_connections when it was queued. */
	atomic_fetch_sub(&svc->sv_nconns, 1);
	rpcrdma_count_inc(p->stats.conn_rejects);
	rpcrdma_warn("server: a connection request was refused: %s", strerror(-rc));
	return rc;
}

/* With the SRQ a connection's completions are its poller's to take. */
static bool svc_rdma_conn_alone(const struct svcxprt_rdma *rdma)
{
	return !(rdma->sc_svc && (rdma->sc_svc->sv_attr.flags & RPCRDMA_SVC_SRQ));
}

RPCRDMA_EXPORT int rpcrdma_svc_conn_fd(const struct rpcrdma_svc_conn *conn)
{
	const struct svcxprt_rdma *rdma = (const struct svcxprt_rdma *)conn;

	if (!conn)
		return -EINVAL;
	return svc_rdma_conn_alone(rdma) ? rdma->sc_epfd : -EOPNOTSUPP;
}

RPCRDMA_EXPORT int rpcrdma_svc_conn_poll(struct rpcrdma_svc_conn *conn, int budget)
{
	if (!conn || budget <= 0)
		return -EINVAL;
	if (!svc_rdma_conn_alone(svc_conn_rdma(conn)))
		return -EOPNOTSUPP;
	if (svc_conn_rdma(conn)->sc_poller)
		svc_rdma_note_poller(svc_conn_rdma(conn)->sc_poller);
	return svc_rdma_conn_poll(svc_conn_rdma(conn), budget);
}

RPCRDMA_EXPORT int rpcrdma_svc_conn_arm(struct rpcrdma_svc_conn *conn)
{
	if (!conn)
		return -EINVAL;
	if (!svc_rdma_conn_alone(svc_conn_rdma(conn)))
		return -EOPNOTSUPP;
	return svc_rdma_conn_arm(svc_conn_rdma(conn));
}

RPCRDMA_EXPORT void rpcrdma_svc_conn_set_ctx(struct rpcrdma_svc_conn *conn, void *ctx)
{
	if (conn)
		svc_conn_rdma(conn)->sc_app_ctx = ctx;
}

RPCRDMA_EXPORT void *rpcrdma_svc_conn_get_ctx(const struct rpcrdma_svc_conn *conn)
{
	return conn ? ((const struct svcxprt_rdma *)conn)->sc_app_ctx : NULL;
}

RPCRDMA_EXPORT int rpcrdma_svc_conn_addrs(const struct rpcrdma_svc_conn *conn,
					  struct sockaddr *local, struct sockaddr *peer)
{
	const struct svcxprt_rdma *rdma = (const struct svcxprt_rdma *)conn;

	if (!conn)
		return -EINVAL;
	if (local)
		memcpy(local, &rdma->sc_local, sizeof(struct sockaddr_in6));
	if (peer)
		memcpy(peer, &rdma->sc_peer, sizeof(struct sockaddr_in6));
	return 0;
}

RPCRDMA_EXPORT int rpcrdma_svc_conn_close(struct rpcrdma_svc_conn *conn)
{
	if (!conn)
		return -EINVAL;
	rpcrdma_ep_close_deferred(&svc_conn_rdma(conn)->sc_ep);
	svc_rdma_mark_ready(svc_conn_rdma(conn));
	return 0;
}

RPCRDMA_EXPORT uint32_t rpcrdma_svc_call_xid(const struct rpcrdma_svc_call *call)
{
	return call ? call->xid : 0;
}

RPCRDMA_EXPORT const void *rpcrdma_svc_call_msg(const struct rpcrdma_svc_call *call, size_t *len)
{
	if (!call)
		return NULL;
	if (len)
		*len = call->msg_len;
	return call->msg;
}

RPCRDMA_EXPORT struct rpcrdma_svc_conn *rpcrdma_svc_call_conn(const struct rpcrdma_svc_call *call)
{
	if (!call || call->rdma->sc_state == SVCXPRT_CLOSED)
		return NULL;
	return svc_rdma_conn(call->rdma);
}

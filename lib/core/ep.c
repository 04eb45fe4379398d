/* SPDX-License-Identifier: MIT */
/*
 * Endpoint: creation of one connection's completion channel, CQ and QP; the
 * arm-and-poll-again loop; deferred close and the drain that lets teardown
 * free memory only after every posted work request has completed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ep.h"
#include "stat.h"

/* Channel events acknowledged together: ibv_ack_cq_events takes a lock. */
#define RPCRDMA_ACK_BATCH 16

/* rdma-core returns positive errnos from post and -1 + errno from others. */
static int rpcrdma_verbs_err(int rc)
{
	if (rc > 0)
		return -rc;
	return rpcrdma_errno(-EIO);
}

static void rpcrdma_wc_drain_send(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct rpcrdma_ep *ep = container_of(rpcrdma_wc_cqe(wc), struct rpcrdma_ep, drain_send_cqe);

	if (ep->srq)
		ep->sq_drained = true;	/* and the Last WQE Reached event */
	else
		ep->state = RPCRDMA_EP_DRAINED;
}

/*
 * The receive queue is empty: every receive completed or flushed. Handlers
 * that ran for those receives may have posted sends, so only now is the
 * send-queue marker posted behind them (the kernel drains RQ, then SQ, for
 * the same reason).
 */
static void rpcrdma_ep_post_send_marker(struct rpcrdma_ep *ep)
{
	struct ibv_send_wr wr = {
		.wr_id = rpcrdma_cqe_id(&ep->drain_send_cqe),
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;
	int rc;

	rc = ibv_post_send(ep->qp, &wr, &bad);
	if (rc) {
		rpcrdma_err("drain: cannot post the send-queue marker: %s",
			    strerror(-rpcrdma_verbs_err(rc)));
		ep->state = RPCRDMA_EP_DRAINED;
	}
}

static void rpcrdma_wc_drain_recv(struct ibv_cq *cq, struct ibv_wc *wc)
{
	rpcrdma_ep_post_send_marker(container_of(rpcrdma_wc_cqe(wc), struct rpcrdma_ep,
						 drain_recv_cqe));
}

/* Fit the queue depths to what the device offers; the owner reads them back from @ep. */
static void rpcrdma_ep_fit(struct ibv_context *verbs, uint32_t *send_wrs, uint32_t *recv_wrs)
{
	struct ibv_device_attr dev;
	uint32_t max_wr, max_cqe;

	if (ibv_query_device(verbs, &dev) || dev.max_qp_wr < 2 || dev.max_cqe < 4)
		return;
	/* One slot on each queue is the drain marker's; the CQ holds both queues. */
	max_wr = (uint32_t)dev.max_qp_wr - 1;
	if (*send_wrs > max_wr)
		*send_wrs = max_wr;
	if (*recv_wrs > max_wr)
		*recv_wrs = max_wr;
	max_cqe = (uint32_t)dev.max_cqe - 2;
	if (*send_wrs + *recv_wrs > max_cqe) {
		*recv_wrs = *recv_wrs < max_cqe / 2 ? *recv_wrs : max_cqe / 2;
		*send_wrs = max_cqe - *recv_wrs;
	}
}

/*
 * Inline data asked of a QP, most first: the device does not report its
 * limit, providers refuse too much at creation (mlx5: EINVAL) or write
 * back what they grant (rxe gives at least 16 bytes per send SGE).
 */
static const uint32_t rpcrdma_inline_tries[] = { 256, 64, 0 };

static int rpcrdma_ep_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
				struct ibv_qp_init_attr *qpa)
{
	size_t i;

	for (i = 0; i < sizeof(rpcrdma_inline_tries) / sizeof(rpcrdma_inline_tries[0]); i++) {
		qpa->cap.max_inline_data = rpcrdma_inline_tries[i];
		if (rdma_create_qp(id, pd, qpa) == 0)
			return 0;
		if (errno != EINVAL && errno != ENOMEM)
			break;
	}
	return rpcrdma_verbs_err(-1);
}

int rpcrdma_ep_create(struct rpcrdma_ep *ep, struct rdma_cm_id *id,
		      const struct rpcrdma_ep_attr *attr, struct rpcrdma_stats *stats)
{
	uint32_t send_wrs = attr->send_wrs, recv_wrs = attr->recv_wrs;
	struct ibv_qp_init_attr qpa;
	int flags, rc;

	memset(ep, 0, sizeof(*ep));
	ep->id = id;
	ep->stats = stats;
	list_init(&ep->sq_waiters);
	ep->drain_recv_cqe.done = rpcrdma_wc_drain_recv;
	ep->drain_send_cqe.done = rpcrdma_wc_drain_send;
	rpcrdma_ep_fit(id->verbs, &send_wrs, &recv_wrs);
	ep->srq = attr->srq;
	if (attr->srq)
		recv_wrs = 0;
	if (attr->cq) {
		ep->cq = attr->cq;
		goto create_qp;
	}
	ep->own_cq = true;
	ep->channel = ibv_create_comp_channel(id->verbs);
	if (!ep->channel)
		return rpcrdma_verbs_err(-1);
	flags = fcntl(ep->channel->fd, F_GETFL);
	if (flags < 0 || fcntl(ep->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		rc = -errno;
		goto out_channel;
	}

	/* Room for every send and receive plus the two drain markers. */
	ep->cq = ibv_create_cq(id->verbs, (int)(send_wrs + recv_wrs + 2),
			       attr->context, ep->channel, 0);
	if (!ep->cq) {
		rc = rpcrdma_verbs_err(-1);
		goto out_channel;
	}

create_qp:
	memset(&qpa, 0, sizeof(qpa));
	qpa.qp_context = ep;
	qpa.send_cq = ep->cq;
	qpa.recv_cq = ep->cq;
	qpa.qp_type = IBV_QPT_RC;
	qpa.sq_sig_all = 0;
	qpa.cap.max_send_wr = send_wrs + 1;
	qpa.srq = attr->srq;
	qpa.cap.max_recv_wr = attr->srq ? 0 : recv_wrs + 1;
	qpa.cap.max_send_sge = attr->send_sges;
	qpa.cap.max_recv_sge = attr->srq ? 0 : 1;
	rc = rpcrdma_ep_create_qp(id, attr->pd, &qpa);
	if (rc)
		goto out_cq;
	ep->qp = id->qp;
	ep->max_inline = qpa.cap.max_inline_data;
	ep->sq_avail = send_wrs;
	ep->rq_depth = recv_wrs;
	rpcrdma_async_register(ep);

	return 0;

out_cq:
	if (ep->own_cq)
		ibv_destroy_cq(ep->cq);
	ep->cq = NULL;
out_channel:
	if (ep->channel)
		ibv_destroy_comp_channel(ep->channel);
	ep->channel = NULL;
	return rc;
}

void rpcrdma_ep_wc_error(struct rpcrdma_ep *ep, const struct ibv_wc *wc, const char *what)
{
	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		rpcrdma_count_inc(ep->stats->flushes);
	} else {
		rpcrdma_count_inc(ep->stats->wc_errors);
		rpcrdma_err("%s: %s (vendor error 0x%x)", what, ibv_wc_status_str(wc->status),
			    wc->vendor_err);
	}
	ep->close_pending = true;
}

void rpcrdma_ep_begin_close(struct rpcrdma_ep *ep)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_recv_wr wr = { .wr_id = rpcrdma_cqe_id(&ep->drain_recv_cqe) };
	struct ibv_recv_wr *bad;
	int rc;

	ep->close_pending = true;
	if (ep->state == RPCRDMA_EP_CLOSING || ep->state == RPCRDMA_EP_DRAINED)
		return;
	if (ep->state == RPCRDMA_EP_CONNECTED)
		rdma_disconnect(ep->id);
	ep->state = RPCRDMA_EP_CLOSING;
	if (!ep->qp) {
		ep->state = RPCRDMA_EP_DRAINED;
		return;
	}
	/* ERR flushes every outstanding WR, on either queue, in order. */
	rc = ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE);
	if (rc)
		rpcrdma_warn("drain: moving the QP to ERR failed: %s",
			     strerror(-rpcrdma_verbs_err(rc)));
	if (ep->srq) {
		rpcrdma_ep_post_send_marker(ep);
		return;
	}
	rc = ibv_post_recv(ep->qp, &wr, &bad);
	if (rc) {
		rpcrdma_err("drain: cannot post the receive-queue marker: %s",
			    strerror(-rpcrdma_verbs_err(rc)));
		ep->state = RPCRDMA_EP_DRAINED;
	}
}

/* Take one event off the channel, acknowledging in batches: false if there was none. */
static rpcrdma_always_inline bool rpcrdma_ep_take_event(struct rpcrdma_ep *ep)
{
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(ep->channel, &cq, &ctx))
		return false;
	if (++ep->cq_events >= RPCRDMA_ACK_BATCH) {
		ibv_ack_cq_events(ep->cq, ep->cq_events);
		ep->cq_events = 0;
	}
	return true;
}

/* Every event there is, until the channel is empty. */
static __attribute__((noinline)) unsigned int rpcrdma_ep_take_all(struct rpcrdma_ep *ep)
{
	unsigned int n = 0;

	while (rpcrdma_ep_take_event(ep))
		n++;
	return n;
}

/*
 * Take the channel's events: with a wait's readiness, the one it found
 * (level-triggered, so any other shows at the next wait); without, every
 * event there is. Inline: each wake-up's arm takes its one event here.
 */
static rpcrdma_always_inline unsigned int rpcrdma_ep_take_events(struct rpcrdma_ep *ep,
								 unsigned int ready)
{
	if (ready & RPCRDMA_READY_KNOWN)
		return (ready & RPCRDMA_READY_COMP) && rpcrdma_ep_take_event(ep);
	return rpcrdma_ep_take_all(ep);
}

int rpcrdma_ep_collect(struct rpcrdma_ep *ep, int epfd, int timeout_ms)
{
	struct epoll_event evs[8];
	unsigned int tags = 0;
	int n, i;

	n = epoll_wait(epfd, evs, 8, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (i = 0; i < n; i++)
		tags |= evs[i].data.u32;
	if (ep)
		ep->ready = tags | RPCRDMA_READY_KNOWN;
	return (int)tags;
}

bool rpcrdma_ep_cm_due_arm(struct rpcrdma_ep *ep)
{
	if (ep->ready & RPCRDMA_READY_CM) {
		ep->ready &= ~RPCRDMA_READY_CM;
		return true;
	}
	return !(ep->ready & RPCRDMA_READY_KNOWN);
}

/* And every this many arms whose wait knew nothing of them. */
#define RPCRDMA_ASYNC_PACE_ARMS 16

int rpcrdma_ep_arm(struct rpcrdma_ep *ep, int budget)
{
	unsigned int ready = ep->ready;
	int n;

	/* A wait's readiness serves one arm: the next one reads everything. */
	ep->ready = 0;
	if (ep->armed) {
		/*
		 * Woken, yet the last poll found nothing: an event came, either
		 * for a completion that landed since (poll again) or late, after
		 * its completion was polled. Left unread, it would keep the channel
		 * readable and every sleep short. Either way arm again.
		 */
		if (!rpcrdma_ep_take_events(ep, ready))
			return 0;
		ep->armed = false;
		ready = 0;
	}
	/* Not every owner's wait set holds the async fd: look there now and then. */
	if (!(ready & RPCRDMA_READY_KNOWN) || (ready & RPCRDMA_READY_ASYNC) ||
	    ++ep->async_arms % RPCRDMA_ASYNC_PACE_ARMS == 0)
		rpcrdma_async_poll(ep->id->verbs);
	if (atomic_load(&ep->async_error) && !ep->close_pending) {
		ep->close_pending = true;
		return 1;
	}
	rpcrdma_ep_take_events(ep, ready);
	if (ibv_req_notify_cq(ep->cq, 0))
		return -EIO;
	ep->armed = true;
	n = rpcrdma_cq_poll(ep->cq, budget);
	if (n > 0)
		ep->armed = false;
	return n;
}

int rpcrdma_ep_drain_sync(struct rpcrdma_ep *ep, int timeout_ms)
{
	int64_t deadline = rpcrdma_now_ms() + timeout_ms;

	rpcrdma_ep_begin_close(ep);
	while (!rpcrdma_ep_drained(ep)) {
		struct pollfd pfd = { .fd = ep->channel ? ep->channel->fd : -1, .events = POLLIN };
		int64_t left;
		int n;

		n = rpcrdma_ep_poll(ep, 64);
		if (!ep->own_cq) {
			/* A shared CQ is its owner's to arm: look again shortly. */
			rpcrdma_async_poll(ep->id->verbs);
			n = 0;
		} else if (n == 0 && !rpcrdma_ep_drained(ep)) {
			n = rpcrdma_ep_arm(ep, 64);
		}
		if (n > 0 || rpcrdma_ep_drained(ep))
			continue;
		left = deadline - rpcrdma_now_ms();
		if (left <= 0) {
			rpcrdma_err("drain: timed out waiting for flush completions");
			return -ETIMEDOUT;
		}
		poll(&pfd, 1, !ep->own_cq ? 1 : left < 100 ? (int)left : 100);
	}
	return 0;
}

void rpcrdma_ep_destroy(struct rpcrdma_ep *ep)
{
	if (ep->qp) {
		rpcrdma_async_unregister(ep);
		rdma_destroy_qp(ep->id);
		ep->qp = NULL;
	}
	if (ep->cq && !ep->own_cq)
		ep->cq = NULL;
	if (ep->cq) {
		if (ep->channel)
			rpcrdma_ep_take_events(ep, 0);
		if (ep->cq_events)
			ibv_ack_cq_events(ep->cq, ep->cq_events);
		ep->cq_events = 0;
		ibv_destroy_cq(ep->cq);
		ep->cq = NULL;
	}
	if (ep->channel) {
		ibv_destroy_comp_channel(ep->channel);
		ep->channel = NULL;
	}
}

static struct ibv_recv_wr *rpcrdma_recv_wr_of(struct list_node *node, ptrdiff_t wr_off)
{
	return (struct ibv_recv_wr *)(void *)((char *)node + wr_off);
}

void rpcrdma_recv_chain(struct rpcrdma_recv_chain *c, struct list_node *free, uint32_t max,
			ptrdiff_t wr_off)
{
	struct ibv_recv_wr **link = &c->first;
	struct list_node *pos = free->next;
	uint32_t n = 0;

	for (; pos != free && n < max; pos = pos->next, n++) {
		*link = rpcrdma_recv_wr_of(pos, wr_off);
		link = &(*link)->next;
	}
	*link = NULL;
	c->rest = pos;
	c->count = n;
}

uint32_t rpcrdma_recv_chain_posted(struct list_node *free, const struct rpcrdma_recv_chain *c,
				   struct ibv_recv_wr *bad)
{
	struct ibv_recv_wr *wr;
	uint32_t posted = 0, n;

	if (!bad) {
		free->next = c->rest;
		c->rest->prev = free;
		return c->count;
	}
	for (wr = c->first; wr && wr != bad; wr = wr->next)
		posted++;
	/* The posted ones lead the list, in chain order. */
	for (n = posted; n; n--)
		list_del(free->next);
	return posted;
}

int rpcrdma_ep_post_recvs(struct rpcrdma_ep *ep, struct list_node *free, uint32_t max,
			  ptrdiff_t wr_off)
{
	struct ibv_recv_wr *bad = NULL;
	struct rpcrdma_recv_chain c;
	int rc;

	rpcrdma_recv_chain(&c, free, max, wr_off);
	if (!c.count)
		return 0;
	rc = ibv_post_recv(ep->qp, c.first, &bad);
	ep->recv_posted += rpcrdma_recv_chain_posted(free, &c, likely(rc == 0) ? NULL : bad);
	if (likely(rc == 0))
		return 0;
	rc = rpcrdma_verbs_err(rc);
	rpcrdma_err("posting receives failed: %s", strerror(-rc));
	rpcrdma_ep_close_deferred(ep);
	return rc;
}

int rpcrdma_ep_post_failed(struct rpcrdma_ep *ep, struct ibv_send_wr *first,
			   struct ibv_send_wr *bad, int rc, uint32_t sqecount, uint32_t *posted)
{
	struct ibv_send_wr *wr;
	uint32_t n = 0;

	rpcrdma_err("post_send failed: %s", strerror(-rpcrdma_verbs_err(rc)));
	ep->close_pending = true;
	for (wr = first; wr && wr != bad; wr = wr->next)
		n++;
	rpcrdma_sq_put(ep, sqecount - n);
	if (n == 0)
		return -ENOTCONN;
	/* The head of the chain is in flight; its flushes are still to come. */
	if (posted)
		*posted = n;
	return -EINPROGRESS;
}

void rpcrdma_sq_post(struct rpcrdma_ep *ep, struct rpcrdma_sq_waiter *w)
{
	if (likely(rpcrdma_sq_get(ep, w->sqecount))) {
		w->post(ep, w);
		return;
	}
	rpcrdma_count_inc(ep->stats->sq_waits);
	list_add_tail(&w->list, &ep->sq_waiters);
}

void rpcrdma_sq_wake_waiters(struct rpcrdma_ep *ep)
{
	while (!list_empty(&ep->sq_waiters) && !ep->close_pending) {
		struct rpcrdma_sq_waiter *w =
			list_first_entry(&ep->sq_waiters, struct rpcrdma_sq_waiter, list);

		if (ep->sq_avail < w->sqecount)
			return;
		list_del(&w->list);
		ep->sq_avail -= w->sqecount;
		w->post(ep, w);
	}
}

void rpcrdma_sq_flush(struct rpcrdma_ep *ep)
{
	struct rpcrdma_sq_waiter *w;

	while ((w = list_pop_entry(&ep->sq_waiters, struct rpcrdma_sq_waiter, list)))
		w->abort(ep, w);
}

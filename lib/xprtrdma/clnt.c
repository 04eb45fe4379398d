/* SPDX-License-Identifier: MIT */
/*
 * The client's public face: creation, submitting calls, progress, timeouts
 * and destruction.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <rpcrdma/clnt.h>

#include "sized.h"
#include "xprt_rdma.h"

#define RPCRDMA_CLNT_DEF_REQUESTS 32
#define RPCRDMA_CLNT_MAX_REQUESTS 1024
#define RPCRDMA_CLNT_DEF_CONNECT_MS 5000
#define RPCRDMA_CLNT_DEF_CALL_MS 30000
#define RPCRDMA_CLNT_DEF_SEGMENT (1u << 20)
/*
 * Send-queue slots: a call's Send with the binds of up to four chunks of
 * 16 segments ahead of it, or a reply's LOCAL_INVs; calls wait when full.
 */
#define RPCRDMA_CLNT_SQ_MIN 256u
/*
 * Receives beyond one per slot: slack for replies racing a reconnect, and
 * the batch they are posted again in (one post per batch).
 */
#define RPCRDMA_CLNT_EXTRA_RECVS 8

static int xprt_rdma_attr_fill(struct rpcrdma_xprt *x, const struct rpcrdma_clnt_attr *in)
{
	struct rpcrdma_clnt_attr *a = &x->rx_attr;
	socklen_t len;
	int rc;

	rc = rpcrdma_sized_in(a, sizeof(*a), in, RPCRDMA_CLNT_ATTR_SIZE_0_2);
	if (rc)
		return rc;
	if (!a->addr)
		return -EINVAL;
	len = rpcrdma_sockaddr_len(a->addr);
	if (!len)
		return -EINVAL;
	memcpy(&x->rx_addr, a->addr, len);
	if (a->src_addr) {
		len = rpcrdma_sockaddr_len(a->src_addr);
		if (!len)
			return -EINVAL;
		memcpy(&x->rx_src, a->src_addr, len);
		x->rx_has_src = true;
	}
	if (!a->max_requests)
		a->max_requests = RPCRDMA_CLNT_DEF_REQUESTS;
	if (!a->inline_size)
		a->inline_size = RPCRDMA_DEF_INLINE;
	if (!a->connect_timeout_ms)
		a->connect_timeout_ms = RPCRDMA_CLNT_DEF_CONNECT_MS;
	if (!a->call_timeout_ms)
		a->call_timeout_ms = RPCRDMA_CLNT_DEF_CALL_MS;
	if (!a->max_segment)
		a->max_segment = RPCRDMA_CLNT_DEF_SEGMENT;
	/* The default, 0, and a negative value are off, as for the server's field. */
	if (a->keepalive_ms < 0)
		a->keepalive_ms = 0;
	if (a->max_requests > RPCRDMA_CLNT_MAX_REQUESTS || a->inline_size < RPCRDMA_MIN_INLINE ||
	    a->inline_size > RPCRDMA_MAX_INLINE || a->connect_timeout_ms < 0 ||
	    a->call_timeout_ms < 0 || a->rnr_retry > 7 || a->max_segment < RPCRDMA_CLNT_MIN_SEGMENT ||
	    (a->keepalive_ms && a->keepalive_ms < RPCRDMA_KA_MIN_MS) ||
	    (a->flags & ~RPCRDMA_CLNT_PERSISTENT_REG))
		return -EINVAL;
	/* RFC 8797 expresses sizes in whole KiB. */
	a->inline_size &= ~(uint32_t)1023;
	a->src_addr = NULL;
	a->addr = NULL;
	return 0;
}

static int xprt_rdma_alloc(struct rpcrdma_xprt *x)
{
	uint32_t i, hash_size = 1;

	x->rx_nreqs = x->rx_attr.max_requests;
	x->rx_nreps = x->rx_nreqs + RPCRDMA_CLNT_EXTRA_RECVS;
	x->rx_sq_depth = 4 * x->rx_nreqs > RPCRDMA_CLNT_SQ_MIN ? 4 * x->rx_nreqs : RPCRDMA_CLNT_SQ_MIN;
	while (hash_size < 2 * x->rx_nreqs)
		hash_size <<= 1;
	x->rx_hash_mask = hash_size - 1;
	rpcrdma_marshal_prefix(x);

	x->rx_reqs = rpcrdma_zalloc(&x->rx_stats, sizeof(*x->rx_reqs) * x->rx_nreqs);
	x->rx_reps = rpcrdma_zalloc(&x->rx_stats, sizeof(*x->rx_reps) * x->rx_nreps);
	x->rx_hash = rpcrdma_zalloc(&x->rx_stats, sizeof(*x->rx_hash) * hash_size);
	if (!x->rx_reqs || !x->rx_reps || !x->rx_hash)
		return -ENOMEM;

	x->rx_unsig_cqe.done = xprt_rdma_wc_send_unsignaled;
	for (i = 0; i < x->rx_nreqs; i++) {
		struct rpcrdma_req *req = &x->rx_reqs[i];

		req->rl_cqe.done = rpcrdma_wc_send;
		rpcrdma_send_wr_init(&req->rl_send_wr, &req->rl_cqe, &req->rl_sge);
		list_init(&req->rl_registered);
		list_init(&req->rl_list);
	}
	/* Slot 0 on top, so that a client's first calls use the first slots. */
	for (i = x->rx_nreqs; i > 0; i--)
		xprt_rdma_req_put(x, &x->rx_reqs[i - 1]);
	for (i = 0; i < x->rx_nreps; i++) {
		struct rpcrdma_rep *rep = &x->rx_reps[i];

		rep->rr_cqe.done = rpcrdma_wc_receive;
		rep->rr_recv_wr.wr_id = rpcrdma_cqe_id(&rep->rr_cqe);
		rep->rr_recv_wr.sg_list = &rep->rr_sge;
		rep->rr_recv_wr.num_sge = 1;
		list_add_tail(&rep->rr_list, &x->rb_reps_free);
	}
	return 0;
}

static void xprt_rdma_free(struct rpcrdma_xprt *x)
{
	rpcrdma_stat_del(&x->rx_stat);
	xprt_rdma_free_buffers(x);
	rpcrdma_free(&x->rx_stats, x->rx_hash, sizeof(*x->rx_hash) * (x->rx_hash_mask + 1));
	rpcrdma_free(&x->rx_stats, x->rx_reps, sizeof(*x->rx_reps) * x->rx_nreps);
	rpcrdma_free(&x->rx_stats, x->rx_reqs, sizeof(*x->rx_reqs) * x->rx_nreqs);
	if (x->rx_cm_channel)
		rdma_destroy_event_channel(x->rx_cm_channel);
	if (x->rx_epfd >= 0)
		close(x->rx_epfd);
	if (x->rx_ka_fd >= 0)
		close(x->rx_ka_fd);
	free(x);
}

RPCRDMA_EXPORT int rpcrdma_clnt_connect(const struct rpcrdma_clnt_attr *attr,
					struct rpcrdma_clnt **out)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = RPCRDMA_READY_CM };
	struct rpcrdma_xprt *x;
	int rc;

	if (!attr || !out)
		return -EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->rx_stats.heap_bytes = sizeof(*x);
	x->rx_epfd = -1;
	x->rx_ka_fd = -1;
	x->rx_next_deadline = INT64_MAX;
	rpcrdma_spin_set(&x->rx_spin, rpcrdma_spin_default(RPCRDMA_SPIN_AUTO));
	list_init(&x->rb_pending);
	list_init(&x->rb_inflight);
	list_init(&x->rb_done);
	list_init(&x->rx_mems);
	list_init(&x->rx_mws_free);
	list_init(&x->rb_reps_free);
	list_init(&x->rb_reps_ready);

	rc = xprt_rdma_attr_fill(x, attr);
	if (rc)
		goto out;
	rc = xprt_rdma_alloc(x);
	if (rc)
		goto out;
	rc = rpcrdma_cm_channel_create(&x->rx_cm_channel);
	if (rc)
		goto out;
	x->rx_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (x->rx_epfd < 0 || epoll_ctl(x->rx_epfd, EPOLL_CTL_ADD, x->rx_cm_channel->fd, &ev)) {
		rc = -errno;
		goto out;
	}
	rc = xprt_rdma_keepalive_init(x);
	if (rc)
		goto out;
	rc = xprt_rdma_connect(x, INT64_MAX);
	if (rc)
		goto out;
	rpcrdma_stat_add_addr(&x->rx_stat, "client", (const struct sockaddr *)&x->rx_addr, -1,
			      &x->rx_stats, NULL);
	*out = (struct rpcrdma_clnt *)x;
	return 0;
out:
	xprt_rdma_free(x);
	return rc;
}

static int xprt_rdma_call_timeout(const struct rpcrdma_xprt *x, const struct rpcrdma_call *call)
{
	return call->timeout_ms ? call->timeout_ms : x->rx_attr.call_timeout_ms;
}

/* The earliest deadline of the calls waiting to be sent: a reconnection ends by then. */
static int64_t xprt_rdma_pending_deadline(const struct rpcrdma_xprt *x)
{
	const struct list_node *pos;
	int64_t first = INT64_MAX;

	list_for_each(pos, &x->rb_pending) {
		const struct rpcrdma_req *req = list_entry(pos, struct rpcrdma_req, rl_list);

		if (req->rl_deadline < first)
			first = req->rl_deadline;
	}
	return first;
}

/* Mark overdue calls. One in flight closes the connection: RDMA has no keepalive. */
static void xprt_rdma_check_timeouts(struct rpcrdma_xprt *x)
{
	int64_t now = rpcrdma_now_ms(), next = INT64_MAX;
	struct list_node *pos, *tmp;
	bool close = false;

	if (now < x->rx_next_deadline)
		return;
	list_for_each(pos, &x->rb_inflight) {
		struct rpcrdma_req *req = list_entry(pos, struct rpcrdma_req, rl_list);

		if (req->rl_flags & RPCRDMA_REQ_TIMEDOUT)
			continue;
		if (req->rl_deadline <= now) {
			req->rl_flags |= RPCRDMA_REQ_TIMEDOUT;
			rpcrdma_count_inc(x->rx_stats.timeouts);
			close = true;
		} else if (req->rl_deadline < next) {
			next = req->rl_deadline;
		}
	}
	list_for_each_safe(pos, tmp, &x->rb_pending) {
		struct rpcrdma_req *req = list_entry(pos, struct rpcrdma_req, rl_list);

		if (req->rl_deadline <= now) {
			list_del(&req->rl_list);
			rpcrdma_count_inc(x->rx_stats.timeouts);
			xprt_rdma_finish(x, req, -ETIMEDOUT);
		} else if (req->rl_deadline < next) {
			next = req->rl_deadline;
		}
	}
	x->rx_next_deadline = next;
	if (close && x->rx_have_ep) {
		rpcrdma_warn("client: a call timed out; closing the connection");
		rpcrdma_ep_close_deferred(&x->rx_ep);
	}
}

/* Fail every queued call with @status. */
static void xprt_rdma_fail_pending(struct rpcrdma_xprt *x, int status)
{
	struct rpcrdma_req *req;

	while ((req = list_pop_entry(&x->rb_pending, struct rpcrdma_req, rl_list)))
		xprt_rdma_finish(x, req, status);
}

/* xprt_rdma_after_batch() of a client that is not connected, or is to close. */
static void xprt_rdma_after_batch_state(struct rpcrdma_xprt *x)
{
	if (x->rx_have_ep) {
		if (x->rx_ep.close_pending && x->rx_ep.state != RPCRDMA_EP_CLOSING &&
		    x->rx_ep.state != RPCRDMA_EP_DRAINED) {
			x->rx_connected = false;
			rpcrdma_ep_begin_close(&x->rx_ep);
		}
		if (rpcrdma_ep_drained(&x->rx_ep))
			xprt_rdma_conn_lost(x);
	}
	if (!x->rx_have_ep && !x->rx_destroying && !list_empty(&x->rb_pending)) {
		int rc = xprt_rdma_connect(x, xprt_rdma_pending_deadline(x));

		if (rc) {
			rpcrdma_warn("client: reconnecting failed: %s", strerror(-rc));
			xprt_rdma_fail_pending(x, -ENOTCONN);
		}
	}
	xprt_rdma_kick(x);
	xprt_rdma_run_done(x);
}

/*
 * Work after a batch of completions: the steps handlers deferred to us.
 * With @clock, calls past their deadline are expired too.
 */
static rpcrdma_always_inline void xprt_rdma_after_batch(struct rpcrdma_xprt *x, bool clock)
{
	if (x->rx_have_ep)
		xprt_rdma_process_replies(x);
	if (clock)
		xprt_rdma_check_timeouts(x);
	/* Connected, and no close asked for: no state to move, receives to refill. */
	if (likely(x->rx_connected && !x->rx_ep.close_pending)) {
		xprt_rdma_post_reps(x);
		xprt_rdma_kick(x);
		xprt_rdma_run_done(x);
		return;
	}
	xprt_rdma_after_batch_state(x);
}

RPCRDMA_EXPORT int rpcrdma_clnt_poll(struct rpcrdma_clnt *clnt, int budget)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);
	bool tick;
	int n = 0;

	if (!clnt || budget <= 0)
		return -EINVAL;
	XPRT_RDMA_GUARD(x, return -EBUSY);
	/* One count paces the CM channel's reads and the clock's (below). */
	tick = rpcrdma_pace_tick(&x->rx_poll_pace, RPCRDMA_PACE_POLLS);
	if (x->rx_have_ep) {
		if (rpcrdma_ep_cm_due_tick(&x->rx_ep, tick))
			xprt_rdma_process_cm(x);
		n = rpcrdma_ep_poll(&x->rx_ep, budget);
		if (n < 0) {
			rpcrdma_ep_close_deferred(&x->rx_ep);
			n = 0;
		}
	}
	/*
	 * A call times out only while nothing answers it: a poll that finds
	 * nothing reads the clock, and one in 16 of those that find work.
	 */
	xprt_rdma_after_batch(x, n == 0 || tick);
	rpcrdma_stat_tick(&x->rx_stat, false);
	return n;
}

RPCRDMA_EXPORT int rpcrdma_clnt_submit(struct rpcrdma_clnt *clnt, struct rpcrdma_call *call)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);
	struct rpcrdma_req *req;
	int64_t now;
	uint32_t xid;
	int rc;

	if (!clnt || !call)
		return -EINVAL;
	XPRT_RDMA_GUARD(x, return -EBUSY);
	/* The call stays the caller's: the library reads its fields in place. */
	rc = rpcrdma_sized_check(call->struct_size, RPCRDMA_CALL_SIZE_0_2, sizeof(*call));
	if (rc)
		return rc;
	if (!call->msg || call->msg_len < sizeof(xid) || !call->done ||
	    (!call->reply && call->reply_max) || call->timeout_ms < 0)
		return -EINVAL;
	if (x->rx_destroying)
		return -ESHUTDOWN;
	rc = rpcrdma_check_call(x, call);
	if (rc)
		return rc;
	memcpy(&xid, call->msg, sizeof(xid));
	xid = ntohl(xid);
	if (xprt_rdma_lookup(x, xid))
		return -EEXIST;
	now = rpcrdma_now_ms();
	if (x->rx_have_ep && now - x->rx_last_submit_ms >= XPRT_RDMA_QUIET_MS)
		xprt_rdma_process_cm(x);
	x->rx_last_submit_ms = now;
	if (!x->rx_have_ep) {
		rc = xprt_rdma_connect(x, now + xprt_rdma_call_timeout(x, call));
		if (rc)
			return rc == -ETIMEDOUT ? -ETIMEDOUT : -ENOTCONN;
	}
	req = xprt_rdma_req_get(x);
	if (!req)
		return -EAGAIN;

	req->rl_xid = xid;
	req->rl_call = call;
	req->rl_flags = 0;
	req->rl_status = 0;
	call->status = 0;
	call->reply_len = 0;
	call->result_len = 0;
	/* Inline messages are copied now; what goes by chunk is exposed now. */
	rc = rpcrdma_marshal_req(x, req, false);
	if (rc) {
		frwr_release(x, req);
		req->rl_call = NULL;
		xprt_rdma_req_put(x, req);
		return rc;
	}
	req->rl_retries = x->rx_attr.retries;
	req->rl_deadline = now + xprt_rdma_call_timeout(x, call);
	if (req->rl_deadline < x->rx_next_deadline)
		x->rx_next_deadline = req->rl_deadline;
	xprt_rdma_hash_add(x, req);
	xprt_rdma_enqueue(x, req);
	return 0;
}

static struct rpcrdma_req *xprt_rdma_find_call(struct rpcrdma_xprt *x,
						const struct rpcrdma_call *call)
{
	uint32_t i;

	for (i = 0; i < x->rx_nreqs; i++)
		if (x->rx_reqs[i].rl_call == call)
			return &x->rx_reqs[i];
	return NULL;
}

/*
 * Invalidate @req's windows, or, when that fails (timed out, or the
 * connection is closing with its QP still able to take the server's
 * Writes), move the QP to ERR now: either way the server reaches none of
 * the call's memory once this returns.
 */
static void xprt_rdma_fence(struct rpcrdma_xprt *x, struct rpcrdma_req *req)
{
	int rc = frwr_unmap_sync(x, req);

	if (!rc || !x->rx_have_ep)
		return;
	rpcrdma_warn("client: cancel: invalidating the call's memory failed (%s); closing the "
		     "connection", strerror(-rc));
	x->rx_connected = false;
	rpcrdma_ep_begin_close(&x->rx_ep);
}

RPCRDMA_EXPORT int rpcrdma_clnt_cancel(struct rpcrdma_clnt *clnt, struct rpcrdma_call *call)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);
	struct rpcrdma_req *req;

	if (!clnt || !call)
		return -EINVAL;
	XPRT_RDMA_GUARD(x, return -EBUSY);
	req = xprt_rdma_find_call(x, call);
	if (!req || (req->rl_flags & RPCRDMA_REQ_CANCELED))
		return -ENOENT;
	if (req->rl_flags & RPCRDMA_REQ_REPLIED || !(req->rl_flags & RPCRDMA_REQ_SENT)) {
		/*
		 * Answered already (it completes as it is), or never sent (on the
		 * pending queue, or waiting for a connection): nothing to fence.
		 */
		if (!(req->rl_flags & RPCRDMA_REQ_REPLIED))
			xprt_rdma_finish(x, req, -ECANCELED);
		while (req->rl_call == call)
			if (rpcrdma_clnt_poll(clnt, 16) <= 0)
				xprt_rdma_run_done(x);
		return 0;
	}
	/*
	 * In flight: fence its memory first (frwr_unmap_sync), then let the
	 * caller have it back. The slot stays taken, and counts against the
	 * grant, until the server's reply or the connection's end.
	 */
	xprt_rdma_fence(x, req);
	req->rl_status = -ECANCELED;
	call->reply_len = 0;
	call->result_len = 0;
	frwr_release(x, req);
	req->rl_call = NULL;
	req->rl_flags |= RPCRDMA_REQ_CANCELED;
	call->status = -ECANCELED;
	call->done(call);
	return 0;
}

RPCRDMA_EXPORT int rpcrdma_clnt_mem_register(struct rpcrdma_clnt *clnt, void *addr, size_t len,
					     struct rpcrdma_mem **out)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);

	if (!clnt || !out)
		return -EINVAL;
	XPRT_RDMA_GUARD(x, return -EBUSY);
	if (!x->rx_pd)
		return -ENOTCONN;
	return rpcrdma_mem_create(&x->rx_mems, &x->rx_stats, addr, len, &x->rx_pd, 1,
				  frwr_mr_access(x), out);
}

RPCRDMA_EXPORT int rpcrdma_clnt_fd(const struct rpcrdma_clnt *clnt)
{
	const struct rpcrdma_xprt *x = (const struct rpcrdma_xprt *)clnt;

	return clnt ? x->rx_epfd : -EINVAL;
}

RPCRDMA_EXPORT int rpcrdma_clnt_next_timeout(const struct rpcrdma_clnt *clnt, int *timeout_ms)
{
	const struct rpcrdma_xprt *x = (const struct rpcrdma_xprt *)clnt;
	int64_t left;

	if (!clnt || !timeout_ms)
		return -EINVAL;
	/* rx_next_deadline may still name a call that has completed since. */
	if (x->rx_next_deadline == INT64_MAX ||
	    (list_empty(&x->rb_inflight) && list_empty(&x->rb_pending)))
		return -ENOENT;
	left = x->rx_next_deadline - rpcrdma_now_ms();
	*timeout_ms = left < 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
	return 0;
}

RPCRDMA_EXPORT int rpcrdma_clnt_arm(struct rpcrdma_clnt *clnt)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);
	int n;

	if (!clnt)
		return -EINVAL;
	XPRT_RDMA_GUARD(x, return -EBUSY);
	if (xprt_rdma_keepalive(x)) {
		xprt_rdma_after_batch(x, true);
		return 1;
	}
	if (!x->rx_have_ep)
		return 0;
	/* About to sleep: what the paced polls skipped must not be left unread. */
	rpcrdma_stat_tick(&x->rx_stat, true);
	if (rpcrdma_ep_cm_due_arm(&x->rx_ep))
		xprt_rdma_process_cm(x);
	n = rpcrdma_ep_close_due(&x->rx_ep) ? 1 : rpcrdma_ep_arm(&x->rx_ep, 64);
	if (n < 0) {
		rpcrdma_ep_close_deferred(&x->rx_ep);
		n = 1;
	}
	if (n > 0)
		xprt_rdma_after_batch(x, true);
	return n;
}

RPCRDMA_EXPORT int rpcrdma_clnt_wait(struct rpcrdma_clnt *clnt, int timeout_ms)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);
	int n, next;

	if (!clnt)
		return -EINVAL;
	XPRT_RDMA_GUARD(x, return -EBUSY);
	n = rpcrdma_clnt_poll(clnt, 64);
	if (n == 0)
		n = rpcrdma_clnt_arm(clnt);
	if (n != 0)
		return n;
	if (rpcrdma_clnt_next_timeout(clnt, &next) == 0 && (timeout_ms < 0 || next < timeout_ms))
		timeout_ms = next;
	n = xprt_rdma_sleep(clnt, timeout_ms);
	if (n < 0)
		return n;
	return rpcrdma_clnt_poll(clnt, 64);
}

int xprt_rdma_watch(struct rpcrdma_clnt *clnt, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = RPCRDMA_READY_USER };

	if (epoll_ctl(rpcrdma_clnt_xprt(clnt)->rx_epfd, EPOLL_CTL_ADD, fd, &ev))
		return -errno;
	return 0;
}

int xprt_rdma_sleep(struct rpcrdma_clnt *clnt, int timeout_ms)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);

	return rpcrdma_ep_collect(x->rx_have_ep ? &x->rx_ep : NULL, x->rx_epfd, timeout_ms);
}

static void xprt_rdma_sync_done(struct rpcrdma_call *call)
{
	*(int *)call->arg = 1;
}

/*
 * rpcrdma_clnt_call()'s window: poll for the reply for up to the window
 * (spin.h) before sleeping, so that a quick reply costs no sleep and no
 * wake-up. An adaptive window ends when the thread was descheduled between
 * two polls, and is told whether it paid. Returns when the reply was seen
 * in the window, or 0.
 */
static int64_t xprt_rdma_call_spin(struct rpcrdma_clnt *clnt, struct rpcrdma_xprt *x,
				   const int *finished, int64_t from)
{
	unsigned int window = rpcrdma_spin_next(&x->rx_spin);
	int64_t t = from ? from : rpcrdma_now_us(), end = t + window, last = t;
	bool gap = false;

	if (!window)
		return 0;
	while (!*finished && t < end) {
		rpcrdma_cpu_relax();
		if (rpcrdma_clnt_poll(clnt, 16) < 0)
			break;
		t = rpcrdma_now_us();
		if (t - last > RPCRDMA_SPIN_GAP_US && rpcrdma_spin_auto(&x->rx_spin)) {
			gap = true;
			break;
		}
		last = t;
	}
	rpcrdma_spin_paid(&x->rx_spin, *finished && !gap);
	return *finished ? t : 0;
}

RPCRDMA_EXPORT int rpcrdma_clnt_call(struct rpcrdma_clnt *clnt, const void *msg, size_t msg_len,
				     void *reply, size_t *reply_len, int timeout_ms)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);
	struct rpcrdma_call call;
	int64_t from, seen;
	int finished = 0, rc;

	if (!clnt || !reply_len)
		return -EINVAL;
	/* The window is this thread's while it is inside (guard.h); the calls below nest. */
	XPRT_RDMA_GUARD(x, return -EBUSY);
	RPCRDMA_INIT(&call);
	call.msg = msg;
	call.msg_len = msg_len;
	call.reply = reply;
	call.reply_max = *reply_len;
	call.timeout_ms = timeout_ms;
	call.done = xprt_rdma_sync_done;
	call.arg = &finished;
	from = rpcrdma_spin_auto(&x->rx_spin) ? rpcrdma_now_us() : 0;
	rc = rpcrdma_clnt_submit(clnt, &call);
	if (rc)
		return rc;
	seen = xprt_rdma_call_spin(clnt, x, &finished, from);
	/* The call lives on this stack: wait for done() whatever happens. */
	while (!finished) {
		if (rpcrdma_clnt_wait(clnt, -1) < 0)
			poll(NULL, 0, 1);
	}
	/* A reply timed through a sleep includes the wake-up: the window learns that too. */
	if (from)
		rpcrdma_spin_learn(&x->rx_spin, (seen ? seen : rpcrdma_now_us()) - from);
	*reply_len = call.reply_len;
	return call.status;
}

RPCRDMA_EXPORT int rpcrdma_clnt_disconnect(struct rpcrdma_clnt *clnt)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);

	if (!clnt)
		return -EINVAL;
	XPRT_RDMA_GUARD(x, return -EBUSY);
	if (x->rx_have_ep && x->rx_connected) {
		x->rx_connected = false;
		rpcrdma_ep_begin_close(&x->rx_ep);
	}
	return 0;
}

RPCRDMA_EXPORT void rpcrdma_clnt_destroy(struct rpcrdma_clnt *clnt)
{
	struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(clnt);
	uint32_t i;

	if (!clnt)
		return;
	/* No guard's end: the client is gone by then. */
	if (!rpcrdma_guard_begin(&x->rx_guard, __func__, XPRT_RDMA_GUARD_WHAT))
		return;
	x->rx_destroying = true;
	if (x->rx_have_ep) {
		x->rx_connected = false;
		rpcrdma_ep_drain_sync(&x->rx_ep, 10000);
		xprt_rdma_process_replies(x);
		xprt_rdma_conn_lost(x);
	}
	xprt_rdma_fail_pending(x, -ECANCELED);
	/*
	 * Only a provider that never flushed leaves a Send pending here; its
	 * QP and CQ are gone, so nothing can complete it any more.
	 */
	for (i = 0; i < x->rx_nreqs; i++) {
		struct rpcrdma_req *req = &x->rx_reqs[i];

		if (req->rl_call && (req->rl_flags & RPCRDMA_REQ_SEND_PENDING) &&
		    (req->rl_flags & RPCRDMA_REQ_REPLIED)) {
			req->rl_flags = 0;
			xprt_rdma_finish(x, req, -ECANCELED);
		}
	}
	frwr_conn_lost(x);
	xprt_rdma_run_done(x);
	xprt_rdma_free(x);
}

RPCRDMA_EXPORT int rpcrdma_clnt_info(const struct rpcrdma_clnt *clnt,
				     struct rpcrdma_clnt_info *info)
{
	const struct rpcrdma_xprt *x = (const struct rpcrdma_xprt *)clnt;
	struct rpcrdma_clnt_info now = { RPCRDMA_SIZED(now) };

	if (!clnt || !info)
		return -EINVAL;
	now.connected = x->rx_connected;
	now.credits = x->rx_credits;
	now.inline_send = x->rx_inline.send_max;
	now.inline_recv = x->rx_inline.recv_max;
	now.remote_invalidate = x->rx_inline.remote_inv;
	now.connects = x->rx_connects;
	now.vers_low = x->rx_vers_low;
	now.vers_high = x->rx_vers_high;
	now.registration = x->rx_reg;
	now.responder_resources = x->rx_ird;
	now.send_queue = x->rx_sq_depth;
	now.inline_data = x->rx_have_ep ? x->rx_ep.max_inline : 0;
	return rpcrdma_sized_out(info, &now, sizeof(now), RPCRDMA_CLNT_INFO_SIZE_0_2);
}

RPCRDMA_EXPORT int rpcrdma_clnt_stats(const struct rpcrdma_clnt *clnt, struct rpcrdma_stats *stats)
{
	const struct rpcrdma_xprt *x = (const struct rpcrdma_xprt *)clnt;
	struct rpcrdma_stats now;

	if (!clnt || !stats)
		return -EINVAL;
	rpcrdma_stats_load(&now, &x->rx_stats);
	return rpcrdma_sized_out(stats, &now, sizeof(now), RPCRDMA_STATS_SIZE_0_2);
}

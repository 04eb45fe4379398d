/* SPDX-License-Identifier: MIT */
/*
 * Send-queue accounting and the completion-channel arm race, white box:
 * these reach into the transport's internal headers in lib/ to create the
 * conditions a test cannot force from outside.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <softrdma.h>

#include "ddp.h"
#include "harness.h"
#include "svc_rdma.h"
#include "xprt_rdma.h"

struct fixture {
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct svcxprt_rdma *rdma;
};

/*
 * Connect with the harness thread serving, then stop that thread so this
 * thread owns both sides, and put the fabric in STEP mode.
 */
static void svc_signal_all(struct fixture *fx);

static void fixture_up_seg(struct fixture *fx, enum harness_mode mode, uint32_t max_segment)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	unsigned char msg[16], reply[16];
	size_t rlen = sizeof(reply);

	/* A failed test may have left the fabric stepping. */
	assert_int_equal(softrdma_set_mode(harness_run_mode()), 0);
	assert_int_equal(harness_server_start(&fx->hs, 8, 0, HARNESS_ECHO), 0);
	harness_clnt_attr(&fx->hs, &attr);
	attr.max_segment = max_segment;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &fx->clnt), 0);
	harness_fill_msg(msg, sizeof(msg), 1, 1);
	assert_int_equal(rpcrdma_clnt_call(fx->clnt, msg, sizeof(msg), reply, &rlen, 0), 0);
	atomic_store(&fx->hs.sh->stop, true);
	pthread_join(fx->hs.thread, NULL);
	assert_int_equal(fx->hs.nconns, 1);
	fx->rdma = svc_conn_rdma(fx->hs.conns[0]);
	assert_int_equal(softrdma_set_mode(SOFTRDMA_MODE_STEP), 0);
	svc_signal_all(fx);
	atomic_store(&fx->hs.sh->mode, mode);
}

static void fixture_up(struct fixture *fx, enum harness_mode mode)
{
	fixture_up_seg(fx, mode, 0);
}

static void fixture_down(struct fixture *fx)
{
	assert_int_equal(softrdma_set_mode(harness_run_mode()), 0);
	rpcrdma_clnt_destroy(fx->clnt);
	rpcrdma_svc_destroy(fx->hs.svc);
	fx->hs.svc = NULL;
	harness_assert_fabric_idle();
}

/* Step the fabric and poll both sides until quiet. */
static void settle(struct fixture *fx)
{
	int i;

	for (i = 0; i < 20; i++) {
		softrdma_progress_all();
		rpcrdma_svc_poll(fx->hs.svc, 64);
		softrdma_progress_all();
		rpcrdma_clnt_poll(fx->clnt, 64);
		/* The step before a sleep: it reads the connection's events too. */
		rpcrdma_clnt_arm(fx->clnt);
	}
}

struct ordered {
	struct rpcrdma_call call;
	unsigned char msg[32];
	unsigned char reply[32];
	unsigned int *order;
	unsigned int *next;
	unsigned int index;
};

static void ordered_done(struct rpcrdma_call *call)
{
	struct ordered *o = call->arg;

	o->order[(*o->next)++] = o->index;
}

/* Submit @n echo calls that record the order they complete in, without settling. */
static void submit_unsettled(struct fixture *fx, struct ordered *calls, unsigned int n,
			     uint32_t xid, unsigned int *order, unsigned int *next, int timeout_ms)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		memset(&calls[i], 0, sizeof(calls[i]));
		harness_fill_msg(calls[i].msg, sizeof(calls[i].msg), xid + i, i);
		RPCRDMA_INIT(&calls[i].call);
		calls[i].call.msg = calls[i].msg;
		calls[i].call.msg_len = sizeof(calls[i].msg);
		calls[i].call.reply = calls[i].reply;
		calls[i].call.reply_max = sizeof(calls[i].reply);
		calls[i].call.timeout_ms = timeout_ms;
		calls[i].call.done = ordered_done;
		calls[i].call.arg = &calls[i];
		calls[i].order = order;
		calls[i].next = next;
		calls[i].index = i;
		assert_int_equal(rpcrdma_clnt_submit(fx->clnt, &calls[i].call), 0);
	}
}

/*
 * Every reply of the server's connection signaled from now on, and no slot
 * held by an unsignaled one (svc_rdma_post_unsignaled()): the tests that set
 * sq_avail by hand count on each Send's completion giving its slot back.
 * One signaled reply gives back what the first call's reply held.
 */
static void svc_signal_all(struct fixture *fx)
{
	struct ordered one;
	unsigned int order, next = 0;

	fx->rdma->sc_ep.sq_unsig_max = 0;
	submit_unsettled(fx, &one, 1, 0x200, &order, &next, 0);
	settle(fx);
	assert_int_equal(next, 1);
	assert_int_equal(fx->rdma->sc_ep.sq_unsig, 0);
}

/* The same, and let them reach the server. */
static void submit_ordered(struct fixture *fx, struct ordered *calls, unsigned int n,
			   uint32_t xid, unsigned int *order, unsigned int *next)
{
	submit_unsettled(fx, calls, n, xid, order, next, 0);
	settle(fx);
}

/*
 * With no send-queue slot free, replies wait in FIFO order and are posted,
 * in that order, when slots come back; the SQ count is never exceeded.
 */
static void t_sq_waiters_fifo(void **state)
{
	struct fixture fx;
	struct ordered calls[6];
	unsigned int order[6], next = 0, i;
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	uint32_t avail;

	harness_skip_srq("it needs 6 calls held after one reply");
	fixture_up(&fx, HARNESS_HOLD);
	/* Get 6 calls held by the server (the grant is 8 after the first reply). */
	submit_ordered(&fx, calls, 6, 0x100, order, &next);
	assert_int_equal(fx.hs.nheld, 6);

	/* Starve the send queue, answer all six: they must queue, not post. */
	avail = fx.rdma->sc_ep.sq_avail;
	fx.rdma->sc_ep.sq_avail = 0;
	rpcrdma_svc_stats(fx.hs.svc, &st);
	for (i = 0; i < 6; i++)
		assert_int_equal(rpcmsg_svc_echo(fx.hs.held[i]), 0);
	fx.hs.nheld = 0;
	{
		struct rpcrdma_stats st2 = { RPCRDMA_SIZED(st2) };

		rpcrdma_svc_stats(fx.hs.svc, &st2);
		assert_int_equal(st2.sq_waits - st.sq_waits, 6);
	}
	settle(&fx);
	assert_int_equal(next, 0);	/* nothing was sent */

	/* Slots come back two at a time: waiters go out in order, never beyond. */
	fx.rdma->sc_ep.sq_avail = 2;
	svc_rdma_wake_send_waiters(fx.rdma);
	assert_int_equal(fx.rdma->sc_ep.sq_avail, 0);
	softrdma_progress_all();
	rpcrdma_clnt_poll(fx.clnt, 64);
	rpcrdma_svc_poll(fx.hs.svc, 64);	/* two Send completions return two slots */
	assert_int_equal(next, 2);
	assert_int_equal(fx.rdma->sc_ep.sq_avail, 0);	/* spent at once on the next two */
	fx.rdma->sc_ep.sq_avail += avail - 2;
	settle(&fx);
	assert_int_equal(next, 6);
	for (i = 0; i < 6; i++) {
		assert_int_equal(order[i], i);
		assert_int_equal(calls[i].call.status, 0);
		harness_assert_echo(calls[i].reply, calls[i].msg, sizeof(calls[i].msg));
	}
	assert_int_equal(fx.rdma->sc_ep.sq_avail, avail);
	fixture_down(&fx);
}

/* Waiters are released, not posted, when the connection closes. */
/* The send contexts on the connection's free stack (bounded: a cycle fails). */
static unsigned int free_sends(const struct svcxprt_rdma *rdma)
{
	const struct svc_rdma_send_ctxt *c;
	unsigned int n = 0;

	for (c = rdma->sc_send_free; c; c = c->sc_free_next)
		assert_true(++n <= rdma->sc_nsend);
	return n;
}

static void t_sq_waiters_released_on_close(void **state)
{
	struct fixture fx;
	struct ordered calls[4];
	unsigned int order[4], next = 0, i;

	fixture_up(&fx, HARNESS_HOLD);
	submit_ordered(&fx, calls, 4, 0x200, order, &next);
	assert_int_equal(fx.hs.nheld, 4);
	fx.rdma->sc_ep.sq_avail = 0;
	for (i = 0; i < 4; i++)
		assert_int_equal(rpcmsg_svc_echo(fx.hs.held[i]), 0);
	fx.hs.nheld = 0;
	assert_false(list_empty(&fx.rdma->sc_ep.sq_waiters));
	/* Close from the server: the waiters go back to the free list at once. */
	rpcrdma_svc_conn_close(fx.hs.conns[0]);
	rpcrdma_svc_poll(fx.hs.svc, 64);
	assert_true(list_empty(&fx.rdma->sc_ep.sq_waiters));
	if (fx.rdma->sc_srq) {
		/* From the poller's shared pool: the connection holds none again. */
		assert_int_equal(fx.rdma->sc_sends_out, 0);
	} else {
		unsigned int free_now = 0;

		free_now = free_sends(fx.rdma);
		/* Every send context is free again: nothing else is in flight. */
		assert_int_equal(free_now, fx.rdma->sc_nsend);
	}
	settle(&fx);
	for (i = 0; i < 4; i++) {
		assert_int_equal(calls[i].call.status, -ECONNRESET);
	}
	assert_int_equal(next, 4);
	fixture_down(&fx);
}

/* Send posts (doorbells) and send WRs of the server's QP since @before. */
static void svc_posts_since(struct fixture *fx, const struct softrdma_qp_stats *before,
			    unsigned long *posts, unsigned long *wrs)
{
	struct softrdma_qp_stats now;

	softrdma_qp_stats(fx->rdma->sc_ep.qp, &now);
	*posts = now.send_posts - before->send_posts;
	*wrs = now.send_wrs - before->send_wrs;
}

/* The replies one poll pass makes reach the device in one post (4: the SRQ's grant). */
static void t_svc_replies_batched(void **state)
{
	struct softrdma_qp_stats before;
	struct fixture fx;
	struct ordered calls[4];
	unsigned int order[4], next = 0, i;
	unsigned long posts, wrs;

	fixture_up(&fx, HARNESS_ECHO);
	settle(&fx);
	submit_unsettled(&fx, calls, 4, 0x900, order, &next, 0);
	softrdma_progress_all();
	softrdma_qp_stats(fx.rdma->sc_ep.qp, &before);
	rpcrdma_svc_poll(fx.hs.svc, 64);
	svc_posts_since(&fx, &before, &posts, &wrs);
	assert_int_equal(wrs, 4);
	assert_int_equal(posts, 1);
	assert_false(fx.rdma->sc_batching);
	assert_true(list_empty(&fx.rdma->sc_batch));
	settle(&fx);
	assert_int_equal(next, 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(calls[i].call.status, 0);
		harness_assert_echo(calls[i].reply, calls[i].msg, sizeof(calls[i].msg));
	}
	fixture_down(&fx);
}

/*
 * A batch whose post fails at its third chain: the two before it went and
 * complete as posted, the third and fourth never went and are given back
 * at once; the connection closes, and every call ends exactly once.
 */
static void t_svc_batch_post_fails_midway(void **state)
{
	struct softrdma_qp_stats before;
	struct fixture fx;
	struct ordered calls[4];
	unsigned int order[4], next = 0, i, free_now = 0;
	unsigned long posts, wrs;
	struct svc_rdma_chain *third = NULL;
	struct list_node *pos;
	int num_sge;

	harness_skip_srq("it counts the connection's own send contexts");
	fixture_up(&fx, HARNESS_HOLD);
	submit_ordered(&fx, calls, 4, 0xa00, order, &next);
	assert_int_equal(fx.hs.nheld, 4);
	softrdma_qp_stats(fx.rdma->sc_ep.qp, &before);
	fx.rdma->sc_batching = true;
	for (i = 0; i < 4; i++)
		assert_int_equal(rpcmsg_svc_echo(fx.hs.held[i]), 0);
	fx.hs.nheld = 0;
	svc_posts_since(&fx, &before, &posts, &wrs);
	assert_int_equal(posts, 0);		/* batched, not posted */
	i = 0;
	list_for_each(pos, &fx.rdma->sc_batch) {
		if (++i == 3)
			third = list_entry(pos, struct svc_rdma_chain, sq.list);
	}
	assert_int_equal(i, 4);
	assert_non_null(third);
	/* More SGEs than the QP takes: the device refuses this WR and those after it. */
	num_sge = third->first->num_sge;
	third->first->num_sge = 1 << 20;
	svc_rdma_post_batch(fx.rdma);
	third->first->num_sge = num_sge;
	svc_posts_since(&fx, &before, &posts, &wrs);
	assert_int_equal(wrs, 2);
	assert_true(fx.rdma->sc_ep.close_pending);
	assert_true(list_empty(&fx.rdma->sc_batch));
	assert_true(list_empty(&fx.rdma->sc_orphans));
	/* The two refused are free again; the two posted are still the device's. */
	free_now = free_sends(fx.rdma);
	assert_int_equal(free_now, fx.rdma->sc_nsend - 2);
	settle(&fx);
	assert_int_equal(next, 4);
	for (i = 0; i < 4; i++)
		assert_true(calls[i].call.status == 0 || calls[i].call.status == -ECONNRESET);
	assert_int_equal(calls[2].call.status, -ECONNRESET);
	assert_int_equal(calls[3].call.status, -ECONNRESET);
	fixture_down(&fx);
}

/*
 * Every Send of @x signaled from now on, and no slot held by an unsignaled
 * one: the tests that set sq_avail by hand count on each Send's completion
 * giving its slot back. One signaled call gives back what earlier ones held.
 */
static void clnt_signal_all(struct fixture *fx, struct rpcrdma_xprt *x)
{
	struct ordered one;
	unsigned int order, next = 0;

	x->rx_ep.sq_unsig_max = 0;
	submit_unsettled(fx, &one, 1, 0x300, &order, &next, 0);
	settle(fx);
	assert_int_equal(next, 1);
	assert_int_equal(x->rx_ep.sq_unsig, 0);
}

/* Up, idle, every Send signaled, and the client's transport for a test that reaches into it. */
static struct rpcrdma_xprt *clnt_fixture_up(struct fixture *fx)
{
	struct rpcrdma_xprt *x;

	fixture_up(fx, HARNESS_ECHO);
	settle(fx);
	x = rpcrdma_clnt_xprt(fx->clnt);
	clnt_signal_all(fx, x);
	return x;
}

/*
 * 3 x (sq_unsig_max + 1) calls one at a time, whose Sends on @ep go
 * unsignaled but one in sq_unsig_max + 1: the slots the unsignaled ones
 * hold never pass sq_unsig_max, each signaled one's completion gives them
 * back (the ledger always adds up), and the device completes a Send per
 * batch. @ep starts at a signaled Send's completion, nothing held.
 */
static void unsignaled_rounds(struct fixture *fx, struct rpcrdma_ep *ep, uint32_t xid)
{
	uint32_t total = ep->sq_avail + ep->sq_unsig, batch = ep->sq_unsig_max + 1;
	struct softrdma_qp_stats before, after;
	unsigned int order, next, i, rounds = 3 * batch;
	struct ordered one;

	assert_int_equal(ep->sq_unsig, 0);
	softrdma_qp_stats(ep->qp, &before);
	for (i = 0; i < rounds; i++) {
		next = 0;
		submit_unsettled(fx, &one, 1, xid + i, &order, &next, 0);
		settle(fx);
		assert_int_equal(next, 1);
		assert_int_equal(one.call.status, 0);
		harness_assert_echo(one.reply, one.msg, sizeof(one.msg));
		assert_true(ep->sq_unsig <= ep->sq_unsig_max);
		assert_int_equal(ep->sq_avail + ep->sq_unsig, total);
	}
	softrdma_qp_stats(ep->qp, &after);
	assert_int_equal(after.send_wrs - before.send_wrs, rounds);
	assert_int_equal(after.send_cqes - before.send_cqes, rounds / batch);
	assert_int_equal(ep->sq_unsig, 0);
}

/* The client's inline Sends go unsignaled (unsignaled_rounds()). */
static void t_clnt_unsignaled_sends(void **state)
{
	unsigned int order, next;
	struct fixture fx;
	struct ordered one;
	struct rpcrdma_xprt *x;

	(void)state;
	fixture_up(&fx, HARNESS_ECHO);
	settle(&fx);
	x = rpcrdma_clnt_xprt(fx.clnt);
	assert_true(x->rx_ep.sq_unsig_max > 0);
	assert_int_equal(x->rx_ep.sq_avail + x->rx_ep.sq_unsig,
			 x->rx_sq_depth + x->rx_ep.sq_unsig_max);
	/* Start at a signaled Send's completion: nothing held. */
	while (x->rx_ep.sq_unsig) {
		next = 0;
		submit_unsettled(&fx, &one, 1, 0x800, &order, &next, 0);
		settle(&fx);
	}
	unsignaled_rounds(&fx, &x->rx_ep, 0x810);
	fixture_down(&fx);
}

/* Let the server's replies go unsignaled again (svc_signal_all() turned them off). */
static void svc_unsignaled_on(struct fixture *fx)
{
	struct rpcrdma_ep *ep = &fx->rdma->sc_ep;

	ep->sq_unsig_max = ep->sq_avail + ep->sq_unsig - fx->rdma->sc_sq_depth;
	assert_true(ep->sq_unsig_max > 0);
}

/* The server's inline replies go unsignaled too (unsignaled_rounds()). */
static void t_svc_unsignaled_replies(void **state)
{
	struct fixture fx;

	(void)state;
	fixture_up(&fx, HARNESS_ECHO);
	svc_unsignaled_on(&fx);
	unsignaled_rounds(&fx, &fx.rdma->sc_ep, 0x900);
	fixture_down(&fx);
}

static unsigned int unsig_flushes;

static void count_unsig_flush(struct ibv_cq *cq, struct ibv_wc *wc)
{
	assert_int_equal(wc->status, IBV_WC_WR_FLUSH_ERR);
	unsig_flushes++;
	svc_rdma_wc_send_unsignaled(cq, wc);
}

/*
 * Unsignaled replies still on the send queue when the connection closes
 * complete, flushed, through the connection's own handler: each is counted
 * as a flush, none touches a send context (all are free at once), and the
 * calls they answered end with -ECONNRESET.
 */
static void t_svc_unsignaled_replies_flushed(void **state)
{
	struct rpcrdma_stats st0 = { RPCRDMA_SIZED(st0) }, st1 = { RPCRDMA_SIZED(st1) };
	struct fixture fx;
	struct ordered calls[3];
	unsigned int order[3], next = 0, i;

	(void)state;
	fixture_up(&fx, HARNESS_HOLD);
	svc_unsignaled_on(&fx);
	submit_ordered(&fx, calls, 3, 0xb00, order, &next);
	assert_int_equal(fx.hs.nheld, 3);
	unsig_flushes = 0;
	fx.rdma->sc_unsig_cqe.done = count_unsig_flush;
	/* The fabric steps only when told: the three stay on the send queue. */
	for (i = 0; i < 3; i++)
		assert_int_equal(rpcmsg_svc_echo(fx.hs.held[i]), 0);
	fx.hs.nheld = 0;
	assert_int_equal(fx.rdma->sc_ep.sq_unsig, 3);
	if (fx.rdma->sc_srq)
		assert_int_equal(fx.rdma->sc_sends_out, 0);
	else
		assert_int_equal(free_sends(fx.rdma), fx.rdma->sc_nsend);
	rpcrdma_svc_stats(fx.hs.svc, &st0);
	/* The close is begun by the next poll; the fabric is not stepped meanwhile. */
	rpcrdma_svc_conn_close(fx.hs.conns[0]);
	for (i = 0; i < 20 && unsig_flushes < 3; i++)
		rpcrdma_svc_poll(fx.hs.svc, 64);
	assert_int_equal(unsig_flushes, 3);
	rpcrdma_svc_stats(fx.hs.svc, &st1);
	assert_true(st1.flushes - st0.flushes >= 3);
	assert_int_equal(st1.wc_errors, st0.wc_errors);
	settle(&fx);
	assert_int_equal(next, 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(calls[i].call.status, -ECONNRESET);
	fixture_down(&fx);
}

static uint64_t clnt_sq_waits(struct fixture *fx)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };

	assert_int_equal(rpcrdma_clnt_stats(fx->clnt, &st), 0);
	return st.sq_waits;
}

static unsigned int clnt_sq_waiters(struct rpcrdma_xprt *x)
{
	unsigned int n = 0;
	struct list_node *pos;

	list_for_each(pos, &x->rx_ep.sq_waiters)
		n++;
	return n;
}

/*
 * The client's calls take a credit, then their slots: with one slot free,
 * one call goes and the rest queue FIFO on the endpoint, each counted once,
 * and go in order as Send completions give the slot back.
 */
static void t_clnt_calls_wait_for_slots(void **state)
{
	struct fixture fx;
	struct ordered calls[4];
	unsigned int order[4], next = 0, i;
	struct rpcrdma_xprt *x;
	uint64_t waits, sent;
	uint32_t avail;

	x = clnt_fixture_up(&fx);
	avail = x->rx_ep.sq_avail;
	waits = clnt_sq_waits(&fx);
	sent = x->rx_stats.calls;
	x->rx_ep.sq_avail = 1;
	submit_unsettled(&fx, calls, 4, 0x400, order, &next, 0);
	assert_int_equal(x->rx_stats.calls - sent, 1);
	assert_int_equal(clnt_sq_waits(&fx) - waits, 3);
	assert_int_equal(clnt_sq_waiters(x), 3);
	assert_int_equal(x->rx_outstanding, 4);		/* each holds its credit */
	assert_int_equal(x->rx_ep.sq_avail, 0);
	settle(&fx);
	assert_int_equal(next, 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(order[i], i);
		assert_int_equal(calls[i].call.status, 0);
		harness_assert_echo(calls[i].reply, calls[i].msg, sizeof(calls[i].msg));
	}
	assert_int_equal(clnt_sq_waits(&fx) - waits, 3);
	assert_int_equal(clnt_sq_waiters(x), 0);
	assert_int_equal(x->rx_outstanding, 0);
	assert_int_equal(x->rx_ep.sq_avail, 1);
	x->rx_ep.sq_avail = avail;
	fixture_down(&fx);
}

/* A call that times out while queued for slots leaves the queue and gives back its credit. */
static void t_clnt_queued_call_times_out(void **state)
{
	struct fixture fx;
	struct ordered calls[2];
	unsigned int order[2], next = 0;
	struct rpcrdma_xprt *x;
	uint32_t avail;

	x = clnt_fixture_up(&fx);
	avail = x->rx_ep.sq_avail;
	x->rx_ep.sq_avail = 0;
	submit_unsettled(&fx, calls, 2, 0x500, order, &next, 30);
	assert_int_equal(clnt_sq_waiters(x), 2);
	usleep(60 * 1000);
	rpcrdma_clnt_poll(fx.clnt, 64);
	assert_int_equal(next, 2);
	assert_int_equal(calls[0].call.status, -ETIMEDOUT);
	assert_int_equal(calls[1].call.status, -ETIMEDOUT);
	assert_int_equal(clnt_sq_waiters(x), 0);
	assert_int_equal(x->rx_outstanding, 0);
	/* Never sent, so nothing was at risk: the connection stays up. */
	assert_true(x->rx_connected);
	assert_false(x->rx_ep.close_pending);
	x->rx_ep.sq_avail = avail;
	next = 0;
	submit_unsettled(&fx, calls, 1, 0x510, order, &next, 0);
	settle(&fx);
	assert_int_equal(next, 1);
	assert_int_equal(calls[0].call.status, 0);
	fixture_down(&fx);
}

/* Destroying the client with calls queued for slots ends them once, unsent. */
static void t_clnt_queued_calls_on_destroy(void **state)
{
	struct fixture fx;
	struct ordered calls[3];
	unsigned int order[3], next = 0;
	struct rpcrdma_xprt *x;
	uint64_t sent;

	x = clnt_fixture_up(&fx);
	sent = x->rx_stats.calls;
	x->rx_ep.sq_avail = 0;
	submit_unsettled(&fx, calls, 3, 0x600, order, &next, 0);
	assert_int_equal(clnt_sq_waiters(x), 3);
	assert_int_equal(x->rx_stats.calls, sent);
	assert_int_equal(softrdma_set_mode(harness_run_mode()), 0);
	rpcrdma_clnt_destroy(fx.clnt);
	assert_int_equal(next, 3);
	assert_int_equal(calls[0].call.status, -ECANCELED);
	assert_int_equal(calls[1].call.status, -ECANCELED);
	assert_int_equal(calls[2].call.status, -ECANCELED);
	rpcrdma_svc_destroy(fx.hs.svc);
	fx.hs.svc = NULL;
	harness_assert_fabric_idle();
}

static void read_call(struct ordered *o, unsigned char *result, size_t len, uint32_t xid,
		      unsigned int *order, unsigned int *next)
{
	memset(o, 0, sizeof(*o));
	ddp_call_msg(o->msg, xid, DDP_OP_READ, (uint32_t)len, xid);
	RPCRDMA_INIT(&o->call);
	o->call.msg = o->msg;
	o->call.msg_len = DDP_CALL_LEN;
	o->call.reply = o->reply;
	o->call.reply_max = sizeof(o->reply);
	o->call.result = result;
	o->call.result_max = len;
	o->call.done = ordered_done;
	o->call.arg = o;
	o->order = order;
	o->next = next;
}

/* The most windows a call slot of @x holds. */
static uint32_t clnt_max_nmws(const struct rpcrdma_xprt *x)
{
	uint32_t i, most = 0;

	for (i = 0; i < x->rx_nreqs; i++)
		if (x->rx_reqs[i].rl_nmws > most)
			most = x->rx_reqs[i].rl_nmws;
	return most;
}

/*
 * LOCAL_INVs wait in the same FIFO: a reply whose windows the server did
 * not all invalidate finds a call queued ahead of it, so its LOCAL_INV
 * chain queues behind; both go, in order, when slots come back, and the
 * READ completes only once its windows are fenced.
 */
static void t_clnt_linv_waits_behind_calls(void **state)
{
	static unsigned char result[8192];
	struct fixture fx;
	struct ordered rd, echo[1];
	unsigned int order[2], next = 0;
	struct rpcrdma_xprt *x;
	uint64_t waits, sent;
	uint32_t avail;

	harness_require_windows("a LOCAL_INV waiting for send-queue room");
	/* Two 4 KiB segments: the server's Send invalidates one window, a LOCAL_INV the other. */
	fixture_up_seg(&fx, HARNESS_DDP, 4096);
	x = rpcrdma_clnt_xprt(fx.clnt);
	settle(&fx);
	clnt_signal_all(&fx, x);
	avail = x->rx_ep.sq_avail;
	read_call(&rd, result, sizeof(result), 0x700, order, &next);
	rd.index = 0;
	assert_int_equal(rpcrdma_clnt_submit(fx.clnt, &rd.call), 0);
	assert_true(clnt_max_nmws(x) >= 2);
	softrdma_progress_all();
	rpcrdma_clnt_poll(fx.clnt, 64);		/* the READ's binds and Send complete */
	assert_int_equal(x->rx_ep.sq_avail, avail);

	waits = clnt_sq_waits(&fx);
	sent = x->rx_stats.calls;
	x->rx_ep.sq_avail = 0;
	next = 0;
	submit_unsettled(&fx, echo, 1, 0x710, order, &next, 0);
	echo[0].index = 1;
	assert_int_equal(clnt_sq_waiters(x), 1);
	/* The READ's reply arrives: its LOCAL_INV queues behind the echo. */
	rpcrdma_svc_poll(fx.hs.svc, 64);
	softrdma_progress_all();
	rpcrdma_svc_poll(fx.hs.svc, 64);
	softrdma_progress_all();
	rpcrdma_clnt_poll(fx.clnt, 64);
	assert_int_equal(x->rx_stats.replies > 0, 1);
	assert_int_equal(clnt_sq_waiters(x), 2);
	assert_int_equal(clnt_sq_waits(&fx) - waits, 2);
	assert_int_equal(next, 0);			/* the READ waits for its fence */
	assert_int_equal(x->rx_stats.calls, sent);	/* the echo waits for its slot */

	x->rx_ep.sq_avail = avail;
	settle(&fx);
	assert_int_equal(next, 2);
	assert_int_equal(rd.call.status, 0);
	assert_int_equal(rd.call.result_len, sizeof(result));
	assert_int_equal(ddp_check(result, sizeof(result), 0x700), sizeof(result));
	assert_int_equal(echo[0].call.status, 0);
	harness_assert_echo(echo[0].reply, echo[0].msg, sizeof(echo[0].msg));
	assert_int_equal(clnt_sq_waiters(x), 0);
	assert_int_equal(x->rx_outstanding, 0);
	assert_int_equal(x->rx_ep.sq_avail, avail);
	fixture_down(&fx);
}

/*
 * DDP READs until a signaled Send has covered every held slot: within one
 * cycle of the ledger, each within its bound.
 */
static void reads_until_covered(struct fixture *fx, struct rpcrdma_xprt *x, unsigned char *result,
				size_t len, uint32_t xid)
{
	unsigned int order, next, i;
	struct ordered rd;

	for (i = 0; x->rx_ep.sq_unsig && i <= x->rx_ep.sq_unsig_max; i++) {
		next = 0;
		read_call(&rd, result, len, xid + i, &order, &next);
		assert_int_equal(rpcrdma_clnt_submit(fx->clnt, &rd.call), 0);
		settle(fx);
		assert_int_equal(rd.call.status, 0);
		assert_true(x->rx_ep.sq_unsig <= x->rx_ep.sq_unsig_max);
	}
	assert_int_equal(x->rx_ep.sq_unsig, 0);
}

/*
 * A call whose binds are chained ahead of its inline Send goes unsignaled
 * too: the chain's slots are held (all of them, binds included) and no
 * completion comes for it, so a client asleep on its channel is not woken
 * for one (the reply wakes it). The next call that would pass the bound is
 * signaled and gives every held slot back.
 */
static void t_clnt_unsignaled_binds(void **state)
{
	static unsigned char result[4096];
	struct softrdma_qp_stats before, after;
	unsigned int order, next;
	uint32_t total, chain;
	struct rpcrdma_xprt *x;
	struct fixture fx;
	struct ordered rd;

	(void)state;
	harness_require_windows("binds chained ahead of an unsignaled Send");
	fixture_up(&fx, HARNESS_DDP);
	x = rpcrdma_clnt_xprt(fx.clnt);
	settle(&fx);
	total = x->rx_ep.sq_avail + x->rx_ep.sq_unsig;
	/* From a signaled Send's completion: nothing held. */
	reads_until_covered(&fx, x, result, sizeof(result), 0xa00);
	softrdma_qp_stats(x->rx_ep.qp, &before);
	next = 0;
	read_call(&rd, result, sizeof(result), 0xa40, &order, &next);
	assert_int_equal(rpcrdma_clnt_submit(fx.clnt, &rd.call), 0);
	settle(&fx);
	softrdma_qp_stats(x->rx_ep.qp, &after);
	assert_int_equal(next, 1);
	assert_int_equal(rd.call.status, 0);
	assert_int_equal(ddp_check(result, sizeof(result), 0xa40), sizeof(result));
	/* A bind and the Send (the server's Send invalidated the one window). */
	chain = (uint32_t)(after.send_wrs - before.send_wrs);
	assert_true(chain >= 2);
	assert_int_equal(after.send_cqes, before.send_cqes);
	assert_int_equal(x->rx_ep.sq_unsig, chain);
	assert_int_equal(x->rx_ep.sq_avail + x->rx_ep.sq_unsig, total);
	/* Calls until one is signaled: it covers the held slots. */
	reads_until_covered(&fx, x, result, sizeof(result), 0xa80);
	assert_int_equal(x->rx_ep.sq_avail, total);
	fixture_down(&fx);
}

static void flag_done(struct rpcrdma_call *call)
{
	*(int *)call->arg = 1;
}

static int fd_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0);
}

/*
 * The arm race: completions that are already in the CQ when it is armed
 * raise no channel event (the fabric models this as hardware behaves), so
 * a transport that armed and slept without looking again would never wake.
 * rpcrdma_clnt_arm() must find them.
 */
static void t_arm_then_poll_again(void **state)
{
	struct fixture fx;
	struct rpcrdma_call call = { RPCRDMA_SIZED(call) };
	unsigned char msg[16], reply[16];
	int finished = 0;
	int fd;

	fixture_up(&fx, HARNESS_ECHO);
	fd = rpcrdma_clnt_fd(fx.clnt);
	RPCRDMA_INIT(&call);
	harness_fill_msg(msg, sizeof(msg), 0x300, 3);
	call.msg = msg;
	call.msg_len = sizeof(msg);
	call.reply = reply;
	call.reply_max = sizeof(reply);
	call.done = flag_done;
	call.arg = &finished;

	/* Drain whatever the fixture left, and arm: the client is idle. */
	settle(&fx);
	assert_int_equal(rpcrdma_clnt_arm(fx.clnt), 0);
	assert_int_equal(rpcrdma_clnt_arm(fx.clnt), 0);	/* still armed, still empty */

	/* A call goes out while armed: its completions raise an event. */
	assert_int_equal(rpcrdma_clnt_submit(fx.clnt, &call), 0);
	softrdma_progress_all();
	rpcrdma_svc_poll(fx.hs.svc, 64);
	softrdma_progress_all();
	assert_int_equal(fd_readable(fd), 1);
	rpcrdma_clnt_poll(fx.clnt, 64);
	assert_true(finished);

	/* The event of that call is still pending; the arm is spent. */
	assert_int_equal(fd_readable(fd), 1);

	/* The race: the next call's completions land while the CQ is not armed ... */
	finished = 0;
	harness_fill_msg(msg, sizeof(msg), 0x301, 4);
	assert_int_equal(rpcrdma_clnt_submit(fx.clnt, &call), 0);
	rpcrdma_clnt_poll(fx.clnt, 64);		/* the poll that found nothing */
	softrdma_progress_all();
	rpcrdma_svc_poll(fx.hs.svc, 64);
	softrdma_progress_all();
	assert_false(finished);
	{
		struct rpcrdma_xprt *x = rpcrdma_clnt_xprt(fx.clnt);
		unsigned int events = 0;
		struct ibv_cq *cq;
		void *ctx;

		/* ... so a naive sleeper (take events, arm, sleep) would never wake: */
		while (ibv_get_cq_event(x->rx_ep.channel, &cq, &ctx) == 0)
			events++;
		ibv_ack_cq_events(x->rx_ep.cq, events);
		assert_int_equal(ibv_req_notify_cq(x->rx_ep.cq, 0), 0);
		assert_int_equal(fd_readable(fd), 0);
	}
	/* ... while rpcrdma_clnt_arm() looks again after arming and finds them. */
	assert_true(rpcrdma_clnt_arm(fx.clnt) > 0);
	assert_true(finished);
	assert_int_equal(call.status, 0);
	harness_assert_echo(reply, msg, sizeof(msg));
	assert_int_equal(rpcrdma_clnt_arm(fx.clnt), 0);
	assert_int_equal(fd_readable(fd), 0);
	fixture_down(&fx);
}

int main(void)
{
	if (harness_white_box_skip())
		return 77;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_sq_waiters_fifo),
		cmocka_unit_test(t_sq_waiters_released_on_close),
		cmocka_unit_test(t_arm_then_poll_again),
		cmocka_unit_test(t_svc_replies_batched),
		cmocka_unit_test(t_svc_batch_post_fails_midway),
		cmocka_unit_test(t_clnt_unsignaled_sends),
		cmocka_unit_test(t_clnt_unsignaled_binds),
		cmocka_unit_test(t_svc_unsignaled_replies),
		cmocka_unit_test(t_svc_unsignaled_replies_flushed),
		cmocka_unit_test(t_clnt_calls_wait_for_slots),
		cmocka_unit_test(t_clnt_queued_call_times_out),
		cmocka_unit_test(t_clnt_queued_calls_on_destroy),
		cmocka_unit_test(t_clnt_linv_waits_behind_calls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

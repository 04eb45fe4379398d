/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance: completion queues, completion channels and async
 * events. The poll/arm/poll race, one event per arm, solicited-only arming,
 * O_NONBLOCK channels, ack accounting that ibv_destroy_cq waits for, CQ
 * overrun, and async events that ibv_destroy_qp waits for.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

static struct h_pair p;
static struct h_opts opts;
static uint8_t buf[2][256];
static struct ibv_mr *mr[2];

static int open_pair(void **state)
{
	void *bufs[2] = { buf[0], buf[1] };

	(void)state;
	h_pair_open_reg(&p, &opts, bufs, sizeof(buf[0]), IBV_ACCESS_LOCAL_WRITE, mr);
	return 0;
}

static int close_pair(void **state)
{
	(void)state;
	h_pair_close_reg(&p, mr);
	h_opts_default(&opts);
	return 0;
}

static bool readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

static void send_one(uint64_t wr_id, unsigned int flags)
{
	assert_int_equal(h_post_recv(p.qp[1], wr_id, buf[1], 64, mr[1]->lkey), 0);
	assert_int_equal(h_post(p.qp[0], wr_id, IBV_WR_SEND, buf[0], 8, mr[0]->lkey, flags, 0, 0),
			 0);
	h_settle();
}

static void test_arm_race(void **state)
{
	struct ibv_cq *cq;
	struct ibv_wc wc;
	void *ctx;

	(void)state;
	send_one(1, 0);
	/* A completion is already queued: arming now raises nothing for it. */
	assert_int_equal(ibv_req_notify_cq(p.cq[1], 0), 0);
	h_settle();
	assert_false(readable(p.ch[1]->fd));
	/* Hence the consumer's rule: after arming, poll again. */
	assert_int_equal(ibv_poll_cq(p.cq[1], 1, &wc), 1);
	assert_int_equal(wc.wr_id, 1);
	/* Still armed: the next completion writes the event. */
	send_one(2, 0);
	assert_true(readable(p.ch[1]->fd));
	assert_int_equal(ibv_get_cq_event(p.ch[1], &cq, &ctx), 0);
	assert_ptr_equal(cq, p.cq[1]);
	assert_ptr_equal(ctx, &p);
	ibv_ack_cq_events(cq, 1);
	assert_int_equal(ibv_poll_cq(p.cq[1], 1, &wc), 1);
}

static void test_one_event_per_arm(void **state)
{
	struct ibv_cq *cq;
	void *ctx;

	(void)state;
	assert_int_equal(ibv_req_notify_cq(p.cq[1], 0), 0);
	send_one(1, 0);
	send_one(2, 0);
	assert_int_equal(ibv_get_cq_event(p.ch[1], &cq, &ctx), 0);
	assert_false(readable(p.ch[1]->fd));
	ibv_ack_cq_events(cq, 1);
	/* Not re-armed: a third completion is silent. */
	send_one(3, 0);
	assert_false(readable(p.ch[1]->fd));
}

static void test_solicited_only(void **state)
{
	struct ibv_cq *cq;
	void *ctx;

	(void)state;
	assert_int_equal(ibv_req_notify_cq(p.cq[1], 1), 0);
	send_one(1, 0);
	assert_false(readable(p.ch[1]->fd));
	send_one(2, IBV_SEND_SOLICITED);
	assert_true(readable(p.ch[1]->fd));
	assert_int_equal(ibv_get_cq_event(p.ch[1], &cq, &ctx), 0);
	ibv_ack_cq_events(cq, 1);
	/* Error completions always notify, even a solicited-only arm. */
	assert_int_equal(ibv_req_notify_cq(p.cq[0], 1), 0);
	assert_int_equal(h_post(p.qp[0], 9, IBV_WR_SEND, buf[0], 8, 0xbad00, 0, 0, 0), 0);
	h_settle();
	assert_true(readable(p.ch[0]->fd));
	assert_int_equal(ibv_get_cq_event(p.ch[0], &cq, &ctx), 0);
	assert_ptr_equal(cq, p.cq[0]);
	ibv_ack_cq_events(cq, 1);
}

static void test_nonblocking_channel(void **state)
{
	int flags = fcntl(p.ch[1]->fd, F_GETFL);
	struct ibv_cq *cq;
	void *ctx;

	(void)state;
	assert_int_equal(fcntl(p.ch[1]->fd, F_SETFL, flags | O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(ibv_get_cq_event(p.ch[1], &cq, &ctx), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(ibv_req_notify_cq(p.cq[1], 0), 0);
	send_one(1, 0);
	assert_int_equal(ibv_get_cq_event(p.ch[1], &cq, &ctx), 0);
	ibv_ack_cq_events(cq, 1);
}

struct late_ack {
	struct ibv_cq *cq;
	int acked;
	pthread_mutex_t lock;
};

static void *ack_later(void *arg)
{
	struct late_ack *la = arg;
	struct timespec ts = { 0, 50000000 };

	nanosleep(&ts, NULL);
	pthread_mutex_lock(&la->lock);
	la->acked = 1;
	pthread_mutex_unlock(&la->lock);
	ibv_ack_cq_events(la->cq, 1);
	return NULL;
}

static void test_destroy_cq_waits_for_ack(void **state)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(p.ctx);
	struct ibv_cq *cq = ibv_create_cq(p.ctx, 4, NULL, ch, 0), *got;
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(p.pd, &qa);
	struct late_ack la = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct ibv_wc wc;
	pthread_t t;
	void *ctx;

	(void)state;
	assert_non_null(qp);
	h_qp_to_rts(qp, qp->qp_num, &opts);
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	assert_int_equal(h_post(qp, 1, IBV_WR_RDMA_WRITE, NULL, 0, 0, IBV_SEND_SIGNALED, 0, 0), 0);
	h_settle();
	assert_int_equal(ibv_get_cq_event(ch, &got, &ctx), 0);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 1);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	la.cq = cq;
	assert_int_equal(pthread_create(&t, NULL, ack_later, &la), 0);
	/* Blocks until the other thread acks the event it holds. */
	assert_int_equal(ibv_destroy_cq(cq), 0);
	pthread_mutex_lock(&la.lock);
	assert_int_equal(la.acked, 1);
	pthread_mutex_unlock(&la.lock);
	pthread_join(t, NULL);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
}

static int small_cq(void **state)
{
	opts.cqe = 2;
	opts.sq_sig_all = 1;
	return open_pair(state);
}

static void test_cq_overrun(void **state)
{
	struct ibv_wc wc[4];
	int i;

	(void)state;
	for (i = 0; i < 3; i++)
		assert_int_equal(h_post(p.qp[0], (uint64_t)i, IBV_WR_RDMA_WRITE, NULL, 0, 0, 0, 0,
					0), 0);
	h_settle();
	/* Two fit; the third overran the CQ, which reports CQ_ERR. */
	h_expect_async(p.ctx, IBV_EVENT_CQ_ERR, p.cq[0]);
	assert_int_equal(ibv_poll_cq(p.cq[0], 4, wc), 2);
	assert_int_equal(wc[0].wr_id, 0);
	assert_int_equal(wc[1].wr_id, 1);
}

struct late_async {
	struct ibv_context *ctx;
	struct ibv_async_event ev;
	int acked;
	pthread_mutex_t lock;
};

static void *ack_async_later(void *arg)
{
	struct late_async *la = arg;
	struct timespec ts = { 0, 50000000 };

	nanosleep(&ts, NULL);
	pthread_mutex_lock(&la->lock);
	la->acked = 1;
	pthread_mutex_unlock(&la->lock);
	ibv_ack_async_event(&la->ev);
	return NULL;
}

static void test_destroy_qp_waits_for_async_ack(void **state)
{
	struct late_async la = { .ctx = p.ctx, .lock = PTHREAD_MUTEX_INITIALIZER };
	struct pollfd pfd = { .fd = p.ctx->async_fd, .events = POLLIN };
	int flags = fcntl(p.ctx->async_fd, F_GETFL);
	pthread_t t;

	(void)state;
	assert_int_equal(fcntl(p.ctx->async_fd, F_SETFL, flags | O_NONBLOCK), 0);
	assert_int_equal(ibv_get_async_event(p.ctx, &la.ev), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(softrdma_qp_set_error(p.qp[0], 1), 0);
	assert_int_equal(poll(&pfd, 1, H_TIMEOUT_MS), 1);
	assert_int_equal(ibv_get_async_event(p.ctx, &la.ev), 0);
	assert_int_equal(la.ev.event_type, IBV_EVENT_QP_FATAL);
	assert_ptr_equal(la.ev.element.qp, p.qp[0]);
	assert_int_equal(pthread_create(&t, NULL, ack_async_later, &la), 0);
	assert_int_equal(ibv_destroy_qp(p.qp[0]), 0);
	pthread_mutex_lock(&la.lock);
	assert_int_equal(la.acked, 1);
	pthread_mutex_unlock(&la.lock);
	pthread_join(t, NULL);
	/* Recreate so that the fixture's teardown has a QP to destroy. */
	{
		struct ibv_qp_init_attr qa = {
			.send_cq = p.cq[0], .recv_cq = p.cq[0],
			.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
				 .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC,
		};

		p.qp[0] = ibv_create_qp(p.pd, &qa);
		assert_non_null(p.qp[0]);
	}
}

static void test_resize_cq(void **state)
{
	struct ibv_wc wc[4];

	(void)state;
	send_one(1, IBV_SEND_SIGNALED);
	send_one(2, IBV_SEND_SIGNALED);
	assert_int_equal(ibv_resize_cq(p.cq[1], 1), EINVAL);
	assert_int_equal(ibv_resize_cq(p.cq[1], 8), 0);
	assert_int_equal(p.cq[1]->cqe, 8);
	assert_int_equal(ibv_poll_cq(p.cq[1], 4, wc), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[1].wr_id, 2);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, open_pair, close_pair)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_arm_race),
		T(test_one_event_per_arm),
		T(test_solicited_only),
		T(test_nonblocking_channel),
		T(test_destroy_cq_waits_for_ack),
		cmocka_unit_test_setup_teardown(test_cq_overrun, small_cq, close_pair),
		T(test_destroy_qp_waits_for_async_ack),
		T(test_resize_cq),
	};

	h_opts_default(&opts);
	return h_run_all_modes(tests);
}

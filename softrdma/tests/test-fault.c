/* SPDX-License-Identifier: MIT */
/* softrdma conformance: every fault kind, the CM faults, and the execution counters. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "harness.h"

static struct h_pair p;
static struct h_opts opts;
static uint8_t buf[2][256];
static struct ibv_mr *mr[2];

static int open_pair(void **state)
{
	void *bufs[2] = { buf[0], buf[1] };

	(void)state;
	h_pair_open_reg(&p, &opts, bufs, sizeof(buf[0]),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, mr);
	return 0;
}

static int close_pair(void **state)
{
	(void)state;
	assert_int_equal(softrdma_fault_remove(0), 0);
	h_pair_close_reg(&p, mr);
	return 0;
}

static int post_write(uint64_t wr_id)
{
	return h_post(p.qp[0], wr_id, IBV_WR_RDMA_WRITE, buf[0], 8, mr[0]->lkey,
		      IBV_SEND_SIGNALED, (uintptr_t)buf[1], mr[1]->rkey);
}

static void test_fault_api(void **state)
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_STATUS, .status = IBV_WC_SUCCESS };

	(void)state;
	assert_int_equal(softrdma_fault_add(&f), -EINVAL);
	f.kind = (enum softrdma_fault_kind)99;
	assert_int_equal(softrdma_fault_add(&f), -EINVAL);
	assert_int_equal(softrdma_fault_remove(12345), -ENOENT);
	assert_int_equal(softrdma_fault_fired(12345), -ENOENT);
	assert_int_equal(softrdma_cm_drop_events((enum rdma_cm_event_type)99, 1), -EINVAL);
}

static void test_status_nth(void **state)
{
	struct softrdma_fault f = {
		.match = { .qp_num = p.qp[0]->qp_num, .opcode_mask = 1U << IBV_WR_RDMA_WRITE,
			   .nth = 2, .count = 1 },
		.kind = SOFTRDMA_FAULT_STATUS, .status = IBV_WC_REM_ACCESS_ERR,
	};
	struct ibv_wc wc[3];
	int id;

	(void)state;
	id = softrdma_fault_add(&f);
	assert_true(id > 0);
	assert_int_equal(post_write(1), 0);
	assert_int_equal(post_write(2), 0);
	assert_int_equal(post_write(3), 0);
	assert_int_equal(h_poll(p.cq[0], wc, 3), 3);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(wc[1].wr_id, 2);
	/* The QP went to ERR as it would on hardware. */
	assert_int_equal(wc[2].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(softrdma_fault_fired(id), 1);
	assert_int_equal(softrdma_fault_remove(id), 0);
	assert_int_equal(softrdma_fault_fired(id), -ENOENT);
}

static void test_opcode_mask_and_qp_filter(void **state)
{
	struct softrdma_fault f = {
		.match = { .qp_num = p.qp[1]->qp_num },
		.kind = SOFTRDMA_FAULT_STATUS, .status = IBV_WC_GENERAL_ERR,
	};
	struct ibv_wc wc;
	int id = softrdma_fault_add(&f);

	(void)state;
	/* Another QP's WRs do not match. */
	assert_int_equal(post_write(1), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(softrdma_fault_fired(id), 0);
}

static void test_forced_rnr(void **state)
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_RNR, .match = { .count = 1 } };
	struct ibv_wc wc;

	(void)state;
	assert_true(softrdma_fault_add(&f) > 0);
	/* A receive is posted, yet the SEND meets RNR; retry 0 gives up at once. */
	assert_int_equal(h_post_recv(p.qp[1], 5, buf[1], 64, mr[1]->lkey), 0);
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_SEND, buf[0], 8, mr[0]->lkey, 0, 0, 0), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
	h_assert_empty(p.cq[1]);
}

static void test_qp_error(void **state)
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_QP_ERROR };
	struct ibv_wc wc;
	struct pollfd pfd = { .fd = p.ctx->async_fd, .events = POLLIN };

	(void)state;
	assert_true(softrdma_fault_add(&f) > 0);
	assert_int_equal(post_write(1), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(buf[1][0], 0);
}

static void test_qp_fatal(void **state)
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_QP_FATAL };
	struct ibv_wc wc;

	(void)state;
	assert_true(softrdma_fault_add(&f) > 0);
	assert_int_equal(post_write(1), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	h_expect_async(p.ctx, IBV_EVENT_QP_FATAL, p.qp[0]);
}

static void test_recv_fault(void **state)
{
	struct softrdma_fault f = { .match = { .recv = 1 }, .kind = SOFTRDMA_FAULT_STATUS,
				    .status = IBV_WC_LOC_PROT_ERR };
	struct ibv_wc wc;

	(void)state;
	assert_true(softrdma_fault_add(&f) > 0);
	assert_int_equal(h_post_recv(p.qp[1], 5, buf[1], 64, mr[1]->lkey), 0);
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_SEND, buf[0], 8, mr[0]->lkey, 0, 0, 0), 0);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_REM_OP_ERR);
}

static void test_qp_set_error(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post_recv(p.qp[1], 5, buf[1], 64, mr[1]->lkey), 0);
	assert_int_equal(softrdma_qp_set_error(p.qp[1], 0), 0);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(softrdma_qp_set_error(p.qp[0], 1), 0);
	h_expect_async(p.ctx, IBV_EVENT_QP_FATAL, p.qp[0]);
}

static void test_executed_counters(void **state)
{
	unsigned long writes = softrdma_executed(IBV_WR_RDMA_WRITE);
	unsigned long sends = softrdma_executed(IBV_WR_SEND);
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(post_write(1), 0);
	assert_int_equal(post_write(2), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_WRITE), writes + 2);
	assert_int_equal(softrdma_executed(IBV_WR_SEND), sends);
	assert_int_equal(softrdma_executed((enum ibv_wr_opcode)1000), 0);
}

static void test_delay(void **state)
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_DELAY, .delay_us = 100000 };
	struct timespec t0, t1;
	struct ibv_wc wc;
	long ms;
	int id;

	(void)state;
	assert_int_equal(softrdma_set_mode(SOFTRDMA_MODE_THREAD), 0);
	id = softrdma_fault_add(&f);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(post_write(1), 0);
	/* However the threads are scheduled, the completion cannot come sooner. */
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_true(ms >= 100);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(softrdma_fault_fired(id), 1);
	assert_int_equal(softrdma_set_mode(SOFTRDMA_MODE_STEP), 0);
}

/* ---- CM faults ------------------------------------------------------------ */

static struct h_conn c;

static int listen_only(void **state)
{
	(void)state;
	h_cm_listen(&c);
	return 0;
}

static int close_conn(void **state)
{
	(void)state;
	assert_int_equal(softrdma_fault_remove(0), 0);
	h_cm_close(&c);
	return 0;
}

static void test_disconnect_fault(void **state)
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_DISCONNECT };
	static char b[64];
	struct ibv_mr *m;
	struct ibv_wc wc;

	(void)state;
	h_cm_connect(&c, NULL, 0);
	m = h_reg(c.client->pd, b, sizeof(b), IBV_ACCESS_LOCAL_WRITE);
	f.match.qp_num = c.client->qp->qp_num;
	assert_true(softrdma_fault_add(&f) > 0);
	assert_int_equal(h_post_recv(c.server->qp, 3, b, 32, m->lkey), 0);
	assert_int_equal(h_post(c.client->qp, 1, IBV_WR_SEND, b, 8, m->lkey, 0, 0, 0), 0);
	assert_int_equal(h_poll(c.client->send_cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	/* The connection is gone: both sides hear it and both QPs flushed. */
	assert_int_equal(h_poll(c.server->recv_cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc.wr_id, 3);
	h_cm_expect(c.cch, RDMA_CM_EVENT_DISCONNECTED);
	h_cm_expect(c.sch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(ibv_dereg_mr(m), 0);
}

static void test_cm_disconnect(void **state)
{
	(void)state;
	h_cm_connect(&c, NULL, 0);
	assert_int_equal(softrdma_cm_disconnect(c.server), 0);
	h_cm_expect(c.sch, RDMA_CM_EVENT_DISCONNECTED);
	h_cm_expect(c.cch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(softrdma_cm_disconnect(c.server), -ENOTCONN);
}

static void test_cm_reject_connects(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(c.port) };
	struct rdma_cm_event *ev;

	(void)state;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(softrdma_cm_reject_connects(1), 0);
	assert_int_equal(rdma_create_id(c.cch, &c.client, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c.client, NULL, (struct sockaddr *)&sin, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(c.client, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_connect(c.client, NULL), 0);
	ev = h_cm_get(c.cch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, SOFTRDMA_REJ_CONSUMER_DEFINED);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	/* Only the next one was refused: after REJECTED the id may connect again. */
	assert_int_equal(rdma_connect(c.client, NULL), 0);
	ev = h_cm_get(c.sch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	c.server = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
}

static void test_cm_drop_events(void **state)
{
	struct pollfd pfd;

	(void)state;
	assert_int_equal(softrdma_cm_drop_events(RDMA_CM_EVENT_DISCONNECTED, 1), 0);
	h_cm_connect(&c, NULL, 0);
	assert_int_equal(rdma_disconnect(c.client), 0);
	/* The server's DISCONNECTED (first to arrive) vanished; the client's did not. */
	h_cm_expect(c.cch, RDMA_CM_EVENT_DISCONNECTED);
	h_settle();
	pfd = (struct pollfd){ .fd = c.sch->fd, .events = POLLIN };
	if (softrdma_get_mode() == SOFTRDMA_MODE_STEP)
		softrdma_progress_all();
	/* Only TIMEWAIT_EXIT is left for the server. */
	assert_int_equal(poll(&pfd, 1, 1000), 1);
	h_cm_expect(c.sch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
}

static int step(void **state)
{
	(void)state;
	h_opts_default(&opts);
	return softrdma_set_mode(SOFTRDMA_MODE_STEP);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, open_pair, close_pair)
#define C(fn) cmocka_unit_test_setup_teardown(fn, listen_only, close_conn)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fault_api),
		T(test_status_nth),
		T(test_opcode_mask_and_qp_filter),
		T(test_forced_rnr),
		T(test_qp_error),
		T(test_qp_fatal),
		T(test_recv_fault),
		T(test_qp_set_error),
		T(test_executed_counters),
		T(test_delay),
		C(test_disconnect_fault),
		C(test_cm_disconnect),
		C(test_cm_reject_connects),
		C(test_cm_drop_events),
	};

	return cmocka_run_group_tests(tests, step, NULL);
}

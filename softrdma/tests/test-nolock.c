/* SPDX-License-Identifier: MIT */
/*
 * Nothing under the fabric lock allocates or writes to a file descriptor:
 * completions, completion events, async events and their wake-ups cost no
 * malloc() and no write() while the lock is held (lockwatch.h counts them).
 * And the events embedded in their objects still count right when raised
 * again before they are read.
 */
#include <poll.h>
#include <string.h>

#include "harness.h"
#include "lockwatch.h"

#define ROUNDS 64
#define MSG 256

struct rig {
	struct h_pair p;
	uint8_t *buf[2];
	struct ibv_mr *mr[2];
};

static void rig_open(struct rig *r)
{
	struct h_opts o;

	h_opts_default(&o);
	o.use_srq = 1;
	h_pair_open_bufs(&r->p, &o, r->buf, 4 * MSG,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
			 r->mr);
}

static void post_srq(struct rig *r, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)r->buf[1], MSG, r->mr[1]->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	assert_int_equal(ibv_post_srq_recv(r->p.srq, &wr, &bad), 0);
}

/* The next completion event of cq's channel, acked; the CQ armed again. */
static void take_cq_event(struct ibv_comp_channel *ch, struct ibv_cq *want)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;

	h_settle();
	assert_int_equal(poll(&pfd, 1, H_TIMEOUT_MS), 1);
	assert_int_equal(ibv_get_cq_event(ch, &cq, &ctx), 0);
	assert_ptr_equal(cq, want);
	ibv_ack_cq_events(cq, 1);
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
}

/*
 * One round: a solicited Send into the SRQ with its limit armed (a
 * completion event on each side, SRQ_LIMIT_REACHED), a Write with
 * immediate, a Read.
 */
static void one_round(struct rig *r)
{
	struct ibv_srq_attr sa = { .srq_limit = 1 };
	struct ibv_wc wc[2];

	post_srq(r, 1);
	assert_int_equal(ibv_modify_srq(r->p.srq, &sa, IBV_SRQ_LIMIT), 0);
	assert_int_equal(h_post(r->p.qp[0], 2, IBV_WR_SEND, r->buf[0], MSG, r->mr[0]->lkey,
				IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, 0, 0), 0);
	take_cq_event(r->p.ch[0], r->p.cq[0]);
	take_cq_event(r->p.ch[1], r->p.cq[1]);
	assert_int_equal(h_poll(r->p.cq[0], wc, 1), 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(h_poll(r->p.cq[1], wc, 1), 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	h_expect_async(r->p.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, r->p.srq);

	post_srq(r, 3);
	assert_int_equal(h_post(r->p.qp[0], 4, IBV_WR_RDMA_WRITE_WITH_IMM, r->buf[0], MSG,
				r->mr[0]->lkey, IBV_SEND_SIGNALED,
				(uintptr_t)r->buf[1] + MSG, r->mr[1]->rkey), 0);
	assert_int_equal(h_post(r->p.qp[0], 5, IBV_WR_RDMA_READ, r->buf[0] + 2 * MSG, MSG,
				r->mr[0]->lkey, IBV_SEND_SIGNALED,
				(uintptr_t)r->buf[1] + MSG, r->mr[1]->rkey), 0);
	take_cq_event(r->p.ch[0], r->p.cq[0]);
	assert_int_equal(h_poll(r->p.cq[0], wc, 2), 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	take_cq_event(r->p.ch[1], r->p.cq[1]);
	assert_int_equal(h_poll(r->p.cq[1], wc, 1), 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
}

static void test_nothing_under_the_lock(void **state)
{
	struct rig r;
	int i;

	(void)state;
	rig_open(&r);
	assert_int_equal(ibv_req_notify_cq(r.p.cq[0], 0), 0);
	assert_int_equal(ibv_req_notify_cq(r.p.cq[1], 0), 0);
	one_round(&r);	/* first uses: lazily made state is made now */
	lockwatch_reset();
	for (i = 0; i < ROUNDS; i++)
		one_round(&r);
	assert_int_equal(lockwatch_count(LW_MALLOC), 0);
	assert_int_equal(lockwatch_count(LW_WRITE), 0);
	assert_memory_equal(r.buf[0] + 2 * MSG, r.buf[0], MSG);
	h_pair_close_bufs(&r.p, r.buf, r.mr);
}

/*
 * A CQ armed again before its event is read raises it again: the channel
 * holds two events of that CQ (the fd stays readable for the second), and
 * destroying the CQ's channel after reading both finds nothing left.
 */
static void test_event_raised_twice(void **state)
{
	struct pollfd pfd;
	struct ibv_cq *cq;
	struct ibv_wc wc;
	struct rig r;
	void *ctx;
	int i;

	(void)state;
	rig_open(&r);
	pfd.fd = r.p.ch[0]->fd;
	pfd.events = POLLIN;
	for (i = 0; i < 2; i++) {
		assert_int_equal(ibv_req_notify_cq(r.p.cq[0], 0), 0);
		assert_int_equal(h_post(r.p.qp[0], (uint64_t)i, IBV_WR_RDMA_WRITE, r.buf[0], 8,
					r.mr[0]->lkey, IBV_SEND_SIGNALED,
					(uintptr_t)r.buf[1], r.mr[1]->rkey), 0);
		h_settle();
		assert_int_equal(h_poll(r.p.cq[0], &wc, 1), 1);
	}
	for (i = 0; i < 2; i++) {
		assert_int_equal(poll(&pfd, 1, H_TIMEOUT_MS), 1);
		assert_int_equal(ibv_get_cq_event(r.p.ch[0], &cq, &ctx), 0);
		assert_ptr_equal(cq, r.p.cq[0]);
	}
	assert_int_equal(poll(&pfd, 1, 0), 0);
	ibv_ack_cq_events(r.p.cq[0], 2);
	h_pair_close_bufs(&r.p, r.buf, r.mr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_under_the_lock),
		cmocka_unit_test(test_event_raised_twice),
	};

	return h_run_all_modes(tests);
}

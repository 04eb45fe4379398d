/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance in THREAD and ASYNC mode: a post to an idle QP runs
 * in the call (THREAD), data delayed past the post is sent as it is when the
 * fabric gets to it (a buffer reused too early), two application
 * threads ping-pong through completion channels while the progress thread
 * runs, two pairs of QPs carry traffic at once while a third thread
 * takes the fabric lock over and over, and a window bound and invalidated
 * over and over is written to through a QP it is not bound to.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

#define ROUNDS 2000

static struct h_pair p;
static struct h_opts opts;

static int open_pair(void **state)
{
	(void)state;
	h_opts_default(&opts);
	opts.rnr_retry = 7;
	h_pair_open(&p, &opts);
	return 0;
}

static int close_pair(void **state)
{
	(void)state;
	assert_int_equal(softrdma_fault_remove(0), 0);
	h_pair_close(&p);
	return 0;
}

static void test_buffer_reused_too_early(void **state)
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_DELAY, .delay_us = 300000 };
	static uint8_t src[64], dst[64];
	struct ibv_mr *smr = h_reg(p.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dmr = h_reg(p.pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE);
	struct ibv_wc wc;

	(void)state;
	assert_true(softrdma_fault_add(&f) > 0);
	memset(src, 'A', sizeof(src));
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_RDMA_WRITE, src, sizeof(src), smr->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)dst, dmr->rkey), 0);
	/* The HCA has not read the buffer yet (for 300 ms): what lands is what is there later. */
	memset(src, 'B', sizeof(src));
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(dst[0], 'B');
	assert_int_equal(dst[63], 'B');
	assert_int_equal(ibv_dereg_mr(smr), 0);
	assert_int_equal(ibv_dereg_mr(dmr), 0);
}

struct peer {
	int side;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;
	struct ibv_mr *mr;
	uint32_t msg[2];	/* [0] receive buffer, [1] send buffer */
	int failed;
};

static int wait_one(struct peer *me, struct ibv_wc *wc)
{
	struct pollfd pfd = { .fd = me->ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;

	for (;;) {
		if (ibv_poll_cq(me->cq, 1, wc) == 1)
			return wc->status == IBV_WC_SUCCESS ? 0 : -1;
		if (ibv_req_notify_cq(me->cq, 0))
			return -1;
		if (ibv_poll_cq(me->cq, 1, wc) == 1)
			return wc->status == IBV_WC_SUCCESS ? 0 : -1;
		if (poll(&pfd, 1, H_TIMEOUT_MS) != 1 || ibv_get_cq_event(me->ch, &cq, &ctx))
			return -1;
		ibv_ack_cq_events(cq, 1);
	}
}

/* Side 0 sends n, side 1 answers n + 1; each checks what it receives. */
static void *ping_pong(void *arg)
{
	struct peer *me = arg;
	struct ibv_wc wc;
	uint32_t i;

	for (i = 0; i < ROUNDS; i++) {
		int got_recv = 0, got_send = 0;

		if (h_post_recv(me->qp, 1, &me->msg[0], 4, me->mr->lkey))
			goto fail;
		if (me->side == 0) {
			me->msg[1] = 2 * i;
			if (h_post(me->qp, 2, IBV_WR_SEND, &me->msg[1], 4, me->mr->lkey,
				   IBV_SEND_SIGNALED, 0, 0))
				goto fail;
		}
		while (!got_recv || (me->side == 0 && !got_send)) {
			if (wait_one(me, &wc))
				goto fail;
			if (wc.opcode == IBV_WC_SEND) {
				got_send = 1;
				continue;
			}
			got_recv = 1;
			if (me->msg[0] != 2 * i + (uint32_t)(me->side == 0))
				goto fail;
		}
		if (me->side == 1) {
			me->msg[1] = 2 * i + 1;
			if (h_post(me->qp, 2, IBV_WR_SEND, &me->msg[1], 4, me->mr->lkey,
				   IBV_SEND_SIGNALED, 0, 0) || wait_one(me, &wc) ||
			    wc.opcode != IBV_WC_SEND)
				goto fail;
		}
	}
	return NULL;
fail:
	me->failed = 1;
	return NULL;
}

static void test_ping_pong_threads(void **state)
{
	struct peer peers[2];
	pthread_t t[2];
	int i;

	(void)state;
	memset(peers, 0, sizeof(peers));
	for (i = 0; i < 2; i++) {
		peers[i].side = i;
		peers[i].qp = p.qp[i];
		peers[i].cq = p.cq[i];
		peers[i].ch = p.ch[i];
		peers[i].mr = h_reg(p.pd, peers[i].msg, sizeof(peers[i].msg),
				    IBV_ACCESS_LOCAL_WRITE);
	}
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, ping_pong, &peers[i]), 0);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 2; i++) {
		assert_int_equal(peers[i].failed, 0);
		assert_int_equal(ibv_dereg_mr(peers[i].mr), 0);
	}
	assert_int_equal(softrdma_executed(IBV_WR_SEND) >= 2 * ROUNDS, 1);
}

/* THREAD: nothing older waits, so the Send runs before ibv_post_send() returns. */
static void test_post_runs_in_call(void **state)
{
	static uint8_t src[64], dst[64];
	struct ibv_mr *smr = h_reg(p.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dmr = h_reg(p.pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_wc wc;

	(void)state;
	memset(src, 'C', sizeof(src));
	assert_int_equal(h_post_recv(p.qp[1], 7, dst, sizeof(dst), dmr->lkey), 0);
	assert_int_equal(h_post(p.qp[0], 8, IBV_WR_SEND, src, sizeof(src), smr->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	/* The post wrote what it read: a later change of the buffer does not show. */
	memset(src, 'D', sizeof(src));
	assert_int_equal(ibv_poll_cq(p.cq[1], 1, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.byte_len, sizeof(src));
	assert_int_equal(dst[0], 'C');
	assert_int_equal(ibv_poll_cq(p.cq[0], 1, &wc), 1);
	assert_int_equal(wc.wr_id, 8);
	assert_int_equal(ibv_dereg_mr(smr), 0);
	assert_int_equal(ibv_dereg_mr(dmr), 0);
}

static void test_mode_switch_under_load(void **state)
{
	static uint8_t src[256], dst[256];
	struct ibv_mr *smr = h_reg(p.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dmr = h_reg(p.pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE);
	enum softrdma_mode mode = softrdma_get_mode();
	struct ibv_wc wc[8];
	int i, got = 0;

	(void)state;
	for (i = 0; i < 8; i++)
		assert_int_equal(h_post(p.qp[0], (uint64_t)i, IBV_WR_RDMA_WRITE, src, 32,
					smr->lkey, IBV_SEND_SIGNALED, (uintptr_t)dst + i * 32,
					dmr->rkey), 0);
	/* Switching to STEP stops the thread between units; nothing is lost. */
	assert_int_equal(softrdma_set_mode(SOFTRDMA_MODE_STEP), 0);
	softrdma_progress_all();
	assert_int_equal(softrdma_set_mode(mode), 0);
	got = h_poll(p.cq[0], wc, 8);
	assert_int_equal(got, 8);
	for (i = 0; i < 8; i++)
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
	assert_int_equal(ibv_dereg_mr(smr), 0);
	assert_int_equal(ibv_dereg_mr(dmr), 0);
}

/* One pair's traffic: a Send and a Write per round, each checked as it completes. */
struct pair_load {
	struct h_pair *pair;
	uint32_t buf[2][2];
	struct ibv_mr *mr[2];
	int failed;
};

/* The next completion of @cq, within the harness's timeout, without cmocka (a thread). */
static int next_wc_status(struct ibv_cq *cq, struct ibv_wc *wc, enum ibv_wc_status want)
{
	time_t deadline = time(NULL) + H_TIMEOUT_MS / 1000 + 1;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0 && time(NULL) <= deadline)
		sched_yield();
	return n == 1 && wc->status == want ? 0 : -1;
}

static int next_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return next_wc_status(cq, wc, IBV_WC_SUCCESS);
}

static void *pair_traffic(void *arg)
{
	struct pair_load *l = arg;
	struct ibv_qp **qp = l->pair->qp;
	struct ibv_cq **cq = l->pair->cq;
	struct ibv_wc wc;
	uint32_t i;

	for (i = 1; i <= ROUNDS; i++) {
		l->buf[0][0] = i;
		l->buf[0][1] = ~i;
		if (h_post_recv(qp[1], i, &l->buf[1][0], 4, l->mr[1]->lkey) ||
		    h_post(qp[0], i, IBV_WR_SEND, &l->buf[0][0], 4, l->mr[0]->lkey,
			   IBV_SEND_SIGNALED, 0, 0) ||
		    next_wc(cq[1], &wc) || wc.wr_id != i || wc.byte_len != 4 ||
		    l->buf[1][0] != i || next_wc(cq[0], &wc) || wc.wr_id != i)
			goto fail;
		if (h_post(qp[0], i, IBV_WR_RDMA_WRITE, &l->buf[0][1], 4, l->mr[0]->lkey,
			   IBV_SEND_SIGNALED, (uintptr_t)&l->buf[1][1], l->mr[1]->rkey) ||
		    next_wc(cq[0], &wc) || wc.opcode != IBV_WC_RDMA_WRITE ||
		    l->buf[1][1] != ~i)
			goto fail;
	}
	return NULL;
fail:
	l->failed = 1;
	return NULL;
}

static int churn_stop;

/* The fabric lock's other users: registrations and queries, as fast as they go. */
static void *churn(void *arg)
{
	struct h_pair *pair = arg;
	static uint8_t scratch[4096];

	while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE)) {
		struct ibv_mr *mr = ibv_reg_mr(pair->pd, scratch, sizeof(scratch),
					       IBV_ACCESS_LOCAL_WRITE);
		struct ibv_qp_init_attr init;
		struct ibv_qp_attr attr;

		if (mr)
			ibv_dereg_mr(mr);
		ibv_query_qp(pair->qp[0], &attr, IBV_QP_STATE, &init);
		/*
		 * Under valgrind, which runs one thread at a time, a loop that
		 * never blocks keeps the others from running for seconds.
		 */
		sched_yield();
	}
	return NULL;
}

/*
 * Two pairs, one thread each, post and poll at once (in THREAD mode their
 * Sends and Writes run without the fabric lock, fast.c) while a third thread
 * takes the fabric lock over and over: every byte and completion arrives.
 */
static void test_two_pairs_at_once(void **state)
{
	static struct pair_load load[2];
	struct h_pair q;
	pthread_t t[2], churner;
	int i, j;

	(void)state;
	h_pair_open(&q, &opts);
	memset(load, 0, sizeof(load));
	load[0].pair = &p;
	load[1].pair = &q;
	for (i = 0; i < 2; i++)
		for (j = 0; j < 2; j++)
			load[i].mr[j] = h_reg(load[i].pair->pd, load[i].buf[j],
					      sizeof(load[i].buf[j]),
					      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	__atomic_store_n(&churn_stop, 0, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&churner, NULL, churn, &q), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, pair_traffic, &load[i]), 0);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELEASE);
	pthread_join(churner, NULL);
	for (i = 0; i < 2; i++) {
		assert_int_equal(load[i].failed, 0);
		for (j = 0; j < 2; j++)
			assert_int_equal(ibv_dereg_mr(load[i].mr[j]), 0);
	}
	h_pair_close(&q);
}

/* A window bound, used and invalidated by remote invalidation, over and over, on p. */
struct window_load {
	struct ibv_mw *mw;
	uint32_t rkey;			/* atomic: the key bound last */
	uint8_t buf[2][64];
	struct ibv_mr *mr[2];
	int stop;			/* atomic */
	int failed;
	unsigned int bad_writes;	/* atomic */
};

static int window_round(struct window_load *l, uint32_t i)
{
	struct ibv_send_wr wr = { .wr_id = i, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED };
	uint32_t rkey = ibv_inc_rkey(l->mw->rkey);
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr.bind_mw.mw = l->mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ l->mr[0], (uintptr_t)l->buf[0], 64,
							  IBV_ACCESS_REMOTE_WRITE };
	if (ibv_post_send(p.qp[0], &wr, &bad) || next_wc(p.cq[0], &wc))
		return -1;
	__atomic_store_n(&l->rkey, rkey, __ATOMIC_RELEASE);
	l->buf[1][0] = (uint8_t)i;
	if (h_post(p.qp[1], i, IBV_WR_RDMA_WRITE, l->buf[1], 8, l->mr[1]->lkey,
		   IBV_SEND_SIGNALED, (uintptr_t)l->buf[0], rkey) ||
	    next_wc(p.cq[1], &wc) || l->buf[0][0] != (uint8_t)i ||
	    h_post_recv(p.qp[0], i, l->buf[0] + 32, 8, l->mr[0]->lkey) ||
	    h_post(p.qp[1], i, IBV_WR_SEND_WITH_INV, l->buf[1], 8, l->mr[1]->lkey,
		   IBV_SEND_SIGNALED, 0, rkey) ||
	    next_wc(p.cq[0], &wc) || !(wc.wc_flags & IBV_WC_WITH_INV) || next_wc(p.cq[1], &wc))
		return -1;
	return 0;
}

static void *window_churn(void *arg)
{
	struct window_load *l = arg;
	uint32_t i;

	/*
	 * Not before the other thread's first Write: under valgrind, which runs
	 * one thread at a time, this one could otherwise finish alone.
	 */
	while (!__atomic_load_n(&l->bad_writes, __ATOMIC_ACQUIRE))
		sched_yield();
	for (i = 1; i <= ROUNDS / 4; i++)
		if (window_round(l, i)) {
			l->failed = 1;
			break;
		}
	__atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* @q back to RTS after an error, with a transmit that finds its responder. */
static int pair_again(struct h_pair *q)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;
	int i;

	for (i = 0; i < 2; i++)
		if (ibv_modify_qp(q->qp[i], &reset, IBV_QP_STATE))
			return -1;
	while (ibv_poll_cq(q->cq[0], 1, &wc) > 0 || ibv_poll_cq(q->cq[1], 1, &wc) > 0)
		;
	for (i = 0; i < 2; i++)
		h_qp_to_rts(q->qp[i], q->qp[1 - i]->qp_num, &opts);
	return h_post(q->qp[1], 0, IBV_WR_RDMA_WRITE, NULL, 0, 0, IBV_SEND_SIGNALED, 0, 0) ||
	       next_wc(q->cq[1], &wc) ? -1 : 0;
}

/*
 * One thread binds a window on p, writes through it and invalidates it
 * remotely, over and over (in THREAD mode all on the fast path); another
 * writes with the window's current key through another pair, q, whose
 * responder the window is not bound to: each of those Writes fails with a
 * remote access error, whatever the window was doing, and the first
 * thread's traffic is untouched. Under TSan, the rules of struct soft_mw.
 */
static void test_window_races(void **state)
{
	static struct window_load l;
	struct h_pair q;
	uint8_t *qbuf[2];
	struct ibv_mr *qmr[2];
	pthread_t t;
	struct ibv_wc wc;
	int i;

	(void)state;
	memset(&l, 0, sizeof(l));
	l.mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
	assert_non_null(l.mw);
	l.rkey = l.mw->rkey;
	for (i = 0; i < 2; i++)
		l.mr[i] = h_reg(p.pd, l.buf[i], sizeof(l.buf[i]),
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	h_pair_open_bufs(&q, &opts, qbuf, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			 qmr);
	/* p's first transmits, which find their responders. */
	for (i = 0; i < 2; i++) {
		assert_int_equal(h_post(p.qp[i], 0, IBV_WR_RDMA_WRITE, NULL, 0, 0,
					IBV_SEND_SIGNALED, 0, 0), 0);
		assert_int_equal(next_wc(p.cq[i], &wc), 0);
	}
	assert_int_equal(pthread_create(&t, NULL, window_churn, &l), 0);
	while (!__atomic_load_n(&l.stop, __ATOMIC_ACQUIRE) && l.bad_writes < ROUNDS) {
		uint32_t rkey = __atomic_load_n(&l.rkey, __ATOMIC_ACQUIRE);

		assert_int_equal(pair_again(&q), 0);
		assert_int_equal(h_post(q.qp[1], 1, IBV_WR_RDMA_WRITE, qbuf[1], 8, qmr[1]->lkey,
					IBV_SEND_SIGNALED, (uintptr_t)l.buf[0], rkey), 0);
		assert_int_equal(next_wc_status(q.cq[1], &wc, IBV_WC_REM_ACCESS_ERR), 0);
		__atomic_add_fetch(&l.bad_writes, 1, __ATOMIC_RELEASE);
	}
	pthread_join(t, NULL);
	assert_int_equal(l.failed, 0);
	h_pair_close_bufs(&q, qbuf, qmr);
	for (i = 0; i < 2; i++)
		assert_int_equal(ibv_dereg_mr(l.mr[i]), 0);
	assert_int_equal(ibv_dealloc_mw(l.mw), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, open_pair, close_pair)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_buffer_reused_too_early),
		T(test_ping_pong_threads),
		T(test_mode_switch_under_load),
		T(test_two_pairs_at_once),
		T(test_window_races),
	};
	const struct CMUnitTest thread_only[] = {
		T(test_post_runs_in_call),
	};
	int failed = 0;

	failed += cmocka_run_group_tests_name("thread", tests, h_group_thread, NULL);
	failed += cmocka_run_group_tests_name("async", tests, h_group_async, NULL);
	failed += cmocka_run_group_tests_name("thread-only", thread_only, h_group_thread, NULL);
	return failed;
}

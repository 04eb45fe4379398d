/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance: a silent peer (softrdma_qp_silence). Its QP stops
 * answering while its connection stays up; the requester retries on its
 * local ACK timer, retry_cnt times, completes the WR with RETRY_EXC_ERR
 * no sooner than (retry_cnt + 1) timeouts, moves to ERR and flushes the
 * rest, and the silent side executes nothing. In STEP, THREAD and ASYNC
 * mode; nothing is left behind (softrdma_get_counts()).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "harness.h"

/* timeout 12: 4.096 us * 2^12 = 16.78 ms per try. */
#define ACK_TIMEOUT	12
#define ACK_TIMEOUT_US	16777
#define RETRIES		3
/* However loaded the machine (valgrind included), the error comes well within this. */
#define BOUND_MS	3000

static struct h_pair p;
static struct h_opts opts;
static uint8_t buf[2][256];
static struct ibv_mr *mr[2];
static struct softrdma_counts baseline;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static bool timed(void)
{
	return softrdma_get_mode() != SOFTRDMA_MODE_STEP;
}

static void open_pair_with(uint8_t timeout, uint8_t retry_cnt)
{
	void *bufs[2] = { buf[0], buf[1] };

	softrdma_get_counts(&baseline);
	memset(buf, 0, sizeof(buf));
	h_opts_default(&opts);
	opts.timeout = timeout;
	opts.retry_cnt = retry_cnt;
	h_pair_open_reg(&p, &opts, bufs, sizeof(buf[0]), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, mr);
}

static int open_pair(void **state)
{
	(void)state;
	open_pair_with(ACK_TIMEOUT, RETRIES);
	return 0;
}

/*
 * test_unsilence must lift the silence before the requester gives up: 7
 * retries at timeout 14 leave the test thread half a second, loaded or not.
 */
static int open_pair_patient(void **state)
{
	(void)state;
	open_pair_with(14, 7);
	return 0;
}

static int close_pair(void **state)
{
	struct softrdma_counts now;

	(void)state;
	h_pair_close_reg(&p, mr);
	softrdma_get_counts(&now);
	assert_memory_equal(&now, &baseline, sizeof(now));
	return 0;
}

static void assert_wc(const struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_status status)
{
	assert_int_equal(wc->wr_id, wr_id);
	assert_string_equal(ibv_wc_status_str(wc->status), ibv_wc_status_str(status));
}

static void test_silence_api(void **state)
{
	struct ibv_qp fake;

	(void)state;
	memset(&fake, 0, sizeof(fake));
	fake.qp_num = p.qp[1]->qp_num;
	assert_int_equal(softrdma_qp_silence(NULL, 1), -EINVAL);
	assert_int_equal(softrdma_qp_silence(p.qp[1], 2), -EINVAL);
	assert_int_equal(softrdma_qp_silence(p.qp[1], -1), -EINVAL);
	/* A QP number alone is not a QP: the struct must be the fabric's own. */
	assert_int_equal(softrdma_qp_silence(&fake, 1), -EINVAL);
	assert_int_equal(softrdma_qp_ignored(NULL), 0);
	assert_int_equal(softrdma_qp_silence(p.qp[1], 0), 0);
	assert_int_equal(softrdma_qp_silence(p.qp[1], 1), 0);
	assert_int_equal(softrdma_qp_silence(p.qp[1], 1), 0);
	assert_int_equal(softrdma_qp_ignored(p.qp[1]), 0);
}

/*
 * In STEP mode the tries are units: retry_cnt + 1 of them, and one more
 * for the last try's timer. Elsewhere, wait (boundedly) for the three.
 */
static void collect(struct ibv_wc *wc, int n)
{
	if (!timed()) {
		assert_int_equal(softrdma_progress(RETRIES + 1), RETRIES + 1);
		assert_int_equal(ibv_poll_cq(p.cq[0], 1, wc), 0);
		assert_int_equal(softrdma_progress(1), 1);
		assert_int_equal(ibv_poll_cq(p.cq[0], n, wc), n);
		return;
	}
	assert_int_equal(h_poll(p.cq[0], wc, n), n);
}

/* A Write, a Send and a Write to a silent QP: RETRY_EXC_ERR, then flushes. */
static void test_silent_retry_exc(void **state)
{
	struct ibv_wc wc[3];
	uint64_t start, took;

	(void)state;
	assert_int_equal(h_post_recv(p.qp[1], 9, buf[1] + 128, 64, mr[1]->lkey), 0);
	assert_int_equal(softrdma_qp_silence(p.qp[1], 1), 0);
	memset(buf[0], 'x', 16);
	start = now_us();
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_RDMA_WRITE, buf[0], 16, mr[0]->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)buf[1], mr[1]->rkey), 0);
	assert_int_equal(h_post(p.qp[0], 2, IBV_WR_SEND, buf[0], 8, mr[0]->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(h_post(p.qp[0], 3, IBV_WR_RDMA_WRITE, buf[0], 16, mr[0]->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)buf[1], mr[1]->rkey), 0);
	collect(wc, 3);
	took = now_us() - start;
	assert_wc(&wc[0], 1, IBV_WC_RETRY_EXC_ERR);
	assert_wc(&wc[1], 2, IBV_WC_WR_FLUSH_ERR);
	assert_wc(&wc[2], 3, IBV_WC_WR_FLUSH_ERR);
	if (timed()) {
		assert_true(took >= (RETRIES + 1) * ACK_TIMEOUT_US);
		assert_true(took < BOUND_MS * 1000);
	}
	/* Every try reached the silent QP, which ran none of them. */
	assert_int_equal(softrdma_qp_ignored(p.qp[1]), RETRIES + 1);
	assert_int_equal(h_qp_state(p.qp[0]), IBV_QPS_ERR);
	assert_int_equal(h_qp_state(p.qp[1]), IBV_QPS_RTS);
	assert_int_equal(buf[1][0], 0);
	h_assert_empty(p.cq[1]);
	/* The flush of the requester's receive side is its own; the peer's receive stays. */
	assert_int_equal(softrdma_qp_silence(p.qp[1], 0), 0);
	assert_int_equal(softrdma_qp_set_error(p.qp[1], 0), 0);
	assert_int_equal(h_poll(p.cq[1], wc, 1), 1);
	assert_wc(&wc[0], 9, IBV_WC_WR_FLUSH_ERR);
}

/* An RDMA Read flies on its own unit; its tries and their timers are the same. */
static void test_silent_read(void **state)
{
	struct ibv_wc wc[2];
	uint64_t start, took;

	(void)state;
	memset(buf[1], 'r', 32);
	assert_int_equal(softrdma_qp_silence(p.qp[1], 1), 0);
	start = now_us();
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_RDMA_READ, buf[0], 32, mr[0]->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)buf[1], mr[1]->rkey), 0);
	/* Fenced: it waits for the Read, and flushes behind it. */
	assert_int_equal(h_post(p.qp[0], 2, IBV_WR_RDMA_WRITE, buf[0], 8, mr[0]->lkey,
				IBV_SEND_SIGNALED | IBV_SEND_FENCE, (uintptr_t)buf[1],
				mr[1]->rkey), 0);
	assert_int_equal(h_poll(p.cq[0], wc, 2), 2);
	took = now_us() - start;
	assert_wc(&wc[0], 1, IBV_WC_RETRY_EXC_ERR);
	assert_wc(&wc[1], 2, IBV_WC_WR_FLUSH_ERR);
	if (timed()) {
		assert_true(took >= (RETRIES + 1) * ACK_TIMEOUT_US);
		assert_true(took < BOUND_MS * 1000);
	}
	assert_int_equal(softrdma_qp_ignored(p.qp[1]), RETRIES + 1);
	assert_int_equal(buf[0][0], 0);
}

static void wait_ignored(struct ibv_qp *qp, unsigned long n)
{
	uint64_t deadline = now_us() + BOUND_MS * 1000ULL;

	while (softrdma_qp_ignored(qp) < n) {
		assert_true(now_us() < deadline);
		if (!timed())
			softrdma_progress(1);
		else
			poll(NULL, 0, 1);
	}
}

/*
 * Silence lifted while the requester still retries: the next try is
 * answered, the Send completes and lands, and the QPs stay connected.
 */
static void test_unsilence(void **state)
{
	struct ibv_wc wc;

	(void)state;
	assert_int_equal(h_post_recv(p.qp[1], 9, buf[1], 64, mr[1]->lkey), 0);
	assert_int_equal(softrdma_qp_silence(p.qp[1], 1), 0);
	strcpy((char *)buf[0], "hello");
	assert_int_equal(h_post(p.qp[0], 1, IBV_WR_SEND, buf[0], 6, mr[0]->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	wait_ignored(p.qp[1], 1);
	assert_int_equal(softrdma_qp_silence(p.qp[1], 0), 0);
	assert_int_equal(h_poll(p.cq[0], &wc, 1), 1);
	assert_wc(&wc, 1, IBV_WC_SUCCESS);
	assert_int_equal(h_poll(p.cq[1], &wc, 1), 1);
	assert_wc(&wc, 9, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 6);
	assert_string_equal((char *)buf[1], "hello");
	assert_int_equal(softrdma_qp_ignored(p.qp[1]), 1);
	assert_int_equal(h_qp_state(p.qp[0]), IBV_QPS_RTS);
}

/* ---- over rdma_cm: no event tells of the silence -------------------------- */

static struct h_conn c;

static int open_conn(void **state)
{
	(void)state;
	softrdma_get_counts(&baseline);
	h_cm_listen(&c);
	h_cm_connect(&c, NULL, 0);
	return 0;
}

static int close_conn(void **state)
{
	struct softrdma_counts now;

	(void)state;
	h_cm_close(&c);
	softrdma_get_counts(&now);
	/* rdma_cm opens its device context at the first id, for the life of the process. */
	assert_true(now.contexts <= baseline.contexts + 1);
	now.contexts = baseline.contexts;
	assert_memory_equal(&now, &baseline, sizeof(now));
	return 0;
}

static void assert_no_cm_event(struct rdma_event_channel *ch)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

	h_settle();
	assert_int_equal(poll(&pfd, 1, timed() ? 100 : 0), 0);
}

/*
 * The server's QP goes silent: the client's Send exhausts the retry_count
 * of its REQ (3, at rdma_cm's ACK timeout 14, 67 ms a try) and fails;
 * neither side gets DISCONNECTED or any other CM event.
 */
static void test_silent_connection(void **state)
{
	static uint8_t b[64];
	struct ibv_mr *m;
	struct ibv_wc wc;
	uint64_t start;

	(void)state;
	m = h_reg(c.client->pd, b, sizeof(b), IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(softrdma_qp_silence(c.server->qp, 1), 0);
	start = now_us();
	assert_int_equal(h_post(c.client->qp, 1, IBV_WR_SEND, b, 8, m->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(h_poll(c.client->send_cq, &wc, 1), 1);
	assert_wc(&wc, 1, IBV_WC_RETRY_EXC_ERR);
	if (timed())
		assert_true(now_us() - start >= 4 * 67108);
	assert_int_equal(softrdma_qp_ignored(c.server->qp), 4);
	assert_no_cm_event(c.cch);
	assert_no_cm_event(c.sch);
	assert_int_equal(h_qp_state(c.server->qp), IBV_QPS_RTS);
	assert_int_equal(ibv_dereg_mr(m), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_silence_api, open_pair, close_pair),
		cmocka_unit_test_setup_teardown(test_silent_retry_exc, open_pair, close_pair),
		cmocka_unit_test_setup_teardown(test_silent_read, open_pair, close_pair),
		cmocka_unit_test_setup_teardown(test_unsilence, open_pair_patient, close_pair),
		cmocka_unit_test_setup_teardown(test_silent_connection, open_conn, close_conn),
	};

	return h_run_all_modes(tests);
}

/* SPDX-License-Identifier: MIT */
/*
 * Calls answered from worker threads (RPCRDMA_SVC_WORKERS): the poller
 * hands calls to a pool of workers, which answer them with the reply
 * functions from their own threads. A call a worker holds (a READ blocked
 * in the file system) does not hold the others: they complete while it
 * waits. Run under TSan in CI.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "svc_rdma.h"

#define WORKERS 4
#define QUEUE 256
#define SLOW_SEED 0x510e

/* The poller's queue of calls for the workers. */
struct pool {
	struct rpcrdma_svc *svc;
	pthread_t poller;
	pthread_t workers[WORKERS];
	atomic_bool stop;
	atomic_bool pause;		/* the poller thread sleeps without polling */
	pthread_mutex_t lock;
	pthread_cond_t cv;
	struct rpcrdma_svc_call *queue[QUEUE];
	unsigned int head, count;
	bool release_slow;		/* lock */
	atomic_bool slow_held;
	atomic_uint answered;
	atomic_int errors;
};

static void pool_on_call(struct rpcrdma_svc_call *call, void *arg)
{
	struct pool *p = arg;

	pthread_mutex_lock(&p->lock);
	if (p->count < QUEUE) {
		p->queue[(p->head + p->count++) % QUEUE] = call;
		call = NULL;
		pthread_cond_broadcast(&p->cv);	/* the held worker waits on it too */
	}
	pthread_mutex_unlock(&p->lock);
	if (call)
		rpcrdma_svc_call_drop(call);	/* cannot happen: credits bound the calls */
}

/* Answer with the call's echo, by copy or encoded in place, by turns. */
static int answer(struct rpcrdma_svc_call *call, const void *msg, size_t len, unsigned int turn)
{
	void *buf;
	size_t max;
	int rc;

	if (turn % 2 == 0)
		return rpcmsg_svc_echo(call);
	rc = rpcrdma_svc_reply_buf(call, &buf, &max);
	if (rc || max < len) {
		rpcrdma_svc_call_drop(call);
		return rc ? rc : -EMSGSIZE;
	}
	memcpy(buf, msg, len);
	rpcmsg_echo(buf, len);
	return rpcrdma_svc_reply_commit(call, len);
}

static void *worker_main(void *arg)
{
	struct pool *p = arg;
	unsigned int turn = 0;

	for (;;) {
		struct rpcrdma_svc_call *call;
		const void *msg;
		size_t len;

		pthread_mutex_lock(&p->lock);
		while (!p->count && !atomic_load(&p->stop))
			pthread_cond_wait(&p->cv, &p->lock);
		if (!p->count) {
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		call = p->queue[p->head];
		p->head = (p->head + 1) % QUEUE;
		p->count--;
		pthread_mutex_unlock(&p->lock);

		msg = rpcrdma_svc_call_msg(call, &len);
		if (harness_caller_seed(msg, len) == SLOW_SEED) {
			/* Blocked in the file system, as it were, until the test lets go. */
			atomic_store(&p->slow_held, true);
			pthread_mutex_lock(&p->lock);
			while (!p->release_slow)
				pthread_cond_wait(&p->cv, &p->lock);
			pthread_mutex_unlock(&p->lock);
		}
		if (answer(call, msg, len, turn++))
			atomic_fetch_add(&p->errors, 1);
		atomic_fetch_add(&p->answered, 1);
	}
}

static void *poller_main(void *arg)
{
	struct pool *p = arg;

	while (!atomic_load(&p->stop))
		if (atomic_load(&p->pause))
			poll(NULL, 0, 5);
		else
			rpcrdma_svc_wait(p->svc, 20);
	return NULL;
}

static void pool_start(struct pool *p)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rpcrdma_svc_attr attr = { RPCRDMA_SIZED(attr) };
	unsigned int i;

	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cv, NULL);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	attr.addr = (struct sockaddr *)&sin;
	attr.on_call = pool_on_call;
	attr.arg = p;
	attr.flags = RPCRDMA_SVC_WORKERS;
	assert_int_equal(rpcrdma_svc_listen(&attr, &p->svc), 0);
	assert_int_equal(pthread_create(&p->poller, NULL, poller_main, p), 0);
	for (i = 0; i < WORKERS; i++)
		assert_int_equal(pthread_create(&p->workers[i], NULL, worker_main, p), 0);
}

static void pool_stop(struct pool *p)
{
	unsigned int i;

	pthread_mutex_lock(&p->lock);
	atomic_store(&p->stop, true);
	p->release_slow = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < WORKERS; i++)
		pthread_join(p->workers[i], NULL);
	pthread_join(p->poller, NULL);
	rpcrdma_svc_destroy(p->svc);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->lock);
}

struct answered_wait {
	struct pool *p;
	unsigned int want;
};

/* A worker counts its answer after the reply went: the client may see it first. */
static bool answered_reach(void *arg)
{
	struct answered_wait *w = arg;

	return atomic_load(&w->p->answered) >= w->want;
}

static void wait_answered(struct pool *p, unsigned int want)
{
	struct answered_wait w = { p, want };

	assert_true(harness_wait_for(answered_reach, &w, 5000));
}

static bool slow_held(void *arg)
{
	return atomic_load(&((struct pool *)arg)->slow_held);
}

/* One worker holds a call; another client's calls complete meanwhile. */
static void t_slow_call_holds_no_other(void **state)
{
	struct harness_caller slow = { .seed = SLOW_SEED, .calls = 1 }, fast = { .seed = 3, .calls = 100 };
	pthread_t slow_thread;
	struct pool p;

	(void)state;
	harness_require_inproc("the server's workers are threads of the test");
	pool_start(&p);
	slow.clnt = harness_connect_to(p.svc);
	fast.clnt = harness_connect_to(p.svc);
	assert_int_equal(pthread_create(&slow_thread, NULL, harness_caller_run, &slow), 0);
	assert_true(harness_wait_for(slow_held, &p, 5000));
	harness_caller_run(&fast);
	assert_int_equal(fast.failures, 0);
	assert_false(atomic_load(&slow.done));
	pthread_mutex_lock(&p.lock);
	p.release_slow = true;
	pthread_cond_broadcast(&p.cv);
	pthread_mutex_unlock(&p.lock);
	pthread_join(slow_thread, NULL);
	assert_int_equal(slow.failures, 0);
	wait_answered(&p, 101);
	assert_int_equal(atomic_load(&p.errors), 0);
	assert_int_equal(atomic_load(&p.answered), 101);
	rpcrdma_clnt_destroy(slow.clnt);
	rpcrdma_clnt_destroy(fast.clnt);
	pool_stop(&p);
	harness_assert_fabric_idle();
}

/* Four clients on their own threads, four workers answering them. */
static void t_many_workers(void **state)
{
	struct harness_caller c[4];
	pthread_t t[4];
	struct pool p;
	unsigned int i;

	(void)state;
	harness_require_inproc("the server's workers are threads of the test");
	pool_start(&p);
	for (i = 0; i < 4; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].clnt = harness_connect_to(p.svc);
		c[i].seed = i + 10;
		c[i].calls = 200;
		assert_int_equal(pthread_create(&t[i], NULL, harness_caller_run, &c[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(c[i].failures, 0);
		rpcrdma_clnt_destroy(c[i].clnt);
	}
	wait_answered(&p, 800);
	assert_int_equal(atomic_load(&p.answered), 800);
	assert_int_equal(atomic_load(&p.errors), 0);
	pool_stop(&p);
	harness_assert_fabric_idle();
}

/*
 * The poller's wake-up counter saturated (as after 2^64 - 2 wake-ups nobody
 * read): a worker's reply is still queued, not refused, and goes out when
 * the poller next runs.
 */
static void t_saturated_wakeup(void **state)
{
	struct harness_caller slow = { .seed = SLOW_SEED, .calls = 1 };
	uint64_t most = UINT64_MAX - 1;
	pthread_t slow_thread;
	struct pool p;

	(void)state;
	harness_require_inproc("the server's workers are threads of the test");
	pool_start(&p);
	slow.clnt = harness_connect_to(p.svc);
	assert_int_equal(pthread_create(&slow_thread, NULL, harness_caller_run, &slow), 0);
	assert_true(harness_wait_for(slow_held, &p, 5000));
	atomic_store(&p.pause, true);
	poll(NULL, 0, 50);	/* out of its wait */
	assert_int_equal(write(p.svc->sv_pollers[0].wake_fd, &most, sizeof(most)), sizeof(most));
	pthread_mutex_lock(&p.lock);
	p.release_slow = true;
	pthread_cond_broadcast(&p.cv);
	pthread_mutex_unlock(&p.lock);
	/* The worker is queued on the paused poller: its reply waits for it. */
	poll(NULL, 0, 50);
	assert_int_equal(atomic_load(&p.answered), 0);
	atomic_store(&p.pause, false);
	pthread_join(slow_thread, NULL);
	assert_int_equal(slow.failures, 0);
	wait_answered(&p, 1);
	assert_int_equal(atomic_load(&p.errors), 0);
	rpcrdma_clnt_destroy(slow.clnt);
	pool_stop(&p);
	harness_assert_fabric_idle();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_slow_call_holds_no_other),
		cmocka_unit_test(t_many_workers),
		cmocka_unit_test(t_saturated_wakeup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

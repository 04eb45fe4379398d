/* SPDX-License-Identifier: MIT */
/*
 * Several pollers (rpcrdma_svc_attr.pollers): connections are spread over
 * the poller threads, round robin, and each connection's callbacks run on
 * its own poller's thread; a poller held in a callback does not hold the
 * connections of the others; worker replies reach the right poller. Run
 * under TSan in CI.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define POLLERS 2
#define CLIENTS 6
#define CALLS 100
#define HOLD_SEED 0x401d

struct multi {
	struct rpcrdma_svc *svc;
	pthread_t threads[POLLERS];
	atomic_bool stop;
	pthread_mutex_t lock;
	pthread_t call_threads[POLLERS];	/* lock: the threads calls ran on */
	unsigned int nthreads;
	atomic_uint calls;
	atomic_bool hold;			/* a HOLD_SEED call waits while set */
	atomic_bool holding;
	bool workers;				/* answer from a worker thread */
	unsigned char *region;			/* with it: replies name payloads there */
	atomic_uint next_slot;
};

/* Payload slots in the shared region: more than the calls in flight at once. */
#define SLOTS 512
#define SLOT_BYTES 256

struct poller_arg {
	struct multi *m;
	unsigned int i;
};

static void note_thread(struct multi *m)
{
	pthread_t self = pthread_self();
	unsigned int i;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->nthreads && !pthread_equal(m->call_threads[i], self); i++)
		;
	if (i == m->nthreads && m->nthreads < POLLERS)
		m->call_threads[m->nthreads++] = self;
	pthread_mutex_unlock(&m->lock);
}

static void *answer_later(void *arg)
{
	rpcmsg_svc_echo(arg);
	return NULL;
}

static void multi_on_call(struct rpcrdma_svc_call *call, void *arg)
{
	struct multi *m = arg;
	size_t len;
	const unsigned char *msg = rpcrdma_svc_call_msg(call, &len);

	note_thread(m);
	atomic_fetch_add(&m->calls, 1);
	if (harness_caller_seed(msg, len) == HOLD_SEED) {
		/* This poller is stuck in the file system, as it were. */
		atomic_store(&m->holding, true);
		while (atomic_load(&m->hold))
			poll(NULL, 0, 1);
	}
	if (m->region) {
		/* The echo's bytes after its head from the shared region, named, not copied. */
		unsigned char *slot = m->region + (atomic_fetch_add(&m->next_slot, 1) % SLOTS) *
							  SLOT_BYTES;
		unsigned char head[RPCMSG_HEAD];

		rpcmsg_reply_head(head, rpcmsg_word(msg, 0));
		memcpy(slot, msg + RPCMSG_HEAD, len - RPCMSG_HEAD);
		if (rpcrdma_svc_reply_payload(call, RPCMSG_HEAD, slot, len - RPCMSG_HEAD, NULL,
					      NULL) == 0)
			rpcrdma_svc_reply(call, head, sizeof(head));
		return;
	}
	if (m->workers) {
		pthread_t t;

		if (pthread_create(&t, NULL, answer_later, call) == 0) {
			pthread_detach(t);
			return;
		}
	}
	rpcmsg_svc_echo(call);
}

static void *poller_main(void *arg)
{
	struct poller_arg *pa = arg;

	while (!atomic_load(&pa->m->stop))
		rpcrdma_svc_poller_wait(pa->m->svc, pa->i, 20);
	return NULL;
}

static struct poller_arg args[POLLERS];

static void multi_start(struct multi *m, bool workers)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rpcrdma_svc_attr attr = { RPCRDMA_SIZED(attr) };
	unsigned int i;

	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
	m->workers = workers;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	attr.addr = (struct sockaddr *)&sin;
	attr.on_call = multi_on_call;
	attr.arg = m;
	attr.pollers = POLLERS;
	attr.flags = workers ? RPCRDMA_SVC_WORKERS : 0;
	assert_int_equal(rpcrdma_svc_listen(&attr, &m->svc), 0);
	for (i = 0; i < POLLERS; i++) {
		args[i].m = m;
		args[i].i = i;
		assert_int_equal(pthread_create(&m->threads[i], NULL, poller_main, &args[i]), 0);
	}
}

static void multi_stop_pollers(struct multi *m)
{
	unsigned int i;

	atomic_store(&m->stop, true);
	for (i = 0; i < POLLERS; i++)
		pthread_join(m->threads[i], NULL);
}

static void multi_destroy(struct multi *m)
{
	rpcrdma_svc_destroy(m->svc);
	pthread_mutex_destroy(&m->lock);
}

static void multi_stop(struct multi *m)
{
	multi_stop_pollers(m);
	multi_destroy(m);
}

static void run_clients(struct multi *m)
{
	struct harness_caller c[CLIENTS];
	pthread_t t[CLIENTS];
	unsigned int i;

	for (i = 0; i < CLIENTS; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].clnt = harness_connect_to(m->svc);
		c[i].seed = i + 1;
		c[i].calls = CALLS;
		assert_int_equal(pthread_create(&t[i], NULL, harness_caller_run, &c[i]), 0);
	}
	for (i = 0; i < CLIENTS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(c[i].failures, 0);
		rpcrdma_clnt_destroy(c[i].clnt);
	}
}

struct churn {
	struct rpcrdma_svc *svc;
	atomic_bool stop;
	atomic_uint rounds;
	int errors;
};

/* Register and deregister a region of its own, again and again. */
static void *churn_run(void *arg)
{
	static unsigned char other[4096];
	struct churn *c = arg;
	struct rpcrdma_mem *mem;

	while (!atomic_load(&c->stop)) {
		if (rpcrdma_svc_mem_register(c->svc, other, sizeof(other), &mem) ||
		    rpcrdma_mem_deregister(mem))
			c->errors++;
		atomic_fetch_add(&c->rounds, 1);
	}
	return NULL;
}

/*
 * Calls of 16 + 4k bytes, echoed: what follows the head, 4 + 4k bytes, is a
 * named payload, which goes with its XDR padding.
 */
static void *aligned_caller(void *arg)
{
	struct harness_caller *c = arg;
	unsigned char msg[SLOT_BYTES], reply[SLOT_BYTES];
	unsigned int i;

	for (i = 0; i < c->calls; i++) {
		size_t len = RPCMSG_HEAD + 4 + 4 * ((i * 7) % ((SLOT_BYTES - RPCMSG_HEAD - 4) / 4));
		size_t rlen = sizeof(reply);

		harness_fill_msg(msg, len, c->seed * 1000 + i + 1, c->seed);
		if (rpcrdma_clnt_call(c->clnt, msg, len, reply, &rlen, 0) || rlen != len ||
		    !rpcmsg_echoes(reply, msg, len))
			c->failures++;
	}
	return NULL;
}

/*
 * Two pollers send replies whose payloads they find in a region the
 * application registered, while another thread registers and deregisters
 * regions: the server's list of regions and their user counts are shared
 * by the pollers and the application (TSan checks the locking in CI).
 */
static void t_regions_shared_by_pollers(void **state)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	struct harness_caller c[4];
	struct churn churn = { 0 };
	struct rpcrdma_mem *mem;
	pthread_t t[4], ct;
	struct multi m;
	unsigned int i;

	(void)state;
	harness_require_inproc("the pollers are threads of the test");
	multi_start(&m, false);
	m.region = aligned_alloc(4096, SLOTS * SLOT_BYTES);
	assert_non_null(m.region);
	assert_int_equal(rpcrdma_svc_mem_register(m.svc, m.region, SLOTS * SLOT_BYTES, &mem), 0);
	churn.svc = m.svc;
	assert_int_equal(pthread_create(&ct, NULL, churn_run, &churn), 0);
	/* A loaded machine may not run the churn before the calls end: let it start first. */
	for (i = 0; i < 5000 && !atomic_load(&churn.rounds); i++)
		poll(NULL, 0, 1);
	for (i = 0; i < 4; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].clnt = harness_connect_to(m.svc);
		c[i].seed = i + 1;
		c[i].calls = CALLS;
		assert_int_equal(pthread_create(&t[i], NULL, aligned_caller, &c[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(c[i].failures, 0);
		rpcrdma_clnt_destroy(c[i].clnt);
	}
	atomic_store(&churn.stop, true);
	pthread_join(ct, NULL);
	assert_int_equal(churn.errors, 0);
	assert_true(atomic_load(&churn.rounds) > 0);
	assert_int_equal(m.nthreads, POLLERS);
	multi_stop_pollers(&m);
	/* Found there every time: no payload byte was copied. */
	assert_int_equal(rpcrdma_svc_stats(m.svc, &st), 0);
	assert_int_equal(st.replies, 4 * CALLS);
	assert_int_equal(st.bounce_bytes, 0);
	/* Every reply's Send completed: nobody uses the region any more. */
	assert_int_equal(rpcrdma_mem_deregister(mem), 0);
	multi_destroy(&m);
	free(m.region);
	harness_assert_fabric_idle();
}

/* Six clients over two pollers: every call answered, on both poller threads. */
static void t_spread(void **state)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	struct multi m;

	(void)state;
	harness_require_inproc("the pollers are threads of the test");
	multi_start(&m, false);
	run_clients(&m);
	assert_int_equal(atomic_load(&m.calls), CLIENTS * CALLS);
	assert_int_equal(m.nthreads, POLLERS);
	multi_stop_pollers(&m);
	/* The pollers' counters, summed: every call and connection once. */
	assert_int_equal(rpcrdma_svc_stats(m.svc, &st), 0);
	assert_int_equal(st.calls, CLIENTS * CALLS);
	assert_int_equal(st.replies, CLIENTS * CALLS);
	assert_int_equal(st.connects, CLIENTS);
	multi_destroy(&m);
	harness_assert_fabric_idle();
}

/* The same, each reply sent from a worker thread: handed to the right poller. */
static void t_spread_workers(void **state)
{
	struct multi m;

	(void)state;
	harness_require_inproc("the pollers are threads of the test");
	multi_start(&m, true);
	run_clients(&m);
	assert_int_equal(atomic_load(&m.calls), CLIENTS * CALLS);
	assert_int_equal(m.nthreads, POLLERS);
	multi_stop(&m);
	harness_assert_fabric_idle();
}

static bool holding(void *arg)
{
	return atomic_load(&((struct multi *)arg)->holding);
}

/*
 * The first connection goes to poller 0, the second to poller 1. Poller 0
 * is held inside a call; the client on poller 1 is served meanwhile.
 */
static void t_held_poller_holds_no_other(void **state)
{
	struct harness_caller held = { .seed = HOLD_SEED, .calls = 1 }, other = { .seed = 5, .calls = 50 };
	pthread_t t;
	struct multi m;

	(void)state;
	harness_require_inproc("the pollers are threads of the test");
	multi_start(&m, false);
	atomic_store(&m.hold, true);
	held.clnt = harness_connect_to(m.svc);
	other.clnt = harness_connect_to(m.svc);
	assert_int_equal(pthread_create(&t, NULL, harness_caller_run, &held), 0);
	assert_true(harness_wait_for(holding, &m, 5000));
	harness_caller_run(&other);
	assert_int_equal(other.failures, 0);
	assert_false(atomic_load(&held.done));
	atomic_store(&m.hold, false);
	pthread_join(t, NULL);
	assert_int_equal(held.failures, 0);
	rpcrdma_clnt_destroy(held.clnt);
	rpcrdma_clnt_destroy(other.clnt);
	multi_stop(&m);
	harness_assert_fabric_idle();
}

/* Poll poller @i (-1: rpcrdma_svc_poll()) until refused, 2,000 tries 1 ms apart at most. */
static int poll_until_refused(struct rpcrdma_svc *svc, int i)
{
	int tries, rc = 0;

	for (tries = 0; tries < 2000 && rc != -EBUSY; tries++) {
		if (tries)
			poll(NULL, 0, 1);
		rc = i < 0 ? rpcrdma_svc_poll(svc, 16) : rpcrdma_svc_poller_poll(svc, i, 16);
	}
	return rc;
}

/*
 * A second thread entering a poller while its thread is inside (asleep in
 * rpcrdma_svc_poller_wait()) is refused with -EBUSY, where two threads
 * would race on its lists; the pollers keep serving, and once their
 * threads are gone another thread may poll.
 */
static void t_second_poller_thread_refused(void **state)
{
	struct harness_caller caller = { .seed = 9, .calls = 20 };
	struct multi m;

	(void)state;
	harness_require_inproc("the pollers are threads of the test");
	multi_start(&m, false);
	assert_int_equal(poll_until_refused(m.svc, 1), -EBUSY);
	assert_int_equal(poll_until_refused(m.svc, -1), -EBUSY);
	caller.clnt = harness_connect_to(m.svc);
	harness_caller_run(&caller);
	assert_int_equal(caller.failures, 0);
	multi_stop_pollers(&m);
	assert_true(rpcrdma_svc_poller_poll(m.svc, 1, 16) >= 0);
	assert_true(rpcrdma_svc_poll(m.svc, 16) >= 0);
	rpcrdma_clnt_destroy(caller.clnt);
	multi_destroy(&m);
	harness_assert_fabric_idle();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_spread),
		cmocka_unit_test(t_spread_workers),
		cmocka_unit_test(t_held_poller_holds_no_other),
		cmocka_unit_test(t_regions_shared_by_pollers),
		cmocka_unit_test(t_second_poller_thread_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

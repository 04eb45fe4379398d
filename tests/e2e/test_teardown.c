/* SPDX-License-Identifier: MIT */
/*
 * Teardown and connection loss: each side destroying the connection while
 * sends are outstanding, a peer that disconnects mid-call, call timeouts.
 * Every call completes exactly once, every work request is flushed before
 * memory is freed (the fabric has none outstanding when destroy returns),
 * and nothing leaks (ASan and valgrind runs of this suite check the rest).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <poll.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include <softrdma.h>

#include "harness.h"

#define NCALLS 24

struct tcall {
	struct rpcrdma_call call;
	unsigned char msg[128];
	unsigned char reply[128];
	int finished;
};

static void tcall_done(struct rpcrdma_call *call)
{
	((struct tcall *)call->arg)->finished++;
}

static void tcall_init(struct tcall *t, uint32_t xid, int timeout_ms)
{
	memset(t, 0, sizeof(*t));
	harness_fill_msg(t->msg, sizeof(t->msg), xid, xid);
	t->call.struct_size = sizeof(t->call);
	t->call.msg = t->msg;
	t->call.msg_len = sizeof(t->msg);
	t->call.reply = t->reply;
	t->call.reply_max = sizeof(t->reply);
	t->call.timeout_ms = timeout_ms;
	t->call.done = tcall_done;
	t->call.arg = t;
}

/* Connect and raise the grant with a few echoed calls, then hold calls. */
static struct rpcrdma_clnt *connect_warm(struct harness_server *hs, unsigned int retries)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *clnt;
	unsigned char msg[16], reply[16];
	uint32_t i;

	harness_clnt_attr(hs, &attr);
	attr.retries = retries;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	for (i = 0; i < 4; i++) {
		size_t rlen = sizeof(reply);

		harness_fill_msg(msg, sizeof(msg), 0x7000 + i, i);
		assert_int_equal(rpcrdma_clnt_call(clnt, msg, sizeof(msg), reply, &rlen, 0), 0);
	}
	atomic_store(&hs->sh->mode, HARNESS_HOLD);
	return clnt;
}

static void submit_all(struct rpcrdma_clnt *clnt, struct tcall *calls, unsigned int n,
		       int timeout_ms)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		tcall_init(&calls[i], 0x100 + i, timeout_ms);
		assert_int_equal(rpcrdma_clnt_submit(clnt, &calls[i].call), 0);
	}
}

/* Calls held at once: what the warm-up earns (an SRQ server grants at least 4). */
static bool held_enough(void *arg)
{
	struct harness_server *hs = arg;

	return atomic_load(&hs->sh->held_now) >= (harness_srq() ? 4u : 8u);
}

static void pump_until_held(struct rpcrdma_clnt *clnt, struct harness_server *hs)
{
	int i;

	for (i = 0; i < 500 && !held_enough(hs); i++)
		rpcrdma_clnt_wait(clnt, 5);
	assert_true(held_enough(hs));
}

static bool conn_closed(void *arg)
{
	struct harness_server *hs = arg;

	return atomic_load(&hs->sh->conns_closed) >= 1;
}

static bool all_done(struct tcall *calls, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!calls[i].finished)
			return false;
	return true;
}

static void pump_until_done(struct rpcrdma_clnt *clnt, struct tcall *calls, unsigned int n)
{
	int i;

	for (i = 0; i < 2000 && !all_done(calls, n); i++)
		rpcrdma_clnt_wait(clnt, 5);
	assert_true(all_done(calls, n));
}

/* The client destroys its connection with calls in flight: each completes once, canceled. */
static void t_client_destroy_in_flight(void **state)
{
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct tcall calls[NCALLS];
	unsigned int i, held;

	assert_int_equal(harness_server_start(&hs, 32, 0, HARNESS_ECHO), 0);
	clnt = connect_warm(&hs, 0);
	submit_all(clnt, calls, NCALLS, 0);
	pump_until_held(clnt, &hs);
	rpcrdma_clnt_destroy(clnt);
	for (i = 0; i < NCALLS; i++) {
		assert_int_equal(calls[i].finished, 1);
		assert_int_equal(calls[i].call.status, -ECANCELED);
	}
	/* The server notices and closes its side; answering the held calls then fails. */
	assert_true(harness_wait_for(conn_closed, &hs, 5000));
	held = atomic_load(&hs.sh->held_now);
	assert_true(held >= (harness_srq() ? 4u : 8u));
	harness_server_release(&hs);
	assert_int_equal(atomic_load(&hs.sh->reply_errors), held);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/*
 * The client destroys itself right after submitting, with its Sends still
 * in the fabric (completions held back 20 ms): destroy must wait for their
 * flush before freeing the buffers the fabric is reading.
 */
static void t_client_destroy_sends_outstanding(void **state)
{
	struct softrdma_fault delay = {
		.match = { .opcode_mask = 1u << IBV_WR_SEND },
		.kind = SOFTRDMA_FAULT_DELAY,
		.delay_us = 20000,
	};
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct tcall calls[NCALLS];
	struct softrdma_counts c;
	unsigned int i;
	int id;

	harness_skip_on(HARNESS_FABRIC_STEP, "holds Sends in flight with a delay, which STEP mode "
			"does not wait for");
	assert_int_equal(harness_server_start(&hs, 32, 0, HARNESS_ECHO), 0);
	clnt = connect_warm(&hs, 0);
	atomic_store(&hs.sh->mode, HARNESS_ECHO);
	id = softrdma_fault_add(&delay);
	assert_true(id > 0);
	submit_all(clnt, calls, NCALLS, 0);
	softrdma_get_counts(&c);
	assert_true(c.send_wrs > 0);
	rpcrdma_clnt_destroy(clnt);
	/*
	 * Nothing of the client's is left in the fabric: no completion can come
	 * later. (The server's QP may or may not have gone yet.)
	 */
	softrdma_get_counts(&c);
	assert_true(c.qps <= 1);
	for (i = 0; i < NCALLS; i++) {
		assert_int_equal(calls[i].finished, 1);
		assert_true(calls[i].call.status == 0 || calls[i].call.status == -ECANCELED);
	}
	softrdma_fault_remove(id);
	assert_true(harness_wait_for(conn_closed, &hs, 5000));
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/* The server is destroyed while it holds calls: the client's calls fail, nothing leaks. */
static void t_server_destroy_with_calls_held(void **state)
{
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct tcall calls[NCALLS];
	unsigned int i;

	harness_skip_srq("it needs all its calls sent at once, on one grant");
	assert_int_equal(harness_server_start(&hs, 32, 0, HARNESS_ECHO), 0);
	clnt = connect_warm(&hs, 0);
	submit_all(clnt, calls, NCALLS, 0);
	pump_until_held(clnt, &hs);
	/* Destroy with held calls: harness_server_stop finishes them after destroy. */
	harness_server_stop(&hs);
	pump_until_done(clnt, calls, NCALLS);
	for (i = 0; i < NCALLS; i++) {
		assert_int_equal(calls[i].finished, 1);
		assert_int_equal(calls[i].call.status, -ECONNRESET);
	}
	rpcrdma_clnt_destroy(clnt);
	harness_assert_fabric_idle();
}

/* The server drops the connection mid-call: calls fail, or go again on a new one. */
static void t_peer_disconnects_mid_call(void **state)
{
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct tcall calls[NCALLS];
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	unsigned int i, retries;

	harness_skip_srq("it needs all its calls sent at once, on one grant");
	for (retries = 0; retries <= 1; retries++) {
		assert_int_equal(harness_server_start(&hs, 32, 0, HARNESS_ECHO), 0);
		clnt = connect_warm(&hs, retries);
		submit_all(clnt, calls, NCALLS, 0);
		pump_until_held(clnt, &hs);
		if (retries)
			atomic_store(&hs.sh->mode, HARNESS_ECHO);	/* the resent calls get answers */
		harness_server_close_conns(&hs);
		pump_until_done(clnt, calls, NCALLS);
		for (i = 0; i < NCALLS; i++) {
			assert_int_equal(calls[i].finished, 1);
			if (retries) {
				assert_int_equal(calls[i].call.status, 0);
				harness_assert_echo(calls[i].reply, calls[i].msg,
						    sizeof(calls[i].msg));
			} else {
				assert_int_equal(calls[i].call.status, -ECONNRESET);
			}
		}
		assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);
		assert_int_equal(info.connects, retries ? 2 : 1);
		rpcrdma_clnt_destroy(clnt);
		harness_server_stop(&hs);
		harness_assert_fabric_idle();
	}
}

static int64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A call's timeout bounds the reconnection it waits for: with the route
 * resolution's event lost, a 300 ms call ends with -ETIMEDOUT after about
 * 300 ms, not after the 5 s connect timeout.
 */
static void t_timeout_bounds_reconnect(void **state)
{
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct tcall t;
	int64_t t0, took;
	int rc;

	harness_require_inproc("drops a CM event in this process's fabric");
	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_ECHO), 0);
	clnt = connect_warm(&hs, 0);
	/* A call that times out closes the connection. */
	atomic_store(&hs.sh->mode, HARNESS_DROP);
	tcall_init(&t, 0x4444, 100);
	assert_int_equal(rpcrdma_clnt_submit(clnt, &t.call), 0);
	pump_until_done(clnt, &t, 1);
	assert_int_equal(t.call.status, -ETIMEDOUT);
	atomic_store(&hs.sh->mode, HARNESS_ECHO);
	for (t0 = ms_now(); ms_now() - t0 < 3000; ) {
		assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);
		if (!info.connected)
			break;
		rpcrdma_clnt_wait(clnt, 10);
	}
	assert_int_equal(info.connected, 0);

	/* The reconnection stalls: its route is never reported. */
	assert_int_equal(softrdma_cm_drop_events(RDMA_CM_EVENT_ROUTE_RESOLVED, 1), 0);
	tcall_init(&t, 0x4545, 300);
	t0 = ms_now();
	rc = rpcrdma_clnt_submit(clnt, &t.call);
	if (rc == 0) {
		pump_until_done(clnt, &t, 1);
		rc = t.call.status;
	}
	took = ms_now() - t0;
	assert_int_equal(rc, -ETIMEDOUT);
	if (took > 1500)
		fail_msg("a 300 ms call took %lld ms, reconnection included",
			 (long long)took);
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/* A thread inside the client: its call's done() holds it there until told. */
struct holder {
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_call call;
	unsigned char msg[16], reply[16];
	atomic_int inside;	/* 1: in done(); main sets 2 to let it go */
	int finished;
};

static void holder_done(struct rpcrdma_call *call)
{
	struct holder *h = call->arg;

	atomic_store(&h->inside, 1);
	while (atomic_load(&h->inside) != 2)
		poll(NULL, 0, 1);
	h->finished = 1;
}

static void *holder_main(void *arg)
{
	struct holder *h = arg;

	RPCRDMA_INIT(&h->call);
	harness_fill_msg(h->msg, sizeof(h->msg), 0x4747, 1);
	h->call.msg = h->msg;
	h->call.msg_len = sizeof(h->msg);
	h->call.reply = h->reply;
	h->call.reply_max = sizeof(h->reply);
	h->call.done = holder_done;
	h->call.arg = h;
	if (rpcrdma_clnt_submit(h->clnt, &h->call) == 0)
		while (!h->finished)
			rpcrdma_clnt_wait(h->clnt, 100);
	return NULL;
}

/*
 * A second thread entering a client while its thread is inside (here in a
 * call's done(), run from rpcrdma_clnt_wait()) is refused with -EBUSY,
 * where it used to corrupt the client or hang; once the first is out, the
 * second may go.
 */
static void t_second_thread_refused(void **state)
{
	struct rpcrdma_call call = { RPCRDMA_SIZED(call) };
	static struct holder h;
	struct harness_server hs;
	unsigned char msg[16], reply[16];
	pthread_t thread;
	int i;

	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_ECHO), 0);
	memset(&h, 0, sizeof(h));
	h.clnt = connect_warm(&hs, 0);
	atomic_store(&hs.sh->mode, HARNESS_ECHO);
	assert_int_equal(pthread_create(&thread, NULL, holder_main, &h), 0);
	for (i = 0; i < 5000 && atomic_load(&h.inside) != 1; i++)
		poll(NULL, 0, 1);
	assert_int_equal(atomic_load(&h.inside), 1);
	assert_int_equal(rpcrdma_clnt_poll(h.clnt, 16), -EBUSY);
	harness_fill_msg(msg, sizeof(msg), 0x4646, 1);
	call.msg = msg;
	call.msg_len = sizeof(msg);
	call.reply = reply;
	call.reply_max = sizeof(reply);
	call.done = holder_done;
	assert_int_equal(rpcrdma_clnt_submit(h.clnt, &call), -EBUSY);
	atomic_store(&h.inside, 2);
	pthread_join(thread, NULL);
	assert_int_equal(h.call.status, 0);
	assert_true(rpcrdma_clnt_poll(h.clnt, 16) >= 0);
	rpcrdma_clnt_destroy(h.clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/* A call the server never answers times out, closes the connection; the next one reconnects. */
static void t_timeout_disconnects(void **state)
{
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	struct tcall t;
	unsigned char msg[32], reply[32];
	size_t rlen = sizeof(reply);
	int ms = -7;

	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_ECHO), 0);
	clnt = connect_warm(&hs, 1);
	/* Idle: no deadline, and the out value is left alone. */
	assert_int_equal(rpcrdma_clnt_next_timeout(clnt, &ms), -ENOENT);
	assert_int_equal(ms, -7);
	assert_int_equal(rpcrdma_clnt_next_timeout(clnt, NULL), -EINVAL);
	assert_int_equal(rpcrdma_clnt_next_timeout(NULL, &ms), -EINVAL);
	atomic_store(&hs.sh->mode, HARNESS_DROP);
	tcall_init(&t, 0x4242, 200);
	assert_int_equal(rpcrdma_clnt_submit(clnt, &t.call), 0);
	assert_int_equal(rpcrdma_clnt_next_timeout(clnt, &ms), 0);
	assert_true(ms >= 0 && ms <= 200);
	pump_until_done(clnt, &t, 1);
	/* A timed-out call is not sent again, even with retries left. */
	assert_int_equal(t.call.status, -ETIMEDOUT);
	assert_int_equal(rpcrdma_clnt_stats(clnt, &st), 0);
	assert_int_equal(st.timeouts, 1);
	assert_int_equal(st.retransmits, 0);

	atomic_store(&hs.sh->mode, HARNESS_ECHO);
	harness_fill_msg(msg, sizeof(msg), 0x4343, 1);
	assert_int_equal(rpcrdma_clnt_call(clnt, msg, sizeof(msg), reply, &rlen, 0), 0);
	harness_assert_echo(reply, msg, sizeof(msg));
	assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);
	assert_int_equal(info.connects, 2);
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/* Connecting to a port nobody listens on fails cleanly. */
static void t_connect_refused(void **state)
{
	struct harness_server hs;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *clnt = NULL;

	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_ECHO), 0);
	harness_clnt_attr(&hs, &attr);
	harness_server_stop(&hs);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), -ECONNREFUSED);
	assert_null(clnt);
	harness_assert_fabric_idle();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_client_destroy_in_flight),
		cmocka_unit_test(t_client_destroy_sends_outstanding),
		cmocka_unit_test(t_server_destroy_with_calls_held),
		cmocka_unit_test(t_peer_disconnects_mid_call),
		cmocka_unit_test(t_timeout_disconnects),
		cmocka_unit_test(t_timeout_bounds_reconnect),
		cmocka_unit_test(t_second_thread_refused),
		cmocka_unit_test(t_connect_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

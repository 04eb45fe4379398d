/* SPDX-License-Identifier: MIT */
/*
 * The server at scale: an idle connection costs the server nothing per
 * RPC. rpcrdma_svc_poll() visits only connections with work, counted in
 * stats.conn_visits, so the visits per call are the same with one
 * connection and with many idle ones beside it.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "harness.h"

#define IDLE 32
#define CALLS 200

/* Wait until the server has nothing left to do: its visits stop growing. */
static void settle(struct harness_server *hs)
{
	uint64_t last = harness_server_stats(hs).conn_visits;
	int quiet = 0, rounds = 0;

	while (quiet < 5 && rounds++ < 500) {
		uint64_t now;

		poll(NULL, 0, 10);
		now = harness_server_stats(hs).conn_visits;
		quiet = now == last ? quiet + 1 : 0;
		last = now;
	}
}

/* Visits the server made for CALLS calls on @clnt. */
static uint64_t visits_for_calls(struct harness_server *hs, struct rpcrdma_clnt *clnt)
{
	unsigned char msg[256], reply[256];
	uint64_t before;
	uint32_t i;

	settle(hs);
	before = harness_server_stats(hs).conn_visits;
	for (i = 0; i < CALLS; i++) {
		size_t rlen = sizeof(reply);

		harness_fill_msg(msg, sizeof(msg), i + 1, i);
		assert_int_equal(rpcrdma_clnt_call(clnt, msg, sizeof(msg), reply, &rlen, 0), 0);
		assert_int_equal(rlen, sizeof(msg));
		harness_assert_echo(reply, msg, sizeof(msg));
	}
	return harness_server_stats(hs).conn_visits - before;
}

/*
 * CALLS calls cost @alone visits on one connection and @among beside
 * @idle idle ones. Every call is visited at least once. How a call's
 * receive and its reply's completion fall into passes varies with timing
 * (two to four visits a call, under load), and an idle connection may
 * still take the last visit of its set-up in the window; visiting the
 * idle connections would add @idle visits to every pass.
 */
static void assert_idle_cost_nothing(uint64_t alone, uint64_t among, unsigned int idle)
{
	assert_true(alone >= CALLS);
	assert_true(among >= CALLS);
	assert_true(among < alone + 2 * CALLS + idle);
}

static void t_idle_connections_cost_no_visit(void **state)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *active, *idle[IDLE];
	struct harness_server hs;
	uint64_t alone, among_idle;
	unsigned int i;

	(void)state;
	assert_int_equal(harness_server_start(&hs, 0, 0, HARNESS_ECHO), 0);
	harness_clnt_attr(&hs, &attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &active), 0);
	assert_true(harness_wait_established(&hs, 1, 5000));
	alone = visits_for_calls(&hs, active);

	for (i = 0; i < IDLE; i++)
		assert_int_equal(rpcrdma_clnt_connect(&attr, &idle[i]), 0);
	assert_true(harness_wait_established(&hs, IDLE + 1, 10000));
	among_idle = visits_for_calls(&hs, active);
	print_message("server visits per call: %.2f alone, %.2f beside %d idle connections\n",
		      (double)alone / CALLS, (double)among_idle / CALLS, IDLE);

	assert_idle_cost_nothing(alone, among_idle, IDLE);

	for (i = 0; i < IDLE; i++)
		rpcrdma_clnt_destroy(idle[i]);
	rpcrdma_clnt_destroy(active);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/* File descriptors one client and its server connection take, with room to spare. */
#define FDS_PER_CONN 8

/* Raise the soft limit on descriptors to what @conns connections need, or say why not. */
static bool enough_fds(unsigned int conns)
{
	rlim_t want = (rlim_t)conns * FDS_PER_CONN + 256;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return false;
	if (rl.rlim_cur >= want)
		return true;
	if (rl.rlim_max < want) {
		fprintf(stderr, "skipped: %u connections need %llu descriptors, the hard limit is %llu\n",
			conns, (unsigned long long)want, (unsigned long long)rl.rlim_max);
		return false;
	}
	rl.rlim_cur = want;
	return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

/*
 * 1,024 connections to one server (4 credits, 1 KiB inline each, as many
 * small clients would be): every one is served, and with all of them idle
 * but one, a call costs the server no more visits than alone.
 */
static void t_1024_connections(void **state)
{
	unsigned int conns = 1024, i;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_stats before, after;
	struct rpcrdma_clnt **clnt;
	struct harness_server hs;
	unsigned char msg[64], reply[64];
	uint64_t alone, among;

	(void)state;
	if (!enough_fds(conns))
		skip();
	clnt = calloc(conns, sizeof(*clnt));
	assert_non_null(clnt);
	assert_int_equal(harness_server_start(&hs, 4, 1024, HARNESS_ECHO), 0);
	harness_clnt_attr(&hs, &attr);
	attr.max_requests = 4;
	attr.inline_size = 1024;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt[0]), 0);
	assert_true(harness_wait_established(&hs, 1, 5000));
	alone = visits_for_calls(&hs, clnt[0]);
	before = harness_server_stats(&hs);
	for (i = 1; i < conns; i++) {
		int rc = rpcrdma_clnt_connect(&attr, &clnt[i]);

		if (rc)
			fail_msg("connection %u: %d (server refused %llu)", i, rc,
				 (unsigned long long)harness_server_stats(&hs).conn_rejects);
	}
	assert_true(harness_wait_established(&hs, conns, 60000));
	after = harness_server_stats(&hs);
	/* Each one is served once. */
	for (i = 0; i < conns; i++) {
		size_t rlen = sizeof(reply);

		harness_fill_msg(msg, sizeof(msg), 0x70000000 + i, i);
		assert_int_equal(rpcrdma_clnt_call(clnt[i], msg, sizeof(msg), reply, &rlen, 0), 0);
		harness_assert_echo(reply, msg, sizeof(msg));
	}
	among = visits_for_calls(&hs, clnt[0]);
	print_message("%u connections: %.2f server visits per call (%.2f alone); "
		      "%llu bytes of server heap per connection (%llu registered)\n", conns,
		      (double)among / CALLS, (double)alone / CALLS,
		      (unsigned long long)((after.heap_bytes - before.heap_bytes) / (conns - 1)),
		      (unsigned long long)((after.registered_bytes - before.registered_bytes) /
					   (conns - 1)));
	assert_idle_cost_nothing(alone, among, conns);
	for (i = 0; i < conns; i++)
		rpcrdma_clnt_destroy(clnt[i]);
	free(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/* A server of its own: max_connections 2, polled by a thread. */
struct small_server {
	struct rpcrdma_svc *svc;
	pthread_t thread;
	atomic_bool stop;
	atomic_uint established;
	atomic_uint closed;
};

static void small_on_call(struct rpcrdma_svc_call *call, void *arg)
{
	(void)arg;
	rpcmsg_svc_echo(call);
}

static void small_on_conn(struct rpcrdma_svc_conn *conn, enum rpcrdma_conn_event event,
			  void *arg)
{
	struct small_server *s = arg;

	(void)conn;
	if (event == RPCRDMA_CONN_ESTABLISHED)
		atomic_fetch_add(&s->established, 1);
	else if (event == RPCRDMA_CONN_CLOSED)
		atomic_fetch_add(&s->closed, 1);
}

static void *small_thread(void *arg)
{
	struct small_server *s = arg;

	while (!atomic_load(&s->stop))
		rpcrdma_svc_wait(s->svc, 20);
	return NULL;
}

static bool small_closed_one(void *arg)
{
	return atomic_load(&((struct small_server *)arg)->closed) >= 1;
}

/* Its result, not asserted: some connections are to be refused. */
static int small_connect(struct small_server *s, struct rpcrdma_clnt **out)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct sockaddr_storage addr;
	socklen_t len = sizeof(addr);

	assert_int_equal(rpcrdma_svc_addr(s->svc, (struct sockaddr *)&addr, &len), 0);
	attr.addr = (struct sockaddr *)&addr;
	attr.connect_timeout_ms = 2000;
	return rpcrdma_clnt_connect(&attr, out);
}

/*
 * A request beyond max_connections is accepted in the place of the oldest
 * idle connection, which the server closes (counted in idle_evictions): of
 * two connections quiet for a second, the one that never called, not the
 * one that did.
 */
static void t_max_connections(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rpcrdma_svc_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	struct rpcrdma_clnt *c[3];
	struct small_server s;
	unsigned char msg[64], reply[64];
	size_t rlen = sizeof(reply);
	struct timespec t0, now;

	(void)state;
	harness_require_inproc("the server runs on a thread of the test");
	memset(&s, 0, sizeof(s));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	attr.addr = (struct sockaddr *)&sin;
	attr.on_call = small_on_call;
	attr.on_conn = small_on_conn;
	attr.arg = &s;
	attr.max_connections = 2;
	assert_int_equal(rpcrdma_svc_listen(&attr, &s.svc), 0);
	assert_int_equal(pthread_create(&s.thread, NULL, small_thread, &s), 0);

	assert_int_equal(small_connect(&s, &c[0]), 0);
	assert_int_equal(small_connect(&s, &c[1]), 0);
	harness_fill_msg(msg, sizeof(msg), 7, 7);
	assert_int_equal(rpcrdma_clnt_call(c[1], msg, sizeof(msg), reply, &rlen, 0), 0);
	harness_assert_echo(reply, msg, sizeof(msg));
	/* Idle is a second without a call (svc.h). */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		poll(NULL, 0, 100);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 <= 1000);
	assert_int_equal(small_connect(&s, &c[2]), 0);
	assert_true(harness_wait_for(small_closed_one, &s, 5000));
	/* The one that called and the new one serve; the one that never called is gone. */
	rlen = sizeof(reply);
	assert_int_equal(rpcrdma_clnt_call(c[2], msg, sizeof(msg), reply, &rlen, 0), 0);
	harness_assert_echo(reply, msg, sizeof(msg));
	rlen = sizeof(reply);
	assert_int_equal(rpcrdma_clnt_call(c[1], msg, sizeof(msg), reply, &rlen, 0), 0);
	assert_int_equal(rpcrdma_clnt_stats(c[1], &st), 0);
	assert_int_equal(st.connects, 1);

	atomic_store(&s.stop, true);
	pthread_join(s.thread, NULL);
	assert_int_equal(rpcrdma_svc_stats(s.svc, &st), 0);
	assert_int_equal(st.idle_evictions, 1);
	assert_int_equal(st.conn_rejects, 0);
	assert_int_equal(atomic_load(&s.closed), 1);
	rpcrdma_clnt_destroy(c[0]);
	rpcrdma_clnt_destroy(c[1]);
	rpcrdma_clnt_destroy(c[2]);
	rpcrdma_svc_destroy(s.svc);
	harness_assert_fabric_idle();
}

/* max_connections beyond the documented range is refused at listen. */
static void t_max_connections_range(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rpcrdma_svc_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_svc *svc;

	(void)state;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	attr.addr = (struct sockaddr *)&sin;
	attr.on_call = small_on_call;
	attr.max_connections = 65537;
	assert_int_equal(rpcrdma_svc_listen(&attr, &svc), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_idle_connections_cost_no_visit),
		cmocka_unit_test(t_1024_connections),
		cmocka_unit_test(t_max_connections),
		cmocka_unit_test(t_max_connections_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * Keepalive and the server's idle timeout: a client that vanished without a
 * word is found by the server's probes, an idle connection is closed and
 * the client reconnects at its next call, a busy or probing connection is
 * left alone, and bad bounds are refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <softrdma.h>

#include "harness.h"
#include "rawpeer.h"

static int64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void echo_ok(struct rpcrdma_clnt *clnt, uint32_t xid)
{
	unsigned char msg[64], reply[64];
	size_t len = sizeof(reply);

	harness_fill_msg(msg, sizeof(msg), xid, xid);
	assert_int_equal(rpcrdma_clnt_call(clnt, msg, sizeof(msg), reply, &len, 2000), 0);
	assert_int_equal(len, sizeof(msg));
	assert_memory_equal(reply, msg, sizeof(msg));
}

static struct rpcrdma_clnt *connect_ka(const struct harness_server *hs, int keepalive_ms)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *clnt;

	harness_clnt_attr(hs, &attr);
	attr.keepalive_ms = keepalive_ms;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	return clnt;
}

static bool client_connected(struct rpcrdma_clnt *clnt)
{
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };

	assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);
	return info.connected;
}

/* Drive @clnt as an idle application would, asleep in rpcrdma_clnt_wait(), for @ms. */
static void idle_for(struct rpcrdma_clnt *clnt, int ms)
{
	int64_t end = ms_now() + ms;

	while (ms_now() < end)
		assert_true(rpcrdma_clnt_wait(clnt, (int)(end - ms_now())) >= 0);
}

static struct rpcrdma_stats clnt_stats(struct rpcrdma_clnt *clnt)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };

	assert_int_equal(rpcrdma_clnt_stats(clnt, &st), 0);
	return st;
}

static void start_server(struct harness_server *hs, const char *keepalive, const char *idle,
			 enum harness_mode mode)
{
	if (keepalive)
		setenv("E2E_SVC_KEEPALIVE_MS", keepalive, 1);
	if (idle)
		setenv("E2E_SVC_IDLE_MS", idle, 1);
	assert_int_equal(harness_server_start(hs, 8, 0, mode), 0);
	unsetenv("E2E_SVC_KEEPALIVE_MS");
	unsetenv("E2E_SVC_IDLE_MS");
}

static void t_bounds_refused(void **state)
{
	struct rpcrdma_svc_attr sa = { RPCRDMA_SIZED(sa) };
	struct rpcrdma_clnt_attr ca = { RPCRDMA_SIZED(ca) };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	const int bad[] = { -1, 1, 9 };
	struct rpcrdma_clnt *clnt = NULL;
	struct rpcrdma_svc *svc = NULL;
	unsigned int i;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.addr = (struct sockaddr *)&sin;
	sa.on_call = (void (*)(struct rpcrdma_svc_call *, void *))abort;
	ca.addr = (struct sockaddr *)&sin;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sa.keepalive_ms = bad[i];
		sa.idle_timeout_ms = 0;
		assert_int_equal(rpcrdma_svc_listen(&sa, &svc), -EINVAL);
		sa.keepalive_ms = 0;
		sa.idle_timeout_ms = bad[i];
		assert_int_equal(rpcrdma_svc_listen(&sa, &svc), -EINVAL);
		ca.keepalive_ms = bad[i];
		assert_int_equal(rpcrdma_clnt_connect(&ca, &clnt), -EINVAL);
	}
	assert_null(svc);
	assert_null(clnt);
	harness_assert_fabric_idle();
}

/*
 * The client's probes: an idle client asleep in rpcrdma_clnt_wait() sends
 * one each keepalive_ms, the server answers them without any call reaching
 * it, and the connection stays up.
 */
static void t_client_probes_idle_server(void **state)
{
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_stats st;

	start_server(&hs, NULL, NULL, HARNESS_ECHO);
	/* 100 ms: a loaded machine answers a probe within one interval. */
	clnt = connect_ka(&hs, 100);
	echo_ok(clnt, 1);
	idle_for(clnt, 1200);
	st = clnt_stats(clnt);
	/* About 12 at 100 ms; a loaded machine ticks late, never early. */
	if (st.keepalives < 3 || st.keepalives > 14)
		fail_msg("%llu probes in 1200 ms at 100 ms", (unsigned long long)st.keepalives);
	assert_int_equal(st.keepalive_closes, 0);
	assert_true(client_connected(clnt));
	assert_int_equal(atomic_load(&hs.sh->calls), 1);
	echo_ok(clnt, 2);
	assert_int_equal(clnt_stats(clnt).connects, 1);
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

static bool closed_once(void *arg)
{
	return atomic_load(&((struct harness_server *)arg)->sh->conns_closed) >= 1;
}

/*
 * A client whose QP is gone without a disconnect (as a crashed node's on
 * RoCE): with @keepalive the server's probe finds it and the connection
 * closes; without, it stays open.
 */
static void vanish(const char *keepalive, bool expect_close)
{
	struct harness_server hs;
	struct rpcrdma_stats st;
	struct rawpeer rp;
	bool closed;

	start_server(&hs, keepalive, NULL, HARNESS_ECHO);
	assert_int_equal(rawpeer_connect(&rp, (struct sockaddr *)&hs.addr, NULL, 0, 0), 0);
	assert_true(harness_wait_established(&hs, 1, 2000));
	rdma_destroy_qp(rp.id);
	closed = harness_wait_for(closed_once, &hs, expect_close ? 5000 : 1000);
	st = harness_server_stats(&hs);
	if (expect_close) {
		assert_true(closed);
		assert_int_equal(st.keepalive_closes, 1);
		assert_true(st.keepalives >= 1);
	} else {
		assert_false(closed);
		assert_int_equal(st.keepalives, 0);
	}
	rawpeer_close(&rp);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

static void t_server_finds_vanished_client(void **state)
{
	vanish("50", true);
}

static void t_vanished_client_kept_without_keepalive(void **state)
{
	vanish(NULL, false);
}

/* No call for idle_timeout_ms: closed, counted, and the next call reconnects. */
static void t_idle_connection_closed(void **state)
{
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	int64_t t0;

	start_server(&hs, NULL, "200", HARNESS_ECHO);
	clnt = connect_ka(&hs, 0);
	echo_ok(clnt, 1);
	for (t0 = ms_now(); client_connected(clnt) && ms_now() - t0 < 3000; )
		assert_true(rpcrdma_clnt_wait(clnt, 20) >= 0);
	assert_false(client_connected(clnt));
	if (ms_now() - t0 < 150)
		fail_msg("closed after %lld ms of a 200 ms idle timeout", (long long)(ms_now() - t0));
	assert_int_equal(harness_server_stats(&hs).idle_closes, 1);
	echo_ok(clnt, 2);
	assert_int_equal(clnt_stats(clnt).connects, 2);
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/*
 * The same for a client that does not poll while it has nothing to do: its
 * next call, submitted on a connection quiet for longer than 100 ms, hears
 * the server's disconnect first and goes on a new connection.
 */
/* A CM event was delivered in this process and nobody read it yet. */
static bool unread_cm_event(void)
{
	struct softrdma_counts c;

	softrdma_get_counts(&c);
	return c.unacked_events > 0;
}

static void t_idle_close_heard_at_next_call(void **state)
{
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	int64_t t0;

	start_server(&hs, NULL, "200", HARNESS_ECHO);
	clnt = connect_ka(&hs, 0);
	echo_ok(clnt, 1);
	/* Drained on the server: its DISCONNECTED is in the client's channel. */
	for (t0 = ms_now(); harness_server_stats(&hs).disconnects == 0 && ms_now() - t0 < 3000; )
		poll(NULL, 0, 10);
	assert_int_equal(harness_server_stats(&hs).idle_closes, 1);
	assert_true(client_connected(clnt));
	/* softrdma delivers the client's DISCONNECTED after the server's drain may have ended. */
	for (t0 = ms_now(); !unread_cm_event() && ms_now() - t0 < 2000; )
		poll(NULL, 0, 10);
	assert_true(unread_cm_event());
	echo_ok(clnt, 2);
	assert_int_equal(clnt_stats(clnt).connects, 2);
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

static void done_flag(struct rpcrdma_call *call)
{
	*(int *)call->arg += 1;
}

/*
 * Neither a connection that calls more often than the timeout nor one whose
 * call the application holds is idle.
 */
static void t_busy_connection_kept(void **state)
{
	unsigned char msg[32], reply[32];
	struct rpcrdma_call call = {
		RPCRDMA_SIZED(call), .msg = msg, .msg_len = sizeof(msg), .reply = reply,
		.reply_max = sizeof(reply), .timeout_ms = 5000, .done = done_flag,
	};
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	int64_t t0;
	uint32_t xid = 1;
	int finished = 0;

	start_server(&hs, NULL, "300", HARNESS_ECHO);
	clnt = connect_ka(&hs, 0);
	for (t0 = ms_now(); ms_now() - t0 < 1000; ) {
		echo_ok(clnt, xid++);
		idle_for(clnt, 50);
	}
	assert_true(client_connected(clnt));
	assert_int_equal(harness_server_stats(&hs).idle_closes, 0);
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);

	start_server(&hs, NULL, "100", HARNESS_HOLD);
	clnt = connect_ka(&hs, 0);
	harness_fill_msg(msg, sizeof(msg), 77, 77);
	call.arg = &finished;
	assert_int_equal(rpcrdma_clnt_submit(clnt, &call), 0);
	for (t0 = ms_now(); !harness_holds_one(&hs) && ms_now() - t0 < 2000; )
		assert_true(rpcrdma_clnt_wait(clnt, 10) >= 0);
	idle_for(clnt, 400);
	assert_true(client_connected(clnt));
	assert_int_equal(harness_server_stats(&hs).idle_closes, 0);
	harness_server_release(&hs);
	for (t0 = ms_now(); !finished && ms_now() - t0 < 2000; )
		assert_true(rpcrdma_clnt_wait(clnt, 10) >= 0);
	assert_int_equal(finished, 1);
	assert_int_equal(call.status, 0);
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/*
 * The server's probes are answered, yet they are no calls: a client that
 * only answers probes is still closed for idleness.
 */
static void t_probes_are_no_calls(void **state)
{
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_stats st;
	int64_t t0;

	/*
	 * Probes 100 ms apart, which a loaded machine answers in time (at 30 ms
	 * an ASan build on the async fabric once left one unanswered).
	 */
	start_server(&hs, "100", "1000", HARNESS_ECHO);
	clnt = connect_ka(&hs, 0);
	echo_ok(clnt, 1);
	for (t0 = ms_now(); client_connected(clnt) && ms_now() - t0 < 5000; )
		assert_true(rpcrdma_clnt_wait(clnt, 20) >= 0);
	assert_false(client_connected(clnt));
	st = harness_server_stats(&hs);
	assert_int_equal(st.idle_closes, 1);
	assert_int_equal(st.keepalive_closes, 0);
	if (st.keepalives < 2)
		fail_msg("%llu probes in a 1000 ms idle period at 100 ms",
			 (unsigned long long)st.keepalives);
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_bounds_refused),
		cmocka_unit_test(t_client_probes_idle_server),
		cmocka_unit_test(t_server_finds_vanished_client),
		cmocka_unit_test(t_vanished_client_kept_without_keepalive),
		cmocka_unit_test(t_idle_connection_closed),
		cmocka_unit_test(t_idle_close_heard_at_next_call),
		cmocka_unit_test(t_busy_connection_kept),
		cmocka_unit_test(t_probes_are_no_calls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

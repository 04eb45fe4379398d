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

#include <string.h>

#include "harness.h"

#define IDLE 32
#define CALLS 200

struct established {
	struct harness_server *hs;
	unsigned int want;
};

static bool all_established(void *arg)
{
	struct established *e = arg;

	return atomic_load(&e->hs->sh->conns_established) >= e->want;
}

/* Visits the server made for CALLS calls on @clnt. */
static uint64_t visits_for_calls(struct harness_server *hs, struct rpcrdma_clnt *clnt)
{
	unsigned char msg[256], reply[256];
	uint64_t before = harness_server_stats(hs).conn_visits;
	uint32_t i;

	for (i = 0; i < CALLS; i++) {
		size_t rlen = sizeof(reply);

		harness_fill_msg(msg, sizeof(msg), i + 1, i);
		assert_int_equal(rpcrdma_clnt_call(clnt, msg, sizeof(msg), reply, &rlen, 0), 0);
		assert_int_equal(rlen, sizeof(msg));
		assert_memory_equal(reply, msg, sizeof(msg));
	}
	return harness_server_stats(hs).conn_visits - before;
}

static void t_idle_connections_cost_no_visit(void **state)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *active, *idle[IDLE];
	struct harness_server hs;
	struct established e = { &hs, 1 };
	uint64_t alone, among_idle;
	unsigned int i;

	(void)state;
	assert_int_equal(harness_server_start(&hs, 0, 0, HARNESS_ECHO), 0);
	harness_clnt_attr(&hs, &attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &active), 0);
	assert_true(harness_wait_for(all_established, &e, 5000));
	alone = visits_for_calls(&hs, active);

	for (i = 0; i < IDLE; i++)
		assert_int_equal(rpcrdma_clnt_connect(&attr, &idle[i]), 0);
	e.want = IDLE + 1;
	assert_true(harness_wait_for(all_established, &e, 10000));
	among_idle = visits_for_calls(&hs, active);
	print_message("server visits per call: %.2f alone, %.2f beside %d idle connections\n",
		      (double)alone / CALLS, (double)among_idle / CALLS, IDLE);

	/* Every call is visited at least once; idle connections add nothing. */
	assert_true(alone >= CALLS);
	assert_true(among_idle >= CALLS);
	assert_true(among_idle <= alone + CALLS / 10);

	for (i = 0; i < IDLE; i++)
		rpcrdma_clnt_destroy(idle[i]);
	rpcrdma_clnt_destroy(active);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_idle_connections_cost_no_visit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

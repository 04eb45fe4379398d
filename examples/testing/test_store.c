/* SPDX-License-Identifier: MIT */
/*
 * The block store's tests, over RPC-over-RDMA on softrdma: the library and
 * the service run unmodified, the fabric is softrdma's drop-in libibverbs
 * and librdmacm (linked by `pkg-config softrdma`), and <softrdma.h> injects
 * faults and checks that nothing is left behind. No RDMA hardware needed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rpc/rpc.h>
#include <rpcrdma/rpcrdma.h>
#include <rpcrdma/tirpc.h>
#include <softrdma.h>

#include "store.h"
#include "store_service.h"

static struct store_server server;

static int server_up(void **state)
{
	(void)state;
	return store_server_start(&server);
}

/* Everything the client and the server made is gone: QPs, MRs, ids, WRs. */
static int server_down(void **state)
{
	struct softrdma_counts c;

	(void)state;
	store_server_stop(&server);
	softrdma_get_counts(&c);
	if (c.qps || c.mrs || c.mws || c.cqs || c.pds || c.cm_ids || c.send_wrs || c.recv_wrs ||
	    c.unacked_events) {
		print_error("left behind: %u QPs, %u MRs, %u MWs, %u CQs, %u PDs, %u ids, "
			    "%u send and %u receive WRs, %u CM events\n", c.qps, c.mrs, c.mws,
			    c.cqs, c.pds, c.cm_ids, c.send_wrs, c.recv_wrs, c.unacked_events);
		return -1;
	}
	return 0;
}

static CLIENT *client(void)
{
	CLIENT *cl = rpcrdma_clnt_create((const struct sockaddr *)&server.addr, STORE_PROG,
					 STORE_VERS, 0, 0);

	if (!cl)
		fail_msg("rpcrdma_clnt_create: %s", clnt_spcreateerror("store"));
	return cl;
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

/* Wait up to 2 s for GET's data to be released @n times in all. */
static bool wait_releases(unsigned int n)
{
	struct timespec pause = { .tv_nsec = 1000000 };
	int i;

	for (i = 0; i < 2000 && store_ddp_releases() < n; i++)
		nanosleep(&pause, NULL);
	return store_ddp_releases() == n;
}

/*
 * PUT @n bytes at @data; with @ddp, the block goes as a Read chunk that the
 * server pulls by RDMA Read (RPCRDMA_CLSET_DDP_ARG), which a block larger
 * than the client's inline size needs.
 */
static void put(CLIENT *cl, unsigned char *data, u_int n, bool ddp)
{
	store_block arg = { .store_block_len = n, .store_block_val = (char *)data };
	struct rpcrdma_ddp_buf buf = { .buf = data, .len = n };
	u_int kept = 0;

	if (ddp)
		assert_true(clnt_control(cl, RPCRDMA_CLSET_DDP_ARG, (char *)&buf));
	assert_int_equal(store_put_1(&arg, &kept, cl), RPC_SUCCESS);
	assert_int_equal(kept, n);
}

static void t_round_trip(void **state)
{
	unsigned char data[100], *got;
	store_block res = { 0 };
	u_int n = sizeof(data);
	CLIENT *cl = client();

	(void)state;
	assert_int_equal(store_null_1(NULL, NULL, cl), RPC_SUCCESS);
	fill(data, sizeof(data), 1);
	put(cl, data, sizeof(data), false);
	assert_int_equal(store_get_1(&n, &res, cl), RPC_SUCCESS);
	got = (unsigned char *)res.store_block_val;
	assert_int_equal(res.store_block_len, sizeof(data));
	assert_memory_equal(got, data, sizeof(data));
	clnt_freeres(cl, (xdrproc_t)xdr_store_block, (caddr_t)&res);
	clnt_destroy(cl);
}

/*
 * PUT of 256 KiB pulled by the server, then GET of it placed directly: the
 * server's RDMA Write puts the block into the buffer the caller named,
 * which the decoder fills in place; no byte of the GET is copied through a
 * bounce buffer on either side.
 */
static void t_ddp_get(void **state)
{
	struct rpcrdma_stats before = { RPCRDMA_SIZED(before) }, after = { RPCRDMA_SIZED(after) };
	u_int n = 256 * 1024;
	unsigned char *data = malloc(n), *buf = malloc(n);
	struct rpcrdma_ddp_buf ddp = { .buf = buf, .len = n };
	unsigned long writes = softrdma_executed(IBV_WR_RDMA_WRITE);
	unsigned int releases = store_ddp_releases();
	store_block res;
	CLIENT *cl = client();

	(void)state;
	assert_non_null(data);
	assert_non_null(buf);
	fill(data, n, 2);
	put(cl, data, n, true);
	assert_true(clnt_control(cl, RPCRDMA_CLSET_MEM_REGISTER, (char *)&ddp));
	assert_true(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&before));
	assert_true(clnt_control(cl, RPCRDMA_CLSET_DDP_RESULT, (char *)&ddp));
	memset(buf, 0, n);
	res.store_block_len = n;
	res.store_block_val = (char *)buf;	/* decode in place */
	assert_int_equal(store_get_1(&n, &res, cl), RPC_SUCCESS);
	assert_ptr_equal(res.store_block_val, buf);
	assert_int_equal(res.store_block_len, n);
	assert_memory_equal(buf, data, n);
	assert_true(clnt_control(cl, RPCRDMA_CLGET_STATS, (char *)&after));
	assert_int_equal(after.write_chunks - before.write_chunks, 1);
	assert_int_equal(after.bounce_bytes - before.bounce_bytes, 0);
	assert_true(softrdma_executed(IBV_WR_RDMA_WRITE) > writes);
	clnt_destroy(cl);
	/* The server lets go of the block once its reply's Send completed. */
	assert_true(wait_releases(releases + 1));
	free(data);
	free(buf);
}

/*
 * The client's Send fails (the fabric completes it with an error, as a
 * broken link would): the call fails with RPC_CANTRECV, as
 * rpcrdma_clnt_create() documents for a lost connection, and the next call
 * reconnects and succeeds.
 */
static void t_fault_at_send(void **state)
{
	struct softrdma_fault f = {
		.match = { .opcode_mask = 1u << IBV_WR_SEND, .nth = 1, .count = 1 },
		.kind = SOFTRDMA_FAULT_STATUS,
		.status = IBV_WC_RETRY_EXC_ERR,
	};
	CLIENT *cl = client();
	int id;

	(void)state;
	assert_int_equal(store_null_1(NULL, NULL, cl), RPC_SUCCESS);
	id = softrdma_fault_add(&f);
	assert_true(id > 0);
	assert_int_equal(store_null_1(NULL, NULL, cl), RPC_CANTRECV);
	assert_int_equal(softrdma_fault_fired(id), 1);
	softrdma_fault_remove(id);
	assert_int_equal(store_null_1(NULL, NULL, cl), RPC_SUCCESS);
	clnt_destroy(cl);
}

/*
 * The connection goes down while the server holds a call it never answers:
 * the call fails with RPC_CANTRECV at once, not at its 10 s timeout, and
 * the client carries on with a new connection.
 */
static void t_peer_disconnects_mid_call(void **state)
{
	struct softrdma_fault f = {
		/* At the server's receive of the next call. */
		.match = { .recv = 1, .nth = 1, .count = 1 },
		.kind = SOFTRDMA_FAULT_DISCONNECT,
	};
	struct timeval timeout = { .tv_sec = 10 };
	struct timespec t0, t1;
	CLIENT *cl = client();
	int id;

	(void)state;
	assert_true(clnt_control(cl, CLSET_TIMEOUT, (char *)&timeout));
	assert_int_equal(store_null_1(NULL, NULL, cl), RPC_SUCCESS);
	id = softrdma_fault_add(&f);
	assert_true(id > 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(store_hang_1(NULL, NULL, cl), RPC_CANTRECV);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 5);
	assert_int_equal(softrdma_fault_fired(id), 1);
	softrdma_fault_remove(id);
	assert_int_equal(store_null_1(NULL, NULL, cl), RPC_SUCCESS);
	clnt_destroy(cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_round_trip),
		cmocka_unit_test(t_ddp_get),
		cmocka_unit_test(t_fault_at_send),
		cmocka_unit_test(t_peer_disconnects_mid_call),
	};

	return cmocka_run_group_tests(tests, server_up, server_down);
}

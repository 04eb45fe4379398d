/* SPDX-License-Identifier: MIT */
/*
 * Direct data placement end to end: payloads (Read chunks), results (Write
 * chunks), long calls (position-zero Read chunks) and long replies (Reply
 * chunks), at sizes around every boundary, in each combination, through
 * bounce buffers, registered memory (memory windows) and persistent
 * registration, each checked byte for byte; and the release callbacks of
 * the server's payloads run exactly once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <softrdma.h>

#include "ddp.h"
#include "harness.h"
#include "svc_rdma.h"
#include "xprt_rdma.h"

#define MiB (1024 * 1024)
#define ARENA (48 * MiB)

enum reg_mode { REG_BOUNCE, REG_WINDOWS, REG_PERSISTENT };

static const char *const reg_names[] = { "bounce", "windows", "persistent" };

struct fixture {
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_mem *mem;
	unsigned char *arena;
	size_t used;
	enum reg_mode mode;
	uint32_t xid;
	uint64_t svc_heap;	/* the server's heap_bytes before the client came */
};

static size_t round4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* Calls run one at a time: each case starts the arena afresh. */
static void arena_reset(struct fixture *fx)
{
	fx->used = 0;
}

static void *arena_get(struct fixture *fx, size_t len)
{
	void *p;

	/* Registered memory, or plain heap for the bounce path. */
	if (fx->mode == REG_BOUNCE)
		return malloc(len ? len : 1);
	len = round4(len ? len : 1) + 64;
	assert_true(fx->used + len <= ARENA);
	p = fx->arena + fx->used;
	fx->used += len;
	return p;
}

static void arena_put(struct fixture *fx, void *p)
{
	if (fx->mode == REG_BOUNCE)
		free(p);
}

static void fixture_up(struct fixture *fx, enum reg_mode mode)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };

	memset(fx, 0, sizeof(*fx));
	fx->mode = mode;
	fx->xid = 0x10000;
	memset(&ddp_counters, 0, sizeof(ddp_counters));
	assert_int_equal(harness_server_start(&fx->hs, 16, 0, HARNESS_DDP), 0);
	fx->svc_heap = harness_server_stats(&fx->hs).heap_bytes;
	harness_clnt_attr(&fx->hs, &attr);
	if (mode == REG_PERSISTENT)
		attr.flags = RPCRDMA_CLNT_PERSISTENT_REG;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &fx->clnt), 0);
	if (mode != REG_BOUNCE) {
		fx->arena = aligned_alloc(4096, ARENA);
		assert_non_null(fx->arena);
		assert_int_equal(rpcrdma_clnt_mem_register(fx->clnt, fx->arena, ARENA, &fx->mem), 0);
	}
}

static void fixture_down(struct fixture *fx)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	uint64_t heap = 0;
	int i;

	assert_int_equal(rpcrdma_clnt_stats(fx->clnt, &st), 0);
	if (fx->mode == REG_BOUNCE)
		assert_true(st.bounce_bytes > 0);
	else
		assert_int_equal(st.bounce_bytes, 0);
	assert_int_equal(rpcrdma_mem_deregister(fx->mem), 0);
	rpcrdma_clnt_destroy(fx->clnt);
	/*
	 * Everything the connection allocated (Read contexts, grown Write and
	 * release arrays, chunk tables, echoes, sinks) went through the
	 * accounting: once it is freed, the server is back where it started.
	 */
	for (i = 0; i < 300; i++) {
		heap = harness_server_stats(&fx->hs).heap_bytes;
		if (heap == fx->svc_heap)
			break;
		poll(NULL, 0, 10);
	}
	assert_int_equal(heap, fx->svc_heap);
	harness_server_stop(&fx->hs);
	free(fx->arena);
	/* Every payload the server named was released, once. */
	assert_int_equal(atomic_load(&ddp_counters.released), atomic_load(&ddp_counters.named));
	assert_int_equal(atomic_load(&ddp_counters.reply_errors), 0);
	harness_assert_fabric_idle();
}

static void sync_done(struct rpcrdma_call *call)
{
	*(int *)call->arg = 1;
}

static int run_call(struct fixture *fx, struct rpcrdma_call *call)
{
	int finished = 0, rc;

	call->done = sync_done;
	call->arg = &finished;
	rc = rpcrdma_clnt_submit(fx->clnt, call);
	if (rc)
		return rc;
	while (!finished)
		rpcrdma_clnt_wait(fx->clnt, 100);
	return call->status;
}

/*
 * DDP_OP_ECHO of a @msg_len-byte message with a @payload_len-byte payload
 * at @pos; a Write chunk for the echoed payload when @want_result.
 */
static void echo_case(struct fixture *fx, size_t msg_len, size_t payload_len, uint32_t pos,
		      bool want_result)
{
	size_t expect_len = msg_len + (want_result || !payload_len ? 0 : round4(payload_len));
	unsigned char *msg = (arena_reset(fx), arena_get(fx, msg_len));
	unsigned char *payload = arena_get(fx, payload_len);
	unsigned char *reply = arena_get(fx, expect_len);
	unsigned char *result = want_result ? arena_get(fx, payload_len) : NULL;
	uint32_t pseed = fx->xid * 7 + 1;
	size_t off;
	int rc;
	struct rpcrdma_call call = {
		RPCRDMA_SIZED(call),
		.msg = msg,
		.msg_len = msg_len,
		.payload = payload_len ? payload : NULL,
		.payload_len = payload_len,
		.payload_pos = pos,
		.reply = reply,
		.reply_max = expect_len,
		.result = result,
		.result_max = want_result ? payload_len : 0,
	};

	ddp_fill(msg, msg_len, fx->xid);
	rpcmsg_call_head(msg, ++fx->xid);
	put32(msg, DDP_W_OP, DDP_OP_ECHO);
	ddp_fill(payload, payload_len, pseed);
	rc = run_call(fx, &call);
	if (expect_len > 16 * MiB) {
		/* A reply of more than 16 segments of 1 MiB cannot be offered a Reply chunk. */
		assert_int_equal(rc, -EMSGSIZE);
		goto out;
	}
	if (rc)
		fail_msg("%s: echo msg %zu payload %zu at %u result %d: status %d", reg_names[fx->mode],
			 msg_len, payload_len, pos, want_result, rc);
	if (call.reply_len != expect_len)
		fail_msg("%s: echo msg %zu payload %zu: reply %zu bytes, expected %zu",
			 reg_names[fx->mode], msg_len, payload_len, call.reply_len, expect_len);
	if (want_result || !payload_len) {
		harness_assert_echo(reply, msg, msg_len);
	} else {
		/* The payload came back inline, spliced at its position and padded. */
		harness_assert_echo(reply, msg, pos);
		off = ddp_check(reply + pos, payload_len, pseed);
		if (off != payload_len)
			fail_msg("%s: spliced payload differs at %zu", reg_names[fx->mode], off);
		for (off = payload_len; off < round4(payload_len); off++)
			assert_int_equal(reply[pos + off], 0);
		assert_memory_equal(reply + pos + round4(payload_len), msg + pos, msg_len - pos);
	}
	if (want_result) {
		assert_int_equal(call.result_len, payload_len);
		off = ddp_check(result, payload_len, pseed);
		if (off != payload_len)
			fail_msg("%s: result of %zu bytes differs at %zu", reg_names[fx->mode],
				 payload_len, off);
	}
out:
	arena_put(fx, msg);
	arena_put(fx, payload);
	arena_put(fx, reply);
	if (result)
		arena_put(fx, result);
}

/* DDP_OP_READ of @bytes: a result by Write chunk, or spliced into the reply. */
static void read_case(struct fixture *fx, size_t bytes, bool want_result)
{
	size_t expect_len = DDP_READ_POS + (want_result ? 0 : round4(bytes));
	bool too_big = expect_len > 16 * MiB;
	unsigned char *msg = (arena_reset(fx), arena_get(fx, DDP_CALL_LEN));
	unsigned char *reply = arena_get(fx, expect_len);
	/* Room beyond what comes (the reply says how much was written), within 16 MiB. */
	size_t room = bytes + 100 > 16 * MiB ? bytes : bytes + 100;
	unsigned char *result = want_result ? arena_get(fx, room) : NULL;
	uint32_t seed = fx->xid * 3 + 5;
	size_t off;
	int rc;
	struct rpcrdma_call call = {
		RPCRDMA_SIZED(call),
		.msg = msg,
		.msg_len = DDP_CALL_LEN,
		.reply = reply,
		.reply_max = expect_len,
		.result = result,
		.result_max = want_result ? room : 0,
	};

	ddp_call_msg(msg, ++fx->xid, DDP_OP_READ, (uint32_t)bytes, seed);
	rc = run_call(fx, &call);
	if (too_big) {
		assert_int_equal(rc, -EMSGSIZE);
		goto out;
	}
	if (rc)
		fail_msg("%s: read %zu result %d: status %d", reg_names[fx->mode], bytes, want_result,
			 rc);
	assert_int_equal(call.reply_len, expect_len);
	assert_true(rpcmsg_echoes(reply, msg, DDP_READ_POS));
	if (want_result) {
		assert_int_equal(call.result_len, bytes);
		off = ddp_check(result, bytes, seed);
	} else {
		off = ddp_check(reply + DDP_READ_POS, bytes, seed);
	}
	if (off != bytes)
		fail_msg("%s: read of %zu bytes differs at %zu", reg_names[fx->mode], bytes, off);
out:
	arena_put(fx, msg);
	arena_put(fx, reply);
	if (result)
		arena_put(fx, result);
}

/* A Write chunk offered and left unused: echoed with zero bytes written. */
static void unused_write_chunk_case(struct fixture *fx)
{
	unsigned char *msg = (arena_reset(fx), arena_get(fx, 40));
	unsigned char *reply = arena_get(fx, 40);
	unsigned char *result = arena_get(fx, 3 * 4096);
	struct rpcrdma_call call = {
		RPCRDMA_SIZED(call),
		.msg = msg,
		.msg_len = 40,
		.reply = reply,
		.reply_max = 40,
		.result = result,
		.result_max = 3 * 4096,
	};

	ddp_fill(msg, 40, 9);
	rpcmsg_call_head(msg, ++fx->xid);
	put32(msg, DDP_W_OP, DDP_OP_ECHO);
	assert_int_equal(run_call(fx, &call), 0);
	assert_int_equal(call.reply_len, 40);
	harness_assert_echo(reply, msg, 40);
	assert_int_equal(call.result_len, 0);
	arena_put(fx, msg);
	arena_put(fx, reply);
	arena_put(fx, result);
}

static const size_t payload_sizes[] = {
	0, 1, 2, 3, 4, 5, 6, 7, 4095, 4096, 4097, 600 * 1024 + 1, MiB, MiB + 3, 5 * MiB + 1, 16 * MiB,
};

static void run_matrix(enum reg_mode mode)
{
	static const size_t msg_sizes[] = { DDP_CALL_MIN, 100, 4000, 4040, 4067, 4068, 4069, 4100,
					    9000, MiB };
	struct fixture fx;
	size_t i;

	fixture_up(&fx, mode);
	/* Long calls and long replies: the message itself, echoed. */
	for (i = 0; i < sizeof(msg_sizes) / sizeof(msg_sizes[0]); i++)
		echo_case(&fx, msg_sizes[i], 0, 0, false);
	/* Payloads by Read chunk, back by Write chunk or inline/Reply chunk. */
	for (i = 0; i < sizeof(payload_sizes) / sizeof(payload_sizes[0]); i++) {
		echo_case(&fx, 40, payload_sizes[i], 24, true);
		echo_case(&fx, 40, payload_sizes[i], 24, false);
		read_case(&fx, payload_sizes[i], true);
		read_case(&fx, payload_sizes[i], false);
	}
	unused_write_chunk_case(&fx);
	/* A long call carrying a payload too, at the message's end. */
	echo_case(&fx, 9000, MiB + 1, 9000, true);
	echo_case(&fx, 9000, 3, DDP_ARG_POS, false);
	fixture_down(&fx);
}

static void t_bounce(void **state)
{
	run_matrix(REG_BOUNCE);
}

static void t_windows(void **state)
{
	run_matrix(REG_WINDOWS);
}

static void t_persistent(void **state)
{
	run_matrix(REG_PERSISTENT);
}

struct cancel_wait {
	int finished;
	int status;
};

static void cancel_done(struct rpcrdma_call *call)
{
	struct cancel_wait *w = call->arg;

	w->finished++;
	w->status = call->status;
}

/*
 * A call abandoned while the server holds it: its windows are invalidated
 * synchronously (frwr_unmap_sync) before done() runs with -ECANCELED, so the
 * server can no longer reach its memory; the server's late reply then breaks
 * the connection (its RDMA Write hits a dead window), and the client
 * recovers on a new one.
 */
static void t_cancel_in_flight(void **state)
{
	struct fixture fx;
	struct cancel_wait w = { 0 };
	struct rpcrdma_xprt *x;
	struct rpcrdma_req *req = NULL;
	uint32_t rkeys[64], nkeys = 0, i, linv;
	unsigned char *msg, *reply;
	struct rpcrdma_call call = { RPCRDMA_SIZED(call) };

	fixture_up(&fx, REG_WINDOWS);
	atomic_store(&fx.hs.sh->mode, HARNESS_HOLD);
	msg = arena_get(&fx, 9000);
	reply = arena_get(&fx, 9000);
	ddp_fill(msg, 9000, 1);
	rpcmsg_call_head(msg, ++fx.xid);
	RPCRDMA_INIT(&call);
	call.msg = msg;
	call.msg_len = 9000;		/* a long call ... */
	call.reply = reply;
	call.reply_max = 9000;		/* ... offering a Reply chunk */
	call.done = cancel_done;
	call.arg = &w;
	assert_int_equal(rpcrdma_clnt_submit(fx.clnt, &call), 0);
	assert_true(harness_wait_for(harness_holds_one, &fx.hs, 5000));

	x = rpcrdma_clnt_xprt(fx.clnt);
	for (i = 0; i < x->rx_nreqs; i++)
		if (x->rx_reqs[i].rl_call == &call)
			req = &x->rx_reqs[i];
	assert_non_null(req);
	for (i = 0; i < req->rl_nreads; i++)
		rkeys[nkeys++] = req->rl_reads[i].seg.handle;
	for (i = 0; i < req->rl_nreply; i++)
		rkeys[nkeys++] = req->rl_reply[i].handle;
	assert_true(nkeys >= 2);
	for (i = 0; i < nkeys; i++)
		assert_int_equal(softrdma_rkey_reach(rkeys[i], NULL, NULL, NULL), 0);

	linv = (uint32_t)softrdma_executed(IBV_WR_LOCAL_INV);
	assert_int_equal(rpcrdma_clnt_cancel(fx.clnt, &call), 0);
	assert_int_equal(w.finished, 1);
	assert_int_equal(w.status, -ECANCELED);
	/* Fenced by LOCAL_INVs, or by deregistering per-call MRs without a window. */
	assert_int_equal(softrdma_executed(IBV_WR_LOCAL_INV) - linv,
			 harness_device_windows() ? nkeys : 0);
	for (i = 0; i < nkeys; i++)
		assert_int_equal(softrdma_rkey_reach(rkeys[i], NULL, NULL, NULL), -ENOENT);
	assert_int_equal(rpcrdma_clnt_cancel(fx.clnt, &call), -ENOENT);

	/* The server answers late: its Reply-chunk Write meets a dead window. */
	harness_server_release(&fx.hs);
	atomic_store(&fx.hs.sh->mode, HARNESS_DDP);
	echo_case(&fx, 100, 10, DDP_ARG_POS, true);
	assert_int_equal(w.finished, 1);
	fixture_down(&fx);
}

/*
 * A cancel whose invalidation does not finish in time (the LOCAL_INVs are
 * held back past the bound) fences the memory all the same: the QP goes to
 * ERR before the call is handed back, so no window of the call is usable
 * by the server. The client recovers on a new connection.
 */
static void t_cancel_fence_times_out(void **state)
{
	struct softrdma_fault hold = {
		.match = { .opcode_mask = 1u << IBV_WR_LOCAL_INV, .count = 1 },
		.kind = SOFTRDMA_FAULT_DELAY, .delay_us = 1500000,
	};
	struct rpcrdma_call call = { RPCRDMA_SIZED(call) };
	struct cancel_wait w = { 0 };
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qa;
	struct rpcrdma_req *req = NULL;
	struct rpcrdma_xprt *x;
	struct fixture fx;
	unsigned char *msg, *reply;
	uint32_t rkey, i;
	int id, reach;

	harness_require_inproc("reaches into the client and its fabric");
	harness_require_windows("a cancel fenced by invalidating windows");
	harness_skip_on(HARNESS_FABRIC_STEP, "a stepped fabric does not wait out delays");
	fixture_up(&fx, REG_WINDOWS);
	atomic_store(&fx.hs.sh->mode, HARNESS_HOLD);
	msg = arena_get(&fx, 64);
	reply = arena_get(&fx, 9000);
	ddp_fill(msg, 64, 2);
	rpcmsg_call_head(msg, ++fx.xid);
	call.msg = msg;
	call.msg_len = 64;
	call.reply = reply;
	call.reply_max = 9000;		/* a Reply chunk: a window the server may write */
	call.done = cancel_done;
	call.arg = &w;
	assert_int_equal(rpcrdma_clnt_submit(fx.clnt, &call), 0);
	assert_true(harness_wait_for(harness_holds_one, &fx.hs, 5000));
	x = rpcrdma_clnt_xprt(fx.clnt);
	for (i = 0; i < x->rx_nreqs; i++)
		if (x->rx_reqs[i].rl_call == &call)
			req = &x->rx_reqs[i];
	assert_non_null(req);
	assert_true(req->rl_nreply >= 1);
	rkey = req->rl_reply[0].handle;
	assert_int_equal(softrdma_rkey_reach(rkey, NULL, NULL, NULL), 0);

	hold.match.qp_num = x->rx_ep.qp->qp_num;
	id = softrdma_fault_add(&hold);
	assert_true(id > 0);
	x->rx_attr.connect_timeout_ms = 200;	/* frwr_unmap_sync()'s bound */
	assert_int_equal(rpcrdma_clnt_cancel(fx.clnt, &call), 0);
	assert_int_equal(softrdma_fault_fired(id), 1);
	assert_int_equal(w.finished, 1);
	assert_int_equal(w.status, -ECANCELED);
	/* The window may still be bound, but only to a QP that takes nothing. */
	reach = softrdma_rkey_reach(rkey, NULL, NULL, NULL);
	if (reach == 0) {
		assert_int_equal(ibv_query_qp(x->rx_ep.qp, &qa, IBV_QP_STATE, &init), 0);
		assert_int_equal(qa.qp_state, IBV_QPS_ERR);
	}
	softrdma_fault_remove(id);
	x->rx_attr.connect_timeout_ms = 5000;

	harness_server_release(&fx.hs);
	atomic_store(&fx.hs.sh->mode, HARNESS_DDP);
	echo_case(&fx, 100, 10, DDP_ARG_POS, true);
	assert_int_equal(w.finished, 1);
	fixture_down(&fx);
}

/* On the server thread: force the last connection's initiator depth to 2. */
static void set_ord_2(struct harness_server *hs, void *arg)
{
	struct svcxprt_rdma *rdma = svc_conn_rdma(hs->conns[hs->nconns - 1]);

	*(uint32_t *)arg = rdma->sc_ord;
	rdma->sc_ord = 2;
}

/*
 * The server pulls a Read chunk in waves of at most its initiator depth:
 * with the depth forced to 2, a 16-segment payload takes 8 waves and still
 * arrives intact.
 */
static void t_read_waves(void **state)
{
	harness_require_inproc("sets the server connection's ORD on its thread");
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct fixture fx;
	unsigned long reads;
	uint32_t ord = 0;

	fixture_up(&fx, REG_WINDOWS);
	assert_int_equal(rpcrdma_mem_deregister(fx.mem), 0);
	rpcrdma_clnt_destroy(fx.clnt);
	/* 4 KiB segments: a 64 KiB payload is 16 of them. */
	harness_clnt_attr(&fx.hs, &attr);
	attr.max_segment = 4096;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &fx.clnt), 0);
	assert_int_equal(rpcrdma_clnt_mem_register(fx.clnt, fx.arena, ARENA, &fx.mem), 0);
	echo_case(&fx, 40, 8, 24, true);	/* the server has the connection now */
	harness_server_run(&fx.hs, set_ord_2, &ord);
	assert_true(ord >= 2);
	reads = softrdma_executed(IBV_WR_RDMA_READ);
	echo_case(&fx, 40, 16 * 4096, 24, true);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_READ) - reads, 16);
	fixture_down(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_windows),
		cmocka_unit_test(t_bounce),
		cmocka_unit_test(t_persistent),
		cmocka_unit_test(t_cancel_in_flight),
		cmocka_unit_test(t_cancel_fence_times_out),
		cmocka_unit_test(t_read_waves),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

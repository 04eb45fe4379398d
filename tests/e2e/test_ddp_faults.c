/* SPDX-License-Identifier: MIT */
/*
 * Fault injection at every work request of a DDP RPC, on both sides. The
 * call carries a payload (Read chunk), asks for a result (Write chunk) and
 * offers a Reply chunk, all through memory windows, so its WRs are:
 *   client: BIND_MW x3, Send            server: Receive, RDMA Read,
 *   server: RDMA Write (result), RDMA Write (Reply chunk), Send
 *   client: Receive, LOCAL_INV x3
 * Each is flushed (QP to ERR), failed with an error status, or hit by a
 * disconnect. The call fails with -ECONNRESET, or with one retry succeeds
 * byte for byte on a new connection; the server's payload releases run
 * exactly once; no window, MR or WR is left behind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <softrdma.h>

#include "ddp.h"
#include "harness.h"

#define PAYLOAD 10000
#define MSG 40
#define POS 24
#define ARENA (1 << 20)

struct position {
	const char *name;
	struct softrdma_match match;
	enum ibv_wc_status status;	/* the error for this WR type */
};

#define OP(op) (1u << (op))

static const struct position positions[] = {
	{ "client BIND_MW (payload)", { .opcode_mask = OP(IBV_WR_BIND_MW), .nth = 1, .count = 1 },
	  IBV_WC_MW_BIND_ERR },
	{ "client BIND_MW (result)", { .opcode_mask = OP(IBV_WR_BIND_MW), .nth = 2, .count = 1 },
	  IBV_WC_MW_BIND_ERR },
	{ "client BIND_MW (reply)", { .opcode_mask = OP(IBV_WR_BIND_MW), .nth = 3, .count = 1 },
	  IBV_WC_MW_BIND_ERR },
	{ "client Send", { .opcode_mask = OP(IBV_WR_SEND), .nth = 1, .count = 1 },
	  IBV_WC_REM_ACCESS_ERR },
	{ "server Receive", { .recv = 1, .nth = 1, .count = 1 }, IBV_WC_LOC_PROT_ERR },
	{ "server RDMA Read", { .opcode_mask = OP(IBV_WR_RDMA_READ), .nth = 1, .count = 1 },
	  IBV_WC_REM_ACCESS_ERR },
	{ "server RDMA Write (result)", { .opcode_mask = OP(IBV_WR_RDMA_WRITE), .nth = 1,
					  .count = 1 }, IBV_WC_REM_ACCESS_ERR },
	{ "server RDMA Write (Reply chunk)", { .opcode_mask = OP(IBV_WR_RDMA_WRITE), .nth = 2,
					       .count = 1 }, IBV_WC_REM_ACCESS_ERR },
	{ "server Send", { .opcode_mask = OP(IBV_WR_SEND), .nth = 2, .count = 1 },
	  IBV_WC_REM_ACCESS_ERR },
	{ "client Receive", { .recv = 1, .nth = 2, .count = 1 }, IBV_WC_LOC_PROT_ERR },
	{ "client LOCAL_INV 1", { .opcode_mask = OP(IBV_WR_LOCAL_INV), .nth = 1, .count = 1 },
	  IBV_WC_LOC_QP_OP_ERR },
	{ "client LOCAL_INV 3", { .opcode_mask = OP(IBV_WR_LOCAL_INV), .nth = 3, .count = 1 },
	  IBV_WC_LOC_QP_OP_ERR },
};

struct fixture {
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_mem *mem;
	unsigned char *arena;
	uint32_t xid;
};

static void sync_done(struct rpcrdma_call *call)
{
	*(int *)call->arg = 1;
}

/* One DDP echo: payload by Read chunk, back by Write chunk, reply by Reply chunk. */
static int ddp_call(struct fixture *fx, bool check)
{
	unsigned char *msg = fx->arena, *payload = fx->arena + 4096;
	unsigned char *result = fx->arena + 4096 + 16384, *reply = fx->arena + 65536;
	uint32_t seed = fx->xid + 17;
	int finished = 0, rc;
	struct rpcrdma_call call = {
		RPCRDMA_SIZED(call),
		.msg = msg,
		.msg_len = MSG,
		.payload = payload,
		.payload_len = PAYLOAD,
		.payload_pos = POS,
		.reply = reply,
		.reply_max = 8192,	/* more than fits inline: a Reply chunk is offered */
		.result = result,
		.result_max = PAYLOAD,
		.done = sync_done,
		.arg = &finished,
	};

	ddp_fill(msg, MSG, seed);
	rpcmsg_call_head(msg, ++fx->xid);
	put32(msg, DDP_W_OP, DDP_OP_ECHO);
	ddp_fill(payload, PAYLOAD, seed);
	memset(result, 0, PAYLOAD);
	rc = rpcrdma_clnt_submit(fx->clnt, &call);
	if (rc)
		return rc;
	while (!finished)
		rpcrdma_clnt_wait(fx->clnt, 100);
	if (call.status || !check)
		return call.status;
	if (call.reply_len != MSG || !rpcmsg_echoes(reply, msg, MSG) ||
	    call.result_len != PAYLOAD ||
	    ddp_check(result, PAYLOAD, seed) != PAYLOAD)
		return -EBADMSG;
	return 0;
}

static void fixture_up(struct fixture *fx, unsigned int retries)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };

	memset(fx, 0, sizeof(*fx));
	memset(&ddp_counters, 0, sizeof(ddp_counters));
	fx->xid = 0x7000;
	assert_int_equal(harness_server_start(&fx->hs, 8, 0, HARNESS_DDP), 0);
	harness_clnt_attr(&fx->hs, &attr);
	attr.retries = retries;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &fx->clnt), 0);
	fx->arena = aligned_alloc(4096, ARENA);
	assert_non_null(fx->arena);
	assert_int_equal(rpcrdma_clnt_mem_register(fx->clnt, fx->arena, ARENA, &fx->mem), 0);
	/* A clean DDP call first: windows bound and invalidated, all three chunks used. */
	assert_int_equal(ddp_call(fx, true), 0);
	assert_int_equal(rpcrdma_clnt_stats(fx->clnt, &st), 0);
	assert_int_equal(st.read_chunks, 1);
	assert_int_equal(st.write_chunks, 1);
	assert_int_equal(st.reply_chunks, 1);
	assert_int_equal(st.bounce_bytes, 0);
}

static void fixture_down(struct fixture *fx)
{

	assert_int_equal(rpcrdma_mem_deregister(fx->mem), 0);
	rpcrdma_clnt_destroy(fx->clnt);
	harness_server_stop(&fx->hs);
	free(fx->arena);
	assert_int_equal(atomic_load(&ddp_counters.released), atomic_load(&ddp_counters.named));
	harness_assert_fabric_idle();
}

static void run_case(const struct position *pos, enum softrdma_fault_kind kind,
		     unsigned int retries)
{
	struct softrdma_fault f = { .match = pos->match, .kind = kind, .status = pos->status };
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	struct fixture fx;
	int id, rc;

	if (pos->match.opcode_mask & (OP(IBV_WR_BIND_MW) | OP(IBV_WR_LOCAL_INV)) &&
	    !harness_device_windows()) {
		/* Per-call registration posts neither. */
		fprintf(stderr, "profile %s has no memory windows: %s (kind %d) not run\n",
			softrdma_profile(), pos->name, kind);
		return;
	}
	if (harness_fabric() == HARNESS_FABRIC_PROC) {
		/* Faults are per process: the server's WRs are out of reach ... */
		if (strncmp(pos->name, "server", 6) == 0) {
			fprintf(stderr, "E2E_FABRIC=proc: %s (kind %d) not run\n", pos->name, kind);
			return;
		}
		/* ... and its Receive does not count before the client's. */
		if (f.match.recv)
			f.match.nth = 1;
	}
	fixture_up(&fx, retries);
	id = softrdma_fault_add(&f);
	assert_true(id > 0);
	rc = ddp_call(&fx, retries == 1);
	if (softrdma_fault_fired(id) != 1)
		fail_msg("%s (kind %d): the fault did not fire", pos->name, kind);
	softrdma_fault_remove(id);
	if (retries == 0 && rc != -ECONNRESET)
		fail_msg("%s (kind %d): status %d, expected -ECONNRESET", pos->name, kind, rc);
	if (retries == 1 && rc != 0)
		fail_msg("%s (kind %d): with a retry, status %d", pos->name, kind, rc);
	/* The connection is replaced; DDP works on the new one. */
	rc = ddp_call(&fx, true);
	if (rc)
		fail_msg("%s (kind %d): no recovery (%d)", pos->name, kind, rc);
	assert_int_equal(rpcrdma_clnt_info(fx.clnt, &info), 0);
	assert_int_equal(info.connects, 2);
	fixture_down(&fx);
}

static void run_kind(enum softrdma_fault_kind kind)
{
	const char *only = getenv("DDP_FAULT_ONLY");
	size_t i;
	unsigned int retries;

	for (i = 0; i < sizeof(positions) / sizeof(positions[0]); i++)
		if (only && atoi(only) != (int)i)
			continue;
		else
		for (retries = 0; retries <= 1; retries++)
			run_case(&positions[i], kind, retries);
}

static void t_flush_at_each_wr(void **state)
{
	run_kind(SOFTRDMA_FAULT_QP_ERROR);
}

static void t_error_at_each_wr(void **state)
{
	run_kind(SOFTRDMA_FAULT_STATUS);
}

static void t_disconnect_at_each_wr(void **state)
{
	run_kind(SOFTRDMA_FAULT_DISCONNECT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_flush_at_each_wr),
		cmocka_unit_test(t_error_at_each_wr),
		cmocka_unit_test(t_disconnect_at_each_wr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

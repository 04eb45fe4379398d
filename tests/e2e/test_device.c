/* SPDX-License-Identifier: MIT */
/*
 * The library fits the device it meets: under each softrdma profile (and
 * between two, E2E_SERVER_PROFILE) the client picks the registration mode
 * the device offers, queues no deeper than it allows, offers the Reads it
 * can take, and the server reads no more at once than the client offered.
 * Each test prints what was chosen, for the profile tables.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <softrdma.h>

#include "ddp.h"
#include "harness.h"
#include "svc_rdma.h"
#include "xprt_rdma.h"

#define ARENA (1u << 20)
#define SEG 4096u

static const char *reg_name(uint32_t reg)
{
	switch (reg) {
	case RPCRDMA_CLNT_REG_WINDOWS:
		return "memory windows";
	case RPCRDMA_CLNT_REG_PER_CALL:
		return "per-call MRs";
	case RPCRDMA_CLNT_REG_PERSISTENT:
		return "persistent";
	default:
		return "none";
	}
}

/* The client's device, as the library saw it. */
static void query_device(struct ibv_device_attr *dev)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;

	assert_non_null(list);
	assert_non_null(list[0]);
	ctx = ibv_open_device(list[0]);
	assert_non_null(ctx);
	assert_int_equal(ibv_query_device(ctx, dev), 0);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
}

static void sync_done(struct rpcrdma_call *call)
{
	*(int *)call->arg = 1;
}

static int call_sync(struct rpcrdma_clnt *clnt, struct rpcrdma_call *call)
{
	int finished = 0, rc;

	call->done = sync_done;
	call->arg = &finished;
	rc = rpcrdma_clnt_submit(clnt, call);
	if (rc)
		return rc;
	while (!finished)
		rpcrdma_clnt_wait(clnt, 100);
	return call->status;
}

/* Everything down: each payload the server named released once, nothing left. */
static void teardown(struct harness_server *hs, struct rpcrdma_clnt *clnt,
		     struct rpcrdma_mem *mem, unsigned char *arena)
{
	assert_int_equal(rpcrdma_mem_deregister(mem), 0);
	rpcrdma_clnt_destroy(clnt);
	free(arena);
	harness_server_stop(hs);
	assert_int_equal(atomic_load(&ddp_counters.released), atomic_load(&ddp_counters.named));
	harness_assert_fabric_idle();
}

static void server_ord(struct harness_server *hs, void *arg)
{
	*(uint32_t *)arg = svc_conn_rdma(hs->conns[hs->nconns - 1])->sc_ord;
}

static void server_max_init(struct harness_server *hs, void *arg)
{
	struct ibv_device_attr dev;

	assert_int_equal(ibv_query_device(hs->svc->sv_pds[0].pd->context, &dev), 0);
	*(uint32_t *)arg = (uint32_t)dev.max_qp_init_rd_atom;
}

/* A profile's max_qp_init_rd_atom (softrdma/verbs/profile.c's figures; see its README). */
static uint32_t profile_max_init(const char *profile)
{
	if (strcmp(profile, "mlx5") == 0)
		return 16;
	if (strcmp(profile, "rxe") == 0 || strcmp(profile, "siw") == 0)
		return 128;
	return 16;
}

/*
 * One echo call whose long message and payload are each 16 segments of
 * 4 KiB: 32 RDMA Reads by the server, more than the smallest IRD of any
 * profile, which the client's QP refuses beyond what it offered.
 */
static void wide_call(struct rpcrdma_clnt *clnt, unsigned char *arena, uint32_t seed)
{
	size_t msg_len = 16 * SEG, pay_len = 16 * SEG;
	unsigned char *msg = arena, *payload = arena + msg_len, *reply = payload + pay_len;
	unsigned char *result = reply + msg_len;
	struct rpcrdma_call call = {
		RPCRDMA_SIZED(call),
		.msg = msg, .msg_len = msg_len,
		.payload = payload, .payload_len = pay_len, .payload_pos = DDP_ARG_POS,
		.reply = reply, .reply_max = msg_len,
		.result = result, .result_max = pay_len,
	};
	int rc;

	ddp_fill(msg, msg_len, seed);
	rpcmsg_call_head(msg, seed);
	put32(msg, DDP_W_OP, DDP_OP_ECHO);
	ddp_fill(payload, pay_len, seed + 1);
	rc = call_sync(clnt, &call);
	if (rc)
		fail_msg("profile %s: a call of 32 Read segments failed: %d", softrdma_profile(), rc);
	assert_int_equal(call.reply_len, msg_len);
	harness_assert_echo(reply, msg, msg_len);
	assert_int_equal(call.result_len, pay_len);
	assert_int_equal(ddp_check(result, pay_len, seed + 1), pay_len);
}

static void fit(uint32_t flags)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	const char *server_profile = getenv("E2E_SERVER_PROFILE");
	struct ibv_device_attr dev;
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_mem *mem;
	uint32_t ord = 0, max_init = 0, want;
	unsigned char *arena;
	uint32_t reg;

	query_device(&dev);
	memset(&ddp_counters, 0, sizeof(ddp_counters));
	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_DDP), 0);
	harness_clnt_attr(&hs, &attr);
	attr.max_segment = SEG;
	attr.max_requests = 1024;	/* more than some devices queue: fitted down */
	attr.flags = flags;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);

	if (flags & RPCRDMA_CLNT_PERSISTENT_REG)
		reg = RPCRDMA_CLNT_REG_PERSISTENT;
	else if (dev.device_cap_flags &
		 (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B))
		reg = RPCRDMA_CLNT_REG_WINDOWS;
	else
		reg = RPCRDMA_CLNT_REG_PER_CALL;
	assert_int_equal(info.registration, reg);
	/* The CM settles on the server's initiator depth, at most what we offered. */
	want = dev.max_qp_rd_atom < 255 ? (uint32_t)dev.max_qp_rd_atom : 255;
	assert_in_range(info.responder_resources, 1, want);
	assert_true(info.send_queue >= 2 && info.send_queue < (uint32_t)dev.max_qp_wr);
	/* The most of 256, 64, 0 the profile takes (siw: 80 bytes at most). */
	assert_int_equal(info.inline_data, strcmp(softrdma_profile(), "siw") == 0 ? 64 : 256);

	arena = aligned_alloc(4096, ARENA);
	assert_non_null(arena);
	assert_int_equal(rpcrdma_clnt_mem_register(clnt, arena, ARENA, &mem), 0);
	wide_call(clnt, arena, 0x100);
	if (harness_fabric() != HARNESS_FABRIC_PROC) {
		harness_server_run(&hs, server_ord, &ord);
		harness_server_run(&hs, server_max_init, &max_init);
		/* The server reads no more at once than either side allows. */
		assert_int_equal(ord, want < max_init ? want : max_init);
		assert_int_equal(ord, info.responder_resources);
	} else if (server_profile) {
		assert_int_equal(info.responder_resources,
				 want < profile_max_init(server_profile) ? want :
				 profile_max_init(server_profile));
	}
	fprintf(stderr, "profile %s (server %s): registration %s, IRD = server ORD %u "
		"(offered %u), send queue %u, inline data %u, device max_sge %d, max_sge_rd %d\n",
		softrdma_profile(), server_profile ? server_profile : softrdma_profile(),
		reg_name(info.registration), info.responder_resources, want, info.send_queue,
		info.inline_data, dev.max_sge, dev.max_sge_rd);
	teardown(&hs, clnt, mem, arena);
}

static void set_max_msg_4k(struct harness_server *hs, void *arg)
{
	svc_conn_rdma(hs->conns[hs->nconns - 1])->sc_max_msg = 4096;
}

/*
 * A client's segment longer than the server's port carries in one message
 * is moved by several RDMA operations: here (the server's limit forced to
 * 4 KiB) a 64 KiB payload and result of one segment each take 16 Reads and
 * 16 Writes, and arrive intact.
 */
static void t_split_at_max_msg(void **state)
{
	harness_require_inproc("sets the server connection's max_msg_sz on its thread");
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_mem *mem;
	unsigned char *arena = aligned_alloc(4096, ARENA);
	unsigned char *msg = arena, *payload = arena + 4096, *result = arena + 4096 + 65536;
	unsigned char *reply = result + 65536;
	unsigned long reads, writes;
	struct rpcrdma_call call = {
		RPCRDMA_SIZED(call),
		.msg = msg, .msg_len = 64,
		.payload = payload, .payload_len = 65536, .payload_pos = DDP_ARG_POS,
		.reply = reply, .reply_max = 64,
		.result = result, .result_max = 65536,
	};

	assert_non_null(arena);
	memset(&ddp_counters, 0, sizeof(ddp_counters));
	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_DDP), 0);
	harness_clnt_attr(&hs, &attr);
	attr.max_segment = 65536;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	assert_int_equal(rpcrdma_clnt_mem_register(clnt, arena, ARENA, &mem), 0);
	wide_call(clnt, arena, 0x200);	/* the server has the connection now */
	harness_server_run(&hs, set_max_msg_4k, NULL);

	ddp_fill(msg, 64, 7);
	rpcmsg_call_head(msg, 0x300);
	put32(msg, DDP_W_OP, DDP_OP_ECHO);
	ddp_fill(payload, 65536, 8);
	reads = softrdma_executed(IBV_WR_RDMA_READ);
	writes = softrdma_executed(IBV_WR_RDMA_WRITE);
	assert_int_equal(call_sync(clnt, &call), 0);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_READ) - reads, 16);
	assert_int_equal(softrdma_executed(IBV_WR_RDMA_WRITE) - writes, 16);
	assert_int_equal(call.result_len, 65536);
	assert_int_equal(ddp_check(result, 65536, 8), 65536);
	harness_assert_echo(reply, msg, 64);

	teardown(&hs, clnt, mem, arena);
}

/* The client's segments are no longer than its port's max_msg_sz (8 MiB on rxe). */
static void t_segment_fits_port(void **state)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	struct ibv_context *ctx;
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	uint32_t want = 64u << 20;

	assert_non_null(list);
	ctx = ibv_open_device(list[0]);
	assert_non_null(ctx);
	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	ibv_close_device(ctx);
	ibv_free_device_list(list);

	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_DDP), 0);
	harness_clnt_attr(&hs, &attr);
	attr.max_segment = want;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	assert_int_equal(rpcrdma_clnt_xprt(clnt)->rx_attr.max_segment,
			 pa.max_msg_sz < want ? pa.max_msg_sz : want);
	fprintf(stderr, "profile %s: max_msg_sz %u, a 64 MiB max_segment became %u\n",
		softrdma_profile(), pa.max_msg_sz, rpcrdma_clnt_xprt(clnt)->rx_attr.max_segment);
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/*
 * iWARP runs over TCP and RoCE over UDP: a client whose device is of the
 * other transport than the server's is refused, and says so.
 */
static void t_transport_mismatch(void **state)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	const char *saved = getenv("E2E_SERVER_PROFILE");
	char *keep = saved ? strdup(saved) : NULL;
	bool iwarp = strcmp(softrdma_profile(), "siw") == 0;
	struct harness_server hs;
	struct rpcrdma_clnt *clnt = NULL;

	if (harness_fabric() != HARNESS_FABRIC_PROC) {
		fprintf(stderr, "skipped with E2E_FABRIC=%s: needs a server process of its own "
			"profile\n", harness_fabric_name());
		skip();
	}
	assert_int_equal(setenv("E2E_SERVER_PROFILE", iwarp ? "mlx5" : "siw", 1), 0);
	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_DDP), 0);
	if (keep)
		assert_int_equal(setenv("E2E_SERVER_PROFILE", keep, 1), 0);
	else
		assert_int_equal(unsetenv("E2E_SERVER_PROFILE"), 0);
	free(keep);
	harness_clnt_attr(&hs, &attr);
	attr.connect_timeout_ms = 3000;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), -ECONNREFUSED);
	assert_null(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

static void t_fit(void **state)
{
	fit(0);
}

static void t_fit_persistent(void **state)
{
	fit(RPCRDMA_CLNT_PERSISTENT_REG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_fit),
		cmocka_unit_test(t_fit_persistent),
		cmocka_unit_test(t_split_at_max_msg),
		cmocka_unit_test(t_segment_fits_port),
		cmocka_unit_test(t_transport_mismatch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * Structs that carry their own size (rpcrdma.h's conventions): a struct_size
 * of 0 or below the first version is -EINVAL, one beyond what the library
 * knows is -EOPNOTSUPP, at every entry point that takes such a struct; the
 * copying rules themselves (fields a smaller struct lacks read as 0, a
 * smaller struct is filled no further than its size) on synthetic versions.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <rpcrdma/rpcrdma.h>

#include "harness.h"
#include "sized.h"

/* Two versions of one struct, as a header would have them one release apart. */
struct demo_v1 {
	uint32_t struct_size;
	uint32_t a;
};

struct demo_v2 {
	uint32_t struct_size;
	uint32_t a;
	uint64_t b;
};

static void t_sized_in(void **state)
{
	struct demo_v1 old = { RPCRDMA_SIZED(old), .a = 7 };
	struct demo_v2 now, cur = { RPCRDMA_SIZED(cur), .a = 8, .b = 9 };
	unsigned char bigger[sizeof(struct demo_v2) + 8] = { 0 };

	/* An older caller: the field it lacks takes its default, 0. */
	memset(&now, 0xee, sizeof(now));
	assert_int_equal(rpcrdma_sized_in(&now, sizeof(now), &old, sizeof(old)), 0);
	assert_int_equal(now.a, 7);
	assert_int_equal(now.b, 0);
	assert_int_equal(rpcrdma_sized_in(&now, sizeof(now), &cur, sizeof(old)), 0);
	assert_int_equal(now.a, 8);
	assert_int_equal(now.b, 9);

	old.struct_size = 0;
	assert_int_equal(rpcrdma_sized_in(&now, sizeof(now), &old, sizeof(old)), -EINVAL);
	old.struct_size = sizeof(old) - 1;
	assert_int_equal(rpcrdma_sized_in(&now, sizeof(now), &old, sizeof(old)), -EINVAL);
	/* A newer caller: fields this library cannot read are refused, not ignored. */
	((struct demo_v2 *)(void *)bigger)->struct_size = sizeof(bigger);
	assert_int_equal(rpcrdma_sized_in(&now, sizeof(now), bigger, sizeof(old)), -EOPNOTSUPP);
}

static void t_sized_out(void **state)
{
	struct demo_v2 lib = { RPCRDMA_SIZED(lib), .a = 1, .b = 2 };
	union {
		struct demo_v1 v1;
		unsigned char bytes[sizeof(struct demo_v2)];
	} out;
	size_t i;

	/* An older caller's struct is filled up to its size, and not a byte further. */
	memset(&out, 0x5c, sizeof(out));
	out.v1.struct_size = sizeof(out.v1);
	assert_int_equal(rpcrdma_sized_out(&out, &lib, sizeof(lib), sizeof(out.v1)), 0);
	assert_int_equal(out.v1.struct_size, sizeof(out.v1));
	assert_int_equal(out.v1.a, 1);
	for (i = sizeof(out.v1); i < sizeof(out); i++)
		assert_int_equal(out.bytes[i], 0x5c);

	out.v1.struct_size = 0;
	assert_int_equal(rpcrdma_sized_out(&out, &lib, sizeof(lib), sizeof(out.v1)), -EINVAL);
	out.v1.struct_size = sizeof(lib) + 4;
	assert_int_equal(rpcrdma_sized_out(&out, &lib, sizeof(lib), sizeof(out.v1)), -EOPNOTSUPP);
}

static void noop_done(struct rpcrdma_call *call)
{
	(void)call;
}

static void read_svc_stats(struct harness_server *hs, void *arg)
{
	int *rc = arg;
	struct rpcrdma_stats st = { .struct_size = 0 };

	rc[0] = rpcrdma_svc_stats(hs->svc, &st);
	st.struct_size = sizeof(st) + 8;
	rc[1] = rpcrdma_svc_stats(hs->svc, &st);
	st.struct_size = sizeof(st);
	rc[2] = rpcrdma_svc_stats(hs->svc, &st);
}

static void on_call(struct rpcrdma_svc_call *call, void *arg)
{
	(void)arg;
	rpcrdma_svc_call_drop(call);
}

/* Every entry point that takes a sized struct checks struct_size first. */
static void t_entry_points(void **state)
{
	harness_require_inproc("calls rpcrdma_svc_stats() with every struct size on the server");
	struct harness_server hs;
	struct rpcrdma_clnt_attr attr;
	struct rpcrdma_svc_attr sattr = { RPCRDMA_SIZED(sattr), .on_call = on_call };
	struct rpcrdma_clnt_info info = { .struct_size = 0 };
	struct rpcrdma_stats st = { .struct_size = 0 };
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_svc *svc;
	struct rpcrdma_call call;
	unsigned char msg[16] = { 0, 0, 0, 1 }, reply[16];
	int rc[3];

	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_ECHO), 0);
	harness_clnt_attr(&hs, &attr);
	attr.struct_size = 0;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), -EINVAL);
	attr.struct_size = sizeof(attr) + 8;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), -EOPNOTSUPP);
	attr.struct_size = sizeof(attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);

	sattr.addr = (const struct sockaddr *)&hs.addr;
	sattr.struct_size = 0;
	assert_int_equal(rpcrdma_svc_listen(&sattr, &svc), -EINVAL);
	sattr.struct_size = sizeof(sattr) + 8;
	assert_int_equal(rpcrdma_svc_listen(&sattr, &svc), -EOPNOTSUPP);

	assert_int_equal(rpcrdma_clnt_info(clnt, &info), -EINVAL);
	info.struct_size = sizeof(info) + 4;
	assert_int_equal(rpcrdma_clnt_info(clnt, &info), -EOPNOTSUPP);
	info.struct_size = sizeof(info);
	assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);
	assert_int_equal(info.struct_size, sizeof(info));
	assert_int_equal(info.connected, 1);
	assert_int_equal(rpcrdma_clnt_stats(clnt, &st), -EINVAL);
	st.struct_size = sizeof(st) + 4;
	assert_int_equal(rpcrdma_clnt_stats(clnt, &st), -EOPNOTSUPP);
	st.struct_size = sizeof(st);
	assert_int_equal(rpcrdma_clnt_stats(clnt, &st), 0);
	assert_int_equal(st.connects, 1);

	memset(&call, 0, sizeof(call));
	call.msg = msg;
	call.msg_len = sizeof(msg);
	call.reply = reply;
	call.reply_max = sizeof(reply);
	call.done = noop_done;
	assert_int_equal(rpcrdma_clnt_submit(clnt, &call), -EINVAL);
	call.struct_size = sizeof(call) + 8;
	assert_int_equal(rpcrdma_clnt_submit(clnt, &call), -EOPNOTSUPP);
	assert_int_equal(rpcrdma_clnt_stats(clnt, &st), 0);
	assert_int_equal(st.calls, 0);

	harness_server_run(&hs, read_svc_stats, rc);
	assert_int_equal(rc[0], -EINVAL);
	assert_int_equal(rc[1], -EOPNOTSUPP);
	assert_int_equal(rc[2], 0);

	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_sized_in),
		cmocka_unit_test(t_sized_out),
		cmocka_unit_test(t_entry_points),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

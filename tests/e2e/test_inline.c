/* SPDX-License-Identifier: MIT */
/* Inline RPC round trips over softrdma: payloads, concurrency and credits. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <softrdma.h>

#include "harness.h"

struct async_call {
	struct rpcrdma_call call;
	unsigned char msg[512];
	unsigned char reply[512];
	int finished;
};

static void async_done(struct rpcrdma_call *call)
{
	struct async_call *ac = call->arg;

	ac->finished++;
}

/* @calls rpcrdma_clnt_call()s on a client made with RPCRDMA_SPIN_US=@spin; its CQ arms. */
static unsigned long calls_arms(struct harness_server *hs, const char *spin, unsigned int calls)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct softrdma_qp_stats a0, a1;
	unsigned char msg[64], reply[64];
	struct rpcrdma_clnt *clnt;
	unsigned int i;

	if (spin)
		setenv("RPCRDMA_SPIN_US", spin, 1);
	harness_clnt_attr(hs, &attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	unsetenv("RPCRDMA_SPIN_US");
	softrdma_qp_stats_sum(&a0, NULL);
	for (i = 0; i < calls; i++) {
		size_t rlen = sizeof(reply);

		harness_fill_msg(msg, sizeof(msg), i + 1, i);
		assert_int_equal(rpcrdma_clnt_call(clnt, msg, sizeof(msg), reply, &rlen, 0), 0);
		harness_assert_echo(reply, msg, sizeof(msg));
		assert_int_equal(rlen, sizeof(msg));
	}
	softrdma_qp_stats_sum(&a1, NULL);
	rpcrdma_clnt_destroy(clnt);
	return a1.recv_cq_arms - a0.recv_cq_arms;
}

/*
 * rpcrdma_clnt_call() polls for its reply for a window before it sleeps
 * (RPCRDMA_SPIN_US, by default the adaptive window): with none it arms its
 * CQ to sleep on nearly every call; with a second's window a reply comes
 * while it polls and it never sleeps. The adaptive window answers as well.
 */
static void t_call_window(void **state)
{
	struct harness_server hs;
	unsigned long none, long_window, adaptive;

	(void)state;
	assert_int_equal(harness_server_start(&hs, 0, 0, HARNESS_ECHO), 0);
	none = calls_arms(&hs, "0", 200);
	long_window = calls_arms(&hs, "1000000", 200);
	adaptive = calls_arms(&hs, NULL, 200);
	print_message("CQ arms over 200 calls: no window %lu, 1 s window %lu, adaptive %lu\n",
		      none, long_window, adaptive);
	assert_true(none >= 40);
	assert_true(long_window <= 20);
	harness_server_stop(&hs);
}

/* 10,000 synchronous calls, sizes sweeping up to the inline limit, checked byte for byte. */
static void t_roundtrip_10000(void **state)
{
	struct harness_server hs;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	struct rpcrdma_clnt *clnt;
	unsigned char msg[4096], reply[4096];
	size_t max_msg;
	uint32_t i;

	assert_int_equal(harness_server_start(&hs, 0, 0, HARNESS_ECHO), 0);
	harness_clnt_attr(&hs, &attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);
	assert_int_equal(info.inline_send, 4096);
	assert_int_equal(info.inline_recv, 4096);
	max_msg = info.inline_send - RPCRDMA_HDR_MIN_LEN;

	for (i = 0; i < 10000; i++) {
		size_t len = RPCMSG_HEAD + (i * 37) % (max_msg - RPCMSG_HEAD + 1);
		/* A reply buffer that fits inline: no Reply chunk, so the whole call fits too. */
		size_t rlen = len;

		harness_fill_msg(msg, len, i + 1, i);
		assert_int_equal(rpcrdma_clnt_call(clnt, msg, len, reply, &rlen, 0), 0);
		assert_int_equal(rlen, len);
		harness_assert_echo(reply, msg, len);
	}
	assert_int_equal(rpcrdma_clnt_stats(clnt, &st), 0);
	assert_int_equal(st.calls, 10000);
	assert_int_equal(st.replies, 10000);
	assert_int_equal(st.wc_errors, 0);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.read_chunks + st.write_chunks + st.reply_chunks, 0);
	assert_int_equal(atomic_load(&hs.sh->calls), 10000);
	assert_int_equal(atomic_load(&hs.sh->reply_errors), 0);

	/* One byte past the inline limit goes as a long call (RDMA_NOMSG, Read chunk). */
	{
		size_t rlen = max_msg + 1;

		harness_fill_msg(msg, max_msg + 1, 999999, 1);
		assert_int_equal(rpcrdma_clnt_call(clnt, msg, max_msg + 1, reply, &rlen, 0), 0);
		assert_int_equal(rlen, max_msg + 1);
		harness_assert_echo(reply, msg, max_msg + 1);
		assert_int_equal(rpcrdma_clnt_stats(clnt, &st), 0);
		/* A long call, and a Reply chunk for the reply that cannot come inline. */
		assert_int_equal(st.read_chunks, 1);
		assert_int_equal(st.reply_chunks, 1);
	}
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/* Replies encoded in place through rpcrdma_svc_reply_buf/commit. */
static void t_reply_in_place(void **state)
{
	struct harness_server hs;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *clnt;
	unsigned char msg[1024], reply[1024];
	uint32_t i;

	assert_int_equal(harness_server_start(&hs, 0, 0, HARNESS_ECHO_BUF), 0);
	harness_clnt_attr(&hs, &attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	for (i = 0; i < 1000; i++) {
		size_t len = RPCMSG_HEAD + i % 1000, rlen = sizeof(reply);

		harness_fill_msg(msg, len, i + 7, i);
		assert_int_equal(rpcrdma_clnt_call(clnt, msg, len, reply, &rlen, 0), 0);
		assert_int_equal(rlen, len);
		harness_assert_echo(reply, msg, len);
	}
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/*
 * A call that offers a 16 MiB Reply chunk for a 64-byte reply encoded in
 * place: the server registers what the reply uses when it is committed,
 * not the room the peer named when rpcrdma_svc_reply_buf() is called (it
 * used to register all 16 MiB for every such call).
 */
static void t_reply_in_place_huge_chunk(void **state)
{
	const size_t room = 16u << 20;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	unsigned char msg[64], *reply = malloc(room);
	size_t rlen = room;

	assert_non_null(reply);
	assert_int_equal(harness_server_start(&hs, 0, 0, HARNESS_ECHO_BUF), 0);
	harness_clnt_attr(&hs, &attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	harness_fill_msg(msg, sizeof(msg), 0x5151, 3);
	assert_int_equal(rpcrdma_clnt_call(clnt, msg, sizeof(msg), reply, &rlen, 0), 0);
	assert_int_equal(rlen, sizeof(msg));
	harness_assert_echo(reply, msg, sizeof(msg));
	assert_int_equal(harness_server_stats(&hs).reply_chunks, 1);
	if (atomic_load(&hs.sh->reply_buf_registered) >= 1u << 20)
		fail_msg("rpcrdma_svc_reply_buf() registered %llu bytes for a 64-byte reply",
			 (unsigned long long)atomic_load(&hs.sh->reply_buf_registered));
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
	free(reply);
}

/*
 * Long replies encoded in place, one after another on a connection: each
 * reuses the buffer of the one before, whose pages are written already.
 * A fresh mapping for every reply took a page fault per 4 KiB written, 16
 * per 64 KiB reply, and a registration. A longer reply than the kept
 * buffer's registration covers is registered anew and arrives whole.
 */
static void t_long_reply_buf_kept(void **state)
{
	const size_t big = 64u << 10;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	unsigned char *msg = malloc(2 * big), *reply = malloc(2 * big);
	unsigned long long warm = 0, reused = 0;
	uint32_t i;

	assert_non_null(msg);
	assert_non_null(reply);
	assert_int_equal(harness_server_start(&hs, 0, 0, HARNESS_ECHO_BUF), 0);
	harness_clnt_attr(&hs, &attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	for (i = 0; i < 101; i++) {
		/* Every call offers the same room; the last one uses all of it. */
		size_t len = i == 100 ? 2 * big : big - 4 * (i % 8), rlen = 2 * big;

		if (i == 1)
			warm = atomic_load(&hs.sh->reply_buf_faults);
		if (i == 100)
			reused = atomic_load(&hs.sh->reply_buf_faults) - warm;
		harness_fill_msg(msg, len, i + 11, i);
		assert_int_equal(rpcrdma_clnt_call(clnt, msg, len, reply, &rlen, 0), 0);
		assert_int_equal(rlen, len);
		harness_assert_echo(reply, msg, len);
	}
	assert_int_equal(harness_server_stats(&hs).reply_chunks, 101);
	/*
	 * 99 replies of up to 64 KiB after the first: none should fault (16
	 * each, fresh). The last, larger reply maps a fresh buffer, whose
	 * faults (and a sanitizer's shadow pages) are not counted.
	 */
	if (reused > 20)
		fail_msg("%llu page faults encoding 99 long replies in place after the first",
			 reused);
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
	free(msg);
	free(reply);
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define HUGE (2u << 20)

/* AnonHugePages, in KiB, of process @pid's mapping that holds @addr; -1 if not found. */
static long anon_huge_kb(int pid, uintptr_t addr)
{
	char path[64], line[256];
	bool in = false;
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = addr >= lo && addr < hi;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return in ? kb : -1;
}

/* Can this machine make a written 2 MiB mapping one huge page on demand? */
static bool collapse_works(void)
{
	unsigned char *p = mmap(NULL, 2 * HUGE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *a;
	bool ok;

	if (p == MAP_FAILED)
		return false;
	a = (unsigned char *)(((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	memset(a, 1, HUGE / 2);
	ok = madvise(a, HUGE, MADV_HUGEPAGE) == 0 && madvise(a, HUGE, MADV_COLLAPSE) == 0 &&
	     anon_huge_kb(getpid(), (uintptr_t)a) >= 2048;
	munmap(p, 2 * HUGE);
	return ok;
}

/*
 * A 1 MiB reply encoded in place goes out of a buffer reserved on a huge
 * page's boundary, made one huge page once written (softrdma's copies
 * between processes pin one page instead of 256); short replies in a
 * reservation of the same room leave it in small pages.
 */
static void t_long_reply_huge(void **state)
{
	const size_t big = 1u << 20;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	unsigned char *msg = malloc(big), *reply = malloc(big);
	uintptr_t addr;
	size_t rlen;
	int i;

	assert_non_null(msg);
	assert_non_null(reply);
	assert_int_equal(harness_server_start(&hs, 0, 0, HARNESS_ECHO_BUF), 0);
	harness_clnt_attr(&hs, &attr);
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	/* A short reply first, in the same room: its reservation keeps small pages. */
	for (i = 0; i < 3; i++) {
		size_t len = i == 0 ? 100 : big;

		rlen = big;
		harness_fill_msg(msg, len, 0x4242 + i, i);
		assert_int_equal(rpcrdma_clnt_call(clnt, msg, len, reply, &rlen, 0), 0);
		assert_int_equal(rlen, len);
		harness_assert_echo(reply, msg, len);
		addr = (uintptr_t)atomic_load(&hs.sh->reply_buf_addr);
		assert_int_equal(addr % HUGE, 0);
		if (i == 0 && anon_huge_kb(atomic_load(&hs.sh->reply_buf_pid), addr) > 0)
			fail_msg("a 100-byte reply put its reservation on a huge page");
	}
	if (!collapse_works())
		print_message("no huge page on demand here (THP off, or MADV_COLLAPSE refused): "
			      "the reply buffer's pages are not checked\n");
	else if (anon_huge_kb(atomic_load(&hs.sh->reply_buf_pid), addr) < 2048)
		fail_msg("a 1 MiB reply's buffer is not on a huge page (AnonHugePages %ld kB)",
			 anon_huge_kb(atomic_load(&hs.sh->reply_buf_pid), addr));
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
	free(msg);
	free(reply);
}

/*
 * 64 calls in flight against a server granting 8 credits, with rnr_retry 0:
 * a single call beyond the grant would find no receive and fail the
 * connection. The server holds calls, so the grant is used to the full.
 */
static void t_credits_64_over_8(void **state)
{
	struct harness_server hs;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	struct rpcrdma_clnt *clnt;
	struct async_call *calls = calloc(64, sizeof(*calls));
	unsigned int i, rounds = 0, finished;

	assert_non_null(calls);
	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_HOLD), 0);
	harness_clnt_attr(&hs, &attr);
	attr.max_requests = 64;
	attr.rnr_retry = 0;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);
	assert_int_equal(info.credits, 1);

	for (i = 0; i < 64; i++) {
		struct async_call *ac = &calls[i];

		harness_fill_msg(ac->msg, 100 + i, 0x1000 + i, i);
		ac->call.struct_size = sizeof(ac->call);
		ac->call.msg = ac->msg;
		ac->call.msg_len = 100 + i;
		ac->call.reply = ac->reply;
		ac->call.reply_max = sizeof(ac->reply);
		ac->call.done = async_done;
		ac->call.arg = ac;
		assert_int_equal(rpcrdma_clnt_submit(clnt, &ac->call), 0);
	}
	/* A 65th call has no slot. */
	{
		struct async_call extra = { 0 };

		harness_fill_msg(extra.msg, RPCMSG_HEAD, 0x9999, 0);
		extra.call.struct_size = sizeof(extra.call);
		extra.call.msg = extra.msg;
		extra.call.msg_len = RPCMSG_HEAD;
		extra.call.done = async_done;
		extra.call.arg = &extra;
		assert_int_equal(rpcrdma_clnt_submit(clnt, &extra.call), -EAGAIN);
	}

	do {
		/* Let the client send what its grant allows, then answer it. */
		for (i = 0; i < 20; i++)
			rpcrdma_clnt_wait(clnt, 5);
		assert_true(atomic_load(&hs.sh->held_now) <= 8);
		harness_server_release(&hs);
		for (i = 0; i < 20; i++)
			rpcrdma_clnt_wait(clnt, 5);
		for (finished = 0, i = 0; i < 64; i++)
			finished += calls[i].finished;
		rounds++;
	} while (finished < 64 && rounds < 200);

	assert_int_equal(finished, 64);
	for (i = 0; i < 64; i++) {
		assert_int_equal(calls[i].finished, 1);
		assert_int_equal(calls[i].call.status, 0);
		assert_int_equal(calls[i].call.reply_len, 100 + i);
		harness_assert_echo(calls[i].reply, calls[i].msg, 100 + i);
	}
	/* The grant was used to the full and never exceeded. */
	assert_int_equal(atomic_load(&hs.sh->held_max), 8);
	assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);
	assert_int_equal(info.credits, 8);
	assert_int_equal(rpcrdma_clnt_stats(clnt, &st), 0);
	assert_int_equal(st.wc_errors, 0);
	assert_int_equal(st.flushes, 0);
	assert_true(st.credit_stalls > 0);
	assert_int_equal(info.connects, 1);

	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	free(calls);
	harness_assert_fabric_idle();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_roundtrip_10000),
		cmocka_unit_test(t_call_window),
		cmocka_unit_test(t_reply_in_place),
		cmocka_unit_test(t_reply_in_place_huge_chunk),
		cmocka_unit_test(t_long_reply_buf_kept),
		cmocka_unit_test(t_long_reply_huge),
		cmocka_unit_test(t_credits_64_over_8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

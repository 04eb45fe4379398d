/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE	/* RUSAGE_THREAD */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <softrdma.h>

#include "ddp.h"
#include "harness.h"
#include "harness_fabric.h"

static void harness_on_conn(struct rpcrdma_svc_conn *conn, enum rpcrdma_conn_event event,
			    void *arg)
{
	struct harness_server *hs = arg;
	unsigned int i;

	if (event == RPCRDMA_CONN_ACCEPTED)
		return;
	if (event == RPCRDMA_CONN_ESTABLISHED) {
		atomic_fetch_add(&hs->sh->conns_established, 1);
		if (hs->nconns < 64)
			hs->conns[hs->nconns++] = conn;
		return;
	}
	atomic_fetch_add(&hs->sh->conns_closed, 1);
	for (i = 0; i < hs->nconns; i++) {
		if (hs->conns[i] == conn) {
			hs->conns[i] = hs->conns[--hs->nconns];
			break;
		}
	}
}

/* On the server's thread: the bytes it has registered now. */
static uint64_t harness_registered(struct harness_server *hs)
{
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };

	return rpcrdma_svc_stats(hs->svc, &st) == 0 ? st.registered_bytes : 0;
}

static void harness_note_max(atomic_ullong *max, uint64_t v)
{
	unsigned long long cur = atomic_load(max);

	while (v > cur && !atomic_compare_exchange_weak(max, &cur, v))
		;
}

/* Page faults this thread has taken so far. */
static uint64_t harness_faults(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) == 0 ? (uint64_t)ru.ru_minflt + ru.ru_majflt : 0;
}

static void harness_echo(struct harness_server *hs, struct rpcrdma_svc_call *call, bool in_place)
{
	size_t len, max;
	const void *msg = rpcrdma_svc_call_msg(call, &len);
	void *buf;
	int rc;

	if (in_place) {
		uint64_t before = harness_registered(hs), faults = harness_faults();

		rc = rpcrdma_svc_reply_buf(call, &buf, &max);
		harness_note_max(&hs->sh->reply_buf_registered, harness_registered(hs) - before);
		if (rc == 0 && len <= max) {
			atomic_store(&hs->sh->reply_buf_addr, (uintptr_t)buf);
			atomic_store(&hs->sh->reply_buf_pid, (int)getpid());
			memcpy(buf, msg, len);
			rpcmsg_echo(buf, len);
			atomic_fetch_add(&hs->sh->reply_buf_faults, harness_faults() - faults);
			rc = rpcrdma_svc_reply_commit(call, len);
		} else {
			rpcrdma_svc_call_drop(call);
			rc = rc ? rc : -EMSGSIZE;
		}
	} else {
		rc = rpcmsg_svc_echo(call);
	}
	if (rc)
		atomic_fetch_add(&hs->sh->reply_errors, 1);
}

static void harness_on_call(struct rpcrdma_svc_call *call, void *arg)
{
	struct harness_server *hs = arg;
	unsigned int held;

	atomic_fetch_add(&hs->sh->calls, 1);
	switch (atomic_load(&hs->sh->mode)) {
	case HARNESS_ECHO:
		harness_echo(hs, call, false);
		break;
	case HARNESS_ECHO_BUF:
		harness_echo(hs, call, true);
		break;
	case HARNESS_DROP:
		rpcrdma_svc_call_drop(call);
		break;
	case HARNESS_DDP:
		ddp_serve_call(call);
		break;
	case HARNESS_HOLD:
		if (hs->nheld == HARNESS_MAX_HELD) {
			rpcrdma_svc_call_drop(call);
			break;
		}
		hs->held[hs->nheld++] = call;
		held = atomic_fetch_add(&hs->sh->held_now, 1) + 1;
		if (held > atomic_load(&hs->sh->held_max))
			atomic_store(&hs->sh->held_max, held);
		break;
	}
}

static void harness_release_held(struct harness_server *hs)
{
	unsigned int i;

	for (i = 0; i < hs->nheld; i++)
		harness_echo(hs, hs->held[i], false);
	hs->nheld = 0;
	atomic_store(&hs->sh->held_now, 0);
}

void *harness_thread(void *arg)
{
	struct harness_server *hs = arg;
	unsigned int released = 0, closed = 0, ran = 0, stats = 0;

	while (!atomic_load(&hs->sh->stop)) {
		unsigned int i;

		rpcrdma_svc_wait(hs->svc, 20);
		if (atomic_load(&hs->sh->release_requests) != released) {
			harness_release_held(hs);
			released++;
			atomic_store(&hs->sh->release_done, released);
		}
		if (atomic_load(&hs->sh->close_requests) != closed) {
			for (i = 0; i < hs->nconns; i++)
				rpcrdma_svc_conn_close(hs->conns[i]);
			closed++;
			atomic_store(&hs->sh->close_done, closed);
		}
		if (atomic_load(&hs->sh->stats_requests) != stats) {
			RPCRDMA_INIT(&hs->sh->stats);
			rpcrdma_svc_stats(hs->svc, &hs->sh->stats);
			stats++;
			atomic_store(&hs->sh->stats_done, stats);
		}
		if (atomic_load(&hs->run_requests) != ran) {
			hs->run_fn(hs, hs->run_arg);
			ran++;
			atomic_store(&hs->run_done, ran);
		}
	}
	return NULL;
}

static void harness_log(int level, const char *msg, void *arg)
{
	fprintf(stderr, "rpcrdma[%d]: %s\n", level, msg);
}

bool harness_srq(void)
{
	return getenv("E2E_SRQ") && atoi(getenv("E2E_SRQ"));
}

bool harness_device_windows(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device_attr dev;
	struct ibv_context *ctx;
	bool windows = false;

	ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	if (ctx) {
		windows = ibv_query_device(ctx, &dev) == 0 &&
			  (dev.device_cap_flags &
			   (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B));
		ibv_close_device(ctx);
	}
	if (list)
		ibv_free_device_list(list);
	return windows;
}

int harness_server_listen(struct harness_server *hs, struct harness_shared *sh,
			  uint32_t max_requests, uint32_t inline_size)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(hs->addr);
	int rc;

	/* RPCRDMA_TEST_LOG=7 shows the library's log while debugging a test. */
	if (getenv("RPCRDMA_TEST_LOG"))
		rpcrdma_set_log(harness_log, NULL, atoi(getenv("RPCRDMA_TEST_LOG")));
	hs->sh = sh;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	hs->attr.struct_size = sizeof(hs->attr);
	hs->attr.addr = (struct sockaddr *)&sin;
	hs->attr.max_requests = max_requests;
	hs->attr.inline_size = inline_size;
	hs->attr.on_call = harness_on_call;
	hs->attr.on_conn = harness_on_conn;
	hs->attr.arg = hs;
	/* E2E_SRQ=1 (the e2e-srq suite, or a test that sets it): shared receive queues. */
	if (harness_srq())
		hs->attr.flags |= RPCRDMA_SVC_SRQ;
	if (getenv("E2E_SRQ_SIZE"))
		hs->attr.srq_size = (uint32_t)atoi(getenv("E2E_SRQ_SIZE"));
	/*
	 * Set by a test before it starts the server (a server process inherits
	 * them). Keepalive and the idle timeout are off unless a test asks ("0":
	 * the library's defaults): a probe after 30 idle seconds, which a slow
	 * run (valgrind) reaches, would be a work request and a visit that the
	 * tests counting those do not expect.
	 */
	hs->attr.keepalive_ms = -1;
	if (getenv("E2E_SVC_KEEPALIVE_MS"))
		hs->attr.keepalive_ms = atoi(getenv("E2E_SVC_KEEPALIVE_MS"));
	if (getenv("E2E_SVC_BUSY_POLL"))
		hs->attr.flags |= RPCRDMA_SVC_BUSY_POLL;
	hs->attr.idle_timeout_ms = -1;
	if (getenv("E2E_SVC_IDLE_MS"))
		hs->attr.idle_timeout_ms = atoi(getenv("E2E_SVC_IDLE_MS"));
	if (getenv("E2E_SVC_MAX_CONNS"))
		hs->attr.max_connections = (uint32_t)atoi(getenv("E2E_SVC_MAX_CONNS"));
	rc = rpcrdma_svc_listen(&hs->attr, &hs->svc);
	if (rc)
		return rc;
	rc = rpcrdma_svc_addr(hs->svc, (struct sockaddr *)&hs->addr, &len);
	if (rc) {
		rpcrdma_svc_destroy(hs->svc);
		hs->svc = NULL;
	}
	return rc;
}

void harness_server_destroy(struct harness_server *hs)
{
	unsigned int i;

	rpcrdma_svc_destroy(hs->svc);
	/* Calls still held stay valid after destroy; finishing them frees them. */
	for (i = 0; i < hs->nheld; i++)
		rpcrdma_svc_call_drop(hs->held[i]);
	hs->nheld = 0;
	hs->svc = NULL;
}

int harness_server_start(struct harness_server *hs, uint32_t max_requests, uint32_t inline_size,
			 enum harness_mode mode)
{
	int rc;

	memset(hs, 0, sizeof(*hs));
	atomic_store(&hs->own.mode, mode);
	/* A test that switched the fabric must switch it back. */
	if (harness_fabric() == HARNESS_FABRIC_STEP && softrdma_get_mode() != SOFTRDMA_MODE_STEP)
		return -EBUSY;
	if (harness_fabric() == HARNESS_FABRIC_PROC)
		return harness_proc_start(hs, max_requests, inline_size);
	rc = harness_server_listen(hs, &hs->own, max_requests, inline_size);
	if (rc)
		return rc;
	rc = -pthread_create(&hs->thread, NULL, harness_thread, hs);
	if (rc)
		harness_server_destroy(hs);
	return rc;
}

void harness_server_stop(struct harness_server *hs)
{
	if (hs->child) {
		harness_proc_stop(hs);
		return;
	}
	if (!hs->svc)
		return;
	atomic_store(&hs->sh->stop, true);
	pthread_join(hs->thread, NULL);
	harness_server_destroy(hs);
}

/* Ask the server thread for something and wait until it has done it. */
static void harness_request(atomic_uint *request, atomic_uint *done)
{
	unsigned int want = atomic_fetch_add(request, 1) + 1;

	while (atomic_load(done) < want)
		poll(NULL, 0, 1);
}

void harness_server_release(struct harness_server *hs)
{
	harness_request(&hs->sh->release_requests, &hs->sh->release_done);
}

void harness_server_close_conns(struct harness_server *hs)
{
	harness_request(&hs->sh->close_requests, &hs->sh->close_done);
}

struct rpcrdma_stats harness_server_stats(struct harness_server *hs)
{
	harness_request(&hs->sh->stats_requests, &hs->sh->stats_done);
	return hs->sh->stats;
}

void harness_server_run(struct harness_server *hs, void (*fn)(struct harness_server *hs, void *arg),
			void *arg)
{
	assert_non_null(hs->svc);	/* not a server process's: harness_require_inproc() */
	/* Published before the request counter moves (its atomic store orders them). */
	hs->run_fn = fn;
	hs->run_arg = arg;
	harness_request(&hs->run_requests, &hs->run_done);
}

void harness_clnt_attr(const struct harness_server *hs, struct rpcrdma_clnt_attr *attr)
{
	RPCRDMA_INIT(attr);
	attr->addr = (const struct sockaddr *)&hs->addr;
	attr->connect_timeout_ms = 5000;
	attr->call_timeout_ms = 10000;
}

void harness_fill_msg(unsigned char *buf, size_t len, uint32_t xid, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	assert_true(len >= RPCMSG_HEAD);
	rpcmsg_call_head(buf, xid);
	for (i = RPCMSG_HEAD; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (unsigned char)x;
	}
}

void harness_assert_echo_at(const void *reply, const void *msg, size_t len, const char *file,
			    int line)
{
	unsigned char head[RPCMSG_HEAD];

	_assert_true(len >= RPCMSG_HEAD, "len >= RPCMSG_HEAD", file, line);
	rpcmsg_reply_head(head, rpcmsg_word(msg, 0));
	_assert_memory_equal(reply, head, RPCMSG_HEAD, file, line);
	_assert_memory_equal((const unsigned char *)reply + RPCMSG_HEAD,
			     (const unsigned char *)msg + RPCMSG_HEAD, len - RPCMSG_HEAD, file,
			     line);
}

bool harness_wait_for(bool (*pred)(void *arg), void *arg, int timeout_ms)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		if (pred(arg))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >
		    timeout_ms)
			return pred(arg);
		poll(NULL, 0, 2);
	}
}

struct rpcrdma_clnt *harness_connect_to(struct rpcrdma_svc *svc)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct sockaddr_storage addr;
	socklen_t len = sizeof(addr);
	struct rpcrdma_clnt *clnt;

	assert_int_equal(rpcrdma_svc_addr(svc, (struct sockaddr *)&addr, &len), 0);
	attr.addr = (struct sockaddr *)&addr;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	return clnt;
}

void *harness_caller_run(void *arg)
{
	struct harness_caller *c = arg;
	unsigned char msg[256], reply[256];
	unsigned int i;

	for (i = 0; i < c->calls; i++) {
		size_t len = HARNESS_CALLER_MIN + (i * 13) % (sizeof(msg) - HARNESS_CALLER_MIN);
		size_t rlen = sizeof(reply);
		uint32_t w = htonl(c->seed);

		harness_fill_msg(msg, len, c->seed * 1000 + i + 1, c->seed);
		memcpy(msg + RPCMSG_HEAD, &w, sizeof(w));
		if (rpcrdma_clnt_call(c->clnt, msg, len, reply, &rlen, 0) || rlen != len ||
		    !rpcmsg_echoes(reply, msg, len))
			c->failures++;
	}
	atomic_store(&c->done, true);
	return NULL;
}

uint32_t harness_caller_seed(const void *msg, size_t len)
{
	if (len < HARNESS_CALLER_MIN || !rpcmsg_is_call(msg, len))
		return 0;
	return rpcmsg_word(msg, RPCMSG_HEAD / 4);
}

struct harness_count_wait {
	atomic_uint *count;
	unsigned int want;
};

static bool harness_count_reached(void *arg)
{
	struct harness_count_wait *w = arg;

	return atomic_load(w->count) >= w->want;
}

bool harness_wait_established(struct harness_server *hs, unsigned int want, int timeout_ms)
{
	struct harness_count_wait w = { &hs->sh->conns_established, want };

	return harness_wait_for(harness_count_reached, &w, timeout_ms);
}

bool harness_wait_closed(struct harness_server *hs, unsigned int want, int timeout_ms)
{
	struct harness_count_wait w = { &hs->sh->conns_closed, want };

	return harness_wait_for(harness_count_reached, &w, timeout_ms);
}

bool harness_holds_one(void *hs)
{
	return atomic_load(&((struct harness_server *)hs)->sh->held_now) == 1;
}

void harness_assert_fabric_idle(void)
{
	struct softrdma_counts c;

	softrdma_get_counts(&c);
	assert_int_equal(c.qps, 0);
	assert_int_equal(c.cqs, 0);
	assert_int_equal(c.comp_channels, 0);
	assert_int_equal(c.mrs, 0);
	assert_int_equal(c.mws, 0);
	assert_int_equal(c.pds, 0);
	assert_int_equal(c.cm_ids, 0);
	assert_int_equal(c.send_wrs, 0);
	assert_int_equal(c.recv_wrs, 0);
	assert_int_equal(c.unacked_events, 0);
}

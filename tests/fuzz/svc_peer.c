/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rpcrdma/proto.h>
#include <softrdma.h>

#include "ddp.h"
#include "svc_peer.h"

/* The largest reply fuzz-svc-recv lets DDP_OP_READ make: the program mallocs it. */
#define SVC_PEER_DDP_READ_MAX (64u * 1024u)

static long long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void svc_peer_on_conn(struct rpcrdma_svc_conn *conn, enum rpcrdma_conn_event event,
			     void *arg)
{
	struct svc_peer *sp = arg;

	if (event == RPCRDMA_CONN_ESTABLISHED) {
		sp->established++;
		sp->conn = conn;
		sp->conn_closed = false;
	} else if (event == RPCRDMA_CONN_CLOSED) {
		sp->closed++;
		if (conn == sp->conn) {
			sp->conn = NULL;
			sp->conn_closed = true;
		}
	}
}

static void svc_peer_echo(struct rpcrdma_svc_call *call, bool in_place)
{
	size_t len, max;
	const void *msg = rpcrdma_svc_call_msg(call, &len);
	void *buf;

	if (!in_place) {
		/* A reply too large for every way back is refused; the call is finished either way. */
		rpcmsg_svc_echo(call);
		return;
	}
	if (rpcrdma_svc_reply_buf(call, &buf, &max) == 0 && len <= max) {
		memcpy(buf, msg, len);
		rpcmsg_echo(buf, len);
		rpcrdma_svc_reply_commit(call, len);
	} else {
		rpcrdma_svc_call_drop(call);
	}
}

/* ddp_serve_call() mallocs what DDP_OP_READ asks for: keep the fuzzer's RSS bounded. */
static bool svc_peer_ddp_sane(struct rpcrdma_svc_call *call)
{
	size_t len;
	const unsigned char *msg = rpcrdma_svc_call_msg(call, &len);

	return len < DDP_CALL_LEN || get32(msg, DDP_W_OP) != DDP_OP_READ ||
	       get32(msg, DDP_W_ARG0) <= SVC_PEER_DDP_READ_MAX;
}

static void svc_peer_on_call(struct rpcrdma_svc_call *call, void *arg)
{
	struct svc_peer *sp = arg;

	sp->calls++;
	switch (sp->program) {
	case SVC_PEER_ECHO:
		svc_peer_echo(call, false);
		break;
	case SVC_PEER_ECHO_BUF:
		svc_peer_echo(call, true);
		break;
	case SVC_PEER_DDP:
		if (svc_peer_ddp_sane(call))
			ddp_serve_call(call);
		else
			rpcrdma_svc_call_drop(call);
		break;
	}
}

static void svc_peer_log(int level, const char *msg, void *arg)
{
	fprintf(stderr, "rpcrdma[%d]: %s\n", level, msg);
}

static int svc_peer_alloc_mrs(struct svc_peer *sp)
{
	static const int access[SVC_PEER_MRS] = {
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_REMOTE_WRITE,
	};
	size_t i;

	sp->pattern = malloc((size_t)SVC_PEER_MRS * SVC_PEER_MEM);
	if (!sp->pattern)
		return -ENOMEM;
	/* Every byte differs from its neighbours and from the other regions' bytes. */
	for (i = 0; i < (size_t)SVC_PEER_MRS * SVC_PEER_MEM; i++)
		sp->pattern[i] = (unsigned char)((i * 2654435761u) >> 13) ^ (unsigned char)(i >> 15);
	for (i = 0; i < SVC_PEER_MRS; i++) {
		sp->mrs[i].mem = malloc(SVC_PEER_MEM);
		if (!sp->mrs[i].mem)
			return -ENOMEM;
		sp->mrs[i].access = access[i] | IBV_ACCESS_LOCAL_WRITE;
	}
	return 0;
}

int svc_peer_start(struct svc_peer *sp)
{
	struct rpcrdma_svc_attr attr;
	struct sockaddr_in sin;
	socklen_t len = sizeof(sp->addr);
	int rc;

	memset(sp, 0, sizeof(*sp));
	/* RPCRDMA_TEST_LOG=7 shows the library's log while reading a crash. */
	if (getenv("RPCRDMA_TEST_LOG"))
		rpcrdma_set_log(svc_peer_log, NULL, atoi(getenv("RPCRDMA_TEST_LOG")));
	rc = svc_peer_alloc_mrs(sp);
	if (rc)
		return rc;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	RPCRDMA_INIT(&attr);
	attr.addr = (struct sockaddr *)&sin;
	attr.max_requests = SVC_PEER_CREDITS;
	/*
	 * Nothing larger than the peer's regions can be written back. At the
	 * default 64 MiB, CI's valgrind replay once stalled past 300 ms twice
	 * on a Reply-chunk call (cause not pinned down; natively the fuzzer
	 * runs clean at 64 MiB): a 1 MiB room keeps each call's mapping small.
	 */
	attr.max_reply = 1024 * 1024;
	attr.on_call = svc_peer_on_call;
	attr.on_conn = svc_peer_on_conn;
	attr.arg = sp;
	rc = rpcrdma_svc_listen(&attr, &sp->svc);
	if (rc)
		return rc;
	return rpcrdma_svc_addr(sp->svc, (struct sockaddr *)&sp->addr, &len);
}

/* Poll the server until @pred holds or @timeout_ms passed. */
static bool svc_peer_poll_until(struct svc_peer *sp, bool (*pred)(struct svc_peer *sp),
				int timeout_ms)
{
	long long deadline = ms_now() + timeout_ms;

	while (!pred(sp)) {
		if (ms_now() > deadline)
			return false;
		if (rpcrdma_svc_poll(sp->svc, 64) == 0)
			sched_yield();
	}
	return true;
}

static bool svc_peer_all_closed(struct svc_peer *sp)
{
	return sp->closed == sp->established;
}

/*
 * Close our side. The server closes its own as it sees the disconnect,
 * while the next connection is served: its late Writes cannot reach the
 * regions, whose rkeys die with this connection.
 */
static void svc_peer_disconnect(struct svc_peer *sp)
{
	unsigned int i;

	if (!sp->connected)
		return;
	rawpeer_close(&sp->rp);
	for (i = 0; i < SVC_PEER_MRS; i++)
		sp->mrs[i].mr = NULL;
	sp->connected = false;
}

struct svc_peer_connecting {
	struct svc_peer *sp;
	atomic_bool done;
	int rc;
};

/* The peer is lent to this thread while the caller's thread polls the server. */
static void *svc_peer_connect_main(void *arg)
{
	struct svc_peer_connecting *c = arg;
	/* Sends of up to 4 KiB; replies past 1 KiB need the call's Reply chunk. */
	struct rpcrdma_cm_private mine = { 4096, 1024, 0 };
	unsigned char pd[RPCRDMA_CM_PRIVATE_LEN];
	struct rawpeer_opts opts = {
		.pdata = pd,
		.pdata_len = sizeof(pd),
		.rnr_retry = 0,			/* a credit overrun is an error, not a stall */
		.responder_resources = 16,	/* the server may RDMA Read our memory */
	};

	rpcrdma_cm_private_encode(pd, sizeof(pd), &mine);
	c->rc = rawpeer_connect_opts(&c->sp->rp, (struct sockaddr *)&c->sp->addr, &opts);
	atomic_store(&c->done, true);
	return NULL;
}

static int svc_peer_register(struct svc_peer *sp)
{
	unsigned int i;

	for (i = 0; i < SVC_PEER_MRS; i++) {
		sp->mrs[i].mr = rawpeer_reg(&sp->rp, sp->mrs[i].mem, SVC_PEER_MEM,
					    sp->mrs[i].access);
		if (!sp->mrs[i].mr)
			return -ENOMEM;
		svc_peer_mr_reset(sp, i);
	}
	return 0;
}

int svc_peer_connect(struct svc_peer *sp)
{
	struct svc_peer_connecting c = { .sp = sp };
	long long deadline;
	pthread_t thread;
	int rc;

	svc_peer_disconnect(sp);
	sp->peer_lost = false;
	sp->conn = NULL;
	sp->conn_closed = false;
	atomic_init(&c.done, false);
	rc = -pthread_create(&thread, NULL, svc_peer_connect_main, &c);
	if (rc)
		return rc;
	/* rawpeer_connect_opts() gives up within its own bounds (2 + 2 + 3 s). */
	deadline = ms_now() + 10000;
	while (!atomic_load(&c.done) && ms_now() < deadline)
		if (rpcrdma_svc_poll(sp->svc, 64) == 0)
			sched_yield();
	pthread_join(thread, NULL);
	sp->connected = true;	/* whatever it got to, rawpeer_close() releases */
	if (c.rc)
		return c.rc;
	return svc_peer_register(sp);
}

void svc_peer_stop(struct svc_peer *sp)
{
	unsigned int i;

	svc_peer_disconnect(sp);
	svc_peer_poll_until(sp, svc_peer_all_closed, 2000);
	rpcrdma_svc_destroy(sp->svc);
	for (i = 0; i < SVC_PEER_MRS; i++)
		free(sp->mrs[i].mem);
	free(sp->pattern);
	memset(sp, 0, sizeof(*sp));
}

void svc_peer_mr_reset(struct svc_peer *sp, unsigned int i)
{
	memcpy(sp->mrs[i].mem, sp->pattern + (size_t)i * SVC_PEER_MEM, SVC_PEER_MEM);
}

struct svc_peer_mr *svc_peer_mr_by_rkey(struct svc_peer *sp, uint32_t rkey)
{
	unsigned int i;

	for (i = 0; i < SVC_PEER_MRS; i++)
		if (sp->mrs[i].mr && sp->mrs[i].mr->rkey == rkey)
			return &sp->mrs[i];
	return NULL;
}

/* Take what has arrived at the peer. Returns how many messages (or flushes) it took. */
static int svc_peer_collect(struct svc_peer *sp)
{
	static unsigned char extra[RAWPEER_BUF];
	int n, got = 0;

	while (!sp->peer_lost) {
		unsigned int k = sp->nreplies;

		n = rawpeer_recv(&sp->rp, k < SVC_PEER_MAX_REPLIES ? sp->replies[k] : extra,
				 RAWPEER_BUF, 0);
		if (n == -ETIMEDOUT)
			break;
		got++;
		if (n < 0) {
			sp->peer_lost = true;
			break;
		}
		if (k < SVC_PEER_MAX_REPLIES)
			sp->reply_len[k] = n;
		sp->nreplies++;
	}
	return got;
}

/* Work the fabric has not finished: WRs posted and not completed. */
static bool svc_peer_fabric_busy(void)
{
	struct softrdma_counts counts;

	softrdma_get_counts(&counts);
	return counts.send_wrs != 0;
}

int svc_peer_exchange(struct svc_peer *sp, const void *msg, size_t len, unsigned int copies,
		      int timeout_ms)
{
	long long deadline = ms_now() + timeout_ms;
	unsigned int quiet = 0, i;
	int n;

	sp->nreplies = 0;
	for (i = 0; i < copies; i++) {
		if (sp->peer_lost || rawpeer_send(&sp->rp, msg, len)) {
			sp->peer_lost = true;
			return -EIO;
		}
	}
	/* Quiet three passes running: a pass may arm a CQ that the next one finds woken. */
	while (quiet < 3) {
		n = rpcrdma_svc_poll(sp->svc, 64);
		if (n < 0) {
			fprintf(stderr, "rpcrdma_svc_poll: %s\n", strerror(-n));
			abort();
		}
		sp->busy = n ? SVC_PEER_BUSY_POLL : 0;
		if (svc_peer_collect(sp))
			sp->busy |= SVC_PEER_BUSY_PEER;
		if (rpcrdma_svc_arm(sp->svc))
			sp->busy |= SVC_PEER_BUSY_ARM;
		if (svc_peer_fabric_busy())
			sp->busy |= SVC_PEER_BUSY_FABRIC;
		quiet = sp->busy ? 0 : quiet + 1;
		if (ms_now() > deadline) {
			sp->timeouts++;
			return -ETIMEDOUT;
		}
	}
	return 0;
}

bool svc_peer_lost(const struct svc_peer *sp)
{
	return !sp->connected || sp->peer_lost || sp->conn_closed;
}

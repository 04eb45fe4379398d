/* SPDX-License-Identifier: MIT */
/*
 * Clients past their credits (RFC 8166 3.3.1) against a server that holds
 * calls or cannot post its replies yet: every reply the application hands
 * over reaches the client, or the connection is closed and counted in
 * stats.credit_overruns; never is a reply lost with the connection left
 * up. A client within its credits is never closed, however the server
 * holds and answers its calls.
 *
 * Two cases stall the server's send queue to keep replies unposted (as a
 * slow device does): they reach into the transport's internal header, so
 * they need the server in this process. Every case runs with and without
 * shared receive queues, whatever suite (device profile, fabric) runs it.
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
#include <time.h>

#include <rpcrdma/proto.h>

#include "harness.h"
#include "rpcmsg.h"
#include "rawpeer.h"
#include "svc_rdma.h"

/* The server's credits: few, so that a flood is soon past them. */
#define MAX_REQ 4
/* Send contexts one connection may hold (svc_rdma_send_max()): 2 x credits + 8. */
#define SEND_MAX (2 * MAX_REQ + 8)

struct async_call;

/*
 * What a case holds: a server (holding calls until told otherwise), and a
 * raw client or a library client. The teardown releases them whatever
 * failed, so that one failing case leaves the next a clean fabric.
 */
struct fixture {
	struct harness_server hs;
	bool hs_up;
	struct rawpeer rp;
	bool rp_up;
	struct rpcrdma_clnt *clnt;
	struct async_call *calls;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static uint32_t word(const unsigned char *p, size_t i)
{
	uint32_t w;

	memcpy(&w, p + 4 * i, 4);
	return ntohl(w);
}

/* An RDMA_MSG call with empty chunk lists and a 16-byte RPC body (XID first). */
static size_t plain_call(unsigned char *buf, uint32_t xid)
{
	uint32_t w[11] = { htonl(xid), htonl(1), htonl(8), htonl(RPCRDMA_MSG), 0, 0, 0,
			   htonl(xid), 0, htonl(2), 0 };

	memcpy(buf, w, sizeof(w));
	return sizeof(w);
}

/* A version 2 header: the server answers RDMA_ERROR / ERR_VERS (RFC 8166 4.5). */
static size_t vers2_msg(unsigned char *buf, uint32_t xid)
{
	uint32_t w[8] = { htonl(xid), htonl(2), htonl(8), htonl(RPCRDMA_MSG), 0, 0, 0,
			  htonl(xid) };

	memcpy(buf, w, sizeof(w));
	return sizeof(w);
}

static void raw_connect(struct fixture *fx)
{
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN];
	struct rpcrdma_cm_private mine = { 1024, 1024, 0 };

	assert_int_equal(rpcrdma_cm_private_encode(pdata, sizeof(pdata), &mine),
			 RPCRDMA_CM_PRIVATE_LEN);
	fx->rp_up = true;
	/* rnr_retry 7: the server's replies wait for our receives, never fail on them. */
	assert_int_equal(rawpeer_connect(&fx->rp, (struct sockaddr *)&fx->hs.addr, pdata,
					 sizeof(pdata), 7), 0);
}

static void raw_close(struct fixture *fx)
{
	rawpeer_close(&fx->rp);
	fx->rp_up = false;
}

/*
 * Count the answers to XIDs [@xid, @xid + @n) the server sends, each once:
 * the echo of a call, or an RDMA_ERROR. Reads until all @n came, the
 * connection is gone, or 10 seconds pass (a reply lost).
 */
static unsigned int collect_answers(struct rawpeer *rp, uint32_t xid, unsigned int n)
{
	long long deadline = now_ms() + 10000;
	unsigned char buf[RAWPEER_BUF];
	bool seen[64] = { false };
	unsigned int got = 0;
	int len;

	assert_true(n <= 64);
	while (got < n && now_ms() < deadline) {
		uint32_t x;

		len = rawpeer_recv(rp, buf, sizeof(buf), 100);
		if (len == -ETIMEDOUT)
			continue;
		if (len < 16)
			break;
		x = word(buf, 0);
		if (x - xid < n && !seen[x - xid] &&
		    (word(buf, 3) == RPCRDMA_MSG || word(buf, 3) == RPCRDMA_ERROR)) {
			seen[x - xid] = true;
			got++;
		}
	}
	return got;
}

/* What the server has taken of the messages sent so far. */
typedef uint64_t (*taken_fn)(struct harness_server *hs);

struct paced {
	struct harness_server *hs;
	taken_fn taken;
	uint64_t want;
};

static bool paced_taken(void *arg)
{
	struct paced *p = arg;

	return atomic_load(&p->hs->sh->conns_closed) > 0 || p->taken(p->hs) >= p->want;
}

/*
 * Send @n messages that @make builds for XIDs from @xid, each once the
 * server has taken the one before (@taken counts them), as a client that
 * waits for its replies would: the server's refills keep up, so no send
 * meets an RNR (fatal: the server accepts with rnr_retry 0), and what the
 * server does with the messages follows from their number, not their
 * pace. Stops at a send that fails or once the connection is closed.
 * Returns the messages sent.
 */
static unsigned int send_paced(struct harness_server *hs, struct rawpeer *rp, unsigned int n,
			       size_t (*make)(unsigned char *buf, uint32_t xid), uint32_t xid,
			       taken_fn taken)
{
	struct paced p = { hs, taken, taken(hs) };
	unsigned char buf[64];
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (rawpeer_send(rp, buf, make(buf, xid + i)))
			break;
		p.want++;
		assert_true(harness_wait_for(paced_taken, &p, 10000));
		if (atomic_load(&hs->sh->conns_closed) > 0)
			return i + 1;
	}
	return i;
}

/* Calls handed to the application. */
static uint64_t calls_taken(struct harness_server *hs)
{
	return atomic_load(&hs->sh->calls);
}

/* Messages refused: with a version 2 header, each is answered ERR_VERS. */
static uint64_t dropped_taken(struct harness_server *hs)
{
	return harness_server_stats(hs).dropped;
}

/* A client within its credits is served afterwards. */
static void assert_serves_good_client(struct fixture *fx)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	unsigned char msg[64], reply[64];
	unsigned int i;

	atomic_store(&fx->hs.sh->mode, HARNESS_ECHO);
	harness_clnt_attr(&fx->hs, &attr);
	attr.rnr_retry = 0;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &fx->clnt), 0);
	for (i = 0; i < 20; i++) {
		size_t rlen = sizeof(reply);

		harness_fill_msg(msg, sizeof(msg), 0x7000 + i, i);
		assert_int_equal(rpcrdma_clnt_call(fx->clnt, msg, sizeof(msg), reply, &rlen, 0), 0);
		harness_assert_echo(reply, msg, sizeof(msg));
	}
	rpcrdma_clnt_destroy(fx->clnt);
	fx->clnt = NULL;
}

/*
 * A client sends 16 calls, ignoring its credits, to a server that holds
 * every call, then the server answers them all. With or without the SRQ
 * the server never holds more than max_requests of them: the call past
 * that closes the connection, counted in credit_overruns. Before, the
 * server without the SRQ held 16 and had send contexts for 12 replies: 4
 * were lost, and the connection stayed up; with the SRQ, the close went
 * uncounted.
 */
static void t_flood_of_held_calls(void **state)
{
	struct fixture *fx = *state;
	struct harness_server *hs = &fx->hs;
	struct rpcrdma_stats st;
	unsigned int sent, answered;
	bool closed;

	raw_connect(fx);
	sent = send_paced(hs, &fx->rp, 16, plain_call, 0x100, calls_taken);
	assert_true(sent > MAX_REQ);
	closed = harness_wait_closed(hs, 1, 5000);
	/* What the server holds, it answers now: to a closed connection, nothing goes. */
	harness_server_release(hs);
	answered = closed ? 0 : collect_answers(&fx->rp, 0x100, sent);
	st = harness_server_stats(hs);
	print_message("%u calls sent, connection %s, credit_overruns %llu\n", sent,
		      closed ? "closed" : "up", (unsigned long long)st.credit_overruns);
	if (!closed && answered < sent)
		fail_msg("%u replies lost with the connection up", sent - answered);
	assert_true(closed);
	assert_int_equal(st.credit_overruns, 1);
	assert_true(atomic_load(&hs->sh->held_max) <= MAX_REQ);
	raw_close(fx);
	assert_serves_good_client(fx);
	assert_int_equal(harness_server_stats(hs).credit_overruns, 1);
}

struct async_call {
	struct rpcrdma_call call;
	unsigned char msg[200];
	unsigned char reply[200];
	unsigned int len;
	int finished;
};

static void async_done(struct rpcrdma_call *call)
{
	((struct async_call *)call->arg)->finished++;
}

static void submit(struct rpcrdma_clnt *clnt, struct async_call *ac, uint32_t xid)
{
	/* Longer than siw's inline data: the Sends hold their buffers until they complete. */
	ac->len = 100 + xid % 100;
	harness_fill_msg(ac->msg, ac->len, xid, xid);
	memset(&ac->call, 0, sizeof(ac->call));
	ac->call.struct_size = sizeof(ac->call);
	ac->call.msg = ac->msg;
	ac->call.msg_len = ac->len;
	ac->call.reply = ac->reply;
	ac->call.reply_max = sizeof(ac->reply);
	ac->call.done = async_done;
	ac->call.arg = ac;
	ac->finished = 0;
	assert_int_equal(rpcrdma_clnt_submit(clnt, &ac->call), 0);
}

static void assert_answered(const struct async_call *ac)
{
	assert_int_equal(ac->finished, 1);
	assert_int_equal(ac->call.status, 0);
	assert_int_equal(ac->call.reply_len, ac->len);
	harness_assert_echo(ac->reply, ac->msg, ac->len);
}

#define HELD_CALLS 64
#define PIPED_CALLS 2000
#define PIPE_DEPTH 32

/*
 * The library's client, which keeps to its credits, under the same load:
 * the server holds each round of calls until the client has sent all its
 * grant allows (max_requests of them held, the most the rule allows), then
 * answers them at once, and the client sends the next round as the replies
 * come; then thousands of calls pipelined 32 deep against 4 credits,
 * answered at once. Nothing is closed, every call succeeds on the first
 * connection.
 */
static void t_client_within_credits_is_served(void **state)
{
	struct fixture *fx = *state;
	struct harness_server *hs = &fx->hs;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	struct rpcrdma_clnt *clnt;
	struct async_call *calls;
	unsigned int i, finished = 0, submitted, releases = 0;
	long long deadline;

	fx->calls = calls = calloc(PIPED_CALLS, sizeof(*calls));
	assert_non_null(calls);
	harness_clnt_attr(hs, &attr);
	attr.max_requests = HELD_CALLS;
	attr.rnr_retry = 0;	/* a call past the grant would find no receive and fail */
	assert_int_equal(rpcrdma_clnt_connect(&attr, &fx->clnt), 0);
	clnt = fx->clnt;

	for (i = 0; i < HELD_CALLS; i++)
		submit(clnt, &calls[i], 0x1000 + i);
	deadline = now_ms() + 60000;
	while (finished < HELD_CALLS && now_ms() < deadline) {
		unsigned int held = atomic_load(&hs->sh->held_now);

		rpcrdma_clnt_wait(clnt, 1);
		assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);
		for (finished = 0, i = 0; i < HELD_CALLS; i++)
			finished += calls[i].finished;
		/* Every call the grant allows is sent and held: answer the round. */
		if (held && held == (info.credits < HELD_CALLS - finished ?
				     info.credits : HELD_CALLS - finished)) {
			harness_server_release(hs);
			releases++;
		}
	}
	assert_int_equal(finished, HELD_CALLS);
	for (i = 0; i < HELD_CALLS; i++)
		assert_answered(&calls[i]);
	assert_int_equal(atomic_load(&hs->sh->held_max), MAX_REQ);

	atomic_store(&hs->sh->mode, HARNESS_ECHO);
	for (submitted = 0; submitted < PIPE_DEPTH; submitted++)
		submit(clnt, &calls[submitted], 0x2000 + submitted);
	deadline = now_ms() + 120000;
	for (finished = 0; finished < PIPED_CALLS && now_ms() < deadline;) {
		rpcrdma_clnt_wait(clnt, 1);
		for (finished = 0, i = 0; i < submitted; i++)
			finished += calls[i].finished;
		/* Keep PIPE_DEPTH calls outstanding. */
		while (submitted < PIPED_CALLS && submitted - finished < PIPE_DEPTH) {
			submit(clnt, &calls[submitted], 0x2000 + submitted);
			submitted++;
		}
	}
	assert_int_equal(finished, PIPED_CALLS);
	for (i = 0; i < PIPED_CALLS; i++)
		assert_answered(&calls[i]);

	assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);
	assert_int_equal(info.connects, 1);
	assert_int_equal(rpcrdma_clnt_stats(clnt, &st), 0);
	assert_int_equal(st.flushes, 0);
	assert_int_equal(st.wc_errors, 0);
	st = harness_server_stats(hs);
	print_message("%u rounds held and answered; server: %llu replies, %llu registered bytes\n",
		      releases, (unsigned long long)st.replies,
		      (unsigned long long)st.registered_bytes);
	assert_int_equal(st.credit_overruns, 0);
	assert_int_equal(st.disconnects, 0);
	assert_int_equal(atomic_load(&hs->sh->reply_errors), 0);
}

/* The connection's send queue, taken over on the server's thread. */
struct stall {
	uint32_t saved;		/* its free slots before the stall */
	int replied;		/* replies handed over while it was stalled */
	bool up;		/* the connection could still send when the stall ended */
};

/*
 * On the server thread: no send-queue slot free, and every held call
 * answered. (No assertion here: cmocka's belong to the test's thread.)
 */
static void stall_and_answer(struct harness_server *hs, void *arg)
{
	struct stall *s = arg;
	struct svcxprt_rdma *rdma;
	unsigned int i;

	if (hs->nconns != 1)
		return;
	rdma = svc_conn_rdma(hs->conns[0]);
	s->saved = rdma->sc_ep.sq_avail;
	rdma->sc_ep.sq_avail = 0;
	for (i = 0; i < hs->nheld; i++)
		if (rpcmsg_svc_echo(hs->held[i]) == 0)
			s->replied++;
	hs->nheld = 0;
	atomic_store(&hs->sh->held_now, 0);
}

/* On the server thread: the slots come back, and the replies that waited go. */
static void unstall(struct harness_server *hs, void *arg)
{
	struct stall *s = arg;
	struct svcxprt_rdma *rdma;

	/* A connection the server closed is gone, and its replies with it. */
	if (hs->nconns == 0)
		return;
	rdma = svc_conn_rdma(hs->conns[0]);
	s->up = svc_rdma_can_send(rdma);
	rdma->sc_ep.sq_avail = s->saved;
	svc_rdma_wake_send_waiters(rdma);
	svc_rdma_mark_ready(rdma);
}

/*
 * MAX_REQ calls held and answered while no reply can be posted, then
 * @nerr messages that the server answers with ERR_VERS, each taking a send
 * context until its Send completes; then the send queue has room again.
 * Returns the answers the client got, none if the server closed the
 * connection (*@closed); *@grown is what the server registered meanwhile.
 */
static unsigned int replies_while_stalled(struct fixture *fx, unsigned int nerr, bool *closed,
					  uint64_t *grown)
{
	struct harness_server *hs = &fx->hs;
	struct stall s = { 0 };
	uint64_t before;
	unsigned int answered;

	raw_connect(fx);
	assert_int_equal(send_paced(hs, &fx->rp, MAX_REQ, plain_call, 0x300, calls_taken),
			 MAX_REQ);
	assert_int_equal(atomic_load(&hs->sh->held_now), MAX_REQ);
	before = harness_server_stats(hs).registered_bytes;
	harness_server_run(hs, stall_and_answer, &s);
	assert_int_equal(s.replied, MAX_REQ);
	send_paced(hs, &fx->rp, nerr, vers2_msg, 0x300 + MAX_REQ, dropped_taken);
	*grown = harness_server_stats(hs).registered_bytes - before;
	harness_server_run(hs, unstall, &s);
	*closed = !s.up;
	answered = *closed ? 0 : collect_answers(&fx->rp, 0x300, MAX_REQ + nerr);
	raw_close(fx);
	return answered;
}

/* The server's memory, back where it was before the client came (the frees run on its thread). */
static void assert_memory_back(struct harness_server *hs, const struct rpcrdma_stats *base)
{
	struct rpcrdma_stats st;
	long long deadline = now_ms() + 5000;

	assert_true(harness_wait_closed(hs, 1, 5000));
	do {
		st = harness_server_stats(hs);
		if (st.heap_bytes == base->heap_bytes && st.registered_bytes == base->registered_bytes)
			break;
		poll(NULL, 0, 10);
	} while (now_ms() < deadline);
	assert_int_equal(st.heap_bytes, base->heap_bytes);
	assert_int_equal(st.registered_bytes, base->registered_bytes);
}

/*
 * Replies waiting for the send queue hold their send contexts: 4 answered
 * calls and 10 ERR_VERS need 14, beyond the 12 made at accept time and
 * within the bound of 16. The connection makes more, accounted in the
 * stats and freed with it, and every reply goes once the queue has room.
 */
static void t_replies_beyond_first_pool_are_sent(void **state)
{
	struct fixture *fx = *state;
	struct harness_server *hs = &fx->hs;
	unsigned int answered, nerr = SEND_MAX - MAX_REQ - 2;
	struct rpcrdma_stats base;
	uint64_t grown;
	bool closed;

	harness_require_inproc("it stalls the server's send queue");
	base = harness_server_stats(hs);
	answered = replies_while_stalled(fx, nerr, &closed, &grown);
	print_message("%u of %u answered, %llu bytes registered beyond the first pool, "
		      "connection %s\n", answered, MAX_REQ + nerr, (unsigned long long)grown,
		      closed ? "closed" : "up");
	assert_false(closed);
	assert_int_equal(answered, MAX_REQ + nerr);
	/* The connection's own pool grew; the SRQ's pool may have room already. */
	if (!harness_srq())
		assert_true(grown > 0);
	assert_int_equal(harness_server_stats(hs).credit_overruns, 0);
	assert_memory_back(hs, &base);
}

/*
 * The same with 16 ERR_VERS: 20 replies due at once, past the bound of 16.
 * The connection is closed and counted; before, the replies past the
 * first 12 were lost and the connection stayed up.
 */
static void t_replies_past_bound_close(void **state)
{
	struct fixture *fx = *state;
	struct harness_server *hs = &fx->hs;
	unsigned int answered, nerr = 16;
	struct rpcrdma_stats base;
	uint64_t grown;
	bool closed;

	harness_require_inproc("it stalls the server's send queue");
	base = harness_server_stats(hs);
	answered = replies_while_stalled(fx, nerr, &closed, &grown);
	if (!closed && answered < MAX_REQ + nerr)
		fail_msg("%u replies lost with the connection up", MAX_REQ + nerr - answered);
	assert_true(closed);
	assert_int_equal(harness_server_stats(hs).credit_overruns, 1);
	assert_memory_back(hs, &base);
	assert_serves_good_client(fx);
}

/*
 * Each case runs against a server of MAX_REQ credits holding every call,
 * first without shared receive queues, then with them.
 */
static int server_up(void **state, const char *srq)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx || setenv("E2E_SRQ", srq, 1)) {
		free(fx);
		return -1;
	}
	*state = fx;
	if (harness_server_start(&fx->hs, MAX_REQ, 0, HARNESS_HOLD))
		return -1;
	fx->hs_up = true;
	return 0;
}

static int without_srq(void **state)
{
	return server_up(state, "0");
}

static int with_srq(void **state)
{
	return server_up(state, "1");
}

static int server_down(void **state)
{
	struct fixture *fx = *state;

	if (fx->rp_up)
		rawpeer_close(&fx->rp);
	if (fx->clnt)
		rpcrdma_clnt_destroy(fx->clnt);
	if (fx->hs_up)
		harness_server_stop(&fx->hs);
	free(fx->calls);
	free(fx);
	harness_assert_fabric_idle();
	return 0;
}

#define BOTH(f)                                                        \
	{ #f, f, without_srq, server_down, NULL },                     \
	{ #f " (SRQ)", f, with_srq, server_down, NULL }

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(t_flood_of_held_calls),
		BOTH(t_client_within_credits_is_served),
		BOTH(t_replies_beyond_first_pool_are_sent),
		BOTH(t_replies_past_bound_close),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

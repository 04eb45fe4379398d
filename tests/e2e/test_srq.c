/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues (RPCRDMA_SVC_SRQ): many clients pipelining at their
 * credit limits against an SRQ smaller than their sum meet no RNR, even
 * with rnr_retry 0; what the grants promise is never more than is posted;
 * an idle connection holds little memory; a server whose SRQ has no
 * reserve left refuses the next connection.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "harness.h"
#include "rawpeer.h"

#define CLIENTS 12
#define DEPTH 32
#define ROUNDS 40
/* Receives the SRQ holds at most: well below CLIENTS x DEPTH. */
#define SRQ_SIZE 96

struct pipe_call {
	struct rpcrdma_call call;
	unsigned char msg[128];
	unsigned char reply[128];
	unsigned int len;
	bool busy;
	int status;
};

struct piper {
	struct rpcrdma_clnt *clnt;
	struct pipe_call calls[DEPTH];
	unsigned int sent, done, bad;
	uint32_t max_credits;
};

static void pipe_done(struct rpcrdma_call *call)
{
	struct pipe_call *pc = call->arg;

	pc->busy = false;
	pc->status = call->status;
}

static void pipe_submit(struct piper *p, unsigned int c, struct pipe_call *pc)
{
	pc->len = RPCMSG_HEAD + (p->sent * 7) % 100;
	harness_fill_msg(pc->msg, pc->len, 0x10000000u + c * 0x100000u + p->sent, p->sent);
	memset(&pc->call, 0, sizeof(pc->call));
	pc->call.struct_size = sizeof(pc->call);
	pc->call.msg = pc->msg;
	pc->call.msg_len = pc->len;
	pc->call.reply = pc->reply;
	pc->call.reply_max = sizeof(pc->reply);
	pc->call.done = pipe_done;
	pc->call.arg = pc;
	pc->busy = true;
	if (rpcrdma_clnt_submit(p->clnt, &pc->call) == 0) {
		p->sent++;
	} else {
		pc->busy = false;
		pc->len = 0;
		p->bad++;
	}
}

/* Collect what finished, check it, and keep DEPTH calls in flight until ROUNDS x DEPTH are sent. */
static bool pipe_step(struct piper *p, unsigned int c)
{
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	unsigned int i;

	rpcrdma_clnt_poll(p->clnt, 64);
	for (i = 0; i < DEPTH; i++) {
		struct pipe_call *pc = &p->calls[i];

		if (pc->busy)
			continue;
		if (pc->len) {
			p->done++;
			if (pc->status || pc->call.reply_len != pc->len ||
			    !rpcmsg_echoes(pc->reply, pc->msg, pc->len))
				p->bad++;
			pc->len = 0;
		}
		if (p->sent < ROUNDS * DEPTH)
			pipe_submit(p, c, pc);
	}
	if (rpcrdma_clnt_info(p->clnt, &info) == 0 && info.credits > p->max_credits)
		p->max_credits = info.credits;
	/* A failure ends the run: the assertions say which. */
	return !p->bad && (p->done < p->sent || p->sent < ROUNDS * DEPTH);
}

static void connect_clients(struct harness_server *hs, struct piper *p, unsigned int n)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	unsigned int i;

	harness_clnt_attr(hs, &attr);
	attr.max_requests = DEPTH;
	attr.rnr_retry = 0;	/* an RNR would fail the call */
	for (i = 0; i < n; i++)
		assert_int_equal(rpcrdma_clnt_connect(&attr, &p[i].clnt), 0);
	assert_true(harness_wait_established(hs, n, 10000));
}

static void t_pipelined_clients_meet_no_rnr(void **state)
{
	struct piper *p = calloc(CLIENTS, sizeof(*p));
	struct harness_server hs;
	struct rpcrdma_stats st;
	uint64_t credits = 0;
	unsigned int i, active, loops = 0, most = 0;

	(void)state;
	assert_non_null(p);
	assert_int_equal(harness_server_start(&hs, DEPTH, 0, HARNESS_ECHO), 0);
	connect_clients(&hs, p, CLIENTS);
	do {
		active = 0;
		for (i = 0; i < CLIENTS; i++)
			active += pipe_step(&p[i], i);
	} while (active && ++loops < 2000000);
	for (i = 0; i < CLIENTS; i++) {
		struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
		struct rpcrdma_stats cst = { RPCRDMA_SIZED(cst) };

		assert_int_equal(p[i].bad, 0);
		assert_int_equal(p[i].done, ROUNDS * DEPTH);
		assert_int_equal(rpcrdma_clnt_stats(p[i].clnt, &cst), 0);
		assert_int_equal(cst.wc_errors, 0);
		assert_int_equal(cst.disconnects, 0);
		assert_int_equal(rpcrdma_clnt_info(p[i].clnt, &info), 0);
		credits += info.credits;
		if (p[i].max_credits > most)
			most = p[i].max_credits;
	}
	st = harness_server_stats(&hs);
	print_message("%u clients x %u deep over an SRQ of %u: most credits seen %u, "
		      "granted now %llu in all\n", CLIENTS, DEPTH, SRQ_SIZE, most,
		      (unsigned long long)credits);
	assert_int_equal(st.wc_errors, 0);
	assert_int_equal(st.dropped, 0);
	/* The grants are real: a client got more than one credit... */
	assert_true(most > 1);
	/* ...and what they promise together is never more than the SRQ holds. */
	assert_true(credits <= SRQ_SIZE);
	for (i = 0; i < CLIENTS; i++)
		rpcrdma_clnt_destroy(p[i].clnt);
	free(p);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

#define IDLE 96
/* The target: what an idle connection holds with the SRQ, heap and registered. */
#define IDLE_MAX_BYTES (32 * 1024)

/*
 * With the defaults (32 credits, 4 KiB inline) an idle connection holds
 * its own state and one receive of the shared pool in reserve; without the
 * SRQ it holds 72 receive and 40 send buffers.
 */
static void t_idle_connection_memory(void **state)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt **clnt = calloc(IDLE + 1, sizeof(*clnt));
	struct rpcrdma_stats before, after;
	struct harness_server hs;
	unsigned char msg[64], reply[64];
	uint64_t per_conn;
	unsigned int i;

	(void)state;
	assert_non_null(clnt);
	setenv("E2E_SRQ_SIZE", "0", 1);		/* the default */
	assert_int_equal(harness_server_start(&hs, 0, 0, HARNESS_ECHO), 0);
	setenv("E2E_SRQ_SIZE", "96", 1);
	harness_clnt_attr(&hs, &attr);
	/* The first connection makes the pool. */
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt[0]), 0);
	assert_true(harness_wait_established(&hs, 1, 5000));
	before = harness_server_stats(&hs);
	for (i = 1; i <= IDLE; i++)
		assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt[i]), 0);
	assert_true(harness_wait_established(&hs, IDLE + 1, 30000));
	/* Each is served once, then idle. */
	for (i = 0; i <= IDLE; i++) {
		size_t rlen = sizeof(reply);

		harness_fill_msg(msg, sizeof(msg), 0x60000000u + i, i);
		assert_int_equal(rpcrdma_clnt_call(clnt[i], msg, sizeof(msg), reply, &rlen, 0), 0);
	}
	after = harness_server_stats(&hs);
	per_conn = (after.heap_bytes - before.heap_bytes) / IDLE;
	print_message("SRQ: %llu bytes of server memory per idle connection "
		      "(heap, registered included: %llu registered)\n",
		      (unsigned long long)per_conn,
		      (unsigned long long)((after.registered_bytes - before.registered_bytes) / IDLE));
	assert_true(per_conn <= IDLE_MAX_BYTES);
	for (i = 0; i <= IDLE; i++)
		rpcrdma_clnt_destroy(clnt[i]);
	free(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/* An SRQ of 4 receives with 4 credits: 4 connections each keep one, a 5th is refused. */
static void t_full_srq_refuses(void **state)
{
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *clnt[5];
	struct harness_server hs;
	unsigned int i;

	(void)state;
	setenv("E2E_SRQ_SIZE", "4", 1);
	assert_int_equal(harness_server_start(&hs, 4, 0, HARNESS_ECHO), 0);
	setenv("E2E_SRQ_SIZE", "96", 1);
	harness_clnt_attr(&hs, &attr);
	attr.connect_timeout_ms = 3000;
	for (i = 0; i < 4; i++)
		assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt[i]), 0);
	assert_true(harness_wait_established(&hs, 4, 5000));
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt[4]), -ECONNREFUSED);
	assert_int_equal(harness_server_stats(&hs).conn_rejects, 1);
	/* A place given back is taken again. */
	rpcrdma_clnt_destroy(clnt[0]);
	assert_true(harness_wait_closed(&hs, 1, 5000));
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt[0]), 0);
	for (i = 0; i < 4; i++)
		rpcrdma_clnt_destroy(clnt[i]);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

/* An RDMA_MSG call with empty chunk lists and a 16-byte RPC call (a call's head, then 0). */
static size_t flood_call(unsigned char *buf, uint32_t xid)
{
	uint32_t w[11] = { htonl(xid), htonl(1), htonl(8), htonl(RPCRDMA_MSG), 0, 0, 0,
			   htonl(xid), 0, htonl(2), 0 };

	memcpy(buf, w, sizeof(w));
	return sizeof(w);
}

static bool conns_closed_1(void *arg)
{
	return harness_wait_closed(arg, 1, 0);
}

/*
 * A peer that ignores its credits (RFC 8166 3.3.1) against a server that
 * holds its calls: it is served from what no client was promised while it
 * has fewer than max_requests calls in progress, then closed; a client
 * that keeps to its credits goes on, with rnr_retry 0.
 */
static void t_credit_flooder_is_closed(void **state)
{
	unsigned char pdata[RPCRDMA_CM_PRIVATE_LEN], buf[64], reply[64];
	struct rpcrdma_cm_private mine = { 1024, 1024, 0 };
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt *good;
	struct harness_server hs;
	struct rawpeer rp;
	unsigned int i, sent = 0;

	(void)state;
	harness_require_inproc("it reads the number of calls the server holds");
	assert_int_equal(harness_server_start(&hs, 4, 0, HARNESS_HOLD), 0);
	assert_int_equal(rpcrdma_cm_private_encode(pdata, sizeof(pdata), &mine),
			 RPCRDMA_CM_PRIVATE_LEN);
	assert_int_equal(rawpeer_connect(&rp, (struct sockaddr *)&hs.addr, pdata, sizeof(pdata), 7),
			 0);
	for (i = 0; i < 12; i++) {
		if (rawpeer_send(&rp, buf, flood_call(buf, 0x100 + i)))
			break;
		sent++;
	}
	assert_true(harness_wait_for(conns_closed_1, &hs, 5000));
	/* Its first credit and 3 more in progress at most; the 5th closed it. */
	assert_true(sent >= 4);
	assert_true(atomic_load(&hs.sh->held_now) <= 4);
	assert_true(harness_server_stats(&hs).dropped >= 1);
	rawpeer_close(&rp);
	harness_server_release(&hs);
	atomic_store(&hs.sh->mode, HARNESS_ECHO);
	harness_clnt_attr(&hs, &attr);
	attr.rnr_retry = 0;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &good), 0);
	for (i = 0; i < 50; i++) {
		size_t rlen = sizeof(reply);

		harness_fill_msg(buf, sizeof(buf), 0x300 + i, i);
		assert_int_equal(rpcrdma_clnt_call(good, buf, sizeof(buf), reply, &rlen, 0), 0);
	}
	rpcrdma_clnt_destroy(good);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_pipelined_clients_meet_no_rnr),
		cmocka_unit_test(t_idle_connection_memory),
		cmocka_unit_test(t_full_srq_refuses),
		cmocka_unit_test(t_credit_flooder_is_closed),
	};

	/* Before any server starts, so that a server process inherits it too. */
	setenv("E2E_SRQ", "1", 1);
	setenv("E2E_SRQ_SIZE", "96", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

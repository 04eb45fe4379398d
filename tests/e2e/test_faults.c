/* SPDX-License-Identifier: MIT */
/*
 * Fault injection at each work request of an inline call: the client's Send,
 * the server's Receive, the server's reply Send, the client's Receive; each
 * flushed (QP moved to ERR), failed with an error status, or (Sends) met
 * with RNR. The call fails cleanly, or succeeds on a new connection when it
 * may be sent again; the next call reconnects; nothing leaks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <softrdma.h>

#include "harness.h"

enum position { CLIENT_SEND, SERVER_RECV, SERVER_SEND, CLIENT_RECV, NPOSITIONS };

static const char *const position_names[] = {
	"client Send", "server Receive", "server reply Send", "client Receive",
};

static struct softrdma_match position_match(enum position pos)
{
	struct softrdma_match m = { .count = 1 };

	/* One call at a time: the WRs execute in this order. */
	switch (pos) {
	case CLIENT_SEND:
		m.opcode_mask = 1u << IBV_WR_SEND;
		m.nth = 1;
		break;
	case SERVER_RECV:
		m.recv = 1;
		m.nth = 1;
		break;
	case SERVER_SEND:
		m.opcode_mask = 1u << IBV_WR_SEND;
		m.nth = 2;
		break;
	default:
		/* The server's Receive comes first, unless it is another process's. */
		m.recv = 1;
		m.nth = harness_fabric() == HARNESS_FABRIC_PROC ? 1 : 2;
		break;
	}
	return m;
}

static int one_call(struct rpcrdma_clnt *clnt, uint32_t xid, size_t len)
{
	unsigned char msg[256], reply[256];
	size_t rlen = sizeof(reply);
	int rc;

	harness_fill_msg(msg, len, xid, xid);
	rc = rpcrdma_clnt_call(clnt, msg, len, reply, &rlen, 5000);
	if (rc == 0 && (rlen != len || !rpcmsg_echoes(reply, msg, len)))
		return -EBADMSG;
	return rc;
}

/* Run one fault at one position; @retries 0 or 1. */
static void run_case(const struct softrdma_fault *tmpl, enum position pos, unsigned int retries,
		     const char *kind)
{
	struct harness_server hs;
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_clnt_info info = { RPCRDMA_SIZED(info) };
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	struct rpcrdma_clnt *clnt;
	struct softrdma_fault f = *tmpl;
	int id, rc;

	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_ECHO), 0);
	harness_clnt_attr(&hs, &attr);
	attr.retries = retries;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	assert_int_equal(one_call(clnt, 1, 64), 0);

	f.match = position_match(pos);
	id = softrdma_fault_add(&f);
	assert_true(id > 0);
	rc = one_call(clnt, 2, 100);
	if (softrdma_fault_fired(id) != 1)
		fail_msg("%s at the %s: the fault did not fire", kind, position_names[pos]);
	if (retries == 0 && rc != -ECONNRESET)
		fail_msg("%s at the %s: call returned %d, expected -ECONNRESET", kind,
			 position_names[pos], rc);
	if (retries == 1 && rc != 0)
		fail_msg("%s at the %s: a call with one retry returned %d", kind,
			 position_names[pos], rc);
	softrdma_fault_remove(id);

	/* The next call gets a new connection. */
	if (one_call(clnt, 3, 200) != 0)
		fail_msg("%s at the %s: no recovery", kind, position_names[pos]);
	assert_int_equal(rpcrdma_clnt_info(clnt, &info), 0);
	assert_int_equal(info.connects, 2);
	assert_int_equal(rpcrdma_clnt_stats(clnt, &st), 0);
	assert_int_equal(st.disconnects, 1);
	assert_int_equal(st.retransmits, retries);
	assert_true(st.flushes + st.wc_errors > 0);

	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

static void run_matrix(const struct softrdma_fault *f, const char *kind, bool sends_only)
{
	unsigned int pos, retries;

	for (pos = 0; pos < NPOSITIONS; pos++) {
		if (sends_only && (pos == SERVER_RECV || pos == CLIENT_RECV))
			continue;
		if (harness_fabric() == HARNESS_FABRIC_PROC &&
		    (pos == SERVER_RECV || pos == SERVER_SEND)) {
			/* Faults are per process: the server's WRs are out of reach. */
			fprintf(stderr, "E2E_FABRIC=proc: %s at the %s not run\n", kind,
				position_names[pos]);
			continue;
		}
		for (retries = 0; retries <= 1; retries++)
			run_case(f, pos, retries, kind);
	}
}

/*
 * A long call (its message pulled by the server's RDMA Read) whose
 * connection is lost goes again on the next one: the message is still the
 * caller's, unchanged until done(). It used to fail with -EMSGSIZE.
 */
static void t_long_call_resent(void **state)
{
	static unsigned char msg[9000], reply[9000];
	struct softrdma_fault f = {
		.match = { .opcode_mask = 1u << IBV_WR_SEND, .nth = 1, .count = 1 },
		.kind = SOFTRDMA_FAULT_STATUS,
		.status = IBV_WC_RETRY_EXC_ERR,
	};
	struct rpcrdma_clnt_attr attr = { RPCRDMA_SIZED(attr) };
	struct rpcrdma_stats st = { RPCRDMA_SIZED(st) };
	struct harness_server hs;
	struct rpcrdma_clnt *clnt;
	size_t rlen = sizeof(reply);
	int id;

	assert_int_equal(harness_server_start(&hs, 8, 0, HARNESS_ECHO), 0);
	harness_clnt_attr(&hs, &attr);
	attr.retries = 1;
	assert_int_equal(rpcrdma_clnt_connect(&attr, &clnt), 0);
	assert_int_equal(one_call(clnt, 1, 64), 0);
	harness_fill_msg(msg, sizeof(msg), 2, 2);
	id = softrdma_fault_add(&f);
	assert_true(id > 0);
	assert_int_equal(rpcrdma_clnt_call(clnt, msg, sizeof(msg), reply, &rlen, 5000), 0);
	assert_int_equal(softrdma_fault_fired(id), 1);
	softrdma_fault_remove(id);
	assert_int_equal(rlen, sizeof(msg));
	harness_assert_echo(reply, msg, sizeof(msg));
	assert_int_equal(rpcrdma_clnt_stats(clnt, &st), 0);
	assert_int_equal(st.retransmits, 1);
	assert_int_equal(st.read_chunks, 2);	/* a long call, both times */
	rpcrdma_clnt_destroy(clnt);
	harness_server_stop(&hs);
	harness_assert_fabric_idle();
}

static void t_flush_at_each_wr(void **state)
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_QP_ERROR };

	run_matrix(&f, "flush", false);
}

static void t_fatal_qp_at_each_wr(void **state)
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_QP_FATAL };

	run_matrix(&f, "fatal QP error", false);
}

static void t_access_error_at_each_wr(void **state)
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_STATUS, .status = IBV_WC_REM_ACCESS_ERR };

	run_matrix(&f, "remote access error", true);
	f.status = IBV_WC_LOC_PROT_ERR;
	run_matrix(&f, "local protection error", false);
}

static void t_rnr_at_each_send(void **state)
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_RNR };

	run_matrix(&f, "RNR", true);
}

static void t_disconnect_at_each_wr(void **state)
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_DISCONNECT };

	run_matrix(&f, "disconnect", false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_flush_at_each_wr),
		cmocka_unit_test(t_long_call_resent),
		cmocka_unit_test(t_fatal_qp_at_each_wr),
		cmocka_unit_test(t_access_error_at_each_wr),
		cmocka_unit_test(t_rnr_at_each_send),
		cmocka_unit_test(t_disconnect_at_each_wr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

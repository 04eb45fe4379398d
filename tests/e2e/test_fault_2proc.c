/* SPDX-License-Identifier: MIT */
/*
 * The fault matrix between processes: a server process and, per case, a
 * client process, forked from this one (which never touches the fabric), over
 * softrdma's socket backend (SOFTRDMA_SHM=0, suite fault-2proc) or its
 * shared-memory path (suite fault-2proc-shm).
 *
 * For every RPC shape (twoproc.h: inline, long call, Write chunk, Reply
 * chunk and each mix of DDP chunks) the WRs of one call are counted first,
 * on each side, per opcode (softrdma_executed()), plus each side's Receive:
 * those are the positions. At each position, in the process that owns the
 * WR, one of: a flush (QP to ERR), an error status (access error, or the
 * WR type's own error), RNR (Sends), a disconnect, or SIGKILL of that
 * process while the WR is held (a DELAY fault) or just as it was received.
 * Each with no retry and with one. Asserted:
 * - the call completes exactly once, with the status expected (-ECONNRESET;
 *   0 and the right bytes with a retry; -ENOTCONN with a retry when the
 *   server was killed), always a documented one;
 * - the fault fired exactly once; the next call on the same client works;
 * - the client process's fabric is empty after destroy (no QP, MR, window,
 *   WR, CM id left);
 * - the server survives every client-side fault and kill, goes on serving
 *   another client process (a call of every shape), closes every
 *   connection, releases every payload it named exactly once, and returns
 *   to its baseline: registered bytes, heap bytes, QPs, CQs, MRs, windows,
 *   CM ids and WRs as before the case.
 *
 * FAULT_2PROC_CASES=N runs a bounded subset (cases_limit()), as CI does
 * under memcheck and TSan; FAULT_2PROC_SHAPE=N runs one shape only.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "twoproc.h"

enum kind { K_FLUSH, K_ERROR, K_RNR, K_DISCONNECT, K_KILL, NKINDS };

static const char *const kind_names[NKINDS] = {
	"flush", "error status", "RNR", "disconnect", "SIGKILL",
};

enum side { CLIENT, SERVER };

struct position {
	enum side side;
	int recv;
	enum ibv_wr_opcode op;
	unsigned int nth;
};

#define MAX_POS 32

static struct {
	struct tp_ctl *ctl;
	pid_t server;
	struct tp_snapshot baseline;
	struct position pos[TP_NSHAPES][MAX_POS];
	unsigned int npos[TP_NSHAPES];
	unsigned int cases, failures, kills;
	bool teardown_failed;	/* cmocka 1.1's result leaves a group teardown out */
} m;

/* What a case's client process and this one share. */
struct case_sh {
	atomic_int phase;	/* 1: warmed up, waiting; 2: go; 3: called; 4: go on */
	atomic_int killed;	/* set by the kill watcher just before SIGKILL */
	int warm_rc;
	int status;		/* the faulted call's */
	int done_runs;
	int fired;
	int next_rc;		/* the call after it */
	int idle;		/* the fabric empty after destroy */
	int marked[TP_NMARKS];	/* discovery: the call's WRs */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *op_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
		return "Send";
	case IBV_WR_SEND_WITH_INV:
		return "Send With Invalidate";
	case IBV_WR_RDMA_WRITE:
		return "RDMA Write";
	case IBV_WR_RDMA_READ:
		return "RDMA Read";
	case IBV_WR_BIND_MW:
		return "BIND_MW";
	case IBV_WR_LOCAL_INV:
		return "LOCAL_INV";
	default:
		return "WR";
	}
}

static void pos_name(const struct position *p, char *buf, size_t len)
{
	if (p->recv)
		snprintf(buf, len, "%s Receive #%u", p->side == CLIENT ? "client" : "server", p->nth);
	else
		snprintf(buf, len, "%s %s #%u", p->side == CLIENT ? "client" : "server",
			 op_name(p->op), p->nth);
}

/* The fault for @kind at @p, or false when it does not apply there. */
static bool make_fault(enum kind kind, const struct position *p, struct softrdma_fault *f)
{
	memset(f, 0, sizeof(*f));
	f->match.count = 1;
	f->match.nth = p->nth;
	f->match.recv = p->recv;
	if (!p->recv)
		f->match.opcode_mask = 1u << p->op;
	switch (kind) {
	case K_FLUSH:
		f->kind = SOFTRDMA_FAULT_QP_ERROR;
		return true;
	case K_ERROR:
		f->kind = SOFTRDMA_FAULT_STATUS;
		if (p->recv)
			f->status = IBV_WC_LOC_PROT_ERR;
		else if (p->op == IBV_WR_BIND_MW)
			f->status = IBV_WC_MW_BIND_ERR;
		else if (p->op == IBV_WR_LOCAL_INV)
			f->status = IBV_WC_LOC_QP_OP_ERR;
		else
			f->status = IBV_WC_REM_ACCESS_ERR;
		return true;
	case K_RNR:
		f->kind = SOFTRDMA_FAULT_RNR;
		return !p->recv && (p->op == IBV_WR_SEND || p->op == IBV_WR_SEND_WITH_INV);
	case K_DISCONNECT:
		f->kind = SOFTRDMA_FAULT_DISCONNECT;
		return true;
	case K_KILL:
		/*
		 * A Send-queue WR is held (not executed) while the process dies;
		 * at a Receive a DELAY does nothing but mark the moment.
		 */
		f->kind = SOFTRDMA_FAULT_DELAY;
		f->delay_us = p->recv ? 1 : 5 * 1000 * 1000;
		return true;
	default:
		return false;
	}
}

static struct case_sh *case_sh_new(void)
{
	void *p = mmap(NULL, sizeof(struct case_sh), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void wait_phase(struct case_sh *cs, int phase)
{
	while (atomic_load(&cs->phase) < phase)
		poll(NULL, 0, 1);
}

/*
 * The client process of a case. With @f NULL, discovery: count one call's
 * WRs. With @f, the fault goes in here when @f_here.
 */
static void client_main(struct case_sh *cs, enum tp_shape shape, unsigned int retries,
			const struct softrdma_fault *f, bool f_here, bool kill_here)
{
	struct rpcrdma_clnt_attr attr;
	struct sockaddr_storage addr;
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_mem *mem;
	struct tp_call tc;
	unsigned char *arena;
	int id = 0, marks[TP_NMARKS];

	tp_clnt_attr(m.ctl, &addr, &attr);
	attr.retries = retries;
	arena = aligned_alloc(4096, TP_ARENA);
	if (!arena || rpcrdma_clnt_connect(&attr, &clnt))
		tp_exit(10);
	if (rpcrdma_clnt_mem_register(clnt, arena, TP_ARENA, &mem))
		tp_exit(10);
	cs->warm_rc = tp_call_sync(clnt, &tc, shape, arena, 1, 0);
	if (cs->warm_rc)
		tp_exit(10);
	atomic_store(&cs->phase, 1);
	wait_phase(cs, 2);
	if (!f && tp_marks_add(marks))
		tp_exit(12);
	if (f && f_here) {
		id = softrdma_fault_add(f);
		if (id <= 0)
			tp_exit(12);
		if (kill_here)
			tp_kill_on_fire(id, &cs->killed);
	}
	cs->status = tp_call_sync(clnt, &tc, shape, arena + TP_SLOT, 2, 0);
	cs->done_runs = atomic_load(&tc.done_runs);
	if (!f)
		tp_marks_read(marks, cs->marked);
	if (id > 0) {
		if (kill_here) {
			/* The watcher kills us: a Receive's marker may be seen just after the call. */
			poll(NULL, 0, 3000);
			tp_exit(11);
		}
		cs->fired = softrdma_fault_fired(id);
		softrdma_fault_remove(id);
	}
	atomic_store(&cs->phase, 3);
	/* Discovery: the server's markers are read before anything else runs. */
	if (!f)
		wait_phase(cs, 4);
	/* The next call works, on a new connection if the old one was lost. */
	cs->next_rc = tp_call_sync(clnt, &tc, shape, arena + 2 * TP_SLOT, 3, 0);
	if (atomic_load(&tc.done_runs) != tc.submitted)
		cs->next_rc = -EDOM;
	/* done() never runs twice, not even at destroy. */
	rpcrdma_mem_deregister(mem);
	rpcrdma_clnt_destroy(clnt);
	if (atomic_load(&tc.done_runs) != tc.submitted)
		cs->next_rc = -EDOM;
	free(arena);
	cs->idle = tp_fabric_idle("client after destroy");
	tp_exit(0);
}

/* Reap @pid within @timeout_ms, else kill it. Returns its wait status, or -1 on a hang. */
static int reap(pid_t pid, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	int status;

	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		poll(NULL, 0, 2);
	}
	return status;
}

static pid_t fork_client(struct case_sh *cs, enum tp_shape shape, unsigned int retries,
			 const struct softrdma_fault *f, bool f_here, bool kill_here)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		client_main(cs, shape, retries, f, f_here, kill_here);
	return pid;
}

#define case_fail(...)                                                                 \
	do {                                                                           \
		fprintf(stderr, "FAIL %s, %s at the %s, retries %u: ", tp_shape_names[shape], \
			kind_names[kind], where, retries);                             \
		fprintf(stderr, __VA_ARGS__);                                           \
		fprintf(stderr, "\n");                                                  \
		ok = false;                                                            \
	} while (0)

/* Another client process, a call of every shape: the server serves on. */
static bool witness(void)
{
	struct rpcrdma_clnt_attr attr;
	struct sockaddr_storage addr;
	struct rpcrdma_clnt *clnt;
	struct rpcrdma_mem *mem;
	struct tp_call tc;
	unsigned char *arena;
	pid_t pid;
	int status, s;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		tp_clnt_attr(m.ctl, &addr, &attr);
		arena = aligned_alloc(4096, TP_ARENA);
		if (!arena || rpcrdma_clnt_connect(&attr, &clnt) ||
		    rpcrdma_clnt_mem_register(clnt, arena, TP_ARENA, &mem))
			tp_exit(1);
		for (s = 0; s < TP_NSHAPES; s++) {
			int rc = tp_call_sync(clnt, &tc, (enum tp_shape)s, arena, 100 + s, 0);

			if (rc) {
				fprintf(stderr, "witness: %s: %d\n", tp_shape_names[s], rc);
				tp_exit(2);
			}
		}
		rpcrdma_mem_deregister(mem);
		rpcrdma_clnt_destroy(clnt);
		free(arena);
		tp_exit(tp_fabric_idle("witness after destroy") ? 0 : 3);
	}
	status = reap(pid, 60000);
	if (status != 0)
		fprintf(stderr, "witness: wait status %d\n", status);
	return status == 0;
}

static bool snapshot(struct tp_snapshot *snap)
{
	if (tp_server_request(m.ctl, TP_REQ_SNAPSHOT))
		return false;
	*snap = m.ctl->snap;
	return true;
}

/* The server is back where it started: what differs, printed; false if anything does. */
static bool server_at_baseline(void)
{
	struct tp_snapshot now;
	const struct softrdma_counts *a = &m.baseline.counts, *b = &now.counts;
	bool ok = true;

	if (!tp_server_quiet(m.ctl, 10000)) {
		fprintf(stderr, "server: %u connections accepted (%u established), %u closed\n",
			atomic_load(&m.ctl->conns_accepted), atomic_load(&m.ctl->conns_established),
			atomic_load(&m.ctl->conns_closed));
		ok = false;
	}
	if (atomic_load(&m.ctl->tally.named) != atomic_load(&m.ctl->tally.released)) {
		fprintf(stderr, "server: %u payloads named, %u released\n",
			atomic_load(&m.ctl->tally.named), atomic_load(&m.ctl->tally.released));
		ok = false;
	}
	if (!snapshot(&now)) {
		fprintf(stderr, "server: no answer\n");
		return false;
	}
#define SAME(field)                                                                    \
	do {                                                                           \
		if (now.stats.field != m.baseline.stats.field) {                       \
			fprintf(stderr, "server: " #field " %llu, baseline %llu\n",     \
				(unsigned long long)now.stats.field,                   \
				(unsigned long long)m.baseline.stats.field);           \
			ok = false;                                                    \
		}                                                                      \
	} while (0)
	SAME(registered_bytes);
	SAME(heap_bytes);
#undef SAME
	if (a->qps != b->qps || a->cqs != b->cqs || a->mrs != b->mrs || a->mws != b->mws ||
	    a->pds != b->pds || a->cm_ids != b->cm_ids || a->comp_channels != b->comp_channels ||
	    a->send_wrs != b->send_wrs || a->recv_wrs != b->recv_wrs ||
	    a->unacked_events != b->unacked_events) {
		fprintf(stderr, "server fabric: qps %u/%u cqs %u/%u mrs %u/%u mws %u/%u "
			"cm_ids %u/%u send_wrs %u/%u recv_wrs %u/%u unacked %u/%u (now/baseline)\n",
			b->qps, a->qps, b->cqs, a->cqs, b->mrs, a->mrs, b->mws, a->mws, b->cm_ids,
			a->cm_ids, b->send_wrs, a->send_wrs, b->recv_wrs, a->recv_wrs,
			b->unacked_events, a->unacked_events);
		ok = false;
	}
	return ok;
}

/* A fresh server, proven to serve, and its baseline taken. */
static bool server_up(void)
{
	memset(&m.ctl->tally, 0, sizeof(m.ctl->tally));
	atomic_store(&m.ctl->conns_accepted, 0);
	atomic_store(&m.ctl->conns_established, 0);
	atomic_store(&m.ctl->conns_closed, 0);
	m.server = tp_server_spawn(m.ctl);
	if (m.server < 0) {
		fprintf(stderr, "server: spawn failed: %d\n", (int)m.server);
		return false;
	}
	return witness() && tp_server_quiet(m.ctl, 10000) && snapshot(&m.baseline);
}

static bool run_case(enum tp_shape shape, const struct position *p, enum kind kind,
		     unsigned int retries)
{
	struct softrdma_fault f;
	struct case_sh *cs;
	char where[64];
	bool ok = true, server_side = p->side == SERVER, kill = kind == K_KILL;
	int status, expect, srv_status;
	pid_t pid;

	pos_name(p, where, sizeof(where));
	if (!make_fault(kind, p, &f))
		return true;
	cs = case_sh_new();
	assert_non_null(cs);
	m.cases++;
	pid = fork_client(cs, shape, retries, &f, !server_side, kill && !server_side);
	assert_true(pid > 0);
	while (atomic_load(&cs->phase) < 1 && waitpid(pid, &status, WNOHANG) == 0)
		poll(NULL, 0, 1);
	if (atomic_load(&cs->phase) < 1) {
		case_fail("the client did not warm up (wait status %d, call %d)", status,
			  cs->warm_rc);
		munmap(cs, sizeof(*cs));
		return false;
	}
	if (server_side) {
		m.ctl->fault = f;
		m.ctl->kill_on_fire = kill;
		if (tp_server_request(m.ctl, TP_REQ_FAULT) || m.ctl->req_rc <= 0)
			case_fail("the server did not add the fault (%d)", m.ctl->req_rc);
	}
	atomic_store(&cs->phase, 2);
	status = reap(pid, 60000);
	if (status == -1) {
		case_fail("the client hung");
	} else if (kill && !server_side) {
		m.kills++;
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL || !atomic_load(&cs->killed))
			case_fail("the client was not killed at the fault (wait status %#x, call %d)",
				  status, cs->status);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		case_fail("the client process ended with wait status %#x", status);
	} else {
		if (kill)
			expect = retries ? -ENOTCONN : -ECONNRESET;
		else
			expect = retries ? 0 : -ECONNRESET;
		if (cs->status != expect)
			case_fail("call status %d, expected %d%s", cs->status, expect,
				  tp_status_documented(cs->status) ? "" : " (undocumented)");
		if (cs->done_runs != 1)
			case_fail("done() ran %d times", cs->done_runs);
		if (!server_side && cs->fired != 1)
			case_fail("the fault fired %d times", cs->fired);
		/* With the server killed, the next call has nobody to reach. */
		if (kill ? cs->next_rc != -ENOTCONN && cs->next_rc != -ECONNREFUSED
			 : cs->next_rc != 0)
			case_fail("the next call returned %d", cs->next_rc);
		if (!cs->idle)
			case_fail("the client's fabric is not empty after destroy");
	}
	if (server_side && kill) {
		m.kills++;
		srv_status = reap(m.server, 10000);
		if (srv_status == -1 || !WIFSIGNALED(srv_status) ||
		    WTERMSIG(srv_status) != SIGKILL)
			case_fail("the server was not killed at the fault (wait status %#x)",
				  srv_status);
		if (!server_up()) {
			case_fail("no server after the kill");
			fail_msg("cannot go on without a server");
		}
	} else {
		if (server_side) {
			if (tp_server_request(m.ctl, TP_REQ_CLEAR) || m.ctl->fired != 1)
				case_fail("the server's fault fired %d times", m.ctl->fired);
		}
		if (!witness())
			case_fail("the server stopped serving other clients");
		if (!server_at_baseline())
			case_fail("the server did not return to its baseline");
	}
	munmap(cs, sizeof(*cs));
	if (!ok)
		m.failures++;
	return ok;
}

/* One clean call of @shape: its WRs on each side are the positions. */
static void discover(enum tp_shape shape)
{
	struct case_sh *cs = case_sh_new();
	unsigned int n = 0, k, side;
	int op, status;
	pid_t pid;

	assert_non_null(cs);
	pid = fork_client(cs, shape, 0, NULL, false, false);
	assert_true(pid > 0);
	while (atomic_load(&cs->phase) < 1 && waitpid(pid, &status, WNOHANG) == 0)
		poll(NULL, 0, 1);
	assert_int_equal(atomic_load(&cs->phase), 1);
	assert_int_equal(tp_server_request(m.ctl, TP_REQ_MARK), 0);
	assert_int_equal(m.ctl->req_rc, 0);
	atomic_store(&cs->phase, 2);
	wait_phase(cs, 3);
	assert_int_equal(tp_server_request(m.ctl, TP_REQ_MARKED), 0);
	atomic_store(&cs->phase, 4);
	assert_int_equal(reap(pid, 30000), 0);
	assert_int_equal(cs->status, 0);
	for (side = CLIENT; side <= SERVER; side++) {
		const int *marked = side == CLIENT ? cs->marked : m.ctl->marked;

		for (k = 1; k <= (unsigned int)marked[TP_NOPCODES] && n < MAX_POS; k++)
			m.pos[shape][n++] = (struct position){ .side = side, .recv = 1, .nth = k };
		for (op = 0; op < TP_NOPCODES; op++) {
			for (k = 1; k <= (unsigned int)marked[op] && n < MAX_POS; k++)
				m.pos[shape][n++] = (struct position){
					.side = side, .op = (enum ibv_wr_opcode)op, .nth = k };
		}
	}
	m.npos[shape] = n;
	fprintf(stderr, "%s: %u positions:", tp_shape_names[shape], n);
	for (k = 0; k < n; k++) {
		char name[64];

		pos_name(&m.pos[shape][k], name, sizeof(name));
		fprintf(stderr, "%s %s", k ? "," : "", name);
	}
	fprintf(stderr, "\n");
	munmap(cs, sizeof(*cs));
}

static int group_setup(void **state)
{
	int s;

	(void)state;
	if (tp_rdv_dir()) {
		fprintf(stderr, "no rendezvous directory\n");
		return -1;
	}
	m.ctl = tp_ctl_new();
	if (!m.ctl || !server_up())
		return -1;
	for (s = 0; s < TP_NSHAPES; s++)
		discover((enum tp_shape)s);
	return 0;
}

static int group_teardown(void **state)
{
	int status;

	(void)state;
	status = tp_server_stop(m.ctl, m.server);
	fprintf(stderr, "fault matrix (SOFTRDMA_SHM=%s): %u cases, %u failed, %u kills\n",
		getenv("SOFTRDMA_SHM") ? getenv("SOFTRDMA_SHM") : "default", m.cases, m.failures,
		m.kills);
	if (status != 0) {
		fprintf(stderr, "server: wait status %#x at stop\n", status);
		m.teardown_failed = true;
		return -1;
	}
	return 0;
}

/* One case of the matrix: a position of a shape, and the retries. */
struct case_ref {
	unsigned int k;
	unsigned int retries;
};

/* The cases of @kind at @shape that apply, in matrix order, into @out (2 * MAX_POS). */
static unsigned int applicable(enum tp_shape shape, enum kind kind, struct case_ref *out)
{
	struct softrdma_fault f;
	unsigned int k, retries, n = 0;

	for (k = 0; k < m.npos[shape]; k++) {
		if (!make_fault(kind, &m.pos[shape][k], &f))
			continue;
		for (retries = 0; retries <= 1; retries++) {
			/* A killed client has no retry to make. */
			if (kind == K_KILL && retries && m.pos[shape][k].side == CLIENT)
				continue;
			out[n++] = (struct case_ref){ .k = k, .retries = retries };
		}
	}
	return n;
}

/*
 * FAULT_2PROC_CASES=N (memcheck's and TSan's runs): at most N cases per
 * shape and kind, spread evenly over the positions and retries, from an
 * offset that turns with the shape and kind, so that the subset still has
 * every shape x every kind and, across them, both sides, every opcode and
 * both retry counts. Deterministic. Unset or 0: the whole matrix.
 */
static unsigned int cases_limit(void)
{
	const char *v = getenv("FAULT_2PROC_CASES");
	char *end;
	unsigned long n;

	if (!v || !*v)
		return 0;
	n = strtoul(v, &end, 10);
	if (*end || n > 2 * MAX_POS)
		fail_msg("FAULT_2PROC_CASES=%s: expected 0 to %d", v, 2 * MAX_POS);
	return (unsigned int)n;
}

static void run_kind(enum kind kind)
{
	const char *only = getenv("FAULT_2PROC_SHAPE");
	struct case_ref refs[2 * MAX_POS];
	unsigned int s, i, n, pick, off, limit = cases_limit(), failed = m.failures;

	for (s = 0; s < TP_NSHAPES; s++) {
		if (only && atoi(only) != (int)s)
			continue;
		n = applicable((enum tp_shape)s, kind, refs);
		pick = limit && limit < n ? limit : n;
		off = pick < n ? (s * NKINDS + kind) % n : 0;
		for (i = 0; i < pick; i++) {
			const struct case_ref *r = &refs[(off + i * n / pick) % n];

			run_case((enum tp_shape)s, &m.pos[s][r->k], kind, r->retries);
		}
	}
	if (m.failures != failed)
		fail_msg("%s: %u cases failed", kind_names[kind], m.failures - failed);
}

static void t_flush(void **state)
{
	run_kind(K_FLUSH);
}

static void t_error(void **state)
{
	run_kind(K_ERROR);
}

static void t_rnr(void **state)
{
	run_kind(K_RNR);
}

static void t_disconnect(void **state)
{
	run_kind(K_DISCONNECT);
}

static void t_kill(void **state)
{
	run_kind(K_KILL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_flush),
		cmocka_unit_test(t_error),
		cmocka_unit_test(t_rnr),
		cmocka_unit_test(t_disconnect),
		cmocka_unit_test(t_kill),
	};

	int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);

	/* The server's own checks at stop (and memcheck's of it) fail the run too. */
	return failed || m.teardown_failed ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Faults between processes (twoproc.h): the server process, the call shapes
 * and their checks, and the helpers both the fault matrix and the soak use.
 * No cmocka here: these run in forked children, which report through
 * shared memory and their exit status.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_VALGRIND_H
#include <valgrind/valgrind.h>
#endif

#include "twoproc.h"

const char *const tp_shape_names[TP_NSHAPES] = {
	"inline", "long call", "long call + Reply chunk", "Write chunk", "Reply chunk",
	"Read chunk", "Read + Write chunks", "Read + Reply chunks", "Write + Reply chunks",
	"Read + Write + Reply chunks",
};

#define PAYLOAD 10000
#define LONG_MSG 9000
#define MSG_OFF 0
#define PAYLOAD_OFF (16 * 1024)
#define RESULT_OFF (32 * 1024)
#define REPLY_OFF (48 * 1024)
#define BUF_MAX (16 * 1024)

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tp_exit(int status)
{
	exit(status);
}

void tp_kill_self(void)
{
#ifdef HAVE_VALGRIND_H
	if (RUNNING_ON_VALGRIND)
		VALGRIND_CLO_CHANGE("--leak-check=no");
#endif
	for (;;)
		kill(getpid(), SIGKILL);
}

struct tp_ctl *tp_ctl_new(void)
{
	void *p = mmap(NULL, sizeof(struct tp_ctl), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static char rdv_dir[64];
static pid_t rdv_owner;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rdv_dir_remove(void)
{
	/* Children run the atexit handlers too (tp_exit()): only the owner removes it. */
	if (getpid() == rdv_owner)
		nftw(rdv_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int tp_rdv_dir(void)
{
	snprintf(rdv_dir, sizeof(rdv_dir), "/tmp/tp-rdv-XXXXXX");
	if (!mkdtemp(rdv_dir) || setenv("SOFTRDMA_DIR", rdv_dir, 1))
		return -errno;
	rdv_owner = getpid();
	atexit(rdv_dir_remove);
	return 0;
}

/* ---- The server process ------------------------------------------------ */

static struct tp_ctl *srv_ctl;
static struct rpcrdma_svc *srv;
static int kill_armed;	/* a fault whose firing kills this server */

static void srv_on_conn(struct rpcrdma_svc_conn *conn, enum rpcrdma_conn_event event, void *arg)
{
	(void)conn;
	(void)arg;
	if (event == RPCRDMA_CONN_ACCEPTED)
		atomic_fetch_add(&srv_ctl->conns_accepted, 1);
	else if (event == RPCRDMA_CONN_ESTABLISHED)
		atomic_fetch_add(&srv_ctl->conns_established, 1);
	else if (event == RPCRDMA_CONN_CLOSED)
		atomic_fetch_add(&srv_ctl->conns_closed, 1);
}

static void srv_on_call(struct rpcrdma_svc_call *call, void *arg)
{
	size_t len;
	const unsigned char *msg = rpcrdma_svc_call_msg(call, &len);

	(void)arg;
	/* Killed at the Receive: never answer the call (the watcher may be late). */
	if (kill_armed && softrdma_fault_fired(kill_armed) > 0)
		tp_kill_self();
	atomic_fetch_add(&srv_ctl->calls, 1);
	if (len >= DDP_CALL_MIN && get32(msg, DDP_W_OP) == TP_OP_SINK) {
		unsigned char echo[DDP_CALL_MIN];

		memcpy(echo, msg, sizeof(echo));
		rpcmsg_echo(echo, sizeof(echo));
		if (rpcrdma_svc_reply(call, echo, sizeof(echo)))
			atomic_fetch_add(&srv_ctl->tally.reply_errors, 1);
		return;
	}
	ddp_serve_call(call);
}

int tp_marks_add(int ids[TP_NMARKS])
{
	struct softrdma_fault f = { .kind = SOFTRDMA_FAULT_DELAY, .delay_us = 1 };
	int i;

	for (i = 0; i < TP_NMARKS; i++) {
		f.match.recv = i == TP_NOPCODES;
		f.match.opcode_mask = f.match.recv ? 0 : 1u << i;
		ids[i] = softrdma_fault_add(&f);
		if (ids[i] <= 0)
			return ids[i];
	}
	return 0;
}

void tp_marks_read(const int ids[TP_NMARKS], int counts[TP_NMARKS])
{
	int i;

	for (i = 0; i < TP_NMARKS; i++) {
		counts[i] = softrdma_fault_fired(ids[i]);
		softrdma_fault_remove(ids[i]);
	}
}

static void srv_snapshot(struct tp_snapshot *snap)
{
	RPCRDMA_INIT(&snap->stats);
	rpcrdma_svc_stats(srv, &snap->stats);
	softrdma_get_counts(&snap->counts);
}

static int last_fault;
static int marks[TP_NMARKS];

static void srv_request(struct tp_ctl *ctl)
{
	switch (ctl->req) {
	case TP_REQ_FAULT:
		ctl->req_rc = softrdma_fault_add(&ctl->fault);
		if (ctl->req_rc > 0) {
			last_fault = ctl->req_rc;
			if (ctl->kill_on_fire) {
				kill_armed = last_fault;
				tp_kill_on_fire(last_fault, NULL);
			}
		}
		break;
	case TP_REQ_CLEAR:
		ctl->fired = last_fault ? softrdma_fault_fired(last_fault) : 0;
		last_fault = 0;
		ctl->req_rc = softrdma_fault_remove(0);
		break;
	case TP_REQ_SNAPSHOT:
		srv_snapshot(&ctl->snap);
		ctl->req_rc = 0;
		break;
	case TP_REQ_MARK:
		ctl->req_rc = tp_marks_add(marks);
		break;
	case TP_REQ_MARKED:
		tp_marks_read(marks, ctl->marked);
		ctl->req_rc = 0;
		break;
	default:
		ctl->req_rc = -EINVAL;
		break;
	}
}

/* The soak's server-side faults: one now and then, on any of its WRs. */
static void srv_soak_fault(struct tp_ctl *ctl, uint32_t *seed, int *ids, unsigned int *nids)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_INV, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
	};
	struct softrdma_fault f = { .match = { .count = 1 } };
	int id;

	if ((unsigned int)rand_r(seed) % 1000 >= ctl->soak_faults_permille)
		return;
	f.match.nth = 1 + (unsigned int)rand_r(seed) % 40;
	if (rand_r(seed) % 5 == 0)
		f.match.recv = 1;
	else
		f.match.opcode_mask = 1u << ops[rand_r(seed) % 4];
	switch (rand_r(seed) % 4) {
	case 0:
		f.kind = SOFTRDMA_FAULT_QP_ERROR;
		break;
	case 1:
		f.kind = SOFTRDMA_FAULT_STATUS;
		f.status = f.match.recv ? IBV_WC_LOC_PROT_ERR : IBV_WC_REM_ACCESS_ERR;
		break;
	case 2:
		f.kind = f.match.recv ? SOFTRDMA_FAULT_QP_ERROR : SOFTRDMA_FAULT_RNR;
		break;
	default:
		f.kind = SOFTRDMA_FAULT_DISCONNECT;
		break;
	}
	/* One at a time: account for the one before. */
	if (*nids) {
		atomic_fetch_add(&ctl->soak_faults_fired, (unsigned int)softrdma_fault_fired(ids[0]));
		softrdma_fault_remove(ids[0]);
		*nids = 0;
	}
	id = softrdma_fault_add(&f);
	if (id > 0) {
		ids[0] = id;
		*nids = 1;
		atomic_fetch_add(&ctl->soak_faults_added, 1);
	}
}

static void srv_log(int level, const char *msg, void *arg)
{
	(void)arg;
	fprintf(stderr, "server[%d] rpcrdma[%d]: %s\n", (int)getpid(), level, msg);
}

/* The server process's body. Never returns. */
static void srv_main(struct tp_ctl *ctl)
{
	struct rpcrdma_svc_attr attr = { RPCRDMA_SIZED(attr) };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(ctl->addr);
	unsigned int seen = atomic_load(&ctl->req_seq), nids = 0;
	uint32_t seed = ctl->soak_seed;
	int ids[1], rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getenv("RPCRDMA_TEST_LOG"))
		rpcrdma_set_log(srv_log, NULL, atoi(getenv("RPCRDMA_TEST_LOG")));
	srv_ctl = ctl;
	ddp_counters_p = &ctl->tally;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	attr.addr = (struct sockaddr *)&sin;
	attr.max_requests = 16;
	attr.on_call = srv_on_call;
	attr.on_conn = srv_on_conn;
	rc = rpcrdma_svc_listen(&attr, &srv);
	if (!rc)
		rc = rpcrdma_svc_addr(srv, (struct sockaddr *)&ctl->addr, &len);
	if (rc) {
		atomic_store(&ctl->ready, rc);
		tp_exit(1);
	}
	atomic_store(&ctl->ready, 1);
	while (!atomic_load(&ctl->stop)) {
		rpcrdma_svc_wait(srv, 20);
		if (atomic_load(&ctl->req_seq) != seen) {
			seen = atomic_load(&ctl->req_seq);
			srv_request(ctl);
			atomic_store(&ctl->done_seq, seen);
		}
		if (ctl->soak_faults_permille)
			srv_soak_fault(ctl, &seed, ids, &nids);
	}
	if (nids)
		atomic_fetch_add(&ctl->soak_faults_fired, (unsigned int)softrdma_fault_fired(ids[0]));
	softrdma_fault_remove(0);
	rpcrdma_svc_destroy(srv);
	/* Every payload named was released; the fabric holds nothing of ours. */
	rc = 0;
	if (atomic_load(&ctl->tally.named) != atomic_load(&ctl->tally.released)) {
		fprintf(stderr, "server: %u payloads named, %u released\n",
			atomic_load(&ctl->tally.named), atomic_load(&ctl->tally.released));
		rc = 3;
	}
	if (!tp_fabric_idle("server after destroy"))
		rc = 3;
	tp_exit(rc);
}

pid_t tp_server_spawn(struct tp_ctl *ctl)
{
	int64_t deadline = now_ms() + 20000;
	pid_t pid;
	int status;

	atomic_store(&ctl->ready, 0);
	atomic_store(&ctl->stop, false);
	atomic_store(&ctl->done_seq, atomic_load(&ctl->req_seq));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		srv_main(ctl);
	while (atomic_load(&ctl->ready) == 0) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return -ECHILD;
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -ETIMEDOUT;
		}
		poll(NULL, 0, 2);
	}
	if (atomic_load(&ctl->ready) < 0) {
		waitpid(pid, &status, 0);
		return atomic_load(&ctl->ready);
	}
	return pid;
}

int tp_server_stop(struct tp_ctl *ctl, pid_t pid)
{
	int64_t deadline = now_ms() + 30000;
	int status;

	atomic_store(&ctl->stop, true);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_ms() > deadline) {
			fprintf(stderr, "twoproc: the server process did not stop; killed\n");
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		poll(NULL, 0, 2);
	}
	return status;
}

int tp_server_request(struct tp_ctl *ctl, enum tp_request req)
{
	int64_t deadline = now_ms() + 10000;
	unsigned int want;

	ctl->req = req;
	want = atomic_fetch_add(&ctl->req_seq, 1) + 1;
	while (atomic_load(&ctl->done_seq) != want) {
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		poll(NULL, 0, 1);
	}
	return 0;
}

bool tp_server_quiet(struct tp_ctl *ctl, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;

	while (atomic_load(&ctl->conns_closed) != atomic_load(&ctl->conns_accepted)) {
		if (now_ms() > deadline)
			return false;
		poll(NULL, 0, 2);
	}
	return true;
}

/* ---- Calls --------------------------------------------------------------- */

void tp_clnt_attr(struct tp_ctl *ctl, struct sockaddr_storage *addr, struct rpcrdma_clnt_attr *attr)
{
	memcpy(addr, &ctl->addr, sizeof(*addr));
	RPCRDMA_INIT(attr);
	attr->addr = (const struct sockaddr *)addr;
	attr->connect_timeout_ms = 5000;
	attr->call_timeout_ms = 5000;
}

static void tp_done(struct rpcrdma_call *call)
{
	struct tp_call *tc = call->arg;

	atomic_fetch_add(&tc->done_runs, 1);
}

/* The message of a DDP_OP_READ: a call's head, op, bytes, seed. */
static size_t msg_read(unsigned char *msg, uint32_t xid, uint32_t bytes)
{
	ddp_call_msg(msg, xid, DDP_OP_READ, bytes, xid * 7 + 1);
	return DDP_CALL_LEN;
}

/* A message of @len bytes: a call's head, @op, a pattern. */
static size_t msg_fill(unsigned char *msg, uint32_t xid, uint32_t op, size_t len)
{
	ddp_fill(msg, len, xid);
	rpcmsg_call_head(msg, xid);
	put32(msg, DDP_W_OP, op);
	return len;
}

int tp_call_submit(struct rpcrdma_clnt *clnt, struct tp_call *tc, enum tp_shape shape,
		   unsigned char *base, uint32_t xid, int timeout_ms)
{
	struct rpcrdma_call *c = &tc->call;
	unsigned char *msg = base + MSG_OFF;
	int rc;

	memset(tc, 0, sizeof(*tc));
	RPCRDMA_INIT(c);
	tc->shape = shape;
	tc->xid = xid;
	tc->base = base;
	c->msg = msg;
	c->reply = base + REPLY_OFF;
	c->reply_max = 256;
	c->timeout_ms = timeout_ms;
	c->done = tp_done;
	c->arg = tc;
	memset(base + RESULT_OFF, 0, BUF_MAX);
	memset(base + REPLY_OFF, 0, BUF_MAX);
	switch (shape) {
	case TP_INLINE:
		c->msg_len = msg_fill(msg, xid, DDP_OP_ECHO, 200);
		break;
	case TP_LONG_CALL:
		c->msg_len = msg_fill(msg, xid, TP_OP_SINK, LONG_MSG);
		break;
	case TP_LONG_CALL_REPLY:
		c->msg_len = msg_fill(msg, xid, DDP_OP_ECHO, LONG_MSG);
		c->reply_max = BUF_MAX;
		break;
	case TP_WRITE:
	case TP_WRITE_REPLY:
		c->msg_len = msg_read(msg, xid, PAYLOAD);
		c->result = base + RESULT_OFF;
		c->result_max = BUF_MAX;
		if (shape == TP_WRITE_REPLY)
			c->reply_max = BUF_MAX;
		break;
	case TP_REPLY:
		c->msg_len = msg_read(msg, xid, 6000);
		c->reply_max = BUF_MAX;
		break;
	case TP_READ:
	case TP_READ_WRITE:
	case TP_READ_REPLY:
	case TP_READ_WRITE_REPLY:
		c->msg_len = msg_fill(msg, xid, shape == TP_READ ? TP_OP_SINK : DDP_OP_ECHO, 40);
		c->payload = base + PAYLOAD_OFF;
		c->payload_len = PAYLOAD;
		c->payload_pos = 24;
		ddp_fill(base + PAYLOAD_OFF, PAYLOAD, xid + 3);
		if (shape == TP_READ_WRITE || shape == TP_READ_WRITE_REPLY) {
			c->result = base + RESULT_OFF;
			c->result_max = BUF_MAX;
		}
		if (shape == TP_READ_REPLY)
			c->reply_max = BUF_MAX;
		if (shape == TP_READ_WRITE_REPLY)
			c->reply_max = 8192;
		break;
	default:
		return -EINVAL;
	}
	rc = rpcrdma_clnt_submit(clnt, c);
	tc->submitted = rc == 0;
	return rc;
}

int tp_call_check(const struct tp_call *tc)
{
	const struct rpcrdma_call *c = &tc->call;
	const unsigned char *msg = tc->base + MSG_OFF, *reply = tc->base + REPLY_OFF;
	const unsigned char *result = tc->base + RESULT_OFF;
	const unsigned char *payload = tc->base + PAYLOAD_OFF;
	uint32_t seed = tc->xid * 7 + 1;

	if (c->status)
		return c->status;
	switch (tc->shape) {
	case TP_INLINE:
	case TP_LONG_CALL_REPLY:
		if (c->reply_len != c->msg_len || !rpcmsg_echoes(reply, msg, c->msg_len))
			return -EBADMSG;
		break;
	case TP_LONG_CALL:
	case TP_READ:
		if (c->reply_len != DDP_CALL_MIN || !rpcmsg_echoes(reply, msg, DDP_CALL_MIN))
			return -EBADMSG;
		break;
	case TP_WRITE:
	case TP_WRITE_REPLY:
		if (c->reply_len != DDP_READ_POS || !rpcmsg_echoes(reply, msg, RPCMSG_HEAD) ||
		    c->result_len != PAYLOAD || ddp_check(result, PAYLOAD, seed) != PAYLOAD)
			return -EBADMSG;
		break;
	case TP_REPLY:
		if (c->reply_len != DDP_READ_POS + 6000 ||
		    !rpcmsg_echoes(reply, msg, RPCMSG_HEAD) ||
		    ddp_check(reply + DDP_READ_POS, 6000, seed) != 6000)
			return -EBADMSG;
		break;
	case TP_READ_WRITE:
	case TP_READ_WRITE_REPLY:
		if (c->reply_len != c->msg_len || !rpcmsg_echoes(reply, msg, c->msg_len) ||
		    c->result_len != PAYLOAD || memcmp(result, payload, PAYLOAD))
			return -EBADMSG;
		break;
	case TP_READ_REPLY:
		if (c->reply_len != c->msg_len + PAYLOAD || !rpcmsg_echoes(reply, msg, 24) ||
		    memcmp(reply + 24, payload, PAYLOAD) ||
		    memcmp(reply + 24 + PAYLOAD, msg + 24, c->msg_len - 24))
			return -EBADMSG;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

int tp_call_sync(struct rpcrdma_clnt *clnt, struct tp_call *tc, enum tp_shape shape,
		 unsigned char *base, uint32_t xid, int timeout_ms)
{
	int64_t deadline;
	int rc = tp_call_submit(clnt, tc, shape, base, xid, timeout_ms);

	if (rc)
		return rc;
	/* The call's own timeout bounds it; past that (and some slack) it hangs. */
	deadline = now_ms() + (timeout_ms ? timeout_ms : 10000) + 10000;
	while (atomic_load(&tc->done_runs) == 0) {
		if (now_ms() > deadline)
			return -ETIME;
		rpcrdma_clnt_wait(clnt, 100);
	}
	return tp_call_check(tc);
}

bool tp_status_documented(int status)
{
	switch (status) {
	case 0:
	case -ETIMEDOUT:
	case -ECONNRESET:
	case -EMSGSIZE:
	case -EREMOTEIO:
	case -EPROTONOSUPPORT:
	case -EPROTO:
	case -ENOTCONN:
	case -ECANCELED:
		return true;
	default:
		return false;
	}
}

bool tp_fabric_idle(const char *who)
{
	struct softrdma_counts c;

	softrdma_get_counts(&c);
	if (!c.qps && !c.cqs && !c.comp_channels && !c.mrs && !c.mws && !c.pds && !c.cm_ids &&
	    !c.send_wrs && !c.recv_wrs && !c.unacked_events)
		return true;
	fprintf(stderr, "%s: the fabric still holds qps %u cqs %u channels %u mrs %u mws %u "
		"pds %u cm_ids %u send_wrs %u recv_wrs %u unacked %u\n", who, c.qps, c.cqs,
		c.comp_channels, c.mrs, c.mws, c.pds, c.cm_ids, c.send_wrs, c.recv_wrs,
		c.unacked_events);
	return false;
}

struct kill_watch {
	int id;
	atomic_int *flag;
};

static void *kill_watch_run(void *arg)
{
	struct kill_watch w = *(struct kill_watch *)arg;

	free(arg);
	for (;;) {
		if (softrdma_fault_fired(w.id) > 0) {
			if (w.flag)
				atomic_store(w.flag, 1);
			tp_kill_self();
		}
		usleep(100);
	}
	return NULL;
}

int tp_kill_on_fire(int id, atomic_int *flag)
{
	struct kill_watch *w = malloc(sizeof(*w));
	pthread_t t;
	int rc;

	if (!w)
		return -ENOMEM;
	w->id = id;
	w->flag = flag;
	rc = -pthread_create(&t, NULL, kill_watch_run, w);
	if (rc) {
		free(w);
		return rc;
	}
	pthread_detach(t);
	return 0;
}

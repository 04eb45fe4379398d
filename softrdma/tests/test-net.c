/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance between processes (the socket backend): the test is
 * the client, a copy of this program started as the peer process is the
 * server (or, once, a synchronous client). rdma_cm across processes with
 * private data, reject and unlistened ports; SEND, SEND with immediate,
 * RDMA Write (with immediate) and Read into the peer's registered memory;
 * remote access, RNR and length errors with both sides' completions and
 * async events; a peer that is SIGKILLed (flush, RETRY_EXC_ERR for the work
 * in flight, DISCONNECTED, in bounded time), before or after accepting; port
 * conflicts across processes and a stale listener's port reclaimed; sync ids
 * and rdma_create_ep in the peer; a peer whose QP goes silent (RETRY_EXC_ERR
 * after its retries, no CM event). The client side runs in THREAD and STEP
 * mode; the peer always in THREAD mode.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <signal.h>
#include <sys/mman.h>

#include <rdma/rdma_verbs.h>

#include "harness.h"
#include "lockwatch.h"
#include "peer.h"

#define BUF_SIZE	65536
#define PATTERN_OFF	32768
#define PATTERN_LEN	8192
#define BULK_SIZE	(4u << 20)	/* far more than a socket buffer holds */
#define STEADY_ROUNDS	100

static const char *self;

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* ==== the peer process ======================================================= */

struct side {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static struct rdma_cm_event *p_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	PEER_CHECK(rdma_get_cm_event(ch, &ev) == 0);
	if (ev->event != want) {
		peer_say("FAIL event %s (%d), expected %s", rdma_event_str(ev->event), ev->status,
			 rdma_event_str(want));
		exit(1);
	}
	return ev;
}

static void p_listen(struct side *s)
{
	struct sockaddr_in sin = h_loopback(0);

	memset(s, 0, sizeof(*s));
	s->ch = rdma_create_event_channel();
	PEER_CHECK(s->ch);
	PEER_CHECK(rdma_create_id(s->ch, &s->listen, NULL, RDMA_PS_TCP) == 0);
	PEER_CHECK(rdma_bind_addr(s->listen, (struct sockaddr *)&sin) == 0);
	PEER_CHECK(rdma_listen(s->listen, 4) == 0);
	peer_say("port %u", ntohs(rdma_get_src_port(s->listen)));
}

/* Take the next CONNECT_REQUEST, give its id a QP and a buffer, and accept. */
static void p_accept(struct side *s, uint8_t rnr_retry, const char *pdata)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param param = { .responder_resources = 4, .initiator_depth = 4,
					 .rnr_retry_count = rnr_retry };
	struct rdma_cm_event *ev = p_event(s->ch, RDMA_CM_EVENT_CONNECT_REQUEST);

	s->id = ev->id;
	PEER_CHECK(rdma_ack_cm_event(ev) == 0);
	PEER_CHECK(rdma_create_qp(s->id, NULL, &qa) == 0);
	s->buf = calloc(1, BUF_SIZE);
	PEER_CHECK(s->buf);
	fill(s->buf + PATTERN_OFF, PATTERN_LEN, 0x5a);
	s->mr = ibv_reg_mr(s->id->pd, s->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	PEER_CHECK(s->mr);
	param.private_data = pdata;
	param.private_data_len = pdata ? (uint8_t)(strlen(pdata) + 1) : 0;
	PEER_CHECK(rdma_accept(s->id, &param) == 0);
}

static void p_post_recv(struct side *s, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)(s->buf + off), len, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	PEER_CHECK(ibv_post_recv(s->id->qp, &wr, &bad) == 0);
}

static void p_poll(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t deadline = h_now_ms() + 10000;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0) {
		struct timespec ts = { 0, 100000 };

		PEER_CHECK(h_now_ms() < deadline);
		nanosleep(&ts, NULL);
	}
	PEER_CHECK(n == 1);
}

/* The test disconnects or goes: wait for DISCONNECTED, then clean up. */
static void p_close(struct side *s)
{
	PEER_CHECK(rdma_ack_cm_event(p_event(s->ch, RDMA_CM_EVENT_DISCONNECTED)) == 0);
	rdma_destroy_qp(s->id);
	PEER_CHECK(ibv_dereg_mr(s->mr) == 0);
	free(s->buf);
	PEER_CHECK(rdma_destroy_id(s->id) == 0);
}

static void p_done(struct side *s)
{
	PEER_CHECK(rdma_destroy_id(s->listen) == 0);
	rdma_destroy_event_channel(s->ch);
	peer_say("done");
}

/* A server that checks the CM parameters, then takes three messages. */
static int role_data(void)
{
	struct rdma_cm_event *ev;
	struct ibv_wc wc;
	struct side s;
	int i;

	p_listen(&s);
	ev = p_event(s.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	/* IB CM private data is 56 bytes in a REQ; the passive side sees the REQ's depths swapped. */
	PEER_CHECK(ev->param.conn.private_data_len == 56);
	PEER_CHECK(strcmp(ev->param.conn.private_data, "hello from the client") == 0);
	PEER_CHECK(ev->param.conn.responder_resources == 3);
	PEER_CHECK(ev->param.conn.initiator_depth == 2);
	s.id = ev->id;
	PEER_CHECK(rdma_ack_cm_event(ev) == 0);
	/* The first request is rejected; the client tries again. */
	PEER_CHECK(rdma_reject(s.id, NULL, 0) == 0);
	PEER_CHECK(rdma_destroy_id(s.id) == 0);
	peer_say("rejected once");
	p_accept(&s, 7, "welcome");
	for (i = 0; i < 3; i++)
		p_post_recv(&s, (uint64_t)i, (size_t)i * 4096, 4096);
	PEER_CHECK(rdma_ack_cm_event(p_event(s.ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
	peer_say("mr %llx %x", (unsigned long long)(uintptr_t)s.buf, s.mr->rkey);
	/* SEND of 3000 bytes (three packets at the 1024-byte path MTU). */
	p_poll(s.id->recv_cq, &wc);
	PEER_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id == 0);
	PEER_CHECK(wc.byte_len == 3000 && s.buf[0] == 'A' && s.buf[2999] == 'A');
	/* SEND with immediate. */
	p_poll(s.id->recv_cq, &wc);
	PEER_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id == 1);
	PEER_CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == htonl(0x1234));
	/* RDMA Write with immediate: the data lands at the rkey, the receive tells. */
	p_poll(s.id->recv_cq, &wc);
	PEER_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
	PEER_CHECK(wc.wr_id == 2 && wc.imm_data == htonl(0xbeef) && wc.byte_len == 100);
	PEER_CHECK(s.buf[20000] == 'W' && s.buf[20099] == 'W');
	peer_say("received 3");
	p_close(&s);
	p_done(&s);
	return 0;
}

static void p_expect_async(struct ibv_context *ctx, enum ibv_event_type type)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	PEER_CHECK(poll(&pfd, 1, 10000) == 1);
	PEER_CHECK(ibv_get_async_event(ctx, &ev) == 0);
	PEER_CHECK(ev.event_type == type);
	ibv_ack_async_event(&ev);
}

/* Three connections, one error each: remote access, RNR, length. */
static int role_errors(void)
{
	struct ibv_wc wc;
	struct side s;

	p_listen(&s);
	/* 1. A Write with a bad rkey: our QP fails with an access error and flushes. */
	p_accept(&s, 0, NULL);
	p_post_recv(&s, 1, 0, 64);
	PEER_CHECK(rdma_ack_cm_event(p_event(s.ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
	peer_say("ready");
	p_expect_async(s.id->verbs, IBV_EVENT_QP_ACCESS_ERR);
	p_poll(s.id->recv_cq, &wc);
	PEER_CHECK(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 1);
	peer_say("access error");
	p_close(&s);
	/* 2. No receive posted, rnr_retry 0: the client gets RNR_RETRY_EXC_ERR. */
	p_accept(&s, 0, NULL);
	PEER_CHECK(rdma_ack_cm_event(p_event(s.ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
	peer_say("ready");
	p_close(&s);
	/* 3. A SEND longer than the receive: LOC_LEN_ERR here. */
	p_accept(&s, 0, NULL);
	p_post_recv(&s, 3, 0, 16);
	PEER_CHECK(rdma_ack_cm_event(p_event(s.ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
	peer_say("ready");
	p_poll(s.id->recv_cq, &wc);
	PEER_CHECK(wc.status == IBV_WC_LOC_LEN_ERR && wc.wr_id == 3);
	peer_say("length error");
	p_close(&s);
	p_done(&s);
	return 0;
}

/* Accept and then wait to be killed (the test SIGKILLs us). */
static int role_die_connected(void)
{
	struct side s;

	p_listen(&s);
	p_accept(&s, 7, NULL);
	PEER_CHECK(rdma_ack_cm_event(p_event(s.ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
	peer_say("ready");
	peer_hear();
	return 1;
}

/* Take the request and die before answering it. */
static int role_die_before_accept(void)
{
	struct side s;

	p_listen(&s);
	PEER_CHECK(p_event(s.ch, RDMA_CM_EVENT_CONNECT_REQUEST));
	peer_say("request");
	peer_hear();
	return 1;
}

/*
 * Reject the request and end the process at once, before the net thread
 * has had a turn, with no exit handlers to write what is queued: as a
 * crash would (SIGKILL, which valgrind cannot hold up either), and as
 * _exit() does in Python's multiprocessing children.
 */
static int role_reject_exit(void)
{
	struct side s;
	struct rdma_cm_event *ev;

	p_listen(&s);
	ev = p_event(s.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	PEER_CHECK(rdma_reject(ev->id, "go away", 8) == 0);
	raise(SIGKILL);
	return 1;
}

/* Listen and hold the port until told to quit (or killed). */
static int role_hold_port(void)
{
	struct side s;

	p_listen(&s);
	PEER_CHECK(strcmp(peer_hear(), "quit") == 0);
	p_done(&s);
	return 0;
}

/* Listen on the IPv4 ("4") or IPv6 ("6") wildcard until told to quit. */
static int role_hold_any(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	bool v4 = strcmp(peer_hear(), "4") == 0;
	struct side s = { .ch = rdma_create_event_channel() };

	PEER_CHECK(s.ch);
	PEER_CHECK(rdma_create_id(s.ch, &s.listen, NULL, RDMA_PS_TCP) == 0);
	PEER_CHECK(rdma_bind_addr(s.listen, v4 ? (struct sockaddr *)&sin :
					      (struct sockaddr *)&sin6) == 0);
	PEER_CHECK(rdma_listen(s.listen, 4) == 0);
	peer_say("port %u", ntohs(rdma_get_src_port(s.listen)));
	PEER_CHECK(strcmp(peer_hear(), "quit") == 0);
	p_done(&s);
	return 0;
}

/* A synchronous client: rdma_create_ep, and every call waits for its event. */
static int role_sync_client(void)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};
	char port[16], send_buf[16] = "ping", recv_buf[16] = "";
	struct ibv_mr *send_mr, *recv_mr;
	struct rdma_cm_id *id;
	struct ibv_wc wc;

	snprintf(port, sizeof(port), "%s", peer_hear());
	PEER_CHECK(rdma_getaddrinfo("127.0.0.1", port, &hints, &res) == 0);
	PEER_CHECK(rdma_create_ep(&id, res, NULL, &attr) == 0);
	rdma_freeaddrinfo(res);
	PEER_CHECK(id->qp && id->event && id->event->event == RDMA_CM_EVENT_ROUTE_RESOLVED);
	send_mr = rdma_reg_msgs(id, send_buf, sizeof(send_buf));
	recv_mr = rdma_reg_msgs(id, recv_buf, sizeof(recv_buf));
	PEER_CHECK(send_mr && recv_mr);
	PEER_CHECK(rdma_post_recv(id, NULL, recv_buf, sizeof(recv_buf), recv_mr) == 0);
	PEER_CHECK(rdma_connect(id, NULL) == 0);
	PEER_CHECK(id->event->event == RDMA_CM_EVENT_ESTABLISHED);
	PEER_CHECK(rdma_post_send(id, NULL, send_buf, sizeof(send_buf), send_mr, 0) == 0);
	PEER_CHECK(rdma_get_send_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	PEER_CHECK(rdma_get_recv_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	PEER_CHECK(strcmp(recv_buf, "pong") == 0);
	PEER_CHECK(rdma_disconnect(id) == 0);
	PEER_CHECK(id->event->event == RDMA_CM_EVENT_DISCONNECTED);
	PEER_CHECK(rdma_dereg_mr(send_mr) == 0 && rdma_dereg_mr(recv_mr) == 0);
	rdma_destroy_ep(id);
	peer_say("done");
	return 0;
}

/* Three receives, then five more when told: eight Sends land in order across RNR NAKs. */
static int role_window(void)
{
	struct ibv_wc wc;
	struct side s;
	int i;

	p_listen(&s);
	p_accept(&s, 7, NULL);	/* the client retries RNR NAKs for good */
	for (i = 0; i < 3; i++)
		p_post_recv(&s, (uint64_t)i, (size_t)i * 64, 64);
	PEER_CHECK(rdma_ack_cm_event(p_event(s.ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
	peer_say("ready");
	PEER_CHECK(strcmp(peer_hear(), "more") == 0);
	for (i = 3; i < 8; i++)
		p_post_recv(&s, (uint64_t)i, (size_t)i * 64, 64);
	for (i = 0; i < 8; i++) {
		p_poll(s.id->recv_cq, &wc);
		PEER_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i);
		PEER_CHECK(wc.byte_len == 64 && s.buf[i * 64] == 'a' + i);
	}
	peer_say("received 8 in order");
	p_close(&s);
	p_done(&s);
	return 0;
}

/* A 4 MiB region the test writes into (with immediate) while we are stopped; then check it. */
static int role_bulk(void)
{
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct side s;
	uint8_t *bulk, *want;

	p_listen(&s);
	p_accept(&s, 7, NULL);
	p_post_recv(&s, 1, 0, 64);
	PEER_CHECK(rdma_ack_cm_event(p_event(s.ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
	bulk = calloc(1, BULK_SIZE);
	want = malloc(BULK_SIZE);
	PEER_CHECK(bulk && want);
	mr = ibv_reg_mr(s.id->pd, bulk, BULK_SIZE, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	PEER_CHECK(mr);
	peer_say("bulk %llx %x", (unsigned long long)(uintptr_t)bulk, mr->rkey);
	PEER_CHECK(strcmp(peer_hear(), "check") == 0);
	p_poll(s.id->recv_cq, &wc);
	PEER_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
	PEER_CHECK(wc.byte_len == BULK_SIZE);
	fill(want, BULK_SIZE, 0x21);
	PEER_CHECK(memcmp(bulk, want, BULK_SIZE) == 0);
	peer_say("checked");
	p_close(&s);
	PEER_CHECK(ibv_dereg_mr(mr) == 0);
	free(bulk);
	free(want);
	p_done(&s);
	return 0;
}

/* Take STEADY_ROUNDS Sends; count what softrdma did under its lock after the first. */
static int role_steady(void)
{
	struct ibv_wc wc;
	struct side s;
	int i;

	p_listen(&s);
	p_accept(&s, 7, NULL);
	p_post_recv(&s, 0, 0, 64);
	PEER_CHECK(rdma_ack_cm_event(p_event(s.ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
	peer_say("mr %llx %x", (unsigned long long)(uintptr_t)s.buf, s.mr->rkey);
	for (i = 0; i <= STEADY_ROUNDS; i++) {
		p_poll(s.id->recv_cq, &wc);
		PEER_CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 64);
		if (i == 0)
			lockwatch_reset();
		p_post_recv(&s, (uint64_t)i + 1, 0, 64);
	}
	peer_say("counts %lu %lu", lockwatch_count(LW_MALLOC), lockwatch_count(LW_WRITE));
	p_close(&s);
	p_done(&s);
	return 0;
}

/*
 * A server whose QP goes silent once connected: asked, it tells how many
 * tries it left unanswered, having run none (its receive is still posted,
 * its QP in RTS) and heard no CM event; then the test disconnects.
 */
static int role_silent(void)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct pollfd pfd;
	struct ibv_wc wc;
	struct side s;

	p_listen(&s);
	p_accept(&s, 7, NULL);
	p_post_recv(&s, 1, 0, 64);
	PEER_CHECK(rdma_ack_cm_event(p_event(s.ch, RDMA_CM_EVENT_ESTABLISHED)) == 0);
	PEER_CHECK(softrdma_qp_silence(s.id->qp, 1) == 0);
	peer_say("silent");
	PEER_CHECK(strcmp(peer_hear(), "report") == 0);
	PEER_CHECK(ibv_poll_cq(s.id->recv_cq, 1, &wc) == 0);
	PEER_CHECK(ibv_query_qp(s.id->qp, &attr, IBV_QP_STATE, &init) == 0);
	PEER_CHECK(attr.qp_state == IBV_QPS_RTS);
	pfd = (struct pollfd){ .fd = s.ch->fd, .events = POLLIN };
	PEER_CHECK(poll(&pfd, 1, 0) == 0);
	peer_say("ignored %lu", softrdma_qp_ignored(s.id->qp));
	p_close(&s);
	p_done(&s);
	return 0;
}

static int run_role(const char *role)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} roles[] = {
		{ "data", role_data },
		{ "errors", role_errors },
		{ "die-connected", role_die_connected },
		{ "die-before-accept", role_die_before_accept },
		{ "hold-port", role_hold_port },
		{ "hold-any", role_hold_any },
		{ "reject-exit", role_reject_exit },
		{ "sync-client", role_sync_client },
		{ "window", role_window },
		{ "bulk", role_bulk },
		{ "steady", role_steady },
		{ "silent", role_silent },
	};
	size_t i;

	for (i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (strcmp(role, roles[i].name) == 0)
			return roles[i].fn();
	peer_say("FAIL no role %s", role);
	return 2;
}

/* ==== the test ================================================================ */

struct client {
	struct peer peer;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint16_t port;
};

static void start(struct client *c, const char *role)
{
	memset(c, 0, sizeof(*c));
	peer_start(&c->peer, self, role);
	c->ch = rdma_create_event_channel();
	assert_non_null(c->ch);
}

static uint16_t peer_port(struct client *c)
{
	c->port = (uint16_t)atoi(peer_expect(&c->peer, "port "));
	assert_true(c->port != 0);
	return c->port;
}

/* Resolve, make a QP and a buffer, connect: the event that ends the attempt. */
static struct rdma_cm_event *connect_to(struct client *c, struct rdma_conn_param *param)
{
	struct sockaddr_in sin = h_loopback(c->port);
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
			 .max_recv_sge = 2 },
		.qp_type = IBV_QPT_RC,
	};

	assert_int_equal(rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&sin, 1000), 0);
	h_cm_expect(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(c->id, 1000), 0);
	h_cm_expect(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_create_qp(c->id, NULL, &qa), 0);
	if (!c->buf) {
		c->buf = calloc(1, BUF_SIZE);
		assert_non_null(c->buf);
	}
	c->mr = h_reg(c->id->pd, c->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
		      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(rdma_connect(c->id, param), 0);
	return h_cm_get(c->ch);
}

static void connect_ok(struct client *c, struct rdma_conn_param *param)
{
	struct rdma_cm_event *ev = connect_to(c, param);

	assert_string_equal(rdma_event_str(ev->event),
			    rdma_event_str(RDMA_CM_EVENT_ESTABLISHED));
	assert_int_equal(rdma_ack_cm_event(ev), 0);
}

static void drop_connection(struct client *c)
{
	h_settle();
	rdma_destroy_qp(c->id);
	assert_int_equal(ibv_dereg_mr(c->mr), 0);
	assert_int_equal(rdma_destroy_id(c->id), 0);
	c->id = NULL;
}

static void finish(struct client *c, int want_status)
{
	if (c->id)
		drop_connection(c);
	rdma_destroy_event_channel(c->ch);
	free(c->buf);
	if (c->peer.pid)
		assert_int_equal(peer_wait(&c->peer, H_TIMEOUT_MS), want_status);
}

static int post(struct client *c, uint64_t wr_id, enum ibv_wr_opcode op, size_t off,
		uint32_t len, uint32_t imm, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)(c->buf + off), len, c->mr->lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(c->id->qp, &wr, &bad);
}

static void expect_wc(struct client *c, uint64_t wr_id, enum ibv_wc_status status)
{
	struct ibv_wc wc;

	assert_int_equal(h_poll(c->id->send_cq, &wc, 1), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_string_equal(ibv_wc_status_str(wc.status), ibv_wc_status_str(status));
}

static void test_cm_and_data(void **state)
{
	struct rdma_conn_param param = { .private_data = "hello from the client",
					 .private_data_len = 22, .responder_resources = 2,
					 .initiator_depth = 3, .retry_count = 3 };
	unsigned long long raddr;
	struct rdma_cm_event *ev;
	struct client c;
	uint32_t rkey;

	(void)state;
	start(&c, "data");
	peer_port(&c);
	/* The first attempt is rejected: REJECTED, and the id may connect again. */
	ev = connect_to(&c, &param);
	peer_expect(&c.peer, "rejected once");
	assert_int_equal(ev->event, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, SOFTRDMA_REJ_CONSUMER_DEFINED);
	assert_int_equal(ev->param.conn.private_data_len, 148);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_connect(c.id, &param), 0);
	ev = h_cm_get(c.ch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(ev->param.conn.private_data_len, 196);
	assert_string_equal(ev->param.conn.private_data, "welcome");
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(sscanf(peer_expect(&c.peer, "mr "), "%llx %x", &raddr, &rkey), 2);
	/* Shared memory unless told otherwise (softrdma-net-socket runs the socket's path). */
	assert_string_equal(softrdma_qp_transport(c.id->qp),
			    getenv("SOFTRDMA_SHM") && !strcmp(getenv("SOFTRDMA_SHM"), "0") ?
			    "socket" : "shm");

	memset(c.buf, 'A', 3000);
	assert_int_equal(post(&c, 1, IBV_WR_SEND, 0, 3000, 0, 0, 0), 0);
	expect_wc(&c, 1, IBV_WC_SUCCESS);
	assert_int_equal(post(&c, 2, IBV_WR_SEND_WITH_IMM, 0, 10, 0x1234, 0, 0), 0);
	expect_wc(&c, 2, IBV_WC_SUCCESS);
	/* RDMA Write of 8000 bytes into the peer's memory, then read back. */
	fill(c.buf + 4096, 8000, 0x11);
	assert_int_equal(post(&c, 3, IBV_WR_RDMA_WRITE, 4096, 8000, 0, raddr + 12288, rkey), 0);
	assert_int_equal(post(&c, 4, IBV_WR_RDMA_READ, 16384, 8000, 0, raddr + 12288, rkey), 0);
	expect_wc(&c, 3, IBV_WC_SUCCESS);
	expect_wc(&c, 4, IBV_WC_SUCCESS);
	assert_memory_equal(c.buf + 16384, c.buf + 4096, 8000);
	/* The peer's own pattern, read across processes. */
	assert_int_equal(post(&c, 5, IBV_WR_RDMA_READ, 24576, PATTERN_LEN, 0,
			      raddr + PATTERN_OFF, rkey), 0);
	expect_wc(&c, 5, IBV_WC_SUCCESS);
	fill(c.buf + 40960, PATTERN_LEN, 0x5a);
	assert_memory_equal(c.buf + 24576, c.buf + 40960, PATTERN_LEN);
	memset(c.buf + 4096, 'W', 100);
	assert_int_equal(post(&c, 6, IBV_WR_RDMA_WRITE_WITH_IMM, 4096, 100, 0xbeef,
			      raddr + 20000, rkey), 0);
	expect_wc(&c, 6, IBV_WC_SUCCESS);
	peer_expect(&c.peer, "received 3");
	assert_int_equal(rdma_disconnect(c.id), 0);
	h_cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED);
	peer_expect(&c.peer, "done");
	finish(&c, 0);
}

/* Step (or wait) until @qp has sent @n requests again. */
static void wait_resends(struct client *c, unsigned long n)
{
	uint64_t deadline = h_now_ms() + (uint64_t)peer_timeout_ms(H_TIMEOUT_MS);

	while (softrdma_qp_resends(c->id->qp) < n) {
		assert_true(h_now_ms() < deadline);
		if (softrdma_get_mode() == SOFTRDMA_MODE_STEP)
			softrdma_progress(1);
		poll(NULL, 0, 1);
	}
}

/*
 * Across processes a QP has several requests in flight, as rxe's requester
 * and completer allow: eight Sends go before any answer is heard. The
 * peer has receives for three; the fourth gets an RNR NAK, the peer drops
 * what follows, and the requester goes back to the fourth (go back N):
 * all eight land in order and complete in order.
 */
static void test_window_go_back_n(void **state)
{
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
					 .retry_count = 3, .rnr_retry_count = 7 };
	struct client c;
	int i;

	(void)state;
	start(&c, "window");
	peer_port(&c);
	connect_ok(&c, &param);
	peer_expect(&c.peer, "ready");
	softrdma_progress_all();
	for (i = 0; i < 8; i++) {
		memset(c.buf + i * 64, 'a' + i, 64);
		assert_int_equal(post(&c, (uint64_t)i + 1, IBV_WR_SEND, (size_t)i * 64, 64, 0, 0, 0),
				 0);
	}
	if (softrdma_get_mode() == SOFTRDMA_MODE_STEP) {
		/* One unit each, under one hold of the lock: no answer is heard in between. */
		assert_int_equal(softrdma_progress(8), 8);
		assert_int_equal(softrdma_qp_max_inflight(c.id->qp), 8);
	}
	/* The fourth gets an RNR NAK: it and the four behind it go again. */
	wait_resends(&c, 5);
	peer_send(&c.peer, "more");
	for (i = 0; i < 8; i++)
		expect_wc(&c, (uint64_t)i + 1, IBV_WC_SUCCESS);
	peer_expect(&c.peer, "received 8 in order");
	assert_int_equal(rdma_disconnect(c.id), 0);
	h_cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED);
	peer_expect(&c.peer, "done");
	finish(&c, 0);
}

static int post_sge(struct client *c, uint64_t wr_id, enum ibv_wr_opcode op, struct ibv_sge *sge,
		    uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(c->id->qp, &wr, &bad);
}

/*
 * A Write's payload is read from the requester's memory as it goes out, so
 * a deregistration while most of it still waits for a stopped peer must
 * not wait for the peer, nor leave the net thread reading memory the
 * application has unmapped: the bytes are copied out first, and the peer
 * gets them as they were.
 */
static void test_dereg_while_sending(void **state)
{
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
					 .retry_count = 7, .rnr_retry_count = 7 };
	unsigned long long raddr;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct client c;
	uint8_t *big;
	uint32_t rkey;

	(void)state;
	start(&c, "bulk");
	peer_port(&c);
	connect_ok(&c, &param);
	assert_int_equal(sscanf(peer_expect(&c.peer, "bulk "), "%llx %x", &raddr, &rkey), 2);
	big = mmap(NULL, BULK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(big != MAP_FAILED);
	fill(big, BULK_SIZE, 0x21);
	mr = h_reg(c.id->pd, big, BULK_SIZE, IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(kill(c.peer.pid, SIGSTOP), 0);
	sge = (struct ibv_sge){ (uintptr_t)big, BULK_SIZE, mr->lkey };
	assert_int_equal(post_sge(&c, 7, IBV_WR_RDMA_WRITE_WITH_IMM, &sge, raddr, rkey), 0);
	if (softrdma_get_mode() == SOFTRDMA_MODE_STEP)
		assert_int_equal(softrdma_progress(1), 1);
	poll(NULL, 0, 50);	/* the net thread fills the socket and waits */
	assert_int_equal(ibv_dereg_mr(mr), 0);
	memset(big, 0, BULK_SIZE);
	assert_int_equal(munmap(big, BULK_SIZE), 0);
	assert_int_equal(kill(c.peer.pid, SIGCONT), 0);
	expect_wc(&c, 7, IBV_WC_SUCCESS);
	peer_send(&c.peer, "check");
	peer_expect(&c.peer, "checked");
	assert_int_equal(rdma_disconnect(c.id), 0);
	h_cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED);
	peer_expect(&c.peer, "done");
	finish(&c, 0);
}

/*
 * Between processes too, the steady state allocates nothing and writes
 * nothing under the lock, on either side: message buffers come from a pool
 * the net thread fills, and the wake-ups are written after the unlock.
 */
static void test_steady_state_between_processes(void **state)
{
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
					 .retry_count = 7, .rnr_retry_count = 7 };
	unsigned long mallocs, writes;
	unsigned long long raddr;
	struct client c;
	uint32_t rkey;
	int i;

	(void)state;
	start(&c, "steady");
	peer_port(&c);
	connect_ok(&c, &param);
	assert_int_equal(sscanf(peer_expect(&c.peer, "mr "), "%llx %x", &raddr, &rkey), 2);
	for (i = 0; i <= STEADY_ROUNDS; i++) {
		memset(c.buf, 'a' + i % 26, 64);
		assert_int_equal(post(&c, 1, IBV_WR_RDMA_WRITE, 0, 64, 0, raddr + 4096, rkey), 0);
		assert_int_equal(post(&c, 2, IBV_WR_RDMA_READ, 8192, 64, 0, raddr + 4096, rkey), 0);
		assert_int_equal(post(&c, 3, IBV_WR_SEND, 0, 64, 0, 0, 0), 0);
		expect_wc(&c, 1, IBV_WC_SUCCESS);
		expect_wc(&c, 2, IBV_WC_SUCCESS);
		expect_wc(&c, 3, IBV_WC_SUCCESS);
		assert_memory_equal(c.buf + 8192, c.buf, 64);
		if (i == 0)
			lockwatch_reset();
	}
	assert_int_equal(lockwatch_count(LW_MALLOC), 0);
	assert_int_equal(lockwatch_count(LW_WRITE), 0);
	assert_int_equal(sscanf(peer_expect(&c.peer, "counts "), "%lu %lu", &mallocs, &writes), 2);
	assert_int_equal(mallocs, 0);
	assert_int_equal(writes, 0);
	assert_int_equal(rdma_disconnect(c.id), 0);
	h_cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED);
	peer_expect(&c.peer, "done");
	finish(&c, 0);
}

static void test_remote_errors(void **state)
{
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
					 .retry_count = 1 };
	struct client c;

	(void)state;
	start(&c, "errors");
	peer_port(&c);
	connect_ok(&c, &param);
	peer_expect(&c.peer, "ready");
	assert_int_equal(post(&c, 1, IBV_WR_RDMA_WRITE, 0, 64, 0, 0x1000, 0xdead00), 0);
	expect_wc(&c, 1, IBV_WC_REM_ACCESS_ERR);
	peer_expect(&c.peer, "access error");
	drop_connection(&c);

	connect_ok(&c, &param);
	peer_expect(&c.peer, "ready");
	assert_int_equal(post(&c, 2, IBV_WR_SEND, 0, 8, 0, 0, 0), 0);
	expect_wc(&c, 2, IBV_WC_RNR_RETRY_EXC_ERR);
	drop_connection(&c);

	connect_ok(&c, &param);
	peer_expect(&c.peer, "ready");
	assert_int_equal(post(&c, 3, IBV_WR_SEND, 0, 100, 0, 0, 0), 0);
	expect_wc(&c, 3, IBV_WC_REM_INV_REQ_ERR);
	peer_expect(&c.peer, "length error");
	drop_connection(&c);
	peer_expect(&c.peer, "done");
	finish(&c, 0);
}

/*
 * SIGKILL the peer with a SEND in flight (it waits for a receive, rnr_retry 7),
 * another behind it and two receives posted: RETRY_EXC_ERR for the one in
 * flight, FLUSH_ERR for the rest, and DISCONNECTED, all within two seconds.
 */
static void test_peer_killed(void **state)
{
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
					 .retry_count = 7, .rnr_retry_count = 7 };
	struct softrdma_counts counts;
	struct ibv_wc wc[2];
	struct client c;
	uint64_t killed;

	(void)state;
	start(&c, "die-connected");
	peer_port(&c);
	connect_ok(&c, &param);
	peer_expect(&c.peer, "ready");
	assert_int_equal(h_post_recv(c.id->qp, 10, c.buf, 64, c.mr->lkey), 0);
	assert_int_equal(h_post_recv(c.id->qp, 11, c.buf + 64, 64, c.mr->lkey), 0);
	assert_int_equal(post(&c, 1, IBV_WR_SEND, 0, 8, 0, 0, 0), 0);
	assert_int_equal(post(&c, 2, IBV_WR_SEND, 0, 8, 0, 0, 0), 0);
	if (softrdma_get_mode() == SOFTRDMA_MODE_STEP)
		softrdma_progress(1);
	softrdma_get_counts(&counts);
	assert_int_equal(counts.send_wrs, 2);
	peer_kill(&c.peer);
	killed = h_now_ms();
	expect_wc(&c, 1, IBV_WC_RETRY_EXC_ERR);
	expect_wc(&c, 2, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(h_poll(c.id->recv_cq, wc, 2), 2);
	assert_int_equal(wc[0].wr_id, 10);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[1].wr_id, 11);
	assert_int_equal(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	h_cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_true(h_now_ms() - killed < (uint64_t)peer_timeout_ms(2000));
	h_cm_expect(c.ch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	drop_connection(&c);
	finish(&c, 0);
}

/*
 * The peer's QP goes silent, its process alive and its socket open: the
 * client's Send is tried retry_count + 1 times, each after rdma_cm's ACK
 * timeout (14: 67 ms), and fails with RETRY_EXC_ERR, the Send behind it
 * flushes, and no CM event comes to either side until the client
 * disconnects.
 */
static void test_silent_peer(void **state)
{
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
					 .retry_count = 3, .rnr_retry_count = 7 };
	struct pollfd pfd;
	unsigned long ignored;
	struct client c;
	uint64_t t0, took;

	(void)state;
	start(&c, "silent");
	peer_port(&c);
	connect_ok(&c, &param);
	peer_expect(&c.peer, "silent");
	t0 = h_now_ms();
	assert_int_equal(post(&c, 1, IBV_WR_SEND, 0, 8, 0, 0, 0), 0);
	assert_int_equal(post(&c, 2, IBV_WR_SEND, 0, 8, 0, 0, 0), 0);
	expect_wc(&c, 1, IBV_WC_RETRY_EXC_ERR);
	took = h_now_ms() - t0;
	expect_wc(&c, 2, IBV_WC_WR_FLUSH_ERR);
	if (softrdma_get_mode() != SOFTRDMA_MODE_STEP)
		assert_true(took >= 4 * 67);
	assert_true(took < (uint64_t)peer_timeout_ms(3000));
	pfd = (struct pollfd){ .fd = c.ch->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 0), 0);
	peer_send(&c.peer, "report");
	assert_int_equal(sscanf(peer_expect(&c.peer, "ignored "), "%lu", &ignored), 1);
	/* Each try of the first Send at least (the second may have gone out with them). */
	assert_true(ignored >= 4);
	assert_int_equal(rdma_disconnect(c.id), 0);
	h_cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED);
	peer_expect(&c.peer, "done");
	finish(&c, 0);
}

/* Kill the peer as soon as it reports the request; h_cm_get() waits meanwhile. */
static void *kill_on_request(void *arg)
{
	struct peer *p = arg;

	if (peer_read(p, H_TIMEOUT_MS))
		peer_kill(p);
	return NULL;
}

/* The peer dies holding our REQ: the connect attempt ends UNREACHABLE. */
static void test_peer_killed_before_accept(void **state)
{
	struct client c;
	pthread_t t;

	(void)state;
	start(&c, "die-before-accept");
	peer_port(&c);
	assert_int_equal(pthread_create(&t, NULL, kill_on_request, &c.peer), 0);
	{
		struct rdma_cm_event *ev = connect_to(&c, NULL);

		assert_int_equal(ev->event, RDMA_CM_EVENT_UNREACHABLE);
		assert_int_equal(ev->status, -ETIMEDOUT);
		assert_int_equal(rdma_ack_cm_event(ev), 0);
	}
	pthread_join(t, NULL);
	drop_connection(&c);
	rdma_destroy_event_channel(c.ch);
	free(c.buf);
}

/*
 * A REJ that rdma_reject() returned from has left the process, as the
 * kernel CM has its MAD when the call returns: a peer that exits right
 * after still rejects us (REJECTED, with its private data), it does not
 * vanish (UNREACHABLE). A few rounds, since without that rule the loss is
 * a race with the peer's net thread.
 */
static void test_reject_then_exit(void **state)
{
	struct client c;
	int round;

	(void)state;
	for (round = 0; round < 5; round++) {
		struct rdma_cm_event *ev;

		start(&c, "reject-exit");
		peer_port(&c);
		ev = connect_to(&c, NULL);
		assert_string_equal(rdma_event_str(ev->event),
				    rdma_event_str(RDMA_CM_EVENT_REJECTED));
		assert_int_equal(ev->status, SOFTRDMA_REJ_CONSUMER_DEFINED);
		assert_string_equal(ev->param.conn.private_data, "go away");
		assert_int_equal(rdma_ack_cm_event(ev), 0);
		finish(&c, 128 + SIGKILL);
	}
}

/* Ports are claimed across processes; a dead process's port is free again. */
static void test_ports_across_processes(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin, any = { .sin_family = AF_INET }, other;
	struct rdma_cm_id *id;
	struct client c;

	(void)state;
	assert_non_null(ch);
	start(&c, "hold-port");
	sin = h_loopback(peer_port(&c));
	any.sin_port = sin.sin_port;
	other = sin;
	other.sin_addr.s_addr = htonl(0x7f000002);	/* 127.0.0.2 */
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&sin), 0);
	errno = 0;
	assert_int_equal(rdma_listen(id, 1), -1);
	assert_int_equal(errno, EADDRINUSE);
	assert_int_equal(rdma_destroy_id(id), 0);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&any), 0);
	assert_int_equal(rdma_listen(id, 1), -1);
	assert_int_equal(errno, EADDRINUSE);
	assert_int_equal(rdma_destroy_id(id), 0);
	/* Another address on the same port does not collide. */
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&other), 0);
	assert_int_equal(rdma_listen(id, 1), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	/* Killed, the peer leaves its socket behind: the port is still free to take. */
	peer_kill(&c.peer);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&sin), 0);
	assert_int_equal(rdma_listen(id, 1), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(c.ch);
}

/* rdma_listen() on @sa: 0 or the errno it fails with. */
static int try_listen(struct rdma_event_channel *ch, const void *sa)
{
	struct rdma_cm_id *id;
	int ret;

	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)sa), 0);
	ret = rdma_listen(id, 1) ? errno : 0;
	assert_int_equal(rdma_destroy_id(id), 0);
	return ret;
}

/*
 * A wildcard listener in another process takes the port on every address it
 * covers: :: (not v6only) both families, 0.0.0.0 IPv4 only. Once it is
 * gone, the addresses are free again.
 */
static void test_wildcard_across_processes(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in6 lo6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in lo4;
	struct client c;

	(void)state;
	assert_non_null(ch);
	for (int v4 = 0; v4 <= 1; v4++) {
		start(&c, "hold-any");
		peer_send(&c.peer, v4 ? "4" : "6");
		lo4 = h_loopback(peer_port(&c));
		lo6.sin6_port = lo4.sin_port;
		assert_int_equal(try_listen(ch, &lo4), EADDRINUSE);
		assert_int_equal(try_listen(ch, &lo6), v4 ? 0 : EADDRINUSE);
		peer_send(&c.peer, "quit");
		peer_expect(&c.peer, "done");
		finish(&c, 0);
		assert_int_equal(try_listen(ch, &lo4), 0);
		assert_int_equal(try_listen(ch, &lo6), 0);
	}
	rdma_destroy_event_channel(ch);
}

/* A port nobody listens on, in any process: REJECTED, invalid service ID. */
static void test_unlistened_port(void **state)
{
	struct rdma_cm_event *ev;
	struct client c;

	(void)state;
	start(&c, "hold-port");
	peer_port(&c);
	c.port = (uint16_t)(c.port == 65535 ? 65534 : c.port + 1);
	ev = connect_to(&c, NULL);
	assert_int_equal(ev->event, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, SOFTRDMA_REJ_INVALID_SERVICE_ID);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	peer_send(&c.peer, "quit");
	peer_expect(&c.peer, "done");
	finish(&c, 0);
}

/* The test serves; the peer is a synchronous client built with rdma_create_ep. */
static void test_sync_client_in_peer(void **state)
{
	struct sockaddr_in sin = h_loopback(0);
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_cm_id *listen, *id;
	struct rdma_cm_event *ev;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct client c;
	char buf[32] = "";

	(void)state;
	start(&c, "sync-client");
	assert_int_equal(rdma_create_id(c.ch, &listen, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(listen, (struct sockaddr *)&sin), 0);
	assert_int_equal(rdma_listen(listen, 1), 0);
	peer_send(&c.peer, "%u", ntohs(rdma_get_src_port(listen)));
	ev = h_cm_get(c.ch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_create_qp(id, NULL, &qa), 0);
	mr = h_reg(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(h_post_recv(id->qp, 1, buf, 16, mr->lkey), 0);
	assert_int_equal(rdma_accept(id, NULL), 0);
	h_cm_expect(c.ch, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(h_poll(id->recv_cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal(buf, "ping");
	strcpy(buf + 16, "pong");
	assert_int_equal(h_post(id->qp, 2, IBV_WR_SEND, buf + 16, 16, mr->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(h_poll(id->send_cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	h_cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED);
	peer_expect(&c.peer, "done");
	h_settle();
	rdma_destroy_qp(id);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	assert_int_equal(rdma_destroy_id(listen), 0);
	finish(&c, 0);
}

static int mode_step(void **state)
{
	(void)state;
	return softrdma_set_mode(SOFTRDMA_MODE_STEP);
}

static int mode_thread(void **state)
{
	(void)state;
	return softrdma_set_mode(SOFTRDMA_MODE_THREAD);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest threaded[] = {
		cmocka_unit_test(test_cm_and_data),
		cmocka_unit_test(test_remote_errors),
		cmocka_unit_test(test_peer_killed),
		cmocka_unit_test(test_peer_killed_before_accept),
		cmocka_unit_test(test_reject_then_exit),
		cmocka_unit_test(test_ports_across_processes),
		cmocka_unit_test(test_wildcard_across_processes),
		cmocka_unit_test(test_unlistened_port),
		cmocka_unit_test(test_sync_client_in_peer),
		cmocka_unit_test(test_window_go_back_n),
		cmocka_unit_test(test_dereg_while_sending),
		cmocka_unit_test(test_steady_state_between_processes),
		cmocka_unit_test(test_silent_peer),
	};
	const struct CMUnitTest stepped[] = {
		cmocka_unit_test(test_cm_and_data),
		cmocka_unit_test(test_remote_errors),
		cmocka_unit_test(test_peer_killed),
		cmocka_unit_test(test_reject_then_exit),
		cmocka_unit_test(test_sync_client_in_peer),
		cmocka_unit_test(test_window_go_back_n),
		cmocka_unit_test(test_dereg_while_sending),
		cmocka_unit_test(test_steady_state_between_processes),
		cmocka_unit_test(test_silent_peer),
	};
	int failed = 0;

	if (argc == 3 && strcmp(argv[1], "--peer") == 0)
		return run_role(argv[2]);
	self = argv[0];
	peer_setup_dir();
	failed += cmocka_run_group_tests_name("thread", threaded, mode_thread, NULL);
	failed += cmocka_run_group_tests_name("step", stepped, mode_step, NULL);
	peer_cleanup_dir();
	return failed;
}

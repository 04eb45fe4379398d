/* SPDX-License-Identifier: MIT */
/*
 * rping-lite: rping's exchange in one process, client and server on two
 * threads over rdma_cm, using only the verbs and rdma_cm API (so it also
 * shows that a program knowing nothing of softrdma gets progress). For each
 * size and iteration: the client advertises a buffer with a SEND; the server
 * RDMA Reads it, RDMA Writes a new pattern back and SENDs "done"; the client
 * checks the bytes. Exits 0 on success, 1 on any mismatch or failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MAX_SIZE (1U << 20)
#define ITERATIONS 5
#define TIMEOUT_MS 10000

static const uint32_t sizes[] = { 1, 64, 4096, 65536, MAX_SIZE };

struct adv {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

struct side {
	const char *name;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_comp_channel *comp;
	struct ibv_mr *buf_mr, *msg_mr;
	uint8_t *buf;
	struct adv msg;
};

static uint16_t server_port;
static pthread_mutex_t port_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t port_cv = PTHREAD_COND_INITIALIZER;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "rping-lite: %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		return -1; \
	} \
} while (0)

static struct rdma_cm_event *get_event(struct side *s, enum rdma_cm_event_type want)
{
	struct pollfd pfd = { .fd = s->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, TIMEOUT_MS) != 1 || rdma_get_cm_event(s->ch, &ev)) {
		fprintf(stderr, "rping-lite: %s: no CM event (%s expected)\n", s->name,
			rdma_event_str(want));
		return NULL;
	}
	if (ev->event != want) {
		fprintf(stderr, "rping-lite: %s: got %s, expected %s\n", s->name,
			rdma_event_str(ev->event), rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

static int expect_event(struct side *s, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = get_event(s, want);

	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	return 0;
}

/* Wait for one completion through the completion channel, as rping does. */
static int wait_wc(struct side *s, struct ibv_wc *wc)
{
	struct pollfd pfd = { .fd = s->comp->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;

	for (;;) {
		int n = ibv_poll_cq(s->cq, 1, wc);

		CHECK(n >= 0, "%s: poll_cq failed", s->name);
		if (n == 1) {
			CHECK(wc->status == IBV_WC_SUCCESS, "%s: wc %s", s->name,
			      ibv_wc_status_str(wc->status));
			return 0;
		}
		CHECK(ibv_req_notify_cq(s->cq, 0) == 0, "arm");
		/* Arm, then poll again: a completion may have slipped in before arming. */
		n = ibv_poll_cq(s->cq, 1, wc);
		CHECK(n >= 0, "%s: poll_cq failed", s->name);
		if (n == 1) {
			CHECK(wc->status == IBV_WC_SUCCESS, "%s: wc %s", s->name,
			      ibv_wc_status_str(wc->status));
			return 0;
		}
		CHECK(poll(&pfd, 1, TIMEOUT_MS) == 1, "%s: no completion event", s->name);
		CHECK(ibv_get_cq_event(s->comp, &cq, &ctx) == 0 && cq == s->cq, "get_cq_event");
		ibv_ack_cq_events(cq, 1);
	}
}

static int setup_qp(struct side *s, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	s->comp = ibv_create_comp_channel(id->verbs);
	CHECK(s->comp, "comp channel");
	s->cq = ibv_create_cq(id->verbs, 16, s, s->comp, 0);
	CHECK(s->cq, "cq");
	attr.send_cq = s->cq;
	attr.recv_cq = s->cq;
	CHECK(rdma_create_qp(id, NULL, &attr) == 0, "%s: rdma_create_qp: %s", s->name,
	      strerror(errno));
	s->buf = calloc(1, MAX_SIZE);
	CHECK(s->buf, "buffer");
	s->buf_mr = ibv_reg_mr(id->pd, s->buf, MAX_SIZE, IBV_ACCESS_LOCAL_WRITE |
			       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	s->msg_mr = ibv_reg_mr(id->pd, &s->msg, sizeof(s->msg), IBV_ACCESS_LOCAL_WRITE);
	CHECK(s->buf_mr && s->msg_mr, "reg_mr");
	return 0;
}

static void teardown(struct side *s, struct rdma_cm_id *id)
{
	if (id && id->qp)
		rdma_destroy_qp(id);
	if (s->buf_mr)
		ibv_dereg_mr(s->buf_mr);
	if (s->msg_mr)
		ibv_dereg_mr(s->msg_mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->comp)
		ibv_destroy_comp_channel(s->comp);
	free(s->buf);
}

static int post_recv_msg(struct side *s, struct rdma_cm_id *id)
{
	struct ibv_sge sge = { (uintptr_t)&s->msg, sizeof(s->msg), s->msg_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(id->qp, &wr, &bad);
}

static int post_one(struct rdma_cm_id *id, enum ibv_wr_opcode op, void *addr, uint32_t len,
		    uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(id->qp, &wr, &bad);
}

static uint8_t pattern(uint32_t size, int iter, uint32_t i, int who)
{
	return (uint8_t)(i * 7 + size + (uint32_t)iter * 13 + (uint32_t)who * 101);
}

static int server_run(struct side *s)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *conn;
	struct ibv_wc wc;
	unsigned int si;
	int iter, ret = -1;

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK((s->ch = rdma_create_event_channel()), "server channel");
	CHECK(rdma_create_id(s->ch, &s->id, NULL, RDMA_PS_TCP) == 0, "server id");
	CHECK(rdma_bind_addr(s->id, (struct sockaddr *)&addr) == 0, "bind");
	CHECK(rdma_listen(s->id, 4) == 0, "listen");
	pthread_mutex_lock(&port_lock);
	server_port = ntohs(rdma_get_src_port(s->id));
	pthread_cond_signal(&port_cv);
	pthread_mutex_unlock(&port_lock);

	ev = get_event(s, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(ev, "connect request");
	conn = ev->id;
	rdma_ack_cm_event(ev);
	if (setup_qp(s, conn) || post_recv_msg(s, conn))
		goto out;
	{
		struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
						 .rnr_retry_count = 7 };

		CHECK(rdma_accept(conn, &param) == 0, "accept");
	}
	if (expect_event(s, RDMA_CM_EVENT_ESTABLISHED))
		goto out;
	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		for (iter = 0; iter < ITERATIONS; iter++) {
			uint32_t size = sizes[si], i;
			struct adv peer;

			if (wait_wc(s, &wc))
				goto out;
			CHECK(wc.opcode == IBV_WC_RECV && wc.byte_len == sizeof(s->msg), "recv");
			peer = s->msg;
			CHECK(peer.len == size, "advertised %u, expected %u", peer.len, size);
			if (post_recv_msg(s, conn))
				goto out;
			memset(s->buf, 0, size);
			CHECK(post_one(conn, IBV_WR_RDMA_READ, s->buf, size, s->buf_mr->lkey,
				       peer.addr, peer.rkey) == 0, "post read");
			if (wait_wc(s, &wc))
				goto out;
			CHECK(wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == size, "read wc");
			for (i = 0; i < size; i++)
				CHECK(s->buf[i] == pattern(size, iter, i, 0),
				      "read byte %u of %u differs", i, size);
			for (i = 0; i < size; i++)
				s->buf[i] = pattern(size, iter, i, 1);
			CHECK(post_one(conn, IBV_WR_RDMA_WRITE, s->buf, size, s->buf_mr->lkey,
				       peer.addr, peer.rkey) == 0, "post write");
			if (wait_wc(s, &wc))
				goto out;
			CHECK(wc.opcode == IBV_WC_RDMA_WRITE, "write wc");
			s->msg.len = size;
			CHECK(post_one(conn, IBV_WR_SEND, &s->msg, sizeof(s->msg), s->msg_mr->lkey,
				       0, 0) == 0, "post send");
			if (wait_wc(s, &wc))
				goto out;
			CHECK(wc.opcode == IBV_WC_SEND, "send wc");
		}
	}
	if (expect_event(s, RDMA_CM_EVENT_DISCONNECTED))
		goto out;
	rdma_disconnect(conn);
	ret = 0;
out:
	teardown(s, conn);
	rdma_destroy_id(conn);
	rdma_destroy_id(s->id);
	rdma_destroy_event_channel(s->ch);
	return ret;
}

static int client_run(struct side *s)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
					 .retry_count = 7, .rnr_retry_count = 7 };
	struct ibv_wc wc;
	unsigned int si;
	int iter, ret = -1;

	pthread_mutex_lock(&port_lock);
	while (!server_port)
		pthread_cond_wait(&port_cv, &port_lock);
	addr.sin_port = htons(server_port);
	pthread_mutex_unlock(&port_lock);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK((s->ch = rdma_create_event_channel()), "client channel");
	CHECK(rdma_create_id(s->ch, &s->id, NULL, RDMA_PS_TCP) == 0, "client id");
	CHECK(rdma_resolve_addr(s->id, NULL, (struct sockaddr *)&addr, 2000) == 0, "resolve");
	if (expect_event(s, RDMA_CM_EVENT_ADDR_RESOLVED))
		goto out;
	CHECK(rdma_resolve_route(s->id, 2000) == 0, "route");
	if (expect_event(s, RDMA_CM_EVENT_ROUTE_RESOLVED) || setup_qp(s, s->id) ||
	    post_recv_msg(s, s->id))
		goto out;
	CHECK(rdma_connect(s->id, &param) == 0, "connect");
	if (expect_event(s, RDMA_CM_EVENT_ESTABLISHED))
		goto out;
	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		for (iter = 0; iter < ITERATIONS; iter++) {
			uint32_t size = sizes[si], i;

			for (i = 0; i < size; i++)
				s->buf[i] = pattern(size, iter, i, 0);
			s->msg.addr = (uintptr_t)s->buf;
			s->msg.rkey = s->buf_mr->rkey;
			s->msg.len = size;
			CHECK(post_one(s->id, IBV_WR_SEND, &s->msg, sizeof(s->msg),
				       s->msg_mr->lkey, 0, 0) == 0, "post send");
			/* Our SEND completes first; then the server's "done" arrives. */
			if (wait_wc(s, &wc))
				goto out;
			CHECK(wc.opcode == IBV_WC_SEND, "send wc, got opcode %d", wc.opcode);
			if (wait_wc(s, &wc))
				goto out;
			CHECK(wc.opcode == IBV_WC_RECV && s->msg.len == size, "done message");
			if (post_recv_msg(s, s->id))
				goto out;
			for (i = 0; i < size; i++)
				CHECK(s->buf[i] == pattern(size, iter, i, 1),
				      "written byte %u of %u differs", i, size);
		}
	}
	CHECK(rdma_disconnect(s->id) == 0, "disconnect");
	if (expect_event(s, RDMA_CM_EVENT_DISCONNECTED))
		goto out;
	ret = 0;
out:
	teardown(s, s->id);
	rdma_destroy_id(s->id);
	rdma_destroy_event_channel(s->ch);
	return ret;
}

static void *server_main(void *arg)
{
	struct side *s = arg;

	return (void *)(intptr_t)server_run(s);
}

static void *client_main(void *arg)
{
	struct side *s = arg;

	return (void *)(intptr_t)client_run(s);
}

int main(void)
{
	struct side server = { .name = "server" }, client = { .name = "client" };
	pthread_t st, ct;
	void *sret, *cret;

	alarm(120);
	if (pthread_create(&st, NULL, server_main, &server) ||
	    pthread_create(&ct, NULL, client_main, &client))
		return 1;
	pthread_join(ct, &cret);
	pthread_join(st, &sret);
	if (sret || cret) {
		fprintf(stderr, "rping-lite: FAILED (server %d, client %d)\n",
			(int)(intptr_t)sret, (int)(intptr_t)cret);
		return 1;
	}
	printf("rping-lite: %zu sizes x %d iterations of send/read/write verified\n",
	       sizeof(sizes) / sizeof(sizes[0]), ITERATIONS);
	return 0;
}

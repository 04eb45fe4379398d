/* SPDX-License-Identifier: MIT */
/* A test and its peer process connected by rdma_cm (cm_pair.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "cm_pair.h"
#include "harness.h"

static const struct ibv_qp_init_attr pair_qp = {
	.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4, .max_recv_sge = 1 },
	.qp_type = IBV_QPT_RC,
};

/* ==== the peer's side ======================================================== */

static void side_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
			struct rdma_cm_event **out)
{
	struct rdma_cm_event *ev;

	PEER_CHECK(rdma_get_cm_event(ch, &ev) == 0);
	if (ev->event != want) {
		peer_say("FAIL event %s, expected %s", rdma_event_str(ev->event),
			 rdma_event_str(want));
		exit(1);
	}
	if (out)
		*out = ev;
	else
		PEER_CHECK(rdma_ack_cm_event(ev) == 0);
}

void cm_side_post_recv(struct cm_side *s)
{
	struct ibv_sge sge = { (uintptr_t)s->cmd, sizeof(s->cmd), s->cmd_mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	PEER_CHECK(ibv_post_recv(s->id->qp, &wr, &bad) == 0);
}

void cm_side_serve(struct cm_side *s, size_t len, int access)
{
	struct sockaddr_in sin = h_loopback(0);
	struct ibv_qp_init_attr qa = pair_qp;
	struct rdma_conn_param param = { .responder_resources = 4, .initiator_depth = 4,
					 .rnr_retry_count = 7 };
	struct rdma_cm_event *ev;
	int i;

	memset(s, 0, sizeof(*s));
	s->ch = rdma_create_event_channel();
	PEER_CHECK(s->ch);
	PEER_CHECK(rdma_create_id(s->ch, &s->listen, NULL, RDMA_PS_TCP) == 0);
	PEER_CHECK(rdma_bind_addr(s->listen, (struct sockaddr *)&sin) == 0);
	PEER_CHECK(rdma_listen(s->listen, 1) == 0);
	peer_say("port %u", ntohs(rdma_get_src_port(s->listen)));
	side_expect(s->ch, RDMA_CM_EVENT_CONNECT_REQUEST, &ev);
	s->id = ev->id;
	PEER_CHECK(rdma_ack_cm_event(ev) == 0);
	PEER_CHECK(rdma_create_qp(s->id, NULL, &qa) == 0);
	s->region = aligned_alloc(4096, len);
	PEER_CHECK(s->region);
	memset(s->region, 0, len);
	s->mr = ibv_reg_mr(s->id->pd, s->region, len, access);
	s->cmd_mr = ibv_reg_mr(s->id->pd, s->cmd, sizeof(s->cmd), IBV_ACCESS_LOCAL_WRITE);
	PEER_CHECK(s->mr && s->cmd_mr);
	for (i = 0; i < 8; i++)
		cm_side_post_recv(s);
	PEER_CHECK(rdma_accept(s->id, &param) == 0);
	side_expect(s->ch, RDMA_CM_EVENT_ESTABLISHED, NULL);
	peer_say("mr %llx %x", (unsigned long long)(uintptr_t)s->region, s->mr->rkey);
}

void cm_side_close(struct cm_side *s)
{
	side_expect(s->ch, RDMA_CM_EVENT_DISCONNECTED, NULL);
	rdma_destroy_qp(s->id);
	PEER_CHECK(!s->mr || ibv_dereg_mr(s->mr) == 0);
	PEER_CHECK(ibv_dereg_mr(s->cmd_mr) == 0);
	free(s->region);
	PEER_CHECK(rdma_destroy_id(s->id) == 0);
	PEER_CHECK(rdma_destroy_id(s->listen) == 0);
	rdma_destroy_event_channel(s->ch);
}

/* ==== the test's side ========================================================= */

void cm_client_connect(struct cm_client *c, const char *self, const char *role, size_t len,
		       int access)
{
	cm_client_connect_timeout(c, self, role, len, access, -1);
}

void cm_client_connect_timeout(struct cm_client *c, const char *self, const char *role,
			       size_t len, int access, int ack_timeout)
{
	struct sockaddr_in sin;
	struct ibv_qp_init_attr qa = pair_qp;
	struct rdma_conn_param param = { .responder_resources = 4, .initiator_depth = 4,
					 .retry_count = 7, .rnr_retry_count = 7 };
	unsigned long long raddr;

	memset(c, 0, sizeof(*c));
	peer_start(&c->peer, self, role);
	c->ch = rdma_create_event_channel();
	assert_non_null(c->ch);
	sin = h_loopback((uint16_t)atoi(peer_expect(&c->peer, "port ")));
	assert_int_equal(rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&sin, 1000), 0);
	h_cm_expect(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(c->id, 1000), 0);
	h_cm_expect(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (ack_timeout >= 0) {
		uint8_t t = (uint8_t)ack_timeout;

		assert_int_equal(rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
						 &t, sizeof(t)), 0);
	}
	assert_int_equal(rdma_create_qp(c->id, NULL, &qa), 0);
	c->buf = aligned_alloc(4096, len);
	assert_non_null(c->buf);
	memset(c->buf, 0, len);
	c->mr = h_reg(c->id->pd, c->buf, len, access);
	assert_int_equal(rdma_connect(c->id, &param), 0);
	h_cm_expect(c->ch, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(sscanf(peer_expect(&c->peer, "mr "), "%llx %x", &raddr, &c->rkey), 2);
	c->raddr = raddr;
	/* Shared memory, or there is nothing to test. */
	assert_string_equal(softrdma_qp_transport(c->id->qp), "shm");
}

void cm_client_disconnect(struct cm_client *c)
{
	peer_send(&c->peer, "quit");
	assert_int_equal(rdma_disconnect(c->id), 0);
	h_cm_expect(c->ch, RDMA_CM_EVENT_DISCONNECTED);
	peer_expect(&c->peer, "done");
	h_settle();
	rdma_destroy_qp(c->id);
	assert_int_equal(ibv_dereg_mr(c->mr), 0);
	assert_int_equal(rdma_destroy_id(c->id), 0);
	rdma_destroy_event_channel(c->ch);
	free(c->buf);
	assert_int_equal(peer_wait(&c->peer, H_TIMEOUT_MS), 0);
}

/* ==== both ================================================================== */

int cm_spin(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t deadline = h_now_ms() + (uint64_t)peer_timeout_ms(H_TIMEOUT_MS);
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
		if (h_now_ms() > deadline)
			return 0;
	return n;
}

static uint8_t pattern(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 31 + i * 7 + (i >> 12));
}

void cm_fill(uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern(seed, i);
}

/*
 * Checked from the end: a cooperative copy's requester copies the back,
 * so a responder that answered before it finished is caught at once.
 */
bool cm_filled(const uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = len; i-- > 0;)
		if (p[i] != pattern(seed, i))
			return false;
	return true;
}

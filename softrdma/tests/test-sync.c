/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance: synchronous rdma_cm ids (no channel) and the
 * endpoint calls on them, as librdmacm has them: rdma_create_ep (passive
 * and active), rdma_get_request with the listener's QP attributes, calls
 * that wait for their event and keep it in id->event, errors as errno
 * (ECONNREFUSED for a reject), rdma_migrate_id to a private channel. In
 * STEP mode the waiting rdma_cm calls drive the fabric themselves; blocking
 * completion waits (rdma_get_recv_comp) do not, so the data exchange runs in
 * THREAD mode only.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <rdma/rdma_verbs.h>

#include "harness.h"

static struct rdma_addrinfo *addrinfo(const char *node, const char *port, int passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res = NULL;

	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	assert_int_equal(rdma_getaddrinfo(node, port, &hints, &res), 0);
	return res;
}

static const struct ibv_qp_init_attr ep_attr = {
	.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1,
		 .max_inline_data = 16 },
	.sq_sig_all = 1,
};

struct server {
	struct rdma_cm_id *listen;
	int reject;
	int result;		/* 0, or the line of the first failure */
	char msg[16];
};

#define CHECK(s, cond) do { if (!(cond) && !(s)->result) (s)->result = __LINE__; } while (0)

/* The rdma_server example's side: take the request, answer one message, wait for the end. */
static void *serve(void *arg)
{
	struct server *s = arg;
	struct rdma_cm_id *id = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_wc wc;

	CHECK(s, rdma_get_request(s->listen, &id) == 0);
	if (s->result)
		return NULL;
	CHECK(s, id->event && id->event->event == RDMA_CM_EVENT_CONNECT_REQUEST);
	/* The listener's rdma_create_ep gave the QP attributes: the request has a QP. */
	CHECK(s, id->qp != NULL && id->send_cq != NULL && id->recv_cq_channel != NULL);
	if (s->reject) {
		CHECK(s, rdma_reject(id, NULL, 0) == 0);
		rdma_destroy_ep(id);
		return NULL;
	}
	mr = rdma_reg_msgs(id, s->msg, sizeof(s->msg));
	CHECK(s, mr != NULL);
	CHECK(s, rdma_post_recv(id, NULL, s->msg, sizeof(s->msg), mr) == 0);
	CHECK(s, rdma_accept(id, NULL) == 0);
	CHECK(s, id->event && id->event->event == RDMA_CM_EVENT_ESTABLISHED);
	CHECK(s, rdma_get_recv_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	CHECK(s, rdma_post_send(id, NULL, "pong", 5, NULL, IBV_SEND_INLINE) == 0);
	CHECK(s, rdma_get_send_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	CHECK(s, rdma_disconnect(id) == 0);
	CHECK(s, id->event->event == RDMA_CM_EVENT_DISCONNECTED);
	CHECK(s, rdma_dereg_mr(mr) == 0);
	rdma_destroy_ep(id);
	return NULL;
}

static struct rdma_cm_id *listen_ep(struct ibv_qp_init_attr *attr, uint16_t *port)
{
	struct rdma_addrinfo *res = addrinfo("127.0.0.1", "0", 1);
	struct rdma_cm_id *listen;

	assert_int_equal(rdma_create_ep(&listen, res, NULL, attr), 0);
	rdma_freeaddrinfo(res);
	assert_int_equal(rdma_listen(listen, 1), 0);
	*port = ntohs(rdma_get_src_port(listen));
	return listen;
}

static void test_echo_over_endpoints(void **state)
{
	struct ibv_qp_init_attr sattr = ep_attr, cattr = ep_attr;
	struct server s = { 0 };
	struct rdma_addrinfo *res;
	struct rdma_cm_id *id;
	char port[8], buf[16] = "", ping[16] = "ping";
	struct ibv_mr *mr, *pmr;
	struct ibv_wc wc;
	pthread_t t;
	uint16_t p;

	(void)state;
	s.listen = listen_ep(&sattr, &p);
	snprintf(port, sizeof(port), "%u", p);
	assert_int_equal(pthread_create(&t, NULL, serve, &s), 0);
	res = addrinfo("127.0.0.1", port, 0);
	assert_int_equal(rdma_create_ep(&id, res, NULL, &cattr), 0);
	rdma_freeaddrinfo(res);
	/* Resolution already happened, waiting: the route's event is kept. */
	assert_non_null(id->event);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_non_null(id->qp);
	mr = rdma_reg_msgs(id, buf, sizeof(buf));
	pmr = rdma_reg_msgs(id, ping, sizeof(ping));
	assert_int_equal(rdma_post_recv(id, NULL, buf, sizeof(buf), mr), 0);
	assert_int_equal(rdma_connect(id, NULL), 0);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(rdma_post_send(id, NULL, ping, sizeof(ping), pmr, 0), 0);
	assert_int_equal(rdma_get_send_comp(id, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(rdma_get_recv_comp(id, &wc), 1);
	assert_string_equal(buf, "pong");
	pthread_join(t, NULL);
	assert_int_equal(s.result, 0);
	assert_string_equal(s.msg, "ping");
	/* The server disconnected: our DISCONNECTED waits on our channel. */
	assert_int_equal(rdma_dereg_mr(mr), 0);
	assert_int_equal(rdma_dereg_mr(pmr), 0);
	rdma_destroy_ep(id);
	rdma_destroy_ep(s.listen);
}

static void test_rejected_is_econnrefused(void **state)
{
	struct ibv_qp_init_attr sattr = ep_attr, cattr = ep_attr;
	struct server s = { .reject = 1 };
	struct rdma_addrinfo *res;
	struct rdma_cm_id *id;
	pthread_t t;
	char port[8];
	uint16_t p;

	(void)state;
	s.listen = listen_ep(&sattr, &p);
	snprintf(port, sizeof(port), "%u", p);
	assert_int_equal(pthread_create(&t, NULL, serve, &s), 0);
	res = addrinfo("127.0.0.1", port, 0);
	assert_int_equal(rdma_create_ep(&id, res, NULL, &cattr), 0);
	rdma_freeaddrinfo(res);
	errno = 0;
	assert_int_equal(rdma_connect(id, NULL), -1);
	assert_int_equal(errno, ECONNREFUSED);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_REJECTED);
	pthread_join(t, NULL);
	assert_int_equal(s.result, 0);
	rdma_destroy_ep(id);
	rdma_destroy_ep(s.listen);
}

static void test_unreachable_address(void **state)
{
	struct rdma_addrinfo *res = addrinfo("192.0.2.1", "7471", 0);
	struct rdma_cm_id *id = NULL;

	(void)state;
	errno = 0;
	assert_int_equal(rdma_create_ep(&id, res, NULL, NULL), -1);
	assert_int_equal(errno, EHOSTUNREACH);
	assert_null(id);
	rdma_freeaddrinfo(res);
}

static void test_get_request_and_migrate(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_cm_id *id, *req;

	(void)state;
	assert_non_null(ch);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	/* Only a synchronous listener hands out requests. */
	errno = 0;
	assert_int_equal(rdma_get_request(id, &req), -1);
	assert_int_equal(errno, EINVAL);
	/* Migrating to no channel makes the id synchronous, with a channel of its own. */
	assert_int_equal(rdma_migrate_id(id, NULL), 0);
	assert_ptr_not_equal(id->channel, ch);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 100), 0);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_migrate_id(id, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
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

int main(void)
{
	const struct CMUnitTest threaded[] = {
		cmocka_unit_test(test_echo_over_endpoints),
		cmocka_unit_test(test_rejected_is_econnrefused),
		cmocka_unit_test(test_unreachable_address),
		cmocka_unit_test(test_get_request_and_migrate),
	};
	const struct CMUnitTest stepped[] = {
		cmocka_unit_test(test_rejected_is_econnrefused),
		cmocka_unit_test(test_unreachable_address),
		cmocka_unit_test(test_get_request_and_migrate),
	};
	int failed = 0;

	failed += cmocka_run_group_tests_name("thread", threaded, mode_thread, NULL);
	failed += cmocka_run_group_tests_name("step", stepped, mode_step, NULL);
	return failed;
}

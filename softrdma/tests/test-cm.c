/* SPDX-License-Identifier: MIT */
/*
 * softrdma conformance: rdma_cm. Addresses and ports, resolution errors,
 * connect/accept with IB-sized private data, reject, unlistened ports,
 * disconnect on both sides with QP flush, TIMEWAIT_EXIT, destroy after ack,
 * migration, rdma_init_qp_attr and the negotiated QP attributes, the ACK
 * timeout and type of service options, rdma_reject_ece, SRQs and
 * rdma_create_qp_ex, rdma_notify, multicast
 * refused, ECE carried, and the device context that outlives every id.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>
#include <sys/select.h>
#include <unistd.h>

#include "harness.h"

static struct h_conn c;

/* The client id of c, on its channel, resolved to the listener's address and route. */
static void resolve_client(void)
{
	struct sockaddr_in sin = h_loopback(c.port);

	assert_int_equal(rdma_create_id(c.cch, &c.client, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c.client, NULL, (struct sockaddr *)&sin, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(c.client, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
}

static int listen_only(void **state)
{
	(void)state;
	h_cm_listen(&c);
	return 0;
}

static int close_conn(void **state)
{
	(void)state;
	h_cm_close(&c);
	return 0;
}

static void test_bind_and_ports(void **state)
{
	struct sockaddr_in sin = h_loopback(c.port), other = { .sin_family = AF_INET };
	struct rdma_cm_id *id;
	struct sockaddr_in *local;

	(void)state;
	assert_int_equal(rdma_create_id(c.sch, &id, NULL, RDMA_PS_TCP), 0);
	errno = 0;
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&sin), -1);
	assert_int_equal(errno, EADDRINUSE);
	/* Only loopback (and wildcard) addresses belong to softrdma0. */
	other.sin_addr.s_addr = htonl(0x0a010203);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&other), -1);
	assert_int_equal(errno, ENODEV);
	sin.sin_port = 0;
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&sin), 0);
	assert_int_not_equal(rdma_get_src_port(id), 0);
	assert_int_not_equal(ntohs(rdma_get_src_port(id)), c.port);
	local = (struct sockaddr_in *)rdma_get_local_addr(id);
	assert_int_equal(local->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	/* Bound to a device address: the id has the device context. */
	assert_non_null(id->verbs);
	assert_non_null(id->pd);
	assert_int_equal(rdma_destroy_id(id), 0);
	/* The listener's port is held until it is destroyed. */
	assert_non_null(c.listen->verbs);
}

static void test_addr_error(void **state)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(1) };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	(void)state;
	dst.sin_addr.s_addr = htonl(0xc0000201);	/* 192.0.2.1, TEST-NET-1 */
	assert_int_equal(rdma_create_id(c.cch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 100), 0);
	ev = h_cm_get(c.cch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_ADDR_ERROR);
	assert_ptr_equal(ev->id, id);
	assert_true(ev->status < 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	/* Route resolution needs a resolved address. */
	assert_int_equal(rdma_resolve_route(id, 100), -1);
	assert_int_equal(rdma_destroy_id(id), 0);
}

static void test_connect_private_data(void **state)
{
	static const char req[] = "hello";
	static const char rep[] = "welcome, client";
	struct sockaddr_in sin = h_loopback(c.port);
	struct rdma_conn_param param = { .private_data = req, .private_data_len = sizeof(req),
					 .responder_resources = 2, .initiator_depth = 3,
					 .retry_count = 5, .rnr_retry_count = 6 };
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC };
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	struct rdma_cm_event *ev;
	const uint8_t *pd;
	unsigned int i;

	(void)state;
	assert_int_equal(rdma_create_id(c.cch, &c.client, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c.client, NULL, (struct sockaddr *)&sin, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_non_null(c.client->verbs);
	assert_int_equal(rdma_resolve_route(c.client, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(c.client->route.num_paths, 1);
	/* NULL pd and NULL CQs: the default PD and CQs that rdma_cm makes. */
	assert_int_equal(rdma_create_qp(c.client, NULL, &qa), 0);
	assert_non_null(c.client->send_cq);
	assert_non_null(c.client->recv_cq_channel);
	assert_int_equal(c.client->qp->state, IBV_QPS_INIT);
	param.private_data_len = 57;
	assert_int_equal(rdma_connect(c.client, &param), -1);
	param.private_data_len = sizeof(req);
	assert_int_equal(rdma_connect(c.client, &param), 0);

	ev = h_cm_get(c.sch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_equal(ev->listen_id, c.listen);
	assert_ptr_not_equal(ev->id, c.listen);
	c.server = ev->id;
	/* IB and RoCE deliver the REQ's whole 56 bytes: ours, then zeros. */
	assert_int_equal(ev->param.conn.private_data_len, 56);
	pd = ev->param.conn.private_data;
	assert_memory_equal(pd, req, sizeof(req));
	for (i = sizeof(req); i < 56; i++)
		assert_int_equal(pd[i], 0);
	/* Seen from the server: the client's initiator depth is our responder resources. */
	assert_int_equal(ev->param.conn.responder_resources, 3);
	assert_int_equal(ev->param.conn.initiator_depth, 2);
	assert_int_equal(ev->param.conn.qp_num, c.client->qp->qp_num);
	assert_int_equal(((struct sockaddr_in *)rdma_get_peer_addr(c.server))->sin_port,
			 rdma_get_src_port(c.client));
	assert_int_equal(rdma_get_src_port(c.server), htons(c.port));
	assert_int_equal(rdma_ack_cm_event(ev), 0);

	assert_int_equal(rdma_create_qp(c.server, NULL, &qa), 0);
	param.private_data = rep;
	param.private_data_len = sizeof(rep);
	param.responder_resources = 1;
	param.initiator_depth = 2;
	param.rnr_retry_count = 4;
	assert_int_equal(rdma_accept(c.server, &param), 0);
	ev = h_cm_get(c.cch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(ev->param.conn.private_data_len, 196);
	pd = ev->param.conn.private_data;
	assert_memory_equal(pd, rep, sizeof(rep));
	for (i = sizeof(rep); i < 196; i++)
		assert_int_equal(pd[i], 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	h_cm_expect(c.sch, RDMA_CM_EVENT_ESTABLISHED);

	/* The negotiated values reached the QPs. */
	assert_int_equal(ibv_query_qp(c.client->qp, &attr, IBV_QP_STATE, &init), 0);
	assert_int_equal(attr.qp_state, IBV_QPS_RTS);
	assert_int_equal(attr.dest_qp_num, c.server->qp->qp_num);
	assert_int_equal(attr.max_rd_atomic, 1);
	assert_int_equal(attr.max_dest_rd_atomic, 2);
	assert_int_equal(attr.rnr_retry, 4);
	assert_int_equal(attr.retry_cnt, 5);
	assert_true(attr.qp_access_flags & IBV_ACCESS_REMOTE_READ);
	assert_int_equal(ibv_query_qp(c.server->qp, &attr, IBV_QP_STATE, &init), 0);
	assert_int_equal(attr.qp_state, IBV_QPS_RTS);
	assert_int_equal(attr.dest_qp_num, c.client->qp->qp_num);
	assert_int_equal(attr.max_dest_rd_atomic, 1);
	assert_int_equal(attr.max_rd_atomic, 2);
	assert_int_equal(attr.rnr_retry, 6);
	assert_int_equal(attr.retry_cnt, 5);
	/* rdma_init_qp_attr reports the same. */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	{
		int mask = 0;

		assert_int_equal(rdma_init_qp_attr(c.client, &attr, &mask), 0);
		assert_true(mask & IBV_QP_DEST_QPN);
		assert_int_equal(attr.dest_qp_num, c.server->qp->qp_num);
	}
}

static void test_data_over_connection(void **state)
{
	static char cbuf[64] = "ping", sbuf[64];
	struct ibv_mr *cmr, *smr;
	struct ibv_wc wc;

	(void)state;
	h_cm_connect(&c, NULL, 0);
	cmr = h_reg(c.client->pd, cbuf, sizeof(cbuf), IBV_ACCESS_LOCAL_WRITE);
	smr = h_reg(c.server->pd, sbuf, sizeof(sbuf), IBV_ACCESS_LOCAL_WRITE |
		    IBV_ACCESS_REMOTE_READ);
	assert_int_equal(h_post_recv(c.server->qp, 1, sbuf, sizeof(sbuf), smr->lkey), 0);
	assert_int_equal(h_post(c.client->qp, 2, IBV_WR_SEND, cbuf, 5, cmr->lkey,
				IBV_SEND_SIGNALED, 0, 0), 0);
	assert_int_equal(h_poll(c.scq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal(sbuf, "ping");
	assert_int_equal(h_poll(c.client->send_cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	memset(cbuf, 0, sizeof(cbuf));
	/* Responder resources were granted, so the server's memory answers reads. */
	assert_int_equal(h_post(c.client->qp, 3, IBV_WR_RDMA_READ, cbuf, 5, cmr->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)sbuf, smr->rkey), 0);
	assert_int_equal(h_poll(c.client->send_cq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal(cbuf, "ping");
	assert_int_equal(ibv_dereg_mr(cmr), 0);
	assert_int_equal(ibv_dereg_mr(smr), 0);
}

static void test_reject_with_data(void **state)
{
	static const char why[] = "go away";
	struct rdma_cm_event *ev;
	const uint8_t *pd;

	(void)state;
	resolve_client();
	assert_int_equal(rdma_connect(c.client, NULL), 0);
	ev = h_cm_get(c.sch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	c.server = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_reject(c.server, why, 149), -1);
	assert_int_equal(rdma_reject(c.server, why, sizeof(why)), 0);
	ev = h_cm_get(c.cch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, SOFTRDMA_REJ_CONSUMER_DEFINED);
	assert_int_equal(ev->param.conn.private_data_len, 148);
	pd = ev->param.conn.private_data;
	assert_memory_equal(pd, why, sizeof(why));
	assert_int_equal(pd[147], 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
}

/* rdma_reject_ece(): a reject as rdma_reject()'s, with IBA's reason 35 (vendor option). */
static void test_reject_ece(void **state)
{
	struct rdma_cm_event *ev;

	(void)state;
	resolve_client();
	/* Only a CONNECT_REQUEST can be refused. */
	assert_int_equal(rdma_reject_ece(c.client, NULL, 0), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_connect(c.client, NULL), 0);
	ev = h_cm_get(c.sch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	c.server = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_reject_ece(c.server, NULL, 0), 0);
	ev = h_cm_get(c.cch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, 35);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
}

/*
 * rdma_create_srq(): the id's SRQ, which its QP receives from;
 * rdma_create_qp_ex() with what an ibv_qp_init_attr holds, EOPNOTSUPP for
 * creation flags (none is modelled); rdma_destroy_srq() forgets it.
 */
static void test_srq_and_qp_ex(void **state)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq_init_attr_ex sx = { .comp_mask = IBV_SRQ_INIT_ATTR_TYPE,
					   .srq_type = IBV_SRQT_XRC };
	struct ibv_qp_init_attr_ex qx = {
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
		.create_flags = IBV_QP_CREATE_SCATTER_FCS,
	};
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	(void)state;
	resolve_client();
	assert_int_equal(rdma_create_srq_ex(c.client, &sx), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(rdma_create_srq(c.client, NULL, &sa), 0);
	assert_non_null(c.client->srq);
	assert_int_equal(rdma_create_srq(c.client, NULL, &sa), -1);
	assert_int_equal(errno, EINVAL);
	qx.pd = c.client->pd;
	assert_int_equal(rdma_create_qp_ex(c.client, &qx), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	qx.comp_mask = IBV_QP_INIT_ATTR_PD;
	assert_int_equal(rdma_create_qp_ex(c.client, &qx), 0);
	assert_int_equal(ibv_query_qp(c.client->qp, &attr, IBV_QP_CAP, &init), 0);
	assert_ptr_equal(init.srq, c.client->srq);
	assert_true(qx.cap.max_send_wr >= 4);
	rdma_destroy_qp(c.client);
	rdma_destroy_srq(c.client);
	assert_null(c.client->srq);
}

/*
 * rdma_notify(IBV_EVENT_COMM_EST): data came before the RTU. A passive id
 * that sent its REP is established then (in STEP mode nothing else ran, so
 * the RTU is still to come; in the others it may have come first:
 * EISCONN); ESTABLISHED comes once either way.
 */
static void test_notify_comm_est(void **state)
{
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1 };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_cm_event *ev;
	struct pollfd pfd;
	int rc;

	(void)state;
	resolve_client();
	assert_int_equal(rdma_notify(c.client, IBV_EVENT_COMM_EST), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_create_qp(c.client, NULL, &qa), 0);
	assert_int_equal(rdma_connect(c.client, &param), 0);
	ev = h_cm_get(c.sch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	c.server = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_create_qp(c.server, NULL, &qa), 0);
	assert_int_equal(rdma_accept(c.server, &param), 0);
	assert_int_equal(rdma_notify(c.server, IBV_EVENT_PATH_MIG), -1);
	assert_int_equal(errno, EINVAL);
	rc = rdma_notify(c.server, IBV_EVENT_COMM_EST);
	if (softrdma_get_mode() == SOFTRDMA_MODE_STEP)
		assert_int_equal(rc, 0);
	else
		assert_true(rc == 0 || errno == EISCONN);
	h_cm_expect(c.sch, RDMA_CM_EVENT_ESTABLISHED);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(rdma_notify(c.server, IBV_EVENT_COMM_EST), -1);
	assert_int_equal(errno, EISCONN);
	/* The RTU that came after changed nothing: no second ESTABLISHED. */
	h_settle();
	pfd = (struct pollfd){ .fd = c.sch->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 0), 0);
}

/*
 * rsockets are not modelled: rsocket() fails with ENOSYS, a call on one
 * descriptor with EBADF (none is an rsocket); rselect() and rpoll() take
 * ordinary ones.
 */
static void test_rsockets_absent(void **state)
{
	struct timeval zero = { 0, 0 };
	struct pollfd pfd;
	fd_set rd;
	int fds[2];
	char b = 'x';

	(void)state;
	errno = 0;
	assert_int_equal(rsocket(AF_INET, SOCK_STREAM, 0), -1);
	assert_int_equal(errno, ENOSYS);
	assert_int_equal(pipe(fds), 0);
	errno = 0;
	assert_int_equal(rsend(fds[1], &b, 1, 0), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(rclose(fds[0]), -1);
	assert_int_equal(write(fds[1], &b, 1), 1);
	FD_ZERO(&rd);
	FD_SET(fds[0], &rd);
	assert_int_equal(rselect(fds[0] + 1, &rd, NULL, NULL, &zero), 1);
	pfd = (struct pollfd){ .fd = fds[0], .events = POLLIN };
	assert_int_equal(rpoll(&pfd, 1, 0), 1);
	close(fds[0]);
	close(fds[1]);
}

static void test_unlistened_port(void **state)
{
	struct sockaddr_in sin = h_loopback((uint16_t)(c.port + 1));
	struct rdma_cm_event *ev;

	(void)state;
	assert_int_equal(rdma_create_id(c.cch, &c.client, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c.client, NULL, (struct sockaddr *)&sin, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(c.client, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_connect(c.client, NULL), 0);
	ev = h_cm_get(c.cch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, SOFTRDMA_REJ_INVALID_SERVICE_ID);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
}

static void test_disconnect_both_sides(void **state)
{
	static char b[64];
	struct ibv_mr *cmr;
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	struct ibv_wc wc;

	(void)state;
	h_cm_connect(&c, NULL, 0);
	cmr = h_reg(c.client->pd, b, sizeof(b), IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(h_post_recv(c.client->qp, 77, b, sizeof(b), cmr->lkey), 0);
	assert_int_equal(rdma_disconnect(c.client), 0);
	/* rdma_disconnect moves the QP to ERR: the receive flushes. */
	assert_int_equal(h_poll(c.ccq, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc.wr_id, 77);
	h_cm_expect(c.sch, RDMA_CM_EVENT_DISCONNECTED);
	h_cm_expect(c.cch, RDMA_CM_EVENT_DISCONNECTED);
	/* The passive side's QP is the application's to stop. */
	assert_int_equal(ibv_query_qp(c.server->qp, &attr, IBV_QP_STATE, &init), 0);
	assert_int_equal(attr.qp_state, IBV_QPS_RTS);
	assert_int_equal(rdma_disconnect(c.server), 0);
	assert_int_equal(ibv_query_qp(c.server->qp, &attr, IBV_QP_STATE, &init), 0);
	assert_int_equal(attr.qp_state, IBV_QPS_ERR);
	/* Both sides leave timewait later. */
	h_cm_expect(c.sch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	h_cm_expect(c.cch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	assert_int_equal(ibv_dereg_mr(cmr), 0);
}

struct late_cm_ack {
	struct rdma_cm_event *ev;
	int acked;
	pthread_mutex_t lock;
};

static void *cm_ack_later(void *arg)
{
	struct late_cm_ack *la = arg;
	struct timespec ts = { 0, 50000000 };

	nanosleep(&ts, NULL);
	pthread_mutex_lock(&la->lock);
	la->acked = 1;
	pthread_mutex_unlock(&la->lock);
	rdma_ack_cm_event(la->ev);
	return NULL;
}

static void test_destroy_id_waits_for_ack(void **state)
{
	struct late_cm_ack la = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct sockaddr_in sin = h_loopback(c.port);
	struct softrdma_counts counts;
	pthread_t t;

	(void)state;
	assert_int_equal(rdma_create_id(c.cch, &c.client, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c.client, NULL, (struct sockaddr *)&sin, 100), 0);
	la.ev = h_cm_get(c.cch);
	softrdma_get_counts(&counts);
	assert_int_equal(counts.unacked_events, 1);
	assert_int_equal(pthread_create(&t, NULL, cm_ack_later, &la), 0);
	assert_int_equal(rdma_destroy_id(c.client), 0);
	c.client = NULL;
	pthread_mutex_lock(&la.lock);
	assert_int_equal(la.acked, 1);
	pthread_mutex_unlock(&la.lock);
	pthread_join(t, NULL);
	softrdma_get_counts(&counts);
	assert_int_equal(counts.unacked_events, 0);
}

static void test_migrate_id(void **state)
{
	struct rdma_event_channel *other = rdma_create_event_channel();
	struct sockaddr_in sin = h_loopback(c.port);

	(void)state;
	assert_non_null(other);
	assert_int_equal(rdma_create_id(c.cch, &c.client, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c.client, NULL, (struct sockaddr *)&sin, 100), 0);
	assert_int_equal(rdma_migrate_id(c.client, other), 0);
	assert_ptr_equal(c.client->channel, other);
	h_cm_expect(other, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_destroy_id(c.client), 0);
	c.client = NULL;
	rdma_destroy_event_channel(other);
}

static void test_nonblocking_channel(void **state)
{
	struct rdma_cm_event *ev;
	int flags = fcntl(c.cch->fd, F_GETFL);

	(void)state;
	assert_int_equal(fcntl(c.cch->fd, F_SETFL, flags | O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(rdma_get_cm_event(c.cch, &ev), -1);
	assert_int_equal(errno, EAGAIN);
}

static void test_init_qp_attr_unconnected(void **state)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RTR };
	int mask;

	(void)state;
	assert_int_equal(rdma_init_qp_attr(c.listen, &attr, &mask), -1);
	assert_int_equal(errno, EINVAL);
	attr.qp_state = IBV_QPS_INIT;
	assert_int_equal(rdma_init_qp_attr(c.listen, &attr, &mask), 0);
	assert_int_equal(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			 IBV_QP_ACCESS_FLAGS);
	assert_int_equal(attr.port_num, 1);
}

static void test_getaddrinfo(void **state)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE }, *res;
	struct sockaddr_in *sin;

	(void)state;
	assert_int_equal(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res), 0);
	assert_non_null(res->ai_src_addr);
	assert_null(res->ai_dst_addr);
	sin = (struct sockaddr_in *)res->ai_src_addr;
	assert_int_equal(ntohs(sin->sin_port), 7471);
	assert_int_equal(res->ai_port_space, RDMA_PS_TCP);
	rdma_freeaddrinfo(res);
	assert_int_equal(rdma_getaddrinfo("127.0.0.1", "7471", NULL, &res), 0);
	assert_non_null(res->ai_dst_addr);
	assert_int_equal(res->ai_qp_type, IBV_QPT_RC);
	rdma_freeaddrinfo(res);
	/* The hints' port space and QP type are kept, as librdmacm keeps them. */
	hints.ai_port_space = RDMA_PS_UDP;
	hints.ai_qp_type = IBV_QPT_UD;
	assert_int_equal(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res), 0);
	assert_int_equal(res->ai_port_space, RDMA_PS_UDP);
	assert_int_equal(res->ai_qp_type, IBV_QPT_UD);
	rdma_freeaddrinfo(res);
}

/*
 * The UDP space has UD ids (test-ud.c), at rdma_create_id and rdma_create_ep;
 * IPoIB's needs an IPoIB broadcast group, which RoCE has not: refused as not
 * supported. A space the kernel does not know is EINVAL; a QP type that is
 * not the space's is refused at rdma_create_ep.
 */
static void test_datagram_spaces(void **state)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_UDP, .ai_qp_type = IBV_QPT_UD },
			     *res;
	struct rdma_cm_id *id = NULL;

	(void)state;
	assert_int_equal(rdma_create_id(c.cch, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(id->qp_type, IBV_QPT_UD);
	assert_int_equal(rdma_destroy_id(id), 0);
	id = NULL;
	errno = 0;
	assert_int_equal(rdma_create_id(c.cch, &id, NULL, RDMA_PS_IPOIB), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_int_equal(rdma_create_id(c.cch, &id, NULL, (enum rdma_port_space)0x999), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(id);
	assert_int_equal(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res), 0);
	assert_int_equal(rdma_create_ep(&id, res, NULL, NULL), 0);
	assert_int_equal(id->qp_type, IBV_QPT_UD);
	rdma_destroy_ep(id);
	id = NULL;
	res->ai_qp_type = IBV_QPT_RC;
	errno = 0;
	assert_int_equal(rdma_create_ep(&id, res, NULL, NULL), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	rdma_freeaddrinfo(res);
}

static void test_ipv6_loopback(void **state)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	struct rdma_cm_id *l6, *cl, *sv;
	struct rdma_cm_event *ev;

	(void)state;
	sin6.sin6_addr = in6addr_loopback;
	assert_int_equal(rdma_create_id(c.sch, &l6, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(l6, (struct sockaddr *)&sin6), 0);
	assert_int_equal(rdma_listen(l6, 1), 0);
	sin6.sin6_port = rdma_get_src_port(l6);
	assert_int_equal(rdma_create_id(c.cch, &cl, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(cl, NULL, (struct sockaddr *)&sin6, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_get_local_addr(cl)->sa_family, AF_INET6);
	assert_int_equal(rdma_resolve_route(cl, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_connect(cl, NULL), 0);
	ev = h_cm_get(c.sch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_equal(ev->listen_id, l6);
	sv = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	/* No QP on either side: the active side sees CONNECT_RESPONSE and establishes. */
	assert_int_equal(rdma_accept(sv, NULL), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_CONNECT_RESPONSE);
	assert_int_equal(rdma_establish(cl), 0);
	h_cm_expect(c.sch, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(rdma_destroy_id(cl), 0);
	/* Destroying a connected id disconnects the peer. */
	h_cm_expect(c.sch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(rdma_destroy_id(sv), 0);
	assert_int_equal(rdma_destroy_id(l6), 0);
}

/*
 * RDMA_OPTION_ID_ACK_TIMEOUT sets the QP's local ACK timeout when rdma_cm
 * moves it to RTS, on the side that set it; RDMA_OPTION_ID_TOS, given before
 * route resolution, is the path's traffic class, which the REQ carries to
 * the passive side: both QPs' GRHs have it. Unset, the CM's own values.
 */
static void test_ack_timeout_and_tos(void **state)
{
	struct sockaddr_in sin = h_loopback(c.port);
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC };
	uint8_t timeout = 18, server_timeout = 21, tos = 0x28;
	int wide = 18;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct rdma_cm_event *ev;

	(void)state;
	assert_int_equal(rdma_create_id(c.cch, &c.client, NULL, RDMA_PS_TCP), 0);
	/* The kernel's checks: a u8 each, and no other level than the id's (or IB's). */
	assert_int_equal(rdma_set_option(c.client, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
					 &wide, sizeof(wide)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_set_option(c.client, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
					 &wide, sizeof(wide)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_set_option(c.client, RDMA_OPTION_ID, 99, &tos, 1), -1);
	assert_int_equal(errno, ENOSYS);
	assert_int_equal(rdma_set_option(c.client, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
					 &tos, sizeof(tos)), 0);
	assert_int_equal(rdma_set_option(c.client, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
					 &timeout, sizeof(timeout)), 0);
	assert_int_equal(rdma_resolve_addr(c.client, NULL, (struct sockaddr *)&sin, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(c.client, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(c.client->route.path_rec->traffic_class, tos);
	assert_int_equal(rdma_create_qp(c.client, NULL, &qa), 0);
	assert_int_equal(rdma_connect(c.client, NULL), 0);
	ev = h_cm_get(c.sch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	c.server = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(c.server->route.path_rec->traffic_class, tos);
	assert_int_equal(rdma_create_qp(c.server, NULL, &qa), 0);
	assert_int_equal(rdma_set_option(c.server, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
					 &server_timeout, sizeof(server_timeout)), 0);
	assert_int_equal(rdma_accept(c.server, NULL), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ESTABLISHED);
	h_cm_expect(c.sch, RDMA_CM_EVENT_ESTABLISHED);

	assert_int_equal(ibv_query_qp(c.client->qp, &attr, IBV_QP_TIMEOUT | IBV_QP_AV, &init), 0);
	assert_int_equal(attr.timeout, timeout);
	assert_int_equal(attr.ah_attr.grh.traffic_class, tos);
	assert_int_equal(ibv_query_qp(c.server->qp, &attr, IBV_QP_TIMEOUT | IBV_QP_AV, &init), 0);
	assert_int_equal(attr.timeout, server_timeout);
	assert_int_equal(attr.ah_attr.grh.traffic_class, tos);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	{
		int mask = 0;

		assert_int_equal(rdma_init_qp_attr(c.client, &attr, &mask), 0);
		assert_true(mask & IBV_QP_TIMEOUT);
		assert_int_equal(attr.timeout, timeout);
	}
}

/*
 * Without the options: the CM's timeout (14) and traffic class 0; and the
 * kernel CM's min_rnr_timer for user space QPs, 0 (655.36 ms), on both sides.
 */
static void test_cm_defaults(void **state)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	(void)state;
	h_cm_connect(&c, NULL, 0);
	assert_int_equal(ibv_query_qp(c.client->qp, &attr, IBV_QP_TIMEOUT | IBV_QP_AV |
				      IBV_QP_MIN_RNR_TIMER, &init), 0);
	assert_int_equal(attr.timeout, 14);
	assert_int_equal(attr.ah_attr.grh.traffic_class, 0);
	assert_int_equal(attr.min_rnr_timer, 0);
	assert_int_equal(ibv_query_qp(c.server->qp, &attr, IBV_QP_TIMEOUT |
				      IBV_QP_MIN_RNR_TIMER, &init), 0);
	assert_int_equal(attr.timeout, 14);
	assert_int_equal(attr.min_rnr_timer, 0);
}

/*
 * Multicast needs UD, and no id is UD: librdmacm's argument checks, then the
 * kernel's EINVAL for a join on an RC id; a leave finds no group.
 */
static void test_multicast_refused(void **state)
{
	struct sockaddr_in group = h_loopback(0);
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = (struct sockaddr *)&group,
	};
	struct sockaddr_in bound = h_loopback(0);
	struct rdma_cm_id *id;

	(void)state;
	group.sin_addr.s_addr = htonl(0xe0000101);	/* 224.0.1.1 */
	assert_int_equal(rdma_create_id(c.cch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&bound), 0);
	errno = 0;
	assert_int_equal(rdma_join_multicast(id, (struct sockaddr *)&group, NULL), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rdma_join_multicast_ex(id, &attr, NULL), -1);
	assert_int_equal(errno, EINVAL);
	attr.comp_mask |= RDMA_CM_JOIN_MC_ATTR_RESERVED;
	errno = 0;
	assert_int_equal(rdma_join_multicast_ex(id, &attr, NULL), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS;
	errno = 0;
	assert_int_equal(rdma_join_multicast_ex(id, &attr, NULL), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rdma_leave_multicast(id, (struct sockaddr *)&group), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	errno = 0;
	assert_int_equal(rdma_leave_multicast(id, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(id), 0);
}

/* Resolve an id to the listener of c, without a QP. */
static struct rdma_cm_id *resolved_id(void)
{
	struct sockaddr_in sin = h_loopback(c.port);
	struct rdma_cm_id *id;

	assert_int_equal(rdma_create_id(c.cch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(id, 100), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	return id;
}

/*
 * ECE as librdmacm carries it for QPs the application drives itself: the
 * active side's vendor and options reach the passive side in the REQ, the
 * REP answers with that vendor and the passive side's options. An id with
 * a QP from rdma_create_qp takes the QP's ECE, which softrdma0 has not.
 */
static void test_ece_carried(void **state)
{
	struct ibv_ece mine = { .vendor_id = 0x15b3, .options = 0x1234 };
	struct ibv_ece theirs = { .vendor_id = 0x15b3, .options = 0x55 };
	struct ibv_ece got, bad = { .vendor_id = 0 };
	struct rdma_conn_param param = { .qp_num = 0x123 };
	struct rdma_cm_id *cl, *sv;
	struct rdma_cm_event *ev;

	(void)state;
	cl = resolved_id();
	assert_int_equal(rdma_set_local_ece(cl, &bad), -1);
	assert_int_equal(errno, EINVAL);
	bad.vendor_id = 1;
	bad.comp_mask = 1;
	assert_int_equal(rdma_set_local_ece(cl, &bad), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_set_local_ece(cl, &mine), 0);
	assert_int_equal(rdma_connect(cl, &param), 0);
	ev = h_cm_get(c.sch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	sv = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	memset(&got, 0xff, sizeof(got));
	assert_int_equal(rdma_get_remote_ece(sv, &got), 0);
	assert_int_equal(got.vendor_id, 0x15b3);
	assert_int_equal(got.options, 0x1234);
	assert_int_equal(got.comp_mask, 0);
	assert_int_equal(rdma_set_local_ece(sv, &theirs), 0);
	param.qp_num = 0x456;
	assert_int_equal(rdma_accept(sv, &param), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_CONNECT_RESPONSE);
	assert_int_equal(rdma_get_remote_ece(cl, &got), 0);
	assert_int_equal(got.vendor_id, 0x15b3);
	assert_int_equal(got.options, 0x55);
	assert_int_equal(rdma_establish(cl), 0);
	h_cm_expect(c.sch, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(rdma_destroy_id(cl), 0);
	h_cm_expect(c.sch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(rdma_destroy_id(sv), 0);

	/* rdma_create_qp: the QP's ECE, none; and once there is a QP, the calls refuse. */
	cl = resolved_id();
	assert_int_equal(rdma_set_local_ece(cl, &mine), 0);
	{
		struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = 1, .max_recv_wr = 1,
							.max_send_sge = 1, .max_recv_sge = 1 } };

		assert_int_equal(rdma_create_qp(cl, NULL, &qa), 0);
	}
	assert_int_equal(rdma_set_local_ece(cl, &mine), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_get_remote_ece(cl, &got), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_connect(cl, NULL), 0);
	ev = h_cm_get(c.sch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	sv = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_get_remote_ece(sv, &got), 0);
	assert_int_equal(got.vendor_id, 0);
	assert_int_equal(got.options, 0);
	assert_int_equal(rdma_reject(sv, NULL, 0), 0);
	h_cm_expect(c.cch, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(rdma_destroy_id(sv), 0);
	rdma_destroy_qp(cl);
	assert_int_equal(rdma_destroy_id(cl), 0);
}

/* Bind a new id to 127.0.0.1 (port 0): it gets the device context. */
static struct rdma_cm_id *bound_id(struct rdma_event_channel *ch)
{
	struct sockaddr_in sin = h_loopback(0);
	struct rdma_cm_id *id;

	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&sin), 0);
	assert_non_null(id->verbs);
	assert_non_null(id->pd);
	return id;
}

/*
 * As librdmacm: the device context outlives every id. Only the default PD
 * goes with the last id; the application's own PD on id->verbs keeps
 * working with no id alive, and the next id gets the same context.
 */
static void test_context_outlives_ids(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct softrdma_counts before, between, after;
	struct h_opts o;
	struct ibv_context *ctx, **devs;
	struct ibv_qp *qp[2];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct rdma_cm_id *id;
	char mem[128] = "kept across reconnects";
	char *buf = mem, *copy = mem + 64;
	int i, n;

	(void)state;
	assert_non_null(ch);
	softrdma_get_counts(&before);
	assert_int_equal(before.cm_ids, 0);
	id = bound_id(ch);
	ctx = id->verbs;
	pd = ibv_alloc_pd(ctx);
	assert_non_null(pd);
	mr = h_reg(pd, mem, sizeof(mem), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(rdma_destroy_id(id), 0);

	/* No id left: the default PD is gone, ours and the context are not. */
	softrdma_get_counts(&between);
	assert_int_equal(between.cm_ids, 0);
	assert_int_equal(between.pds, before.pds + 1);
	assert_int_equal(between.mrs, before.mrs + 1);
	h_opts_default(&o);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	assert_non_null(cq);
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};

		qp[i] = ibv_create_qp(pd, &qa);
		assert_non_null(qp[i]);
	}
	h_qp_to_rts(qp[0], qp[1]->qp_num, &o);
	h_qp_to_rts(qp[1], qp[0]->qp_num, &o);
	assert_int_equal(h_post(qp[0], 7, IBV_WR_RDMA_WRITE, buf, 64, mr->lkey,
				IBV_SEND_SIGNALED, (uintptr_t)copy, mr->rkey), 0);
	n = h_poll(cq, &wc, 1);
	assert_int_equal(n, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
	assert_string_equal(copy, buf);

	/* A new id, and the device list, name the same context. */
	id = bound_id(ch);
	assert_ptr_equal(id->verbs, ctx);
	assert_ptr_not_equal(id->pd, pd);
	devs = rdma_get_devices(&n);
	assert_non_null(devs);
	assert_int_equal(n, 1);
	assert_ptr_equal(devs[0], ctx);
	rdma_free_devices(devs);
	assert_int_equal(rdma_destroy_id(id), 0);

	for (i = 0; i < 2; i++)
		assert_int_equal(ibv_destroy_qp(qp[i]), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	rdma_destroy_event_channel(ch);
	softrdma_get_counts(&after);
	assert_int_equal(after.pds, before.pds);
	assert_int_equal(after.cm_ids, 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, listen_only, close_conn)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_bind_and_ports),
		T(test_addr_error),
		T(test_connect_private_data),
		T(test_data_over_connection),
		T(test_reject_with_data),
		T(test_reject_ece),
		T(test_srq_and_qp_ex),
		T(test_notify_comm_est),
		T(test_rsockets_absent),
		T(test_unlistened_port),
		T(test_disconnect_both_sides),
		T(test_destroy_id_waits_for_ack),
		T(test_migrate_id),
		T(test_nonblocking_channel),
		T(test_init_qp_attr_unconnected),
		T(test_getaddrinfo),
		T(test_datagram_spaces),
		T(test_ipv6_loopback),
		T(test_ack_timeout_and_tos),
		T(test_cm_defaults),
		T(test_multicast_refused),
		T(test_ece_carried),
		cmocka_unit_test(test_context_outlives_ids),
	};
	int failed = 0;

	failed += h_run_all_modes(tests);
	return failed;
}

/* SPDX-License-Identifier: MIT */
/* Helpers for the softrdma conformance tests (see harness.h). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "harness.h"

uint64_t h_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct sockaddr_in h_loopback(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sin;
}

void h_opts_default(struct h_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_send_wr = 16;
	o->max_recv_wr = 16;
	o->max_sge = 4;
	o->max_inline = 64;
	o->rnr_retry = 0;
	o->retry_cnt = 1;
	o->qp_access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	o->rd_atomic = 4;
	o->cqe = 64;
}

enum ibv_qp_state h_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	assert_int_equal(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init), 0);
	return attr.qp_state;
}

void h_qp_to_rtr(struct ibv_qp *qp, uint32_t dest_qpn, const struct h_opts *o)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.port_num = 1;
	attr.qp_access_flags = (unsigned int)o->qp_access;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = IBV_MTU_1024;
	attr.dest_qp_num = dest_qpn;
	attr.max_dest_rd_atomic = o->rd_atomic;
	attr.min_rnr_timer = o->min_rnr_timer ? o->min_rnr_timer : 12;
	attr.ah_attr.is_global = 1;
	attr.ah_attr.port_num = 1;
	attr.ah_attr.grh.dgid.raw[10] = 0xff;
	attr.ah_attr.grh.dgid.raw[11] = 0xff;
	attr.ah_attr.grh.dgid.raw[12] = 127;
	attr.ah_attr.grh.dgid.raw[15] = 1;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
}

void h_qp_to_rts(struct ibv_qp *qp, uint32_t dest_qpn, const struct h_opts *o)
{
	struct ibv_qp_attr attr;

	h_qp_to_rtr(qp, dest_qpn, o);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = o->timeout ? o->timeout : 14;
	attr.retry_cnt = o->retry_cnt;
	attr.rnr_retry = o->rnr_retry;
	attr.max_rd_atomic = o->rd_atomic;
	assert_int_equal(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				       IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

void h_pair_open(struct h_pair *p, const struct h_opts *o)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	memset(p, 0, sizeof(*p));
	assert_non_null(list);
	p->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	assert_non_null(p->ctx);
	p->pd = ibv_alloc_pd(p->ctx);
	assert_non_null(p->pd);
	if (o->use_srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = o->max_recv_wr,
							  .max_sge = o->max_sge } };

		p->srq = ibv_create_srq(p->pd, &sa);
		assert_non_null(p->srq);
	}
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr qa = {
			.cap = { .max_send_wr = o->max_send_wr, .max_recv_wr = o->max_recv_wr,
				 .max_send_sge = o->max_sge, .max_recv_sge = o->max_sge,
				 .max_inline_data = o->max_inline },
			.qp_type = IBV_QPT_RC,
			.sq_sig_all = o->sq_sig_all,
		};

		p->ch[i] = ibv_create_comp_channel(p->ctx);
		assert_non_null(p->ch[i]);
		p->cq[i] = ibv_create_cq(p->ctx, o->cqe, p, p->ch[i], 0);
		assert_non_null(p->cq[i]);
		qa.send_cq = p->cq[i];
		qa.recv_cq = p->cq[i];
		if (i == 1)
			qa.srq = p->srq;
		p->qp[i] = ibv_create_qp(p->pd, &qa);
		assert_non_null(p->qp[i]);
	}
	h_qp_to_rts(p->qp[0], p->qp[1]->qp_num, o);
	h_qp_to_rts(p->qp[1], p->qp[0]->qp_num, o);
}

void h_pair_close(struct h_pair *p)
{
	int i;

	h_settle();
	for (i = 0; i < 2; i++) {
		assert_int_equal(ibv_destroy_qp(p->qp[i]), 0);
		assert_int_equal(ibv_destroy_cq(p->cq[i]), 0);
		assert_int_equal(ibv_destroy_comp_channel(p->ch[i]), 0);
	}
	if (p->srq)
		assert_int_equal(ibv_destroy_srq(p->srq), 0);
	assert_int_equal(ibv_dealloc_pd(p->pd), 0);
	assert_int_equal(ibv_close_device(p->ctx), 0);
}

struct ibv_mr *h_reg(struct ibv_pd *pd, void *buf, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, access);

	assert_non_null(mr);
	return mr;
}

int h_post(struct ibv_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op, void *buf, uint32_t len,
	   uint32_t lkey, unsigned int flags, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = buf ? 1 : 0;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_SEND_WITH_INV || op == IBV_WR_LOCAL_INV)
		wr.invalidate_rkey = rkey;
	ret = ibv_post_send(qp, &wr, &bad);
	if (ret)
		assert_ptr_equal(bad, &wr);
	return ret;
}

int h_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *buf, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = buf ? 1 : 0 };
	struct ibv_recv_wr *bad = NULL;

	return ibv_post_recv(qp, &wr, &bad);
}

int h_group_step(void **state)
{
	(void)state;
	return softrdma_set_mode(SOFTRDMA_MODE_STEP);
}

int h_group_thread(void **state)
{
	(void)state;
	return softrdma_set_mode(SOFTRDMA_MODE_THREAD);
}

int h_group_async(void **state)
{
	(void)state;
	return softrdma_set_mode(SOFTRDMA_MODE_ASYNC);
}

void h_settle(void)
{
	if (softrdma_get_mode() == SOFTRDMA_MODE_STEP)
		softrdma_progress_all();
	else
		softrdma_progress(0);
}

int h_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	uint64_t deadline = h_now_ms() + H_TIMEOUT_MS;
	int got = 0;

	while (got < n && h_now_ms() < deadline) {
		int r;

		int stepped = 0;

		if (softrdma_get_mode() == SOFTRDMA_MODE_STEP)
			stepped = softrdma_progress(1);
		r = ibv_poll_cq(cq, n - got, wc + got);
		assert_true(r >= 0);
		got += r;
		/* Idle: let the net thread in (answers from other processes come through it). */
		if (!r && !stepped) {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
		}
	}
	return got;
}

void h_assert_empty(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	h_settle();
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
}

void h_assert_fast(enum ibv_wr_opcode op, unsigned long before, unsigned long n)
{
	unsigned long want = softrdma_get_mode() == SOFTRDMA_MODE_THREAD ? n : 0;

	assert_int_equal(softrdma_fast_executed(op) - before, want);
}

void h_expect_async(struct ibv_context *ctx, enum ibv_event_type type, void *obj)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	h_settle();
	assert_int_equal(poll(&pfd, 1, H_TIMEOUT_MS), 1);
	assert_int_equal(ibv_get_async_event(ctx, &ev), 0);
	assert_string_equal(ibv_event_type_str(ev.event_type), ibv_event_type_str(type));
	if (obj)
		assert_ptr_equal(ev.element.qp, obj);
	ibv_ack_async_event(&ev);
}

struct rdma_cm_event *h_cm_get(struct rdma_event_channel *ch)
{
	uint64_t deadline = h_now_ms() + H_TIMEOUT_MS;
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	for (;;) {
		if (softrdma_get_mode() == SOFTRDMA_MODE_STEP)
			softrdma_progress(1);
		if (poll(&pfd, 1, 1) == 1)
			break;
		assert_true(h_now_ms() < deadline);
	}
	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	return ev;
}

void h_cm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = h_cm_get(ch);

	assert_string_equal(rdma_event_str(ev->event), rdma_event_str(type));
	assert_int_equal(rdma_ack_cm_event(ev), 0);
}

void h_cm_listen(struct h_conn *c)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	memset(c, 0, sizeof(*c));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->sch = rdma_create_event_channel();
	c->cch = rdma_create_event_channel();
	assert_non_null(c->sch);
	assert_non_null(c->cch);
	assert_int_equal(rdma_create_id(c->sch, &c->listen, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(c->listen, (struct sockaddr *)&sin), 0);
	assert_int_equal(rdma_listen(c->listen, 8), 0);
	c->port = ntohs(rdma_get_src_port(c->listen));
	assert_true(c->port != 0);
}

static void create_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
			 .max_recv_sge = 2 },
		.qp_type = IBV_QPT_RC,
	};

	assert_int_equal(rdma_create_qp(id, NULL, &qa), 0);
	assert_non_null(id->qp);
}

void h_cm_connect(struct h_conn *c, const void *pdata, uint8_t len)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(c->port) };
	struct rdma_conn_param param = { .private_data = pdata, .private_data_len = len,
					 .responder_resources = 2, .initiator_depth = 2,
					 .retry_count = 3, .rnr_retry_count = 7 };
	struct rdma_cm_event *ev;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(rdma_create_id(c->cch, &c->client, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c->client, NULL, (struct sockaddr *)&sin, 1000), 0);
	h_cm_expect(c->cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(c->client, 1000), 0);
	h_cm_expect(c->cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	create_qp(c->client);
	assert_int_equal(rdma_connect(c->client, &param), 0);
	ev = h_cm_get(c->sch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	c->server = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	create_qp(c->server);
	param.private_data = NULL;
	param.private_data_len = 0;
	assert_int_equal(rdma_accept(c->server, &param), 0);
	h_cm_expect(c->cch, RDMA_CM_EVENT_ESTABLISHED);
	h_cm_expect(c->sch, RDMA_CM_EVENT_ESTABLISHED);
	c->ccq = c->client->recv_cq;
	c->scq = c->server->recv_cq;
}

void h_cm_close(struct h_conn *c)
{
	h_settle();
	if (c->client) {
		rdma_destroy_qp(c->client);
		assert_int_equal(rdma_destroy_id(c->client), 0);
	}
	if (c->server) {
		rdma_destroy_qp(c->server);
		assert_int_equal(rdma_destroy_id(c->server), 0);
	}
	assert_int_equal(rdma_destroy_id(c->listen), 0);
	rdma_destroy_event_channel(c->cch);
	rdma_destroy_event_channel(c->sch);
}

void h_pair_open_reg(struct h_pair *p, const struct h_opts *o, void *const buf[2], size_t len,
		     int access, struct ibv_mr *mr[2])
{
	int i;

	h_pair_open(p, o);
	for (i = 0; i < 2; i++)
		mr[i] = h_reg(p->pd, buf[i], len, access);
}

void h_pair_close_reg(struct h_pair *p, struct ibv_mr *mr[2])
{
	struct ibv_wc wc[64];
	int i;

	h_settle();
	for (i = 0; i < 2; i++) {
		while (ibv_poll_cq(p->cq[i], 64, wc) > 0)
			;
		assert_int_equal(ibv_dereg_mr(mr[i]), 0);
	}
	h_pair_close(p);
}

void h_pair_open_bufs(struct h_pair *p, const struct h_opts *o, uint8_t *buf[2], size_t len,
		      int access, struct ibv_mr *mr[2])
{
	void *bufs[2];
	int i;

	for (i = 0; i < 2; i++) {
		buf[i] = calloc(1, len);
		assert_non_null(buf[i]);
		bufs[i] = buf[i];
	}
	h_pair_open_reg(p, o, bufs, len, access, mr);
}

void h_pair_close_bufs(struct h_pair *p, uint8_t *buf[2], struct ibv_mr *mr[2])
{
	h_pair_close_reg(p, mr);
	free(buf[0]);
	free(buf[1]);
	buf[0] = buf[1] = NULL;
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rawpeer.h"

#define SEND_WRID 0xfffffffful

static long long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int wait_event(struct rawpeer *rp, enum rdma_cm_event_type want, int timeout_ms)
{
	struct pollfd pfd = { .fd = rp->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int rc;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return -ETIMEDOUT;
	if (rdma_get_cm_event(rp->ch, &ev))
		return -errno;
	rc = ev->event == want ? 0 : -ECONNREFUSED;
	if (!rc && want == RDMA_CM_EVENT_ESTABLISHED && ev->param.conn.private_data) {
		rp->pdata_len = ev->param.conn.private_data_len;
		if (rp->pdata_len > sizeof(rp->pdata))
			rp->pdata_len = sizeof(rp->pdata);
		memcpy(rp->pdata, ev->param.conn.private_data, rp->pdata_len);
	}
	rdma_ack_cm_event(ev);
	return rc;
}

static int post_recv(struct rawpeer *rp, unsigned int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(rp->mem + (size_t)i * RAWPEER_BUF),
		.length = RAWPEER_BUF,
		.lkey = rp->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(rp->id->qp, &wr, &bad) ? -EIO : 0;
}

int rawpeer_connect(struct rawpeer *rp, const struct sockaddr *addr, const void *pdata,
		    size_t pdata_len, uint8_t rnr_retry)
{
	struct ibv_qp_init_attr qpa = { 0 };
	struct rdma_conn_param param = { 0 };
	unsigned int i;
	int rc;

	memset(rp, 0, sizeof(*rp));
	rp->ch = rdma_create_event_channel();
	if (!rp->ch)
		return -ENODEV;
	if (rdma_create_id(rp->ch, &rp->id, rp, RDMA_PS_TCP))
		return -errno;
	if (rdma_resolve_addr(rp->id, NULL, (struct sockaddr *)addr, 2000))
		return -errno;
	rc = wait_event(rp, RDMA_CM_EVENT_ADDR_RESOLVED, 2000);
	if (rc)
		return rc;
	if (rdma_resolve_route(rp->id, 2000))
		return -errno;
	rc = wait_event(rp, RDMA_CM_EVENT_ROUTE_RESOLVED, 2000);
	if (rc)
		return rc;
	rp->pd = ibv_alloc_pd(rp->id->verbs);
	rp->cq = ibv_create_cq(rp->id->verbs, 64, NULL, NULL, 0);
	rp->mem = calloc(RAWPEER_RECVS + 1, RAWPEER_BUF);
	if (!rp->pd || !rp->cq || !rp->mem)
		return -ENOMEM;
	rp->mr = ibv_reg_mr(rp->pd, rp->mem, (size_t)(RAWPEER_RECVS + 1) * RAWPEER_BUF,
			    IBV_ACCESS_LOCAL_WRITE);
	if (!rp->mr)
		return -ENOMEM;
	qpa.send_cq = rp->cq;
	qpa.recv_cq = rp->cq;
	qpa.qp_type = IBV_QPT_RC;
	qpa.sq_sig_all = 1;
	qpa.cap.max_send_wr = 16;
	qpa.cap.max_recv_wr = RAWPEER_RECVS;
	qpa.cap.max_send_sge = 1;
	qpa.cap.max_recv_sge = 1;
	if (rdma_create_qp(rp->id, rp->pd, &qpa))
		return -errno;
	for (i = 0; i < RAWPEER_RECVS; i++)
		if (post_recv(rp, i))
			return -EIO;
	param.private_data = pdata;
	param.private_data_len = (uint8_t)pdata_len;
	param.rnr_retry_count = rnr_retry;
	param.retry_count = 6;
	if (rdma_connect(rp->id, &param))
		return -errno;
	return wait_event(rp, RDMA_CM_EVENT_ESTABLISHED, 3000);
}

void rawpeer_close(struct rawpeer *rp)
{
	if (rp->id && rp->id->qp) {
		rdma_disconnect(rp->id);
		rdma_destroy_qp(rp->id);
	}
	if (rp->mr)
		ibv_dereg_mr(rp->mr);
	if (rp->cq)
		ibv_destroy_cq(rp->cq);
	if (rp->pd)
		ibv_dealloc_pd(rp->pd);
	if (rp->id)
		rdma_destroy_id(rp->id);
	if (rp->ch)
		rdma_destroy_event_channel(rp->ch);
	free(rp->mem);
	memset(rp, 0, sizeof(*rp));
}

/* Poll for one completion, up to @timeout_ms. Returns 1, 0 on timeout. */
static int poll_one(struct rawpeer *rp, struct ibv_wc *wc, int timeout_ms)
{
	long long deadline = ms_now() + timeout_ms;

	for (;;) {
		int n = ibv_poll_cq(rp->cq, 1, wc);

		if (n)
			return n < 0 ? -EIO : 1;
		if (ms_now() > deadline)
			return 0;
		poll(NULL, 0, 1);
	}
}

/* Received messages that arrived while a Send was awaited. */
static struct ibv_wc early[RAWPEER_RECVS];
static unsigned int nearly;

int rawpeer_send(struct rawpeer *rp, const void *buf, size_t len)
{
	unsigned char *sbuf = rp->mem + (size_t)RAWPEER_RECVS * RAWPEER_BUF;
	struct ibv_sge sge = { .addr = (uintptr_t)sbuf, .length = (uint32_t)len, .lkey = rp->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = SEND_WRID, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;

	if (len > RAWPEER_BUF)
		return -EMSGSIZE;
	memcpy(sbuf, buf, len);
	if (ibv_post_send(rp->id->qp, &wr, &bad))
		return -EIO;
	for (;;) {
		if (poll_one(rp, &wc, 3000) != 1)
			return -EIO;
		if (wc.wr_id == SEND_WRID)
			return wc.status == IBV_WC_SUCCESS ? 0 : -EIO;
		if (nearly < RAWPEER_RECVS)
			early[nearly++] = wc;
	}
}

int rawpeer_recv(struct rawpeer *rp, void *buf, size_t max, int timeout_ms)
{
	struct ibv_wc wc;
	size_t len;

	if (nearly) {
		wc = early[0];
		memmove(early, early + 1, --nearly * sizeof(early[0]));
	} else {
		int n = poll_one(rp, &wc, timeout_ms);

		if (n == 0)
			return -ETIMEDOUT;
		if (n < 0)
			return -EIO;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id == SEND_WRID)
		return -EIO;
	len = wc.byte_len < max ? wc.byte_len : max;
	memcpy(buf, rp->mem + wc.wr_id * RAWPEER_BUF, len);
	if (post_recv(rp, (unsigned int)wc.wr_id))
		return -EIO;
	return (int)wc.byte_len;
}

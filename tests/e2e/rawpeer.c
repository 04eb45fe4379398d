/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rawpeer.h"

/* Receives use wr_ids 0..RAWPEER_RECVS-1; everything we send counts up from here. */
#define SEND_WRID_BASE 0x100000000ull

static long long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * Wait for the next CM event on our channel; it must be @want. On a
 * client's ESTABLISHED, keep the server's private data.
 */
static int wait_event(struct rawpeer *rp, enum rdma_cm_event_type want, int timeout_ms,
		      bool keep_pdata)
{
	struct pollfd pfd = { .fd = rp->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int rc;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return -ETIMEDOUT;
	if (rdma_get_cm_event(rp->ch, &ev))
		return -errno;
	rc = ev->event == want ? 0 : -ECONNREFUSED;
	if (!rc && keep_pdata && ev->param.conn.private_data) {
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

/* PD, CQ, buffers and an RC QP on rp->id, with every receive posted. */
static int setup_qp(struct rawpeer *rp)
{
	struct ibv_qp_init_attr qpa = { 0 };
	unsigned int i;

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
	return 0;
}

int rawpeer_connect_opts(struct rawpeer *rp, const struct sockaddr *addr,
			 const struct rawpeer_opts *opts)
{
	struct rdma_conn_param param = { 0 };
	int rc;

	memset(rp, 0, sizeof(*rp));
	rp->ch = rdma_create_event_channel();
	if (!rp->ch)
		return -ENODEV;
	if (rdma_create_id(rp->ch, &rp->id, rp, RDMA_PS_TCP))
		return -errno;
	if (rdma_resolve_addr(rp->id, NULL, (struct sockaddr *)addr, 2000))
		return -errno;
	rc = wait_event(rp, RDMA_CM_EVENT_ADDR_RESOLVED, 2000, false);
	if (rc)
		return rc;
	if (rdma_resolve_route(rp->id, 2000))
		return -errno;
	rc = wait_event(rp, RDMA_CM_EVENT_ROUTE_RESOLVED, 2000, false);
	if (rc)
		return rc;
	rc = setup_qp(rp);
	if (rc)
		return rc;
	param.private_data = opts->pdata;
	param.private_data_len = (uint8_t)opts->pdata_len;
	param.rnr_retry_count = opts->rnr_retry;
	param.responder_resources = opts->responder_resources;
	param.retry_count = 6;
	if (rdma_connect(rp->id, &param))
		return -errno;
	return wait_event(rp, RDMA_CM_EVENT_ESTABLISHED, 3000, true);
}

int rawpeer_connect(struct rawpeer *rp, const struct sockaddr *addr, const void *pdata,
		    size_t pdata_len, uint8_t rnr_retry)
{
	struct rawpeer_opts opts = {
		.pdata = pdata,
		.pdata_len = pdata_len,
		.rnr_retry = rnr_retry,
	};

	return rawpeer_connect_opts(rp, addr, &opts);
}

int rawpeer_listen(struct rawpeer *rp)
{
	struct sockaddr_in sin;

	memset(rp, 0, sizeof(*rp));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rp->ch = rdma_create_event_channel();
	if (!rp->ch)
		return -ENODEV;
	if (rdma_create_id(rp->ch, &rp->listen_id, rp, RDMA_PS_TCP))
		return -errno;
	if (rdma_bind_addr(rp->listen_id, (struct sockaddr *)&sin) ||
	    rdma_listen(rp->listen_id, 4))
		return -errno;
	memcpy(&rp->addr, rdma_get_local_addr(rp->listen_id), sizeof(struct sockaddr_in));
	return 0;
}

int rawpeer_accept(struct rawpeer *rp, const void *pdata, size_t pdata_len, int timeout_ms)
{
	struct pollfd pfd = { .fd = rp->ch->fd, .events = POLLIN };
	struct rdma_conn_param param = { 0 };
	struct rdma_cm_event *ev;
	uint8_t depth;
	int rc;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return -ETIMEDOUT;
	if (rdma_get_cm_event(rp->ch, &ev))
		return -errno;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rdma_ack_cm_event(ev);
		return -EPROTO;
	}
	rp->id = ev->id;
	rp->pdata_len = 0;
	if (ev->param.conn.private_data) {
		rp->pdata_len = ev->param.conn.private_data_len;
		if (rp->pdata_len > sizeof(rp->pdata))
			rp->pdata_len = sizeof(rp->pdata);
		memcpy(rp->pdata, ev->param.conn.private_data, rp->pdata_len);
	}
	/* The request seen from here: the client's responder resources are our depth. */
	depth = ev->param.conn.initiator_depth;
	rdma_ack_cm_event(ev);
	rc = setup_qp(rp);
	if (rc)
		return rc;
	param.private_data = pdata;
	param.private_data_len = (uint8_t)pdata_len;
	param.initiator_depth = depth;
	param.responder_resources = 0;
	param.rnr_retry_count = 0;
	if (rdma_accept(rp->id, &param))
		return -errno;
	return wait_event(rp, RDMA_CM_EVENT_ESTABLISHED, timeout_ms, false);
}

static void *accept_main(void *arg)
{
	struct rawpeer *rp = arg;

	rp->accept_rc = rawpeer_accept(rp, rp->accept_has_pdata ? rp->accept_pdata : NULL,
				       rp->accept_pdata_len, 5000);
	return NULL;
}

int rawpeer_accept_start(struct rawpeer *rp, const void *pdata, size_t pdata_len)
{
	int rc;

	if (pdata_len > sizeof(rp->accept_pdata))
		return -EINVAL;
	rp->accept_has_pdata = pdata != NULL;
	rp->accept_pdata_len = pdata ? pdata_len : 0;
	if (pdata)
		memcpy(rp->accept_pdata, pdata, pdata_len);
	rc = -pthread_create(&rp->accept_thread, NULL, accept_main, rp);
	if (rc == 0)
		rp->accepting = true;
	return rc;
}

int rawpeer_accept_join(struct rawpeer *rp)
{
	if (!rp->accepting)
		return -EINVAL;
	pthread_join(rp->accept_thread, NULL);
	rp->accepting = false;
	return rp->accept_rc;
}

int rawpeer_serve_client(struct rawpeer *rp, struct rpcrdma_clnt_attr *attr, const void *pdata,
			 size_t pdata_len, struct rpcrdma_clnt **clnt)
{
	int rc, accepted;

	rc = rawpeer_listen(rp);
	if (rc)
		return rc;
	rc = rawpeer_accept_start(rp, pdata, pdata_len);
	if (rc)
		return rc;
	attr->addr = (const struct sockaddr *)&rp->addr;
	rc = rpcrdma_clnt_connect(attr, clnt);
	accepted = rawpeer_accept_join(rp);
	return rc ? rc : accepted;
}

void rawpeer_close(struct rawpeer *rp)
{
	unsigned int i;

	if (rp->accepting)
		rawpeer_accept_join(rp);
	if (rp->id && rp->id->qp) {
		rdma_disconnect(rp->id);
		rdma_destroy_qp(rp->id);
	}
	for (i = 0; i < rp->nmrs; i++)
		ibv_dereg_mr(rp->mrs[i]);
	if (rp->mr)
		ibv_dereg_mr(rp->mr);
	if (rp->cq)
		ibv_destroy_cq(rp->cq);
	if (rp->pd)
		ibv_dealloc_pd(rp->pd);
	if (rp->id)
		rdma_destroy_id(rp->id);
	if (rp->listen_id)
		rdma_destroy_id(rp->listen_id);
	if (rp->ch)
		rdma_destroy_event_channel(rp->ch);
	free(rp->mem);
	memset(rp, 0, sizeof(*rp));
}

struct ibv_mr *rawpeer_reg(struct rawpeer *rp, void *addr, size_t len, int access)
{
	struct ibv_mr *mr;

	if (!rp->pd || rp->nmrs == RAWPEER_MAX_MRS)
		return NULL;
	mr = ibv_reg_mr(rp->pd, addr, len, access);
	if (mr)
		rp->mrs[rp->nmrs++] = mr;
	return mr;
}

struct ibv_mr *rawpeer_reg_sink(struct rawpeer *rp, void *addr, size_t len)
{
	int access = IBV_ACCESS_LOCAL_WRITE;

	/* As any iWARP server must: Read responses land in the sink by its STag. */
	if (rp->pd && rp->pd->context->device->transport_type == IBV_TRANSPORT_IWARP)
		access |= IBV_ACCESS_REMOTE_WRITE;
	return rawpeer_reg(rp, addr, len, access);
}

/* Poll for one completion, up to @timeout_ms. Returns 1, 0 on timeout, -EIO. */
static int poll_one(struct rawpeer *rp, struct ibv_wc *wc, int timeout_ms)
{
	long long deadline = ms_now() + timeout_ms;

	for (;;) {
		int n = ibv_poll_cq(rp->cq, 1, wc);

		if (n)
			return n < 0 ? -EIO : 1;
		/* 0 is a look, not a wait: a fuzzer polls this once per loop. */
		if (timeout_ms <= 0 || ms_now() > deadline)
			return 0;
		poll(NULL, 0, 1);
	}
}

/*
 * Post @wr (its wr_id assigned here) and wait for its completion, keeping
 * receive completions that come first for rawpeer_recv(). Returns the
 * completion's status or -errno.
 */
static int post_wait(struct rawpeer *rp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->wr_id = SEND_WRID_BASE + rp->next_wrid++;
	wr->send_flags |= IBV_SEND_SIGNALED;
	if (!rp->id || !rp->id->qp || ibv_post_send(rp->id->qp, wr, &bad))
		return -EIO;
	for (;;) {
		int n = poll_one(rp, &wc, 3000);

		if (n == 0)
			return -ETIMEDOUT;
		if (n < 0)
			return -EIO;
		if (wc.wr_id == wr->wr_id)
			return (int)wc.status;
		if (wc.wr_id < RAWPEER_RECVS && rp->nearly < RAWPEER_RECVS)
			rp->early[rp->nearly++] = wc;
	}
}

static int send_op(struct rawpeer *rp, const void *buf, size_t len, enum ibv_wr_opcode op,
		   uint32_t rkey)
{
	unsigned char *sbuf = rp->mem + (size_t)RAWPEER_RECVS * RAWPEER_BUF;
	struct ibv_sge sge = {
		.addr = (uintptr_t)sbuf,
		.length = (uint32_t)len,
		.lkey = rp->mr->lkey,
	};
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op };

	if (len > RAWPEER_BUF)
		return -EMSGSIZE;
	memcpy(sbuf, buf, len);
	if (op == IBV_WR_SEND_WITH_INV)
		wr.invalidate_rkey = rkey;
	return post_wait(rp, &wr);
}

int rawpeer_send(struct rawpeer *rp, const void *buf, size_t len)
{
	int rc = send_op(rp, buf, len, IBV_WR_SEND, 0);

	if (rc == -EMSGSIZE)
		return rc;
	return rc == IBV_WC_SUCCESS ? 0 : -EIO;
}

int rawpeer_send_inv(struct rawpeer *rp, const void *buf, size_t len, uint32_t rkey)
{
	return send_op(rp, buf, len, IBV_WR_SEND_WITH_INV, rkey);
}

int rawpeer_rdma(struct rawpeer *rp, enum ibv_wr_opcode op, void *local, uint32_t len,
		 uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = len };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op };
	const unsigned char *p = local;
	unsigned int i;

	if (op != IBV_WR_RDMA_READ && op != IBV_WR_RDMA_WRITE)
		return -EINVAL;
	for (i = 0; i < rp->nmrs; i++) {
		const unsigned char *base = rp->mrs[i]->addr;

		if (p >= base && len <= rp->mrs[i]->length &&
		    (size_t)(p - base) <= rp->mrs[i]->length - len)
			break;
	}
	if (i == rp->nmrs)
		return -EINVAL;
	sge.lkey = rp->mrs[i]->lkey;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return post_wait(rp, &wr);
}

int rawpeer_recv(struct rawpeer *rp, void *buf, size_t max, int timeout_ms)
{
	long long deadline = ms_now() + timeout_ms;
	struct ibv_wc wc;
	size_t len;

	for (;;) {
		if (rp->nearly) {
			wc = rp->early[0];
			memmove(rp->early, rp->early + 1, --rp->nearly * sizeof(rp->early[0]));
		} else {
			long long left = deadline - ms_now();
			int n = poll_one(rp, &wc, left > 0 ? (int)left : 0);

			if (n == 0)
				return -ETIMEDOUT;
			if (n < 0)
				return -EIO;
		}
		/* A late completion of something we sent: not a message. */
		if (wc.wr_id >= RAWPEER_RECVS) {
			if (wc.status != IBV_WC_SUCCESS)
				return -EIO;
			continue;
		}
		break;
	}
	if (wc.status != IBV_WC_SUCCESS)
		return -EIO;
	len = wc.byte_len < max ? wc.byte_len : max;
	memcpy(buf, rp->mem + wc.wr_id * RAWPEER_BUF, len);
	if (post_recv(rp, (unsigned int)wc.wr_id))
		return -EIO;
	return (int)wc.byte_len;
}

int rawpeer_recv_call(struct rawpeer *rp, struct rawpeer_call *call, int timeout_ms)
{
	memset(&call->hdr, 0, sizeof(call->hdr));
	call->len = rawpeer_recv(rp, call->buf, sizeof(call->buf), timeout_ms);
	if (call->len < 0)
		return call->len;
	if ((size_t)call->len > sizeof(call->buf))
		return -EMSGSIZE;
	return rpcrdma_hdr_decode(call->buf, (size_t)call->len, NULL, &call->hdr);
}

long rawpeer_pull(struct rawpeer *rp, const struct rpcrdma_hdr *hdr, uint32_t position,
		  unsigned char *dst, size_t max)
{
	struct rpcrdma_read_segment rs;
	bool found = false;
	size_t off = 0;
	uint32_t i;

	for (i = 0; i < hdr->read_segs; i++) {
		rpcrdma_hdr_read_segment(hdr, i, &rs);
		if (rs.position != position)
			continue;
		found = true;
		if (rs.seg.length > max - off)
			return -EMSGSIZE;
		if (rs.seg.length && rawpeer_rdma(rp, IBV_WR_RDMA_READ, dst + off, rs.seg.length,
						  rs.seg.offset, rs.seg.handle) != IBV_WC_SUCCESS)
			return -EIO;
		off += rs.seg.length;
	}
	return found ? (long)off : -ENOENT;
}

int rawpeer_push(struct rawpeer *rp, const struct rpcrdma_chunk *chunk, const unsigned char *src,
		 size_t len, struct rpcrdma_segment *echo)
{
	size_t off = 0;
	uint32_t i;

	if (len > chunk->total)
		return -EMSGSIZE;
	for (i = 0; i < chunk->nsegs; i++) {
		uint32_t n;

		rpcrdma_chunk_segment(chunk, i, &echo[i]);
		n = len - off < echo[i].length ? (uint32_t)(len - off) : echo[i].length;
		if (n && rawpeer_rdma(rp, IBV_WR_RDMA_WRITE, (void *)(src + off), n, echo[i].offset,
				      echo[i].handle) != IBV_WC_SUCCESS)
			return -EIO;
		echo[i].length = n;
		off += n;
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The wire over links: requests and answers between processes (wire_net.h).
 * A request carries the wire_req's fields and its payload, read from the
 * requester's registered memory when the net thread writes it (as an HCA
 * reads the buffers when it transmits); the answer carries the status and,
 * for a READ, the bytes read, read from the responder's memory the same way. The token (the WQE's posting sequence) matches an
 * answer to the request its QP still waits for; anything else is dropped.
 */
#include <stdlib.h>
#include <string.h>

#include "net.h"
#include "wire_net.h"

struct net_wire_req {
	struct wire_req_head head;
	uint32_t carries_payload;
	/* then the payload: length bytes, unless a READ */
};

struct net_wire_resp {
	uint64_t token;
	uint32_t src_qpn;	/* the requester */
	uint32_t status;
	uint32_t data_len;
	uint32_t rnr_timer;	/* RNR NAK: the responder's min_rnr_timer */
	/* then the READ data: data_len bytes */
};

void wire_req_head_write(struct wire_req_head *h, const struct wire_req *req)
{
	h->token = req->token;
	h->raddr = req->raddr;
	h->op = req->op;
	h->src_qpn = req->src_qpn;
	h->dst_qpn = req->dst_qpn;
	h->solicited = req->solicited;
	h->imm = req->imm;
	h->inv_rkey = req->inv_rkey;
	h->rkey = req->rkey;
	h->length = req->length;
	h->psn = req->psn;
	h->npsn = req->npsn;
}

void wire_req_head_read(struct wire_req *req, const struct wire_req_head *h)
{
	memset(req, 0, sizeof(*req));
	req->op = h->op;
	req->src_qpn = h->src_qpn;
	req->dst_qpn = h->dst_qpn;
	req->solicited = h->solicited != 0;
	req->imm = h->imm;
	req->inv_rkey = h->inv_rkey;
	req->rkey = h->rkey;
	req->raddr = h->raddr;
	req->length = h->length;
	req->token = h->token;
	req->psn = h->psn;
	req->npsn = h->npsn;
}

struct net_link *wire_route_locked(struct wire_qp *qp)
{
	struct net_link *link;

	if (qp->remote || qp->cm_made)
		return qp->remote;
	/* A QP the application made itself and connected through rdma_cm's ids. */
	if (wire_cm && net_any_link_locked()) {
		link = wire_up->qp_link(qp);
		if (link)
			return link;
	}
	/* Or to a number it was given: the process that owns the number. */
	return net_qpn_route_locked(qp->dest_qpn);
}

/*
 * Does @qp answer @req, which came over @link? Over an rdma_cm connection,
 * the QP of that connection does. A QP the application connected itself
 * answers its destination QP over its id's link, or over any link between
 * the two processes' blocks of numbers (net_qpn.c): each side sends over
 * the link it found when it moved to RTR, which may be either (a QP moved
 * to RTR before rdma_accept() told rdma_cm its number takes the latter).
 */
static bool serves_locked(struct wire_qp *qp, struct net_link *link, const struct wire_req *req)
{
	bool own_dest = !qp->cm_made && qp->dest_qpn == req->src_qpn;

	if (link->qpn)
		return own_dest && wire_qpn_foreign_locked(req->src_qpn);
	if (wire_route_locked(qp) == link)
		return true;
	return own_dest && wire_cm && wire_up->qp_link(qp) == link;
}

void wire_net_send_locked(struct wire_qp *qp, struct net_link *link, const struct wire_req *req,
			  struct wire_resp *resp)
{
	bool payload = req->op != WIRE_READ;
	struct net_wire_req *m;
	struct net_buf *buf;

	(void)qp;
	buf = link->dead ? NULL : net_buf_new_locked(NET_MSG_WIRE_REQ, (uint32_t)sizeof(*m));
	if (!buf) {
		resp->status = WIRE_NO_ANSWER;
		return;
	}
	m = net_body(buf);
	memset(m, 0, sizeof(*m));
	wire_req_head_write(&m->head, req);
	m->carries_payload = payload;
	if (payload && !net_buf_add_locked(buf, req->segs, req->nsegs, req->length)) {
		net_buf_free_locked(buf);
		resp->status = WIRE_NO_ANSWER;
		return;
	}
	net_send_locked(link, buf);
	resp->status = WIRE_PENDING;
}

static void send_answer_locked(struct net_link *link, const struct net_wire_req *m,
			       const struct wire_resp *resp)
{
	uint32_t data_len = resp->status == WIRE_ACK && m->head.op == WIRE_READ ? resp->data.len : 0;
	struct net_wire_resp *a;
	struct net_buf *buf;

	/*
	 * A requester that hears nothing retries: dropping an answer is
	 * allowed. A silenced responder's is sent, for the requester's timer.
	 */
	if (resp->status == WIRE_NO_ANSWER && !resp->silenced)
		return;
	buf = net_buf_new_locked(NET_MSG_WIRE_RESP, (uint32_t)sizeof(*a));
	if (!buf)
		return;
	a = net_body(buf);
	memset(a, 0, sizeof(*a));
	a->token = m->head.token;
	a->src_qpn = m->head.src_qpn;
	a->status = resp->status;
	a->data_len = data_len;
	a->rnr_timer = resp->rnr_timer;
	if (data_len && !net_buf_add_locked(buf, &resp->data, 1, data_len)) {
		net_buf_free_locked(buf);
		return;
	}
	net_send_locked(link, buf);
}

void wire_net_serve_locked(struct net_link *link, const void *body, uint32_t len)
{
	const struct net_wire_req *m = body;
	struct wire_resp resp = { .status = WIRE_NO_ANSWER };
	struct wire_req req;

	if (len < sizeof(*m) || m->head.op > WIRE_READ ||
	    len != sizeof(*m) + (m->carries_payload ? m->head.length : 0))
		return;
	wire_req_head_read(&req, &m->head);
	if (m->carries_payload && m->head.length) {
		req.segs[0] = wire_seg_local(m + 1, m->head.length);
		req.nsegs = 1;
	}
	if (wire_net_respond_locked(link, &req, &resp))
		send_answer_locked(link, m, &resp);
}

bool wire_net_respond_locked(struct net_link *link, struct wire_req *req, struct wire_resp *resp)
{
	struct wire_qp *qp = wire_up->qp_lookup(req->dst_qpn);

	if (!qp || !serves_locked(qp, link, req))
		return true;
	/*
	 * Sent with nothing of its QP awaiting an answer: every request
	 * before it was served, so the PSNs it is ahead by are those of the
	 * Writes and Reads its requester served one-sidedly (wire_shm_keys.h).
	 */
	if (req->psn_sync && psn_order(req->psn, qp->epsn) == PSN_AHEAD)
		qp->epsn = req->psn;
	switch (psn_order(req->psn, qp->epsn)) {
	case PSN_AHEAD:
		/*
		 * One before it went unexecuted (an RNR NAK, or it was lost):
		 * the requester goes back N to it, and sends this again.
		 */
		return false;
	case PSN_BEHIND:
		/*
		 * A duplicate (IBA's responder rules): executed already, so a Send or
		 * Write is only acknowledged again; a Read is executed again,
		 * as it changes nothing here.
		 */
		qp->duplicates++;
		if (req->op != WIRE_READ) {
			resp->status = WIRE_ACK;
			return true;
		}
		break;
	case PSN_EXPECTED:
		break;
	}
	wire_up->qp_dgid(qp, &req->dgid);
	wire_up->receive(qp, req, resp);
	/* The requester is gone mid-request: what it sent after it must not arrive. */
	if (resp->source_lost) {
		net_link_dead_locked(link);
		return false;
	}
	/* Not executed (an RNR NAK, a silenced or absent responder): expected again. */
	if (psn_order(req->psn, qp->epsn) == PSN_EXPECTED && resp->status != WIRE_NAK_RNR &&
	    resp->status != WIRE_NO_ANSWER)
		qp->epsn = (qp->epsn + req->npsn) & WIRE_PSN_MASK;
	return true;
}

void wire_net_answer_locked(struct net_link *link, const void *body, uint32_t len)
{
	const struct net_wire_resp *a = body;
	struct wire_resp resp = { .placed = false };
	struct wire_qp *qp;

	if (len < sizeof(*a) || len != sizeof(*a) + a->data_len || a->status > WIRE_NO_ANSWER)
		return;
	qp = wire_up->qp_lookup(a->src_qpn);
	if (!qp || qp->remote != link)
		return;
	resp.status = a->status;
	resp.data = wire_seg_local(a + 1, a->data_len);
	resp.rnr_timer = (uint8_t)(a->rnr_timer & 31);
	wire_up->answer(qp, a->token, &resp);
}

static void socket_transmit(struct wire_qp *qp, const struct wire_req *req, struct wire_resp *resp)
{
	wire_net_send_locked(qp, qp->remote, req, resp);
}

static void socket_detach(struct wire_qp *qp)
{
	/* An answer still on its way finds no QP waiting for it, and is dropped. */
	(void)qp;
}

/* The net thread and the links are the socket's, which shared memory travels beside. */
const struct wire_transport wire_socket = {
	.name = "socket",
	.transmit = socket_transmit,
	.detach = socket_detach,
	.mem_detach = net_detach_locked,
	.fork = net_fork,
	.stop = net_stop,
	.free = net_free,
};

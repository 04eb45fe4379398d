/* SPDX-License-Identifier: MIT */
/*
 * wire_transmit(): a request whose connection goes to another process travels
 * over its link (wire_net.c); otherwise the responder is a QP in this
 * process, found by number and cached on the requester. The capture (tap.c)
 * sees every request here and every answer where it is made.
 */
#include "soft.h"
#include "tap.h"
#include "wire_net.h"

void wire_transmit(struct soft_qp *requester, const struct wire_req *req,
		   struct wire_resp *resp)
{
	struct net_link *link = wire_route_locked(requester);
	struct soft_qp *peer = requester->peer;

	resp->data = NULL;
	resp->data_len = 0;
	tap_request_locked(requester, req);
	if (link) {
		wire_net_send_locked(requester, link, req, resp);
		return;
	}
	if (!peer || peer->qp.qp_num != req->dst_qpn) {
		peer = qp_lookup_locked(req->dst_qpn);
		requester->peer = peer;
	}
	if (!peer) {
		resp->status = WIRE_NO_ANSWER;
		return;
	}
	responder_receive(peer, req, resp);
	tap_response_locked(peer, req, resp);
}

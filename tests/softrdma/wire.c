/* SPDX-License-Identifier: MIT */
/*
 * The in-process wire: every GID of softrdma0 is local, so the responder is a
 * QP in this process, found by number and cached on the requester. A socket
 * transport would look at req->dgid here and forward non-local requests.
 */
#include "soft.h"

void wire_transmit(struct soft_qp *requester, const struct wire_req *req,
		   struct wire_resp *resp)
{
	struct soft_qp *peer = requester->peer;

	if (!peer || peer->qp.qp_num != req->dst_qpn) {
		peer = qp_lookup_locked(req->dst_qpn);
		requester->peer = peer;
	}
	if (!peer) {
		resp->status = WIRE_NO_ANSWER;
		resp->data = NULL;
		resp->data_len = 0;
		return;
	}
	responder_receive(peer, req, resp);
}

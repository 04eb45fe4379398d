/* SPDX-License-Identifier: MIT */
/*
 * wire_transmit(): a request whose connection goes to another process travels
 * over its link (wire_net.c); otherwise the responder is a QP in this
 * process, found by number and cached on the requester. The capture (tap.c)
 * sees every request here and every answer where it is made.
 */
#include <string.h>

#include "soft.h"
#include "tap.h"
#include "wire_net.h"

void wire_transmit(struct soft_qp *requester, const struct wire_req *req,
		   struct wire_resp *resp)
{
	struct net_link *link = wire_route_locked(requester);
	struct soft_qp *peer = requester->peer;

	resp->data = wire_seg_local(NULL, 0);
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

void wire_pull(const struct wire_seg *seg, uint32_t off, void *dst, uint32_t len)
{
	switch (seg->owner) {
	case WIRE_OWNER_LOCAL:
		memcpy(dst, (const uint8_t *)(uintptr_t)seg->addr + off, len);
		break;
	}
}

void wire_pull_msg(const struct wire_seg *segs, unsigned int nsegs, uint32_t off, void *dst,
		   uint32_t len)
{
	uint8_t *out = dst;
	unsigned int i;

	for (i = 0; i < nsegs && len; i++) {
		uint32_t n;

		if (off >= segs[i].len) {
			off -= segs[i].len;
			continue;
		}
		n = segs[i].len - off < len ? segs[i].len - off : len;
		wire_pull(&segs[i], off, out, n);
		out += n;
		len -= n;
		off = 0;
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * The wire over links (wire_net.c): a requester whose connection goes to
 * another process sends its request over the connection's link; the peer's
 * net thread has its responder execute it (wire_ops.receive) and sends the
 * answer back, which completes the requester's WQE (wire_ops.answer).
 * Everything here is called with the fabric lock held.
 */
#ifndef SOFT_WIRE_NET_H
#define SOFT_WIRE_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

struct net_link;

/* The link qp's requests travel on, or NULL for a responder in this process. */
struct net_link *wire_route_locked(struct wire_qp *qp);
/* Send req over link: resp is WIRE_PENDING, or WIRE_NO_ANSWER if the link is dead. */
void wire_net_send_locked(struct wire_qp *qp, struct net_link *link, const struct wire_req *req,
			  struct wire_resp *resp);
/* The net thread read a request or an answer from link. */
void wire_net_serve_locked(struct net_link *link, const void *body, uint32_t len);
void wire_net_answer_locked(struct net_link *link, const void *body, uint32_t len);
/*
 * Serve @req, which came over @link (its socket or its ring), on the QP
 * of the link's connection: @resp is the answer to send back. False if it
 * is to be dropped unanswered (go back N after an RNR NAK).
 */
bool wire_net_respond_locked(struct net_link *link, struct wire_req *req, struct wire_resp *resp);

#endif /* SOFT_WIRE_NET_H */

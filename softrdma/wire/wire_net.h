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

/*
 * A request's fields as a record carries them to another process, at the
 * head of the socket's message (wire_net.c) and of the shared-memory ring's
 * record (wire_shm.c). The reader validates op and length before use.
 */
struct wire_req_head {
	uint64_t token;
	uint64_t raddr;
	uint32_t op;
	uint32_t src_qpn;
	uint32_t dst_qpn;
	uint32_t solicited;
	uint32_t imm;
	uint32_t inv_rkey;
	uint32_t rkey;
	uint32_t length;
	uint32_t psn;
	uint32_t npsn;
};

/* Fill @h from @req (the caller zeroed the record). */
void wire_req_head_write(struct wire_req_head *h, const struct wire_req *req);
/* A request with @h's fields and nothing else: no payload, no segments. */
void wire_req_head_read(struct wire_req *req, const struct wire_req_head *h);

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
 * of the link's connection, in PSN order: each request is executed once,
 * a duplicate is answered again without being executed again (a Read is
 * read again), and one ahead of the expected PSN is dropped. @resp is the
 * answer to send back; false if it is to be dropped unanswered.
 */
bool wire_net_respond_locked(struct net_link *link, struct wire_req *req, struct wire_resp *resp);

#endif /* SOFT_WIRE_NET_H */

/* SPDX-License-Identifier: MIT */
/*
 * Synchronous rdma_cm ids (created without a channel) and the endpoint calls
 * built on them, as librdmacm has them: a sync id has a channel of its own;
 * each call that starts something (resolve, connect, accept, disconnect)
 * waits for the event that ends it, keeps it in id->event until the next
 * call or rdma_destroy_id acks it, and fails with the event's status.
 * rdma_create_ep, rdma_get_request and rdma_destroy_ep drive such ids.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "cm.h"

/* The next event on ch. In STEP mode nothing moves unless someone steps: we do. */
static int get_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

	while (softrdma_get_mode() == SOFTRDMA_MODE_STEP && poll(&pfd, 1, 0) != 1) {
		/* Idle here: what we wait for may come from another process. */
		if (softrdma_progress(1) == 0)
			poll(&pfd, 1, 10);
	}
	return rdma_get_cm_event(ch, ev);
}

int cm_complete(struct soft_cm_id *sid)
{
	struct rdma_cm_event *ev;

	if (!sid->sync)
		return 0;
	if (sid->id.event) {
		rdma_ack_cm_event(sid->id.event);
		sid->id.event = NULL;
	}
	if (get_event(sid->id.channel, &ev))
		return -1;
	sid->id.event = ev;
	if (!ev->status)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		errno = ECONNREFUSED;
	else
		errno = ev->status < 0 ? -ev->status : ev->status;
	return -1;
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct soft_cm_id *l = to_scm(listen);
	struct rdma_cm_event *ev;

	if (!l->sync || !id) {
		errno = EINVAL;
		return -1;
	}
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (get_event(listen->channel, &ev))
		return -1;
	if (ev->status || ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		errno = ev->status ? (ev->status < 0 ? -ev->status : ev->status) : EINVAL;
		listen->event = ev;
		return -1;
	}
	/* rdma_create_ep() of the listener gave the QP attributes for every request. */
	if (l->ep_qp_attr) {
		struct ibv_qp_init_attr attr = *l->ep_qp_attr;

		if (rdma_create_qp(ev->id, listen->pd, &attr)) {
			listen->event = ev;
			return -1;
		}
	}
	*id = ev->id;
	ev->id->event = ev;
	return 0;
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static int passive_ep(struct rdma_cm_id *cm_id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		      struct ibv_qp_init_attr *qp_init_attr)
{
	struct soft_cm_id *sid = to_scm(cm_id);

	if (rdma_bind_addr(cm_id, res->ai_src_addr))
		return -1;
	if (pd)
		cm_id->pd = pd;
	if (qp_init_attr) {
		sid->ep_qp_attr = malloc(sizeof(*sid->ep_qp_attr));
		if (!sid->ep_qp_attr) {
			errno = ENOMEM;
			return -1;
		}
		*sid->ep_qp_attr = *qp_init_attr;
		sid->ep_qp_attr->qp_type = res->ai_qp_type;
	}
	return 0;
}

static int active_ep(struct rdma_cm_id *cm_id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		     struct ibv_qp_init_attr *qp_init_attr)
{
	if (rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000) ||
	    rdma_resolve_route(cm_id, 2000))
		return -1;
	if (qp_init_attr) {
		qp_init_attr->qp_type = res->ai_qp_type;
		if (rdma_create_qp(cm_id, pd, qp_init_attr))
			return -1;
	}
	return 0;
}

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	int ret;

	if (!id || !res) {
		errno = EINVAL;
		return -1;
	}
	/*
	 * RC in the TCP and IB spaces, UD in the UDP space (cm_ud.c) are what
	 * softrdma0 carries; any other pairing is refused as its QP would be.
	 */
	if (res->ai_qp_type != (res->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC)) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (rdma_create_id(NULL, &cm_id, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	if (res->ai_flags & RAI_PASSIVE)
		ret = passive_ep(cm_id, res, pd, qp_init_attr);
	else
		ret = active_ep(cm_id, res, pd, qp_init_attr);
	if (ret) {
		int err = errno;

		rdma_destroy_ep(cm_id);
		errno = err;
		return -1;
	}
	*id = cm_id;
	return 0;
}

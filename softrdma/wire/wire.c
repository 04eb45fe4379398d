/* SPDX-License-Identifier: MIT */
/*
 * wire_transmit() and the transport in this process: a request whose
 * connection goes to another process travels over its link (wire_net.c,
 * wire_socket); otherwise the responder is a QP in this process, found by
 * number and cached on the requester. The capture sees every request as
 * the engine sends it and every answer where the responder makes it.
 */
#include <string.h>

#include "net.h"
#include "wire_net.h"
#include "wire_shm.h"

const struct wire_ops *wire_up;
bool wire_cm;

void wire_set_ops(const struct wire_ops *ops)
{
	wire_up = ops;
}

void wire_set_cm_locked(bool present)
{
	wire_cm = present;
}

/* In this process: the responder is a QP found by number, cached on the requester. */
static void local_transmit(struct wire_qp *requester, const struct wire_req *req,
			   struct wire_resp *resp)
{
	struct wire_qp *peer = requester->peer;

	if (!peer || peer->qpn != req->dst_qpn) {
		peer = wire_up->qp_lookup(req->dst_qpn);
		requester->peer = peer;
	}
	if (!peer) {
		resp->status = WIRE_NO_ANSWER;
		return;
	}
	wire_up->receive(peer, req, resp);
}

static void local_detach(struct wire_qp *qp)
{
	qp->peer = NULL;
}

const struct wire_transport wire_local = {
	.name = "local",
	.transmit = local_transmit,
	.detach = local_detach,
};

void wire_attach_locked(struct wire_qp *qp, struct net_link *link)
{
	if (!link)
		link = wire_route_locked(qp);
	if (link && qp->remote != link) {
		wire_detach_locked(qp);
		net_link_get_locked(link);
		qp->remote = link;
	}
	qp->transport = !link ? &wire_local : shm_link_ready(link) ? &wire_shm : &wire_socket;
	if (qp->transport == &wire_shm)
		shm_link_bind_qp_locked(link, qp);
}

void wire_detach_locked(struct wire_qp *qp)
{
	if (qp->transport)
		qp->transport->detach(qp);
	qp->transport = NULL;
	qp->peer = NULL;
	if (qp->remote) {
		shm_link_unbind_qp_locked(qp->remote, qp);
		net_link_put_locked(qp->remote);
	}
	qp->remote = NULL;
}

bool wire_is_local_locked(struct wire_qp *qp)
{
	/* A QP the application connected to another process finds its link late. */
	if (!qp->transport || qp->transport == &wire_local)
		wire_attach_locked(qp, NULL);
	return qp->transport == &wire_local;
}

bool wire_stays_local_locked(const struct wire_qp *qp)
{
	/* wire_route_locked() finds no link: the attach would change nothing. */
	return qp->transport == &wire_local && !qp->remote &&
	       (qp->cm_made || ((!wire_cm || !net_any_link_locked()) &&
				!wire_qpn_foreign_locked(qp->dest_qpn)));
}

/*
 * A link's shared memory comes up after its first requests may have gone
 * over the socket (a link to a process's block of QP numbers, net_qpn.c,
 * opens at RTR): a requester moves to it once nothing of it is on its way,
 * so that no request overtakes an earlier one. False while it must wait
 * for that: the request is not sent now.
 */
static bool upgrade_locked(struct wire_qp *qp, const struct wire_req *req)
{
	if (qp->transport != &wire_socket || !shm_link_ready(qp->remote))
		return true;
	if (!req->quiet)
		return false;
	qp->transport = &wire_shm;
	shm_link_bind_qp_locked(qp->remote, qp);
	return true;
}

void wire_transmit(struct wire_qp *requester, const struct wire_req *req,
		   struct wire_resp *resp)
{
	wire_is_local_locked(requester);
	resp->data = wire_seg_local(NULL, 0);
	/* A requester that keeps its pipeline full pauses once, for the move. */
	if (!upgrade_locked(requester, req)) {
		resp->status = WIRE_BUSY;
		return;
	}
	requester->transport->transmit(requester, req, resp);
}

bool wire_pull(const struct wire_seg *seg, uint32_t off, void *dst, uint32_t len)
{
	switch (seg->owner) {
	case WIRE_OWNER_LOCAL:
		memcpy(dst, (const uint8_t *)(uintptr_t)seg->addr + off, len);
		return true;
	case WIRE_OWNER_REMOTE:
		return shm_pull(seg->pid, seg->addr + off, dst, len);
	}
	return false;
}

bool wire_place(const struct wire_req *req, void *dst)
{
	/* Over shared memory the requester may copy part of it, from its own process. */
	if (req->shm)
		return shm_place_locked(req, dst);
	return wire_pull_msg(req->segs, req->nsegs, 0, dst, req->length);
}

bool wire_pull_msg(const struct wire_seg *segs, unsigned int nsegs, uint32_t off, void *dst,
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
		if (!wire_pull(&segs[i], off, out, n))
			return false;
		out += n;
		len -= n;
		off = 0;
	}
	return true;
}

/*
 * The hooks go to every transport. Shared memory comes before the socket:
 * at a deregistration its records are copied out first, while the socket's
 * copy-out may drop the lock to wait for memory.
 */
static const struct wire_transport *const transports[] = { &wire_shm, &wire_socket, &wire_local };

#define for_each_transport(t) \
	for (const struct wire_transport *const *t = transports; \
	     t < transports + sizeof(transports) / sizeof(transports[0]); t++)

bool wire_pollable(void)
{
	for_each_transport(t)
		if ((*t)->pollable && (*t)->pollable())
			return true;
	return false;
}

void wire_poll_locked(bool armed)
{
	for_each_transport(t)
		if ((*t)->poll)
			(*t)->poll(armed);
}

void wire_drain_locked(void)
{
	for_each_transport(t)
		if ((*t)->drain)
			(*t)->drain();
}

void wire_arm_locked(struct wire_cq *cq)
{
	for_each_transport(t)
		if ((*t)->arm)
			(*t)->arm(cq);
}

bool wire_raised_locked(struct wire_cq *cq)
{
	bool raised = false;

	/* Every backend hears of it: each may owe the channel a token. */
	for_each_transport(t)
		if ((*t)->raised)
			raised |= (*t)->raised(cq);
	return raised;
}

void wire_mem_detach_locked(struct soft_mr *mr, struct soft_mw *mw)
{
	for_each_transport(t)
		if ((*t)->mem_detach)
			(*t)->mem_detach(mr, mw);
}

void wire_fork(enum wire_fork_stage stage)
{
	for_each_transport(t)
		if ((*t)->fork)
			(*t)->fork(stage);
}

void wire_stop(void)
{
	for_each_transport(t)
		if ((*t)->stop)
			(*t)->stop();
}

void wire_free(void)
{
	for_each_transport(t)
		if ((*t)->free)
			(*t)->free();
}

/* SPDX-License-Identifier: MIT */
/*
 * What the wire may ask of the verbs (struct wire_ops, wire.h): the wire
 * knows a QP by the struct wire_qp in it and a CQ by its struct wire_cq;
 * here they become the verbs' objects again, and the calls go to the
 * responder, the engine, the registrations, the scheduler and rdma_cm.
 * Registered with the wire by fabric.c before the fabric starts.
 */
#include "soft.h"
#include "ud.h"

static struct soft_cq *wire_to_scq(struct wire_cq *wcq)
{
	return container_of(wcq, struct soft_cq, wire);
}

static struct wire_qp *verbs_qp_lookup(uint32_t qpn)
{
	struct soft_qp *qp = qp_lookup_locked(qpn);

	return qp ? &qp->wire : NULL;
}

static void verbs_receive(struct wire_qp *qp, const struct wire_req *req, struct wire_resp *resp)
{
	responder_receive(wire_to_sqp(qp), req, resp);
}

static void verbs_qp_dgid(const struct wire_qp *qp, union ibv_gid *gid)
{
	*gid = wire_to_sqp(qp)->attr.ah_attr.grh.dgid;
}

static void verbs_answer(struct wire_qp *qp, uint64_t token, const struct wire_resp *resp)
{
	engine_answer_locked(wire_to_sqp(qp), token, resp);
}

static bool verbs_cq_armed(struct wire_cq *cq)
{
	return cq_armed(wire_to_scq(cq));
}

static int verbs_cq_channel_fd(struct wire_cq *cq)
{
	struct ibv_comp_channel *channel = wire_to_scq(cq)->cq.channel;

	return channel ? container_of(channel, struct soft_comp_channel, ch)->q.fd : -1;
}

static struct net_link *cm_qp_link(struct wire_qp *qp)
{
	return fab.cm_ops->qp_link(wire_to_sqp(qp));
}

static void cm_link_message(struct net_link *link, const void *msg, uint32_t len)
{
	fab.cm_ops->link_message(link, msg, len);
}

static void cm_link_down(struct net_link *link)
{
	fab.cm_ops->link_down(link);
}

const struct wire_ops fab_wire_ops = {
	.qp_lookup = verbs_qp_lookup,
	.receive = verbs_receive,
	.qp_dgid = verbs_qp_dgid,
	.answer = verbs_answer,
	.link_awaited = engine_link_awaited_locked,
	.link_lost = engine_link_lost_locked,
	.mem_pin = mem_pin_locked,
	.mem_unpin = mem_unpin_locked,
	.cq_armed = verbs_cq_armed,
	.cq_channel_fd = verbs_cq_channel_fd,
	.queue_work = work_queue_locked,
	.qp_link = cm_qp_link,
	.link_message = cm_link_message,
	.link_down = cm_link_down,
	.datagram = ud_link_datagram_locked,
};

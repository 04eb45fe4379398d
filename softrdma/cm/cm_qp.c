/* SPDX-License-Identifier: MIT */
/*
 * The QP of an rdma_cm id: rdma_create_qp and rdma_destroy_qp (with the CQs
 * librdmacm makes when the caller gives none), rdma_init_qp_attr, and the
 * INIT/RTR/RTS sequence that librdmacm runs on accept and on the REP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "cm.h"

static int fail(int err)
{
	errno = err;
	return -1;
}

static void fill_init(const struct soft_cm_id *sid, struct ibv_qp_attr *attr, int *mask)
{
	attr->qp_state = IBV_QPS_INIT;
	attr->pkey_index = 0;
	attr->port_num = 1;
	/* ib_cm grants remote reads only with responder resources to serve them. */
	attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (sid->responder_resources)
		attr->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}

static void fill_rtr(const struct soft_cm_id *sid, struct ibv_qp_attr *attr, int *mask)
{
	attr->qp_state = IBV_QPS_RTR;
	memset(&attr->ah_attr, 0, sizeof(attr->ah_attr));
	attr->ah_attr.is_global = 1;
	attr->ah_attr.grh.dgid = sid->id.route.addr.addr.ibaddr.dgid;
	/* GID 0 is 127.0.0.1, GID 1 is ::1. */
	attr->ah_attr.grh.sgid_index = sid->id.route.addr.src_addr.sa_family == AF_INET6 ? 1 : 0;
	attr->ah_attr.grh.hop_limit = 64;
	attr->ah_attr.grh.traffic_class = sid->path.traffic_class;
	attr->ah_attr.port_num = 1;
	attr->path_mtu = IBV_MTU_1024;
	attr->dest_qp_num = sid->peer_qpn;
	attr->rq_psn = sid->peer_psn;
	attr->max_dest_rd_atomic = sid->responder_resources;
	/*
	 * The kernel's CM gives user space QPs 0 (cm_init_qp_rtr_attr()):
	 * IBA's longest RNR timer, 655.36 ms, which a sender's RNR retries
	 * wait each time this QP has no receive posted.
	 */
	attr->min_rnr_timer = 0;
	*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

static void fill_rts(const struct soft_cm_id *sid, struct ibv_qp_attr *attr, int *mask)
{
	attr->qp_state = IBV_QPS_RTS;
	/* Known before the REP: a passive side may move its own QP to RTS before it accepts. */
	attr->sq_psn = cm_start_psn(sid);
	/* The CM's timeout unless the application set its own (RDMA_OPTION_ID_ACK_TIMEOUT). */
	attr->timeout = sid->ack_timeout_set ? sid->ack_timeout : 14;
	attr->retry_cnt = sid->retry_count;
	attr->rnr_retry = sid->rnr_retry_count;
	attr->max_rd_atomic = sid->initiator_depth;
	*mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
}

static bool negotiated(const struct soft_cm_id *sid)
{
	return sid->state == CM_REQ_RCVD || sid->state == CM_ACCEPTED ||
	       sid->state == CM_REP_RCVD || sid->state == CM_ESTABLISHED;
}

int cm_qp_init_attr_locked(struct soft_cm_id *sid, struct ibv_qp_attr *attr, int *mask)
{
	if (cm_id_is_ud(sid))
		return cm_ud_init_attr_locked(sid, attr, mask);
	switch (attr->qp_state) {
	case IBV_QPS_INIT:
		if (!sid->id.verbs)
			return EINVAL;
		fill_init(sid, attr, mask);
		return 0;
	case IBV_QPS_RTR:
		if (!negotiated(sid))
			return EINVAL;
		fill_rtr(sid, attr, mask);
		return 0;
	case IBV_QPS_RTS:
		if (!negotiated(sid))
			return EINVAL;
		fill_rts(sid, attr, mask);
		return 0;
	default:
		return EINVAL;
	}
}

int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	int ret;

	fab_lock();
	ret = cm_qp_init_attr_locked(to_scm(id), qp_attr, qp_attr_mask);
	fab_unlock();
	return ret ? fail(ret) : 0;
}

static int modify_locked(struct soft_qp *sqp, const struct soft_cm_id *sid,
			 void (*fill)(const struct soft_cm_id *, struct ibv_qp_attr *, int *))
{
	struct ibv_qp_attr attr;
	int mask, ret;

	memset(&attr, 0, sizeof(attr));
	fill(sid, &attr, &mask);
	ret = qp_modify_locked(sqp, &attr, mask);
	if (!ret)
		sqp->qp.state = attr.qp_state;
	return ret;
}

/* As librdmacm: re-init (to pick up the negotiated access), then RTR and RTS. */
int cm_qp_connect_locked(struct soft_cm_id *sid)
{
	struct soft_qp *sqp = to_sqp(sid->id.qp);
	int ret;

	ret = modify_locked(sqp, sid, fill_init);
	if (!ret)
		ret = modify_locked(sqp, sid, fill_rtr);
	if (!ret)
		ret = modify_locked(sqp, sid, fill_rts);
	/* A peer in another process: the QP's requests go over the connection's link. */
	if (!ret && sid->conn)
		wire_attach_locked(&sqp->wire, sid->conn);
	return ret;
}

static void destroy_own_cqs(struct rdma_cm_id *id)
{
	if (id->send_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq && id->recv_cq != id->send_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	if (id->recv_cq_channel && id->recv_cq_channel != id->send_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
}

static struct ibv_cq *own_cq(struct rdma_cm_id *id, uint32_t depth_wanted,
			     struct ibv_comp_channel **channel)
{
	struct ibv_cq *cq;

	*channel = ibv_create_comp_channel(id->verbs);
	if (!*channel)
		return NULL;
	cq = ibv_create_cq(id->verbs, depth_wanted ? (int)depth_wanted : 1, id, *channel, 0);
	return cq;
}

/*
 * As librdmacm: the id's PD unless the attributes name one, a CQ and
 * channel for each queue left out, then ibv_create_qp_ex(), which makes
 * an extended QP when more than a PD is asked for (comp_mask) and a plain
 * one otherwise, as rdma_create_qp() asks.
 */
int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *qp_init_attr)
{
	struct soft_cm_id *sid;
	struct ibv_qp_init_attr_ex attr;
	struct ibv_qp *qp;
	int ret;

	if (!id || !qp_init_attr || !id->verbs || id->qp)
		return fail(EINVAL);
	sid = to_scm(id);
	attr = *qp_init_attr;
	if (!(attr.comp_mask & IBV_QP_INIT_ATTR_PD) || !attr.pd)
		attr.pd = id->pd;
	attr.comp_mask |= IBV_QP_INIT_ATTR_PD;
	if (!attr.pd || attr.pd->context != id->verbs)
		return fail(EINVAL);
	/* librdmacm makes a CQ and channel for each queue the caller left out. */
	if (!attr.recv_cq) {
		id->recv_cq = own_cq(id, attr.cap.max_recv_wr, &id->recv_cq_channel);
		if (!id->recv_cq)
			goto err;
		attr.recv_cq = id->recv_cq;
	}
	if (!attr.send_cq) {
		id->send_cq = own_cq(id, attr.cap.max_send_wr, &id->send_cq_channel);
		if (!id->send_cq)
			goto err;
		attr.send_cq = id->send_cq;
	}
	if (!attr.srq)
		attr.srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, &attr);
	if (!qp)
		goto err;
	fab_lock();
	to_sqp(qp)->cm_id = sid;
	to_sqp(qp)->wire.cm_made = true;
	to_sqp(qp)->cm_passive = sid->passive;
	id->qp = qp;
	cm_ece_qp_created_locked(sid);
	/* A UD QP is ready to send at once (RTS); an RC QP waits in INIT for its peer. */
	if (cm_id_is_ud(sid))
		ret = cm_ud_qp_ready_locked(sid, to_sqp(qp));
	else
		ret = modify_locked(to_sqp(qp), sid, fill_init);
	fab_unlock();
	if (ret) {
		rdma_destroy_qp(id);
		return fail(ret);
	}
	qp_init_attr->cap = attr.cap;
	return 0;
err:
	ret = errno;
	destroy_own_cqs(id);
	return fail(ret);
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int ret;

	if (!qp_init_attr)
		return fail(EINVAL);
	ex = (struct ibv_qp_init_attr_ex){
		.qp_context = qp_init_attr->qp_context, .send_cq = qp_init_attr->send_cq,
		.recv_cq = qp_init_attr->recv_cq, .srq = qp_init_attr->srq,
		.cap = qp_init_attr->cap, .qp_type = qp_init_attr->qp_type,
		.sq_sig_all = qp_init_attr->sq_sig_all,
		.comp_mask = pd ? IBV_QP_INIT_ATTR_PD : 0, .pd = pd,
	};
	ret = rdma_create_qp_ex(id, &ex);
	if (!ret)
		qp_init_attr->cap = ex.cap;
	return ret;
}

/*
 * An SRQ for the id's QP (rdma_create_qp() takes id->srq), on @pd or the
 * id's: only the basic type, as softrdma has no XRC or tag matching.
 */
int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr init;
	struct ibv_pd *pd;

	if (!id || !attr || id->srq || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return fail(EINVAL);
	if (attr->srq_type != IBV_SRQT_BASIC ||
	    (attr->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD)))
		return fail(EOPNOTSUPP);
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd ? attr->pd : id->pd;
	if (!pd)
		return fail(EINVAL);
	init = (struct ibv_srq_init_attr){ .srq_context = attr->srq_context, .attr = attr->attr };
	id->srq = ibv_create_srq(pd, &init);
	if (!id->srq)
		return -1;
	attr->attr = init.attr;
	attr->pd = pd;
	attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int ret;

	if (!attr)
		return fail(EINVAL);
	ex = (struct ibv_srq_init_attr_ex){
		.srq_context = attr->srq_context, .attr = attr->attr,
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_BASIC, .pd = pd,
	};
	ret = rdma_create_srq_ex(id, &ex);
	if (!ret)
		attr->attr = ex.attr;
	return ret;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || !id->srq)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (id->qp)
		ibv_destroy_qp(id->qp);
	/* The net thread reads id->qp under the lock when a peer dies. */
	fab_lock();
	id->qp = NULL;
	fab_unlock();
	destroy_own_cqs(id);
}

void cm_qp_destroyed_locked(struct soft_cm_id *sid)
{
	sid->id.qp = NULL;
}

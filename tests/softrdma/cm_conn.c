/* SPDX-License-Identifier: MIT */
/*
 * The rdma_cm connection protocol over the fabric: REQ, REP, RTU, REJ and
 * DREQ travel as progress units; each arrival moves state, touches QPs as
 * librdmacm and the kernel CM would, and queues events. Negotiation follows
 * the IB CM: each side's QP takes its responder resources from the peer's
 * initiator depth, its RNR retry count from the peer's message, and both use
 * the active side's retry count.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"

#define REJ_INVALID_SERVICE_ID	SOFTRDMA_REJ_INVALID_SERVICE_ID
#define REJ_CONSUMER_DEFINED	SOFTRDMA_REJ_CONSUMER_DEFINED

static int fail(int err)
{
	errno = err;
	return -1;
}

struct soft_cm_id *cm_id_alloc(struct soft_cm_channel *ch, void *context,
			       enum rdma_port_space ps)
{
	struct soft_cm_id *sid = calloc(1, sizeof(*sid));

	if (!sid)
		return NULL;
	sid->ch = ch;
	sid->id.channel = ch ? &ch->ch : NULL;
	sid->id.context = context;
	sid->id.ps = ps;
	sid->id.qp_type = IBV_QPT_RC;
	sid->state = CM_IDLE;
	list_init(&sid->link);
	return sid;
}

void cm_id_link_locked(struct soft_cm_id *sid)
{
	list_add_tail(&sid->link, &fab.cm_ids);
	if (sid->ch)
		sid->ch->ids++;
	fab.counts.cm_ids++;
}

static uint8_t depth(uint8_t requested, uint8_t offered, int *err)
{
	if (requested == RDMA_MAX_RESP_RES)
		return offered < SOFT_MAX_RD_ATOM ? offered : SOFT_MAX_RD_ATOM;
	if (requested > SOFT_MAX_RD_ATOM)
		*err = EINVAL;
	return requested;
}

static uint8_t retries(uint8_t n)
{
	return n > 7 ? 7 : n;
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
	attr->ah_attr.grh.hop_limit = 64;
	attr->ah_attr.port_num = 1;
	attr->path_mtu = IBV_MTU_1024;
	attr->dest_qp_num = sid->peer_qpn;
	attr->rq_psn = 0;
	attr->max_dest_rd_atomic = sid->responder_resources;
	attr->min_rnr_timer = 12;
	*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

static void fill_rts(const struct soft_cm_id *sid, struct ibv_qp_attr *attr, int *mask)
{
	attr->qp_state = IBV_QPS_RTS;
	attr->sq_psn = 0;
	attr->timeout = 14;
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
static int cm_qp_connect_locked(struct soft_cm_id *sid)
{
	struct soft_qp *sqp = to_sqp(sid->id.qp);
	int ret;

	ret = modify_locked(sqp, sid, fill_init);
	if (!ret)
		ret = modify_locked(sqp, sid, fill_rtr);
	if (!ret)
		ret = modify_locked(sqp, sid, fill_rts);
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

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct soft_cm_id *sid = to_scm(id);
	struct ibv_qp_init_attr attr;
	struct ibv_qp *qp;
	int ret;

	if (!id->verbs || !qp_init_attr || id->qp)
		return fail(EINVAL);
	if (!pd)
		pd = id->pd;
	if (!pd || pd->context != id->verbs)
		return fail(EINVAL);
	attr = *qp_init_attr;
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
	qp = ibv_create_qp(pd, &attr);
	if (!qp)
		goto err;
	fab_lock();
	to_sqp(qp)->cm_id = sid;
	id->qp = qp;
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

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_own_cqs(id);
}

static void cm_qp_destroyed_locked(struct soft_cm_id *sid)
{
	sid->id.qp = NULL;
}

static bool pdata_ok(const void *pdata, uint8_t len, uint8_t max)
{
	return len <= max && (pdata || !len);
}

static void work_pdata(struct soft_cm_work *w, const void *pdata, uint8_t len)
{
	if (len)
		memcpy(w->pdata, pdata, len);
	w->pdata_len = len;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct soft_cm_id *sid = to_scm(id);
	struct soft_cm_work *w;
	int err = 0;

	fab_lock();
	if (sid->state != CM_ROUTE_RESOLVED ||
	    (param && !pdata_ok(param->private_data, param->private_data_len, CM_REQ_PDATA))) {
		fab_unlock();
		return fail(EINVAL);
	}
	memset(&sid->mine, 0, sizeof(sid->mine));
	sid->mine.responder_resources = depth(param ? param->responder_resources : 0xff,
					      SOFT_MAX_RD_ATOM, &err);
	sid->mine.initiator_depth = depth(param ? param->initiator_depth : 0xff,
					  SOFT_MAX_RD_ATOM, &err);
	sid->mine.retry_count = retries(param ? param->retry_count : 7);
	sid->mine.rnr_retry_count = retries(param ? param->rnr_retry_count : 7);
	sid->mine.flow_control = param ? param->flow_control : 1;
	sid->mine.srq = id->srq || (param && !id->qp && param->srq);
	sid->mine.qp_num = id->qp ? id->qp->qp_num : (param ? param->qp_num : 0);
	w = err ? NULL : cm_work_new_locked(CMW_REQ, NULL, sid);
	if (!w) {
		fab_unlock();
		return fail(err ? err : ENOMEM);
	}
	w->params = sid->mine;
	if (param)
		work_pdata(w, param->private_data, param->private_data_len);
	sid->state = CM_CONNECT;
	fab_unlock();
	return 0;
}

static void reject_locked(struct soft_cm_id *target, int reason, const void *pdata, uint8_t len)
{
	struct soft_cm_work *w = cm_work_new_locked(CMW_REJ, target, NULL);

	if (!w)
		return;
	w->status = reason;
	work_pdata(w, pdata, len);
}

/* The REQ reaches the listener: spawn the passive id. */
static void req_arrived_locked(struct soft_cm_work *w)
{
	struct soft_cm_id *client = w->from, *l, *child;
	struct cm_params seen;

	if (!client || client->state != CM_CONNECT)
		return;
	if (fault_cm_reject_locked()) {
		reject_locked(client, REJ_CONSUMER_DEFINED, NULL, 0);
		return;
	}
	l = cm_find_listener_locked(&client->id.route.addr.dst_addr, client->id.ps);
	child = l ? cm_id_alloc(l->ch, l->id.context, l->id.ps) : NULL;
	if (!child) {
		reject_locked(client, REJ_INVALID_SERVICE_ID, NULL, 0);
		return;
	}
	cm_id_link_locked(child);
	fab.cm_ctx_refs++;
	cm_set_device_locked(child);
	child->listener = l;
	memcpy(&child->id.route.addr.src_storage, &client->id.route.addr.dst_storage,
	       sizeof(struct sockaddr_storage));
	memcpy(&child->id.route.addr.dst_storage, &client->id.route.addr.src_storage,
	       sizeof(struct sockaddr_storage));
	child->id.route.addr.addr.ibaddr.sgid = client->id.route.addr.addr.ibaddr.dgid;
	child->id.route.addr.addr.ibaddr.dgid = client->id.route.addr.addr.ibaddr.sgid;
	child->id.route.addr.addr.ibaddr.pkey = client->id.route.addr.addr.ibaddr.pkey;
	child->path = client->path;
	child->path.sgid = client->path.dgid;
	child->path.dgid = client->path.sgid;
	child->id.route.path_rec = &child->path;
	child->id.route.num_paths = 1;
	child->peer = client;
	client->peer = child;
	child->peer_qpn = w->params.qp_num;
	/* The passive side sees the request from its own point of view. */
	seen = w->params;
	seen.responder_resources = w->params.initiator_depth;
	seen.initiator_depth = w->params.responder_resources;
	child->responder_resources = seen.responder_resources;
	child->initiator_depth = seen.initiator_depth;
	child->retry_count = w->params.retry_count;
	child->rnr_retry_count = w->params.rnr_retry_count;
	child->state = CM_REQ_RCVD;
	cm_deliver_locked(child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &seen, w->pdata, w->pdata_len,
			  CM_REQ_PDATA, l);
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct soft_cm_id *sid = to_scm(id);
	struct soft_cm_work *w;
	int err = 0;

	fab_lock();
	if (sid->state != CM_REQ_RCVD ||
	    (param && !pdata_ok(param->private_data, param->private_data_len, CM_REP_PDATA))) {
		fab_unlock();
		return fail(EINVAL);
	}
	memset(&sid->mine, 0, sizeof(sid->mine));
	sid->mine.responder_resources = depth(param ? param->responder_resources : 0xff,
					      sid->responder_resources, &err);
	sid->mine.initiator_depth = depth(param ? param->initiator_depth : 0xff,
					  sid->initiator_depth, &err);
	sid->mine.rnr_retry_count = retries(param ? param->rnr_retry_count : 7);
	sid->mine.flow_control = param ? param->flow_control : 1;
	sid->mine.srq = id->srq || (param && !id->qp && param->srq);
	sid->mine.qp_num = id->qp ? id->qp->qp_num : (param ? param->qp_num : 0);
	if (err) {
		fab_unlock();
		return fail(err);
	}
	sid->responder_resources = sid->mine.responder_resources;
	sid->initiator_depth = sid->mine.initiator_depth;
	if (id->qp) {
		err = cm_qp_connect_locked(sid);
		if (err) {
			fab_unlock();
			return fail(err);
		}
	}
	sid->state = CM_ACCEPTED;
	w = cm_work_new_locked(CMW_REP, sid->peer, sid);
	if (w) {
		w->params = sid->mine;
		if (param)
			work_pdata(w, param->private_data, param->private_data_len);
	}
	fab_unlock();
	return 0;
}

/* The REP reaches the active side: librdmacm moves its QP to RTS and sends the RTU. */
static void rep_arrived_locked(struct soft_cm_work *w)
{
	struct soft_cm_id *client = w->target, *server = w->from;
	struct cm_params seen;

	if (!client || !server || client->state != CM_CONNECT || client->peer != server)
		return;
	seen = w->params;
	seen.responder_resources = w->params.initiator_depth;
	seen.initiator_depth = w->params.responder_resources;
	client->responder_resources = seen.responder_resources;
	client->initiator_depth = seen.initiator_depth;
	client->retry_count = client->mine.retry_count;
	client->rnr_retry_count = w->params.rnr_retry_count;
	client->peer_qpn = w->params.qp_num;
	if (!client->id.qp) {
		client->state = CM_REP_RCVD;
		cm_deliver_locked(client, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, &seen, w->pdata,
				  w->pdata_len, CM_REP_PDATA, NULL);
		return;
	}
	client->state = CM_ESTABLISHED;
	if (cm_qp_connect_locked(client)) {
		client->state = CM_DISCONNECTED;
		client->peer = NULL;
		server->peer = NULL;
		cm_deliver_locked(client, RDMA_CM_EVENT_CONNECT_ERROR, -EINVAL, NULL, NULL, 0, 0,
				  NULL);
		reject_locked(server, REJ_CONSUMER_DEFINED, NULL, 0);
		return;
	}
	cm_deliver_locked(client, RDMA_CM_EVENT_ESTABLISHED, 0, &seen, w->pdata, w->pdata_len,
			  CM_REP_PDATA, NULL);
	cm_work_new_locked(CMW_RTU, server, client);
}

int rdma_establish(struct rdma_cm_id *id)
{
	struct soft_cm_id *sid = to_scm(id);

	fab_lock();
	if (sid->state != CM_REP_RCVD) {
		fab_unlock();
		return fail(EINVAL);
	}
	sid->state = CM_ESTABLISHED;
	cm_work_new_locked(CMW_RTU, sid->peer, sid);
	fab_unlock();
	return 0;
}

static void rtu_arrived_locked(struct soft_cm_work *w)
{
	struct soft_cm_id *server = w->target;

	if (!server || server->state != CM_ACCEPTED)
		return;
	server->state = CM_ESTABLISHED;
	cm_deliver_locked(server, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, NULL, 0, 0, NULL);
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	struct soft_cm_id *sid = to_scm(id);

	fab_lock();
	if (sid->state != CM_REQ_RCVD || !pdata_ok(private_data, private_data_len, CM_REJ_PDATA)) {
		fab_unlock();
		return fail(EINVAL);
	}
	if (sid->peer) {
		reject_locked(sid->peer, REJ_CONSUMER_DEFINED, private_data, private_data_len);
		sid->peer->peer = NULL;
	}
	sid->peer = NULL;
	sid->state = CM_DISCONNECTED;
	fab_unlock();
	return 0;
}

static void rej_arrived_locked(struct soft_cm_work *w)
{
	struct soft_cm_id *target = w->target;

	if (!target)
		return;
	target->peer = NULL;
	/* A rejected active id may connect again after resolving nothing anew. */
	target->state = target->state == CM_CONNECT ? CM_ROUTE_RESOLVED : CM_DISCONNECTED;
	cm_deliver_locked(target, RDMA_CM_EVENT_REJECTED, w->status, NULL, w->pdata, w->pdata_len,
			  CM_REJ_PDATA, NULL);
}

static bool connected(const struct soft_cm_id *sid)
{
	return sid->state == CM_ESTABLISHED || sid->state == CM_ACCEPTED ||
	       sid->state == CM_REP_RCVD;
}

/* Queue the DREQ to the peer and, as its DREP, our own DISCONNECTED. */
static void send_dreq_locked(struct soft_cm_id *sid)
{
	sid->state = CM_DISCONNECTED;
	if (sid->peer && !sid->peer->disconnect_seen)
		cm_work_new_locked(CMW_DREQ, sid->peer, sid);
	cm_work_new_locked(CMW_DREQ, sid, NULL);
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	struct soft_cm_id *sid = to_scm(id);

	fab_lock();
	if (!connected(sid) && sid->state != CM_DISCONNECTED) {
		fab_unlock();
		return fail(EINVAL);
	}
	/* librdmacm moves the QP to ERR: outstanding work flushes. */
	if (id->qp)
		qp_to_error_locked(to_sqp(id->qp));
	if (connected(sid))
		send_dreq_locked(sid);
	fab_unlock();
	return 0;
}

static void dreq_arrived_locked(struct soft_cm_work *w)
{
	struct soft_cm_id *target = w->target;
	struct soft_cm_work *tw;

	if (!target || target->disconnect_seen)
		return;
	target->disconnect_seen = true;
	target->state = CM_DISCONNECTED;
	cm_deliver_locked(target, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0, 0, NULL);
	tw = cm_work_new_locked(CMW_TIMEWAIT, target, NULL);
	if (tw)
		tw->work.not_before = soft_now_ns() + SOFT_TIMEWAIT_NS;
}

static int cm_fault_disconnect_locked(struct soft_cm_id *sid)
{
	struct soft_cm_id *peer = sid->peer;

	if (!connected(sid))
		return -ENOTCONN;
	if (sid->id.qp)
		qp_to_error_locked(to_sqp(sid->id.qp));
	if (peer && peer->id.qp)
		qp_to_error_locked(to_sqp(peer->id.qp));
	if (peer && connected(peer)) {
		peer->state = CM_DISCONNECTED;
		cm_work_new_locked(CMW_DREQ, peer, NULL);
	}
	sid->state = CM_DISCONNECTED;
	cm_work_new_locked(CMW_DREQ, sid, NULL);
	return 0;
}

int softrdma_cm_disconnect(struct rdma_cm_id *id)
{
	int ret;

	fab_lock();
	ret = cm_fault_disconnect_locked(to_scm(id));
	fab_unlock();
	return ret;
}

void cm_work_run(struct soft_work *work)
{
	struct soft_cm_work *w = container_of(work, struct soft_cm_work, work);

	switch (w->kind) {
	case CMW_ADDR:
		if (w->target)
			cm_addr_done_locked(w->target, w->status);
		break;
	case CMW_ROUTE:
		if (w->target)
			cm_route_done_locked(w->target);
		break;
	case CMW_REQ:
		req_arrived_locked(w);
		break;
	case CMW_REP:
		rep_arrived_locked(w);
		break;
	case CMW_RTU:
		rtu_arrived_locked(w);
		break;
	case CMW_REJ:
		rej_arrived_locked(w);
		break;
	case CMW_DREQ:
		dreq_arrived_locked(w);
		break;
	case CMW_TIMEWAIT:
		if (w->target)
			cm_deliver_locked(w->target, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, NULL, 0,
					  0, NULL);
		break;
	}
	free(w);
}

/* rdma_destroy_id: tell the peer as the kernel CM would, then unlink everything. */
void cm_id_teardown_locked(struct soft_cm_id *sid)
{
	struct list_node *pos, *tmp;

	if (connected(sid) && sid->peer && !sid->peer->disconnect_seen)
		cm_work_new_locked(CMW_DREQ, sid->peer, NULL);
	else if ((sid->state == CM_REQ_RCVD || sid->state == CM_CONNECT) && sid->peer)
		reject_locked(sid->peer, REJ_CONSUMER_DEFINED, NULL, 0);
	list_for_each_safe(pos, tmp, &fab.cm_ids) {
		struct soft_cm_id *other = list_entry(pos, struct soft_cm_id, link);

		if (other->peer == sid)
			other->peer = NULL;
		if (other->listener == sid)
			other->listener = NULL;
	}
	list_for_each_safe(pos, tmp, &fab.work) {
		struct soft_cm_work *w = cm_work_of(list_entry(pos, struct soft_work, link));

		if (!w)
			continue;
		if (w->target == sid) {
			list_del(pos);
			free(w);
		} else if (w->from == sid) {
			w->from = NULL;
		}
	}
	if (sid->id.qp)
		to_sqp(sid->id.qp)->cm_id = NULL;
	sid->port_held = false;
	sid->peer = NULL;
}

const struct soft_cm_ops cm_ops = {
	.fault_disconnect = cm_fault_disconnect_locked,
	.qp_destroyed = cm_qp_destroyed_locked,
};

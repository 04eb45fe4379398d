/* SPDX-License-Identifier: MIT */
/*
 * The rdma_cm connection handshake over the fabric: REQ, REP, RTU and REJ
 * travel as progress units (over a link when the peer is another process);
 * each arrival moves state, touches QPs as librdmacm and the kernel CM would,
 * and queues events. Negotiation follows the IB CM: each side's QP takes its
 * responder resources from the peer's initiator depth, its RNR retry count
 * from the peer's message, and both use the active side's retry count.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"

#define REJ_INVALID_SERVICE_ID	SOFTRDMA_REJ_INVALID_SERVICE_ID
#define REJ_CONSUMER_DEFINED	SOFTRDMA_REJ_CONSUMER_DEFINED
/* IBA's REJ reason 35 (the kernel's IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED). */
#define REJ_VENDOR_OPTION_NOT_SUPPORTED	35

static int fail(int err)
{
	errno = err;
	return -1;
}

/* The device's (its profile's) limit on Reads in flight, from the verbs half. */
static int max_rd_atom(void)
{
	struct ibv_device_attr attr;

	return ibv_query_device(NULL, &attr) ? SOFT_MAX_RD_ATOM : attr.max_qp_rd_atom;
}

static uint8_t depth(uint8_t requested, uint8_t offered, int *err)
{
	int max = max_rd_atom();

	if (requested == RDMA_MAX_RESP_RES)
		return offered < max ? offered : (uint8_t)max;
	if (requested > max)
		*err = EINVAL;
	return requested;
}

static uint8_t retries(uint8_t n)
{
	return n > 7 ? 7 : n;
}

/*
 * The first PSN of a connection's sends, as the kernel's CM draws one at
 * random: derived from the Communication ID, so that the two directions of
 * a connection (and captures) do not count from the same number.
 */
uint32_t cm_start_psn(const struct soft_cm_id *sid)
{
	return (sid->comm_id * 2654435761u) & 0xffffff;
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

bool cm_connected(const struct soft_cm_id *sid)
{
	return sid->state == CM_ESTABLISHED || sid->state == CM_ACCEPTED ||
	       sid->state == CM_REP_RCVD;
}

void cm_send_locked(struct soft_cm_id *sid, const struct cm_msg *m)
{
	struct soft_cm_work *w;

	if (!sid->conn && !sid->peer)
		return;
	cm_tap_locked(sid, m);
	if (sid->conn) {
		cm_net_send_locked(sid, m);
		return;
	}
	w = cm_work_new_locked(m->kind, sid->peer, sid);
	if (!w)
		return;
	w->from_peer = true;
	w->sender.comm_id = sid->comm_id;
	w->sender.tid = sid->tid;
	w->status = m->status;
	w->params = m->params;
	w->qp_error = m->qp_error;
	work_pdata(w, m->pdata, m->pdata_len);
}

void cm_unpeer_locked(struct soft_cm_id *sid)
{
	if (sid->peer && sid->peer->peer == sid)
		sid->peer->peer = NULL;
	sid->peer = NULL;
	if (sid->conn) {
		sid->conn->id = NULL;
		net_link_close_locked(sid->conn);
		sid->conn = NULL;
	}
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct soft_cm_id *sid = to_scm(id);
	struct soft_cm_work *w;
	int err = 0;

	if (cm_id_is_ud(sid))
		return cm_ud_connect(sid, param);
	fab_lock();
	if (sid->state != CM_ROUTE_RESOLVED ||
	    (param && !pdata_ok(param->private_data, param->private_data_len, CM_REQ_PDATA))) {
		fab_unlock();
		return fail(EINVAL);
	}
	memset(&sid->mine, 0, sizeof(sid->mine));
	sid->mine.responder_resources = depth(param ? param->responder_resources : 0xff,
					      (uint8_t)max_rd_atom(), &err);
	sid->mine.initiator_depth = depth(param ? param->initiator_depth : 0xff,
					  (uint8_t)max_rd_atom(), &err);
	sid->mine.retry_count = retries(param ? param->retry_count : 7);
	sid->mine.rnr_retry_count = retries(param ? param->rnr_retry_count : 7);
	sid->mine.flow_control = param ? param->flow_control : 1;
	sid->mine.srq = id->srq || (param && !id->qp && param->srq);
	sid->mine.qp_num = id->qp ? id->qp->qp_num : (param ? param->qp_num : 0);
	sid->mine.start_psn = cm_start_psn(sid);
	cm_ece_req_locked(sid, &sid->mine);
	w = err ? NULL : cm_work_new_locked(CMW_REQ, NULL, sid);
	if (!w) {
		fab_unlock();
		return fail(err ? err : ENOMEM);
	}
	w->params = sid->mine;
	if (param)
		work_pdata(w, param->private_data, param->private_data_len);
	sid->tid = (uint64_t)sid->comm_id << 8;
	w->sender.comm_id = sid->comm_id;
	w->sender.tid = sid->tid;
	sid->state = CM_CONNECT;
	fab_unlock();
	return cm_complete(sid);
}

/* The fabric answers a REQ itself (no listener, a fault): REJECTED to the client. */
static void reject_client_locked(struct soft_cm_id *client, int reason)
{
	struct soft_cm_work *w = cm_work_new_locked(CMW_REJ, client, NULL);

	cm_tap_fabric_rej_locked(client, reason);
	if (w)
		w->status = reason;
}

static void addressing_of(const struct soft_cm_id *client, struct cm_addressing *a)
{
	memset(a, 0, sizeof(*a));
	a->src = client->id.route.addr.src_storage;
	a->dst = client->id.route.addr.dst_storage;
	a->sgid = client->id.route.addr.addr.ibaddr.sgid;
	a->dgid = client->id.route.addr.addr.ibaddr.dgid;
	a->pkey = client->id.route.addr.addr.ibaddr.pkey;
	a->ps = client->id.ps;
	a->path = client->path;
}

/* The passive id of a REQ, from the active side's addressing. */
static struct soft_cm_id *spawn_child_locked(struct soft_cm_id *l, const struct cm_addressing *a,
					     const struct cm_params *params,
					     const struct cm_sender *sender)
{
	struct soft_cm_id *child = cm_id_alloc(l->ch, l->id.context, l->id.ps);

	if (!child)
		return NULL;
	cm_id_link_locked(child);
	cm_state.ctx_refs++;
	cm_set_device_locked(child);
	child->listener = l;
	child->passive = true;
	child->id.route.addr.src_storage = a->dst;
	child->id.route.addr.dst_storage = a->src;
	child->id.route.addr.addr.ibaddr.sgid = a->dgid;
	child->id.route.addr.addr.ibaddr.dgid = a->sgid;
	child->id.route.addr.addr.ibaddr.pkey = a->pkey;
	child->path = a->path;
	child->path.sgid = a->path.dgid;
	child->path.dgid = a->path.sgid;
	child->id.route.path_rec = &child->path;
	child->id.route.num_paths = 1;
	child->peer_qpn = params->qp_num;
	child->peer_psn = params->start_psn;
	child->peer_comm_id = sender->comm_id;
	child->tid = sender->tid;
	/* The passive side sees the request from its own point of view. */
	child->responder_resources = params->initiator_depth;
	child->initiator_depth = params->responder_resources;
	child->retry_count = params->retry_count;
	child->rnr_retry_count = params->rnr_retry_count;
	cm_ece_req_arrived_locked(child, params);
	child->state = CM_REQ_RCVD;
	return child;
}

/*
 * A sync listener's child waits on a channel of its own (librdmacm migrates
 * it); its CONNECT_REQUEST stays on the listener's channel for
 * rdma_get_request().
 */
static void make_sync_locked(struct soft_cm_id *child)
{
	struct soft_cm_channel *own = cm_channel_new_locked();

	if (!own)
		return;
	child->req_ch = child->ch;
	child->ch->ids--;
	child->ch = own;
	child->id.channel = &own->ch;
	own->ids++;
	child->sync = true;
}

/* The REQ reaches the listener's process: spawn the passive id. */
void cm_req_arrived_locked(struct soft_cm_work *w)
{
	struct soft_cm_id *client = w->from, *l, *child;
	struct cm_addressing local, *a = w->addr;
	struct cm_params seen;

	if (!a) {
		struct cm_msg req = { .kind = CMW_REQ, .params = w->params, .pdata = w->pdata,
				      .pdata_len = w->pdata_len };

		if (!client || client->state != CM_CONNECT)
			return;
		/* The REQ leaves the client now. */
		cm_tap_locked(client, &req);
		if (fault_cm_reject_locked()) {
			reject_client_locked(client, REJ_CONSUMER_DEFINED);
			return;
		}
		addressing_of(client, &local);
		a = &local;
	}
	l = cm_find_listener_locked((const struct sockaddr *)&a->dst, a->ps);
	/*
	 * iWARP runs over TCP, RoCE over UDP: a request from a process whose
	 * profile is of the other transport finds nobody listening.
	 */
	if (l && w->conn && a->iwarp != cm_id_iwarp(l))
		l = NULL;
	if (!l && !w->conn) {
		struct cm_msg req = { .kind = CMW_REQ, .params = w->params, .pdata = w->pdata,
				      .pdata_len = w->pdata_len };

		/* Nobody listens here: another process may. */
		if (rdv_dir() && cm_net_connect_locked(client, &req) == 0)
			return;
		reject_client_locked(client, REJ_INVALID_SERVICE_ID);
		return;
	}
	child = l ? spawn_child_locked(l, a, &w->params, &w->sender) : NULL;
	if (!child) {
		if (w->conn)
			cm_net_refuse_locked(w->conn, REJ_INVALID_SERVICE_ID);
		else
			reject_client_locked(client, REJ_INVALID_SERVICE_ID);
		return;
	}
	if (w->conn) {
		child->conn = w->conn;
		net_link_get_locked(w->conn);
		w->conn->id = child;
	} else {
		child->peer = client;
		client->peer = child;
	}
	seen = w->params;
	seen.responder_resources = w->params.initiator_depth;
	seen.initiator_depth = w->params.responder_resources;
	cm_deliver_locked(child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &seen, w->pdata, w->pdata_len,
			  cm_id_is_ud(l) ? CM_SIDR_REQ_PDATA : CM_REQ_PDATA, l);
	if (l->sync)
		make_sync_locked(child);
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct soft_cm_id *sid = to_scm(id);
	struct cm_msg rep = { .kind = CMW_REP };
	struct net_link *link;
	int err = 0;

	if (cm_id_is_ud(sid))
		return cm_ud_accept(sid, param);
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
	sid->mine.start_psn = cm_start_psn(sid);
	cm_ece_rep_locked(sid, &sid->mine);
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
	rep.params = sid->mine;
	if (param) {
		rep.pdata = param->private_data;
		rep.pdata_len = param->private_data_len;
	}
	cm_send_locked(sid, &rep);
	link = cm_net_hold_locked(sid);
	/* The client's process died after its REQ: nobody will answer the REP. */
	if (sid->conn && sid->conn->dead)
		cm_peer_lost_locked(sid);
	fab_unlock();
	cm_net_flush(link);
	return cm_complete(sid);
}

/* The REP reaches the active side: librdmacm moves its QP to RTS and sends the RTU. */
void cm_rep_arrived_locked(struct soft_cm_work *w)
{
	struct soft_cm_id *client = w->target;
	struct cm_msg m = { .kind = CMW_RTU };
	struct cm_params seen;

	if (client && cm_id_is_ud(client)) {
		cm_ud_rep_arrived_locked(w);
		return;
	}
	if (!client || client->state != CM_CONNECT)
		return;
	if (w->conn ? client->conn != w->conn : !w->from || client->peer != w->from)
		return;
	seen = w->params;
	seen.responder_resources = w->params.initiator_depth;
	seen.initiator_depth = w->params.responder_resources;
	client->responder_resources = seen.responder_resources;
	client->initiator_depth = seen.initiator_depth;
	client->retry_count = client->mine.retry_count;
	client->rnr_retry_count = w->params.rnr_retry_count;
	client->peer_qpn = w->params.qp_num;
	client->peer_psn = w->params.start_psn;
	client->peer_comm_id = w->sender.comm_id;
	cm_ece_rep_arrived_locked(client, &w->params);
	if (!client->id.qp) {
		client->state = CM_REP_RCVD;
		cm_deliver_locked(client, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, &seen, w->pdata,
				  w->pdata_len, CM_REP_PDATA, NULL);
		return;
	}
	client->state = CM_ESTABLISHED;
	if (cm_qp_connect_locked(client)) {
		client->state = CM_DISCONNECTED;
		cm_deliver_locked(client, RDMA_CM_EVENT_CONNECT_ERROR, -EINVAL, NULL, NULL, 0, 0,
				  NULL);
		m.kind = CMW_REJ;
		m.status = REJ_CONSUMER_DEFINED;
		cm_send_locked(client, &m);
		cm_unpeer_locked(client);
		return;
	}
	cm_deliver_locked(client, RDMA_CM_EVENT_ESTABLISHED, 0, &seen, w->pdata, w->pdata_len,
			  CM_REP_PDATA, NULL);
	cm_send_locked(client, &m);
}

int rdma_establish(struct rdma_cm_id *id)
{
	struct soft_cm_id *sid = to_scm(id);
	struct cm_msg m = { .kind = CMW_RTU };
	struct net_link *link;

	fab_lock();
	if (sid->state != CM_REP_RCVD) {
		fab_unlock();
		return fail(EINVAL);
	}
	sid->state = CM_ESTABLISHED;
	cm_send_locked(sid, &m);
	link = cm_net_hold_locked(sid);
	fab_unlock();
	cm_net_flush(link);
	return 0;
}

void cm_rtu_arrived_locked(struct soft_cm_work *w)
{
	struct soft_cm_id *server = w->target;

	if (!server || server->state != CM_ACCEPTED || (w->conn && server->conn != w->conn))
		return;
	server->state = CM_ESTABLISHED;
	cm_deliver_locked(server, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, NULL, 0, 0, NULL);
}

/*
 * IBA's COMM_EST on the QP: data came before the RTU. As the kernel's CM
 * (cm_establish()): a passive id that sent its REP is established now, and
 * its ESTABLISHED event comes; the RTU, when it comes, changes nothing.
 */
int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct soft_cm_id *sid = to_scm(id);
	int err = 0;

	if (!id)
		return fail(EINVAL);
	fab_lock();
	if (event != IBV_EVENT_COMM_EST)
		err = EINVAL;
	else if (sid->state == CM_ESTABLISHED)
		err = EISCONN;
	else if (sid->state != CM_ACCEPTED)
		err = EINVAL;
	if (!err) {
		sid->state = CM_ESTABLISHED;
		cm_deliver_locked(sid, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, NULL, 0, 0, NULL);
	}
	fab_unlock();
	return err ? fail(err) : 0;
}

/* Refuse a CONNECT_REQUEST with @status (IBA's REJ reason). */
static int reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len,
		  uint16_t status)
{
	struct soft_cm_id *sid = to_scm(id);
	struct cm_msg m = { .kind = CMW_REJ, .status = status,
			    .pdata = private_data, .pdata_len = private_data_len };
	struct net_link *link;

	fab_lock();
	if (sid->state != CM_REQ_RCVD || !pdata_ok(private_data, private_data_len, CM_REJ_PDATA)) {
		fab_unlock();
		return fail(EINVAL);
	}
	cm_send_locked(sid, &m);
	link = cm_net_hold_locked(sid);
	cm_unpeer_locked(sid);
	sid->state = CM_DISCONNECTED;
	fab_unlock();
	cm_net_flush(link);
	return 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len, REJ_CONSUMER_DEFINED);
}

/* As rdma_reject(), giving the reason librdmacm gives: the ECE options are refused. */
int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len, REJ_VENDOR_OPTION_NOT_SUPPORTED);
}

void cm_rej_arrived_locked(struct soft_cm_work *w)
{
	struct soft_cm_id *target = w->target;

	if (cm_ud_rej_arrived_locked(w))
		return;
	if (!target || (w->conn && target->conn != w->conn))
		return;
	cm_unpeer_locked(target);
	/* A rejected active id may connect again after resolving nothing anew. */
	target->state = target->state == CM_CONNECT ? CM_ROUTE_RESOLVED : CM_DISCONNECTED;
	cm_deliver_locked(target, RDMA_CM_EVENT_REJECTED, w->status, NULL, w->pdata, w->pdata_len,
			  CM_REJ_PDATA, NULL);
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
		cm_req_arrived_locked(w);
		break;
	case CMW_REP:
		cm_rep_arrived_locked(w);
		break;
	case CMW_RTU:
		cm_rtu_arrived_locked(w);
		break;
	case CMW_REJ:
		cm_rej_arrived_locked(w);
		break;
	case CMW_DREQ:
		cm_dreq_arrived_locked(w);
		break;
	case CMW_TIMEWAIT:
		if (w->target)
			cm_deliver_locked(w->target, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, NULL, 0,
					  0, NULL);
		break;
	}
	cm_work_free_locked(w);
}

const struct soft_cm_ops cm_ops = {
	.fault_disconnect = cm_fault_disconnect_locked,
	.qp_destroyed = cm_qp_destroyed_locked,
	.qp_link = cm_net_qp_link,
	.id_link = cm_ud_id_link,
	.link_message = cm_net_link_message,
	.link_down = cm_net_link_down,
};

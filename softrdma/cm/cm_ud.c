/* SPDX-License-Identifier: MIT */
/*
 * The UDP port space (RDMA_PS_UDP): ids whose QPs are UD. There is no
 * connection: rdma_connect sends a SIDR REQ (IBA 12.11) and the listener's
 * process answers it, as the kernel's CM does (cma_resolve_ib_udp(),
 * cma_sidr_rep_handler()):
 *
 *   - the passive side gets CONNECT_REQUEST with param.ud (the private data,
 *     180 bytes; no QP number or Q_Key yet);
 *   - rdma_accept sends the SIDR REP with its QP number and rdma_cm's Q_Key,
 *     RDMA_UDP_QKEY, and returns at once (librdmacm waits for no event);
 *   - the active side gets ESTABLISHED with param.ud: an address handle's
 *     attributes for the path, the peer's QP number and Q_Key, and 136
 *     bytes of private data. Nothing else is said: no RTU, no ESTABLISHED
 *     on the passive side, no DREQ when either side goes.
 *
 * A refused SIDR REQ (rdma_reject, or nobody listening) is UNREACHABLE with
 * the SIDR REP's status, 2 (IB_SIDR_REJECT) or 1 (IB_SIDR_UNSUPPORTED). The
 * REQ and REP travel as the RC handshake's REQ and REP do (cm_conn.c), over
 * a link to another process if need be; that link then carries the ids'
 * datagrams (cm_ud_id_link(), the verbs' ud.c).
 */
#include <errno.h>
#include <string.h>

#include "cm.h"

/* The SIDR REP's statuses (IBA 12.11.2, the kernel's enum ib_cm_sidr_status). */
#define SIDR_UNSUPPORTED	1
#define SIDR_REJECT		2

static int fail(int err)
{
	errno = err;
	return -1;
}

static bool pdata_ok(const void *pdata, uint8_t len, uint8_t max)
{
	return len <= max && (pdata || !len);
}

int cm_ud_connect(struct soft_cm_id *sid, const struct rdma_conn_param *param)
{
	struct soft_cm_work *w;

	fab_lock();
	if (sid->state != CM_ROUTE_RESOLVED ||
	    (param && !pdata_ok(param->private_data, param->private_data_len,
				CM_SIDR_REQ_PDATA))) {
		fab_unlock();
		return fail(EINVAL);
	}
	memset(&sid->mine, 0, sizeof(sid->mine));
	sid->mine.qp_num = sid->id.qp ? sid->id.qp->qp_num : (param ? param->qp_num : 0);
	w = cm_work_new_locked(CMW_REQ, NULL, sid);
	if (!w) {
		fab_unlock();
		return fail(ENOMEM);
	}
	w->params = sid->mine;
	if (param && param->private_data_len) {
		memcpy(w->pdata, param->private_data, param->private_data_len);
		w->pdata_len = param->private_data_len;
	}
	sid->tid = (uint64_t)sid->comm_id << 8;
	w->sender.comm_id = sid->comm_id;
	w->sender.tid = sid->tid;
	sid->state = CM_CONNECT;
	fab_unlock();
	return cm_complete(sid);
}

int cm_ud_accept(struct soft_cm_id *sid, const struct rdma_conn_param *param)
{
	struct cm_msg rep = { .kind = CMW_REP };
	struct net_link *link;

	fab_lock();
	if (sid->state != CM_REQ_RCVD ||
	    (param && !pdata_ok(param->private_data, param->private_data_len,
				CM_SIDR_REP_PDATA))) {
		fab_unlock();
		return fail(EINVAL);
	}
	memset(&sid->mine, 0, sizeof(sid->mine));
	sid->mine.qp_num = sid->id.qp ? sid->id.qp->qp_num : (param ? param->qp_num : 0);
	sid->mine.qkey = RDMA_UDP_QKEY;
	sid->state = CM_UD_RESOLVED;
	rep.params = sid->mine;
	if (param) {
		rep.pdata = param->private_data;
		rep.pdata_len = param->private_data_len;
	}
	cm_send_locked(sid, &rep);
	link = cm_net_hold_locked(sid);
	fab_unlock();
	cm_net_flush(link);
	/* librdmacm: a UD id's accept waits for no event (there is none). */
	return 0;
}

void cm_ud_rep_arrived_locked(struct soft_cm_work *w)
{
	struct soft_cm_id *client = w->target;

	if (!client || client->state != CM_CONNECT)
		return;
	if (w->conn ? client->conn != w->conn : !w->from || client->peer != w->from)
		return;
	client->peer_qpn = w->params.qp_num;
	client->peer_qkey = w->params.qkey;
	client->peer_comm_id = w->sender.comm_id;
	client->state = CM_UD_RESOLVED;
	cm_deliver_locked(client, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, w->pdata, w->pdata_len,
			  CM_SIDR_REP_PDATA, NULL);
}

bool cm_ud_rej_arrived_locked(struct soft_cm_work *w)
{
	struct soft_cm_id *target = w->target;
	int status;

	if (!target || !cm_id_is_ud(target))
		return false;
	if (w->conn && target->conn != w->conn)
		return true;
	cm_unpeer_locked(target);
	/* SIDR has no REJ: only the active side hears of a refusal, as a REP's status. */
	if (target->state != CM_CONNECT)
		return true;
	target->state = CM_ROUTE_RESOLVED;
	status = w->status == SOFTRDMA_REJ_CONSUMER_DEFINED ? SIDR_REJECT : SIDR_UNSUPPORTED;
	cm_deliver_locked(target, RDMA_CM_EVENT_UNREACHABLE, status, NULL, w->pdata,
			  w->pdata_len, CM_SIDR_REP_PDATA, NULL);
	return true;
}

/* ib_init_ah_attr_from_path() for a RoCE path: global, to the peer's GID. */
static void path_ah_attr(const struct soft_cm_id *sid, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = 1;
	ah->grh.dgid = sid->id.route.addr.addr.ibaddr.dgid;
	/* GID 0 is 127.0.0.1, GID 1 is ::1. */
	ah->grh.sgid_index = sid->id.route.addr.src_addr.sa_family == AF_INET6 ? 1 : 0;
	ah->grh.hop_limit = 64;
	ah->grh.traffic_class = sid->path.traffic_class;
}

void cm_ud_event_params_locked(const struct soft_cm_id *sid, struct rdma_cm_event *ev)
{
	const void *pdata = ev->param.conn.private_data;
	uint8_t len = ev->param.conn.private_data_len;

	/* param.conn and param.ud share their first two fields only. */
	memset(&ev->param, 0, sizeof(ev->param));
	ev->param.ud.private_data = pdata;
	ev->param.ud.private_data_len = len;
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED)
		return;
	path_ah_attr(sid, &ev->param.ud.ah_attr);
	ev->param.ud.qp_num = sid->peer_qpn;
	ev->param.ud.qkey = sid->peer_qkey;
}

/*
 * The kernel's rdma_init_qp_attr() for a UD id (cma_ib_init_qp_attr()):
 * whatever state is asked, the INIT attributes (P_Key index, port, Q_Key)
 * with that state, and at RTR the id's receive PSN (0). librdmacm asks only
 * for INIT, then moves the QP to RTR and RTS itself.
 */
int cm_ud_init_attr_locked(struct soft_cm_id *sid, struct ibv_qp_attr *attr, int *mask)
{
	if (!sid->id.verbs)
		return EINVAL;
	if (attr->qp_state != IBV_QPS_INIT && attr->qp_state != IBV_QPS_RTR &&
	    attr->qp_state != IBV_QPS_RTS)
		return EINVAL;
	attr->pkey_index = 0;
	attr->port_num = 1;
	attr->qkey = RDMA_UDP_QKEY;
	if (attr->qp_state == IBV_QPS_RTR)
		attr->rq_psn = 0;
	*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	return 0;
}

static int modify_locked(struct soft_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	int ret = qp_modify_locked(qp, attr, mask);

	if (!ret)
		qp->qp.state = attr->qp_state;
	return ret;
}

/* librdmacm's ucma_init_ud_qp(). */
int cm_ud_qp_ready_locked(struct soft_cm_id *sid, struct soft_qp *qp)
{
	struct ibv_qp_attr attr;
	int mask, ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	ret = cm_ud_init_attr_locked(sid, &attr, &mask);
	if (!ret)
		ret = modify_locked(qp, &attr, mask);
	attr.qp_state = IBV_QPS_RTR;
	if (!ret)
		ret = modify_locked(qp, &attr, IBV_QP_STATE);
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	if (!ret)
		ret = modify_locked(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return ret;
}

/* The link of the id's SIDR exchange: the peer's process, which its datagrams go to. */
struct net_link *cm_ud_id_link(struct soft_cm_id *sid)
{
	return sid->conn;
}

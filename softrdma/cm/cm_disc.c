/* SPDX-License-Identifier: MIT */
/*
 * The end of a connection: rdma_disconnect and the DREQ, a fault that tears
 * a connection down, rdma_destroy_id telling the peer, and a peer process
 * that died (its link closed without a goodbye). Each side gets DISCONNECTED
 * once, then TIMEWAIT_EXIT.
 */
#include <errno.h>
#include <stdlib.h>

#include "cm.h"

/* DISCONNECTED (once), then TIMEWAIT_EXIT a little later. */
static void disconnected_locked(struct soft_cm_id *sid)
{
	struct soft_cm_work *tw;

	if (sid->disconnect_seen)
		return;
	sid->disconnect_seen = true;
	sid->state = CM_DISCONNECTED;
	cm_deliver_locked(sid, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL, 0, 0, NULL);
	tw = cm_work_new_locked(CMW_TIMEWAIT, sid, NULL);
	if (tw)
		tw->work.not_before = soft_now_ns() + SOFT_TIMEWAIT_NS;
}

/* Queue the DREQ to the peer and, as its DREP, our own DISCONNECTED. */
static void send_dreq_locked(struct soft_cm_id *sid)
{
	struct cm_msg m = { .kind = CMW_DREQ };

	sid->state = CM_DISCONNECTED;
	if (sid->conn || (sid->peer && !sid->peer->disconnect_seen))
		cm_send_locked(sid, &m);
	cm_work_new_locked(CMW_DREQ, sid, NULL);
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	struct soft_cm_id *sid = to_scm(id);
	struct net_link *link = NULL;

	fab_lock();
	if (!cm_connected(sid) && sid->state != CM_DISCONNECTED) {
		fab_unlock();
		errno = EINVAL;
		return -1;
	}
	/* librdmacm moves the QP to ERR: outstanding work flushes. */
	if (id->qp)
		qp_to_error_locked(to_sqp(id->qp));
	if (cm_connected(sid)) {
		send_dreq_locked(sid);
		link = cm_net_hold_locked(sid);
	}
	fab_unlock();
	cm_net_flush(link);
	return cm_complete(sid);
}

void cm_dreq_arrived_locked(struct soft_cm_work *w)
{
	struct soft_cm_id *target = w->target;

	if (!target || (w->conn && target->conn != w->conn))
		return;
	/* The peer's fault tore the connection down: our QP fails too. */
	if (w->qp_error && target->id.qp)
		qp_to_error_locked(to_sqp(target->id.qp));
	/* The peer's DREQ (not our own, standing for its DREP) is answered. */
	if (w->from_peer && !target->disconnect_seen)
		cm_tap_drep_locked(target);
	disconnected_locked(target);
}

int cm_fault_disconnect_locked(struct soft_cm_id *sid)
{
	struct soft_cm_id *peer = sid->peer;
	struct cm_msg m = { .kind = CMW_DREQ, .qp_error = true };

	if (!cm_connected(sid))
		return -ENOTCONN;
	if (sid->id.qp)
		qp_to_error_locked(to_sqp(sid->id.qp));
	if (sid->conn) {
		cm_send_locked(sid, &m);
	} else if (peer) {
		if (peer->id.qp)
			qp_to_error_locked(to_sqp(peer->id.qp));
		if (cm_connected(peer)) {
			peer->state = CM_DISCONNECTED;
			cm_work_new_locked(CMW_DREQ, peer, NULL);
		}
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

/* rdma_destroy_id: tell the peer as the kernel CM would, then unlink everything. */
void cm_id_teardown_locked(struct soft_cm_id *sid)
{
	struct soft_list *pos, *tmp;
	struct cm_msg m = { .kind = CMW_DREQ };

	if (cm_connected(sid) && (sid->conn || (sid->peer && !sid->peer->disconnect_seen))) {
		cm_send_locked(sid, &m);
	} else if (sid->state == CM_REQ_RCVD || sid->state == CM_CONNECT) {
		m.kind = CMW_REJ;
		m.status = SOFTRDMA_REJ_CONSUMER_DEFINED;
		cm_send_locked(sid, &m);
	}
	soft_list_for_each_safe(pos, tmp, &cm_state.ids) {
		struct soft_cm_id *other = soft_list_entry(pos, struct soft_cm_id, link);

		if (other->peer == sid)
			other->peer = NULL;
		if (other->listener == sid)
			other->listener = NULL;
	}
	soft_list_for_each_safe(pos, tmp, fab_work_list_locked()) {
		struct soft_cm_work *w = cm_work_of(soft_list_entry(pos, struct soft_work, link));

		if (!w)
			continue;
		if (w->target == sid) {
			soft_list_del(pos);
			cm_work_free_locked(w);
		} else if (w->from == sid) {
			w->from = NULL;
		}
	}
	if (sid->id.qp) {
		to_sqp(sid->id.qp)->cm_id = NULL;
		to_sqp(sid->id.qp)->wire.cm_made = false;
		to_sqp(sid->id.qp)->cm_passive = false;
	}
	sid->port_held = false;
	cm_unpeer_locked(sid);
}

/*
 * The peer's process died: nothing more will come over the link. What the
 * application sees depends on how far the connection got, as with a peer
 * that stops answering: an unanswered REQ is UNREACHABLE, an unanswered REP
 * a CONNECT_ERROR, an established connection DISCONNECTED, its QP failing
 * the work in flight with a retry timeout (engine_peer_lost_locked).
 */
void cm_peer_lost_locked(struct soft_cm_id *sid)
{
	struct soft_qp *qp = sid->id.qp ? to_sqp(sid->id.qp) : NULL;

	switch (sid->state) {
	case CM_CONNECT:
		cm_unpeer_locked(sid);
		sid->state = CM_ROUTE_RESOLVED;
		cm_deliver_locked(sid, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, NULL, 0, 0,
				  NULL);
		return;
	case CM_REQ_RCVD:
		/* Nothing to say yet: rdma_accept() finds the link dead. */
		return;
	case CM_ACCEPTED:
		if (qp)
			engine_peer_lost_locked(qp);
		cm_unpeer_locked(sid);
		sid->state = CM_DISCONNECTED;
		cm_deliver_locked(sid, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT, NULL, NULL, 0, 0,
				  NULL);
		return;
	case CM_REP_RCVD:
	case CM_ESTABLISHED:
		if (qp)
			engine_peer_lost_locked(qp);
		cm_unpeer_locked(sid);
		disconnected_locked(sid);
		return;
	default:
		cm_unpeer_locked(sid);
		return;
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm messages between processes. The active side connects a socket to
 * the listener's rendezvous socket and sends its REQ over it; from then on
 * the link belongs to the connection: REP, RTU, REJ and DREQ travel over it
 * in both directions, then the QPs' wire requests. Each message arrives as
 * the same progress unit an in-process message would be, in order with the
 * link's other messages and with its loss (the link-down unit).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm.h"

struct net_cm_msg {
	uint32_t kind;			/* enum cm_work_kind */
	int32_t status;
	struct cm_params params;
	uint8_t pdata_len;
	uint8_t qp_error;
	uint8_t pad[2];
	struct cm_sender sender;
	uint8_t pdata[CM_REP_PDATA];
	struct cm_addressing addr;	/* REQ: the active side's addresses and path */
};

_Static_assert(sizeof(struct net_cm_msg) <= NET_HEAD_MAX,
	       "a CM message fits in a buffer's head");

/* client: a REQ, which carries the active side's addressing. */
static void send_msg_locked(struct net_link *link, const struct cm_msg *m,
			    const struct soft_cm_id *from, const struct soft_cm_id *client)
{
	struct net_buf *buf = net_buf_new_locked(NET_MSG_CM, sizeof(struct net_cm_msg));
	struct net_cm_msg *nm;

	if (!buf)
		return;
	nm = net_body(buf);
	memset(nm, 0, sizeof(*nm));
	nm->kind = m->kind;
	nm->status = m->status;
	nm->params = m->params;
	nm->qp_error = m->qp_error;
	if (from) {
		nm->sender.comm_id = from->comm_id;
		nm->sender.tid = from->tid;
	}
	nm->pdata_len = m->pdata_len;
	if (m->pdata_len)
		memcpy(nm->pdata, m->pdata, m->pdata_len);
	if (client) {
		nm->addr.src = client->id.route.addr.src_storage;
		nm->addr.dst = client->id.route.addr.dst_storage;
		nm->addr.sgid = client->id.route.addr.addr.ibaddr.sgid;
		nm->addr.dgid = client->id.route.addr.addr.ibaddr.dgid;
		nm->addr.pkey = client->id.route.addr.addr.ibaddr.pkey;
		nm->addr.ps = client->id.ps;
		nm->addr.path = client->path;
		nm->addr.iwarp = cm_id_iwarp(client);
	}
	net_send_locked(link, buf);
}

int cm_net_connect_locked(struct soft_cm_id *client, const struct cm_msg *req)
{
	struct net_link *link;
	int fd;

	/* A Unix socket connects at once: nothing blocks under the lock for long. */
	fd = rdv_connect(&client->id.route.addr.dst_addr, client->id.ps);
	if (fd < 0)
		return fd;
	link = net_link_new_locked(fd, true);
	if (!link) {
		close(fd);
		return -ENOMEM;
	}
	client->conn = link;
	link->id = client;
	send_msg_locked(link, req, client, client);
	return 0;
}

void cm_net_send_locked(struct soft_cm_id *sid, const struct cm_msg *m)
{
	send_msg_locked(sid->conn, m, sid, NULL);
}

void cm_net_refuse_locked(struct net_link *link, int reason)
{
	struct cm_msg m = { .kind = CMW_REJ, .status = reason };

	send_msg_locked(link, &m, NULL, NULL);
	net_link_get_locked(link);
	net_link_close_locked(link);
}

void cm_net_link_message(struct net_link *link, const void *body, uint32_t len)
{
	const struct net_cm_msg *nm = body;
	struct soft_cm_work *w;

	if (len != sizeof(*nm) || nm->kind > CMW_DREQ || nm->kind < CMW_REQ ||
	    nm->pdata_len > CM_REP_PDATA)
		return;
	/* A REQ opens a link; everything else belongs to the id it reached. */
	if ((nm->kind == CMW_REQ) != (link->id == NULL))
		return;
	w = cm_work_new_locked(nm->kind, link->id, NULL);
	if (!w)
		return;
	if (nm->kind == CMW_REQ) {
		w->addr = malloc(sizeof(*w->addr));
		if (!w->addr) {
			soft_list_del(&w->work.link);
			cm_work_free_locked(w);
			return;
		}
		*w->addr = nm->addr;
	}
	w->conn = link;
	w->from_peer = true;
	net_link_get_locked(link);
	w->status = nm->status;
	w->params = nm->params;
	w->qp_error = nm->qp_error != 0;
	w->sender = nm->sender;
	w->pdata_len = nm->pdata_len;
	memcpy(w->pdata, nm->pdata, nm->pdata_len);
}

struct net_link *cm_net_hold_locked(struct soft_cm_id *sid)
{
	if (!sid->conn)
		return NULL;
	net_link_get_locked(sid->conn);
	return sid->conn;
}

void cm_net_flush(struct net_link *link)
{
	if (!link)
		return;
	net_link_flush(link);
	fab_lock();
	net_link_put_locked(link);
	fab_unlock();
}

void cm_net_link_down(struct net_link *link)
{
	if (link->id)
		cm_peer_lost_locked(link->id);
}

/*
 * A QP the application created itself (not rdma_create_qp) and connected by
 * naming its number in rdma_connect/rdma_accept: the link of the id that
 * carries that number and the QP's destination.
 */
struct net_link *cm_net_qp_link(struct soft_qp *qp)
{
	struct soft_list *pos, *tmp;

	soft_list_for_each_safe(pos, tmp, &cm_state.ids) {
		struct soft_cm_id *sid = soft_list_entry(pos, struct soft_cm_id, link);

		if (sid->conn && sid->mine.qp_num == qp->qp.qp_num &&
		    sid->peer_qpn == qp->attr.dest_qp_num)
			return sid->conn;
	}
	return NULL;
}

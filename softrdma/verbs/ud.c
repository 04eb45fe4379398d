/* SPDX-License-Identifier: MIT */
/*
 * UD QPs' datagrams (ud.h): the state machine's masks, the post-time copy
 * of the destination, the send (the requester: a datagram leaves and its WQE
 * completes) and the delivery (the receiver: QP number, state and Q_Key
 * match, a receive is there and big enough, the GRH and the message are
 * scattered into it). What rxe does is the rule; where it departs from
 * softrdma's RC rules, it says so.
 */
#include <endian.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <string.h>

#include "net.h"
#include "tap.h"
#include "ud.h"

/*
 * IBA 10.3.1 (the kernel's qp_state_table for IB_QPT_UD): a UD QP names no
 * peer, so INIT takes the Q_Key, RTR needs nothing and RTS the send PSN.
 */
bool ud_transition(enum ibv_qp_state cur, enum ibv_qp_state next, int *required,
		   int *optional)
{
	*required = 0;
	*optional = 0;
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return true;
	switch (cur) {
	case IBV_QPS_RESET:
		*required = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		return next == IBV_QPS_INIT;
	case IBV_QPS_INIT:
		if (next == IBV_QPS_INIT)
			*optional = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		else
			*optional = IBV_QP_PKEY_INDEX | IBV_QP_QKEY;
		return next == IBV_QPS_INIT || next == IBV_QPS_RTR;
	case IBV_QPS_RTR:
		*required = IBV_QP_SQ_PSN;
		*optional = IBV_QP_QKEY;
		return next == IBV_QPS_RTS;
	case IBV_QPS_RTS:
		*optional = IBV_QP_QKEY;
		return next == IBV_QPS_RTS;
	default:
		/* SQD and SQE are not modelled; ERR leaves only to RESET. */
		return false;
	}
}

/* ---- posting ------------------------------------------------------------------ */

int ud_post_check(const struct ibv_send_wr *wr)
{
	/* rxe's provider reads the AH of every UD WR: there must be one. */
	return wr->wr.ud.ah ? 0 : EINVAL;
}

void ud_post_enqueue(const struct soft_qp *qp, struct soft_send_wqe *wqe,
		     const struct ibv_send_wr *wr)
{
	/* The address is copied now, as rxe's provider copies the AV into the WQE. */
	wqe->ud_av = to_sah(wr->wr.ud.ah)->attr;
	wqe->ud_qpn = wr->wr.ud.remote_qpn & 0xffffff;
	wqe->ud_qkey = wr->wr.ud.remote_qkey;
	wqe->ud_foreign_ah = wr->wr.ud.ah->pd != qp->qp.pd;
}

/* ---- a datagram ---------------------------------------------------------------- */

/* A datagram on its way: the message (as a request the capture knows) and its addresses. */
struct ud_dgram {
	struct wire_req req;		/* WIRE_SEND or WIRE_SEND_IMM, QPs, PSN, payload */
	uint32_t qkey;			/* its DETH's */
	union ibv_gid sgid;
	union ibv_gid dgid;
	uint32_t flow_label;
	uint8_t traffic_class;
	uint8_t hop_limit;
};

/* What a link carries in front of the payload (host order: both ends are softrdma). */
struct ud_msg {
	uint32_t src_qpn;
	uint32_t dst_qpn;
	uint32_t qkey;
	uint32_t psn;
	uint32_t imm;
	uint32_t flow_label;
	uint32_t length;
	union ibv_gid sgid;
	union ibv_gid dgid;
	uint8_t with_imm;
	uint8_t solicited;
	uint8_t traffic_class;
	uint8_t hop_limit;
};

static bool gid_is_ipv4(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(gid->raw, prefix, sizeof(prefix));
}

/* Bytes after the IP header: UDP, BTH, DETH, ImmDt, the padded payload, the ICRC. */
static uint16_t roce_len(const struct ud_dgram *d)
{
	uint32_t pad = (4 - (d->req.length & 3)) & 3;

	return (uint16_t)(8 + 12 + 8 + (d->req.op == WIRE_SEND_IMM ? 4 : 0) + d->req.length +
			  pad + 4);
}

uint16_t ud_ipv4_csum(const struct iphdr *ip)
{
	const uint16_t *w = (const uint16_t *)ip;
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum += sum >> 16;
	return (uint16_t)~sum;
}

/*
 * The 40 bytes a UD receive gets first, as rxe writes them (rxe_resp.c,
 * union rdma_network_hdr): for an IPv4 destination, 20 zero bytes and the
 * datagram's IPv4 header; for an IPv6 one, its IPv6 header, which is IBA's
 * GRH layout with next header UDP.
 */
static void grh_fill(const struct ud_dgram *d, uint8_t *grh)
{
	memset(grh, 0, UD_GRH_LEN);
	if (gid_is_ipv4(&d->dgid)) {
		struct iphdr ip;

		memset(&ip, 0, sizeof(ip));
		ip.version = 4;
		ip.ihl = 5;
		ip.tos = d->traffic_class;
		ip.tot_len = htobe16((uint16_t)(sizeof(ip) + roce_len(d)));
		ip.frag_off = htobe16(IP_DF);
		ip.ttl = d->hop_limit;
		ip.protocol = IPPROTO_UDP;
		memcpy(&ip.saddr, d->sgid.raw + 12, 4);
		memcpy(&ip.daddr, d->dgid.raw + 12, 4);
		ip.check = ud_ipv4_csum(&ip);
		memcpy(grh + 20, &ip, sizeof(ip));
	} else {
		struct ibv_grh g;

		g.version_tclass_flow = htobe32(6u << 28 | (uint32_t)d->traffic_class << 20 |
						(d->flow_label & 0xfffff));
		g.paylen = htobe16(roce_len(d));
		g.next_hdr = IPPROTO_UDP;
		g.hop_limit = d->hop_limit;
		g.sgid = d->sgid;
		g.dgid = d->dgid;
		memcpy(grh, &g, sizeof(g));
	}
}

/* ---- delivery at the receiver ---------------------------------------------------- */

enum ud_scatter { UD_SCATTERED, UD_PROT_ERR, UD_LOST };

/* The GRH, then the message, into the receive's buffers, checked before any is written. */
static enum ud_scatter scatter(struct soft_qp *qp, const struct soft_recv_wqe *rwqe,
			       const struct ud_dgram *d)
{
	struct wire_seg segs[WIRE_MAX_SEGS + 1];
	uint8_t *dst[SOFT_MAX_SGE];
	uint32_t dst_len[SOFT_MAX_SGE];
	uint32_t left = UD_GRH_LEN + d->req.length, n = 0, i, off = 0;
	uint8_t grh[UD_GRH_LEN];

	for (i = 0; i < rwqe->num_sge && left; i++) {
		const struct ibv_sge *sge = &rwqe->sge[i];
		uint32_t len = sge->length < left ? sge->length : left;

		if (!len)
			continue;
		dst[n] = mem_local_locked(qp->pd, sge->lkey, sge->addr, len,
					  IBV_ACCESS_LOCAL_WRITE, NULL);
		if (!dst[n])
			return UD_PROT_ERR;
		dst_len[n++] = len;
		left -= len;
	}
	grh_fill(d, grh);
	segs[0] = wire_seg_local(grh, UD_GRH_LEN);
	memcpy(segs + 1, d->req.segs, d->req.nsegs * sizeof(segs[0]));
	for (i = 0; i < n; i++) {
		if (!wire_pull_msg(segs, d->req.nsegs + 1, off, dst[i], dst_len[i]))
			return UD_LOST;
		off += dst_len[i];
	}
	return UD_SCATTERED;
}

static void complete_recv(struct soft_qp *qp, struct soft_rq *rq, const struct ud_dgram *d)
{
	struct ibv_wc wc;

	wc_success(&wc, rq_peek_locked(rq)->wr_id, IBV_WC_RECV, qp->qp.qp_num);
	wc.byte_len = UD_GRH_LEN + d->req.length;
	/* rxe flags the GRH on every receive; the 40 bytes are always there. */
	wc.wc_flags = IBV_WC_GRH;
	if (d->req.op == WIRE_SEND_IMM) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = d->req.imm;
	}
	/* The UD-only fields: no LIDs, service levels or partitions on RoCE. */
	wc.src_qp = d->req.src_qpn;
	wc.slid = 0;
	wc.sl = 0;
	wc.dlid_path_bits = 0;
	wc.pkey_index = 0;
	responder_consume_recv_locked(qp, rq);
	engine_complete_recv_locked(qp, &wc, d->req.solicited);
}

/*
 * The datagram reaches this process: delivered, or dropped without a word
 * (rxe's check_keys() and check_resource(): no such UD QP, a QP not in RTR
 * or RTS, another Q_Key, no receive posted). A receive too short for GRH
 * and message drops it too (rxe, class D), unless it is an SRQ's, which
 * completes with IBV_WC_REM_INV_REQ_ERR (class E); either way the QP stays
 * as it is. A receive buffer that fails its checks completes with
 * IBV_WC_LOC_PROT_ERR and the QP goes to ERR, as on RC.
 */
static void ud_deliver_locked(const struct ud_dgram *d)
{
	struct soft_qp *qp = qp_lookup_locked(d->req.dst_qpn);
	struct soft_recv_wqe *rwqe;
	struct soft_rq *rq;

	if (!qp || qp->qp.qp_type != IBV_QPT_UD || d->qkey != qp->attr.qkey ||
	    (qp->attr.qp_state != IBV_QPS_RTR && qp->attr.qp_state != IBV_QPS_RTS))
		return;
	rq = qp->srq ? &qp->srq->rq : &qp->rq;
	rwqe = rq_peek_locked(rq);
	if (!rwqe)
		return;
	if (UD_GRH_LEN + (uint64_t)d->req.length > responder_recv_capacity(rwqe)) {
		if (qp->srq)
			responder_fail_recv_locked(qp, rq, IBV_WC_REM_INV_REQ_ERR);
		return;
	}
	switch (scatter(qp, rwqe, d)) {
	case UD_SCATTERED:
		complete_recv(qp, rq, d);
		break;
	case UD_PROT_ERR:
		responder_fail_recv_locked(qp, rq, IBV_WC_LOC_PROT_ERR);
		qp_to_error_locked(qp);
		break;
	case UD_LOST:
		break;		/* its sender's memory is gone: it never arrived */
	}
}

/* ---- across processes ------------------------------------------------------------ */

/*
 * The link a datagram from @qp to QP @dst_qpn leaves on, or NULL when it
 * stays in this process. A UD QP that rdma_cm made for an id whose SIDR
 * exchange went to another process sends over that id's link, where its
 * peer is. Any other finds the process that owns @dst_qpn by the number,
 * unique on the machine (net_qpn.c).
 */
static struct net_link *ud_route_locked(struct soft_qp *qp, uint32_t dst_qpn)
{
	struct net_link *link = NULL;

	if (qp->cm_id && fab.cm_ops)
		link = fab.cm_ops->id_link(qp->cm_id);
	if (!link && wire_qpn_foreign_locked(dst_qpn))
		link = net_qpn_route_locked(dst_qpn);
	return link;
}

/*
 * The datagram goes over @link with its payload copied now: its WQE
 * completes as it leaves, and the application may reuse the buffers at
 * once. A payload that fits the message's head is copied there; a larger
 * one (up to the MTU) is copied aside (a heap copy, under the lock). Lost
 * if the link is dead or no buffer can be had, as a datagram may be.
 */
static void ud_link_send_locked(struct net_link *link, const struct ud_dgram *d)
{
	struct wire_seg segs[WIRE_MAX_SEGS];
	bool small = sizeof(struct ud_msg) + d->req.length <= NET_HEAD_MAX;
	struct net_buf *buf;
	struct ud_msg *m;
	unsigned int i;

	buf = link->dead ? NULL : net_buf_new_locked(NET_MSG_UD, (uint32_t)sizeof(*m));
	if (!buf)
		return;
	m = net_body(buf);
	/* Zeroed whole: its padding goes to the other process too. */
	memset(m, 0, sizeof(*m));
	m->src_qpn = d->req.src_qpn;
	m->dst_qpn = d->req.dst_qpn;
	m->qkey = d->qkey;
	m->psn = d->req.psn;
	m->imm = d->req.imm;
	m->flow_label = d->flow_label;
	m->length = d->req.length;
	m->sgid = d->sgid;
	m->dgid = d->dgid;
	m->with_imm = d->req.op == WIRE_SEND_IMM;
	m->solicited = d->req.solicited;
	m->traffic_class = d->traffic_class;
	m->hop_limit = d->hop_limit;
	for (i = 0; i < d->req.nsegs; i++) {
		segs[i] = d->req.segs[i];
		/* Without its registration a segment is copied into the head. */
		if (small) {
			segs[i].mr = NULL;
			segs[i].mw = NULL;
		}
	}
	if (!net_buf_add_locked(buf, segs, d->req.nsegs, d->req.length) ||
	    (!small && !net_buf_detach_locked(buf, NULL, NULL))) {
		net_buf_free_locked(buf);
		return;
	}
	net_send_locked(link, buf);
}

void ud_link_datagram_locked(struct net_link *link, const void *body, uint32_t len)
{
	struct ud_dgram d;
	struct ud_msg m;

	(void)link;		/* a datagram is for whichever QP it names */
	if (len < sizeof(m))
		return;
	memcpy(&m, body, sizeof(m));
	/* From another process: nothing longer than the largest MTU is a datagram. */
	if (m.length != len - sizeof(m) || m.length > 4096)
		return;
	memset(&d, 0, sizeof(d));
	d.req.op = m.with_imm ? WIRE_SEND_IMM : WIRE_SEND;
	d.req.src_qpn = m.src_qpn & 0xffffff;
	d.req.dst_qpn = m.dst_qpn & 0xffffff;
	d.req.psn = m.psn;
	d.req.imm = m.imm;
	d.req.solicited = m.solicited != 0;
	d.req.length = m.length;
	d.req.nsegs = 1;
	d.req.segs[0] = wire_seg_local((const uint8_t *)body + sizeof(m), m.length);
	d.qkey = m.qkey;
	d.sgid = m.sgid;
	d.dgid = m.dgid;
	d.flow_label = m.flow_label & 0xfffff;
	d.traffic_class = m.traffic_class;
	d.hop_limit = m.hop_limit;
	ud_deliver_locked(&d);
}

/* ---- the send ------------------------------------------------------------------- */

static void dgram_of(const struct soft_qp *qp, const struct soft_send_wqe *wqe,
		     struct ud_dgram *d)
{
	const struct ibv_ah_attr *av = &wqe->ud_av;

	d->req.op = wqe->opcode == IBV_WR_SEND_WITH_IMM ? WIRE_SEND_IMM : WIRE_SEND;
	d->req.src_qpn = qp->qp.qp_num;
	d->req.dst_qpn = wqe->ud_qpn;
	d->req.dgid = av->grh.dgid;
	d->req.solicited = (wqe->flags & IBV_SEND_SOLICITED) != 0;
	d->req.imm = wqe->imm_or_inv;
	d->req.token = wqe->seq;
	d->req.psn = wqe->psn;
	d->req.npsn = 1;
	d->req.last = true;
	/* IBA 10.2.5, rxe's init_req_packet(): the high bit asks for the QP's Q_Key. */
	d->qkey = (wqe->ud_qkey & UD_QKEY_OWN) ? qp->attr.qkey : wqe->ud_qkey;
	soft_fill_gid(&d->sgid, av->grh.sgid_index);
	d->dgid = av->grh.dgid;
	d->flow_label = av->grh.flow_label & 0xfffff;
	d->traffic_class = av->grh.traffic_class;
	d->hop_limit = av->grh.hop_limit;
}

static uint32_t port_mtu(void)
{
	return 128u << soft_profile()->active_mtu;
}

/*
 * rxe's requester: an opcode UD has not, or an AH of another PD (rxe_get_av()
 * finds none), fails the WQE with IBV_WC_LOC_QP_OP_ERR; a bad lkey with
 * IBV_WC_LOC_PROT_ERR. A message longer than the port's MTU is not sent
 * and still succeeds (IBA C10-93.1.1: "the CI shall not emit any packets
 * for this message ... shall not generate an error"), as rxe fakes a
 * successful send. Otherwise the datagram leaves (the capture writes it)
 * and the WQE succeeds, whether or not anything receives it.
 */
enum ibv_wc_status ud_send_locked(struct soft_qp *qp, const struct soft_send_wqe *wqe)
{
	struct net_link *link;
	struct ud_dgram d;
	enum ibv_wc_status st;

	if ((wqe->opcode != IBV_WR_SEND && wqe->opcode != IBV_WR_SEND_WITH_IMM) ||
	    wqe->ud_foreign_ah)
		return IBV_WC_LOC_QP_OP_ERR;
	memset(&d, 0, sizeof(d));
	st = engine_gather_locked(qp, wqe, &d.req);
	if (st != IBV_WC_SUCCESS || d.req.length > port_mtu())
		return st;
	dgram_of(qp, wqe, &d);
	if (pcap_on_locked())
		tap_datagram_locked(&d.sgid, &d.dgid, &d.req, d.qkey);
	/* Only softrdma0's own GIDs are on this fabric: any other address reaches nobody. */
	if (ud_gid_index(&d.dgid) < 0)
		return IBV_WC_SUCCESS;
	link = ud_route_locked(qp, d.req.dst_qpn);
	if (link)
		ud_link_send_locked(link, &d);
	else
		ud_deliver_locked(&d);
	return IBV_WC_SUCCESS;
}

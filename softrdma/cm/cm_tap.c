/* SPDX-License-Identifier: MIT */
/*
 * The capture's connection management: each CM message becomes the IB CM
 * MAD that RoCE carries to QP1 (IBA 12.6: REQ, REP, RTU, REJ, DREQ, DREP;
 * for a UDP port space id, 12.11's SIDR REQ and SIDR REP),
 * with the rdma_cm's service ID and IP addressing private data (Annex A11)
 * in the REQ. Wireshark learns from the REQ and REP which QPs form a
 * connection, which its RPC-over-RDMA dissector needs to match RDMA Reads
 * and Writes to their chunks; the other fields are what the kernel's CM
 * would send for the same connection.
 */
#include <endian.h>
#include <string.h>
#include <arpa/inet.h>

#include "cm.h"
#include "tap.h"

#define MAD_LEN		256
#define MAD_HDR		24

#define ATTR_REQ	0x0010
#define ATTR_REJ	0x0012
#define ATTR_REP	0x0013
#define ATTR_RTU	0x0014
#define ATTR_DREQ	0x0015
#define ATTR_DREP	0x0016
#define ATTR_SIDR_REQ	0x0017
#define ATTR_SIDR_REP	0x0018

/* SIDR REP statuses (IBA 12.11.2): accepted, no such service, refused by the consumer. */
#define SIDR_SUCCESS		0
#define SIDR_UNSUPPORTED	1
#define SIDR_REJECT		2

#define CM_CLASS	0x07
#define CM_CLASS_VERS	2
#define MAD_SEND	0x03
#define GSI_QKEY	0x80010000u
#define CM_TIMEOUT	20	/* 4.096 us * 2^20: the CM response timeouts */
#define ACK_TIMEOUT	14	/* rdma_cm's default local ACK timeout */

static void put16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

/* The common MAD header; returns where the CM message's 232 bytes start. */
static uint8_t *mad_header(uint8_t *mad, uint16_t attr, uint64_t tid)
{
	memset(mad, 0, MAD_LEN);
	mad[0] = 1;			/* base version */
	mad[1] = CM_CLASS;
	mad[2] = CM_CLASS_VERS;
	mad[3] = MAD_SEND;
	put64(mad + 8, tid);
	put16(mad + 16, attr);
	return mad + MAD_HDR;
}

static void emit(const struct soft_cm_id *from, const uint8_t *mad)
{
	tap_mad_locked(&from->id.route.addr.addr.ibaddr.sgid,
		       &from->id.route.addr.addr.ibaddr.dgid, mad);
}

/* rdma_cm's service ID: the port space and the port (RDMA IP CM service, A11.2). */
static uint64_t service_id(const struct soft_cm_id *client)
{
	return ((uint64_t)client->id.ps << 16) | cm_addr_port(&client->id.route.addr.dst_addr);
}

/* The IP CM header of a REQ's private data, then the consumer's 56 bytes. */
static void ip_cm_pdata(uint8_t *p, const struct soft_cm_id *client, const struct cm_msg *m)
{
	const struct sockaddr *src = &client->id.route.addr.src_addr;
	const struct sockaddr *dst = &client->id.route.addr.dst_addr;

	p[0] = 0;			/* MajV, MinV */
	put16(p + 2, cm_addr_port(src));
	if (src->sa_family == AF_INET6) {
		p[1] = 6 << 4;
		memcpy(p + 4, &((const struct sockaddr_in6 *)src)->sin6_addr, 16);
		memcpy(p + 20, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
	} else {
		p[1] = 4 << 4;
		memcpy(p + 16, &((const struct sockaddr_in *)src)->sin_addr, 4);
		memcpy(p + 32, &((const struct sockaddr_in *)dst)->sin_addr, 4);
	}
	if (m->pdata_len)
		memcpy(p + 36, m->pdata, m->pdata_len);
}

static void req(uint8_t *c, const struct soft_cm_id *sid, const struct cm_msg *m)
{
	const struct cm_params *pr = &m->params;

	put32(c, sid->comm_id);
	put64(c + 8, service_id(sid));
	put64(c + 16, 0x02000000deadbeefULL);	/* softrdma0's node GUID */
	put32(c + 28, GSI_QKEY);
	put24(c + 32, pr->qp_num);
	c[35] = pr->responder_resources;
	c[39] = pr->initiator_depth;
	c[43] = (uint8_t)(CM_TIMEOUT << 3 | (pr->flow_control & 1));	/* RC: service type 0 */
	put24(c + 44, pr->start_psn);
	c[47] = (uint8_t)(CM_TIMEOUT << 3 | (pr->retry_count & 7));
	put16(c + 48, 0xffff);
	c[50] = (uint8_t)(IBV_MTU_1024 << 4 | (pr->rnr_retry_count & 7));
	c[51] = (uint8_t)(15 << 4 | (pr->srq ? 8 : 0));
	memcpy(c + 56, sid->id.route.addr.addr.ibaddr.sgid.raw, 16);
	memcpy(c + 72, sid->id.route.addr.addr.ibaddr.dgid.raw, 16);
	c[91] = 3;				/* packet rate */
	c[93] = 64;				/* hop limit */
	c[95] = ACK_TIMEOUT << 3;
	ip_cm_pdata(c + 140, sid, m);
}

static void rep(uint8_t *c, const struct soft_cm_id *sid, const struct cm_msg *m)
{
	const struct cm_params *pr = &m->params;

	put32(c, sid->comm_id);
	put32(c + 4, sid->peer_comm_id);
	put32(c + 8, GSI_QKEY);
	put24(c + 12, pr->qp_num);
	put24(c + 20, pr->start_psn);
	c[24] = pr->responder_resources;
	c[25] = pr->initiator_depth;
	c[26] = (uint8_t)(15 << 3 | (pr->flow_control & 1));
	c[27] = (uint8_t)((pr->rnr_retry_count & 7) << 5 | (pr->srq ? 1 << 4 : 0));
	put64(c + 28, 0x02000000deadbeefULL);
	if (m->pdata_len)
		memcpy(c + 36, m->pdata, m->pdata_len);
}

static void rej(uint8_t *c, uint32_t local, uint32_t remote, int reason, const struct cm_msg *m)
{
	put32(c, local);
	put32(c + 4, remote);
	c[8] = 0;			/* the REQ was rejected */
	put16(c + 10, (uint16_t)reason);
	if (m && m->pdata_len)
		memcpy(c + 84, m->pdata, m->pdata_len);
}

/* The SIDR REQ: its Request ID, the partition, the service, then the IP CM header. */
static void sidr_req(uint8_t *c, const struct soft_cm_id *sid, const struct cm_msg *m)
{
	put32(c, sid->comm_id);
	put16(c + 4, 0xffff);
	put64(c + 8, service_id(sid));
	ip_cm_pdata(c + 16, sid, m);
}

/* The service a passive id was asked for: the port space and its own port. */
static uint64_t served_id(const struct soft_cm_id *sid)
{
	return ((uint64_t)sid->id.ps << 16) | cm_addr_port(&sid->id.route.addr.src_addr);
}

/* The SIDR REP answers Request ID @request for @service. */
static void sidr_rep(uint8_t *c, uint64_t service, uint32_t request, int status,
		     const struct cm_msg *m)
{
	put32(c, request);
	c[4] = (uint8_t)status;
	if (m && status == SIDR_SUCCESS) {
		put24(c + 8, m->params.qp_num);
		put32(c + 20, m->params.qkey);
	}
	put64(c + 12, service);
	if (m && m->pdata_len)
		memcpy(c + 96, m->pdata, m->pdata_len);
}

/* A UDP port space id's messages: REQ and REP are SIDR's, a REJ is a refusing SIDR REP. */
static bool sidr(uint8_t *mad, const struct soft_cm_id *sid, const struct cm_msg *m)
{
	switch (m->kind) {
	case CMW_REQ:
		sidr_req(mad_header(mad, ATTR_SIDR_REQ, sid->tid), sid, m);
		return true;
	case CMW_REP:
		sidr_rep(mad_header(mad, ATTR_SIDR_REP, sid->tid), served_id(sid),
			 sid->peer_comm_id, SIDR_SUCCESS, m);
		return true;
	case CMW_REJ:
		if (sid->state != CM_REQ_RCVD)
			return false;	/* SIDR has no REJ but the passive side's refusal */
		sidr_rep(mad_header(mad, ATTR_SIDR_REP, sid->tid), served_id(sid),
			 sid->peer_comm_id, SIDR_REJECT, m);
		return true;
	default:
		return false;
	}
}

void cm_tap_locked(const struct soft_cm_id *sid, const struct cm_msg *m)
{
	uint8_t mad[MAD_LEN], *c;

	if (!pcap_on_locked())
		return;
	if (cm_id_is_ud(sid)) {
		if (sidr(mad, sid, m))
			emit(sid, mad);
		return;
	}
	switch (m->kind) {
	case CMW_REQ:
		req(mad_header(mad, ATTR_REQ, sid->tid), sid, m);
		break;
	case CMW_REP:
		rep(mad_header(mad, ATTR_REP, sid->tid), sid, m);
		break;
	case CMW_RTU:
		c = mad_header(mad, ATTR_RTU, sid->tid);
		put32(c, sid->comm_id);
		put32(c + 4, sid->peer_comm_id);
		break;
	case CMW_REJ:
		rej(mad_header(mad, ATTR_REJ, sid->tid), sid->comm_id, sid->peer_comm_id,
		    m->status, m);
		break;
	case CMW_DREQ:
		c = mad_header(mad, ATTR_DREQ, sid->tid + 1);
		put32(c, sid->comm_id);
		put32(c + 4, sid->peer_comm_id);
		put24(c + 8, sid->peer_qpn);
		break;
	default:
		return;
	}
	emit(sid, mad);
}

void cm_tap_fabric_rej_locked(const struct soft_cm_id *client, int reason)
{
	uint8_t mad[MAD_LEN];

	if (!pcap_on_locked())
		return;
	if (cm_id_is_ud(client))
		sidr_rep(mad_header(mad, ATTR_SIDR_REP, client->tid), service_id(client),
			 client->comm_id,
			 reason == SOFTRDMA_REJ_CONSUMER_DEFINED ? SIDR_REJECT : SIDR_UNSUPPORTED,
			 NULL);
	else
		rej(mad_header(mad, ATTR_REJ, client->tid), 0, client->comm_id, reason, NULL);
	tap_mad_locked(&client->id.route.addr.addr.ibaddr.dgid,
		       &client->id.route.addr.addr.ibaddr.sgid, mad);
}

void cm_tap_drep_locked(const struct soft_cm_id *sid)
{
	uint8_t mad[MAD_LEN], *c;

	if (!pcap_on_locked())
		return;
	c = mad_header(mad, ATTR_DREP, sid->tid + 1);
	put32(c, sid->comm_id);
	put32(c + 4, sid->peer_comm_id);
	emit(sid, mad);
}

/* SPDX-License-Identifier: MIT */
/*
 * From wire messages to InfiniBand RC packets (IBA vol. 1, 9.2-9.4): the
 * opcode sequence of each message, its BTH (opcode, SE, pad count, P_Key
 * 0xffff, destination QP, AckReq, PSN) and the extended headers its opcodes
 * need: RETH on the first packet of an RDMA Write and on a Read request,
 * ImmDt and IETH on the last packet of a message with immediate or with
 * invalidate, AETH on acknowledgements and on the first and last Read
 * response. pcap.c wraps them in Ethernet/IP/UDP 4791 and adds the ICRC.
 */
#include <endian.h>
#include <string.h>

#include "tap.h"

enum {
	OP_SEND_FIRST = 0x00,
	OP_SEND_MIDDLE = 0x01,
	OP_SEND_LAST = 0x02,
	OP_SEND_LAST_IMM = 0x03,
	OP_SEND_ONLY = 0x04,
	OP_SEND_ONLY_IMM = 0x05,
	OP_WRITE_FIRST = 0x06,
	OP_WRITE_MIDDLE = 0x07,
	OP_WRITE_LAST = 0x08,
	OP_WRITE_LAST_IMM = 0x09,
	OP_WRITE_ONLY = 0x0a,
	OP_WRITE_ONLY_IMM = 0x0b,
	OP_READ_REQUEST = 0x0c,
	OP_READ_RESP_FIRST = 0x0d,
	OP_READ_RESP_MIDDLE = 0x0e,
	OP_READ_RESP_LAST = 0x0f,
	OP_READ_RESP_ONLY = 0x10,
	OP_ACK = 0x11,
	OP_SEND_LAST_INV = 0x16,
	OP_SEND_ONLY_INV = 0x17,
	OP_UD_SEND_ONLY = 0x64,
	OP_UD_SEND_ONLY_IMM = 0x65,
};

/* General services: QP1 and its well-known Q_Key. */
#define GSI_QPN		1
#define GSI_QKEY	0x80010000u
#define MAD_LEN		256

/* AETH syndromes: an ACK with no credit count, RNR NAK (plus the timer), NAKs. */
#define AETH_ACK		0x1f
#define AETH_RNR_NAK		0x20
#define AETH_NAK_INV_REQ	0x61
#define AETH_NAK_REM_ACCESS	0x62
#define AETH_NAK_REM_OP		0x63

#define BTH_LEN		12
#define IB_HDR_MAX	(BTH_LEN + 16 + 4)	/* BTH, RETH or DETH, ImmDt or IETH */

enum position { ONLY, FIRST, MIDDLE, LAST };

struct pkt {
	uint8_t hdr[IB_HDR_MAX];
	uint32_t hdr_len;
};

/* The addresses and ports of one direction of a connection. */
struct flow {
	union ibv_gid sgid;
	union ibv_gid dgid;
	uint16_t sport;
	uint32_t dqpn;
};

static uint8_t payload_buf[4096];	/* one packet's payload, under the fabric lock */

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	uint32_t be = htobe32(v);

	memcpy(p, &be, 4);
}

static void bth(struct pkt *p, uint8_t opcode, bool se, uint32_t payload_len, uint32_t dqpn,
		bool ackreq, uint32_t psn)
{
	uint8_t pad = (uint8_t)((4 - (payload_len & 3)) & 3);

	memset(p->hdr, 0, BTH_LEN);
	p->hdr[0] = opcode;
	p->hdr[1] = (uint8_t)((se ? 0x80 : 0) | pad << 4);
	p->hdr[2] = 0xff;		/* P_Key 0xffff, the default partition */
	p->hdr[3] = 0xff;
	put24(p->hdr + 5, dqpn);
	p->hdr[8] = ackreq ? 0x80 : 0;
	put24(p->hdr + 9, psn & 0xffffff);
	p->hdr_len = BTH_LEN;
}

static void reth(struct pkt *p, uint64_t va, uint32_t rkey, uint32_t len)
{
	uint64_t be = htobe64(va);

	memcpy(p->hdr + p->hdr_len, &be, 8);
	put32(p->hdr + p->hdr_len + 8, rkey);
	put32(p->hdr + p->hdr_len + 12, len);
	p->hdr_len += 16;
}

/* ImmDt and IETH are one word each; imm is already in network byte order. */
static void word_raw(struct pkt *p, uint32_t raw)
{
	memcpy(p->hdr + p->hdr_len, &raw, 4);
	p->hdr_len += 4;
}

static void aeth(struct pkt *p, uint8_t syndrome, uint32_t msn)
{
	p->hdr[p->hdr_len] = syndrome;
	put24(p->hdr + p->hdr_len + 1, msn & 0xffffff);
	p->hdr_len += 4;
}

/* Copy [off, off + len) of the message gathered in req into payload_buf. */
static const uint8_t *slice(const struct wire_req *req, uint32_t off, uint32_t len)
{
	wire_pull_msg(req->segs, req->nsegs, off, payload_buf, len);
	return payload_buf;
}

static enum position position(uint32_t i, uint32_t n)
{
	if (n == 1)
		return ONLY;
	return i == 0 ? FIRST : i == n - 1 ? LAST : MIDDLE;
}

static uint8_t send_opcode(enum wire_op op, enum position pos)
{
	static const uint8_t plain[] = { OP_SEND_ONLY, OP_SEND_FIRST, OP_SEND_MIDDLE,
					 OP_SEND_LAST };
	static const uint8_t imm[] = { OP_SEND_ONLY_IMM, OP_SEND_FIRST, OP_SEND_MIDDLE,
				       OP_SEND_LAST_IMM };
	static const uint8_t inv[] = { OP_SEND_ONLY_INV, OP_SEND_FIRST, OP_SEND_MIDDLE,
				       OP_SEND_LAST_INV };
	static const uint8_t write[] = { OP_WRITE_ONLY, OP_WRITE_FIRST, OP_WRITE_MIDDLE,
					 OP_WRITE_LAST };
	static const uint8_t write_imm[] = { OP_WRITE_ONLY_IMM, OP_WRITE_FIRST, OP_WRITE_MIDDLE,
					     OP_WRITE_LAST_IMM };

	switch (op) {
	case WIRE_SEND_IMM:
		return imm[pos];
	case WIRE_SEND_INV:
		return inv[pos];
	case WIRE_WRITE:
		return write[pos];
	case WIRE_WRITE_IMM:
		return write_imm[pos];
	default:
		return plain[pos];
	}
}

/*
 * The UDP source port of a packet is the number of the QP that sends it.
 * RoCEv2 leaves the source port to the sender (it only spreads flows over
 * paths); this choice lets Wireshark, which takes the destination QP as the
 * destination port, see both directions of a connection as one
 * conversation, which it needs to match RDMA Reads and Writes to the chunks
 * that an RPC-over-RDMA header announced.
 */
static uint16_t flow_port(uint32_t sender_qpn)
{
	return (uint16_t)sender_qpn;
}

static void requester_flow(const struct tap_qp *qp, const struct wire_req *req, struct flow *f)
{
	f->sgid = qp->sgid;
	f->dgid = qp->dgid;
	f->sport = flow_port(req->src_qpn);
	f->dqpn = req->dst_qpn;
}

static void emit(const struct flow *f, const struct pkt *p, const uint8_t *payload, uint32_t len)
{
	pcap_packet_locked(&f->sgid, &f->dgid, f->sport, p->hdr, p->hdr_len, payload, len);
}

void tap_request_locked(const struct tap_qp *requester, const struct wire_req *req)
{
	uint32_t mtu = requester->mtu, n, i, off = 0;
	bool is_write = req->op == WIRE_WRITE || req->op == WIRE_WRITE_IMM;
	struct flow f;
	struct pkt p;

	if (!pcap_on_locked())
		return;
	requester_flow(requester, req, &f);
	if (req->op == WIRE_READ) {
		bth(&p, OP_READ_REQUEST, false, 0, f.dqpn, true, req->psn);
		reth(&p, req->raddr, req->rkey, req->length);
		emit(&f, &p, NULL, 0);
		return;
	}
	n = req->length ? (req->length + mtu - 1) / mtu : 1;
	for (i = 0; i < n; i++) {
		enum position pos = position(i, n);
		uint32_t len = req->length - off < mtu ? req->length - off : mtu;
		bool last = pos == ONLY || pos == LAST;
		bool se = last && req->solicited && req->op != WIRE_WRITE;

		bth(&p, send_opcode(req->op, pos), se, len, f.dqpn, last, req->psn + i);
		if (is_write && (pos == ONLY || pos == FIRST))
			reth(&p, req->raddr, req->rkey, req->length);
		if (last && (req->op == WIRE_SEND_IMM || req->op == WIRE_WRITE_IMM))
			word_raw(&p, req->imm);
		if (last && req->op == WIRE_SEND_INV)
			word_raw(&p, htobe32(req->inv_rkey));
		emit(&f, &p, len ? slice(req, off, len) : NULL, len);
		off += len;
	}
}

static uint8_t nak_syndrome(const struct tap_qp *responder, enum wire_status status)
{
	switch (status) {
	case WIRE_NAK_RNR:
		return (uint8_t)(AETH_RNR_NAK | (responder->min_rnr_timer & 0x1f));
	case WIRE_NAK_INV_REQ:
		return AETH_NAK_INV_REQ;
	case WIRE_NAK_REM_ACCESS:
		return AETH_NAK_REM_ACCESS;
	default:
		return AETH_NAK_REM_OP;
	}
}

void tap_response_locked(const struct tap_qp *responder, const struct wire_req *req,
			 const struct wire_resp *resp)
{
	uint32_t mtu = responder->mtu, n, i, off = 0;
	struct flow f;
	struct pkt p;

	if (!pcap_on_locked() || resp->status == WIRE_NO_ANSWER || resp->status == WIRE_PENDING)
		return;
	f.sgid = responder->sgid;
	f.dgid = responder->dgid;
	f.sport = flow_port(req->dst_qpn);
	f.dqpn = req->src_qpn;
	if (resp->status != WIRE_ACK) {
		bth(&p, OP_ACK, false, 0, f.dqpn, false, req->psn);
		aeth(&p, nak_syndrome(responder, resp->status), responder->msn);
		emit(&f, &p, NULL, 0);
		return;
	}
	if (req->op != WIRE_READ) {
		n = req->length ? (req->length + mtu - 1) / mtu : 1;
		bth(&p, OP_ACK, false, 0, f.dqpn, false, req->psn + n - 1);
		aeth(&p, AETH_ACK, responder->msn);
		emit(&f, &p, NULL, 0);
		return;
	}
	n = resp->data.len ? (resp->data.len + mtu - 1) / mtu : 1;
	for (i = 0; i < n; i++) {
		static const uint8_t ops[] = { OP_READ_RESP_ONLY, OP_READ_RESP_FIRST,
					       OP_READ_RESP_MIDDLE, OP_READ_RESP_LAST };
		enum position pos = position(i, n);
		uint32_t len = resp->data.len - off < mtu ? resp->data.len - off : mtu;

		bth(&p, ops[pos], false, len, f.dqpn, false, req->psn + i);
		if (pos != MIDDLE)
			aeth(&p, AETH_ACK, responder->msn);
		if (len)
			wire_pull(&resp->data, off, payload_buf, len);
		emit(&f, &p, len ? payload_buf : NULL, len);
		off += len;
	}
}

static void deth(struct pkt *p, uint32_t qkey, uint32_t src_qpn)
{
	put32(p->hdr + p->hdr_len, qkey);
	put32(p->hdr + p->hdr_len + 4, src_qpn & 0xffffff);
	p->hdr_len += 8;
}

/* UD messages fit one packet (the port's MTU): no FIRST/MIDDLE/LAST, no ACK. */
void tap_datagram_locked(const union ibv_gid *sgid, const union ibv_gid *dgid,
			 const struct wire_req *req, uint32_t qkey)
{
	bool imm = req->op == WIRE_SEND_IMM;
	struct pkt p;

	if (!pcap_on_locked() || req->length > sizeof(payload_buf))
		return;
	bth(&p, imm ? OP_UD_SEND_ONLY_IMM : OP_UD_SEND_ONLY, req->solicited, req->length,
	    req->dst_qpn, false, req->psn);
	deth(&p, qkey, req->src_qpn);
	if (imm)
		word_raw(&p, req->imm);
	pcap_packet_locked(sgid, dgid, flow_port(req->src_qpn), p.hdr, p.hdr_len,
			   req->length ? slice(req, 0, req->length) : NULL, req->length);
}

void tap_mad_locked(const union ibv_gid *sgid, const union ibv_gid *dgid, const uint8_t *mad)
{
	struct pkt p;

	if (!pcap_on_locked())
		return;
	bth(&p, OP_UD_SEND_ONLY, false, MAD_LEN, GSI_QPN, false, 0);
	deth(&p, GSI_QKEY, GSI_QPN);
	pcap_packet_locked(sgid, dgid, (uint16_t)GSI_QPN, p.hdr, p.hdr_len, mad, MAD_LEN);
}

/* SPDX-License-Identifier: MIT */
/*
 * The capture tap: every message the wire carries, written as RoCEv2
 * packets (pcap.c) when a capture is open (SOFTRDMA_PCAP=<file> or
 * softrdma_pcap_open()). Requests are written by the requester when it sends
 * them, answers by the responder when it makes them, so in two processes
 * sharing one capture file each packet is written once. Messages are split
 * at the QP's path MTU into FIRST/MIDDLE/LAST packets with consecutive PSNs.
 * Called with the fabric lock held.
 */
#ifndef SOFT_TAP_H
#define SOFT_TAP_H

#include "wire.h"

struct soft_qp;

void tap_request_locked(struct soft_qp *requester, const struct wire_req *req);
/* Also counts the responder's message sequence number (AETH MSN). */
void tap_response_locked(struct soft_qp *responder, const struct wire_req *req,
			 const struct wire_resp *resp);

/*
 * A management datagram (256 bytes, the rdma_cm's IB CM messages) from sgid
 * to dgid, as RoCEv2 carries it: a UD SEND Only to QP1 with a DETH.
 */
void tap_mad_locked(const union ibv_gid *sgid, const union ibv_gid *dgid, const uint8_t *mad);

/* pcap.c: open SOFTRDMA_PCAP if set (from fab_init, before anything else runs). */
void pcap_init(void);
/* Write one packet; ib is the transport headers from the BTH on, then the payload. */
bool pcap_on_locked(void);
void pcap_packet_locked(const union ibv_gid *sgid, const union ibv_gid *dgid, uint16_t sport,
			const uint8_t *ib, uint32_t ib_len, const uint8_t *payload,
			uint32_t payload_len);

#endif /* SOFT_TAP_H */

/* SPDX-License-Identifier: MIT */
/*
 * The capture tap: every message the wire carries, written as RoCEv2
 * packets (pcap.c) when a capture is open (SOFTRDMA_PCAP=<file> or
 * softrdma_pcap_open()). Requests are written by the requester when it sends
 * them, answers by the responder when it makes them, so in two processes
 * sharing one capture file each packet is written once. Messages are split
 * at the QP's path MTU into FIRST/MIDDLE/LAST packets with consecutive PSNs.
 * Called with the fabric lock held. The capture sits on the wire (its
 * messages, wire.h) and knows no verbs object: the verbs describe the QP a
 * packet is from (struct tap_qp), and call it only while pcap_on_locked().
 */
#ifndef SOFT_TAP_H
#define SOFT_TAP_H

#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

/* The QP a packet is from, as the capture writes it. */
struct tap_qp {
	union ibv_gid sgid;
	union ibv_gid dgid;
	uint32_t mtu;			/* the path MTU, in bytes */
	uint8_t min_rnr_timer;		/* a responder's, for its RNR NAKs */
	uint32_t msn;			/* a responder's messages completed (its AETH) */
};

void tap_request_locked(const struct tap_qp *requester, const struct wire_req *req);
void tap_response_locked(const struct tap_qp *responder, const struct wire_req *req,
			 const struct wire_resp *resp);

/* A UD Send (only) with its DETH: @req's QPs, PSN, immediate data and payload. */
void tap_datagram_locked(const union ibv_gid *sgid, const union ibv_gid *dgid,
			 const struct wire_req *req, uint32_t qkey);
void tap_mad_locked(const union ibv_gid *sgid, const union ibv_gid *dgid, const uint8_t *mad);

/* SOFTRDMA_PCAP, read once at the fabric's start. */
void pcap_init(void);
bool pcap_on_locked(void);
/* softrdma_pcap_open() and softrdma_pcap_close(), under the fabric lock. */
int pcap_open_locked(const char *path);
void pcap_close_locked(void);
void pcap_packet_locked(const union ibv_gid *sgid, const union ibv_gid *dgid, uint16_t sport,
			const uint8_t *ib, uint32_t ib_len, const uint8_t *payload,
			uint32_t payload_len);

#endif /* SOFT_TAP_H */

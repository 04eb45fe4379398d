/* SPDX-License-Identifier: MIT */
/*
 * Unreliable Datagram, as rxe does it: address handles (ah.c) and the sends
 * and deliveries of UD QPs (ud.c). A UD send is one datagram of at most the
 * port's active MTU, with a DETH (the Q_Key and the source QP); it completes
 * once it leaves, whatever becomes of it. At the receiver it is matched by
 * QP number and Q_Key against a UD QP in RTR or RTS, and the first 40 bytes
 * of the receive buffer take its GRH. Whatever does not match, or finds no
 * receive posted, is dropped without a word: UD has no acknowledgements, no
 * RNR and no retries.
 */
#ifndef SOFT_UD_H
#define SOFT_UD_H

#include "soft.h"

/* The GRH a UD receive gets in front of the message (IBA 11.4.1.1). */
#define UD_GRH_LEN	40
/* IBA 10.2.5: a send WR's Q_Key with its high bit set means the QP's own Q_Key. */
#define UD_QKEY_OWN	0x80000000u
/* softrdma0's populated GIDs (device.c): 0 is ::ffff:127.0.0.1, 1 is ::1. */
#define UD_GIDS		2

struct soft_ah {
	struct ibv_ah ah;
	struct ibv_ah_attr attr;
};

static inline struct soft_ah *to_sah(struct ibv_ah *ah)
{
	return container_of(ah, struct soft_ah, ah);
}

/* ---- ah.c ------------------------------------------------------------------- */

/* The index of @gid among softrdma0's (RoCEv2) GIDs, or -1. */
int ud_gid_index(const union ibv_gid *gid);

/* ---- ud.c: the state machine's table, posting, sending, delivering ---------- */

/* IBA 10.3.1 for UD: false if @cur to @next is not allowed; else the masks. */
bool ud_transition(enum ibv_qp_state cur, enum ibv_qp_state next, int *required,
		   int *optional);
/* ibv_post_send's checks for a UD WR: 0 or EINVAL (no address handle). */
int ud_post_check(const struct ibv_send_wr *wr);
/* What the WQE keeps of the WR's destination: its AH's address, copied now. */
void ud_post_enqueue(const struct soft_qp *qp, struct soft_send_wqe *wqe,
		     const struct ibv_send_wr *wr);
/* The WQE at sq_exec of UD @qp runs: its datagram leaves. Its completion status. */
enum ibv_wc_status ud_send_locked(struct soft_qp *qp, const struct soft_send_wqe *wqe);
/* A datagram from another process came over @link (wire_ops.datagram). */
void ud_link_datagram_locked(struct net_link *link, const void *body, uint32_t len);

struct iphdr;
/* RFC 791's checksum of a 20-byte IPv4 header whose check field is 0. */
uint16_t ud_ipv4_csum(const struct iphdr *ip);

#endif /* SOFT_UD_H */

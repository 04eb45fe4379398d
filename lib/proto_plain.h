/* SPDX-License-Identifier: MIT */
/*
 * The codec's (proto.c) recognizer of the commonest header: RDMA_MSG,
 * version 1, with three empty chunk lists, RPCRDMA_HDR_MIN_LEN bytes: a
 * chunkless call or an inline reply. Inline, for the receive paths, which
 * take such a header without the general decode; rpcrdma_hdr_decode()
 * decodes it to the same XID and credits (test_proto checks the two agree).
 * Beside it: rpcrdma_hdr_clear(), the fields rpcrdma_hdr_decode() clears
 * for any header; rpcrdma_hdr_plain_fill(), what it decodes from a plain
 * one; and rpcrdma_hdr_plain_encode(), the commonest reply's header (the
 * same bytes as rpcrdma_hdr_encode()).
 */
#ifndef RPCRDMA_PROTO_PLAIN_H
#define RPCRDMA_PROTO_PLAIN_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rpcrdma/proto.h>

static inline bool rpcrdma_hdr_plain(const void *buf, size_t len, uint32_t *xid,
				     uint32_t *credit)
{
	uint32_t w[RPCRDMA_HDR_MIN_LEN / 4];

	if (len < RPCRDMA_HDR_MIN_LEN)
		return false;
	memcpy(w, buf, sizeof(w));
	if (w[1] != htonl(RPCRDMA_VERSION) || w[3] != htonl(RPCRDMA_MSG) || (w[4] | w[5] | w[6]))
		return false;
	*xid = ntohl(w[0]);
	*credit = ntohl(w[2]);
	return true;
}

/*
 * What a reader of a decoded header may look at for any procedure, cleared.
 * The Reply chunk is read only when has_reply, and write[] only below
 * write_chunks.
 */
static inline void rpcrdma_hdr_clear(struct rpcrdma_hdr *hdr)
{
	hdr->err = 0;
	hdr->vers_low = 0;
	hdr->vers_high = 0;
	hdr->read_segs = 0;
	hdr->read_chunks = 0;
	hdr->read_list = NULL;
	hdr->write_chunks = 0;
	hdr->has_reply = 0;
}

/* What rpcrdma_hdr_decode() leaves in @hdr for a plain header. */
static inline void rpcrdma_hdr_plain_fill(struct rpcrdma_hdr *hdr, uint32_t xid, uint32_t credit)
{
	hdr->xid = xid;
	hdr->vers = RPCRDMA_VERSION;
	hdr->credit = credit;
	hdr->proc = RPCRDMA_MSG;
	hdr->hdr_len = RPCRDMA_HDR_MIN_LEN;
	rpcrdma_hdr_clear(hdr);
}

/* A plain header into the RPCRDMA_HDR_MIN_LEN bytes at @buf. */
static inline void rpcrdma_hdr_plain_encode(void *buf, uint32_t xid, uint32_t credit)
{
	const uint32_t w[RPCRDMA_HDR_MIN_LEN / 4] = {
		htonl(xid), htonl(RPCRDMA_VERSION), htonl(credit), htonl(RPCRDMA_MSG), 0, 0, 0,
	};

	memcpy(buf, w, sizeof(w));
}

#endif /* RPCRDMA_PROTO_PLAIN_H */

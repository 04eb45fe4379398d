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

/* Word @i of the header at @buf, as it is on the wire: no copy through the stack. */
static inline uint32_t rpcrdma_plain_word(const void *buf, unsigned int i)
{
	uint32_t w;

	memcpy(&w, (const unsigned char *)buf + 4 * i, sizeof(w));
	return w;
}

static inline void rpcrdma_plain_put(void *buf, unsigned int i, uint32_t w)
{
	memcpy((unsigned char *)buf + 4 * i, &w, sizeof(w));
}

static inline bool rpcrdma_hdr_plain(const void *buf, size_t len, uint32_t *xid,
				     uint32_t *credit)
{
	if (len < RPCRDMA_HDR_MIN_LEN)
		return false;
	if (rpcrdma_plain_word(buf, 1) != htonl(RPCRDMA_VERSION) ||
	    rpcrdma_plain_word(buf, 3) != htonl(RPCRDMA_MSG) ||
	    (rpcrdma_plain_word(buf, 4) | rpcrdma_plain_word(buf, 5) | rpcrdma_plain_word(buf, 6)))
		return false;
	*xid = ntohl(rpcrdma_plain_word(buf, 0));
	*credit = ntohl(rpcrdma_plain_word(buf, 2));
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
	rpcrdma_plain_put(buf, 0, htonl(xid));
	rpcrdma_plain_put(buf, 1, htonl(RPCRDMA_VERSION));
	rpcrdma_plain_put(buf, 2, htonl(credit));
	rpcrdma_plain_put(buf, 3, htonl(RPCRDMA_MSG));
	rpcrdma_plain_put(buf, 4, 0);
	rpcrdma_plain_put(buf, 5, 0);
	rpcrdma_plain_put(buf, 6, 0);
}

#endif /* RPCRDMA_PROTO_PLAIN_H */

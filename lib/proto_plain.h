/* SPDX-License-Identifier: MIT */
/*
 * The codec's (proto.c) recognizer of the commonest header: RDMA_MSG,
 * version 1, with three empty chunk lists, RPCRDMA_HDR_MIN_LEN bytes: a
 * chunkless call or an inline reply. Inline, for the receive paths, which
 * take such a header without the general decode; rpcrdma_hdr_decode()
 * decodes it to the same XID and credits (test_proto checks the two agree).
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

#endif /* RPCRDMA_PROTO_PLAIN_H */

/* SPDX-License-Identifier: MIT */
/*
 * Parsed chunk lists (the kernel's svc_rdma_pcl.c): the Read list grouped
 * into chunks (svc_pcl.c), and, inline here because every reply runs them,
 * a reply's message laid out with the payloads that go inline.
 */
#ifndef RPCRDMA_SVC_PCL_H
#define RPCRDMA_SVC_PCL_H

#include <string.h>

#include "svc_rdma.h"

/*
 * Group @call's Read list into chunks and place each in the message that
 * lacks them (@inline_len bytes arrived inline). Returns 0, -EINVAL,
 * -E2BIG or -ENOMEM.
 */
int svc_rdma_map_reads(struct svcxprt_rdma *rdma, struct rpcrdma_svc_call *call, size_t inline_len);

/*
 * Lay out @msg with the payloads @p[0..n) spliced in at their positions
 * (each padded to 4 bytes with zeroes) at @dst. @dst may be @msg itself:
 * the pieces are moved from the last one back.
 */
static inline void svc_rdma_splice(unsigned char *dst, const unsigned char *msg, size_t msg_len,
				   const struct svc_rdma_payload *p, unsigned int n)
{
	size_t end = msg_len, shift = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		shift += xdr_round4(p[i].len);
	for (i = n; i-- > 0;) {
		memmove(dst + p[i].pos + shift, msg + p[i].pos, end - p[i].pos);
		shift -= xdr_round4(p[i].len);
		memcpy(dst + p[i].pos + shift, p[i].buf, p[i].len);
		memset(dst + p[i].pos + shift + p[i].len, 0, xdr_round4(p[i].len) - p[i].len);
		end = p[i].pos;
	}
	if (dst != msg)
		memmove(dst, msg, end);
}

/* The payloads that go inline, in order, into @out. Returns how many. */
static inline unsigned int svc_rdma_inline_payloads(const struct rpcrdma_svc_call *call,
					     struct svc_rdma_payload *out)
{
	unsigned int i, n = 0;

	for (i = 0; i < call->npayloads; i++)
		if (!svc_rdma_payload_ddp(call->hdr, i))
			out[n++] = call->payloads[i];
	return n;
}

#endif /* RPCRDMA_SVC_PCL_H */

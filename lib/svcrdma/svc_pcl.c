/* SPDX-License-Identifier: MIT */
/*
 * Parsed chunk lists (the kernel's svc_rdma_pcl.c): a call's Read list
 * grouped into chunks and placed in the message that lacks them, and a
 * reply's message laid out with the payloads that go inline.
 */
#include <errno.h>
#include <string.h>

#include <rpcrdma/proto.h>

#include "svc_pcl.h"
#include "svc_rdma.h"

#define SVC_RDMA_DEF_MAX_READ (64ull << 20)

/*
 * Group the Read list into chunks (runs of one position) and place each:
 * the position-zero chunk is a long call's message; the others are
 * payloads, whose wire positions count the bytes (padded to 4) of the
 * payloads before them. Returns 0, or -EINVAL for a Read list that cannot
 * be reassembled, -E2BIG for one larger than the server pulls.
 */
int svc_rdma_map_reads(struct svcxprt_rdma *rdma, struct rpcrdma_svc_call *call,
			      size_t inline_len)
{
	const struct rpcrdma_hdr *hdr = call->hdr;
	uint64_t max_read = rdma->sc_svc ? rdma->sc_svc->sv_attr.max_read : 0;
	uint64_t total = 0, consumed = 0, base_len = inline_len;
	struct rpcrdma_read_segment rs;
	uint32_t i, prev_pos = 0, nchunks = 0;

	if (!max_read)
		max_read = SVC_RDMA_DEF_MAX_READ;
	call->nchunks = 0;
	call->has_pzrc = false;
	if (hdr->read_chunks)
		call->chunks = svc_rdma_alloc(rdma, hdr->read_chunks * sizeof(*call->chunks));
	if (hdr->read_chunks && !call->chunks)
		return -ENOMEM;

	for (i = 0; i < hdr->read_segs; i++) {
		struct svc_rdma_chunk *ch;

		rpcrdma_hdr_read_segment(hdr, i, &rs);
		total += rs.seg.length;
		if (total > max_read)
			return -E2BIG;
		if (rs.position == 0) {
			ch = &call->pzrc;
			if (!call->has_pzrc) {
				memset(ch, 0, sizeof(*ch));
				ch->ch_first_seg = i;
				call->has_pzrc = true;
			}
			ch->ch_len += rs.seg.length;
			ch->ch_nsegs++;
			base_len = ch->ch_len;
			continue;
		}
		if (nchunks == 0 || rs.position != prev_pos) {
			if (nchunks)
				consumed += xdr_round4(call->chunks[nchunks - 1].ch_len);
			ch = &call->chunks[nchunks++];
			ch->ch_first_seg = i;
			/* Where the payload goes in a message that lacks the earlier ones. */
			if (rs.position < consumed)
				return -EINVAL;
			ch->ch_pos = (uint32_t)(rs.position - consumed);
			prev_pos = rs.position;
		}
		ch = &call->chunks[nchunks - 1];
		ch->ch_len += rs.seg.length;
		ch->ch_nsegs++;
	}
	call->nchunks = nchunks;
	for (i = 0; i < nchunks; i++) {
		const struct svc_rdma_chunk *ch = &call->chunks[i];

		/* Chunks must not overlap, and must lie within the message. */
		if (ch->ch_pos > base_len)
			return -EINVAL;
		if (i && ch->ch_pos < call->chunks[i - 1].ch_pos)
			return -EINVAL;
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Completion dispatch: poll a CQ in batches and hand each work completion to
 * the handler whose rpcrdma_cqe its wr_id points to.
 */
#include <errno.h>

#include "ep.h"

int rpcrdma_cq_poll(struct ibv_cq *cq, int budget)
{
	struct ibv_wc wcs[RPCRDMA_POLL_BATCH];
	int total = 0;

	while (total < budget) {
		int want = budget - total;
		int n, i;

		if (want > RPCRDMA_POLL_BATCH)
			want = RPCRDMA_POLL_BATCH;
		n = ibv_poll_cq(cq, want, wcs);
		if (unlikely(n < 0))
			return -EIO;
		for (i = 0; i < n; i++)
			rpcrdma_wc_cqe(&wcs[i])->done(cq, &wcs[i]);
		total += n;
		if (n < want)
			break;
	}
	return total;
}

/* SPDX-License-Identifier: MIT */
/*
 * Completion dispatch: how a work completion finds its handler (struct
 * rpcrdma_cqe), and the poller that calls it.
 */
#ifndef RPCRDMA_CQ_H
#define RPCRDMA_CQ_H

#include <errno.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "compiler.h"

/*
 * Every work request's wr_id is the address of one of these, embedded in the
 * object that owns the WR. The poller calls done(cq, wc); the handler finds
 * its object with container_of and its transport in cq->cq_context. When
 * wc->status is not IBV_WC_SUCCESS only wr_id, status, qp_num and
 * vendor_err are valid.
 */
struct rpcrdma_cqe {
	void (*done)(struct ibv_cq *cq, struct ibv_wc *wc);
};

static inline uint64_t rpcrdma_cqe_id(struct rpcrdma_cqe *cqe)
{
	return (uint64_t)(uintptr_t)cqe;
}

static inline struct rpcrdma_cqe *rpcrdma_wc_cqe(const struct ibv_wc *wc)
{
	return (struct rpcrdma_cqe *)(uintptr_t)wc->wr_id;
}

/* Work completions taken per ibv_poll_cq call. */
#define RPCRDMA_POLL_BATCH 16

/*
 * Poll @cq and dispatch each completion to its handler, at most @budget of
 * them. Returns the number dispatched, or -EIO if polling failed. Inline:
 * every poll of every side runs it.
 */
static inline int rpcrdma_cq_poll(struct ibv_cq *cq, int budget)
{
	struct ibv_wc wcs[RPCRDMA_POLL_BATCH];
	int total = 0;

	for (;;) {
		int want = budget - total < RPCRDMA_POLL_BATCH ? budget - total : RPCRDMA_POLL_BATCH;
		int n = ibv_poll_cq(cq, want, wcs);
		struct ibv_wc *wc, *end;

		if (unlikely(n < 0))
			return -EIO;
		for (wc = wcs, end = wcs + n; wc < end; wc++)
			rpcrdma_wc_cqe(wc)->done(cq, wc);
		total += n;
		if (n < want || total >= budget)
			return total;
	}
}

#endif /* RPCRDMA_CQ_H */

/* SPDX-License-Identifier: MIT */
/* util.h's out-of-line helpers: the pacing clock, heap accounting, address lengths. */
#include <netinet/in.h>
#include <stdlib.h>

#include "util.h"

bool rpcrdma_pace_clock(struct rpcrdma_pace *pc, int64_t gap_us)
{
	int64_t now = rpcrdma_now_us();

	if (now < pc->next_us)
		return false;
	pc->next_us = now + gap_us;
	return true;
}

void *rpcrdma_zalloc(struct rpcrdma_stats *stats, size_t size)
{
	void *p = calloc(1, size);

	if (p && stats)
		rpcrdma_count_add(stats->heap_bytes, size);
	return p;
}

void *rpcrdma_realloc(struct rpcrdma_stats *stats, void *p, size_t old, size_t size)
{
	void *q = realloc(p, size);

	if (q && stats)
		rpcrdma_count_add(stats->heap_bytes, size - old);
	return q;
}

void rpcrdma_free(struct rpcrdma_stats *stats, void *p, size_t size)
{
	if (!p)
		return;
	if (stats)
		rpcrdma_count_sub(stats->heap_bytes, size);
	free(p);
}

socklen_t rpcrdma_sockaddr_len(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * Counters served to rpcrdma-stat (stat.c). Each client and each server
 * poller is a source: its owner thread publishes a copy of its counters at
 * most every RPCRDMA_STAT_PERIOD_MS while busy and whenever it arms or goes
 * to sleep, so that the serving thread reads only copies and the hot path
 * pays one relaxed load while nobody asked for counters.
 */
#ifndef RPCRDMA_STAT_H
#define RPCRDMA_STAT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpcrdma/base.h>

#include "list.h"
#include "util.h"

#define RPCRDMA_STAT_PERIOD_MS 100

struct rpcrdma_stat_src {
	struct list_node node;			/* stat.c's list, under its lock */
	char name[96];
	const struct rpcrdma_stats *live;	/* the owner's counters */
	const struct rpcrdma_stats *extra;	/* added to them (a server's own), or NULL */
	int64_t last_ms;			/* owner: the last publication */
	pthread_mutex_t lock;
	struct rpcrdma_stats snap;		/* lock: the last copy published */
	bool listed;
};

extern atomic_bool rpcrdma_stat_on;

/* Add every counter of @src to @dst's (gauges too: a sum over sources); @dst is the caller's own. */
void rpcrdma_stats_sum(struct rpcrdma_stats *dst, const struct rpcrdma_stats *src);
/* @dst = @src's counters, read while their owners may change them. */
void rpcrdma_stats_load(struct rpcrdma_stats *dst, const struct rpcrdma_stats *src);

/* Make @s a source named @name (a client, or a server's poller); serve if asked by RPCRDMA_STAT_SOCKET. */
void rpcrdma_stat_add(struct rpcrdma_stat_src *s, const char *name,
		      const struct rpcrdma_stats *live, const struct rpcrdma_stats *extra);
/* The same, named "@kind/host:port" (and "/poller@index" for @index >= 0). */
void rpcrdma_stat_add_addr(struct rpcrdma_stat_src *s, const char *kind, const struct sockaddr *sa,
			   int index, const struct rpcrdma_stats *live,
			   const struct rpcrdma_stats *extra);
/* Withdraw @s (before its owner frees it). */
void rpcrdma_stat_del(struct rpcrdma_stat_src *s);
void rpcrdma_stat_publish(struct rpcrdma_stat_src *s, bool force);

/* On the owner's thread: publish if someone serves counters (@force: about to sleep). */
static inline void rpcrdma_stat_tick(struct rpcrdma_stat_src *s, bool force)
{
	if (atomic_load_explicit(&rpcrdma_stat_on, memory_order_relaxed))
		rpcrdma_stat_publish(s, force);
}

#endif /* RPCRDMA_STAT_H */

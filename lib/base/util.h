/* SPDX-License-Identifier: MIT */
/*
 * What every layer of the library uses and none owns: the log, the
 * monotonic clock, counters and heap accounting, socket address lengths
 * and XDR's rounding. No verbs here: the libtirpc adapters include this
 * alone.
 */
#ifndef RPCRDMA_UTIL_H
#define RPCRDMA_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include <rpcrdma/base.h>

#include "compiler.h"

/* Monotonic clock in milliseconds, and in microseconds (inline: every call reads it). */
static inline int64_t rpcrdma_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t rpcrdma_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * A busy poller hears of rare events (a disconnect, a new connection, a
 * sleeping connection's wake-up, an async event) only through a system
 * call. It makes that call on every @every-th poll; where nothing is waiting
 * to be heard of but rare events, only if @gap_us have also passed since the
 * last. Then a poller that finishes an RPC per microsecond makes one system
 * call per thousand RPCs, where the count alone would make one per @every.
 */
#define RPCRDMA_PACE_POLLS 16u

struct rpcrdma_pace {
	unsigned int polls;	/* since the last call, or the last look at the clock */
	int64_t next_us;	/* with a gap: no call before this */
};

/* One more poll: is it an @every-th? */
static inline bool rpcrdma_pace_tick(struct rpcrdma_pace *pc, unsigned int every)
{
	if (likely(++pc->polls < every))
		return false;
	pc->polls = 0;
	return true;
}

/* Have @gap_us passed since it last said so? */
bool rpcrdma_pace_clock(struct rpcrdma_pace *pc, int64_t gap_us);

static inline bool rpcrdma_pace_due(struct rpcrdma_pace *pc, unsigned int every, int64_t gap_us)
{
	return rpcrdma_pace_tick(pc, every) && rpcrdma_pace_clock(pc, gap_us);
}

/* Internal log, routed through rpcrdma_set_log(). */
void rpcrdma_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define rpcrdma_err(...) rpcrdma_log(RPCRDMA_LOG_ERR, __VA_ARGS__)
#define rpcrdma_warn(...) rpcrdma_log(RPCRDMA_LOG_WARNING, __VA_ARGS__)
#define rpcrdma_info(...) rpcrdma_log(RPCRDMA_LOG_INFO, __VA_ARGS__)
#define rpcrdma_dbg(...) rpcrdma_log(RPCRDMA_LOG_DEBUG, __VA_ARGS__)

/*
 * Counters change on their owners' threads (a poller, a client's caller,
 * a thread registering memory) while rpcrdma_*_stats() and the publisher
 * read them from any: every change and every read is a relaxed atomic, so
 * that a reader sees each counter whole and two writers lose nothing.
 */
#define rpcrdma_count_add(field, n) ((void)__atomic_fetch_add(&(field), (n), __ATOMIC_RELAXED))
#define rpcrdma_count_sub(field, n) ((void)__atomic_fetch_sub(&(field), (n), __ATOMIC_RELAXED))
#define rpcrdma_count_inc(field) rpcrdma_count_add(field, 1)
#define rpcrdma_count_read(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* Heap accounting for rpcrdma_stats.heap_bytes. */
void *rpcrdma_zalloc(struct rpcrdma_stats *stats, size_t size);
/* @p (@old bytes, or NULL) grown or shrunk to @size bytes; the new part is not zeroed. */
void *rpcrdma_realloc(struct rpcrdma_stats *stats, void *p, size_t old, size_t size);
void rpcrdma_free(struct rpcrdma_stats *stats, void *p, size_t size);

/* Length of a sockaddr by family; 0 for an unsupported family. */
socklen_t rpcrdma_sockaddr_len(const struct sockaddr *sa);

/*
 * The -errno that a failed verbs or rdma_cm call left in errno (those that
 * return -1), or @fallback (a negative errno) when it left none.
 */
static inline int rpcrdma_errno(int fallback)
{
	return errno ? -errno : fallback;
}

/* @len rounded up to XDR's 4-byte units. */
static inline uint64_t xdr_round4(uint64_t len)
{
	return (len + 3) & ~(uint64_t)3;
}

#endif /* RPCRDMA_UTIL_H */

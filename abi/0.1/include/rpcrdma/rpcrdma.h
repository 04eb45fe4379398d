/* SPDX-License-Identifier: MIT */
/*
 * librpcrdma: RPC-over-RDMA Version 1 (RFC 8166) for userspace.
 *
 * Conventions that hold for every public function unless its comment says
 * otherwise: functions return 0 (or a non-negative count) on success and a
 * negative errno on failure, and leave errno alone; constructors fill an out
 * parameter; every destroy function accepts NULL.
 */
#ifndef RPCRDMA_RPCRDMA_H
#define RPCRDMA_RPCRDMA_H

#include <stdint.h>

#include <rpcrdma/proto.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RPCRDMA_VERSION_MAJOR 0
#define RPCRDMA_VERSION_MINOR 1
#define RPCRDMA_VERSION_MICRO 0

/**
 * rpcrdma_version_string - the library's version, "major.minor.micro"
 *
 * Returns a static string of the library actually loaded, which may differ
 * from the RPCRDMA_VERSION_* macros the caller was compiled with.
 */
const char *rpcrdma_version_string(void);

/** Severity of a log message, as syslog's. */
enum rpcrdma_log_level {
	RPCRDMA_LOG_ERR = 3,
	RPCRDMA_LOG_WARNING = 4,
	RPCRDMA_LOG_INFO = 6,
	RPCRDMA_LOG_DEBUG = 7,
};

/**
 * rpcrdma_set_log - route the library's log messages
 * @fn: called with each message (no trailing newline) at or below
 *	@max_level; NULL to discard them all (the default: the library
 *	prints nothing by itself)
 * @arg: passed to @fn
 * @max_level: an &enum rpcrdma_log_level
 *
 * @fn may run on any thread that drives a transport; it must not call back
 * into the library. Set it before creating transports.
 */
void rpcrdma_set_log(void (*fn)(int level, const char *msg, void *arg), void *arg, int max_level);

/**
 * struct rpcrdma_stats - counters of one client, or of one server (summed
 * over its connections, past and present)
 * @calls: calls sent (client) or received (server)
 * @replies: replies received (client) or sent (server)
 * @rdma_errors: RDMA_ERROR messages received (client) or sent (server)
 * @dropped: received messages dropped as malformed or unexpected
 * @read_chunks: Read chunks sent (client) or pulled (server)
 * @write_chunks: Write chunks offered (client) or filled (server)
 * @reply_chunks: Reply chunks offered (client) or filled (server)
 * @bounce_bytes: payload bytes copied because they were not in registered
 *	memory
 * @flushes: completions flushed by a connection loss
 * @wc_errors: completions with an error other than flush
 * @credit_stalls: calls that waited for a credit
 * @sq_waits: chains of work requests that waited for send-queue space
 * @retransmits: calls sent again on a new connection
 * @timeouts: calls that timed out
 * @connects: connections established
 * @disconnects: connections closed
 * @registered_bytes: memory registered with the device now
 * @heap_bytes: heap memory held now
 */
struct rpcrdma_stats {
	uint64_t calls;
	uint64_t replies;
	uint64_t rdma_errors;
	uint64_t dropped;
	uint64_t read_chunks;
	uint64_t write_chunks;
	uint64_t reply_chunks;
	uint64_t bounce_bytes;
	uint64_t flushes;
	uint64_t wc_errors;
	uint64_t credit_stalls;
	uint64_t sq_waits;
	uint64_t retransmits;
	uint64_t timeouts;
	uint64_t connects;
	uint64_t disconnects;
	uint64_t registered_bytes;
	uint64_t heap_bytes;
};

#ifdef __cplusplus
}
#endif

/* The umbrella: the native client and server come with the base. */
#include <rpcrdma/clnt.h>
#include <rpcrdma/svc.h>

#endif /* RPCRDMA_RPCRDMA_H */

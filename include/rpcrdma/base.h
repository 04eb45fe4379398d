/* SPDX-License-Identifier: MIT */
/*
 * librpcrdma's base: the conventions every public function follows, the
 * version, the log, the counters. Every public header includes it; a
 * program includes <rpcrdma/rpcrdma.h>, which brings everything.
 *
 * Conventions that hold for every public function unless its comment says
 * otherwise: functions return 0 (or a non-negative count) on success and a
 * negative errno on failure, and leave errno alone; constructors fill an out
 * parameter; every destroy function accepts NULL.
 *
 * Structs that grow. Every struct the caller fills for the library
 * (&struct rpcrdma_clnt_attr, &struct rpcrdma_svc_attr, &struct
 * rpcrdma_call) and every struct the library fills for the caller (&struct
 * rpcrdma_stats, &struct rpcrdma_clnt_info) begins with uint32_t
 * struct_size, which the caller sets to the size of the struct as the
 * header it was built with declares it: RPCRDMA_SIZED(var) in a designated
 * initializer, or RPCRDMA_INIT(&var) to zero the struct and set it. Later
 * releases only append fields. The library reads, and fills, only the
 * fields that lie within struct_size; fields a smaller (older) struct lacks
 * take their defaults. A struct_size below the struct's first version (0,
 * say: the size was not set) fails with -EINVAL, one larger than this
 * library knows (the program was built against a newer header) with
 * -EOPNOTSUPP: fields are never silently ignored.
 *
 * The codec's structs (<rpcrdma/proto.h>) mirror the wire and carry no
 * size, nor does the buffer descriptor of <rpcrdma/tirpc.h> (a pointer and
 * a length); when one changes, the functions that take it get a new symbol
 * version and the old layout stays served under the old one, as do the
 * structs above in their layouts before they had a size (librpcrdma 0.1).
 */
#ifndef RPCRDMA_BASE_H
#define RPCRDMA_BASE_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RPCRDMA_VERSION_MAJOR 0
#define RPCRDMA_VERSION_MINOR 2
#define RPCRDMA_VERSION_MICRO 0

/** RPCRDMA_SIZED - in a designated initializer of @var: its struct_size */
#define RPCRDMA_SIZED(var) .struct_size = sizeof(var)

/** RPCRDMA_INIT - zero the struct @ptr points to and set its struct_size */
#define RPCRDMA_INIT(ptr) \
	(memset((ptr), 0, sizeof(*(ptr))), (ptr)->struct_size = sizeof(*(ptr)))

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
 * @struct_size: set by the caller (see the conventions above)
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
 * @registered_bytes: the library's own buffers registered with the device
 *	now (send and receive buffers, bounce buffers, Read sinks, long
 *	replies); @heap_bytes counts them too. Regions the application
 *	registers (rpcrdma_clnt_mem_register(), rpcrdma_svc_mem_register())
 *	are its own memory and count in neither
 * @heap_bytes: heap memory the transport holds now, registered or not (the
 *	libtirpc adapters' own handles and XDR buffers are not counted)
 * @conn_visits: server: connections rpcrdma_svc_poll() visited, which are
 *	only those with work (an idle connection costs no visit); client: 0
 * @conn_rejects: server: connection requests refused (max_connections
 *	reached, or no resources for one more); client: 0
 * @keepalives: keepalive probes sent (zero-length RDMA Writes)
 * @keepalive_closes: connections closed because a probe failed or went
 *	unanswered for keepalive_ms
 * @idle_closes: server: connections closed after idle_timeout_ms without
 *	a call; client: 0
 * @credit_overruns: server: connections closed because the client sent
 *	past its credits: a call beyond max_requests in progress, or more
 *	replies due than its send buffers allow (rpcrdma_svc_listen(3),
 *	"Credits"); client: 0
 * @reply_overflows: server: replies that did not fit the room the client
 *	offered for them (inline, Write or Reply chunk), answered with
 *	RDMA_ERROR / ERR_CHUNK instead (RFC 8166 section 4.5); client: 0
 * @idle_evictions: server: idle connections closed to make room for a new
 *	one at max_connections; client: 0
 */
struct rpcrdma_stats {
	uint32_t struct_size;
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
	uint64_t conn_visits;
	uint64_t conn_rejects;
	uint64_t keepalives;
	uint64_t keepalive_closes;
	uint64_t idle_closes;
	uint64_t credit_overruns;
	uint64_t reply_overflows;
	uint64_t idle_evictions;
};

/**
 * rpcrdma_stat_serve - serve this process's counters to rpcrdma-stat
 * @path: a Unix socket to create (a socket file left there is replaced)
 *
 * From now on, a thread of the library answers each connection to @path
 * with the counters (&struct rpcrdma_stats) of every client and of every
 * server poller of this process, one line each, then closes it: see
 * rpcrdma-stat(1) for the format. The counters are copies their owners
 * publish at most every 100 ms while busy and whenever they go idle, so a
 * snapshot may be that old. Setting RPCRDMA_STAT_SOCKET=@path in the
 * environment does the same when the first client or server is made, for
 * programs that do not call this. Thread-safe.
 *
 * Returns 0, -EALREADY (serving already), -EINVAL, -ENAMETOOLONG, or
 * another -errno from socket(), bind() or listen().
 */
int rpcrdma_stat_serve(const char *path);

/**
 * rpcrdma_stat_stop - stop serving counters, removing the socket
 *
 * Returns 0, or -ENOENT when not serving.
 */
int rpcrdma_stat_stop(void);

/* A registration of memory (rpcrdma_clnt_mem_register(), rpcrdma_svc_mem_register()). */
struct rpcrdma_mem;

/**
 * rpcrdma_mem_deregister - undo rpcrdma_clnt_mem_register() or
 * rpcrdma_svc_mem_register() (a client's or a server's registration alike)
 * @mem: the registration, or NULL
 *
 * Returns 0, or -EBUSY while a call in flight uses the region (nothing is
 * changed then).
 */
int rpcrdma_mem_deregister(struct rpcrdma_mem *mem);

#ifdef __cplusplus
}
#endif

#endif /* RPCRDMA_BASE_H */

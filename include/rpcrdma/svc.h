/* SPDX-License-Identifier: MIT */
/*
 * RPC-over-RDMA server, native API.
 *
 * A server listens on one address and accepts connections. It belongs to the
 * thread that drives it: call every function below from that thread (or
 * under a lock the caller holds); callbacks run on it, from inside the poll
 * functions. Replies may be sent later than the on_call callback, from the
 * same thread, so an application can finish calls asynchronously, or from
 * worker threads with RPCRDMA_SVC_WORKERS ("Threads" below).
 *
 * The server never exposes its memory to a peer: its buffers are registered
 * for local access only.
 */
#ifndef RPCRDMA_SVC_H
#define RPCRDMA_SVC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpcrdma/base.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rpcrdma_svc;
struct rpcrdma_svc_conn;
struct rpcrdma_svc_call;
struct rpcrdma_mem;

/** Connection events reported through &rpcrdma_svc_attr.on_conn. */
enum rpcrdma_conn_event {
	RPCRDMA_CONN_ESTABLISHED = 1,	/* ready for calls */
	/*
	 * Gone: no more calls; the pointer dies after the callback. Reported
	 * once for every connection reported ACCEPTED, whether or not it was
	 * ever ESTABLISHED.
	 */
	RPCRDMA_CONN_CLOSED,
	/*
	 * Accepted, from inside rpcrdma_svc_listen_poll(): the connection and
	 * its descriptor (rpcrdma_svc_conn_fd()) exist from now on, before
	 * ESTABLISHED, so that an adapter polling each connection by itself
	 * can start watching it.
	 */
	RPCRDMA_CONN_ACCEPTED,
};

/*
 * Threads. Without RPCRDMA_SVC_WORKERS a server and its calls belong to
 * the thread that polls it (or to whoever holds the lock the application
 * serialises them with). With it, a call handed to a worker thread can be
 * finished from that thread with rpcrdma_svc_reply(), _reply_buf(),
 * _reply_commit(), _reply_payload(), _reply_err_chunk() and
 * rpcrdma_svc_call_drop(): called from a thread other than the poller (the
 * thread that last entered rpcrdma_svc_poll(), rpcrdma_svc_listen_poll()
 * or rpcrdma_svc_conn_poll()), each hands its work to the poller, waits
 * for it (rpcrdma_svc_fd() and rpcrdma_svc_listen_fd() wake for it at
 * once) and returns what it would have returned on the poller, or -EIO if
 * it could not wake the poller (nothing was done; the call is still the
 * worker's). The accessors of a call (rpcrdma_svc_call_xid(), _msg(),
 * _payload(), _payloads(), _write_chunk(), _write_segs()) read only the
 * call and are safe from the thread that holds it. Everything else stays
 * on the poller. The poller must keep polling while workers hold calls:
 * a handoff waits for it, and never while the poller waits for the worker.
 */
#define RPCRDMA_SVC_WORKERS 0x1u

/*
 * Shared receive queues. With RPCRDMA_SVC_SRQ each poller has, per device,
 * one SRQ whose receive buffers serve all its connections, CQs its
 * connections share, and one pool of send buffers; a connection then
 * holds no buffers while it is idle. The pool grows with use up to
 * srq_size receives.
 *
 * Credits stay honest: the SRQ always holds a receive for every call each
 * client may still send under the grants it was given (RFC 8166 3.3.1),
 * so no client meets an RNR, even with rnr_retry 0. A reply grants twice
 * the most calls the client had in progress lately (over the last
 * 2 x max_requests replies or so), at least 4 and at most max_requests,
 * and never more than fits beyond those commitments (but at least 1); one
 * receive stays in reserve for each connection that may send none. So a
 * pipelining client's grant doubles per round trip, one that calls one at
 * a time keeps 4 receives committed while idle (one that pipelined, then
 * went idle, keeps its last grant), busy connections share what idle ones
 * do not hold, and a connection request that finds no reserve left is
 * refused. A client past its credits is served from receives no one was
 * promised while it has fewer than max_requests calls in progress, and
 * closed otherwise (see "Credits" at &rpcrdma_svc_attr). The per-connection descriptor functions (rpcrdma_svc_conn_fd(),
 * _conn_poll(), _conn_arm()) return -EOPNOTSUPP: completions arrive on the
 * poller's shared CQs.
 */
#define RPCRDMA_SVC_SRQ 0x2u

/*
 * Busy polling. With RPCRDMA_SVC_BUSY_POLL, for an application that calls
 * rpcrdma_svc_poll() (or rpcrdma_svc_poller_poll()) in a loop: a connection
 * a poll finds drained stays polled, not armed, until it has been drained
 * for a millisecond, so that a client's next call costs no completion
 * event; and polls that find nothing read the epoll set (a system call)
 * at most every 20 us, so a connection idle for longer than a millisecond
 * is heard of up to 20 us late. Such a loop makes almost no system calls. rpcrdma_svc_wait() and rpcrdma_svc_poller_wait()
 * still arm every drained connection before they sleep; an application
 * that sleeps on rpcrdma_svc_fd() itself must do so only once
 * rpcrdma_svc_arm() has returned 0 (which it does once the connections
 * polled on have been armed), and must not sleep on
 * rpcrdma_svc_poller_fd() at all.
 */
#define RPCRDMA_SVC_BUSY_POLL 0x4u

/* The defaults of &rpcrdma_svc_attr.keepalive_ms and .idle_timeout_ms (0 there). */
#define RPCRDMA_SVC_DEF_KEEPALIVE_MS 30000
#define RPCRDMA_SVC_DEF_IDLE_TIMEOUT_MS 360000

/**
 * struct rpcrdma_svc_attr - how to listen
 * @struct_size: set by the caller: RPCRDMA_SIZED() (rpcrdma.h)
 * @addr: address to bind (IPv4 or IPv6; port 0 picks a free one); required
 * @backlog: listen backlog (default 16)
 * @max_requests: credits granted to each client: receives kept posted and
 *	calls in progress per connection at most (default 32, 1..1024); a
 *	call past it closes the connection ("Credits" below)
 * @inline_size: largest inline message received and sent, in bytes
 *	(default 4096, 1024..65536)
 * @on_call: a call arrived; required. The call is the application's until
 *	it answers it with rpcrdma_svc_reply() / rpcrdma_svc_reply_commit()
 *	or drops it with rpcrdma_svc_call_drop(), now or later.
 * @on_conn: a connection was established or closed; optional
 * @arg: passed to the callbacks
 * @flags: 0, or RPCRDMA_SVC_WORKERS: calls may be answered from other
 *	threads (see "Threads" below), RPCRDMA_SVC_SRQ: shared receive
 *	queues (see "Shared receive queues" above), and RPCRDMA_SVC_BUSY_POLL
 *	(see "Busy polling" above)
 * @max_read: largest call the server pulls by RDMA Read (all of a call's
 *	Read chunks together; default 64 MiB): larger ones get ERR_CHUNK
 * @max_reply: largest reply sent through a client's Reply chunk (default
 *	64 MiB)
 * @max_connections: connections served at once at most (default 1024,
 *	1..65536). A request beyond it closes the server's oldest idle
 *	connection to make room (one whose calls the application holds none
 *	of, and that made no call for a second; "Idle connections" below),
 *	counted in stats.idle_evictions, and is accepted. Only when none is
 *	idle is it rejected (a consumer-defined reject without private data;
 *	the client's connect fails with -ECONNREFUSED), counted in
 *	stats.conn_rejects and logged
 *
 * @pollers: threads that serve the connections (default 1, at most 64):
 *	each connection belongs to one, given round robin when it is
 *	accepted; see rpcrdma_svc_poller_wait()
 * @srq_size: with RPCRDMA_SVC_SRQ, the most receives each poller posts
 *	on its SRQ (default and most 65536, at least max_requests; fitted to
 *	the device's max_srq_wr), and so the most connections it holds; the
 *	pool grows with the credits granted, each receive taking
 *	@inline_size bytes of registered memory
 * @keepalive_ms: after this long without hearing from a client (no call,
 *	no answered probe), probe it with a zero-length RDMA Write; a probe
 *	that fails or stays unanswered for another @keepalive_ms closes the
 *	connection (stats.keepalive_closes). Finds clients that vanished
 *	without a word (a crashed node sends no disconnect on RoCE) and lost
 *	DISCONNECTED events: such a connection is closed within twice
 *	@keepalive_ms and a tick (below) of the client's last word. 0: the
 *	default, RPCRDMA_SVC_DEF_KEEPALIVE_MS (30 s, so a silent client is
 *	found within about a minute); negative: off; else at least 10 ms
 * @idle_timeout_ms: close a connection that sent no call for this long
 *	while the application held none of its calls (stats.idle_closes), as
 *	NFS servers do with idle clients; the client reconnects when it next
 *	calls. 0: the default, RPCRDMA_SVC_DEF_IDLE_TIMEOUT_MS (6 minutes,
 *	knfsd's idle period); negative: off; else at least 10 ms
 *
 * Both are timed by a timer in each poller's descriptor (rpcrdma_svc_fd(),
 * rpcrdma_svc_poller_fd(), and rpcrdma_svc_listen_fd() for poller 0), and
 * checked by the poll that finds it expired; a tick costs the poller one
 * pass over its connections, every quarter of the shorter bound but at
 * most every second and at least every 10 ms (so with the defaults, once a
 * second). With both off there is no timer. The probes and ticks are
 * timed, not counted per call: a busy connection pays nothing for them.
 *
 * Idle connections. A look at a connection (a tick, or the search for one
 * to close at @max_connections) notes whether it received a message since
 * the last look or has calls the application holds; a connection is idle
 * when it has had neither for a second. So one that never calls is idle a
 * second after it was accepted, and one that calls more often than once a
 * second is never closed to make room.
 *
 * What one connection can make the server hold is bounded by these:
 * @max_requests receives and calls at once, each call at most
 * @inline_size inline, @max_read pulled and @max_reply sent, and
 * 2 x @max_requests + 8 send buffers (@max_requests + 8 made when it is
 * accepted, 8 more at a time when replies are due faster than their Sends
 * complete); and the server holds at most @max_connections connections
 * (beside those it closed to make room, until their drain ends). With
 * RPCRDMA_SVC_SRQ a connection's receives come from its poller's pool: at
 * most the credits it was granted (a client past them is closed once no
 * unpromised receive is left), the pool at most @srq_size.
 *
 * Credits (RFC 8166 section 3.3.1). A client within its credits never has
 * more than @max_requests calls outstanding. So a message that arrives
 * while @max_requests calls of its connection are in progress (received,
 * not yet answered nor dropped) is from a client past its credits: it is
 * dropped and the connection closed. A reply the application hands over
 * is sent, or its connection is closed: the client learns its calls
 * failed, and sends them again on a new connection; no reply is lost with
 * the connection left up. The connection is closed when one more reply is
 * due than the send buffers above allow (a client far past its credits),
 * or when no memory for a reply can be had (the reply functions return
 * -ENOMEM). Each close for credits is logged and counted in
 * stats.credit_overruns, with the message that overran in stats.dropped.
 */
struct rpcrdma_svc_attr {
	uint32_t struct_size;
	const struct sockaddr *addr;
	int backlog;
	uint32_t max_requests;
	uint32_t inline_size;
	void (*on_call)(struct rpcrdma_svc_call *call, void *arg);
	void (*on_conn)(struct rpcrdma_svc_conn *conn, enum rpcrdma_conn_event event, void *arg);
	void *arg;
	uint32_t flags;
	uint64_t max_read;
	uint64_t max_reply;
	uint32_t max_connections;
	uint32_t pollers;
	uint32_t srq_size;
	int keepalive_ms;
	int idle_timeout_ms;
};

/**
 * rpcrdma_svc_listen - create a server and start listening
 * @attr: where and how; copied
 * @out: the new server
 *
 * Returns 0, or -EINVAL (bad @attr, its struct_size too small),
 * -EOPNOTSUPP (struct_size larger than this library knows), -EADDRINUSE,
 * -ENODEV, -ENOMEM, or
 * another -errno from rdma_cm.
 */
int rpcrdma_svc_listen(const struct rpcrdma_svc_attr *attr, struct rpcrdma_svc **out);

/**
 * rpcrdma_svc_destroy - stop listening, close every connection, free
 * @svc: the server, or NULL
 *
 * Every connection is drained (each of its work requests completed or
 * flushed, each buffer released once) before this returns. Calls the
 * application still holds stay valid: replying to them fails with
 * -ENOTCONN, and they must still be finished (reply or drop) to release
 * them. Call it once no thread polls the server any more (stop every
 * poller first) and no worker is inside a reply function. Destroying a
 * server twice, or using it (or a call or connection of it) after this,
 * is a use-after-free, as with any C object.
 */
void rpcrdma_svc_destroy(struct rpcrdma_svc *svc);

/**
 * rpcrdma_svc_addr - the bound address (with the port picked for port 0)
 * @svc: the server
 * @addr: filled in
 * @len: in: bytes at @addr; out: the address length
 *
 * Returns 0 or -ENOSPC.
 */
int rpcrdma_svc_addr(const struct rpcrdma_svc *svc, struct sockaddr *addr, socklen_t *len);

/**
 * rpcrdma_svc_fd - one descriptor for the whole server
 * @svc: the server
 *
 * Event mode: call rpcrdma_svc_poll() until it returns less than its
 * budget, then rpcrdma_svc_arm(), and sleep on this descriptor only if that
 * returned 0.
 */
int rpcrdma_svc_fd(const struct rpcrdma_svc *svc);

/**
 * rpcrdma_svc_poll - make progress on the listener and the connections
 *	that have work
 * @svc: the server
 * @budget: most completions to process per connection (> 0)
 *
 * Accepts and closes connections, processes completions, and calls the
 * callbacks. It visits only connections with work: those whose descriptor
 * woke (one epoll_wait() on rpcrdma_svc_fd() per call, whatever the number
 * of connections), those with work left from an earlier pass, and those
 * the application gave work outside a poll; a connection whose completions
 * are drained is armed and left alone until its descriptor wakes, so an
 * idle connection costs nothing (stats.conn_visits counts the visits).
 * Returns the number of events and completions processed, or a -errno; a
 * connection that used its whole budget makes the result >= @budget (call
 * again).
 */
int rpcrdma_svc_poll(struct rpcrdma_svc *svc, int budget);

/**
 * rpcrdma_svc_arm - prepare to sleep on rpcrdma_svc_fd()
 * @svc: the server
 *
 * rpcrdma_svc_poll() arms each connection it finds drained; this reports
 * whether any connection still has work. Returns 0 when it is safe to
 * sleep, > 0 when there is work (poll again), or a -errno.
 */
int rpcrdma_svc_arm(struct rpcrdma_svc *svc);

/**
 * rpcrdma_svc_wait - poll; if idle, arm and sleep until there is work or
 * @timeout_ms passes, then poll
 * @svc: the server
 * @timeout_ms: -1 for no bound
 *
 * Returns what rpcrdma_svc_poll() returned, 0 on timeout, or a -errno.
 */
int rpcrdma_svc_wait(struct rpcrdma_svc *svc, int timeout_ms);

/**
 * rpcrdma_svc_poller_wait - serve poller @i's connections: poll; if idle,
 *	sleep until there is work or @timeout_ms passes, then poll
 * @svc: the server
 * @i: which poller (below &rpcrdma_svc_attr.pollers)
 * @timeout_ms: -1 for no bound
 *
 * With several pollers, run one thread per poller, each calling this (or
 * rpcrdma_svc_poller_poll() and sleeping on rpcrdma_svc_poller_fd()) with
 * its own @i. Poller 0 is the one rpcrdma_svc_poll(), rpcrdma_svc_wait()
 * and rpcrdma_svc_fd() drive; it also listens and hands each connection
 * request to a poller, round robin, which accepts it (a poller that does
 * not poll delays the connections given to it). Callbacks for a
 * connection, RPCRDMA_CONN_ACCEPTED included, run on its poller's thread, and with RPCRDMA_SVC_WORKERS its calls' replies from
 * other threads are handed to that poller. Everything but the worker-safe
 * functions stays on the connection's poller; rpcrdma_svc_stats() sums the
 * pollers' counters (exact when they are not polling), from any thread. A
 * poller belongs to one thread at a time: the library, in every build,
 * refuses a second thread that enters
 * rpcrdma_svc_poll(), rpcrdma_svc_wait(), rpcrdma_svc_listen_poll(),
 * rpcrdma_svc_poller_poll() or rpcrdma_svc_poller_wait() of a poller while
 * another is inside: -EBUSY, and a message says why. Returns as
 * rpcrdma_svc_wait(), or -EINVAL for a bad @i.
 */
int rpcrdma_svc_poller_wait(struct rpcrdma_svc *svc, unsigned int i, int timeout_ms);
/** rpcrdma_svc_poller_poll - as rpcrdma_svc_poll(), for poller @i */
int rpcrdma_svc_poller_poll(struct rpcrdma_svc *svc, unsigned int i, int budget);
/** rpcrdma_svc_poller_fd - as rpcrdma_svc_fd(), for poller @i */
int rpcrdma_svc_poller_fd(const struct rpcrdma_svc *svc, unsigned int i);

/**
 * rpcrdma_svc_stats - the server's counters (see &struct rpcrdma_stats)
 * @svc: the server
 * @stats: filled in, as far as its struct_size reaches
 *
 * Returns 0, or -EINVAL (NULL argument, struct_size too small),
 * -EOPNOTSUPP (struct_size larger than this library knows).
 */
int rpcrdma_svc_stats(const struct rpcrdma_svc *svc, struct rpcrdma_stats *stats);

/**
 * rpcrdma_svc_mem_register - register memory the server sends from
 * @svc: the server
 * @addr: start of the region
 * @len: its length (> 0)
 * @out: the registration; undo with rpcrdma_mem_deregister()
 *
 * Reply payloads (rpcrdma_svc_reply_payload()) that lie within a registered
 * region go to the client by RDMA Write without a copy; others are copied
 * into a bounce buffer first. The region is registered for local access
 * only: the server never exposes memory to a peer. Thread-safe: it, and
 * rpcrdma_mem_deregister() of its regions, may run on any thread while the
 * pollers serve.
 *
 * Returns 0, -EINVAL, -ENOMEM, or a -errno from the device.
 */
int rpcrdma_svc_mem_register(struct rpcrdma_svc *svc, void *addr, size_t len,
			     struct rpcrdma_mem **out);

/* Per-connection control, for adapters that poll each connection by itself. */

/**
 * rpcrdma_svc_listen_fd - the listener's own descriptor (rdma_cm events)
 * @svc: the server
 *
 * Readable when a connection request or a listener event is pending: then
 * call rpcrdma_svc_listen_poll(). With these per-part functions, use
 * rpcrdma_svc_conn_fd() and rpcrdma_svc_conn_poll() for the connections;
 * do not mix them with rpcrdma_svc_fd()/rpcrdma_svc_poll(), and leave
 * &rpcrdma_svc_attr.pollers at 1.
 */
int rpcrdma_svc_listen_fd(const struct rpcrdma_svc *svc);

/** rpcrdma_svc_listen_poll - process pending listener events; returns their number or -errno */
int rpcrdma_svc_listen_poll(struct rpcrdma_svc *svc);

/**
 * rpcrdma_svc_conn_fd - a connection's own descriptor
 * @conn: the connection
 *
 * Readable when the connection has work: completions or its rdma_cm events.
 */
int rpcrdma_svc_conn_fd(const struct rpcrdma_svc_conn *conn);

/**
 * rpcrdma_svc_conn_poll - make progress on one connection (busy polling)
 * @conn: the connection
 * @budget: most completions to process (> 0)
 *
 * May run on_call and on_conn. After on_conn reports CLOSED, @conn must not
 * be used again. It reads the connection's events (a system call) on every
 * 16th poll, or when the libtirpc adapter's wait has just found them ready;
 * rpcrdma_svc_conn_arm() reads them before a sleep. Returns the number of
 * completions processed or a -errno.
 */
int rpcrdma_svc_conn_poll(struct rpcrdma_svc_conn *conn, int budget);

/**
 * rpcrdma_svc_conn_arm - prepare to sleep on rpcrdma_svc_conn_fd()
 * @conn: the connection
 *
 * As rpcrdma_svc_arm(), for one connection; may run the callbacks (and
 * report CLOSED). Returns 0 when it is safe to sleep, > 0 when work was
 * processed, or a -errno.
 */
int rpcrdma_svc_conn_arm(struct rpcrdma_svc_conn *conn);

/** rpcrdma_svc_conn_set_ctx / get_ctx - one pointer for the application */
void rpcrdma_svc_conn_set_ctx(struct rpcrdma_svc_conn *conn, void *ctx);
void *rpcrdma_svc_conn_get_ctx(const struct rpcrdma_svc_conn *conn);

/**
 * rpcrdma_svc_conn_addrs - local and peer addresses of a connection
 * @conn: the connection
 * @local: filled in, or NULL
 * @peer: filled in, or NULL
 *
 * Each of @local and @peer must have room for a struct sockaddr_in6.
 * Returns 0.
 */
int rpcrdma_svc_conn_addrs(const struct rpcrdma_svc_conn *conn, struct sockaddr *local,
			   struct sockaddr *peer);

/**
 * rpcrdma_svc_conn_close - close a connection from the server side
 * @conn: the connection
 *
 * Disconnects; the drain and on_conn(CLOSED) follow in later polls.
 * Returns 0.
 */
int rpcrdma_svc_conn_close(struct rpcrdma_svc_conn *conn);

/* Calls */

/**
 * rpcrdma_svc_call_msg - the RPC call message of a received call
 * @call: the call
 * @len: set to its length in bytes
 *
 * The message arrived inline, or was pulled by RDMA Read from a long call's
 * position-zero Read chunk; either way it lacks the bytes of its payloads
 * (rpcrdma_svc_call_payload()). Returns a pointer valid until the call is
 * finished.
 */
const void *rpcrdma_svc_call_msg(const struct rpcrdma_svc_call *call, size_t *len);

/**
 * rpcrdma_svc_call_payloads - how many DDP payloads (data-item Read chunks) a call has
 * @call: the call
 */
unsigned int rpcrdma_svc_call_payloads(const struct rpcrdma_svc_call *call);

/**
 * rpcrdma_svc_call_payload - one DDP payload of a call (NFS WRITE data, ...)
 * @call: the call
 * @i: which, below rpcrdma_svc_call_payloads()
 * @data: set to the bytes, pulled by RDMA Read before the call was handed up
 * @len: set to their length
 * @pos: set to their XDR position: the offset in the message (see
 *	rpcrdma_svc_call_msg()) where they belong; the message resumes after
 *	them rounded up to a multiple of 4 (the XDR padding is not sent)
 *
 * @data stays valid until the call is finished, or for ever once kept with
 * rpcrdma_svc_call_keep_payload(). Returns 0 or -EINVAL.
 */
int rpcrdma_svc_call_payload(const struct rpcrdma_svc_call *call, unsigned int i,
			     const void **data, size_t *len, uint32_t *pos);

/**
 * rpcrdma_svc_call_keep_payload - take a payload's buffer over, without a copy
 * @call: the call
 * @i: which payload
 * @len: set to its length
 *
 * The buffer becomes the application's: it outlives the call and the
 * connection, and is released with rpcrdma_svc_payload_free(). Returns it,
 * or NULL if @i is out of range or already kept, or memory is short.
 */
void *rpcrdma_svc_call_keep_payload(struct rpcrdma_svc_call *call, unsigned int i, size_t *len);

/** rpcrdma_svc_payload_free - release a buffer from rpcrdma_svc_call_keep_payload(); NULL is a no-op */
void rpcrdma_svc_payload_free(void *data);

/**
 * rpcrdma_svc_call_write_chunk - the room a client offered for a DDP result
 * @call: the call
 * @i: which Write chunk
 *
 * Returns the bytes the client's @i'th Write chunk can take, or 0 when it
 * offered fewer chunks.
 */
uint64_t rpcrdma_svc_call_write_chunk(const struct rpcrdma_svc_call *call, unsigned int i);

/**
 * rpcrdma_svc_call_write_segs - how the client's @i'th Write chunk is made
 * @call: the call
 * @i: which Write chunk
 *
 * A Write chunk with no segments asks for its result item inline (RFC 8166
 * sections 3.4.6 and 4.3.2): a payload named for it with
 * rpcrdma_svc_reply_payload() goes in the reply message, and the reply's
 * Write list carries the chunk back empty.
 *
 * Returns the number of segments of the chunk (0 for an empty one), or
 * -ENOENT when the call offered fewer chunks, -EINVAL for a NULL @call.
 */
int rpcrdma_svc_call_write_segs(const struct rpcrdma_svc_call *call, unsigned int i);

/**
 * rpcrdma_svc_reply_payload - name a DDP result for the reply (no copy)
 * @call: the call, not yet answered
 * @pos: its XDR position in the reply message that rpcrdma_svc_reply() or
 *	rpcrdma_svc_reply_commit() will send, which lacks its bytes: a
 *	multiple of 4
 * @buf: the payload (NFS READ data, ...)
 * @len: its length
 * @release: called with @arg exactly once, when the library is done with
 *	@buf: after the Send that ends the reply has completed (or flushed), or
 *	at once when the reply is never posted; may be NULL
 * @arg: for @release
 *
 * Payloads fill the client's Write chunks in the order they are named: the
 * first goes to the first Write chunk, and so on; one whose chunk is empty
 * (rpcrdma_svc_call_write_segs() is 0) goes inline instead. The library chains RDMA
 * Writes for them ahead of the reply's Send and reports to the client the
 * bytes actually written. A payload without a Write chunk to take it is
 * sent inside the reply at @pos instead (with its XDR padding). A payload
 * larger than its Write chunk makes the reply fail with -EMSGSIZE and the
 * client get ERR_CHUNK (never a truncated reply).
 *
 * Returns 0, -EINVAL (a NULL @call, a NULL @buf with a non-zero @len,
 * misplaced, or more than 32 payloads), -ENOTCONN, or -ENOMEM (no memory
 * to record it: the connection is closed, see "Credits" at
 * &rpcrdma_svc_attr); on failure @release has already run.
 */
int rpcrdma_svc_reply_payload(struct rpcrdma_svc_call *call, uint32_t pos, const void *buf,
			      size_t len, void (*release)(void *arg), void *arg);

/** rpcrdma_svc_call_xid - the call's XID (host byte order) */
uint32_t rpcrdma_svc_call_xid(const struct rpcrdma_svc_call *call);

/** rpcrdma_svc_call_conn - the connection the call came on (NULL once it closed) */
struct rpcrdma_svc_conn *rpcrdma_svc_call_conn(const struct rpcrdma_svc_call *call);

/**
 * rpcrdma_svc_reply - answer a call with a copy of @msg, and finish it
 * @call: the call; invalid after this returns, whatever the result
 * @msg: the RPC reply message
 * @len: its length
 *
 * The reply goes inline when it fits the client's receive size, through
 * the client's Reply chunk if the call offered one (then always, as RFC
 * 8166 says), with its payloads (rpcrdma_svc_reply_payload()) by RDMA
 * Write into the call's Write chunks, and by Send With Invalidate when the
 * client allows it and the call named exactly one rkey.
 *
 * Returns 0 when the reply is posted (or queued behind others for send-queue
 * space); -ENOTCONN if the connection is gone, or was closed now because
 * its client went past its credits (stats.credit_overruns, see "Credits"
 * at &rpcrdma_svc_attr); -EMSGSIZE if the reply does not fit: larger than
 * the client's inline receive size with no Reply chunk, larger than the
 * Reply chunk, or a payload larger than its Write chunk (the client then
 * gets RDMA_ERROR / ERR_CHUNK instead); -EINVAL for a NULL @call, a NULL
 * @msg with a non-zero @len, or a payload placed beyond the message (the
 * client gets ERR_CHUNK); -ENOMEM if no memory for the reply could be had
 * (the connection is closed: the client's calls fail there).
 */
int rpcrdma_svc_reply(struct rpcrdma_svc_call *call, const void *msg, size_t len);

/**
 * rpcrdma_svc_reply_buf - where to encode the reply in place (no copy)
 * @call: the call
 * @buf: set to a registered buffer owned by the call
 * @max: set to its size
 *
 * Encode the RPC reply at @buf, then send it with
 * rpcrdma_svc_reply_commit(). When the call offered a Reply chunk, @max is
 * what that chunk can take (capped by &rpcrdma_svc_attr.max_reply), else
 * what fits inline. The room for a Reply chunk is address space only: its
 * pages take memory as they are written, and only the reply's length is
 * registered, at commit, so a client offering a huge Reply chunk costs no
 * more than the reply. The call stays the application's whatever the
 * result. Returns 0, -EINVAL (a NULL argument), -ENOTCONN or -ENOMEM as
 * rpcrdma_svc_reply() says.
 */
int rpcrdma_svc_reply_buf(struct rpcrdma_svc_call *call, void **buf, size_t *max);

/**
 * rpcrdma_svc_reply_commit - send the reply encoded at rpcrdma_svc_reply_buf()
 * @call: the call; invalid after this returns, whatever the result
 * @len: bytes encoded
 *
 * Returns as rpcrdma_svc_reply(), or -EINVAL if no buffer was taken or
 * @len exceeds it.
 */
int rpcrdma_svc_reply_commit(struct rpcrdma_svc_call *call, size_t len);

/**
 * rpcrdma_svc_reply_err_chunk - answer a call with RDMA_ERROR / ERR_CHUNK
 * @call: the call, not yet answered; invalid after this returns
 *
 * For a call the application must not execute because of how its chunks
 * are made: RFC 8166 section 3.4.5 has a Responder answer ERR_CHUNK, and
 * not run the call, when a Requester reduced an argument that the Upper-
 * Layer Binding does not make DDP-eligible (a Read chunk at an XDR position
 * that must be inline). The client sees the call fail (the library's client:
 * -EREMOTEIO). Payloads named for the reply are released, as for
 * rpcrdma_svc_call_drop().
 *
 * Returns 0 when the error is posted (or queued), -ENOTCONN or -ENOMEM as
 * rpcrdma_svc_reply() says, or -EINVAL for a NULL @call.
 */
int rpcrdma_svc_reply_err_chunk(struct rpcrdma_svc_call *call);

/**
 * rpcrdma_svc_call_drop - finish a call without answering it
 * @call: the call; invalid after this returns
 */
void rpcrdma_svc_call_drop(struct rpcrdma_svc_call *call);

#ifdef __cplusplus
}
#endif

#endif /* RPCRDMA_SVC_H */

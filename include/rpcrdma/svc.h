/* SPDX-License-Identifier: MIT */
/*
 * RPC-over-RDMA server, native API.
 *
 * A server listens on one address and accepts connections. It belongs to the
 * thread that drives it: call every function below from that thread (or
 * under a lock the caller holds); callbacks run on it, from inside the poll
 * functions. Replies may be sent later than the on_call callback, from the
 * same thread, so an application can finish calls asynchronously.
 *
 * The server never exposes its memory to a peer: its buffers are registered
 * for local access only.
 */
#ifndef RPCRDMA_SVC_H
#define RPCRDMA_SVC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpcrdma/rpcrdma.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rpcrdma_svc;
struct rpcrdma_svc_conn;
struct rpcrdma_svc_call;

/** Connection events reported through &rpcrdma_svc_attr.on_conn. */
enum rpcrdma_conn_event {
	RPCRDMA_CONN_ESTABLISHED = 1,	/* ready for calls */
	RPCRDMA_CONN_CLOSED,		/* gone: no more calls; the pointer dies after the callback */
};

/**
 * struct rpcrdma_svc_attr - how to listen
 * @addr: address to bind (IPv4 or IPv6; port 0 picks a free one); required
 * @backlog: listen backlog (default 16)
 * @max_requests: credits granted to each client: receives kept posted and
 *	calls in progress per connection at most (default 32, 1..1024)
 * @inline_size: largest inline message received and sent, in bytes
 *	(default 4096, 1024..65536)
 * @on_call: a call arrived; required. The call is the application's until
 *	it answers it with rpcrdma_svc_reply() / rpcrdma_svc_reply_commit()
 *	or drops it with rpcrdma_svc_call_drop(), now or later.
 * @on_conn: a connection was established or closed; optional
 * @arg: passed to the callbacks
 * @flags: 0 (reserved)
 */
struct rpcrdma_svc_attr {
	const struct sockaddr *addr;
	int backlog;
	uint32_t max_requests;
	uint32_t inline_size;
	void (*on_call)(struct rpcrdma_svc_call *call, void *arg);
	void (*on_conn)(struct rpcrdma_svc_conn *conn, enum rpcrdma_conn_event event, void *arg);
	void *arg;
	uint32_t flags;
};

/**
 * rpcrdma_svc_listen - create a server and start listening
 * @attr: where and how; copied
 * @out: the new server
 *
 * Returns 0, or -EINVAL (bad @attr), -EADDRINUSE, -ENODEV, -ENOMEM, or
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
 * them.
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
 * rpcrdma_svc_poll - make progress on the listener and every connection
 * @svc: the server
 * @budget: most completions to process per connection (> 0)
 *
 * Busy polling: accepts and closes connections, processes completions, and
 * calls the callbacks; never arms notification. Returns the number of
 * events and completions processed, or a -errno; a connection that used its
 * whole budget makes the result >= @budget (call again).
 */
int rpcrdma_svc_poll(struct rpcrdma_svc *svc, int budget);

/**
 * rpcrdma_svc_arm - prepare to sleep on rpcrdma_svc_fd()
 * @svc: the server
 *
 * Arms every connection's completion notification and looks once more.
 * Returns 0 when it is safe to sleep, > 0 when work was found and processed
 * (poll again), or a -errno.
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

/** rpcrdma_svc_stats - the server's counters (see &struct rpcrdma_stats); returns 0 */
int rpcrdma_svc_stats(const struct rpcrdma_svc *svc, struct rpcrdma_stats *stats);

/* Per-connection control, for adapters that poll each connection by itself. */

/**
 * rpcrdma_svc_listen_fd - the listener's own descriptor (rdma_cm events)
 * @svc: the server
 *
 * Readable when a connection request or a listener event is pending: then
 * call rpcrdma_svc_listen_poll(). With these per-part functions, use
 * rpcrdma_svc_conn_fd() and rpcrdma_svc_conn_poll() for the connections;
 * do not mix them with rpcrdma_svc_fd()/rpcrdma_svc_poll().
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
 * be used again. Returns the number of completions processed or a -errno.
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
 * Returns a pointer valid until the call is finished.
 */
const void *rpcrdma_svc_call_msg(const struct rpcrdma_svc_call *call, size_t *len);

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
 * Returns 0 when the reply is posted (or queued behind others for send-queue
 * space), -ENOTCONN if the connection is gone, -EMSGSIZE if the reply does
 * not fit the client's inline receive size and the client offered no Reply
 * chunk: the client then gets RDMA_ERROR / ERR_CHUNK instead.
 */
int rpcrdma_svc_reply(struct rpcrdma_svc_call *call, const void *msg, size_t len);

/**
 * rpcrdma_svc_reply_buf - where to encode the reply in place (no copy)
 * @call: the call
 * @buf: set to a registered buffer owned by the call
 * @max: set to its size
 *
 * Encode the RPC reply at @buf, then send it with
 * rpcrdma_svc_reply_commit(). Returns 0, -ENOTCONN, or -ENOMEM.
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
 * rpcrdma_svc_call_drop - finish a call without answering it
 * @call: the call; invalid after this returns
 */
void rpcrdma_svc_call_drop(struct rpcrdma_svc_call *call);

#ifdef __cplusplus
}
#endif

#endif /* RPCRDMA_SVC_H */

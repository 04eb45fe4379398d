/* SPDX-License-Identifier: MIT */
/*
 * RPC-over-RDMA client, native API.
 *
 * A client is one connection to one server, re-established on demand. It
 * belongs to the thread that drives it: every function below must be called
 * from that thread (or under a lock the caller holds), and completion
 * callbacks run on it, from inside rpcrdma_clnt_poll() and the functions
 * that poll. The library, in every build (NDEBUG or not), refuses a
 * second thread that enters while one is inside: its call fails with
 * -EBUSY and logs why (calls from a completion callback are the same
 * thread, and allowed). A client is not made safe for concurrent callers:
 * threads that share one take a lock of their own around it. Destroying a client twice, or using it after
 * rpcrdma_clnt_destroy(), is a use-after-free, as with any C object. Nothing here blocks except rpcrdma_clnt_connect(),
 * rpcrdma_clnt_wait(), rpcrdma_clnt_call() and a reconnection, each bounded
 * by its timeout.
 */
#ifndef RPCRDMA_CLNT_H
#define RPCRDMA_CLNT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpcrdma/base.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rpcrdma_clnt;
struct rpcrdma_mem;

/**
 * RPCRDMA_CLNT_PERSISTENT_REG - expose registered memory for the life of the
 * connection instead of binding a memory window per RPC.
 *
 * Faster (no bind and invalidate work requests per RPC), weaker: memory
 * registered with rpcrdma_clnt_mem_register() and the library's bounce
 * buffers stay open to the server for reading and writing until they are
 * deregistered or the client is destroyed, so a faulty or hostile server
 * can touch them at any time, not only during the RPC that named them.
 * Use it only with trusted servers.
 */
#define RPCRDMA_CLNT_PERSISTENT_REG 0x1u

/**
 * struct rpcrdma_clnt_attr - how to connect
 * @struct_size: set by the caller: RPCRDMA_SIZED() (rpcrdma.h)
 * @addr: the server's address (IPv4 or IPv6); required
 * @src_addr: local address to bind, or NULL
 * @max_requests: RPCs in flight at most; credits asked of the server
 *	(default 32, at most 1024). A grant is clamped to [1, max_requests].
 * @inline_size: largest inline message sent and received, in bytes
 *	(default 4096, 1024..65536); the effective sizes are negotiated with
 *	the server through RFC 8797 private data
 * @connect_timeout_ms: bound on establishing a connection (default 5000)
 * @call_timeout_ms: default bound on one call; a call that times out
 *	disconnects the transport, since RDMA has no keepalive (default 30000)
 * @retries: times a call interrupted by a lost connection is sent again on a
 *	new connection, with the same XID (default 0: it fails instead). A
 *	call submitted after 100 ms without one first reads the connection's
 *	events, so that a connection the server closed meanwhile (its idle
 *	timeout) is replaced before the call goes, whatever @retries says
 * @rnr_retry: rnr_retry_count of the connection, 0..7 (default 0: the
 *	credit protocol guarantees a posted receive, so RNR means a bug)
 * @flags: 0 or %RPCRDMA_CLNT_PERSISTENT_REG
 * @max_segment: largest RDMA segment of a chunk, in bytes; longer buffers
 *	are split into several segments (default 1 MiB, at least 4096; less
 *	if the port's max_msg_sz is smaller); a chunk holds at most 16
 *	segments
 * @keepalive_ms: after this long without hearing from the server (no reply,
 *	no answered probe), probe it with a zero-length RDMA Write; a probe
 *	that fails or stays unanswered for another @keepalive_ms closes the
 *	connection (counted in stats.keepalive_closes), and the next call
 *	makes a new one. 0 (the default) or negative: off; else at least
 *	10 ms. Off by default, unlike the server's: every call in flight is
 *	bounded by its timeout, which closes a connection to a silent
 *	server, and a server that closes an idle connection says so (the
 *	next call reads it and reconnects first); what a probe adds is an
 *	idle connection found dead before the next call finds it (its Send
 *	fails, and so does the call unless @retries allows), at the price of
 *	waking every idle client. The probes are timed by a timer in rpcrdma_clnt_fd()'s set
 *	and sent by rpcrdma_clnt_arm() (so also by rpcrdma_clnt_wait()): an
 *	application that polls without ever arming sends none
 */
struct rpcrdma_clnt_attr {
	uint32_t struct_size;
	const struct sockaddr *addr;
	const struct sockaddr *src_addr;
	uint32_t max_requests;
	uint32_t inline_size;
	int connect_timeout_ms;
	int call_timeout_ms;
	unsigned int retries;
	uint8_t rnr_retry;
	uint32_t flags;
	uint32_t max_segment;
	int keepalive_ms;
};

/**
 * struct rpcrdma_call - one RPC, owned by the caller, lent to the library
 * from rpcrdma_clnt_submit() until @done runs
 * @struct_size: set by the caller: RPCRDMA_SIZED() (rpcrdma.h)
 * @msg: the RPC call message (XDR, starting with the XID), without the
 *	bytes of @payload. When it does not fit inline it goes as a long call
 *	(RDMA_NOMSG, the server pulls it with RDMA Reads); it must then stay
 *	unchanged until @done runs
 * @msg_len: its length in bytes
 * @payload: a DDP-eligible argument (RFC 8267: NFS WRITE data, ...) that
 *	the server pulls with RDMA Reads (a Read chunk), or NULL; unchanged
 *	until @done runs
 * @payload_len: its length in bytes (its XDR padding is not sent)
 * @payload_pos: where it belongs in the XDR stream of the call: an offset
 *	into @msg, a multiple of 4, at most @msg_len
 * @reply: where the RPC reply message is placed. When @reply_max exceeds
 *	what fits inline the client offers a Reply chunk over it, and a long
 *	reply lands there by RDMA Write
 * @reply_max: bytes available at @reply
 * @result: where a DDP-eligible result (NFS READ data, ...) is placed by
 *	the server's RDMA Writes (a Write chunk), or NULL; the reply at @reply
 *	then lacks those bytes, as RFC 8166 says
 * @result_max: bytes available at @result
 * @timeout_ms: bound on this call, or 0 for the client's default
 * @done: run once, on the client's thread, when the call is over: the reply
 *	is in place, the Send has completed and the library no longer touches
 *	any memory of the call. It may submit further calls.
 * @arg: for the caller
 * @status: set before @done runs: 0, or -ETIMEDOUT (timed out; the
 *	connection was closed), -ECONNRESET (the connection was lost),
 *	-EMSGSIZE (the reply did not fit @reply_max),
 *	-EREMOTEIO (the server answered RDMA_ERROR / ERR_CHUNK: it could not
 *	parse the call's chunks or carry the reply in them),
 *	-EPROTONOSUPPORT (the server answered RDMA_ERROR / ERR_VERS: it does
 *	not speak RPC-over-RDMA version 1; rpcrdma_clnt_info() tells the
 *	versions it named), -EPROTO (the server invalidated memory the call
 *	never offered; the connection is closed), -ENOTCONN (the call waited
 *	for a new connection, to be sent or sent again, and making it failed),
 *	-ECANCELED (rpcrdma_clnt_cancel(), or the client is being destroyed).
 *	A call of any shape (inline, long, with chunks) interrupted by a lost
 *	connection is sent again on the next one while @retries allows. A reply the
 *	client cannot accept (an unknown or deprecated procedure, a Read list,
 *	chunks the call did not offer or echoed longer than offered, RDMA_NOMSG
 *	without a usable Reply chunk, an unknown RDMA_ERROR code, or an RPC
 *	message that does not start with the call's XID, msg_type REPLY and a
 *	reply_stat of MSG_ACCEPTED or MSG_DENIED (RFC 5531 section 9), which
 *	also means one shorter than those 12 bytes, whichever way it came:
 *	inline, beside Write chunks, or whole in the Reply chunk) is dropped, as
 *	RFC 8166 section 4.5 requires, and counted in
 *	&struct rpcrdma_stats.dropped: the call waits on for a valid reply or
 *	its timeout
 * @reply_len: set before @done runs: bytes of the reply at @reply
 * @result_len: set before @done runs: bytes the server wrote at @result
 *
 * Buffers that lie in memory registered with rpcrdma_clnt_mem_register()
 * are exposed to the server directly, through memory windows bound for this
 * RPC only (no copy); others go through the library's registered bounce
 * buffers (a copy, counted in &struct rpcrdma_stats.bounce_bytes). Either
 * way the server can reach them only until the RPC completes: @done runs
 * after every window the call opened has been invalidated.
 */
struct rpcrdma_call {
	uint32_t struct_size;
	const void *msg;
	size_t msg_len;
	const void *payload;
	size_t payload_len;
	uint32_t payload_pos;
	void *reply;
	size_t reply_max;
	void *result;
	size_t result_max;
	int timeout_ms;
	void (*done)(struct rpcrdma_call *call);
	void *arg;
	int status;
	size_t reply_len;
	size_t result_len;
};

/**
 * rpcrdma_clnt_connect - create a client and connect it
 * @attr: where and how; copied
 * @out: the new client
 *
 * Blocks until the connection is established or @attr->connect_timeout_ms
 * passes.
 *
 * Returns 0, or -EINVAL (bad @attr, its struct_size too small),
 * -EOPNOTSUPP (struct_size larger than this library knows), -ENODEV (no
 * RDMA device reaches @attr->addr), -ECONNREFUSED (rejected or nobody listening), -ETIMEDOUT,
 * -ENOMEM, or another -errno from rdma_cm or verbs.
 */
int rpcrdma_clnt_connect(const struct rpcrdma_clnt_attr *attr, struct rpcrdma_clnt **out);

/**
 * rpcrdma_clnt_destroy - disconnect and free a client
 * @clnt: the client, or NULL
 *
 * Calls still in flight complete with -ECANCELED (their @done runs) before
 * this returns; every buffer is released and every work request has been
 * flushed when it returns. Registrations made with
 * rpcrdma_clnt_mem_register() are released too: do not deregister them
 * afterwards.
 */
void rpcrdma_clnt_destroy(struct rpcrdma_clnt *clnt);

/**
 * rpcrdma_clnt_submit - start a call
 * @clnt: the client
 * @call: the call; its XID is the first word of @call->msg
 *
 * Sends the call when a credit is free, else queues it (in order). When the
 * connection was lost, first re-establishes it (blocking, bounded).
 *
 * Returns 0 (then @call->done will run exactly once), or -EINVAL (bad
 * @call: its struct_size too small, a message shorter than an XID, a
 * misplaced payload), -EOPNOTSUPP (struct_size larger than this library
 * knows), -EMSGSIZE
 * (a buffer too large for 16 segments of @max_segment bytes), -EEXIST (its
 * XID is already in flight), -EAGAIN (@max_requests calls are already in
 * flight or queued: poll, then retry), -ENOMEM, -ENOTCONN (cannot
 * reconnect).
 */
int rpcrdma_clnt_submit(struct rpcrdma_clnt *clnt, struct rpcrdma_call *call);

/**
 * rpcrdma_clnt_cancel - abandon a call in flight
 * @clnt: the client
 * @call: a call submitted on @clnt whose @done has not run
 *
 * Invalidates the memory windows the call opened, waiting (polling) until
 * that is done, so that the server can no longer touch its buffers; then
 * @done runs with -ECANCELED before this returns. A reply that arrives
 * later is dropped. Returns 0, or -ENOENT if @call is not in flight.
 */
int rpcrdma_clnt_cancel(struct rpcrdma_clnt *clnt, struct rpcrdma_call *call);

/**
 * rpcrdma_clnt_mem_register - register memory for zero-copy calls
 * @clnt: the client
 * @addr: start of the region
 * @len: its length (> 0)
 * @out: the registration
 *
 * Buffers of a call that lie entirely within a registered region are
 * exposed to the server without copying, each through a memory window over
 * its exact bytes, for the duration of one RPC (or, with
 * %RPCRDMA_CLNT_PERSISTENT_REG, through the region itself). The region must
 * stay allocated until rpcrdma_mem_deregister().
 *
 * Returns 0, -EINVAL, -ENOMEM, or a -errno from the device.
 */
int rpcrdma_clnt_mem_register(struct rpcrdma_clnt *clnt, void *addr, size_t len,
			      struct rpcrdma_mem **out);

/**
 * rpcrdma_clnt_poll - make progress without blocking (busy polling)
 * @clnt: the client
 * @budget: most completions to process (> 0)
 *
 * Processes completions, sends queued calls, expires timed-out calls (a
 * poll that finds no completion reads the clock for them, and so does
 * every 16th poll that finds some), runs the @done callbacks of finished
 * calls, and reads the connection's
 * events (a disconnect): a system call on every device, which it makes
 * only on every 16th poll (a disconnect is seen within 16 polls), or when
 * rpcrdma_clnt_wait() has just found one ready. rpcrdma_clnt_arm() reads
 * them before a sleep.
 *
 * Returns the number of completions processed (== @budget means there may
 * be more), or a -errno.
 */
int rpcrdma_clnt_poll(struct rpcrdma_clnt *clnt, int budget);

/**
 * rpcrdma_clnt_arm - prepare to sleep on rpcrdma_clnt_fd()
 * @clnt: the client
 *
 * Reads the connection's events, arms completion notification, then looks
 * once more, since a completion that arrived just before arming raises no
 * event.
 *
 * Returns 0 when it is safe to sleep on the descriptor, > 0 when work was
 * found and processed (poll again instead of sleeping), or a -errno.
 */
int rpcrdma_clnt_arm(struct rpcrdma_clnt *clnt);

/**
 * rpcrdma_clnt_fd - a descriptor that turns readable when the client has work
 * @clnt: the client
 *
 * Event mode: call rpcrdma_clnt_poll() until it returns less than its
 * budget, then rpcrdma_clnt_arm(), and sleep on the descriptor only if that
 * returned 0. The descriptor stays the same for the client's life, across
 * reconnections. Call timeouts are not signalled on it: sleep at most
 * rpcrdma_clnt_next_timeout() milliseconds.
 */
int rpcrdma_clnt_fd(const struct rpcrdma_clnt *clnt);

/**
 * rpcrdma_clnt_next_timeout - milliseconds until the earliest call deadline
 * @clnt: the client
 * @timeout_ms: out: milliseconds, >= 0 (0 when a deadline has passed and
 *	the next poll will end that call)
 *
 * Returns 0 with *@timeout_ms set, -ENOENT when no call has a deadline (no
 * bound is needed: sleep until the descriptor turns readable; *@timeout_ms
 * is left alone), or -EINVAL for a NULL argument. (0.1 returned the
 * milliseconds, or -1 for none; programs built against it still get that.)
 */
int rpcrdma_clnt_next_timeout(const struct rpcrdma_clnt *clnt, int *timeout_ms);

/**
 * rpcrdma_clnt_wait - poll; if idle, arm and sleep until there is work or
 * @timeout_ms passes, then poll
 * @clnt: the client
 * @timeout_ms: -1 for no bound
 *
 * Returns what rpcrdma_clnt_poll() returned, 0 on timeout, or a -errno.
 */
int rpcrdma_clnt_wait(struct rpcrdma_clnt *clnt, int timeout_ms);

/**
 * rpcrdma_clnt_call - a synchronous call
 * @clnt: the client
 * @msg: the RPC call message
 * @msg_len: its length
 * @reply: buffer for the reply
 * @reply_len: in: bytes at @reply; out: bytes of the reply
 * @timeout_ms: 0 for the client's default
 *
 * Submits and waits, processing other calls' completions meanwhile. It
 * polls for the reply for a window before it sleeps: the libtirpc
 * CLIENT's adaptive window (RPCRDMA_SPIN_AUTO in <rpcrdma/tirpc.h>), or
 * RPCRDMA_SPIN_US from the environment when the client was connected.
 * A @reply buffer larger than the inline size is offered as a Reply chunk,
 * registered and invalidated on every call: offer what the reply can take.
 *
 * Returns 0, or the call's -errno status (see &struct rpcrdma_call), or
 * what rpcrdma_clnt_submit() returned.
 */
int rpcrdma_clnt_call(struct rpcrdma_clnt *clnt, const void *msg, size_t msg_len, void *reply,
		      size_t *reply_len, int timeout_ms);

/**
 * struct rpcrdma_clnt_info - what a connection negotiated
 * @struct_size: set by the caller: RPCRDMA_SIZED() (rpcrdma.h)
 * @connected: non-zero while a connection is established
 * @credits: the server's current grant, clamped
 * @inline_send: largest inline call, bytes
 * @inline_recv: largest inline reply, bytes
 * @remote_invalidate: the server accepts remote invalidation (RFC 8797)
 * @connects: connections established so far
 * @vers_low: lowest RPC-over-RDMA version the server named in its last
 *	RDMA_ERROR / ERR_VERS (0: none received)
 * @vers_high: highest version it named there (0: none received)
 * @registration: how chunks are exposed to the server, chosen on the first
 *	connection from the device's capabilities and @flags (0 before it):
 *	%RPCRDMA_CLNT_REG_WINDOWS, %RPCRDMA_CLNT_REG_PER_CALL or
 *	%RPCRDMA_CLNT_REG_PERSISTENT
 * @responder_resources: RDMA Reads of the server's the connection takes at
 *	once, as the connection manager settled it: the server's initiator
 *	depth, which is at most what the client offered (the device's limit,
 *	at most 255)
 * @send_queue: work requests the connection's send queue holds, fitted to
 *	the device
 * @inline_data: bytes a Send carries inside its work request
 *	(IBV_SEND_INLINE) on this connection: the most of 256, 64 and 0 the
 *	device accepted for the QP
 */
struct rpcrdma_clnt_info {
	uint32_t struct_size;
	int connected;
	uint32_t credits;
	uint32_t inline_send;
	uint32_t inline_recv;
	int remote_invalidate;
	unsigned int connects;
	uint32_t vers_low;
	uint32_t vers_high;
	uint32_t registration;
	uint32_t responder_resources;
	uint32_t send_queue;
	uint32_t inline_data;
};

/*
 * The values of &struct rpcrdma_clnt_info's @registration.
 * RPCRDMA_CLNT_REG_WINDOWS: type-2 memory windows bound over each chunk's
 *	exact bytes for one call and invalidated at its reply.
 * RPCRDMA_CLNT_REG_PER_CALL: for devices without type-2 windows (iWARP's
 *	siw, for one): each chunk segment is an MR of its own, registered for
 *	the call and deregistered at its reply. As narrow as windows; two
 *	verbs calls (system calls, on hardware) per segment instead of two
 *	work requests. The server is not offered remote invalidation.
 * RPCRDMA_CLNT_REG_PERSISTENT: %RPCRDMA_CLNT_PERSISTENT_REG was asked for.
 */
#define RPCRDMA_CLNT_REG_WINDOWS 1u
#define RPCRDMA_CLNT_REG_PER_CALL 2u
#define RPCRDMA_CLNT_REG_PERSISTENT 3u

/**
 * rpcrdma_clnt_info - what the connection negotiated
 * @clnt: the client
 * @info: filled in, as far as its struct_size reaches
 *
 * Returns 0, or -EINVAL (NULL argument, struct_size too small),
 * -EOPNOTSUPP (struct_size larger than this library knows).
 */
int rpcrdma_clnt_info(const struct rpcrdma_clnt *clnt, struct rpcrdma_clnt_info *info);

/**
 * rpcrdma_clnt_stats - the client's counters (see &struct rpcrdma_stats)
 * @clnt: the client
 * @stats: filled in, as far as its struct_size reaches
 *
 * Returns 0, or -EINVAL, -EOPNOTSUPP as rpcrdma_clnt_info().
 */
int rpcrdma_clnt_stats(const struct rpcrdma_clnt *clnt, struct rpcrdma_stats *stats);

/**
 * rpcrdma_clnt_disconnect - drop the connection now
 * @clnt: the client
 *
 * In-flight calls are sent again on the next connection if they have
 * retries left, else complete with -ECONNRESET. The next submit reconnects.
 * Returns 0.
 */
int rpcrdma_clnt_disconnect(struct rpcrdma_clnt *clnt);

#ifdef __cplusplus
}
#endif

#endif /* RPCRDMA_CLNT_H */

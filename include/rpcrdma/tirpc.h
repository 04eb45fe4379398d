/* SPDX-License-Identifier: MIT */
/*
 * libtirpc transports over RPC-over-RDMA: an SVCXPRT and a CLIENT, so that
 * rpcgen-generated programs run over RDMA by changing only the call that
 * creates the transport.
 *
 * Server: rpcrdma_svc_create() returns a listener SVCXPRT, registered with
 * libtirpc (xprt_register) like svc_vc_create()'s. Each accepted connection
 * gets an SVCXPRT of its own, with its own pollable descriptor, so svc_run(),
 * svc_getreq_poll() and svc_getreq_common() drive everything and services
 * registered with svc_reg() are dispatched as over TCP. Every SVCXPRT of one
 * listener belongs to the thread that runs svc_run() (or calls
 * svc_getreq_*()); create, destroy and call the functions below on that
 * thread, or while it is not running.
 *
 * Client: rpcrdma_clnt_create() returns a CLIENT like clnt_vc_create()'s;
 * several threads may call clnt_call() on it at once.
 *
 * Differences from TCP that a program may notice:
 * - Replies are bounded: a reply larger than the client's recvsize (0: the
 *   inline size, 4 KiB by default) fails (RPC_CANTDECODERES). A server
 *   answers a reply that does not fit the room its client offered (inline,
 *   a Write chunk or the Reply chunk) with RDMA_ERROR / ERR_CHUNK, as RFC
 *   8166 section 4.5 has a Responder do, counted in
 *   rpcrdma_stats.reply_overflows; the client's call then fails
 *   (RPC_CANTDECODERES). A recvsize above the inline size makes every call
 *   offer a Reply chunk (one memory window per call), except the
 *   procedures a binding bounds below the inline size (see "Upper-layer
 *   bindings"). A call larger than sendsize goes as a long call from a
 *   buffer of its own (copied once), up to 16 MiB.
 * - Destroying the listener ends its connections too (see
 *   rpcrdma_svc_create()).
 *
 * Direct data placement (RFC 8166, RFC 8267): calls and replies larger than
 * the inline size travel by RDMA Read and Write on their own. A server can
 * hand a result payload (NFS READ data) to the client's Write chunk without
 * copying it (rpcrdma_svc_reply_ddp()), and take an argument payload (NFS
 * WRITE data) without copying it (rpcrdma_svc_getpayload()); a client names
 * the buffer such payloads come from or go to with clnt_control()
 * (RPCRDMA_CLSET_DDP_ARG, RPCRDMA_CLSET_DDP_RESULT).
 */
#ifndef RPCRDMA_TIRPC_H
#define RPCRDMA_TIRPC_H

#include <stddef.h>
#include <sys/socket.h>

#include <rpc/rpc.h>

#include <rpcrdma/rpcrdma.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The TCP-like port at which NFS/RDMA servers listen by convention. */
#define RPCRDMA_NFS_PORT 20049

/**
 * rpcrdma_svc_create - a listener SVCXPRT on an RDMA address
 * @addr: the address to listen on (IPv4 or IPv6; port 0 picks a free one)
 * @sendsize: largest reply sent through a client's Reply chunk, in bytes
 *	(0: 64 MiB)
 * @recvsize: largest call pulled from a client by RDMA Read, in bytes
 *	(0: 64 MiB)
 *
 * The listener is registered with libtirpc (xprt_register()); its xp_fd is
 * the rdma_cm event channel's descriptor, its xp_netid "rdma" (IPv4) or
 * "rdma6" (IPv6), xp_ltaddr the bound address (with the port picked) and
 * xp_port that port. Register services on it with svc_reg(xprt, prog,
 * vers, dispatch, NULL); they serve every connection it accepts.
 *
 * Connections: each accepted connection is an SVCXPRT registered with
 * libtirpc at once, with a pollable descriptor of its own as xp_fd (an
 * epoll over the connection's), the peer as xp_rtaddr (and xp_raddr), and
 * the listener's netid. It reports XPRT_MOREREQS while calls it received
 * wait to be dispatched (and once more before it sleeps), for 32 calls in a
 * row at most before it lets the other transports have a turn, and
 * XPRT_DIED after the connection closed; then libtirpc destroys it. Destroying it (svc_destroy()) from the server
 * thread disconnects, waits for the connection's work requests to complete
 * or flush (at most 10 s), and frees it; a call it received and did not
 * answer gets no reply.
 *
 * Destroying the listener (svc_destroy()) ends its connections too, unlike
 * svc_vc: the connections' SVCXPRTs are unregistered, disconnected,
 * drained and freed, and then the server itself, with every registration
 * made on it. Only the connection whose call is being dispatched at that
 * moment (when a service destroys the listener) is spared until libtirpc
 * has finished with it: it turns XPRT_DIED and libtirpc destroys it when
 * the dispatch returns; its reply, if any, is not sent.
 *
 * The connections live by rpcrdma_svc_listen()'s defaults (svc.h): a client
 * silent for 30 s is probed, and its connection closed if the probe goes
 * unanswered; one that made no call for 6 minutes is closed; at 1024
 * connections the oldest idle one makes room for a new one.
 * rpcrdma_svc_create_attr() changes them.
 *
 * Credentials: AUTH_NONE and AUTH_SYS work as over TCP (libtirpc checks
 * them before dispatching: svc_getcaller(), svc_getrpccaller() and the
 * authsys_parms in rq_clntcred).
 *
 * Returns the listener, or NULL with errno set (EINVAL, EADDRINUSE, ENODEV,
 * ENOMEM, EMFILE when the descriptor is beyond libtirpc's table, ...).
 */
SVCXPRT *rpcrdma_svc_create(const struct sockaddr *addr, u_int sendsize, u_int recvsize);

/** The most threads rpcrdma_svc_run() serves a listener with. */
#define RPCRDMA_SVC_MAX_THREADS 64

/*
 * Serving on several threads. svc_run() serves every transport on one
 * thread, so a service routine that blocks (an NFS READ waiting a second
 * on the file system) holds every client. A listener made with
 * rpcrdma_svc_create_mt() is served by rpcrdma_svc_run() instead, on
 * nthreads threads: each owns its share of the connections (given round
 * robin as they are accepted, as rpcrdma_svc_attr.pollers does) and
 * dispatches their calls through libtirpc (svc_getreq_common()), a turn
 * of 32 calls per connection at most. A routine that blocks holds only the
 * connections of its own thread (and the accepting of those given to it
 * meanwhile); to hold none, defer the call (rpcrdma_svc_defer() below).
 *
 * Connections are SVCXPRTs registered with libtirpc as with
 * rpcrdma_svc_create(); libtirpc's other transports (svc_vc, svc_dg) are
 * not served by rpcrdma_svc_run(). Services (svc_reg()) are registered
 * before it starts, and must be safe to run on several threads at once
 * (rpcgen -M). A connection's SVCXPRT belongs to its thread: svc_destroy()
 * of it from another thread unregisters it at once and leaves the rest
 * (disconnect, drain, free) to its thread, within 100 ms. svc_exit(),
 * called anywhere, ends rpcrdma_svc_run() within 100 ms; svc_destroy() of
 * the listener from a service routine ends it too, and the listener is
 * destroyed once every thread has stopped.
 */

/**
 * rpcrdma_svc_create_mt - a listener SVCXPRT for rpcrdma_svc_run()
 * @addr: as rpcrdma_svc_create()
 * @sendsize: as rpcrdma_svc_create()
 * @recvsize: as rpcrdma_svc_create()
 * @nthreads: threads that will serve it (1..RPCRDMA_SVC_MAX_THREADS)
 *
 * Everything rpcrdma_svc_create() says holds, except that the listener is
 * served by rpcrdma_svc_run(), not svc_run(). Returns the listener, or NULL
 * with errno set as rpcrdma_svc_create() does (EINVAL for @nthreads).
 */
SVCXPRT *rpcrdma_svc_create_mt(const struct sockaddr *addr, u_int sendsize, u_int recvsize,
			       unsigned int nthreads);

/**
 * rpcrdma_svc_create_attr - a listener SVCXPRT with the native server's tunables
 * @tune: &struct rpcrdma_svc_attr (RPCRDMA_SIZED): @tune->addr as
 *	rpcrdma_svc_create()'s @addr, and any of backlog, max_requests,
 *	inline_size, max_connections, keepalive_ms and idle_timeout_ms, as
 *	they mean for rpcrdma_svc_listen() (0: the default; for the last
 *	two, negative: off); copied. The adapter sets the
 *	rest: on_call, on_conn, arg, pollers, max_read, max_reply (from
 *	@recvsize and @sendsize) and the flag RPCRDMA_SVC_WORKERS, which must
 *	be left 0. RPCRDMA_SVC_SRQ is refused: each connection SVCXPRT polls
 *	a CQ of its own.
 * @sendsize: as rpcrdma_svc_create()
 * @recvsize: as rpcrdma_svc_create()
 * @nthreads: 0 for a listener served by svc_run(), as rpcrdma_svc_create()
 *	makes; 1..RPCRDMA_SVC_MAX_THREADS for one served by rpcrdma_svc_run(),
 *	as rpcrdma_svc_create_mt() makes
 *
 * For NFS servers with many mostly idle clients: an idle timeout (a
 * client of this library closed for idleness reconnects on its next call),
 * keepalive probes for clients that vanished without a word, a bound on
 * connections. Everything rpcrdma_svc_create() or rpcrdma_svc_create_mt()
 * says holds. Returns the listener, or NULL with errno set as they do:
 * EINVAL also for a NULL @tune, a field the adapter sets, a struct_size too
 * small, or a tunable rpcrdma_svc_listen() refuses; EOPNOTSUPP for
 * RPCRDMA_SVC_SRQ or a struct_size larger than this library knows.
 */
SVCXPRT *rpcrdma_svc_create_attr(const struct rpcrdma_svc_attr *tune, u_int sendsize,
				 u_int recvsize, unsigned int nthreads);

/**
 * rpcrdma_svc_run - serve a listener of rpcrdma_svc_create_mt() on its threads
 * @listener: the listener
 *
 * Starts nthreads - 1 threads and serves on the calling one too, until
 * svc_exit() is called; returns once every thread has stopped. Returns 0,
 * or -EINVAL (not such a listener, or called from one of its threads),
 * -EBUSY (another thread is running it already), -ENOMEM, or another -errno when a thread could not start (then none
 * serves).
 */
int rpcrdma_svc_run(SVCXPRT *listener);

/**
 * rpcrdma_svc_register - advertise a program on the listener with rpcbind
 * @xprt: a listener from rpcrdma_svc_create()
 * @prog: the program
 * @vers: its version
 *
 * Sets (@prog, @vers) under the listener's netid, "rdma" or "rdma6", at its
 * universal address (h1.h2.h3.h4.p1.p2, or the IPv6 form) with the local
 * rpcbind, through its AF_LOCAL socket (TCP on the loopback if there is
 * none). libtirpc's rpcb_set() cannot do it: it converts addresses only for
 * the netids of its own table, and /etc/netconfig has no rdma entry.
 * `rpcinfo` then lists the program with netid rdma (`rpcinfo -p`, the
 * portmapper's view, shows only tcp and udp); clients find it with
 * rpcrdma_rpcb_getaddr(). Bind the listener to a specific address, or let
 * clients ask the rpcbind of the host they connect to (a wildcard address
 * is replaced by that host's). The NFS/RDMA convention is port 20049
 * (RPCRDMA_NFS_PORT).
 *
 * Returns rpcbind's answer (TRUE when registered; FALSE when another owner
 * holds the registration), or FALSE with rpc_createerr set: RPC_UNKNOWNPROTO
 * for an @xprt that is not a listener, RPC_SYSTEMERROR or RPC_PMAPFAILURE
 * when no rpcbind answers.
 */
bool_t rpcrdma_svc_register(SVCXPRT *xprt, rpcprog_t prog, rpcvers_t vers);

/**
 * rpcrdma_svc_unregister - withdraw what rpcrdma_svc_register() advertised
 * @xprt: the listener
 * @prog: the program
 * @vers: its version
 *
 * Unsets (@prog, @vers) for the listener's netid only. Returns as
 * rpcrdma_svc_register().
 */
bool_t rpcrdma_svc_unregister(SVCXPRT *xprt, rpcprog_t prog, rpcvers_t vers);

/**
 * rpcrdma_rpcb_getaddr - ask a host's rpcbind where a program listens for
 * RPC-over-RDMA
 * @host: the host (IPv4 or IPv6; its port is ignored: rpcbind's is 111)
 * @prog: the program
 * @vers: its version
 * @addr: set to the address registered under netid "rdma" (IPv4 @host) or
 *	"rdma6" (IPv6 @host), port included; a wildcard address becomes
 *	@host's. Pass it to rpcrdma_clnt_create().
 *
 * Asks over TCP (RPCBPROC_GETADDR, rpcbind version 3). Returns TRUE, or
 * FALSE with rpc_createerr set: RPC_PROGNOTREGISTERED when nothing is
 * registered, RPC_SYSTEMERROR or RPC_PMAPFAILURE when rpcbind cannot be
 * asked.
 */
bool_t rpcrdma_rpcb_getaddr(const struct sockaddr *host, rpcprog_t prog, rpcvers_t vers,
			    struct sockaddr_storage *addr);

/**
 * rpcrdma_svc_native - the native server behind an SVCXPRT
 * @xprt: a listener or connection SVCXPRT of this library
 *
 * For rpcrdma_svc_mem_register() (payloads in registered memory are sent
 * without a bounce copy) and rpcrdma_svc_stats(). Same thread rules as the
 * SVCXPRT; the server lives as long as its listener.
 *
 * Returns the server, or NULL if @xprt is not one of ours or its listener
 * was destroyed.
 */
struct rpcrdma_svc *rpcrdma_svc_native(SVCXPRT *xprt);

/**
 * rpcrdma_svc_getpayload - take a DDP argument payload without a copy
 * @xprt: the connection SVCXPRT being dispatched (rqstp->rq_xprt)
 * @i: which payload of the current call (0 for NFS WRITE data)
 * @data: set to the bytes
 * @len: set to their length
 *
 * A client may send an argument (RFC 8267: NFS WRITE data) as a Read chunk:
 * its bytes then arrive apart from the call message. svc_getargs() decodes
 * the arguments as if they were inline, copying the payload where the
 * decoder puts it (no copy at all if the decoder's destination pointer
 * already is @data). This function hands the payload's buffer over instead:
 * it stays valid after the call is answered, until the caller passes it to
 * rpcrdma_svc_payload_free(). It may be called before or after
 * svc_getargs(), before the reply.
 *
 * Returns 0, -EINVAL (not a connection SVCXPRT, or no call being
 * dispatched), -ENOENT (no payload @i, or already taken).
 */
int rpcrdma_svc_getpayload(SVCXPRT *xprt, unsigned int i, void **data, size_t *len);

/*
 * Deferred replies: a service routine that would block (an NFS READ waiting
 * on the file system) takes its call off the svc_run() thread and answers
 * it later from any thread, so svc_run() goes on serving the other calls
 * and clients. Use:
 *
 *	d = rpcrdma_svc_defer(rqstp->rq_xprt);	(in the service routine)
 *	hand d and a copy of the arguments to a worker; return FALSE (with
 *	rpcgen -M the dispatcher then sends nothing)
 *	...
 *	rpcrdma_svc_deferred_reply(d, xdr_result, &result);	(in the worker)
 *
 * The arguments are freed when the service routine returns (svc_freeargs):
 * copy what the worker needs. The reply is MSG_ACCEPTED / SUCCESS with the
 * call's verifier (AUTH_NONE and AUTH_SYS; not RPCSEC_GSS, whose wrapping
 * needs the dispatch context). A deferred call holds one of its client's
 * credits until it is answered or dropped. Finish every deferred call
 * before destroying the listener. svc_run() must keep running: the worker
 * hands its reply to it and waits (rpcrdma_svc_attr's RPCRDMA_SVC_WORKERS,
 * which rpcrdma_svc_create() sets).
 */
struct rpcrdma_svc_deferred;

/**
 * rpcrdma_svc_defer - take the call being dispatched off svc_run()'s thread
 * @xprt: the connection SVCXPRT being dispatched (rqstp->rq_xprt)
 *
 * Returns the deferred call, or NULL with errno EINVAL (not an RDMA
 * connection being dispatched) or ENOMEM. Payloads named with
 * rpcrdma_svc_reply_ddp() for it are released.
 */
struct rpcrdma_svc_deferred *rpcrdma_svc_defer(SVCXPRT *xprt);

/**
 * rpcrdma_svc_deferred_reply - answer a deferred call, from any thread
 * @d: the deferred call; freed, whatever the result
 * @xdr_results: encodes @results
 * @results: the procedure's results
 *
 * Returns 0 when the reply is posted, -ENOTCONN if the connection is gone,
 * -EMSGSIZE if the reply does not fit (the call is dropped), -EINVAL.
 */
int rpcrdma_svc_deferred_reply(struct rpcrdma_svc_deferred *d, xdrproc_t xdr_results,
			       void *results);

/** rpcrdma_svc_deferred_drop - finish a deferred call without answering it, from any thread */
void rpcrdma_svc_deferred_drop(struct rpcrdma_svc_deferred *d);

/**
 * rpcrdma_svc_reply_ddp - send a result payload by RDMA Write, without a copy
 * @xprt: the connection SVCXPRT being dispatched
 * @buf: the payload: the very pointer the results' XDR routine will encode
 *	as opaque data (xdr_bytes()/xdr_opaque() of a result field)
 * @len: its length, exactly the count that routine encodes
 * @release: called with @arg exactly once when the library is done with
 *	@buf (after the reply's Send completed or flushed, or at once if the
 *	payload is not used); may be NULL
 * @arg: for @release
 *
 * Call it before svc_sendreply(). While encoding the reply, the first
 * XDR_PUTBYTES of exactly (@buf, @len) is not copied: the payload goes into
 * the client's next Write chunk by RDMA Write (its XDR padding is left out,
 * as RFC 8166 says), and the reply carries everything else. When the client
 * offered no Write chunk large enough, the payload is encoded inline (or
 * into the Reply chunk) like any other bytes. Up to 8 payloads per reply,
 * in the order they are encoded. Payloads in memory registered with
 * rpcrdma_svc_mem_register() (see rpcrdma_svc_native()) are written with no
 * copy at all; others through a bounce buffer.
 *
 * Returns 0, or -EINVAL (not a connection SVCXPRT being dispatched, or too
 * many payloads), -ENOTCONN; on failure @release has already run.
 */
int rpcrdma_svc_reply_ddp(SVCXPRT *xprt, const void *buf, size_t len, void (*release)(void *arg),
			  void *arg);

/**
 * rpcrdma_svcerr_chunk - answer the call being dispatched with RDMA_ERROR /
 * ERR_CHUNK instead of an RPC reply
 * @xprt: the connection SVCXPRT being dispatched
 *
 * The transport-level refusal RFC 8166 section 3.4.5 requires when a client
 * sent an argument that must be inline as a Read chunk
 * (rpcrdma_svc_getpayload() finds a payload the procedure's arguments do
 * not allow): the dispatcher calls this instead of svc_sendreply() or a
 * svcerr_*() function, and does not execute the procedure. Payloads named
 * with rpcrdma_svc_reply_ddp() are released. Over any other transport there
 * is no such answer: a dispatcher shared with TCP checks the return value
 * and falls back to svcerr_decode().
 *
 * Returns 0 when the error is posted, -EINVAL (not a connection SVCXPRT
 * being dispatched, or the call was answered already), -ENOTCONN, -ENOMEM.
 */
int rpcrdma_svcerr_chunk(SVCXPRT *xprt);

/*
 * Upper-layer bindings (RFC 8166 section 6). A binding says, for each
 * procedure of one program version, which item of its arguments and which
 * item of its results may travel by direct data placement, and how large
 * its reply can be. Registered once per process, it is used by every
 * CLIENT and SVCXPRT of this library for that program and version, with
 * nothing else changed in rpcgen's code:
 * - a client sends a DDP-eligible argument item as a Read chunk, offers a
 *   Write chunk for a DDP-eligible result item (into the caller's buffer
 *   when the results passed to clnt_call() already point to one, e.g. a
 *   preset data_val and data_len; to find it the client encodes the
 *   results as they stand, so they must be zeroed or filled in, as XDR
 *   decoding into them requires anyway), and offers a Reply chunk only to a
 *   procedure whose largest reply exceeds its inline room;
 * - a server writes a DDP-eligible result item into the client's Write
 *   chunk: with no copy when the bytes are a buffer of
 *   rpcrdma_svc_buf_alloc(), copied once otherwise; and it answers
 *   RDMA_ERROR / ERR_CHUNK to a call that sends any other item as a Read
 *   chunk, without running it (RFC 8166 section 3.4.5).
 *
 * Items are numbered the way the XDR routine moves them: the opaques and
 * strings it encodes (fixed or variable length), from 1, in order, leaving
 * out the empty ones. For NFSv3 WRITE3args (file handle, offset, count,
 * stable, data) the file data is item 2.
 *
 * Built-in bindings: RFC 8267's NFS version 3 binding (rpcrdma_ulb_nfs3())
 * is in force from the start for program 100003 version 3, on both sides,
 * as every NFS/RDMA peer expects (the Linux client offers a Write chunk
 * for READ data, with no Reply chunk, and sends WRITE data as a Read
 * chunk): an rpcgen NFSv3 program needs no registration. A program opts
 * out with rpcrdma_ulb_unregister(100003, 3); registering a binding for
 * 100003 version 3 replaces the built-in one, and registering
 * rpcrdma_ulb_nfs3() after an opt-out puts it back.
 */

/**
 * struct rpcrdma_ulb_proc - one procedure of an upper-layer binding
 * @proc: the procedure number
 * @arg_item: the DDP-eligible item of its arguments, or 0 for none
 * @res_item: the DDP-eligible item of its results, or 0 for none
 * @res_max: the Write chunk a client offers for @res_item when the caller
 *	supplies no buffer, in bytes (the item's largest size)
 * @reply_max: the largest reply, in bytes: the RPC reply header with an
 *	empty verifier and the results without @res_item (RFC 8267 section
 *	2.2's reply size estimate); 0 if it has no bound. A client offers a
 *	Reply chunk only when this exceeds what fits inline (with 0, when its
 *	recvsize does)
 * @flags: RPCRDMA_ULB_* below, or 0
 */
struct rpcrdma_ulb_proc {
	uint32_t proc;
	uint16_t arg_item;
	uint16_t res_item;
	uint32_t res_max;
	uint32_t reply_max;
	uint32_t flags;
};

/*
 * RPCRDMA_ULB_RES_NO_PRESET - @res_item is never in a buffer of the
 * caller's: the client does not look into the results passed to
 * clnt_call() for one, and offers a Write chunk of its own. For strings
 * (NFSv3 READLINK's path): XDR decodes a string into a preset pointer with
 * no bound, so callers leave it NULL, and looking for a preset buffer means
 * encoding their results, a NULL string included, which some XDR
 * implementations (AddressSanitizer's xdr_string() interceptor) cannot do.
 */
#define RPCRDMA_ULB_RES_NO_PRESET 0x1u

/**
 * struct rpcrdma_ulb - an upper-layer binding for one program version
 * @struct_size: set by the caller: RPCRDMA_SIZED() (rpcrdma.h)
 * @prog: the program
 * @vers: the version
 * @procs: the procedures; those not listed have no DDP-eligible item and
 *	no bound on their reply
 * @nprocs: how many (at most 256, procedure numbers below 65536)
 * @ddp_min: a DDP-eligible argument item shorter than this goes inline
 *	(0: 1024 bytes, the smallest inline size)
 */
struct rpcrdma_ulb {
	uint32_t struct_size;
	uint32_t prog;
	uint32_t vers;
	const struct rpcrdma_ulb_proc *procs;
	unsigned int nprocs;
	uint32_t ddp_min;
};

/**
 * rpcrdma_ulb_register - use a binding for a program version
 * @ulb: the binding; copied
 *
 * Takes effect for the calls that start afterwards, on CLIENTs and
 * SVCXPRTs that exist already too. A built-in binding of that program
 * version (NFSv3's, see "Built-in bindings") is replaced. Thread-safe.
 *
 * Returns 0, -EEXIST (that program version has a registered one),
 * -EINVAL (a malformed binding: a procedure listed twice, a @res_item
 * without @res_max, ...), -ENOSPC (64 bindings already, the built-in ones
 * counted) or -ENOMEM.
 */
int rpcrdma_ulb_register(const struct rpcrdma_ulb *ulb);

/**
 * rpcrdma_ulb_unregister - stop using a program version's binding
 * @prog: the program
 * @vers: the version
 *
 * Calls that start afterwards go without it, a built-in binding's too:
 * rpcrdma_ulb_unregister(100003, 3) is how a program opts out of the NFSv3
 * binding. Thread-safe. Returns 0 or -ENOENT (none in force).
 */
int rpcrdma_ulb_unregister(uint32_t prog, uint32_t vers);

/**
 * rpcrdma_ulb_nfs3 - the NFS version 3 binding of RFC 8267 section 4
 *
 * Program 100003 version 3: the file data of READ results (item 1, Write
 * chunks up to 1 MiB) and of WRITE arguments (item 2), the path of
 * READLINK results (item 1, up to 4096 bytes, never preset:
 * RPCRDMA_ULB_RES_NO_PRESET) and of SYMLINK arguments
 * (item 3); a reply bound for every procedure but READDIR and
 * READDIRPLUS, whose replies grow with their arguments. In force from the
 * start (see "Built-in bindings"); rpcrdma_ulb_register() of it puts it
 * back after an opt-out, and is harmless before one.
 *
 * NFS version 4 (RFC 8267 section 5) cannot be described this way: its
 * procedure is COMPOUND, whose eligible items (the data of READ and WRITE
 * operations, the link text of READLINK and CREATE) depend on the
 * operations inside each call.
 */
const struct rpcrdma_ulb *rpcrdma_ulb_nfs3(void);

/**
 * rpcrdma_svc_buf_alloc - a buffer a service's results can be sent from
 * without a copy
 * @xprt: the connection SVCXPRT being dispatched (or any SVCXPRT: over
 *	another transport the buffer is plain memory)
 * @len: its size in bytes
 *
 * Memory from the listener's pool, registered with its device. Put in the
 * results as a DDP-eligible item (NFS READ data), it is written into the
 * client's Write chunk with no copy, and the library keeps it until the
 * reply's Send has completed. Over another transport it is plain memory,
 * kept for reuse too (a few buffers per size up to 1 MiB, process-wide).
 * Give it back with rpcrdma_svc_buf_free()
 * when the results are freed (an rpcgen program's freeresult function,
 * before xdr_free(), with the pointer then set to NULL), not with free().
 * Thread-safe.
 *
 * Returns the buffer, or NULL with errno set (ENOMEM).
 */
void *rpcrdma_svc_buf_alloc(SVCXPRT *xprt, size_t len);

/**
 * rpcrdma_svc_buf_free - give back a buffer of rpcrdma_svc_buf_alloc()
 * @buf: the buffer (its start), or NULL
 *
 * It returns to its pool, or is freed, once no reply still sends from it.
 * Thread-safe. A freeresult function that cannot tell which results came
 * from the pool calls it on each and frees the others itself.
 *
 * Returns 0, or -ENOENT when @buf is not such a buffer (nothing is done).
 */
int rpcrdma_svc_buf_free(void *buf);

/**
 * rpcrdma_clnt_create - a CLIENT over RDMA
 * @addr: the server (IPv4 or IPv6, with its port)
 * @prog: program number
 * @vers: version number
 * @sendsize: the call buffer, in bytes, XDR-encoded with its header (0:
 *	the inline size); calls above the inline size go as long calls (the
 *	server pulls them by RDMA Read), and a call above @sendsize too, from
 *	a buffer of its own (copied once, up to 16 MiB)
 * @recvsize: largest reply, in bytes (0: the inline size); above the inline
 *	size every call offers a Reply chunk of this size
 *
 * Connects before returning (at most 5 s). cl_auth is authnone_create();
 * replace it with an AUTH_SYS handle (authunix_create(),
 * authsys_create_default()) like on any CLIENT: clnt_destroy() does not
 * destroy it, auth_destroy() is the caller's job. cl_netid is "rdma" or
 * "rdma6".
 *
 * clnt_call() honours its timeout (or the one set with CLSET_TIMEOUT, which
 * takes precedence, as with clnt_vc); a call that times out is abandoned:
 * its memory is fenced from the server at once, and its late reply is
 * dropped; the connection stays up (a call the server has not answered
 * 30 s past its timeout closes it, since RDMA has no keepalive). A zero
 * timeout sends the call and returns RPC_TIMEDOUT without waiting, as with
 * clnt_vc. A lost connection fails the calls in flight with RPC_CANTRECV
 * and is re-established by the next call. Several threads may call
 * clnt_call() on one CLIENT at once; their calls are in flight together (up
 * to 32). cl_auth's marshal and wrap functions then run concurrently, which
 * is safe for AUTH_NONE and AUTH_SYS.
 *
 * clnt_control() handles CLSET_TIMEOUT, CLGET_TIMEOUT, CLGET_XID,
 * CLSET_XID, CLGET_VERS, CLSET_VERS, CLGET_PROG, CLSET_PROG,
 * CLGET_SVC_ADDR (a netbuf the CLIENT owns), CLGET_SERVER_ADDR (copies the
 * sockaddr), CLGET_FD (rpcrdma_clnt_fd(): readable when the transport has
 * work; for information only), and the RPCRDMA_CL* requests below.
 *
 * Returns the CLIENT, or NULL with rpc_createerr set: cf_stat
 * RPC_SYSTEMERROR and cf_error.re_errno the reason (ECONNREFUSED,
 * ETIMEDOUT, ENODEV, ENOMEM, EINVAL, ...), as clnt_vc_create() does.
 */
CLIENT *rpcrdma_clnt_create(const struct sockaddr *addr, rpcprog_t prog, rpcvers_t vers,
			    u_int sendsize, u_int recvsize);

/**
 * struct rpcrdma_ddp_buf - a buffer for direct data placement
 * @buf: its start
 * @len: its length in bytes
 */
struct rpcrdma_ddp_buf {
	void *buf;
	size_t len;
};

/*
 * clnt_control() requests of rpcrdma_clnt_create()'s CLIENT. Each takes a
 * pointer; clnt_control() returns FALSE for a NULL one.
 */

/**
 * RPCRDMA_CLSET_DDP_RESULT - a result buffer for the next call
 * (struct rpcrdma_ddp_buf *)
 *
 * The next clnt_call() on this CLIENT (from any thread) offers the buffer
 * as its Write chunk: the server places a DDP result there (NFS READ data,
 * rpcrdma_svc_reply_ddp()), and the reply lacks those bytes. Decoding the
 * results, the first XDR_GETBYTES of exactly the number of bytes the
 * server wrote is served from the buffer, and the XDR padding read after it
 * as zeroes: without a copy when the decoder's destination is the buffer
 * itself, i.e. when the caller pre-set the result's data pointer to @buf
 * (then reset that pointer before clnt_freeres(), which would free() it).
 * With several threads, name the buffer and make the call under a lock of
 * your own. Memory registered with RPCRDMA_CLSET_MEM_REGISTER is exposed
 * without a bounce copy.
 */
#define RPCRDMA_CLSET_DDP_RESULT 0x52440001u

/**
 * RPCRDMA_CLSET_DDP_ARG - an argument payload for the next call
 * (struct rpcrdma_ddp_buf *)
 *
 * Encoding the next call's arguments, the first XDR_PUTBYTES of exactly
 * (@buf, @len) is not copied into the message: the buffer goes as a Read
 * chunk that the server pulls by RDMA Read (its XDR padding is left out),
 * and the server's decoder finds the bytes in place (see
 * rpcrdma_svc_getpayload()). Same one-call and threading rules as
 * RPCRDMA_CLSET_DDP_RESULT.
 */
#define RPCRDMA_CLSET_DDP_ARG 0x52440002u

/**
 * RPCRDMA_CLSET_MEM_REGISTER - register memory for zero-copy DDP
 * (struct rpcrdma_ddp_buf *)
 *
 * rpcrdma_clnt_mem_register() on the native client: DDP buffers that lie in
 * the region are exposed to the server without a bounce copy. The region
 * stays registered until clnt_destroy() and must stay allocated until then.
 * Returns FALSE if the registration failed.
 */
#define RPCRDMA_CLSET_MEM_REGISTER 0x52440003u

/**
 * RPCRDMA_CLSET_SPIN_US - poll this long before sleeping (u_int *, microseconds)
 *
 * A thread of clnt_call() that finds no reply yet polls the completion queue
 * for up to this many microseconds (never beyond the call's timeout) before
 * it arms the queue and sleeps. A reply that comes within the window then
 * costs no sleep and no wake-up, at the price of a CPU kept busy while it
 * waits: worth it where replies come in tens of microseconds and a core is
 * to spare. 0 sleeps at once. At most 1000000, or RPCRDMA_SPIN_AUTO; any
 * other larger value returns FALSE and changes nothing.
 *
 * RPCRDMA_SPIN_AUTO, the default, adapts the window to how soon this
 * CLIENT's replies come: twice their recent average and a few microseconds
 * more, at most 50; none while they take longer than 50 microseconds (but
 * one call in 16 still polls 50, to notice a server that became quick), and
 * none where the process may run on one CPU only (sched_getaffinity()). A
 * window that does not pay (no reply came in it, or the thread lost its CPU
 * while it polled: two polls more than 20 microseconds apart) is skipped
 * for the next call, then for twice as many calls after each such window
 * in a row, up to 256; one that pays halves that. A CLIENT whose replies
 * are slow thus sleeps at once, as with 0, one whose server answers within
 * microseconds polls for no longer than a sleep and a wake-up would have
 * cost, and one on a machine with no core to spare sleeps as a TCP client
 * does.
 *
 * The environment variable RPCRDMA_SPIN_US, when set, gives the window of
 * the CLIENTs (and of the listeners: RPCRDMA_SVCSET_SPIN_US) made
 * afterwards, for programs that cannot call clnt_control(); a value that is
 * not a number up to 1000000 means 0. RPCRDMA_CLGET_SPIN_US reads the
 * window, RPCRDMA_SPIN_AUTO included.
 */
#define RPCRDMA_SPIN_AUTO 0xffffffffu
#define RPCRDMA_CLSET_SPIN_US 0x52440006u
#define RPCRDMA_CLGET_SPIN_US 0x52440007u

/**
 * RPCRDMA_SVCSET_SPIN_US - poll this long before sleeping (u_int *, microseconds)
 *
 * For SVC_CONTROL() on a listener from rpcrdma_svc_create() and its kin, or
 * on one of its connections (which answers for its listener). A connection
 * that goes idle is polled this long for its next call before it is armed
 * and svc_run() sleeps; under rpcrdma_svc_run() each thread's poller polls
 * its connections this long before it sleeps. A call that comes within the
 * window costs no sleep and no wake-up, at the price of a CPU kept busy;
 * under svc_run() no other transport is served during the window. 0 (the
 * default) sleeps at once; at most 1000000, and a larger value
 * (RPCRDMA_SPIN_AUTO too: the adaptive window is the CLIENT's alone)
 * returns FALSE and changes nothing. Thread-safe. RPCRDMA_SVCGET_SPIN_US
 * reads it.
 * RPCRDMA_SPIN_US in the environment sets the default of the listeners made
 * afterwards, as of the CLIENTs.
 */
#define RPCRDMA_SVCSET_SPIN_US 0x52440101u
#define RPCRDMA_SVCGET_SPIN_US 0x52440102u

/**
 * RPCRDMA_CLGET_STATS - the native client's counters (struct rpcrdma_stats *,
 * its struct_size set: see rpcrdma.h). 0.1's code for it was 0x52440004,
 * with 0.1's struct, and still works as it did.
 */
#define RPCRDMA_CLGET_STATS 0x52440005u

#ifdef __cplusplus
}
#endif

#endif /* RPCRDMA_TIRPC_H */

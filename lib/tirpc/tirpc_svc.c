/* SPDX-License-Identifier: MIT */
/*
 * The SVCXPRT adapter: a native server (svc.h) whose listener and
 * connections are libtirpc transports, each polled through its own
 * descriptor by svc_run() / svc_getreq_poll().
 *
 * Everything here runs on the thread that drives libtirpc: the native
 * callbacks run inside the xp_recv of the listener (accepts) or of a
 * connection (calls, closes), or inside an xp_destroy that drains. With
 * rpcrdma_svc_run() (tirpc_run.c) each connection is its thread's, and the
 * callbacks run inside that thread's poller pass instead.
 *
 * A connection's calls wait in a FIFO until libtirpc asks for them; the
 * one being dispatched is tc->cur from xp_recv until its reply (which
 * finishes it) or the next xp_recv / xp_destroy (which drop it unanswered).
 * The connection reports XPRT_MOREREQS while calls wait and also while its
 * completion notification is not armed: libtirpc then calls xp_recv again,
 * which polls and arms before the transport goes idle, so that no
 * completion is left behind a descriptor that will never turn readable.
 *
 * A connection's xp_fd is an epoll descriptor of ours over the engine's
 * descriptor and an eventfd. After a turn of TSVC_TURN calls it yields to
 * the other transports (XPRT_IDLE) with the eventfd raised, so that
 * svc_run() comes back to it: one busy client cannot starve the others.
 * The descriptor also outlives the engine's, which the engine closes when
 * the connection goes: libtirpc never polls a closed or reused number.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <rpc/rpc.h>
#include <rpc/rpc_com.h>
#include <rpc/svc_mt.h>

#include <rpcrdma/svc.h>
#include <rpcrdma/tirpc.h>

#include "list.h"
#include "sized.h"
#include "svc_rdma.h"
#include "tirpc_msg.h"
#include "tirpc_rpcb.h"
#include "spin.h"
#include "tirpc_svc.h"
#include "tirpc_xdr.h"
#include "util.h"

static const struct xp_ops tconn_ops;
static const struct xp_ops tsvc_ops;

static struct tconn *tconn_of(SVCXPRT *xprt)
{
	return xprt && xprt->xp_ops == &tconn_ops ? container_of(xprt, struct tconn, xprt) : NULL;
}

/* In our own xp_ops: libtirpc calls them with the SVCXPRT they belong to. */
static struct tconn *tconn_op(SVCXPRT *xprt)
{
	return container_of(xprt, struct tconn, xprt);
}

struct tsvc *tsvc_of(SVCXPRT *xprt)
{
	return xprt && xprt->xp_ops == &tsvc_ops ? container_of(xprt, struct tsvc, xprt) : NULL;
}

static const char *tsvc_netid(int family)
{
	return family == AF_INET6 ? "rdma6" : "rdma";
}

static bool tsvc_set_netbuf(struct netbuf *nb, const struct sockaddr *sa)
{
	socklen_t len = rpcrdma_sockaddr_len(sa);

	nb->buf = len ? malloc(len) : NULL;
	if (!nb->buf)
		return false;
	memcpy(nb->buf, sa, len);
	nb->len = nb->maxlen = len;
	return true;
}

/* libtirpc's legacy xp_raddr (svc_getcaller()): a sockaddr_in6-sized copy. */
static void tsvc_set_raddr(SVCXPRT *xprt, const struct sockaddr *sa)
{
	socklen_t len = rpcrdma_sockaddr_len(sa);

	memset(&xprt->xp_raddr, 0, sizeof(xprt->xp_raddr));
	memcpy(&xprt->xp_raddr, sa, len);
	xprt->xp_addrlen = (int)len;
}

static void xprt_free_fields(SVCXPRT *xprt)
{
	free(xprt->xp_netid);
	free(xprt->xp_ltaddr.buf);
	free(xprt->xp_rtaddr.buf);
	xprt->xp_netid = NULL;
	xprt->xp_ltaddr.buf = NULL;
	xprt->xp_rtaddr.buf = NULL;
}

static void xprt_init_common(SVCXPRT *xprt, SVCXPRT_EXT *ext, char *verf_body, int fd,
			     const struct xp_ops *ops, const struct xp_ops2 *ops2)
{
	memset(ext, 0, sizeof(*ext));
	xprt->xp_fd = fd;
	xprt->xp_ops = ops;
	xprt->xp_ops2 = ops2;
	xprt->xp_p3 = ext;
	xprt->xp_verf.oa_flavor = AUTH_NONE;
	xprt->xp_verf.oa_base = verf_body;
	xprt->xp_verf.oa_length = 0;
}

/* Calls waiting for dispatch */

__thread struct tsvc_thread *tsvc_self;
__thread struct tconn *tsvc_dispatching;

/* With rpcrdma_svc_run(): the thread that received for it dispatches it next. */
static void tconn_mark_ready(struct tconn *tc)
{
	if (!tsvc_self || tc->ready)
		return;
	tc->ready = true;
	list_add_tail(&tc->ready_node, &tsvc_self->ready);
}

static bool tconn_push(struct tconn *tc, struct rpcrdma_svc_call *call)
{
	if (tc->qlen == tc->qcap) {
		unsigned int cap = tc->qcap ? 2 * tc->qcap : 16, i;
		struct rpcrdma_svc_call **q = malloc(cap * sizeof(*q));

		if (!q)
			return false;
		for (i = 0; i < tc->qlen; i++)
			q[i] = tc->queue[(tc->qhead + i) % tc->qcap];
		free(tc->queue);
		tc->queue = q;
		tc->qcap = cap;
		tc->qhead = 0;
	}
	tc->queue[(tc->qhead + tc->qlen) % tc->qcap] = call;
	tc->qlen++;
	tconn_mark_ready(tc);
	return true;
}

static struct rpcrdma_svc_call *tconn_pop(struct tconn *tc)
{
	struct rpcrdma_svc_call *call;

	if (!tc->qlen)
		return NULL;
	call = tc->queue[tc->qhead];
	tc->qhead = (tc->qhead + 1) % tc->qcap;
	tc->qlen--;
	return call;
}

static void tconn_drop_queued(struct tconn *tc)
{
	struct rpcrdma_svc_call *call;

	while ((call = tconn_pop(tc)))
		rpcrdma_svc_call_drop(call);
}

/* Payloads named with rpcrdma_svc_reply_ddp() that no reply took over. */
static void tconn_release_ddp(struct tconn *tc)
{
	unsigned int i;

	for (i = 0; i < tc->nddp; i++)
		if (tc->ddp[i].release)
			tc->ddp[i].release(tc->ddp[i].arg);
	tc->nddp = 0;
}

/* The dispatched call is over: drop it if nobody answered it. */
static void tconn_finish_cur(struct tconn *tc)
{
	if (tc->cur) {
		rpcrdma_svc_call_drop(tc->cur);
		tc->cur = NULL;
	}
	tconn_release_ddp(tc);
}

/* Native callbacks */

static void tconn_closed(struct tconn *tc)
{
	tc->closed = true;
	tc->conn = NULL;
	/* Replies to them could not be sent: nobody is waiting for them here. */
	tconn_drop_queued(tc);
	/* Dispatched once more, it reports XPRT_DIED and libtirpc destroys it. */
	tconn_mark_ready(tc);
}

static const struct xp_ops2 tconn_ops2;

static void tconn_close_fds(struct tconn *tc)
{
	if (tc->wake_fd >= 0)
		close(tc->wake_fd);
	if (tc->xprt.xp_fd >= 0)
		close(tc->xprt.xp_fd);
	tc->wake_fd = tc->xprt.xp_fd = -1;
}

/* Our pollable descriptor: the engine's and the wake eventfd, behind one epoll. */
static int tconn_open_fds(struct tconn *tc, struct rpcrdma_svc_conn *conn)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = epoll_create1(EPOLL_CLOEXEC);

	tc->xprt.xp_fd = fd;
	tc->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fd < 0 || tc->wake_fd < 0 ||
	    epoll_ctl(fd, EPOLL_CTL_ADD, rpcrdma_svc_conn_fd(conn), &ev) ||
	    epoll_ctl(fd, EPOLL_CTL_ADD, tc->wake_fd, &ev))
		return -1;
	/* libtirpc indexes transports by descriptor and ignores those beyond its table. */
	if (fd >= _rpc_dtablesize()) {
		rpcrdma_warn("tirpc: connection descriptor %d beyond libtirpc's table", fd);
		return -1;
	}
	return 0;
}

static void tconn_accepted(struct tsvc *ts, struct rpcrdma_svc_conn *conn)
{
	struct sockaddr_storage local, peer;
	struct tconn *tc;

	tc = calloc(1, sizeof(*tc));
	if (!tc)
		goto fail;
	memset(&local, 0, sizeof(local));
	memset(&peer, 0, sizeof(peer));
	rpcrdma_svc_conn_addrs(conn, (struct sockaddr *)&local, (struct sockaddr *)&peer);
	xprt_init_common(&tc->xprt, &tc->ext, tc->verf_body, -1, &tconn_ops, &tconn_ops2);
	tc->wake_fd = -1;
	if (tconn_open_fds(tc, conn))
		goto fail;
	tc->xprt.xp_p1 = tc;
	tc->xprt.xp_p2 = ts;
	tc->xprt.xp_netid = strdup(tsvc_netid(ts->family));
	if (!tc->xprt.xp_netid || !tsvc_set_netbuf(&tc->xprt.xp_ltaddr, (struct sockaddr *)&local) ||
	    !tsvc_set_netbuf(&tc->xprt.xp_rtaddr, (struct sockaddr *)&peer))
		goto fail;
	tsvc_set_raddr(&tc->xprt, (struct sockaddr *)&peer);
	tc->svc = ts;
	tc->conn = conn;
	tc->owner = tsvc_self;
	rpcrdma_svc_conn_set_ctx(conn, tc);
	pthread_mutex_lock(&ts->lock);
	list_add_tail(&tc->node, &ts->conns);
	pthread_mutex_unlock(&ts->lock);
	xprt_register(&tc->xprt);
	return;
fail:
	rpcrdma_warn("tirpc: cannot set up a transport for a new connection");
	if (tc) {
		tconn_close_fds(tc);
		xprt_free_fields(&tc->xprt);
		free(tc);
	}
	rpcrdma_svc_conn_close(conn);
}

static void tsvc_on_conn(struct rpcrdma_svc_conn *conn, enum rpcrdma_conn_event event, void *arg)
{
	struct tconn *tc = rpcrdma_svc_conn_get_ctx(conn);

	switch (event) {
	case RPCRDMA_CONN_ACCEPTED:
		tconn_accepted(arg, conn);
		break;
	case RPCRDMA_CONN_ESTABLISHED:
		break;
	case RPCRDMA_CONN_CLOSED:
		if (tc)
			tconn_closed(tc);
		break;
	}
}

static void tsvc_on_call(struct rpcrdma_svc_call *call, void *arg)
{
	struct rpcrdma_svc_conn *conn = rpcrdma_svc_call_conn(call);
	struct tconn *tc = conn ? rpcrdma_svc_conn_get_ctx(conn) : NULL;

	if (!tc || tc->dying || tc->closed || !tconn_push(tc, call))
		rpcrdma_svc_call_drop(call);
}

/* Connection ops */

/*
 * With RPCRDMA_SVCSET_SPIN_US: poll an idle connection that long for its
 * next call before arming it, so that a call coming meanwhile costs no
 * sleep; svc_run() serves no other transport during the window.
 */
static void tconn_spin(struct tconn *tc)
{
	unsigned int us = atomic_load_explicit(&tc->svc->spin_us, memory_order_relaxed);
	int64_t end;

	if (!us)
		return;
	end = rpcrdma_now_us() + us;
	while (!tc->closed && !tc->qlen && rpcrdma_now_us() < end) {
		rpcrdma_cpu_relax();
		rpcrdma_svc_conn_poll(tc->conn, TSVC_BUDGET);
	}
}

/* Poll until idle, then arm; stop early once a call is queued. */
static void tconn_progress(struct tconn *tc)
{
	int n;

	do {
		n = rpcrdma_svc_conn_poll(tc->conn, TSVC_BUDGET);
	} while (n >= TSVC_BUDGET && !tc->closed && !tc->qlen);
	if (!tc->closed && !tc->qlen)
		tconn_spin(tc);
	while (!tc->closed && !tc->qlen) {
		n = rpcrdma_svc_conn_arm(tc->conn);
		if (n <= 0) {
			/* Only a bad argument fails here; do not spin on it. */
			tc->armed = true;
			break;
		}
	}
}

/* Decode @call's RPC header into @msg; its stream stays ready for the arguments. */
static bool tconn_decode(struct tconn *tc, struct rpcrdma_svc_call *call, struct rpc_msg *msg)
{
	unsigned int n = rpcrdma_svc_call_payloads(call), i;
	const void *m;
	size_t len;

	m = rpcrdma_svc_call_msg(call, &len);
	if (len > UINT_MAX)
		return false;
	if (!n) {
		xdrmem_create(&tc->xdrs, (char *)(uintptr_t)m, (u_int)len, XDR_DECODE);
	} else {
		if (n > tc->nparts_max) {
			struct tirpc_splice *p = realloc(tc->parts, n * sizeof(*p));

			if (!p)
				return false;
			tc->parts = p;
			tc->nparts_max = n;
		}
		for (i = 0; i < n; i++) {
			struct tirpc_splice *part = &tc->parts[i];
			const void *data;

			if (rpcrdma_svc_call_payload(call, i, &data, &part->len, &part->pos) ||
			    part->pos > len || (i && part->pos < tc->parts[i - 1].pos))
				return false;
			part->data = data;
		}
		tirpc_xdr_splice_create(&tc->xdrs, &tc->splice, m, len, tc->parts, n);
	}
	if (!xdr_callmsg(&tc->xdrs, msg))
		return false;
	tc->cur = call;
	tc->xid = msg->rm_xid;
	tirpc_ulb_lookup((uint32_t)msg->rm_call.cb_prog, (uint32_t)msg->rm_call.cb_vers,
			 (uint32_t)msg->rm_call.cb_proc, &tc->ulb);
	return true;
}

static bool_t tconn_recv(SVCXPRT *xprt, struct rpc_msg *msg)
{
	struct tconn *tc = tconn_op(xprt);
	struct rpcrdma_svc_call *call;
	bool woke = tc->armed;
	uint64_t owed;

	tconn_finish_cur(tc);
	tc->armed = false;
	/* Only tconn_stat() writes it, on this thread: no read when it did not. */
	if (tc->wake_raised && read(tc->wake_fd, &owed, sizeof(owed)) < 0 && errno != EAGAIN)
		rpcrdma_dbg("tirpc: wake: %s", strerror(errno));
	tc->wake_raised = false;
	/* Armed, svc_run() found our descriptor ready: which of the engine's channels is? */
	if (!tc->svc->nthreads && !tc->closed)
		svc_rdma_conn_collect(tc->conn, woke);
	while (!tc->closed) {
		/* Under rpcrdma_svc_run() the thread's poller pass queued the calls. */
		if (!tc->qlen && !tc->svc->nthreads)
			tconn_progress(tc);
		call = tconn_pop(tc);
		if (!call)
			break;
		if (tconn_decode(tc, call, msg)) {
			tsvc_dispatching = tc;
			tc->turn++;
			return TRUE;
		}
		/* Not an RPC call: dropped, as svc_dg drops an undecodable datagram. */
		rpcrdma_svc_call_drop(call);
	}
	return FALSE;
}

static enum xprt_stat tconn_stat(SVCXPRT *xprt)
{
	struct tconn *tc = tconn_op(xprt);

	if (tsvc_dispatching == tc)
		tsvc_dispatching = NULL;
	if (tc->closed)
		return XPRT_DIED;
	if (tc->svc->nthreads) {
		if (tc->qlen && tc->turn < TSVC_TURN)
			return XPRT_MOREREQS;
		/* Its thread comes back to it after a turn of the others. */
		if (tc->qlen)
			tconn_mark_ready(tc);
		tc->turn = 0;
		return XPRT_IDLE;
	}
	/*
	 * Not armed: look for the next call here, as tconn_recv() would, rather
	 * than have svc_run() call it only to find nothing and arm.
	 */
	if (!tc->qlen && !tc->armed && tc->turn < TSVC_TURN) {
		tconn_progress(tc);
		if (tc->closed)
			return XPRT_DIED;
	}
	if (tc->qlen || !tc->armed) {
		uint64_t one = 1;

		if (tc->turn < TSVC_TURN)
			return XPRT_MOREREQS;
		/* Yield; the raised eventfd brings svc_run() back here. */
		if (write(tc->wake_fd, &one, sizeof(one)) < 0)
			return XPRT_MOREREQS;
		tc->wake_raised = true;
	}
	tc->turn = 0;
	return XPRT_IDLE;
}

static bool_t tconn_freeargs(SVCXPRT *xprt, xdrproc_t xdr_args, void *args_ptr)
{
	struct tconn *tc = tconn_op(xprt);

	tc->xdrs.x_op = XDR_FREE;
	return xdr_args(&tc->xdrs, args_ptr);
}

/*
 * Under a binding, a call's Read chunks may carry its DDP-eligible argument
 * item only (RFC 8166 section 3.4.5: other items must be inline).
 */
static bool tconn_reduced_ok(const struct tconn *tc)
{
	unsigned int n = rpcrdma_svc_call_payloads(tc->cur), i;
	unsigned int item = tc->ulb.proc ? tc->ulb.proc->arg_item : 0;

	if (!n || !tc->ulb.bound)
		return true;
	for (i = 0; i < n; i++)
		if (!item || tc->parts[i].item != item)
			return false;
	return true;
}

static bool_t tconn_getargs(SVCXPRT *xprt, xdrproc_t xdr_args, void *args_ptr)
{
	struct tconn *tc = tconn_op(xprt);

	if (!tc->cur)
		return FALSE;
	tc->splice.items.on = true;
	if (!SVCAUTH_UNWRAP(&SVC_XP_AUTH(xprt), &tc->xdrs, xdr_args, args_ptr)) {
		/*
		 * What the decoder made before it failed (a peer's arguments cut
		 * short) is freed here: rpcgen's dispatchers return without
		 * svc_freeargs() when svc_getargs() fails. XDR_FREE leaves NULL
		 * behind, so a dispatcher that does free them frees nothing twice.
		 */
		tconn_freeargs(xprt, xdr_args, args_ptr);
		return FALSE;
	}
	if (tconn_reduced_ok(tc))
		return TRUE;
	/* Answered ERR_CHUNK: the procedure is not run, svcerr_decode() finds no call. */
	rpcrdma_info("tirpc: xid 0x%08x: a Read chunk carries an item its binding does not "
		     "allow: ERR_CHUNK", tc->xid);
	tconn_freeargs(xprt, xdr_args, args_ptr);
	rpcrdma_svcerr_chunk(xprt);
	return FALSE;
}

/*
 * Which named payloads the engine places: the client's chunks take them in
 * order, each one that fits. An empty chunk takes one too, which the engine
 * returns inline as the client asked (RFC 8166 3.4.6), so that the next
 * payload meets the next chunk. The others are encoded like any bytes.
 */
static unsigned int tconn_pick_ddp(struct tconn *tc, struct tirpc_ddp *watch,
				   unsigned int *watched_idx)
{
	unsigned int i, n = 0;

	for (i = 0; i < tc->nddp; i++) {
		if (tc->ddp[i].len &&
		    (rpcrdma_svc_call_write_segs(tc->cur, n) == 0 ||
		     rpcrdma_svc_call_write_chunk(tc->cur, n) >= tc->ddp[i].len)) {
			watch[n] = tc->ddp[i];
			watched_idx[n++] = i;
		}
	}
	return n;
}

/*
 * Under a binding, with no payload named by hand: the results' DDP-eligible
 * item goes to the client's first Write chunk, if it offered one.
 */
static bool tconn_watch_item(struct tconn *tc, struct tirpc_ddp *watch)
{
	const struct rpcrdma_ulb_proc *p = tc->ulb.proc;

	if (tc->nddp || !p || !p->res_item || !rpcrdma_svc_call_write_segs(tc->cur, 0))
		return false;
	memset(watch, 0, sizeof(*watch));
	watch->item = p->res_item;
	return true;
}

/*
 * The item was found at @w: sent from a pool buffer with no copy (the reply
 * holds it until its Send completes), else copied now, so that the service
 * may free its results as soon as svc_sendreply() returns.
 */
static int tconn_send_item(struct tconn *tc, const struct tirpc_ddp *w)
{
	const struct rpcrdma_mem *mem = NULL;
	struct tpool_buf *b = tpool_take(tc->svc->pool, w->buf, w->len, &mem);

	return svc_rdma_reply_payload_src(tc->cur, w->pos, w->buf, w->len,
					  b ? tpool_buf_put : NULL, b, mem, !b);
}

/*
 * The reply did not fit the room the client offered for it (the inline
 * size, or its Reply chunk) with no binding item to place elsewhere: RFC
 * 8166 section 4.5.3 has a Responder that cannot send a reply answer
 * RDMA_ERROR / ERR_CHUNK, "to indicate that no RPC-level reply is possible
 * for that XID", never an RPC error of its own making (SYSTEM_ERR). The
 * call is finished, so the svcerr_systemerr() that rpcgen's dispatcher
 * calls next finds none.
 */
static bool_t tconn_reply_overflow(struct tconn *tc)
{
	int rc = svc_rdma_reply_overflow(tc->cur);

	tc->cur = NULL;
	if (rc)
		rpcrdma_info("tirpc: xid 0x%08x: the reply does not fit the room the client "
			     "offered; ERR_CHUNK not sent: %s", tc->xid, strerror(-rc));
	else
		rpcrdma_info("tirpc: xid 0x%08x: the reply does not fit the room the client "
			     "offered: ERR_CHUNK", tc->xid);
	return FALSE;
}

static bool_t tconn_reply(SVCXPRT *xprt, struct rpc_msg *msg)
{
	struct tconn *tc = tconn_op(xprt);
	struct tirpc_ddp watch[TIRPC_XDR_MAX_DDP];
	unsigned int idx[TIRPC_XDR_MAX_DDP], nwatch, i;
	bool item = false;
	struct tirpc_xdr_enc enc;
	xdrproc_t xdr_results = NULL;
	void *xdr_location = NULL;
	bool has_args = false;
	XDR xdrs;
	size_t max;
	void *buf;
	bool ok;
	int rc;

	if (!tc->cur || tc->closed || rpcrdma_svc_reply_buf(tc->cur, &buf, &max)) {
		tconn_release_ddp(tc);
		return FALSE;
	}
	if (max > UINT_MAX)
		max = UINT_MAX;
	if (msg->rm_reply.rp_stat == MSG_ACCEPTED && msg->rm_reply.rp_acpt.ar_stat == SUCCESS) {
		has_args = true;
		xdr_results = msg->acpted_rply.ar_results.proc;
		xdr_location = msg->acpted_rply.ar_results.where;
		msg->acpted_rply.ar_results.proc = TIRPC_XDR_VOID;
		msg->acpted_rply.ar_results.where = NULL;
	}
	msg->rm_xid = tc->xid;
	nwatch = tconn_pick_ddp(tc, watch, idx);
	if (has_args && tconn_watch_item(tc, &watch[0])) {
		item = true;
		nwatch = 1;
	}
	tirpc_xdr_enc_create(&xdrs, &enc, buf, (u_int)max, watch, nwatch);
	ok = tirpc_encode_replymsg(&xdrs, msg);
	/* Binding items count from the results on. */
	enc.items.on = true;
	ok = ok && (!has_args ||
		    SVCAUTH_WRAP(&SVC_XP_AUTH(xprt), &xdrs, xdr_results, xdr_location));
	if (!ok) {
		tconn_release_ddp(tc);
		if (enc.overflow)
			return tconn_reply_overflow(tc);
		/* The results routine failed: the call stays open for svcerr_systemerr(). */
		return FALSE;
	}
	/* Found payloads now belong to the engine, which releases them after the Send. */
	rc = 0;
	if (item && watch[0].found)
		rc = tconn_send_item(tc, &watch[0]);
	for (i = 0; i < nwatch && !item; i++) {
		if (!watch[i].found)
			continue;
		tc->ddp[idx[i]].release = NULL;
		if (!rc)
			rc = rpcrdma_svc_reply_payload(tc->cur, watch[i].pos, watch[i].buf,
						       watch[i].len, watch[i].release,
						       watch[i].arg);
		else if (watch[i].release)
			watch[i].release(watch[i].arg);
	}
	/* The rest were copied into the reply, or not encoded at all. */
	tconn_release_ddp(tc);
	if (rc) {
		rpcrdma_svc_call_drop(tc->cur);
		tc->cur = NULL;
		return FALSE;
	}
	rc = rpcrdma_svc_reply_commit(tc->cur, enc.pos);
	tc->cur = NULL;
	if (rc == -EMSGSIZE)	/* the engine answered ERR_CHUNK and counted it */
		rpcrdma_info("tirpc: xid 0x%08x: the reply does not fit the room the client "
			     "offered: ERR_CHUNK", tc->xid);
	else if (rc)
		rpcrdma_info("tirpc: reply to xid 0x%08x not sent: %s", tc->xid, strerror(-rc));
	return rc == 0;
}

/* Wait until the engine reports the connection closed: every WR completed or flushed. */
static void tconn_drain(struct tconn *tc)
{
	int64_t deadline = rpcrdma_now_ms() + TSVC_DRAIN_MS;

	while (!tc->closed) {
		struct pollfd pfd;
		int64_t left;
		int n;

		n = rpcrdma_svc_conn_poll(tc->conn, TSVC_BUDGET);
		if (tc->closed)
			break;
		if (n > 0)
			continue;
		n = rpcrdma_svc_conn_arm(tc->conn);
		if (tc->closed)
			break;
		if (n > 0)
			continue;
		left = deadline - rpcrdma_now_ms();
		if (left <= 0) {
			rpcrdma_warn("tirpc: connection not drained in %d ms", TSVC_DRAIN_MS);
			break;
		}
		pfd.fd = rpcrdma_svc_conn_fd(tc->conn);
		pfd.events = POLLIN;
		poll(&pfd, 1, left < 100 ? (int)left : 100);
	}
}

/*
 * Unanswered calls are dropped; the connection is closed and drained
 * through the engine, which reports CLOSED when every work request has
 * completed or flushed. Past the bound, it is left to rpcrdma_svc_destroy().
 */
static void tconn_teardown(struct tconn *tc)
{
	tc->dying = true;
	tconn_finish_cur(tc);
	tconn_drop_queued(tc);
	if (tc->closed || !tc->conn)
		return;
	rpcrdma_svc_conn_close(tc->conn);
	tconn_drain(tc);
	if (!tc->closed) {
		rpcrdma_svc_conn_set_ctx(tc->conn, NULL);
		tc->conn = NULL;
		tc->closed = true;
	}
}

static void tsvc_free(struct tsvc *ts)
{
	xprt_free_fields(&ts->xprt);
	pthread_mutex_destroy(&ts->lock);
	free(ts);
}

static void tconn_free(struct tconn *tc)
{
	struct tsvc *ts = tc->svc;
	bool last;

	if (tc->ready)
		list_del(&tc->ready_node);
	pthread_mutex_lock(&ts->lock);
	list_del(&tc->node);
	last = ts->listener_gone && list_empty(&ts->conns);
	pthread_mutex_unlock(&ts->lock);
	if (tsvc_dispatching == tc)
		tsvc_dispatching = NULL;
	tconn_close_fds(tc);
	xprt_free_fields(&tc->xprt);
	free(tc->queue);
	free(tc->parts);
	free(tc);
	/* The last connection of a destroyed listener frees what they shared. */
	if (last)
		tsvc_free(ts);
}

static void tconn_destroy(SVCXPRT *xprt)
{
	struct tconn *tc = tconn_op(xprt);

	xprt_unregister(xprt);
	if (tc->owner && tc->owner != tsvc_self) {
		/* Only its own thread may touch the connection: that thread frees it. */
		pthread_mutex_lock(&tc->owner->lock);
		list_add_tail(&tc->kill_node, &tc->owner->kill);
		pthread_mutex_unlock(&tc->owner->lock);
		return;
	}
	tconn_destroy_now(tc);
}

void tconn_destroy_now(struct tconn *tc)
{
	tconn_teardown(tc);
	tconn_free(tc);
}

static bool_t tsvc_control_of(struct tsvc *ts, const u_int rq, void *in)
{
	u_int us;

	switch (rq) {
	case RPCRDMA_SVCSET_SPIN_US:
		memcpy(&us, in, sizeof(us));
		if (us > RPCRDMA_SPIN_MAX_US)
			return FALSE;
		atomic_store(&ts->spin_us, us);
		pthread_mutex_lock(&ts->lock);
		if (ts->native)
			svc_rdma_set_spin(ts->native, us);
		pthread_mutex_unlock(&ts->lock);
		return TRUE;
	case RPCRDMA_SVCGET_SPIN_US:
		us = atomic_load(&ts->spin_us);
		memcpy(in, &us, sizeof(us));
		return TRUE;
	default:
		return FALSE;
	}
}

/* A connection answers for its listener. */
static bool_t tconn_control(SVCXPRT *xprt, const u_int rq, void *in)
{
	struct tconn *tc = tconn_op(xprt);

	return in ? tsvc_control_of(tc->svc, rq, in) : FALSE;
}

static const struct xp_ops tconn_ops = {
	.xp_recv = tconn_recv,
	.xp_stat = tconn_stat,
	.xp_getargs = tconn_getargs,
	.xp_reply = tconn_reply,
	.xp_freeargs = tconn_freeargs,
	.xp_destroy = tconn_destroy,
};

static const struct xp_ops2 tconn_ops2 = {
	.xp_control = tconn_control,
};

/* Listener ops */

static bool_t tsvc_recv(SVCXPRT *xprt, struct rpc_msg *msg)
{
	struct tsvc *ts = tsvc_of(xprt);

	/* Accepts, and registers each new connection (tconn_accepted). */
	if (ts->native)
		rpcrdma_svc_listen_poll(ts->native);
	return FALSE;
}

static enum xprt_stat tsvc_stat(SVCXPRT *xprt)
{
	return XPRT_IDLE;
}

static bool_t tsvc_getargs(SVCXPRT *xprt, xdrproc_t xdr_args, void *args_ptr)
{
	return FALSE;
}

static bool_t tsvc_reply(SVCXPRT *xprt, struct rpc_msg *msg)
{
	return FALSE;
}

static bool_t tsvc_freeargs(SVCXPRT *xprt, xdrproc_t xdr_args, void *args_ptr)
{
	return FALSE;
}

/*
 * The native server owns every connection, and an RDMA listener cannot stop
 * accepting without going: its connections go with it. The one whose call
 * libtirpc is dispatching (a service destroyed the listener) is only cut
 * off from the engine here; libtirpc still uses it after the dispatch, sees
 * XPRT_DIED and destroys it, and that frees the rest.
 */
/* Its call stays valid after the engine goes; answering it fails. */
static void tconn_cut_off(struct tconn *tc, bool close)
{
	tconn_drop_queued(tc);
	if (tc->conn) {
		rpcrdma_svc_conn_set_ctx(tc->conn, NULL);
		if (close)
			rpcrdma_svc_conn_close(tc->conn);
	}
	tc->conn = NULL;
	tc->closed = true;
	tc->dying = true;
}

static void tsvc_destroy(SVCXPRT *xprt)
{
	struct tsvc *ts = tsvc_of(xprt);
	struct tconn *busy = tsvc_dispatching;
	struct list_node *pos, *tmp;
	struct rpcrdma_svc *native;

	/* A dispatch of another listener's connection goes on as it is. */
	if (busy && busy->svc != ts)
		busy = NULL;

	if (ts->running) {
		/*
		 * From a dispatch on one of its threads: done once they have
		 * stopped. The connection being dispatched is cut off now, as
		 * below: its reply is not sent.
		 */
		ts->destroy_pending = true;
		atomic_store(&ts->stop, true);
		if (busy)
			tconn_cut_off(busy, true);
		return;
	}
	xprt_unregister(xprt);
	ts->listener_gone = true;
	list_for_each_safe(pos, tmp, &ts->conns) {
		struct tconn *tc = list_entry(pos, struct tconn, node);

		if (tc == busy)
			continue;
		xprt_unregister(&tc->xprt);
		tconn_teardown(tc);
		if (tc->ready)
			list_del(&tc->ready_node);
		list_del(&tc->node);
		tconn_close_fds(tc);
		xprt_free_fields(&tc->xprt);
		free(tc->queue);
		free(tc->parts);
		free(tc);
	}
	if (busy)
		tconn_cut_off(busy, false);
	/* Under the lock: a connection's control (RPCRDMA_SVCSET_SPIN_US) may look. */
	pthread_mutex_lock(&ts->lock);
	native = ts->native;
	ts->native = NULL;
	pthread_mutex_unlock(&ts->lock);
	rpcrdma_svc_destroy(native);
	if (list_empty(&ts->conns))
		tsvc_free(ts);
}

static bool_t tsvc_control(SVCXPRT *xprt, const u_int rq, void *in)
{
	struct tsvc *ts = tsvc_of(xprt);

	return ts && in ? tsvc_control_of(ts, rq, in) : FALSE;
}

static const struct xp_ops tsvc_ops = {
	.xp_recv = tsvc_recv,
	.xp_stat = tsvc_stat,
	.xp_getargs = tsvc_getargs,
	.xp_reply = tsvc_reply,
	.xp_freeargs = tsvc_freeargs,
	.xp_destroy = tsvc_destroy,
};

static const struct xp_ops2 tsvc_ops2 = {
	.xp_control = tsvc_control,
};

/*
 * @attr: the native server's tunables (rpcrdma_svc_create_attr()), its
 * callbacks, pollers and flags but RPCRDMA_SVC_SRQ ours to set.
 */
static SVCXPRT *tsvc_create(struct rpcrdma_svc_attr *attr, u_int sendsize, u_int recvsize,
			    unsigned int nthreads)
{
	const struct sockaddr *addr = attr->addr;
	struct sockaddr_storage bound;
	socklen_t len = sizeof(bound);
	struct tsvc *ts;
	int rc, fd;

	if (!addr || !rpcrdma_sockaddr_len(addr)) {
		errno = EINVAL;
		return NULL;
	}
	ts = calloc(1, sizeof(*ts));
	if (!ts) {
		errno = ENOMEM;
		return NULL;
	}
	list_init(&ts->conns);
	pthread_mutex_init(&ts->lock, NULL);
	ts->family = addr->sa_family;
	ts->nthreads = nthreads;
	attr->pollers = nthreads ? nthreads : 1;
	attr->on_call = tsvc_on_call;
	attr->on_conn = tsvc_on_conn;
	attr->arg = ts;
	attr->max_read = recvsize;
	attr->max_reply = sendsize;
	/* A service may defer a call and answer it from a worker (rpcrdma_svc_defer()). */
	attr->flags |= RPCRDMA_SVC_WORKERS;
	rc = rpcrdma_svc_listen(attr, &ts->native);
	if (rc)
		goto fail;
	fd = rpcrdma_svc_listen_fd(ts->native);
	rc = -EMFILE;
	if (fd < 0 || fd >= _rpc_dtablesize())
		goto fail;
	rc = rpcrdma_svc_addr(ts->native, (struct sockaddr *)&bound, &len);
	if (rc)
		goto fail;
	xprt_init_common(&ts->xprt, &ts->ext, ts->verf_body, fd, &tsvc_ops, &tsvc_ops2);
	ts->xprt.xp_p1 = ts;
	ts->xprt.xp_port = ntohs(bound.ss_family == AF_INET6 ?
				 ((struct sockaddr_in6 *)&bound)->sin6_port :
				 ((struct sockaddr_in *)&bound)->sin_port);
	rc = -ENOMEM;
	ts->xprt.xp_netid = strdup(tsvc_netid(ts->family));
	if (!ts->xprt.xp_netid || !tsvc_set_netbuf(&ts->xprt.xp_ltaddr, (struct sockaddr *)&bound))
		goto fail;
	ts->pool = tpool_create(ts->native);
	if (!ts->pool)
		goto fail;
	/* The pool's registrations go when the server's PDs do. */
	svc_rdma_set_on_free(ts->native, tpool_retire, ts->pool);
	ts->spin_us = rpcrdma_spin_default(0);
	svc_rdma_set_spin(ts->native, ts->spin_us);
	xprt_register(&ts->xprt);
	return &ts->xprt;
fail:
	rpcrdma_svc_destroy(ts->native);
	tsvc_free(ts);
	errno = -rc;
	return NULL;
}

RPCRDMA_EXPORT SVCXPRT *rpcrdma_svc_create(const struct sockaddr *addr, u_int sendsize,
					   u_int recvsize)
{
	struct rpcrdma_svc_attr attr = { RPCRDMA_SIZED(attr), .addr = addr };

	return tsvc_create(&attr, sendsize, recvsize, 0);
}

RPCRDMA_EXPORT SVCXPRT *rpcrdma_svc_create_mt(const struct sockaddr *addr, u_int sendsize,
					      u_int recvsize, unsigned int nthreads)
{
	struct rpcrdma_svc_attr attr = { RPCRDMA_SIZED(attr), .addr = addr };

	if (nthreads < 1 || nthreads > RPCRDMA_SVC_MAX_THREADS) {
		errno = EINVAL;
		return NULL;
	}
	return tsvc_create(&attr, sendsize, recvsize, nthreads);
}

/* What rpcrdma_svc_create_attr() leaves to the adapter: set, it is a mistake. */
static bool tsvc_attr_ours_set(const struct rpcrdma_svc_attr *a)
{
	return a->on_call || a->on_conn || a->arg || a->max_read || a->max_reply ||
	       a->pollers || (a->flags & ~RPCRDMA_SVC_SRQ);
}

/*
 * Each connection SVCXPRT polls its own CQ through its own descriptor
 * (rpcrdma_svc_conn_fd()), which a connection on a shared receive queue
 * and CQ does not have.
 */
static bool tsvc_attr_supported(const struct rpcrdma_svc_attr *a)
{
	return !(a->flags & RPCRDMA_SVC_SRQ);
}

RPCRDMA_EXPORT SVCXPRT *rpcrdma_svc_create_attr(const struct rpcrdma_svc_attr *tune,
						u_int sendsize, u_int recvsize,
						unsigned int nthreads)
{
	struct rpcrdma_svc_attr attr = { RPCRDMA_SIZED(attr) };
	int rc = -EINVAL;

	if (tune)
		rc = rpcrdma_sized_in(&attr, sizeof(attr), tune, RPCRDMA_SVC_ATTR_SIZE_0_2);
	/* The fields past an older caller's struct_size are zero now: ours to fill. */
	attr.struct_size = sizeof(attr);
	if (!rc && (tsvc_attr_ours_set(&attr) || nthreads > RPCRDMA_SVC_MAX_THREADS))
		rc = -EINVAL;
	if (!rc && !tsvc_attr_supported(&attr))
		rc = -EOPNOTSUPP;
	if (rc) {
		errno = -rc;
		return NULL;
	}
	return tsvc_create(&attr, sendsize, recvsize, nthreads);
}

RPCRDMA_EXPORT bool_t rpcrdma_svc_register(SVCXPRT *xprt, rpcprog_t prog, rpcvers_t vers)
{
	struct tsvc *ts = tsvc_of(xprt);

	if (!ts || ts->listener_gone) {
		rpc_createerr.cf_stat = RPC_UNKNOWNPROTO;
		return FALSE;
	}
	return tirpc_rpcb_set(true, prog, vers, xprt->xp_netid,
			      (const struct sockaddr *)xprt->xp_ltaddr.buf);
}

RPCRDMA_EXPORT bool_t rpcrdma_svc_unregister(SVCXPRT *xprt, rpcprog_t prog, rpcvers_t vers)
{
	struct tsvc *ts = tsvc_of(xprt);

	if (!ts || ts->listener_gone) {
		rpc_createerr.cf_stat = RPC_UNKNOWNPROTO;
		return FALSE;
	}
	return tirpc_rpcb_set(false, prog, vers, xprt->xp_netid,
			      (const struct sockaddr *)xprt->xp_ltaddr.buf);
}

RPCRDMA_EXPORT struct rpcrdma_svc *rpcrdma_svc_native(SVCXPRT *xprt)
{
	struct tconn *tc = tconn_of(xprt);
	struct tsvc *ts = tc ? tc->svc : tsvc_of(xprt);

	return ts ? ts->native : NULL;
}

RPCRDMA_EXPORT void *rpcrdma_svc_buf_alloc(SVCXPRT *xprt, size_t len)
{
	struct tconn *tc = xprt ? tconn_of(xprt) : NULL;
	struct tsvc *ts = tc ? tc->svc : (xprt ? tsvc_of(xprt) : NULL);

	return tpool_alloc(ts && !ts->listener_gone ? ts->pool : NULL, len);
}

RPCRDMA_EXPORT int rpcrdma_svc_buf_free(void *buf)
{
	return tpool_free(buf);
}

RPCRDMA_EXPORT int rpcrdma_svc_getpayload(SVCXPRT *xprt, unsigned int i, void **data, size_t *len)
{
	struct tconn *tc = tconn_of(xprt);
	void *p;

	if (!tc || !tc->cur || !data || !len)
		return -EINVAL;
	p = rpcrdma_svc_call_keep_payload(tc->cur, i, len);
	if (!p)
		return -ENOENT;
	*data = p;
	return 0;
}

RPCRDMA_EXPORT int rpcrdma_svcerr_chunk(SVCXPRT *xprt)
{
	struct tconn *tc = tconn_of(xprt);
	int rc;

	if (!tc || !tc->cur)
		return -EINVAL;
	rc = rpcrdma_svc_reply_err_chunk(tc->cur);
	tc->cur = NULL;
	tconn_release_ddp(tc);
	return rc;
}

RPCRDMA_EXPORT int rpcrdma_svc_reply_ddp(SVCXPRT *xprt, const void *buf, size_t len,
					 void (*release)(void *arg), void *arg)
{
	struct tconn *tc = tconn_of(xprt);
	int rc = -EINVAL;

	if (!tc || !tc->cur || (!buf && len) || tc->nddp == TIRPC_XDR_MAX_DDP)
		goto fail;
	rc = -ENOTCONN;
	if (tc->closed)
		goto fail;
	tc->ddp[tc->nddp].buf = buf;
	tc->ddp[tc->nddp].len = len;
	tc->ddp[tc->nddp].release = release;
	tc->ddp[tc->nddp].arg = arg;
	tc->nddp++;
	return 0;
fail:
	if (release)
		release(arg);
	return rc;
}

/* A call taken off the svc_run() thread (rpcrdma_svc_defer()). */
struct rpcrdma_svc_deferred {
	struct rpcrdma_svc_call *call;
	uint32_t xid;
	struct opaque_auth verf;
	char verf_body[MAX_AUTH_BYTES];
};

RPCRDMA_EXPORT struct rpcrdma_svc_deferred *rpcrdma_svc_defer(SVCXPRT *xprt)
{
	struct rpcrdma_svc_deferred *d;
	struct tconn *tc;

	if (!xprt || xprt->xp_ops != &tconn_ops || !tconn_of(xprt)->cur) {
		errno = EINVAL;
		return NULL;
	}
	tc = tconn_of(xprt);
	if (xprt->xp_verf.oa_length > MAX_AUTH_BYTES) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	d->call = tc->cur;
	d->xid = tc->xid;
	d->verf = xprt->xp_verf;
	if (d->verf.oa_length)
		memcpy(d->verf_body, xprt->xp_verf.oa_base, d->verf.oa_length);
	d->verf.oa_base = d->verf_body;
	/* Payloads named for a reply on this thread do not follow the call. */
	tconn_release_ddp(tc);
	tc->cur = NULL;
	return d;
}

RPCRDMA_EXPORT int rpcrdma_svc_deferred_reply(struct rpcrdma_svc_deferred *d,
					      xdrproc_t xdr_results, void *results)
{
	struct rpc_msg msg;
	size_t max;
	void *buf;
	XDR xdrs;
	int rc;

	if (!d)
		return -EINVAL;
	if (!xdr_results) {
		/* Freed whatever the result, as the header says: the call is dropped. */
		rpcrdma_svc_deferred_drop(d);
		return -EINVAL;
	}
	rc = rpcrdma_svc_reply_buf(d->call, &buf, &max);
	if (rc) {
		rpcrdma_svc_deferred_drop(d);
		return rc;
	}
	memset(&msg, 0, sizeof(msg));
	msg.rm_xid = d->xid;
	msg.rm_direction = REPLY;
	msg.rm_reply.rp_stat = MSG_ACCEPTED;
	msg.acpted_rply.ar_verf = d->verf;
	msg.acpted_rply.ar_stat = SUCCESS;
	msg.acpted_rply.ar_results.where = results;
	msg.acpted_rply.ar_results.proc = xdr_results;
	xdrmem_create(&xdrs, buf, max > UINT_MAX ? UINT_MAX : (u_int)max, XDR_ENCODE);
	if (!tirpc_encode_replymsg(&xdrs, &msg)) {
		rpcrdma_svc_deferred_drop(d);
		return -EMSGSIZE;
	}
	rc = rpcrdma_svc_reply_commit(d->call, xdr_getpos(&xdrs));
	free(d);
	return rc;
}

RPCRDMA_EXPORT void rpcrdma_svc_deferred_drop(struct rpcrdma_svc_deferred *d)
{
	if (!d)
		return;
	rpcrdma_svc_call_drop(d->call);
	free(d);
}

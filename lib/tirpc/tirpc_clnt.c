/* SPDX-License-Identifier: MIT */
/*
 * The CLIENT adapter: clnt_call() over a native client (clnt.h).
 *
 * The native client belongs to whoever holds tc->lock. Several threads may
 * have calls in flight; one of them at a time drives the native client
 * (tc->polling) and, when idle, sleeps on its descriptor with the lock
 * released, so that the others can submit and cancel meanwhile. Whoever
 * touches the native client while the driver sleeps writes tc->wake_fd, for
 * the driver to look again: a completion the other thread processed would
 * otherwise never make the descriptor readable.
 *
 * Each call encodes into a buffer of its own, registered once with the
 * native client and reused, so long calls and long replies move by RDMA
 * without bounce copies. Encoding and decoding run without the lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include <rpcrdma/clnt.h>
#include <rpcrdma/tirpc.h>

#include "compat_0_1.h"
#include "ep.h"
#include "tirpc_msg.h"
#include "spin.h"
#include "tirpc_ulb.h"
#include "tirpc_xdr.h"
#include "util.h"
#include "xprt_rdma.h"

#define TCLNT_BUDGET 64
/*
 * How long after the caller gave up a call may stay unanswered before the
 * native client closes the connection (RDMA has no keepalive; the closing
 * frees its slot).
 */
#define TCLNT_BACKSTOP_MS 30000
/* The static part of a call header: xid, direction, rpcvers, prog, vers. */
#define TCLNT_HDR_MAX 32
#define TCLNT_HDR_PROG 12
#define TCLNT_HDR_VERS 16
/* Segments of a chunk are at most this long: set on the native client. */
#define TCLNT_SEGMENT (1u << 20)
/* The longest call a chunk of 16 such segments carries. */
#define TCLNT_LONG_MAX (16u * TCLNT_SEGMENT)

/* A call's message and reply buffers, reused from call to call. */
struct tcall_buf {
	struct tcall_buf *next;			/* tclnt.free_bufs */
	struct tcall_buf *all_next;		/* tclnt.all_bufs */
	char *msg;
	char *reply;
	char *result;				/* a binding's result item, when the caller has none */
	size_t result_cap;
	char *big;				/* a call longer than sendsize, this time */
};

struct tclnt {
	CLIENT cl;
	uint64_t id;				/* unique for the process's life */
	pthread_mutex_t lock;
	pthread_cond_t cond;			/* a call finished, or the driver left */
	unsigned int waiters;			/* threads waiting on cond */
	struct rpcrdma_clnt *native;
	bool polling;				/* a thread drives the native client */
	unsigned int inflight;			/* calls submitted and not done */
	bool sleeping;				/* ... asleep on its descriptor, unlocked */
	int wake_fd;
	char hdr[TCLNT_HDR_MAX];		/* pre-encoded call header, xid first */
	u_int hdr_len;
	uint32_t next_xid;
	uint32_t last_xid;
	struct timeval wait;
	bool waitset;				/* CLSET_TIMEOUT overrides clnt_call's */
	struct rpc_err err;			/* the last call's, for clnt_geterr() */
	u_int sendsize;
	u_int recvsize;
	bool recv_inline;			/* recvsize 0: never offer a Reply chunk */
	struct rpcrdma_spin spin;		/* poll this long before sleeping */
	uint32_t inline_recv;
	struct tcall_buf *free_bufs;
	struct tcall_buf *all_bufs;
	struct rpcrdma_ddp_buf ddp_result;	/* for the next call */
	struct rpcrdma_ddp_buf ddp_arg;
	struct sockaddr_storage addr;
	struct netbuf svcaddr;
};

/* One clnt_call() in progress; on its caller's stack. */
struct tcall {
	struct rpcrdma_call nc;
	struct tclnt *tc;
	bool submitted;
	bool done;
	u_int window;				/* poll this long before sleeping */
	int64_t wait_from;			/* adaptive window: the first look, in us */
	int64_t seen_at;			/* ... the last look of a window, if done then */
};

/* clnt_geterr() reports the calling thread's last call when it made one. */
static _Thread_local struct {
	uint64_t id;
	struct rpc_err err;
} tclnt_last;
static atomic_uint_fast64_t tclnt_ids;

static struct tclnt *tclnt_of(CLIENT *cl)
{
	return cl->cl_private;
}

/* A timeout in milliseconds, rounded up, at least 1 unless it is zero. */
static int64_t tclnt_ms(const struct timeval *tv)
{
	return (int64_t)tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000;
}

/* As clnt_vc: a timeout that is garbage is ignored. */
static bool tclnt_time_bad(const struct timeval *t)
{
	return t->tv_sec <= -1 || t->tv_sec > 100000000 || t->tv_usec <= -1 ||
	       t->tv_usec > 1000000;
}

static void tclnt_kick(struct tclnt *tc)
{
	uint64_t one = 1;

	if (tc->sleeping && write(tc->wake_fd, &one, sizeof(one)) < 0)
		rpcrdma_dbg("tirpc: wake: %s", strerror(errno));
}

/* Under the lock: the threads waiting on the condition look again. */
static void tclnt_wake_waiters(struct tclnt *tc)
{
	if (tc->waiters)
		pthread_cond_broadcast(&tc->cond);
}

static void tcall_done(struct rpcrdma_call *nc)
{
	struct tcall *c = nc->arg;

	c->done = true;
	c->tc->inflight--;
	tclnt_wake_waiters(c->tc);
}

static struct tcall_buf *tclnt_get_buf(struct tclnt *tc)
{
	struct tcall_buf *b = tc->free_bufs;
	struct rpcrdma_mem *mem;

	if (b) {
		tc->free_bufs = b->next;
		return b;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->msg = aligned_alloc(64, (tc->sendsize + 63) & ~63u);
	b->reply = aligned_alloc(64, (tc->recvsize + 63) & ~63u);
	if (!b->msg || !b->reply) {
		free(b->msg);
		free(b->reply);
		free(b);
		return NULL;
	}
	/* Unregistered, they would still work, through bounce buffers. */
	if (rpcrdma_clnt_mem_register(tc->native, b->msg, tc->sendsize, &mem) ||
	    rpcrdma_clnt_mem_register(tc->native, b->reply, tc->recvsize, &mem))
		rpcrdma_info("tirpc: call buffers not registered: they will be copied");
	tclnt_kick(tc);
	b->all_next = tc->all_bufs;
	tc->all_bufs = b;
	return b;
}

/*
 * Poll for up to @us from @start (not beyond @deadline) before sleeping: a
 * reply that comes meanwhile costs no wake-up. The lock is let go between
 * polls, so that other threads may submit (they find tc->polling set and
 * wait). An adaptive window ends early when the thread was descheduled
 * between two polls, and tells the window whether it paid. Returns what
 * the last poll did.
 */
static int tclnt_spin(struct tclnt *tc, struct tcall *c, u_int us, int64_t start,
		      int64_t deadline)
{
	int64_t end = start + us, t = start, last = rpcrdma_now_us();
	bool gap = false;
	int n = 0;

	if (end > deadline * 1000)
		end = deadline * 1000;
	while (!c->done && t < end) {
		pthread_mutex_unlock(&tc->lock);
		rpcrdma_cpu_relax();
		pthread_mutex_lock(&tc->lock);
		n = rpcrdma_clnt_poll(tc->native, TCLNT_BUDGET);
		t = rpcrdma_now_us();
		if (t - last > RPCRDMA_SPIN_GAP_US && rpcrdma_spin_auto(&tc->spin)) {
			gap = true;
			break;
		}
		last = t;
		if (n)
			break;
	}
	c->seen_at = c->done ? t : 0;
	rpcrdma_spin_paid(&tc->spin, (n > 0 || c->done) && !gap);
	return n;
}

/* The adaptive window learns how long @c's reply took to come. */
static void tclnt_learn(struct tclnt *tc, struct tcall *c)
{
	if (!c->wait_from)
		return;
	rpcrdma_spin_learn(&tc->spin, (c->seen_at ? c->seen_at : rpcrdma_now_us()) - c->wait_from);
}

/*
 * Submit @c, then drive the native client until it is done or @deadline
 * passes; @now is the clock when the caller computed @deadline.
 */
static int tclnt_run(struct tclnt *tc, struct tcall *c, int64_t now, int64_t deadline)
{
	bool canceled = false, first = true, just_sent = false;

	c->window = rpcrdma_spin_next(&tc->spin);
	for (;;) {
		int n, wait;

		if (!c->submitted) {
			n = rpcrdma_clnt_submit(tc->native, &c->nc);
			tclnt_kick(tc);
			if (!n) {
				c->submitted = just_sent = true;
				tc->inflight++;
			}
			else if (n != -EAGAIN)
				return n;
		}
		if (c->done) {
			tclnt_learn(tc, c);
			return 0;
		}
		if (!first)
			now = rpcrdma_now_ms();
		first = false;
		if (now >= deadline && !canceled) {
			if (!c->submitted)
				return -ETIMEDOUT;
			/* Fence its memory; a reply already in completes it as it is. */
			canceled = true;
			rpcrdma_clnt_cancel(tc->native, &c->nc);
			tclnt_kick(tc);
			/* done() has run; if not, its buffers are still lent: keep driving. */
			if (c->done)
				return 0;
			deadline = now + TCLNT_BACKSTOP_MS;
		}
		if (tc->polling) {
			struct timespec ts = {
				.tv_sec = deadline / 1000,
				.tv_nsec = (deadline % 1000) * 1000000,
			};

			/* rpcrdma_now_ms() is CLOCK_MONOTONIC, as the condvar's clock. */
			tc->waiters++;
			pthread_cond_timedwait(&tc->cond, &tc->lock, &ts);
			tc->waiters--;
			continue;
		}
		tc->polling = true;
		if (rpcrdma_spin_auto(&tc->spin) && !c->wait_from)
			c->wait_from = rpcrdma_now_us();
		/*
		 * Just submitted and no window to poll in: the reply is not in
		 * yet, and the arm below looks once more after arming.
		 */
		n = just_sent && !c->window ? 0 : rpcrdma_clnt_poll(tc->native, TCLNT_BUDGET);
		just_sent = false;
		if (n == 0 && !c->done && c->window) {
			n = tclnt_spin(tc, c, c->window,
				       c->wait_from ? c->wait_from : rpcrdma_now_us(), deadline);
			/* The sleep below must not outlast the deadline by the window. */
			now = rpcrdma_now_ms();
		}
		if (n == 0 && !c->done)
			n = rpcrdma_clnt_arm(tc->native);
		if (n == 0 && !c->done) {
			/* Past the deadline already (a window may end after it): look, do not wait. */
			wait = (int)(deadline - now > INT_MAX ? INT_MAX :
				     deadline - now < 0 ? 0 : deadline - now);
			/*
			 * Another call may time out sooner. Ours alone, uncanceled,
			 * times out after @deadline (its timeout has the backstop).
			 */
			if ((tc->inflight > 1 || canceled) &&
			    rpcrdma_clnt_next_timeout(tc->native, &n) == 0 && n < wait)
				wait = n;
			tc->sleeping = true;
			pthread_mutex_unlock(&tc->lock);
			n = xprt_rdma_sleep(tc->native, wait);
			pthread_mutex_lock(&tc->lock);
			tc->sleeping = false;
			if (n > 0 && (n & RPCRDMA_READY_USER)) {
				uint64_t v;

				if (read(tc->wake_fd, &v, sizeof(v)) < 0)
					rpcrdma_dbg("tirpc: wake: %s", strerror(errno));
			}
		}
		tc->polling = false;
		/* Someone else may have to drive now. */
		tclnt_wake_waiters(tc);
	}
}

/* A native status, as clnt_vc would report the like. */
static void tclnt_map_status(int status, struct rpc_err *err)
{
	memset(err, 0, sizeof(*err));
	switch (status) {
	case 0:
		err->re_status = RPC_SUCCESS;
		return;
	case -ETIMEDOUT:
	case -ECANCELED:
		err->re_status = RPC_TIMEDOUT;
		return;
	case -EMSGSIZE:
	case -EREMOTEIO:
	case -EPROTO:
		/* The reply did not fit, or the server could not send it. */
		err->re_status = RPC_CANTDECODERES;
		break;
	case -EPROTONOSUPPORT:
		/* ERR_VERS: the server could not take the call at all. */
		err->re_status = RPC_CANTSEND;
		break;
	default:
		err->re_status = RPC_CANTRECV;
		break;
	}
	err->re_errno = -status;
}

static void tclnt_map_submit(int rc, struct rpc_err *err)
{
	memset(err, 0, sizeof(*err));
	err->re_errno = -rc;
	switch (rc) {
	case -ETIMEDOUT:
		err->re_status = RPC_TIMEDOUT;
		break;
	case -ENOMEM:
	case -EINVAL:
	case -EEXIST:
		err->re_status = RPC_SYSTEMERROR;
		break;
	default:
		err->re_status = RPC_CANTSEND;
		break;
	}
}

/*
 * Room for the reply. With the inline size asked for, exactly what fits
 * inline after the transport header, whose Write list grows with a DDP
 * result: one byte more and the native client would offer a Reply chunk.
 */
static size_t tclnt_reply_max(const struct tclnt *tc, const struct rpcrdma_ddp_buf *dres,
			      const struct tirpc_ulb_call *ulb)
{
	uint32_t hdr = RPCRDMA_HDR_MIN_LEN;
	size_t room;

	if (dres->buf)
		hdr += 8 + RPCRDMA_SEGMENT_LEN *
			   (uint32_t)((dres->len + TCLNT_SEGMENT - 1) / TCLNT_SEGMENT);
	room = tc->inline_recv > hdr ? tc->inline_recv - hdr : 0;
	if (!tc->recv_inline && ulb->proc && ulb->proc->reply_max && ulb->proc->reply_max <= room)
		return room;	/* the binding's bound fits inline: no Reply chunk */
	return tc->recv_inline ? room : tc->recvsize;
}

/*
 * Encode the call into @msg (@size bytes); the header's xid is @xid (host
 * order). Returns 0, -EMSGSIZE when it does not fit, or -EINVAL.
 */
static int tclnt_encode_into(struct tclnt *tc, CLIENT *cl, char *msg, u_int size, uint32_t xid,
			     rpcproc_t proc, xdrproc_t xargs, void *argsp, struct tirpc_ddp *ddp,
			     unsigned int nddp, u_int *len)
{
	struct tirpc_xdr_enc enc;
	uint32_t nproc = htonl((uint32_t)proc), nxid = htonl(xid);
	XDR xdrs;

	/*
	 * The header, its xid and the procedure, stored straight in: a copy of
	 * a constant size is a few moves (tclnt_encode_hdr() leaves room for
	 * the procedure), one of hdr_len bytes a branchy sequence.
	 */
	if (size < TCLNT_HDR_MAX)
		return -EMSGSIZE;
	memcpy(msg, tc->hdr, TCLNT_HDR_MAX);
	memcpy(msg, &nxid, sizeof(nxid));
	memcpy(msg + tc->hdr_len, &nproc, sizeof(nproc));
	tirpc_xdr_enc_create(&xdrs, &enc, msg, size, ddp, nddp);
	if (!XDR_SETPOS(&xdrs, tc->hdr_len + sizeof(nproc)) || !AUTH_MARSHALL(cl->cl_auth, &xdrs))
		return enc.overflow ? -EMSGSIZE : -EINVAL;
	/* Binding items count from the arguments on. */
	enc.items.on = true;
	if (!AUTH_WRAP(cl->cl_auth, &xdrs, xargs, argsp))
		return enc.overflow ? -EMSGSIZE : -EINVAL;
	*len = enc.pos;
	return 0;
}

/*
 * Encode into @b's buffer; a call larger than sendsize goes as a long call
 * from a buffer of its own, as TCP would carry it (up to what one Read
 * chunk holds). Sets *@msg to where it is.
 */
static bool tclnt_encode(struct tclnt *tc, CLIENT *cl, struct tcall_buf *b, uint32_t xid,
			 rpcproc_t proc, xdrproc_t xargs, void *argsp, struct tirpc_ddp *ddp,
			 unsigned int nddp, char **msg, u_int *len)
{
	u_int size = tc->sendsize;
	int rc;

	/* One call site, so that the encoding is inlined for the common first try. */
	for (*msg = b->msg;; *msg = b->big) {
		rc = tclnt_encode_into(tc, cl, *msg, size, xid, proc, xargs, argsp, ddp, nddp, len);
		if (rc != -EMSGSIZE || size >= TCLNT_LONG_MAX)
			return rc == 0;
		size = size > TCLNT_LONG_MAX / 2 ? TCLNT_LONG_MAX : size * 2;
		free(b->big);
		b->big = malloc(size);
		if (!b->big)
			return false;
	}
}

/* The results, the binding's items counted from here on. */
static bool tclnt_unwrap(CLIENT *cl, XDR *xdrs, struct tirpc_xdr_result *rs, xdrproc_t xres,
			 void *resp)
{
	if (rs)
		rs->items.on = true;
	return AUTH_UNWRAP(cl->cl_auth, xdrs, xres, resp);
}

/*
 * Decode the reply of a call that completed, setting @err, which says
 * RPC_SUCCESS on entry (tclnt_map_status() of status 0). Returns true when
 * the credentials were refreshed and the call should be made again.
 */
static bool tclnt_decode(struct tclnt *tc, CLIENT *cl, struct tcall_buf *b,
			 const struct rpcrdma_call *nc, uint32_t xid, xdrproc_t xres, void *resp,
			 unsigned int item, bool may_refresh, struct rpc_err *err)
{
	struct tirpc_xdr_result rs;
	struct rpc_msg reply;
	bool refresh = false;
	XDR xdrs;
	bool ok;

	if (nc->result)
		tirpc_xdr_result_create(&xdrs, &rs, b->reply, nc->reply_len, nc->result,
					nc->result_len, item);
	else
		xdrmem_create(&xdrs, b->reply, (u_int)nc->reply_len, XDR_DECODE);
	memset(&reply, 0, sizeof(reply));
	reply.acpted_rply.ar_verf = _null_auth;
	reply.acpted_rply.ar_results.where = NULL;
	reply.acpted_rply.ar_results.proc = TIRPC_XDR_VOID;
	if (!tirpc_decode_replymsg(&xdrs, &reply) || reply.rm_xid != xid) {
		err->re_status = RPC_CANTDECODERES;
		return false;
	}
	_seterr_reply(&reply, err);
	if (err->re_status != RPC_SUCCESS) {
		if (!may_refresh)
			return false;
		pthread_mutex_lock(&tc->lock);
		refresh = AUTH_REFRESH(cl->cl_auth, &reply);
		pthread_mutex_unlock(&tc->lock);
		return refresh;
	}
	pthread_mutex_lock(&tc->lock);
	ok = AUTH_VALIDATE(cl->cl_auth, &reply.acpted_rply.ar_verf);
	pthread_mutex_unlock(&tc->lock);
	if (!ok) {
		err->re_status = RPC_AUTHERROR;
		err->re_why = AUTH_INVALIDRESP;
	} else if (!tclnt_unwrap(cl, &xdrs, nc->result ? &rs : NULL, xres, resp)) {
		err->re_status = RPC_CANTDECODERES;
	}
	if (reply.acpted_rply.ar_verf.oa_base) {
		xdrs.x_op = XDR_FREE;
		xdr_opaque_auth(&xdrs, &reply.acpted_rply.ar_verf);
	}
	return false;
}

/* The call's binding: prog and vers as the header says now (CLSET_PROG, CLSET_VERS). */
static void tclnt_ulb(const struct tclnt *tc, rpcproc_t proc, struct tirpc_ulb_call *ulb)
{
	uint32_t prog, vers;

	memcpy(&prog, tc->hdr + TCLNT_HDR_PROG, sizeof(prog));
	memcpy(&vers, tc->hdr + TCLNT_HDR_VERS, sizeof(vers));
	tirpc_ulb_lookup(ntohl(prog), ntohl(vers), (uint32_t)proc, ulb);
}

/*
 * A Write chunk for the binding's result item: the caller's own buffer when
 * its results point to one already, else one of @b's, registered once. The
 * caller holds the lock. Returns the item number to decode it as, or 0.
 */
static unsigned int tclnt_result_item(struct tclnt *tc, struct tcall_buf *b,
				      const struct tirpc_ulb_call *ulb, xdrproc_t xres,
				      void *resp, struct rpcrdma_ddp_buf *dres)
{
	const struct rpcrdma_ulb_proc *p = ulb->proc;
	struct rpcrdma_mem *mem;
	void *buf;
	size_t len;

	if (!p || !p->res_item || !xres || !resp)
		return 0;
	if (!(p->flags & RPCRDMA_ULB_RES_NO_PRESET) &&
	    tirpc_xdr_probe_item(xres, resp, p->res_item, &buf, &len)) {
		dres->buf = buf;
		dres->len = len;
		return p->res_item;
	}
	if (b->result_cap < p->res_max) {
		char *r = aligned_alloc(64, ((size_t)p->res_max + 63) & ~(size_t)63);

		if (!r)
			return 0;
		/* The old one stays registered until the CLIENT goes; it is small. */
		if (rpcrdma_clnt_mem_register(tc->native, r, p->res_max, &mem))
			rpcrdma_info("tirpc: result buffer not registered: it will be copied");
		free(b->result);
		b->result = r;
		b->result_cap = p->res_max;
	}
	dres->buf = b->result;
	dres->len = p->res_max;
	return p->res_item;
}

/*
 * A call of @msg (@len bytes) with the payload @ddp found, if any; the reply
 * and result fields are zero. Field by field, not memset: gcc makes a rep
 * stos of a clear this size, slower on every call.
 */
static void tcall_init(struct tcall *c, struct tclnt *tc, char *msg, u_int len,
		       const struct tirpc_ddp *ddp)
{
	_Static_assert(sizeof(struct rpcrdma_call) ==
			       offsetof(struct rpcrdma_call, result_len) + sizeof(size_t),
		       "tcall_init() sets every field of struct rpcrdma_call");
	c->nc.struct_size = sizeof(c->nc);
	c->nc.msg = msg;
	c->nc.msg_len = len;
	c->nc.payload = ddp->found ? ddp->buf : NULL;
	c->nc.payload_len = ddp->found ? ddp->len : 0;
	c->nc.payload_pos = ddp->found ? ddp->pos : 0;
	c->nc.reply = NULL;
	c->nc.reply_max = 0;
	c->nc.result = NULL;
	c->nc.result_max = 0;
	c->nc.timeout_ms = 0;
	c->nc.done = tcall_done;
	c->nc.arg = c;
	c->nc.status = 0;
	c->nc.reply_len = 0;
	c->nc.result_len = 0;
	c->tc = tc;
	c->submitted = false;
	c->done = false;
	c->wait_from = 0;
	c->seen_at = 0;
}

static enum clnt_stat tclnt_call(CLIENT *cl, rpcproc_t proc, xdrproc_t xargs, void *argsp,
				 xdrproc_t xres, void *resp, struct timeval timeout)
{
	struct tclnt *tc = tclnt_of(cl);
	struct rpcrdma_ddp_buf dres, darg;
	struct tirpc_ddp ddp_arg;
	struct tirpc_ulb_call ulb;
	unsigned int res_item = 0;
	struct tcall_buf *b;
	struct rpc_err err;
	bool no_results = !xres;
	int refreshes = 2;
	bool oneway;
	int64_t ms, now;
	struct tcall c;
	uint32_t xid;
	char *msg;
	u_int len;
	int rc;

	if (!xres)
		xres = TIRPC_XDR_VOID;
	pthread_mutex_lock(&tc->lock);
	if (tc->waitset)
		timeout = tc->wait;
	else if (!tclnt_time_bad(&timeout))
		tc->wait = timeout;
	ms = tclnt_ms(&timeout);
	dres = tc->ddp_result;
	darg = tc->ddp_arg;
	memset(&tc->ddp_result, 0, sizeof(tc->ddp_result));
	memset(&tc->ddp_arg, 0, sizeof(tc->ddp_arg));
	tclnt_ulb(tc, proc, &ulb);
	b = tclnt_get_buf(tc);
	if (b && !dres.buf && !no_results)
		res_item = tclnt_result_item(tc, b, &ulb, xres, resp, &dres);
	xid = tc->next_xid++;
	tc->last_xid = xid;
	pthread_mutex_unlock(&tc->lock);
	memset(&err, 0, sizeof(err));
	if (!b) {
		err.re_status = RPC_SYSTEMERROR;
		err.re_errno = ENOMEM;
		pthread_mutex_lock(&tc->lock);
		goto out;
	}
	/* As clnt_vc: no time means send only. */
	oneway = !timeout.tv_sec && !timeout.tv_usec;
	if (ms > INT_MAX - TCLNT_BACKSTOP_MS)
		ms = INT_MAX - TCLNT_BACKSTOP_MS;

again:
	memset(&ddp_arg, 0, sizeof(ddp_arg));
	ddp_arg.buf = darg.buf;
	ddp_arg.len = darg.len;
	if (!darg.buf && ulb.proc && ulb.proc->arg_item) {
		ddp_arg.item = ulb.proc->arg_item;
		ddp_arg.min_len = ulb.ddp_min;
	}
	if (!tclnt_encode(tc, cl, b, xid, proc, xargs, argsp, &ddp_arg,
			  darg.buf || ddp_arg.item ? 1 : 0, &msg, &len)) {
		err.re_status = RPC_CANTENCODEARGS;
		goto out_buf;
	}
	tcall_init(&c, tc, msg, len, &ddp_arg);
	c.nc.reply = b->reply;
	c.nc.reply_max = tclnt_reply_max(tc, &dres, &ulb);
	c.nc.result = dres.buf;
	c.nc.result_max = dres.buf ? dres.len : 0;
	c.nc.timeout_ms = (int)(ms + TCLNT_BACKSTOP_MS);

	pthread_mutex_lock(&tc->lock);
	now = rpcrdma_now_ms();
	rc = tclnt_run(tc, &c, now, now + ms);
	pthread_mutex_unlock(&tc->lock);
	if (rc) {
		tclnt_map_submit(rc, &err);
		goto out_buf;
	}
	if (oneway) {
		err.re_status = no_results ? RPC_SUCCESS : RPC_TIMEDOUT;
		goto out_buf;
	}
	tclnt_map_status(c.nc.status, &err);
	if (c.nc.status == 0 &&
	    tclnt_decode(tc, cl, b, &c.nc, xid, xres, resp, res_item, refreshes-- > 0, &err)) {
		/* Credentials refreshed: the same call again, under a new xid. */
		pthread_mutex_lock(&tc->lock);
		xid = tc->next_xid++;
		tc->last_xid = xid;
		pthread_mutex_unlock(&tc->lock);
		goto again;
	}

out_buf:
	free(b->big);
	b->big = NULL;
	pthread_mutex_lock(&tc->lock);
	b->next = tc->free_bufs;
	tc->free_bufs = b;
out:
	tc->err = err;
	pthread_mutex_unlock(&tc->lock);
	tclnt_last.id = tc->id;
	tclnt_last.err = err;
	return err.re_status;
}

static void tclnt_abort(CLIENT *cl)
{
}

static void tclnt_geterr(CLIENT *cl, struct rpc_err *errp)
{
	struct tclnt *tc = tclnt_of(cl);

	if (tclnt_last.id == tc->id) {
		*errp = tclnt_last.err;
		return;
	}
	pthread_mutex_lock(&tc->lock);
	*errp = tc->err;
	pthread_mutex_unlock(&tc->lock);
}

static bool_t tclnt_freeres(CLIENT *cl, xdrproc_t xres, void *resp)
{
	XDR xdrs;

	memset(&xdrs, 0, sizeof(xdrs));
	xdrs.x_op = XDR_FREE;
	return xres(&xdrs, resp);
}

static void tclnt_destroy(CLIENT *cl)
{
	struct tclnt *tc = tclnt_of(cl);
	struct tcall_buf *b;

	/* Releases the registrations of the call buffers too. */
	rpcrdma_clnt_destroy(tc->native);
	while ((b = tc->all_bufs)) {
		tc->all_bufs = b->all_next;
		free(b->msg);
		free(b->reply);
		free(b->result);
		free(b);
	}
	close(tc->wake_fd);
	pthread_cond_destroy(&tc->cond);
	pthread_mutex_destroy(&tc->lock);
	free(cl->cl_netid);
	free(tc);
}

static void tclnt_set_hdr_u32(struct tclnt *tc, unsigned int off, const void *info)
{
	uint32_t v;

	memcpy(&v, info, sizeof(v));
	v = htonl(v);
	memcpy(tc->hdr + off, &v, sizeof(v));
}

static void tclnt_get_hdr_u32(const struct tclnt *tc, unsigned int off, void *info)
{
	uint32_t v;

	memcpy(&v, tc->hdr + off, sizeof(v));
	v = ntohl(v);
	memcpy(info, &v, sizeof(v));
}

static bool_t tclnt_control_locked(struct tclnt *tc, u_int request, void *info)
{
	struct rpcrdma_ddp_buf *ddp = info;
	struct rpcrdma_mem *mem;
	int rc;

	switch (request) {
	case CLSET_TIMEOUT:
		if (tclnt_time_bad(info))
			return FALSE;
		tc->wait = *(struct timeval *)info;
		tc->waitset = true;
		return TRUE;
	case CLGET_TIMEOUT:
		*(struct timeval *)info = tc->wait;
		return TRUE;
	case CLGET_SERVER_ADDR:
		memcpy(info, &tc->addr, tc->svcaddr.len);
		return TRUE;
	case CLGET_FD:
		*(int *)info = rpcrdma_clnt_fd(tc->native);
		return TRUE;
	case CLGET_SVC_ADDR:
		*(struct netbuf *)info = tc->svcaddr;
		return TRUE;
	case CLGET_XID:
		*(u_int32_t *)info = tc->last_xid;
		return TRUE;
	case CLSET_XID:
		tc->next_xid = *(u_int32_t *)info;
		return TRUE;
	case CLGET_VERS:
		tclnt_get_hdr_u32(tc, TCLNT_HDR_VERS, info);
		return TRUE;
	case CLSET_VERS:
		tclnt_set_hdr_u32(tc, TCLNT_HDR_VERS, info);
		return TRUE;
	case CLGET_PROG:
		tclnt_get_hdr_u32(tc, TCLNT_HDR_PROG, info);
		return TRUE;
	case CLSET_PROG:
		tclnt_set_hdr_u32(tc, TCLNT_HDR_PROG, info);
		return TRUE;
	case RPCRDMA_CLSET_DDP_RESULT:
		tc->ddp_result = *ddp;
		return TRUE;
	case RPCRDMA_CLSET_DDP_ARG:
		tc->ddp_arg = *ddp;
		return TRUE;
	case RPCRDMA_CLSET_MEM_REGISTER:
		rc = rpcrdma_clnt_mem_register(tc->native, ddp->buf, ddp->len, &mem);
		tclnt_kick(tc);
		return rc == 0;
	case RPCRDMA_CLSET_SPIN_US:
		if (*(u_int *)info > RPCRDMA_SPIN_MAX_US && *(u_int *)info != RPCRDMA_SPIN_AUTO)
			return FALSE;
		rpcrdma_spin_set(&tc->spin, *(u_int *)info);
		return TRUE;
	case RPCRDMA_CLGET_SPIN_US:
		*(u_int *)info = tc->spin.us;
		return TRUE;
	case RPCRDMA_CLGET_STATS:
		return rpcrdma_clnt_stats(tc->native, info) == 0;
	case RPCRDMA_CLGET_STATS_0_1:
		/* A program built against 0.1 passes the struct without struct_size. */
		return rpcrdma_clnt_stats_0_1(tc->native, info) == 0;
	default:
		return FALSE;
	}
}

static bool_t tclnt_control(CLIENT *cl, u_int request, void *info)
{
	struct tclnt *tc = tclnt_of(cl);
	bool_t ok;

	/* We own the descriptor whatever the caller asks. */
	if (request == CLSET_FD_CLOSE || request == CLSET_FD_NCLOSE)
		return TRUE;
	if (!info)
		return FALSE;
	pthread_mutex_lock(&tc->lock);
	ok = tclnt_control_locked(tc, request, info);
	pthread_mutex_unlock(&tc->lock);
	return ok;
}

static const struct clnt_ops tclnt_ops = {
	.cl_call = tclnt_call,
	.cl_abort = tclnt_abort,
	.cl_geterr = tclnt_geterr,
	.cl_freeres = tclnt_freeres,
	.cl_destroy = tclnt_destroy,
	.cl_control = tclnt_control,
};

static int tclnt_init_sync(struct tclnt *tc)
{
	pthread_condattr_t ca;
	int rc;

	rc = pthread_condattr_init(&ca);
	if (rc)
		return -rc;
	rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!rc)
		rc = pthread_cond_init(&tc->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (rc)
		return -rc;
	rc = pthread_mutex_init(&tc->lock, NULL);
	if (rc) {
		pthread_cond_destroy(&tc->cond);
		return -rc;
	}
	tc->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (tc->wake_fd < 0) {
		rc = -errno;
		pthread_mutex_destroy(&tc->lock);
		pthread_cond_destroy(&tc->cond);
		return rc;
	}
	return 0;
}

static int tclnt_encode_hdr(struct tclnt *tc, rpcprog_t prog, rpcvers_t vers)
{
	struct rpc_msg call;
	XDR xdrs;

	memset(&call, 0, sizeof(call));
	call.rm_direction = CALL;
	call.rm_call.cb_rpcvers = RPC_MSG_VERSION;
	call.rm_call.cb_prog = prog;
	call.rm_call.cb_vers = vers;
	xdrmem_create(&xdrs, tc->hdr, sizeof(tc->hdr), XDR_ENCODE);
	if (!xdr_callhdr(&xdrs, &call))
		return -EINVAL;
	tc->hdr_len = XDR_GETPOS(&xdrs);
	/* tclnt_encode_into() puts the procedure right after it. */
	if (tc->hdr_len + sizeof(uint32_t) > sizeof(tc->hdr))
		return -EINVAL;
	XDR_DESTROY(&xdrs);
	return 0;
}

RPCRDMA_EXPORT CLIENT *rpcrdma_clnt_create(const struct sockaddr *addr, rpcprog_t prog,
					   rpcvers_t vers, u_int sendsize, u_int recvsize)
{
	struct rpcrdma_clnt_attr attr;
	struct rpcrdma_clnt_info info;
	struct tclnt *tc;
	socklen_t alen;
	struct timeval now;
	int rc;

	alen = addr ? rpcrdma_sockaddr_len(addr) : 0;
	if (!alen) {
		rc = -EINVAL;
		goto fail;
	}
	tc = calloc(1, sizeof(*tc));
	if (!tc) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = tclnt_init_sync(tc);
	if (rc) {
		free(tc);
		goto fail;
	}
	tc->id = atomic_fetch_add(&tclnt_ids, 1) + 1;
	memcpy(&tc->addr, addr, alen);
	tc->svcaddr.buf = &tc->addr;
	tc->svcaddr.len = tc->svcaddr.maxlen = alen;
	rc = tclnt_encode_hdr(tc, prog, vers);
	if (rc)
		goto fail_sync;
	RPCRDMA_INIT(&attr);
	attr.addr = addr;
	attr.max_segment = TCLNT_SEGMENT;
	rc = rpcrdma_clnt_connect(&attr, &tc->native);
	if (rc)
		goto fail_sync;
	/* One wait for the engine's channels and our wake-ups, that says which woke. */
	rc = xprt_rdma_watch(tc->native, tc->wake_fd);
	if (rc) {
		rpcrdma_clnt_destroy(tc->native);
		goto fail_sync;
	}
	RPCRDMA_INIT(&info);
	rpcrdma_clnt_info(tc->native, &info);
	tc->sendsize = sendsize ? sendsize : info.inline_send;
	tc->recvsize = recvsize ? recvsize : info.inline_recv;
	tc->recv_inline = !recvsize;
	tc->inline_recv = info.inline_recv;
	rpcrdma_spin_set(&tc->spin, rpcrdma_spin_default(RPCRDMA_SPIN_AUTO));
	gettimeofday(&now, NULL);
	tc->next_xid = (uint32_t)getpid() ^ (uint32_t)now.tv_sec ^ (uint32_t)now.tv_usec << 12 ^
		       (uint32_t)(uintptr_t)tc;
	tc->cl.cl_ops = (struct clnt_ops *)&tclnt_ops;
	tc->cl.cl_private = tc;
	tc->cl.cl_netid = strdup(addr->sa_family == AF_INET6 ? "rdma6" : "rdma");
	if (!tc->cl.cl_netid) {
		rc = -ENOMEM;
		rpcrdma_clnt_destroy(tc->native);
		goto fail_sync;
	}
	tc->cl.cl_auth = authnone_create();
	return &tc->cl;

fail_sync:
	close(tc->wake_fd);
	pthread_cond_destroy(&tc->cond);
	pthread_mutex_destroy(&tc->lock);
	free(tc);
fail:
	rpc_createerr.cf_stat = RPC_SYSTEMERROR;
	rpc_createerr.cf_error.re_errno = -rc;
	return NULL;
}

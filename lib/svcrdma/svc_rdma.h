/* SPDX-License-Identifier: MIT */
/* The server transport's internals (the kernel's svcrdma side). */
#ifndef RPCRDMA_SVC_RDMA_H
#define RPCRDMA_SVC_RDMA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpcrdma/svc.h>

#include "cm.h"
#include "ep.h"
#include "guard.h"
#include "list.h"
#include "mem.h"
#include "stat.h"

struct svcxprt_rdma;
struct svc_rdma_recv_ctxt;
struct svc_rdma_srq;
struct svc_rdma_conn_req;

/*
 * A chain of send-queue WRs from @first: a send context's Writes and Send,
 * or a wave of Reads. It takes its slots, or waits for them, as @sq (whose
 * list also links the free send contexts, sc_batch and sc_orphans). @release gives
 * the owner back when the chain will never be posted, or after the drain
 * when only its head was.
 */
struct svc_rdma_chain {
	struct rpcrdma_sq_waiter sq;
	struct ibv_send_wr *first;
	void (*release)(struct svcxprt_rdma *rdma, struct svc_rdma_chain *chain);
};

/* A Read chunk of a call, pulled into a registered sink. */
struct svc_rdma_chunk {
	struct rpcrdma_buf ch_buf;	/* the sink; its data is handed up */
	uint64_t ch_len;		/* bytes of the chunk */
	uint32_t ch_pos;		/* offset in the message that lacks the payloads */
	uint32_t ch_first_seg;		/* its segments in the Read list */
	uint32_t ch_nsegs;
	bool ch_kept;			/* the application took the sink over */
};

/* Pulling a call's Read chunks: RDMA Reads in waves of at most the ORD. */
struct svc_rdma_read_ctxt {
	struct svc_rdma_chain rd_chain;
	struct rpcrdma_cqe rd_done_cqe;		/* svc_rdma_wc_read_done: a wave's last Read */
	struct rpcrdma_cqe rd_cqe;		/* svc_rdma_wc_read: the others (errors only) */
	struct svc_rdma_recv_ctxt *rd_recv;
	struct ibv_send_wr *rd_wrs;		/* one per Read segment */
	struct ibv_sge *rd_sges;
	struct ibv_mr **rd_mrs;			/* iWARP: the sinks' MRs for this pull */
	uint32_t rd_nmrs;
	uint32_t rd_max_mrs;
	uint32_t rd_nwrs;			/* WRs built */
	uint32_t rd_max;			/* WRs and SGEs allocated */
	uint32_t rd_next;			/* first WR of the next wave */
	bool rd_failed;
};

/* A DDP result the application named for the reply. */
struct svc_rdma_payload {
	uint32_t pos;
	const unsigned char *buf;
	size_t len;
	void (*release)(void *arg);
	void *arg;
	const struct rpcrdma_mem *mem;	/* its registration, known already (a pool's) */
	bool copy;			/* through a bounce buffer, registered or not */
};

/* What the application sees: struct rpcrdma_svc_call. */
/* svc_rdma_call_clear() sets each field for a new call: add a new one there. */
struct rpcrdma_svc_call {
	struct svcxprt_rdma *rdma;
	uint32_t xid;
	const unsigned char *msg;
	size_t msg_len;
	struct rpcrdma_hdr *hdr;		/* the call's transport header (chunk lists) */
	struct svc_rdma_send_ctxt *reply_ctxt;	/* taken by rpcrdma_svc_reply_buf() */
	struct rpcrdma_buf long_reply;		/* rpcrdma_svc_reply_buf() for a Reply chunk */
	size_t long_room;			/* its room, as rpcrdma_svc_reply_buf() said */
	uint32_t hdr_reserve;			/* bytes kept ahead of an inline reply */
	struct svc_rdma_chunk pzrc;		/* a long call's message; stale unless has_pzrc */
	bool has_pzrc;				/* pzrc is the call's */
	struct svc_rdma_chunk *chunks;		/* data-item Read chunks: the payloads */
	unsigned int nchunks;
	struct svc_rdma_read_ctxt *read;
	struct svc_rdma_payload *payloads;	/* named by rpcrdma_svc_reply_payload() */
	unsigned int npayloads;
	uint32_t inv_rkey;
	bool inv;				/* reply with Send With Invalidate of inv_rkey */
};

/*
 * A receive buffer; while it holds a call the application owns, rc_call is
 * live. It is a connection's own, or (rc_srq) a poller's shared one, lent
 * to the connection rc_rdma that received into it.
 */
struct svc_rdma_recv_ctxt {
	struct rpcrdma_cqe rc_cqe;		/* svc_rdma_wc_receive or svc_rdma_wc_srq_receive */
	struct list_node rc_list;		/* a free list, sc_rq_dto_q or sc_read_complete_q */
	struct list_node rc_held_node;		/* sc_held, while a call with chunk lists is held */
	struct svcxprt_rdma *rc_rdma;
	struct svc_rdma_srq *rc_srq;
	struct ibv_recv_wr rc_recv_wr;
	struct ibv_sge rc_recv_sge;
	unsigned char *rc_recv_buf;
	uint32_t rc_byte_len;
	bool rc_held;				/* a call lent to the application or pulling */
	struct rpcrdma_svc_call rc_call;
	struct rpcrdma_hdr rc_hdr;
};

/* What a send context releases when its Send completes. */
struct svc_rdma_release {
	void (*release)(void *arg);
	void *arg;
	struct rpcrdma_buf buf;			/* a bounce or long-reply buffer to free */
	struct rpcrdma_mem *mem;		/* a registration to unpin */
};

/*
 * A reply in the making and in flight. Its chain's sqecount counts every
 * WR of the chain ending in its Send, and sc_sq_extra the slots of the
 * unsignaled replies posted before it that its Send covers; the Send
 * completion (svc_rdma_wc_send) returns them all and releases the context
 * and what it holds, exactly once, on success or error. An inline reply
 * that holds nothing may go unsignaled instead (svc_rdma_post_send()):
 * the device took its bytes with the post, and the context is free again
 * at once.
 */
struct svc_rdma_send_ctxt {
	struct rpcrdma_cqe sc_cqe;		/* svc_rdma_wc_send */
	struct svcxprt_rdma *sc_rdma;		/* the connection it sends on */
	struct svc_rdma_srq *sc_srq;		/* its pool, if shared */
	struct rpcrdma_cqe sc_write_cqe;	/* svc_rdma_write_done: Write-list Writes */
	struct rpcrdma_cqe sc_reply_cqe;	/* svc_rdma_reply_done: Reply-chunk Writes */
	struct svc_rdma_chain sc_chain;		/* the SQ waiters, sc_batch, sc_orphans */
	struct svc_rdma_send_ctxt *sc_free_next;	/* below it on sc_send_free */
	struct ibv_send_wr sc_send_wr;
	struct ibv_sge sc_sge;
	uint32_t sc_sq_extra;			/* held slots its Send gives back */
	unsigned char *sc_xprt_buf;		/* registered: header, then the inline reply */
	struct ibv_send_wr *sc_wrs;		/* RDMA Writes ahead of the Send */
	struct ibv_sge *sc_wr_sges;
	uint32_t sc_nwrs;
	uint32_t sc_max_wrs;
	struct svc_rdma_release *sc_releases;
	uint32_t sc_nreleases;
	uint32_t sc_max_releases;
};

/*
 * A connection's own send contexts (without the SRQ), made in chunks, each
 * with its buffers in one registered slab: max_requests +
 * SVC_RDMA_SEND_EXTRA when it is accepted, SVC_RDMA_SEND_EXTRA more at a
 * time when a reply finds none free (svc_sendto.c), up to
 * svc_rdma_send_max(). They live as long as the connection's memory.
 */
struct svc_rdma_send_chunk {
	struct svc_rdma_send_chunk *next;
	struct rpcrdma_slab slab;
	uint32_t count;
	struct svc_rdma_send_ctxt ctxts[];
};

/* Send contexts beyond one per credit, first made: room for RDMA_ERROR replies. */
#define SVC_RDMA_SEND_EXTRA 8
/* Slots unsignaled inline replies may hold at once (rpcrdma_sq_reserve_unsignaled()). */
#define SVC_RDMA_UNSIG_MAX 16

/*
 * Read sinks kept for reuse per connection: registering memory is costly on
 * a real device, and fresh large buffers fault their pages in.
 */
#define SVC_RDMA_SINK_CACHE 4

enum svcxprt_state {
	SVCXPRT_ACCEPTING = 0,	/* accepted; ESTABLISHED not seen yet */
	SVCXPRT_CONNECTED,
	SVCXPRT_CLOSING,	/* draining */
	SVCXPRT_CLOSED,		/* verbs resources freed; memory kept while calls are held */
};

/* One connection: struct rpcrdma_svc_conn is this. */
struct svcxprt_rdma {
	struct rpcrdma_svc *sc_svc;		/* NULL once the server is destroyed */
	bool sc_workers;			/* sc_svc has RPCRDMA_SVC_WORKERS */
	struct list_node sc_node;		/* the poller's conns, adopt or zombies */
	struct svc_rdma_poller *sc_poller;	/* owns it once adopted */
	struct list_node sc_ready_node;		/* the poller's ready, if sc_ready */
	bool sc_ready;				/* rpcrdma_svc_poll() visits it next */
	unsigned int sc_idle_visits;		/* found drained in a row, left unarmed */
	int64_t sc_grace_end;			/* then armed once this passes (0: not timed yet) */
	bool sc_cm_due;				/* its poller saw the CM channel readable */
	bool sc_arm_early;			/* arm in the visit that serves (svc_conn.c) */
	bool sc_defers;				/* its last visit with work left calls held */
	bool sc_armed_early;			/* its last visit armed it early */
	unsigned int sc_armed_pass;		/* the poller's pass of that early arm */
	int sc_state;
	bool sc_announced;			/* on_conn(ESTABLISHED) was reported */
	struct rdma_cm_id *sc_cm_id;
	struct rdma_event_channel *sc_cm_channel;
	int sc_epfd;
	struct ibv_pd *sc_pd;
	struct rpcrdma_ep sc_ep;
	struct rpcrdma_cqe sc_unsig_cqe;	/* svc_rdma_wc_send_unsignaled: errors only */
	struct rpcrdma_inline sc_inline;
	uint32_t sc_max_requests;		/* grant ceiling, and calls in progress at most */
	uint32_t sc_recv_target;		/* a refill posts up to this many (svc_rdma_refill_recvs) */
	uint32_t sc_ord;			/* RDMA Reads in flight at most (initiator depth) */
	bool sc_iwarp;				/* Read sinks need remote write (svc_rw.c) */
	uint32_t sc_max_msg;			/* the port's max_msg_sz: longer RDMA ops split */
	uint32_t sc_sq_depth;			/* data WRs the send queue holds */
	uint32_t sc_buf_size;			/* bytes of each send and receive buffer */
	struct rpcrdma_stats *sc_stats;		/* the server's, or sc_own_stats */
	struct rpcrdma_stats sc_own_stats;

	struct rpcrdma_slab sc_recv_slab;
	struct svc_rdma_recv_ctxt *sc_recv_ctxts;
	uint32_t sc_nrecv;
	struct svc_rdma_send_chunk *sc_send_chunks;	/* its send contexts, newest first */
	uint32_t sc_nsend;			/* send contexts made (svc_rdma_send_max() at most) */
	struct list_node sc_recv_free;
	struct list_node sc_rq_dto_q;		/* received, not yet decoded */
	struct list_node sc_read_complete_q;	/* Read chunks pulled, ready to hand up */
	struct svc_rdma_send_ctxt *sc_send_free;	/* a stack (sc_free_next): the warmest first */
	struct list_node sc_orphans;		/* partly posted chains, released after the drain */
	/*
	 * While sc_batching (the deferred work of a poll pass), chains whose
	 * slots are taken wait on sc_batch, to reach the device in one post.
	 */
	struct list_node sc_batch;
	bool sc_batching;
	struct list_node sc_held;		/* held calls that may hold registrations (rc_held_node) */

	/*
	 * With the SRQ (svc_srq.c): the credit bound. sc_srq_bound bounds the
	 * calls the client may have sent: after its k-th reply, granting g, it
	 * has sent at most k + g; so this is the most of those sums over the
	 * replies sent so far (first 1, the initial credit).
	 */
	struct svc_rdma_srq *sc_srq;
	struct svcxprt_rdma *sc_hash_next;	/* sc_srq's QP table */
	unsigned int sc_cq_index;		/* its shared CQ */
	uint32_t sc_cq_used;			/* entries it reserved there */
	uint64_t sc_srq_bound;
	uint64_t sc_srq_recvd;			/* messages received */
	uint64_t sc_srq_replies;		/* replies sent */
	uint32_t sc_srq_demand;			/* most calls in progress in this window */
	uint32_t sc_srq_demand_prev;		/* and in the one before */
	uint32_t sc_srq_window;			/* replies in this window */
	uint32_t sc_sends_out;			/* shared send contexts taken (svc_rdma_send_max()) */

	struct rpcrdma_buf sc_sinks[SVC_RDMA_SINK_CACHE];	/* registered Read sinks for reuse */
	unsigned int sc_nsinks;
	struct rpcrdma_buf sc_long_kept;	/* the last long reply's buffer, for the next */
	uint32_t sc_calls_held;			/* calls lent to the application or pulling */
	uint64_t sc_recvd;			/* messages received (with the SRQ: sc_srq_recvd) */
	void *sc_app_ctx;
	struct sockaddr_storage sc_local;
	struct sockaddr_storage sc_peer;
	size_t sc_heap;				/* bytes of heap this connection holds */
};

/* A PD per device, created at listen time for every device. */
struct svc_rdma_pd {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
};

#define SVC_RDMA_MAX_DEVICES RPCRDMA_MEM_MAX_MRS

/*
 * A poller (svc_poller.c): one thread's share of the server's connections.
 * Each connection belongs to one poller, which alone touches its state;
 * poller 0 also owns the listener and hands each connection request to a
 * poller (round robin) through that poller's queue; that poller accepts
 * it, so its SRQ and CQs (svc_srq.c) are touched by one thread only.
 */
struct svc_rdma_poller {
	struct rpcrdma_svc *svc;
	int epfd;				/* its connections; poller 0's also the listener */
	struct list_node conns;			/* its connections (sc_node) */
	struct list_node ready;			/* connections with work, or not yet armed */
	unsigned int nready;			/* in ready */
	struct list_node zombies;		/* closed, calls still held */
	struct rpcrdma_stats stats;		/* its connections' counters */
	_Atomic uintptr_t thread;		/* the thread that polls it */
	struct rpcrdma_guard guard;		/* one thread inside its polls at a time */
	int wake_fd;				/* in epfd (data: the poller) */
	atomic_uint spin_us;			/* a wait polls this long first */
	atomic_uint nwork;			/* queued handoffs and adoptions */
	atomic_bool async_check;		/* an async event may concern its connections */
	struct svc_rdma_srq *srqs[SVC_RDMA_MAX_DEVICES];	/* with RPCRDMA_SVC_SRQ, per device */
	unsigned int nsrqs;			/* of them not NULL */
	struct list_node srq_busy;		/* their CQs to poll on the next pass */
	pthread_mutex_t lock;			/* the queues, and the wake-up's write */
	struct list_node handoffs;		/* lock: workers' replies */
	struct list_node adopt;			/* lock: connection requests for it */
	struct rpcrdma_stat_src stat;		/* stats (and poller 0: the server's) for rpcrdma-stat */
	int ka_fd;				/* keepalive and idle timer, or -1 */
	/* Its idle connections as its last look found them, for poller 0 at max_connections. */
	atomic_uint idle_count;
	_Atomic int64_t idle_since;		/* the oldest one's last activity (ms) */
	struct rpcrdma_pace wake_pace;		/* busy passes since the last epoll_wait */
	unsigned int nconns;			/* in conns */
	unsigned int visits;			/* connections the last pass visited */
	unsigned int armed;			/* of those, the ones it armed */
	unsigned int idle_passes;		/* passes in a row that found no work */
	unsigned int passes;			/* every pass, wrapping */
	bool spinning;				/* inside svc_rdma_poller_spin() */
	bool busy_poll;				/* RPCRDMA_SVC_BUSY_POLL */
	bool waiting;				/* inside svc_rdma_poller_wait() */
	struct rpcrdma_pace idle_pace;		/* busy polling: idle passes' epoll_waits */
};

struct rpcrdma_svc {
	struct rpcrdma_svc_attr sv_attr;
	struct sockaddr_storage sv_addr;
	struct rdma_event_channel *sv_cm_channel;
	struct rdma_cm_id *sv_listen_id;
	struct ibv_context **sv_devs;		/* rdma_get_devices(), held for the PDs */
	struct svc_rdma_pd sv_pds[SVC_RDMA_MAX_DEVICES];
	void (*sv_on_free)(void *arg);		/* before the PDs go (svc_rdma_set_on_free) */
	void *sv_on_free_arg;
	unsigned int sv_npds;
	struct list_node sv_mems;		/* sv_mems_lock: rpcrdma_svc_mem_register() */
	pthread_rwlock_t sv_mems_lock;		/* pollers read the list, the application changes it */
	atomic_uint sv_nconns;			/* counted against max_connections */
	struct rpcrdma_stats sv_stats;		/* the listener's: the server, rejects, regions */
	struct svc_rdma_poller *sv_pollers;
	unsigned int sv_npollers;
	unsigned int sv_next_poller;		/* the next accepted connection's */
	int sv_listen_epfd;			/* with workers: the CM channel and poller 0's wake */
};

/*
 * A pass of an application busy polling with RPCRDMA_SVC_BUSY_POLL, which
 * polls again at once: drained connections stay unarmed for a while, idle
 * passes read the epoll set seldom. A wait's passes arm, as it may sleep.
 */
static inline bool svc_rdma_caller_spins(const struct svc_rdma_poller *p)
{
	return p->busy_poll && !p->waiting;
}

/* The reply functions (svc_sendto.c), by the one door they all go through. */
enum svc_rdma_reply_op {
	SVC_REPLY_MSG,		/* rpcrdma_svc_reply() */
	SVC_REPLY_BUF,		/* rpcrdma_svc_reply_buf() */
	SVC_REPLY_COMMIT,	/* rpcrdma_svc_reply_commit() */
	SVC_REPLY_PAYLOAD,	/* svc_rdma_reply_payload_src() */
	SVC_REPLY_ERR_CHUNK,	/* rpcrdma_svc_reply_err_chunk() */
	SVC_REPLY_DROP,		/* rpcrdma_svc_call_drop() */
};

/* One reply function's call: @op, and its arguments (those it does not take are 0). */
struct svc_rdma_reply_args {
	enum svc_rdma_reply_op op;
	struct rpcrdma_svc_call *call;
	const void *ptr;
	size_t len;
	uint32_t pos;
	void **buf;
	size_t *max;
	void (*release)(void *arg);
	void *arg;
	const struct rpcrdma_mem *mem;		/* SVC_REPLY_PAYLOAD's */
	bool copy;
};

/* svc_sendto.c: run the reply function @a names, on its call's poller. */
int svc_rdma_reply_run(const struct svc_rdma_reply_args *a);

/* svc_handoff.c: a worker thread's reply function, run by the poller. */
struct svc_rdma_handoff {
	struct list_node node;
	const struct svc_rdma_reply_args *args;
	int rc;
	/* The worker waits on these, its own, until the poller sets done. */
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool done;
};

/* What a second thread entering a poller is told (guard.h). */
#define SVC_RDMA_GUARD_WHAT                                                             \
	"server poller: a poller belongs to one thread at a time (svc.h); with several "  \
	"threads, give each its own (rpcrdma_svc_attr.pollers, rpcrdma_svc_poller_wait())"
#define SVC_RDMA_GUARD(p, fail) RPCRDMA_GUARD(&(p)->guard, SVC_RDMA_GUARD_WHAT, fail)

/* The calling thread polls @p from now on. Inline: every pass says so. */
static inline void svc_rdma_note_poller(struct svc_rdma_poller *p)
{
	if (p->svc->sv_attr.flags & RPCRDMA_SVC_WORKERS)
		atomic_store_explicit(&p->thread, rpcrdma_thread_self(), memory_order_relaxed);
}
/* Is the caller another thread than @rdma's poller? */
static inline bool svc_rdma_foreign_thread(const struct svcxprt_rdma *rdma)
{
	return rdma->sc_poller &&
	       atomic_load_explicit(&rdma->sc_poller->thread, memory_order_relaxed) !=
		       rpcrdma_thread_self();
}

/*
 * Is the caller a worker (not its connection's poller) of a server with
 * RPCRDMA_SVC_WORKERS? Inline: every reply asks, and most servers have no
 * workers.
 */
static inline bool svc_rdma_foreign(const struct rpcrdma_svc_call *call)
{
	const struct svcxprt_rdma *rdma = call->rdma;

	/* Without a server (destroyed), the calls it left are the application's alone. */
	return rdma->sc_workers && svc_rdma_foreign_thread(rdma);
}
/*
 * Hand @a to its call's poller and wait for its result. By value: the
 * reply functions build their arguments in registers, and only a worker's
 * call pays for them in memory.
 */
int svc_rdma_handoff(struct svc_rdma_reply_args a);
/* On the poller: run one handoff (svc_poller.c takes them off its queue). */
void svc_rdma_handoff_done(struct svc_rdma_handoff *h);

/*
 * svc.c: the application's region (rpcrdma_svc_mem_register()) holding
 * [@buf, @buf + @len) with its MR under @pd, its use counted until the
 * reply's Send completes; NULL if none. Any poller may call it.
 */
struct rpcrdma_mem *svc_rdma_mem_use(struct rpcrdma_svc *svc, const void *buf, size_t len,
				     struct ibv_pd *pd, struct ibv_mr **mr);

/* svc_poller.c */
int svc_rdma_pollers_init(struct rpcrdma_svc *svc, unsigned int n);
void svc_rdma_pollers_fini(struct rpcrdma_svc *svc);
/* The keepalive and idle timer expired: tick the poller's connections; returns the closes. */
int svc_rdma_poller_keepalive(struct svc_rdma_poller *p);
/* Queue @h on @p and wake it; false if the wake-up could not be written. */
bool svc_rdma_poller_queue(struct svc_rdma_poller *p, struct svc_rdma_handoff *h);
/*
 * Poller 0, listening: give the request to the next poller, which accepts
 * it; one with @req->evict to the poller with the oldest idle connection,
 * which closes that connection to make room, or refuses the request.
 */
void svc_rdma_poller_assign(struct rpcrdma_svc *svc, const struct svc_rdma_conn_req *req);
/* The server goes: requests not yet accepted are refused. */
void svc_rdma_pollers_refuse(struct rpcrdma_svc *svc);
int svc_rdma_poller_take_work_slow(struct svc_rdma_poller *p, bool woken);

/*
 * What others queued for @p: adoptions, handoffs, an async check (@woken:
 * its eventfd is readable, read it even if nothing is counted). Returns
 * how many. Inline: every pass looks, and almost always finds nothing, so
 * it looks without an atomic read-modify-write.
 */
static inline int svc_rdma_poller_take_work(struct svc_rdma_poller *p, bool woken)
{
	if (!woken && !atomic_load_explicit(&p->async_check, memory_order_relaxed) &&
	    !atomic_load(&p->nwork))
		return 0;
	return svc_rdma_poller_take_work_slow(p, woken);
}

int svc_rdma_poller_poll(struct svc_rdma_poller *p, int budget);
int svc_rdma_poller_wait(struct svc_rdma_poller *p, int timeout_ms);
/* An async event was read: the connections it concerns have work. */
void svc_rdma_pollers_async(struct rpcrdma_svc *svc);
/* The listener's descriptor: with workers, it wakes for their handoffs too. */
int svc_rdma_listen_fd(const struct rpcrdma_svc *svc);
/* @dst += @src, counter by counter. */

static inline struct svcxprt_rdma *svc_conn_rdma(struct rpcrdma_svc_conn *conn)
{
	return (struct svcxprt_rdma *)conn;
}

static inline struct rpcrdma_svc_conn *svc_rdma_conn(struct svcxprt_rdma *rdma)
{
	return (struct rpcrdma_svc_conn *)rdma;
}

static inline struct svc_rdma_recv_ctxt *svc_rdma_call_ctxt(struct rpcrdma_svc_call *call)
{
	return container_of(call, struct svc_rdma_recv_ctxt, rc_call);
}

/* The most DDP results a reply names (rpcrdma_svc_reply_payload()). */
#define SVC_RDMA_MAX_PAYLOADS RPCRDMA_MAX_CHUNKS_LIMIT
/* Chunk segments a reply echoes from the stack; more than this come from the heap. */
#define SVC_RDMA_STACK_SEGS 32

/* Where a reply's RPC message is: copied, encoded in place, or in a long-reply buffer. */
struct svc_rdma_msg {
	const unsigned char *msg;
	size_t len;
	bool in_place;			/* at sc_xprt_buf + hdr_reserve */
	struct rpcrdma_buf *long_buf;	/* the call's long-reply buffer, handed over */
};

/*
 * A reply in the making (svc_rdma_sendto): its transport header, the
 * payloads that go in the message, and the echo of every chunk segment
 * with the bytes written into it (Write list first, then the Reply chunk).
 */
struct svc_rdma_reply {
	const struct svc_rdma_msg *msg;
	struct rpcrdma_hdr_enc enc;
	struct rpcrdma_chunk_desc wdesc[RPCRDMA_MAX_CHUNKS_LIMIT];
	struct rpcrdma_chunk_desc rdesc;
	struct svc_rdma_payload inl[SVC_RDMA_MAX_PAYLOADS];
	unsigned int ninl;
	size_t stream_len;			/* the message with its inline payloads */
	uint32_t nsegs;				/* segments echoed */
	uint32_t *written;
	struct rpcrdma_segment *echo;
	uint32_t written_stack[SVC_RDMA_STACK_SEGS];
	struct rpcrdma_segment echo_stack[SVC_RDMA_STACK_SEGS];
};

/*
 * Payload @i goes by RDMA Write into Write chunk @i when that chunk has
 * segments; a payload beyond the Write list, or whose chunk is empty (the
 * client asks for the item inline: RFC 8166 3.4.6), goes in the message.
 */
static inline bool svc_rdma_payload_ddp(const struct rpcrdma_hdr *hdr, unsigned int i)
{
	return i < hdr->write_chunks && hdr->write[i].nsegs;
}

/*
 * svc_conn.c: a connection's heap, accounted in its server's stats and in
 * sc_heap (what it keeps when the server goes first).
 */
void *svc_rdma_alloc(struct svcxprt_rdma *rdma, size_t size);

/* RDMA operations it takes to move @len bytes of one segment. */
static inline uint32_t svc_rdma_pieces(const struct svcxprt_rdma *rdma, uint64_t len)
{
	return (uint32_t)((len + rdma->sc_max_msg - 1) / rdma->sc_max_msg);
}
void *svc_rdma_realloc(struct svcxprt_rdma *rdma, void *p, size_t old, size_t size);

/* svc_conn.c: accepting, polling and closing one connection. */
struct svc_rdma_conn_req {
	struct list_node node;			/* its poller's adopt queue */
	struct rdma_cm_id *id;
	unsigned char pdata[256];
	size_t pdata_len;
	uint8_t initiator_depth;
	bool evict;				/* past max_connections: an idle one makes room */
};

/* On @p, the poller it was given to; a failure is logged and counted. */
int svc_rdma_accept(struct svc_rdma_poller *p, const struct svc_rdma_conn_req *req);
int svc_rdma_conn_poll(struct svcxprt_rdma *rdma, int budget);
int svc_rdma_conn_arm(struct svcxprt_rdma *rdma);
/*
 * rpcrdma_svc_poll()'s visit: poll, and arm once the CQ is drained, or stay
 * on the ready list when work is left. Returns the completions handled.
 */
int svc_rdma_conn_visit(struct svcxprt_rdma *rdma, int budget);
/*
 * Readiness (svc_poller.c): a poll visits only the connections on its
 * poller's ready list, which are those whose descriptor woke, those with work left,
 * and those the application gave work outside a poll (a held call let go,
 * a close). The others are armed: their descriptor wakes the server.
 */
static inline void svc_rdma_mark_ready(struct svcxprt_rdma *rdma)
{
	if (rdma->sc_ready || !rdma->sc_poller || rdma->sc_state == SVCXPRT_CLOSED)
		return;
	rdma->sc_ready = true;
	rdma->sc_poller->nready++;
	list_add_tail(&rdma->sc_ready_node, &rdma->sc_poller->ready);
}

/* Early arms (svc_conn.c): a wake-up within this many passes of one ends them. */
#define SVC_RDMA_EARLY_PASSES 1

/* Its poller heard @rdma wake: an early arm that came too soon is given up. */
static inline void svc_rdma_woken_early(struct svcxprt_rdma *rdma)
{
	if (rdma->sc_poller->passes - rdma->sc_armed_pass <= SVC_RDMA_EARLY_PASSES)
		rdma->sc_arm_early = false;
}

/*
 * A poller's wait set holds each connection twice: its own wait set (the
 * connection's address) and its CM channel (the address with bit 0 set;
 * connections are at least pointer-aligned, and no other member of the
 * set is at an odd address).
 */
static inline void *svc_rdma_cm_tag(struct svcxprt_rdma *rdma)
{
	return (void *)((uintptr_t)rdma | 1);
}

static inline bool svc_rdma_cm_tagged(const void *ptr)
{
	return ((uintptr_t)ptr & 1) != 0;
}

static inline struct svcxprt_rdma *svc_rdma_cm_untag(void *ptr)
{
	return (struct svcxprt_rdma *)((uintptr_t)ptr & ~(uintptr_t)1);
}
void svc_rdma_unready(struct svcxprt_rdma *rdma);
/*
 * Begin the close now, not at the next visit: its flushes wake whoever
 * sleeps on the connection (its poller, or the adapter polling it alone).
 */
void svc_rdma_close_now(struct svcxprt_rdma *rdma);
void svc_rdma_conn_destroy_sync(struct svcxprt_rdma *rdma);
void svc_rdma_free(struct svcxprt_rdma *rdma);

/* Would a visit post receives? Once below the grant (always with the SRQ: its pool's). */
static inline bool svc_rdma_refill_due(const struct svcxprt_rdma *rdma)
{
	return rdma->sc_srq || rdma->sc_ep.recv_posted < rdma->sc_max_requests;
}

/*
 * A held call is over: a closed connection goes once it holds none. Its
 * receive goes back up on the next visit; but a connection its visit armed
 * early (svc_conn.c), asleep until its next call, gets that visit from its
 * next call unless a refill is due.
 */
static inline void svc_rdma_conn_call_done(struct svcxprt_rdma *rdma)
{
	if (--rdma->sc_calls_held == 0 && rdma->sc_state == SVCXPRT_CLOSED)
		svc_rdma_free(rdma);
	else if (!rdma->sc_ready &&
		 !(rdma->sc_armed_early && rdma->sc_state == SVCXPRT_CONNECTED &&
		   !svc_rdma_refill_due(rdma)))
		svc_rdma_mark_ready(rdma);
}
bool svc_rdma_can_send(const struct svcxprt_rdma *rdma);

/* Give back what svc_rdma_alloc() gave; NULL costs a test, on the hot path too. */
static inline void svc_rdma_free_mem(struct svcxprt_rdma *rdma, void *p, size_t size)
{
	if (!p)
		return;
	rdma->sc_heap -= size;
	rpcrdma_free(rdma->sc_stats, p, size);
}

/*
 * svc_srq.c, with RPCRDMA_SVC_SRQ: each poller's SRQ, CQs and buffers on a
 * device, shared by its connections there, and the credits that keep the
 * SRQ from running dry.
 */
struct svc_rdma_srq *svc_rdma_srq_get(struct svc_rdma_poller *p, struct ibv_context *verbs);
/* The QP of @rdma is to be created: reserve its credit and CQ room; fill @attr. */
int svc_rdma_srq_join(struct svc_rdma_srq *sh, struct svcxprt_rdma *rdma,
		      struct rpcrdma_ep_attr *attr);
/* Its QP exists: completions for its QP number find it from now on. */
void svc_rdma_srq_attach(struct svcxprt_rdma *rdma);
/* Drained: poll its CQ once more, then give back what join took. */
void svc_rdma_srq_leave(struct svcxprt_rdma *rdma);
/* Its QP is destroyed: the SRQ goes with its last connection. */
void svc_rdma_srq_put(struct svc_rdma_srq *sh);
void svc_rdma_wc_srq_receive(struct ibv_cq *cq, struct ibv_wc *wc);
void svc_rdma_srq_refill(struct svc_rdma_srq *sh);
uint32_t svc_rdma_srq_grant(struct svcxprt_rdma *rdma);
void svc_rdma_srq_recv_put(struct svc_rdma_srq *sh, struct svc_rdma_recv_ctxt *ctxt);
/* One of the pool's send contexts; NULL at svc_rdma_send_max() for @rdma, or out of memory. */
struct svc_rdma_send_ctxt *svc_rdma_srq_send_get(struct svcxprt_rdma *rdma);
void svc_rdma_srq_send_put(struct svc_rdma_send_ctxt *ctxt);
/* A poller's pass: poll the shared CQs that have work. Returns completions. */
int svc_rdma_srq_poll(struct svc_rdma_poller *p, int budget);
bool svc_rdma_srq_busy(const struct svc_rdma_poller *p);
/* Its channel woke (epoll data @ptr): is @ptr one of @p's? */
bool svc_rdma_srq_woken(struct svc_rdma_poller *p, void *ptr);
/* The server goes: verbs resources now, memory once no call holds it. */
void svc_rdma_srq_destroy(struct svc_rdma_srq *sh);

/* svc_recvfrom.c: the receive path. */
/*
 * @rdma's client went past its credits (RFC 8166 3.3.1) so far that the
 * server would hold more of its calls or replies than one connection may
 * (@what says which): close the connection, count it in credit_overruns,
 * log it. Once per connection: one already closing is left as it is.
 */
void svc_rdma_credit_overrun(struct svcxprt_rdma *rdma, const char *what);
void svc_rdma_recv_ctxt_init(struct svc_rdma_recv_ctxt *ctxt, unsigned char *buf, uint32_t len,
			     uint32_t lkey);
void svc_rdma_wc_receive(struct ibv_cq *cq, struct ibv_wc *wc);
void svc_rdma_refill_post(struct svcxprt_rdma *rdma);

/* Post receives once below the grant (svc_rdma_refill_post()). Inline: most passes post none. */
static inline void svc_rdma_refill_recvs(struct svcxprt_rdma *rdma)
{
	if (svc_rdma_refill_due(rdma))
		svc_rdma_refill_post(rdma);
}
void svc_rdma_recvfrom(struct svcxprt_rdma *rdma);
void svc_rdma_hand_up(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt);
/* The one way a receive buffer comes back, whatever held it (svc_recvfrom.c says what it does). */
void svc_rdma_recv_ctxt_put(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt);
/* Part of it: the payloads a call named for a reply that never went out. */
void svc_rdma_release_payloads(struct rpcrdma_svc_call *call);

/* svc_rw.c: RDMA Reads that pull Read chunks; Write WRs for the reply. */
int svc_rdma_process_read_list(struct svcxprt_rdma *rdma, struct svc_rdma_recv_ctxt *ctxt);
void svc_rdma_sink_put(struct svcxprt_rdma *rdma, struct rpcrdma_buf *buf);
/* Read sinks and the long-reply buffer kept for reuse: freed at the connection's end. */
void svc_rdma_sinks_free(struct svcxprt_rdma *rdma);
int svc_rdma_long_reply_get(struct svcxprt_rdma *rdma, struct rpcrdma_buf *buf, size_t room);
void svc_rdma_long_reply_put(struct svcxprt_rdma *rdma, struct rpcrdma_buf *buf);
void svc_rdma_read_complete(struct svcxprt_rdma *rdma);
void svc_rdma_wc_read_done(struct ibv_cq *cq, struct ibv_wc *wc);
void svc_rdma_wc_read(struct ibv_cq *cq, struct ibv_wc *wc);
void svc_rdma_write_done(struct ibv_cq *cq, struct ibv_wc *wc);
void svc_rdma_reply_done(struct ibv_cq *cq, struct ibv_wc *wc);
int svc_rdma_prepare_write_list(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt,
				struct rpcrdma_svc_call *call, struct svc_rdma_reply *r);
int svc_rdma_prepare_reply_chunk(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt,
				 struct rpcrdma_svc_call *call, struct svc_rdma_reply *r);

/* svc_sendto.c: the reply path. */
void svc_rdma_send_ctxt_init(struct svc_rdma_send_ctxt *ctxt, unsigned char *buf, uint32_t lkey);

/*
 * Send contexts one connection may hold at once, its own or (with the SRQ)
 * its poller's: one per call it may have in progress, as many again for
 * replies that reached the client but whose Send completions are not
 * polled yet (a client within its credits needs a few of these in rare
 * timing, never all), and SVC_RDMA_SEND_EXTRA for RDMA_ERROR replies. A
 * reply that would need one more is of a client far past its credits: the
 * connection is closed (svc_rdma_credit_overrun()), never the reply lost.
 */
static inline uint32_t svc_rdma_send_max(const struct svcxprt_rdma *rdma)
{
	return 2 * rdma->sc_max_requests + SVC_RDMA_SEND_EXTRA;
}
/* @n more send contexts of the connection's own, onto its free stack. Returns 0 or -ENOMEM. */
int svc_rdma_send_ctxts_grow(struct svcxprt_rdma *rdma, uint32_t n);
/* The verbs teardown: the send slabs' registrations go, their memory stays. */
void svc_rdma_send_ctxts_dereg(struct svcxprt_rdma *rdma);
/* The connection's memory goes: its send contexts and what they grew. */
void svc_rdma_send_ctxts_free(struct svcxprt_rdma *rdma);
void svc_rdma_wc_send(struct ibv_cq *cq, struct ibv_wc *wc);
void svc_rdma_wc_send_unsignaled(struct ibv_cq *cq, struct ibv_wc *wc);
void svc_rdma_send_ctxt_put(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt);

/* A free send context on top of the connection's stack. */
static inline void svc_rdma_send_ctxt_push(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt)
{
	ctxt->sc_free_next = rdma->sc_send_free;
	rdma->sc_send_free = ctxt;
}
int svc_rdma_send_error(struct svcxprt_rdma *rdma, const struct rpcrdma_hdr *failing,
			uint32_t err);
void svc_rdma_chain_init(struct svc_rdma_chain *chain,
			 void (*release)(struct svcxprt_rdma *, struct svc_rdma_chain *));
void svc_rdma_send_release(struct svcxprt_rdma *rdma, struct svc_rdma_chain *chain);
int svc_rdma_sq_wait(struct svcxprt_rdma *rdma, struct svc_rdma_chain *chain);

/* After a batch: chains queued for SQ space go, in order, while they fit. Inline: few wait. */
static inline void svc_rdma_wake_send_waiters(struct svcxprt_rdma *rdma)
{
	if (unlikely(!list_empty(&rdma->sc_ep.sq_waiters)) && svc_rdma_can_send(rdma))
		rpcrdma_sq_wake_waiters(&rdma->sc_ep);
}
void svc_rdma_post_batched(struct svcxprt_rdma *rdma);

/* The pass is over: post the chains of sc_batch, linked into one list of WRs (one doorbell). */
static inline void svc_rdma_post_batch(struct svcxprt_rdma *rdma)
{
	rdma->sc_batching = false;
	if (!list_empty(&rdma->sc_batch))
		svc_rdma_post_batched(rdma);
}
uint32_t svc_rdma_grant(struct svcxprt_rdma *rdma);
int svc_rdma_add_release(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt,
			 const struct svc_rdma_release *rel);
int svc_rdma_payload_lkey(struct svcxprt_rdma *rdma, struct svc_rdma_send_ctxt *ctxt,
			  const struct svc_rdma_payload *p, const unsigned char **src,
			  uint32_t *lkey);
void svc_rdma_echo(const struct rpcrdma_chunk *chunk, const uint32_t *written,
		   struct rpcrdma_segment *segs, struct rpcrdma_chunk_desc *desc);


/*
 * The adapter API: what the libtirpc listeners (lib/tirpc) use beyond the
 * public one. Waits that say which connections are ready (enum
 * rpcrdma_ready, ep.h); payloads of upper-layer bindings sent from a
 * registration the adapter owns (its buffer pool) or always copied, with
 * the pool's registrations made on the server's PDs and released before
 * them.
 */

/*
 * Before the adapter polls a connection: if its poll() found the armed
 * connection's descriptor ready (@woke), learn which of its channels are,
 * without sleeping; otherwise (calls were left, or it yielded) take it
 * that none is.
 */
void svc_rdma_conn_collect(struct rpcrdma_svc_conn *conn, bool woke);

/*
 * rpcrdma_svc_reply_payload() whose bytes are sent from @mem, a registration
 * the caller owns (NULL: looked up as usual), or always copied (@copy).
 */
int svc_rdma_reply_payload_src(struct rpcrdma_svc_call *call, uint32_t pos, const void *buf,
			       size_t len, void (*release)(void *arg), void *arg,
			       const struct rpcrdma_mem *mem, bool copy);
/*
 * rpcrdma_svc_reply_err_chunk() for a reply that does not fit the room the
 * client offered for it, counted in the server's reply_overflows.
 */
int svc_rdma_reply_overflow(struct rpcrdma_svc_call *call);
/*
 * rpcrdma_svc_mem_register() onto the caller's own @list: the engine never
 * looks there, the caller names the registration (above) and releases it.
 */
int svc_rdma_mem_register_on(struct rpcrdma_svc *svc, struct list_node *list, void *addr,
			     size_t len, struct rpcrdma_mem **out);
/*
 * Run @fn(@arg) when @svc is freed, every connection gone, just before its
 * registrations and PDs are released.
 */
void svc_rdma_set_on_free(struct rpcrdma_svc *svc, void (*fn)(void *arg), void *arg);
/*
 * How long each poller's waits (rpcrdma_svc_poller_wait()) poll before they
 * sleep: RPCRDMA_SVCSET_SPIN_US on a listener of rpcrdma_svc_run().
 */
void svc_rdma_set_spin(struct rpcrdma_svc *svc, unsigned int us);

#endif /* RPCRDMA_SVC_RDMA_H */

/* SPDX-License-Identifier: MIT */
/*
 * Internal state of the softrdma fabric, shared by its files.
 *
 * One mutex, fab.lock, guards every object below but two rings, which have
 * locks of their own so that the hot verbs do not queue behind the engine:
 * a CQ's completion ring (polled under soft_cq.poll_lock) and a receive ring
 * (posted to under soft_rq.lock). Each ring has one side that holds fab.lock
 * (a CQ's producers, a receive ring's consumers) and one side that holds the
 * ring's lock, and they meet only through the ring's atomic counters. The
 * order is fab.lock, then a ring's lock, never the reverse; no two ring locks
 * are held at once. Exported entry points take fab.lock unless they say
 * otherwise; functions named *_locked expect it held. Nothing here calls
 * back into application code, so no lock is held across user code, and
 * blocking waits (event acks, idle) use condition variables on fab.lock.
 *
 * The send fast path (fast.c) runs a Send or Write between two QPs of this
 * process without fab.lock, under locks of the objects it touches. It and
 * fab.lock exclude each other through a gate (fab.gate_closed and
 * fab.fast_inflight, Dekker's handshake in seq_cst atomics): a fab.lock
 * holder closes the gate and waits out the fast paths inside before it
 * touches anything, and a fast path enters only while the gate is open, so
 * no object is created, destroyed, modified or reached by the engine while
 * a fast path holds a pointer to it. Fast paths exclude each other by
 * object. The whole lock order:
 *
 *   0. an extended QP's batch lock (qp_ex.c), which the application holds
 *      from ibv_wr_start() to ibv_wr_complete() or ibv_wr_abort();
 *   1. fab.lock (then the gate) -- or, on the fast path, the gate alone;
 *   2. soft_qp.lock of the requester and of the responder, by address
 *      (fast path only: fab.lock holders never take it), then the
 *      responder's soft_srq.consume_lock if it has an SRQ (fast path only);
 *   3. soft_cq.push_lock of the CQs it completes on, by address (fast path
 *      only: under fab.lock the gate keeps other producers out);
 *   4. a ring's lock (soft_rq.lock, soft_cq.poll_lock), or a completion
 *      channel's lock (soft_comp_channel.lock), one at a time;
 *   5. the signal lock (base/lock.c), innermost (soft_signal.owed/queued).
 *
 * A fast path never waits for fab.lock: what it cannot do without it (an
 * error, an RNR NAK, a fault, an async event, a unit for the progress
 * thread) it leaves untouched and hands the rest of the post to the
 * fab.lock path, which then runs it exactly as before.
 */
#ifndef SOFT_H
#define SOFT_H

#include <pthread.h>
#include <time.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "base.h"
#include "softrdma.h"
#include "wire.h"

#define SOFT_DEV_NAME		"softrdma0"
#define SOFT_MAX_QP		65536
#define SOFT_MAX_QP_WR		16384
#define SOFT_MAX_SGE		32
#define SOFT_MAX_SGE_RD		16	/* SGEs of one RDMA Read (max_sge_rd) */
#define SOFT_MAX_CQE		65536
#define SOFT_MAX_INLINE		512
#define SOFT_MAX_RD_ATOM	16
#define SOFT_MAX_MR_SIZE	(1ULL << 40)
#define SOFT_MAX_MSG		WIRE_MAX_MSG
#define SOFT_MAX_KEYS		(1U << 20)
#define SOFT_KEY_CHUNK		256	/* key slots allocated at a time */
#define SOFT_QP_HASH		1024	/* buckets of the QP-number table */
#define SOFT_NET_WINDOW		WIRE_WINDOW
/* A request the link had no room for (WIRE_BUSY) goes again after this long. */
#define SOFT_BUSY_RETRY_NS	20000u
#define SOFT_FIRST_QPN		0x11
#define SOFT_FW_VER		"1.0.0"
/* What a context's cmd_fd is open on, for want of a uverbs device (device.c). */
#define SOFT_CMD_FD_DEV		"/dev/zero"

/* RNR and transport retries wait this long each in THREAD mode. */
/* How long a disconnected cm_id stays in timewait before TIMEWAIT_EXIT. */
#define SOFT_TIMEWAIT_NS	50000000ULL
/* Every error completion reports this vendor_err, plus the status. */
#define SOFT_VENDOR_ERR_BASE	0x5f00

/* ---- profile.c: the provider softrdma0 plays (SOFTRDMA_PROFILE) ------------- */

struct soft_profile {
	const char *name;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	int max_qp_wr;
	int max_sge;			/* send and receive SGEs (<= SOFT_MAX_SGE) */
	int max_sge_rd;
	int max_cqe;
	int max_rd_atom;		/* max_qp_rd_atom and max_qp_init_rd_atom */
	int max_srq_wr;
	int max_srq_sge;
	uint32_t max_inline;		/* the most inline data a QP may have */
	bool inline_from_sges;		/* rxe: a QP gets max(16 x send SGEs, what it asked) */
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t max_msg_sz;
	enum ibv_mtu active_mtu;
	int gid_tbl_len;		/* reported; entries past the first two are empty */
	unsigned int cap_flags;		/* device_cap_flags */
	enum ibv_node_type node_type;
	enum ibv_transport_type transport;
	bool mw;			/* type 2B memory windows */
	/*
	 * iWARP (RFC 5040): no immediate data; LOCAL_INV and BIND_MW are not
	 * posted from user space (libsiw); a Read's sink is written remotely,
	 * so it needs IBV_ACCESS_REMOTE_WRITE.
	 */
	bool iwarp;
	int inline_post_err;		/* a post with too much inline data: ENOMEM (mlx5) or EINVAL */
	bool negative_post_err;		/* libsiw returns -errno from ibv_post_send() */
	/* The extended verbs (ext.c, cq_ex.c, qp_ex.c, td.c); 0/false: the provider has none. */
	uint64_t cq_wc_flags;		/* the wc_flags ibv_create_cq_ex accepts */
	int cq_ex_attr_err;		/* unknown comp_mask: EOPNOTSUPP (rxe), EINVAL (mlx5) */
	int cq_ex_flags_err;		/* unknown creation flags: EINVAL (mlx5), 0 ignored (rxe) */
	uint64_t qp_send_ops;		/* the send_ops_flags ibv_create_qp_ex accepts (RC) */
	bool wr_all_builders;		/* mlx5 fills every builder, rxe only those asked for */
	int wr_err;			/* ibv_wr_*: full SQ, SGEs, inline (0: as ibv_post_send) */
	bool parent_domain;		/* thread and parent domains (mlx5) */
};

const struct soft_profile *soft_profile(void);

/* ---- evq.c: a queue whose length a pollable eventfd mirrors ---------------- */

struct soft_evq {
	/*
	 * What guards the queue (items, stale, readers, retired and its
	 * events' pending counts): a lock of its owner's, or NULL for
	 * fab.lock. A raise holds fab.lock as well (the token it owes is
	 * fab.lock's: sig), so the order is fab.lock, then this lock.
	 */
	pthread_mutex_t *lock;
	int fd;
	struct soft_signal sig;
	struct soft_list items;
	/* Tokens left in the eventfd by items removed without being read. */
	unsigned int stale;
	unsigned int readers;		/* threads inside evq_pop_locked() */
	bool retired;			/* its owner is gone; readers block forever */
};

/*
 * An event embedded in the object it is about (a CQ's completion event, a
 * QP's async events): raising it again before it is read queues it once
 * and counts, so raising never allocates.
 */
struct soft_event {
	struct soft_list link;
	unsigned int pending;		/* raised, not yet read */
};

/* @lock: the queue's own lock (see soft_evq), or NULL for fab.lock. */
int evq_init(struct soft_evq *q, pthread_mutex_t *lock);
void evq_fini(struct soft_evq *q);
void evq_push_locked(struct soft_evq *q, struct soft_list *item);
/* Take one item out of the queue without reading it (object destroyed). */
void evq_forget_locked(struct soft_evq *q, struct soft_list *item);
/* The same for embedded events: raise one, after evq_pop_locked() returned it, drop all. */
/* @token false: another process wrote the eventfd's token for it already. */
void evq_raise_locked(struct soft_evq *q, struct soft_event *ev, bool token);
void evq_taken_locked(struct soft_evq *q, struct soft_event *ev);
void evq_cancel_locked(struct soft_evq *q, struct soft_event *ev);
/*
 * Wait for an item (or fail with EAGAIN on an O_NONBLOCK fd). Called and
 * returns with the queue's lock held (and no other); drops it while
 * blocked in read(). Returns the item or NULL with errno set.
 */
struct soft_list *evq_pop_locked(struct soft_evq *q);
/*
 * The queue's owner is being destroyed: its tokens are no longer owed
 * (evq_fini() may follow, lock held or not). True if nobody waits in
 * evq_pop_locked(): the owner may close and free it. Otherwise the waiters
 * block on for good, as a thread blocked in a read() of the kernel's event
 * file does when another thread closes it, and the owner must stay
 * allocated (it is left to the end of the process).
 */
bool evq_retire_locked(struct soft_evq *q);

/* ---- the global state (fabric.c), scheduler (sched.c) ----------------------- */

/* The CM event faults armed for one event type: events each kind has yet to hit. */
struct fab_cm_fault {
	unsigned int drop;
	unsigned int delay;
	unsigned int duplicate;
	unsigned int delay_ms;
};

struct soft_fabric {
	/* fab.lock, its gate and the signals owed are the base's (base/lock.c). */
	pthread_cond_t work_cv;		/* the progress thread waits for work */
	pthread_cond_t idle_cv;		/* softrdma_progress() waits for idle */
	pthread_cond_t ack_cv;		/* destroyers wait for event acks */
	pthread_cond_t step_cv;		/* softrdma_progress_wait() waits for work */
	unsigned int step_waiters;
	enum softrdma_mode mode;
	bool thread_running;
	bool thread_stop;
	bool thread_sleeping;
	bool thread_idle;
	pthread_t thread;
	unsigned int users;		/* open contexts + CM channels: thread runs while > 0 */
	uint64_t seq;			/* posting order of WQEs and CM messages */
	unsigned int waiting;		/* QPs waiting for an answer from another process */
	struct soft_list active_qps;	/* QPs with send WQEs left to execute */
	struct soft_list work;		/* other units: CM messages, lost links (soft_work) */
	struct soft_list qps;		/* every QP */
	struct soft_qp *qp_hash[SOFT_QP_HASH];	/* by number (qp.c) */
	uint32_t next_qpn;		/* the next QP number to try, from the range's start (qp.c) */
	struct softrdma_counts counts;
	unsigned long executed[IBV_WR_DRIVER1 + 1];
	/* atomic: of those, what the fast path (fast.c) ran, without this lock */
	unsigned long fast_executed[IBV_WR_DRIVER1 + 1];
	/* keys.c: chunks of SOFT_KEY_CHUNK slots, never moved once allocated */
	struct soft_key_slot *key_chunks[SOFT_MAX_KEYS / SOFT_KEY_CHUNK];
	uint32_t nkeys;
	uint32_t key_hint;
	/* atomic: counts.recv_wrs, kept apart because posters change it without the lock */
	unsigned int recv_wrs;
	/* fault.c */
	struct soft_list faults;
	int next_fault_id;
	struct fab_cm_fault cm_faults[RDMA_CM_EVENT_TIMEWAIT_EXIT + 1];	/* by event type */
	unsigned int cm_reject;
	const struct soft_cm_ops *cm_ops;	/* installed by the rdma_cm half */
};

extern struct soft_fabric fab;

/* ---- sched.c --------------------------------------------------------------- */

/* A context or CM channel was created/destroyed: start/stop the progress thread. */
void fab_get_user_locked(void);
void fab_put_user_locked(void);	/* may drop the lock to join the thread */
/* New work was queued. */
void fab_kick_locked(void);
/*
 * THREAD mode: run qp's work at once, in the posting thread, while it is
 * what the progress thread would run next (nothing older is runnable), so
 * the posting order holds as if the thread had run it.
 */
void fab_run_posted_locked(struct soft_qp *qp);
bool fab_honours_time(void);
/* fork(), in the child: no thread, no unit of the parent's. */
void sched_fork_child_locked(void);
/* Process exit: stop the progress thread; then free the units that will never run. */
void sched_stop_locked(void);
void sched_discard_locked(void);

struct tap_qp;
/* The capture's view of @qp (capture/tap.h): its GIDs, path MTU, RNR timer and MSN. */
void tap_qp_of(const struct soft_qp *qp, struct tap_qp *t);

/* ---- fabric.c: what rdma_cm may do ----------------------------------------- */

/*
 * What the rdma_cm half (cm_*.c, librdmacm.so.1 of the drop-ins) may do to
 * the fabric: it reaches no fabric state but through these.
 */
void fab_set_cm_ops_locked(const struct soft_cm_ops *ops);
/* Wait until an event ack arrives (the destroyers' rule); wake such waiters. */
void fab_wait_ack_locked(void);
void fab_ack_locked(void);
/* Introspection counts the CM half keeps up to date (softrdma_get_counts()). */
enum fab_cm_count { FAB_CM_IDS, FAB_CM_CHANNELS, FAB_CM_UNACKED };
void fab_cm_count_locked(enum fab_cm_count which, int delta);
/* Every queued unit other than send WQEs, for the CM half to cancel its own. */
struct soft_list *fab_work_list_locked(void);

/* ---- device.c ------------------------------------------------------------ */

/*
 * An async event, embedded in the object it is about: one per kind of event
 * the object can raise (soft_event coalesces repeats until they are read).
 */
struct soft_async_event {
	struct soft_event node;
	struct ibv_async_event ev;
};

/* The async events a QP can raise, an index each into soft_qp.events. */
enum soft_qp_event {
	SOFT_QPEV_FATAL,
	SOFT_QPEV_REQ_ERR,
	SOFT_QPEV_ACCESS_ERR,
	SOFT_QPEV_COMM_EST,
	SOFT_QPEV_LAST_WQE,
	SOFT_QPEV_COUNT,
};

/*
 * The async fd's queue has a lock of its own (soft_evq), as a completion
 * channel has: an event is raised under fab.lock and then this lock;
 * ibv_get_async_event holds this lock alone.
 */
struct soft_context {
	pthread_mutex_t async_lock;
	struct soft_evq async_q;	/* async_lock */
	unsigned int objects;		/* PDs, CQs and channels still open on it */
	struct verbs_context vctx;	/* ibv_context is its last field */
};

static inline struct soft_context *to_sctx(struct ibv_context *ctx)
{
	struct verbs_context *vctx = container_of(ctx, struct verbs_context, context);

	return container_of(vctx, struct soft_context, vctx);
}

/* Queue an async event on the context's fd. */
void async_event_locked(struct ibv_context *ctx, enum ibv_event_type type, void *obj);
/*
 * Drop unread async events about obj (it is being destroyed). A destroyer
 * forgets, then looks at what was read (async_read: counted under the
 * queue's lock, so nothing read is missed), and waits for acks in a loop
 * that forgets again after each wait.
 */
void async_forget_locked(struct ibv_context *ctx, void *obj);
/* That loop, for an object with no other events: returns once each event read is acked. */
void async_settle_locked(struct ibv_context *ctx, void *obj, const unsigned int *read,
			 const unsigned int *acked);
void soft_fill_gid(union ibv_gid *gid, int index);

/*
 * Which thread is inside a critical section the application opens and
 * closes itself (an extended CQ's polling batch, an ibv_wr_* batch), so
 * that a call from outside one is refused rather than unlocking a lock it
 * does not hold. Set and cleared by the owner, holding the section's lock;
 * read by anyone (atomics).
 */
struct soft_owner {
	pthread_t thread;
	bool held;
};

static inline void owner_enter(struct soft_owner *o)
{
	__atomic_store_n(&o->thread, pthread_self(), __ATOMIC_RELAXED);
	__atomic_store_n(&o->held, true, __ATOMIC_RELEASE);
}

static inline void owner_leave(struct soft_owner *o)
{
	__atomic_store_n(&o->held, false, __ATOMIC_RELEASE);
}

/* Is the calling thread inside the section? (Only it can have set held with its id.) */
static inline bool owner_is_me(const struct soft_owner *o)
{
	return __atomic_load_n(&o->held, __ATOMIC_ACQUIRE) &&
	       pthread_equal(__atomic_load_n(&o->thread, __ATOMIC_RELAXED), pthread_self());
}

/* ---- pd / keys / mr / mw ------------------------------------------------- */

struct soft_pd {
	struct ibv_pd pd;
	unsigned int users;		/* MRs, MWs, QPs, SRQs (and CQs, parent domains) on it */
	/*
	 * The protection domain whose keys it shares: itself, or for a parent
	 * domain (td.c) the PD it was made from. Protection checks compare these.
	 */
	struct soft_pd *protection;
};

static inline struct soft_pd *to_spd(struct ibv_pd *pd)
{
	return container_of(pd, struct soft_pd, pd);
}

/* Do objects on @a and @b share one protection domain? (A parent domain is its PD's.) */
static inline bool pd_same(const struct soft_pd *a, const struct soft_pd *b)
{
	return a->protection == b->protection;
}

/* The protection domain as a number, for a peer to compare (wire_key, wire_qp_grant). */
static inline uint64_t pd_id(const struct soft_pd *pd)
{
	return (uint64_t)(uintptr_t)pd->protection;
}

/* td.c: a parent domain's own ibv_dealloc_pd(); 0 or EBUSY. */
int parent_domain_dealloc(struct soft_pd *spd);
/*
 * A queue's buffer for an object created on @pd (NULL: none): a parent
 * domain's allocator if it has one (rdma-core: "Provider memory
 * allocations will use this function"), else calloc(); *custom says
 * which. Zeroed. Freed by pd_buf_free() with the same @pd, @type and
 * @custom. Both call application code: never with a lock held.
 */
void *pd_buf_alloc(struct soft_pd *pd, size_t size, uint64_t type, bool *custom);
void pd_buf_free(struct soft_pd *pd, void *ptr, uint64_t type, bool custom);
/* The resource types passed to a parent domain's allocator (no driver id: upper bits 0). */
#define SOFT_RES_CQ		1
#define SOFT_RES_QP		2	/* a QP's SQ ring and its RQ ring */
#define SOFT_RES_SRQ		3

enum soft_key_kind {
	SOFT_KEY_FREE = 0,
	SOFT_KEY_MR,
	SOFT_KEY_MW,
};

struct soft_key_slot {
	enum soft_key_kind kind;
	void *obj;
	uint8_t next_key;		/* key byte for the next owner of this index */
};

/* The slot of key index @idx (< fab.nkeys): it never moves while the fabric lives. */
#define key_slot(idx) (&fab.key_chunks[(idx) / SOFT_KEY_CHUNK][(idx) % SOFT_KEY_CHUNK])

/* Returns an index >= 1 and fills *key with a fresh key byte, or 0 if full. */
uint32_t key_alloc_locked(enum soft_key_kind kind, void *obj, uint8_t *key);
void key_free_locked(uint32_t index);
void *key_lookup_locked(uint32_t key, enum soft_key_kind kind);

struct soft_mr {
	struct ibv_mr mr;
	struct soft_pd *pd;
	uint8_t *base;
	uint64_t iova;
	uint64_t length;
	int access;
	unsigned int bound_mws;		/* atomic: fast-path binds and invalidations count */
	unsigned int refs;		/* messages that read it when they go out (net_pin) */
};

struct soft_qp;

/*
 * A window changes on the fast path too (fast.c), under the lock of the QP
 * it is bound to (an invalidation) or of the one binding it (a bind, which
 * claims a FREE window first: state FREE -> SOFT_MW_CLAIMED, atomically).
 * So a fast path that reaches it through another QP reads @qp alone,
 * atomically, and stops there; @qp is stored last when bound, and @state
 * FREE last when unbound.
 */
struct soft_mw {
	struct ibv_mw mw;
	struct soft_pd *pd;
	uint32_t rkey;			/* current key: index and the key byte of the last bind */
	int state;			/* enum softrdma_mw_state, or SOFT_MW_CLAIMED */
	uint64_t addr;
	uint64_t length;
	int access;
	struct soft_mr *mr;
	struct soft_qp *qp;		/* type 2B: only this QP may use it (atomic) */
	unsigned int refs;		/* messages that read through it when they go out */
};

/* A bind has claimed the window and is filling it in. */
#define SOFT_MW_CLAIMED (-1)

/*
 * Translate [va, va + len) under lkey for a local access by a QP on pd that
 * needs `need` (0 or IBV_ACCESS_LOCAL_WRITE). NULL if not allowed. With
 * @mr, the MR that holds the bytes is stored there.
 */
uint8_t *mem_local_locked(struct soft_pd *pd, uint32_t lkey, uint64_t va, uint64_t len, int need,
			  struct soft_mr **mr);
/* The same for a remote access arriving on responder qp, and the window it went through. */
uint8_t *mem_remote_locked(struct soft_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
			   int need, struct soft_mr **mr, struct soft_mw **mw);
/*
 * A message going out later reads the MR's bytes (through mw, if not NULL):
 * counted in their refs. A deregistration or an invalidation first copies
 * such bytes out of the messages (net_detach_locked), so it never waits for
 * the network, and no message reads memory after it was let go.
 */
void mem_pin_locked(struct soft_mr *mr, struct soft_mw *mw);
void mem_unpin_locked(struct soft_mr *mr, struct soft_mw *mw);
/* What an rkey reaches (for introspection). 0 or -ENOENT. */
int mem_reach_locked(uint32_t rkey, uint64_t *addr, uint64_t *length, int *access);

/*
 * mw.c: executed as work requests (under fab.lock, or on the fast path
 * under @qp's lock); return an IBV_WC_* status.
 */
enum ibv_wc_status mw_bind_locked(struct soft_qp *qp, const struct ibv_mw *mw, uint32_t rkey,
				  const struct ibv_mw_bind_info *info);
/*
 * The fast path's bind in two steps: the checks and the claim, which change
 * nothing if they fail (false); then the bind itself, which cannot fail.
 */
bool mw_bind_claim(const struct soft_qp *qp, const struct ibv_mw *mw, uint32_t rkey,
		   const struct ibv_mw_bind_info *info);
void mw_bind_claimed(struct soft_qp *qp, const struct ibv_mw *mw, uint32_t rkey,
		     const struct ibv_mw_bind_info *info);
/* Invalidate rkey (MW or MR) for qp: 0 or -EINVAL. */
int mem_invalidate_locked(struct soft_qp *qp, uint32_t rkey);
/* Whether the fast path may invalidate rkey for qp: it would succeed, here and now. */
bool mem_invalidate_fast_ok(const struct soft_qp *qp, uint32_t rkey);
/* QP is going away: windows bound to it become unreachable. */
void mw_qp_gone_locked(struct soft_qp *qp);

/* ---- cq.c ----------------------------------------------------------------- */

/*
 * A completion channel has a lock of its own, its queue's (soft_evq), so
 * that ibv_get_cq_event does not queue behind the engine: a CQ raises its
 * event holding fab.lock and then this lock; a reader holds this lock
 * alone, and takes fab.lock (with this lock dropped) only to run the rings
 * of other processes (wire_shm.c).
 */
struct soft_comp_channel {
	struct ibv_comp_channel ch;
	pthread_mutex_t lock;
	struct soft_evq q;		/* lock */
	unsigned int cqs;
};

/* What the next completion must be to raise the channel event; an arm only widens. */
enum soft_cq_arm { CQ_ARM_IDLE, CQ_ARM_SOLICITED, CQ_ARM_ANY };

/*
 * The ring has one producer at a time, a fab.lock holder, and consumers
 * that hold only poll_lock: the producer writes an entry, then publishes
 * tail; the poller reads up to tail, then publishes head, which frees the
 * slots. Counters run free (slot = counter % size); resizing holds both
 * locks. The arm is one atomic word too, set by ibv_req_notify_cq without
 * any lock and cleared by the producer that raises the event: each side
 * stores its word, then loads the other's (seq_cst), so an arm followed by
 * a completion always raises it, and a poll after arming sees what an arm
 * came too late for.
 */
struct soft_cq {
	/* ibv_cq_ex_to_cq() is a cast: the ibv_cq_ex's leading fields are the ibv_cq's. */
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
	pthread_mutex_t push_lock;	/* producers on the fast path (fast.c) */
	pthread_mutex_t poll_lock;	/* pollers: head and the entries before tail */
	struct ibv_wc *ring;
	uint32_t size;
	uint64_t head;			/* atomic; written under poll_lock */
	uint64_t tail;			/* atomic; written under fab.lock */
	unsigned int arm;		/* atomic: enum soft_cq_arm */
	bool overrun;
	struct soft_event comp_event;	/* on its channel's queue while raised (its lock) */
	struct soft_async_event err_event;	/* IBV_EVENT_CQ_ERR */
	unsigned int users;		/* QPs sending completions here */
	struct wire_cq wire;		/* what the wire knows of it (wire.h) */
	unsigned int comp_read;		/* atomic: events returned by ibv_get_cq_event */
	unsigned int comp_acked;
	unsigned int async_read;	/* atomic: events returned by ibv_get_async_event */
	unsigned int async_acked;
	unsigned long arms;		/* atomic: ibv_req_notify_cq calls (softrdma_qp_stats) */
	/* Extended polling (cq_ex.c), under poll_lock from start_poll to end_poll. */
	uint64_t ex_cur;		/* the completion the batch is at */
	bool ex_valid;			/* ex_cur holds one (next_poll has not run dry) */
	struct soft_owner ex_poller;	/* the thread between start_poll and end_poll */
	struct soft_pd *pd;		/* IBV_CQ_INIT_ATTR_MASK_PD: its parent domain, or NULL */
	bool ring_custom;		/* the ring came from the parent domain's allocator */
};

static inline struct soft_cq *to_scq(struct ibv_cq *cq)
{
	return container_of(cq, struct soft_cq, cq);
}

/*
 * A CQ, as ibv_create_cq() makes one (cq.c); @pd a parent domain whose
 * allocator holds the ring, or NULL. NULL with errno set.
 */
struct soft_cq *cq_create(struct ibv_context *context, int cqe, void *cq_context,
			  struct ibv_comp_channel *channel, int comp_vector, struct soft_pd *pd);
/* cq_ex.c: the extended polling functions of a CQ made by ibv_create_cq_ex(). */
void cq_ex_set_ops(struct soft_cq *scq, uint64_t wc_flags);

/*
 * Add a completion. Returns false if the CQ overran (the completion is lost,
 * IBV_EVENT_CQ_ERR was raised).
 */
bool cq_push_locked(struct soft_cq *cq, const struct ibv_wc *wc, bool solicited);
/* Is an arm waiting for a completion? (Any thread, any lock.) */
bool cq_armed(struct soft_cq *cq);
/* Fill an error completion: only wr_id, status, qp_num and vendor_err are valid. */
void wc_error(struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_status status, uint32_t qp_num);
/*
 * A successful completion with the fields every completion defines; the
 * caller adds byte_len (receives and RDMA Reads), wc_flags and what they
 * flag. The rest (src_qp, slid, sl, pkey_index on RC; byte_len of a
 * requester's Send, Write, bind or invalidate; imm_data without its flag)
 * is poisoned: a reader of an undefined field breaks here, as on some
 * provider it would.
 */
void wc_success(struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_opcode opcode, uint32_t qp_num);
int soft_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int soft_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* ---- QPs and SRQs ---------------------------------------------------------- */

struct soft_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct ibv_sge *sge;
};

/* What ibv_post_recv does with a QP's RQ, by its state: mirrored under soft_rq.lock. */
enum soft_rq_post {
	RQ_REFUSE,			/* RESET (and an SRQ's QP, which has no RQ): EINVAL */
	RQ_ADD,
	RQ_ADD_FLUSH,			/* ERR: what is added flushes */
};

/*
 * A receive ring: a QP's RQ or an SRQ. Posters hold lock and add at tail;
 * the consumers (the responder, flushes, resets) hold fab.lock and take
 * from head, without lock: each side publishes its counter with release
 * and reads the other's with acquire. Counters run free (slot = counter %
 * size).
 */
struct soft_rq {
	pthread_mutex_t lock;		/* posters, and the fields marked lock */
	struct soft_recv_wqe *slots;	/* the ring's one buffer: the slots, then ... */
	struct ibv_sge *sges;		/* ... their SGEs */
	struct soft_pd *buf_pd;		/* what rq_fini() frees the buffer with (pd_buf_free) */
	uint64_t buf_type;
	bool buf_custom;
	uint32_t size;
	uint32_t max_sge;
	uint64_t head;			/* atomic; written under fab.lock */
	uint64_t tail;			/* atomic; written under lock */
	enum soft_rq_post post;		/* lock; written with fab.lock held too */
	/*
	 * lock: an RNR NAK went out since a post last looked. The poster that
	 * finds it takes fab.lock to wake the requesters it stalled.
	 */
	bool rnr_nak;
};

/* The ring's buffer comes from @pd's allocator as a resource of @type (pd_buf_alloc). */
int rq_init(struct soft_rq *rq, struct soft_pd *pd, uint64_t type, uint32_t size,
	    uint32_t max_sge);
void rq_fini(struct soft_rq *rq);
/* Add one WR; rq->lock held. 0, ENOMEM (full) or EINVAL (SGEs). */
int rq_add(struct soft_rq *rq, const struct ibv_recv_wr *wr);
uint32_t rq_count(const struct soft_rq *rq);
/* The oldest receive WQE, or NULL: it stays put until rq_pop_locked(). */
struct soft_recv_wqe *rq_peek_locked(struct soft_rq *rq);
void rq_pop_locked(struct soft_rq *rq);
/* Drop every WQE (RESET, destruction); returns how many. */
uint32_t rq_clear_locked(struct soft_rq *rq);
/* Record an RNR NAK for the next post; true if the ring is still empty (or @forced). */
bool rq_nak_rnr_locked(struct soft_rq *rq, bool forced);
void rq_set_post_locked(struct soft_rq *rq, enum soft_rq_post post);
/* Receive WRs posted and not consumed, all rings (softrdma_counts.recv_wrs). */
void fab_recv_wrs_add(int delta);

struct soft_srq {
	struct ibv_srq srq;
	struct soft_pd *pd;
	struct soft_rq rq;
	uint32_t limit;			/* armed when non-zero */
	struct soft_async_event limit_event;	/* IBV_EVENT_SRQ_LIMIT_REACHED */
	unsigned int users;		/* QPs attached */
	/* Held by a fast path (fast.c) that may consume a receive: its QPs' peers share it. */
	pthread_mutex_t consume_lock;
	unsigned int async_read;	/* atomic: events returned by ibv_get_async_event */
	unsigned int async_acked;
};

static inline struct soft_srq *to_ssrq(struct ibv_srq *srq)
{
	return container_of(srq, struct soft_srq, srq);
}

/* A receive ring lost a WQE to a SEND: fire the SRQ limit event if armed. */
void srq_consumed_locked(struct soft_srq *srq);

struct soft_send_wqe {
	uint64_t wr_id;
	uint64_t seq;
	enum ibv_wr_opcode opcode;
	unsigned int flags;
	uint32_t imm_or_inv;
	uint64_t remote_addr;
	uint32_t rkey;
	struct ibv_mw *bind_mw;
	uint32_t bind_rkey;
	struct ibv_mw_bind_info bind_info;
	/* UD (ud.c): the destination, copied from the WR and its AH at post. */
	struct ibv_ah_attr ud_av;
	uint32_t ud_qpn;
	uint32_t ud_qkey;
	bool ud_foreign_ah;		/* the AH is of another PD: rxe fails the WQE */
	uint32_t num_sge;
	struct ibv_sge *sge;
	uint32_t inline_len;
	uint8_t *inline_buf;
	bool signaled;
	bool executed;			/* ran and succeeded; unsignaled, slot not yet freed */
	bool started;			/* faults were evaluated; retries do not re-evaluate */
	bool force_rnr;
	unsigned int rnr_left;
	unsigned int retry_left;
	bool last_try;			/* no retry left: the ACK timer's expiry is RETRY_EXC */
	uint32_t psn;			/* of its first packet, set when started */
	uint32_t npsn;			/* PSNs it takes (wqe_packets()) */
	/* Completion, in posting order (engine.c): set when it is done. */
	bool done;
	enum ibv_wc_status status;
	uint32_t byte_len;
	/* Sent to another process, its answer awaited (wire_socket). */
	bool awaiting;
	/* An RDMA Read in flight in this process: its response is a unit of its own. */
	bool outstanding;
	uint32_t rd_len;
	struct soft_qp *rd_qp;
	struct soft_work rd_work;
};

struct soft_cm_id;
struct net_link;

/* rdma-core's verbs_qp.comp_mask bit (driver.h): the QP carries an ibv_qp_ex. */
#define SOFT_VERBS_QP_EX	(1U << 1)

struct qpx_batch;

struct soft_qp {
	/*
	 * The layout of rdma-core's struct verbs_qp, which ibv_qp_to_qp_ex()
	 * reads: the ibv_qp (the start of an ibv_qp_ex), comp_mask, xrcd.
	 */
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;		/* SOFT_VERBS_QP_EX: made by ibv_create_qp_ex() */
	void *xrcd;			/* always NULL: no XRC */
	struct qpx_batch *qpx;		/* the ibv_wr_* batch being built (qp_ex.c) */
	/*
	 * Held by a fast path (fast.c) that posts on this QP or responds on
	 * it; fab.lock holders never take it (the gate keeps fast paths out).
	 */
	pthread_mutex_t lock;
	struct soft_qp *hash_next;	/* fab.qp_hash bucket */
	struct wire_qp wire;		/* what the wire knows of it (wire.h) */
	struct soft_pd *pd;
	struct soft_cq *scq;
	struct soft_cq *rcq;
	struct soft_srq *srq;
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	struct ibv_qp_attr attr;	/* as last modified, for ibv_query_qp and the engine */
	/* Send ring; counters run free, slot = counter % sq_size. */
	struct soft_send_wqe *sq;	/* one buffer (pd_buf_alloc): the WQEs, then ... */
	struct ibv_sge *sq_sges;	/* ... their SGEs, then ... */
	uint8_t *sq_inline;		/* ... their inline data */
	bool sq_custom;			/* from pd's parent domain's allocator */
	uint32_t sq_size;
	uint32_t sq_head;		/* oldest slot not yet free */
	uint32_t sq_comp;		/* oldest WQE not yet completed (a Read may be in flight) */
	uint32_t sq_exec;		/* next WQE to execute */
	uint32_t sq_tail;		/* next slot to fill */
	struct soft_rq rq;
	/* Scheduling (sched.c, engine.c). */
	struct soft_list link;		/* fab.qps */
	struct soft_list active_link;	/* fab.active_qps */
	bool active;
	uint64_t wake_at;		/* not before this time (retry delay, DELAY fault) */
	bool wait_recv;			/* RNR with rnr_retry 7: waits for the peer's receive */
	bool wait_rd;			/* the head WQE waits for Reads in flight (fence, ORD) */
	unsigned int rd_outstanding;	/* RDMA Reads in flight */
	bool wait_resp;			/* SOFT_NET_WINDOW requests await answers: no more now */
	unsigned int net_inflight;	/* requests sent to another process, answers awaited */
	unsigned int max_inflight;	/* the most at once (softrdma_qp_max_inflight()) */
	unsigned long resends;		/* requests sent again: go back N (softrdma_qp_resends()) */
	struct softrdma_qp_stats stats;	/* doorbells, WRs, send CQEs (softrdma_qp_stats()) */
	bool comm_est;			/* IBV_EVENT_COMM_EST raised (first receipt in RTR) */
	bool silent;			/* responder: answers nothing (softrdma_qp_silence) */
	unsigned long ignored;		/* requests left unanswered while silent */
	struct soft_cm_id *cm_id;
	bool cm_passive;		/* cm_id was accepted, not connected (the statistics) */
	uint32_t next_psn;		/* the capture: PSN of the next request packet */
	uint32_t msn;			/* the capture: messages completed as responder */
	struct soft_async_event events[SOFT_QPEV_COUNT];
	unsigned int async_read;	/* atomic: events returned by ibv_get_async_event */
	unsigned int async_acked;
};

static inline struct soft_qp *to_sqp(struct ibv_qp *qp)
{
	return container_of(qp, struct soft_qp, qp);
}

static inline struct soft_qp *wire_to_sqp(const struct wire_qp *wqp)
{
	return container_of(wqp, struct soft_qp, wire);
}

/* The responder in this process the wire cached for @qp, or NULL. */
static inline struct soft_qp *qp_peer(const struct soft_qp *qp)
{
	return qp->wire.peer ? wire_to_sqp(qp->wire.peer) : NULL;
}

struct soft_qp *qp_lookup_locked(uint32_t qpn);
/* An RC QP as ibv_create_qp() makes one (qp.c); NULL with errno set. */
struct soft_qp *qp_create(struct ibv_pd *pd, struct ibv_qp_init_attr *init);
/* qp_ex.c: the batch of an extended QP, freed with it. */
void qpx_free(struct soft_qp *sqp);
/* Responder side: execute req on qp (fabric lock held). See responder.c. */
void responder_receive(struct soft_qp *qp, const struct wire_req *req, struct wire_resp *resp);
/* The bytes a receive WQE's SGEs hold. */
uint64_t responder_recv_capacity(const struct soft_recv_wqe *rwqe);
/* Take the head receive of @rq (@qp's RQ or SRQ): the SRQ's limit counts it. */
void responder_consume_recv_locked(struct soft_qp *qp, struct soft_rq *rq);
/* The head receive completes with @status; what becomes of the QP is the caller's. */
void responder_fail_recv_locked(struct soft_qp *qp, struct soft_rq *rq,
				enum ibv_wc_status status);
/* Move to ERR and flush everything outstanding, in order. */
void qp_to_error_locked(struct soft_qp *qp);
/*
 * What a peer's one-sided request must find of @qp as its responder
 * (wire_qp_grant): after every change of its state or attributes, and
 * with @alive false once it is destroyed.
 */
void qp_publish_locked(const struct soft_qp *qp, bool alive);
/* Apply a modify under the lock (shared by ibv_modify_qp and rdma_cm). errno value. */
int qp_modify_locked(struct soft_qp *qp, struct ibv_qp_attr *attr, int mask);
int soft_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
/* post.c, shared with the fast path: 0 or the errno a post fails with. */
int post_check_send_wr(struct soft_qp *sqp, const struct ibv_send_wr *wr);
/* Copy a checked WR into the ring at sq_tail. */
void post_enqueue_send_wr(struct soft_qp *sqp, const struct ibv_send_wr *wr);
/* After WRs were enqueued under fab.lock: flush them (ERR) or start the engine on them. */
void post_kick_locked(struct soft_qp *sqp);
/*
 * fast.c: run the WRs at the head of *wr at once, without fab.lock, while
 * each is a Send or Write to a QP of this process that succeeds now.
 * Advances *wr past those it ran; true if it ran them all (the post is
 * done, and counted).
 */
bool fast_post_send(struct soft_qp *sqp, struct ibv_send_wr **wr);
int soft_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int soft_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
struct ibv_mw *soft_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int soft_dealloc_mw(struct ibv_mw *mw);
int soft_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);

/* ---- ext.c: the extended verbs a profile offers ---------------------------------- */

/* Fill a context's extended ops (create_cq_ex, create_qp_ex, TDs, parent domains). */
void ext_set_ops(struct verbs_context *vctx);
struct ibv_cq_ex *soft_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *soft_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
struct ibv_td *soft_alloc_td(struct ibv_context *context, struct ibv_td_init_attr *attr);
int soft_dealloc_td(struct ibv_td *td);
struct ibv_pd *soft_alloc_parent_domain(struct ibv_context *context,
					struct ibv_parent_domain_init_attr *attr);

/* ---- engine.c: the requester ------------------------------------------------ */

void engine_activate_locked(struct soft_qp *qp);
void engine_deactivate_locked(struct soft_qp *qp);
/* Execute the next send WQE of qp: one progress unit. */
void engine_run_locked(struct soft_qp *qp);
/* Flush everything outstanding on a QP in ERR. */
void engine_flush_locked(struct soft_qp *qp);
/* Forget the Reads in flight; with @flush they complete with WR_FLUSH_ERR. */
void engine_cancel_reads_locked(struct soft_qp *qp, bool flush);
/* A receive was posted on qp: wake requesters waiting for one (RNR retry 7). */
void engine_recv_posted_locked(struct soft_qp *qp);
/* Receives were posted on @srq: the same, for every QP that receives from it. */
void engine_srq_posted_locked(struct soft_srq *srq);
void engine_complete_recv_locked(struct soft_qp *qp, const struct ibv_wc *wc, bool solicited);
/*
 * Resolve the WQE's local SGEs into @req's segments (a Read's, its sink's
 * rights only): IBV_WC_SUCCESS, LOC_PROT_ERR or, beyond max_msg_sz,
 * LOC_LEN_ERR. UD's sends too (ud.c).
 */
enum ibv_wc_status engine_gather_locked(struct soft_qp *qp, const struct soft_send_wqe *wqe,
					struct wire_req *req);
/* The request's header fields from the WQE (transmit, and the fast path). */
void engine_req_header(const struct soft_qp *qp, const struct soft_send_wqe *wqe,
		       struct wire_req *req);
/*
 * The fast path (fast.c), the QP's lock held: the WQE at sq_exec starts (as
 * engine_run_locked() starts it, no fault armed), and it succeeded
 * (@byte_len: a Read's completion's).
 */
void engine_fast_start(struct soft_qp *qp, struct soft_send_wqe *wqe);
void engine_fast_finish(struct soft_qp *qp, struct soft_send_wqe *wqe, uint32_t byte_len);
/* The answer to the request qp is waiting for (wait_resp) came over its link. */
/* An answer from another process to the awaiting WQE of @qp posted as @token. */
void engine_answer_locked(struct soft_qp *qp, uint64_t token, const struct wire_resp *resp);
/*
 * The process at the other end of qp's connection died: the oldest
 * outstanding send WR completes with IBV_WC_RETRY_EXC_ERR, as on hardware
 * whose peer vanished, and the QP goes to ERR, flushing the rest.
 */
void engine_peer_lost_locked(struct soft_qp *qp);
/* Does a requester await answers over @link? (wire_ops.link_awaited) */
bool engine_link_awaited_locked(struct net_link *link);
/* @link is dead: the oldest request each requester awaits over it gets no answer. */
void engine_link_lost_locked(struct net_link *link);

/* ---- fault.c ---------------------------------------------------------------- */

/* Evaluate the faults for a send WQE about to execute: the first that fires. */
const struct softrdma_fault *fault_check_send_locked(struct soft_qp *qp,
						     const struct soft_send_wqe *wqe);
/* For a receive WQE about to be consumed. */
const struct softrdma_fault *fault_check_recv_locked(struct soft_qp *qp);
/* What the armed CM faults do to an event about to be delivered. */
struct fault_cm_verdict {
	bool drop;
	bool duplicate;
	uint64_t delay_ns;		/* 0: deliver now */
};

/* CM: the verdict on the next event of @type; the faults that hit it count it. */
void fault_cm_event_locked(enum rdma_cm_event_type type, struct fault_cm_verdict *v);
bool fault_cm_reject_locked(void);

/* ---- units other than send WQEs --------------------------------------------- */

/* Give w the next posting sequence number and queue it. */
void work_queue_locked(struct soft_work *w);

/* ---- wire_ops.c: what the wire may ask of the verbs ---------------------------- */

extern const struct wire_ops fab_wire_ops;

/* ---- the rdma_cm half, as seen from the verbs half ------------------------------- */

struct soft_cm_id;
struct net_link;

/*
 * What the verbs core needs from rdma_cm. The drop-in libraries put rdma_cm
 * in librdmacm.so.1 on top of libibverbs.so.1, so the core calls it only
 * through these, which rdma_cm installs (fab.cm_ops) before it creates an
 * id. All are called with the lock held.
 */
struct soft_cm_ops {
	/* A fault disconnects the connection of id: both QPs to ERR. 0 or -ENOTCONN. */
	int (*fault_disconnect)(struct soft_cm_id *id);
	/* ibv_destroy_qp() on a QP that rdma_create_qp() made. */
	void (*qp_destroyed)(struct soft_cm_id *id);
	/* The link to another process that carries qp's connection, if any (net.c). */
	struct net_link *(*qp_link)(struct soft_qp *qp);
	/* The link to the other process of @id's connection or SIDR exchange, or NULL (ud.c). */
	struct net_link *(*id_link)(struct soft_cm_id *id);
	/* A CM message arrived on a link. */
	void (*link_message)(struct net_link *link, const void *msg, uint32_t len);
	/* The peer process closed the link or died (a unit, in order with its messages). */
	void (*link_down)(struct net_link *link);
};

#endif /* SOFT_H */

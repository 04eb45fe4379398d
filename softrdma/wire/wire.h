/* SPDX-License-Identifier: MIT */
/*
 * The wire: the only way a requester QP reaches its responder. The engine
 * (requester side) turns a send WQE into a wire_req, hands it to
 * wire_transmit() and turns the wire_resp into a completion; the responder
 * (responder.c) executes a wire_req against its own memory and receive queue.
 * Neither side touches the other's objects, so a transport that carries these
 * messages between processes (and a tap that writes them as RoCEv2 packets)
 * slots in behind wire_transmit() without changing either side.
 *
 * The wire is a layer below the verbs: it knows a QP by the struct wire_qp
 * the verbs' QP embeds, a CQ by its struct wire_cq, a registration by an
 * opaque pointer (struct soft_mr, struct soft_mw), and reaches up only
 * through the operations the verbs register (struct wire_ops).
 */
#ifndef SOFT_WIRE_H
#define SOFT_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "base.h"

struct shm_serving;

/* The longest message (the device's max_msg_sz): what a peer may announce. */
#define WIRE_MAX_MSG	(1U << 31)
/* Requests a QP may have awaiting answers from another process. */
#define WIRE_WINDOW	32

/* PSNs are 24 bits: compared within half their range, as IBA's responder does. */
#define WIRE_PSN_MASK	0xffffffu

enum psn_order { PSN_BEHIND = -1, PSN_EXPECTED = 0, PSN_AHEAD = 1 };

/* Where @psn lies against the expected @epsn, modulo 2^24. */
static inline enum psn_order psn_order(uint32_t psn, uint32_t epsn)
{
	uint32_t d = (psn - epsn) & WIRE_PSN_MASK;

	if (d == 0)
		return PSN_EXPECTED;
	return d < (1u << 23) ? PSN_AHEAD : PSN_BEHIND;
}

enum wire_op {
	WIRE_SEND,		/* payload to the oldest receive */
	WIRE_SEND_IMM,		/* as SEND, with imm */
	WIRE_SEND_INV,		/* as SEND, then invalidate inv_rkey at the responder */
	WIRE_WRITE,		/* payload to (rkey, raddr) */
	WIRE_WRITE_IMM,		/* as WRITE, then consume a receive carrying imm */
	WIRE_READ,		/* request length bytes at (rkey, raddr); data in the response */
};

/*
 * Bytes of one side's (validated) memory as a transport carries them: who
 * owns them and where, not a pointer to dereference. The other side copies
 * them out through wire_pull(), which each kind of owner implements. In one
 * process, and for a message a socket delivered, the owner is
 * WIRE_OWNER_LOCAL and addr is an address here; a shared-memory transport
 * adds owners whose bytes live in a mapping of another process.
 */
enum wire_owner {
	WIRE_OWNER_LOCAL,
	WIRE_OWNER_REMOTE,	/* addr is in process pid (wire_shm.c): process_vm_readv() */
};

struct soft_mr;
struct soft_mw;

/*
 * A local segment may name the registration that holds its bytes (and the
 * window they were reached through): a transport that reads them after the
 * lock is released (the socket's net thread) pins it meanwhile.
 */
struct wire_seg {
	enum wire_owner owner;
	uint64_t addr;
	uint32_t len;
	struct soft_mr *mr;
	struct soft_mw *mw;
	int pid;		/* WIRE_OWNER_REMOTE: whose memory */
};

static inline struct wire_seg wire_seg_local(const void *p, uint32_t len)
{
	struct wire_seg s = { WIRE_OWNER_LOCAL, (uint64_t)(uintptr_t)p, len, NULL, NULL, 0 };

	return s;
}

static inline struct wire_seg wire_seg_mem(const void *p, uint32_t len, struct soft_mr *mr,
					   struct soft_mw *mw)
{
	struct wire_seg s = { WIRE_OWNER_LOCAL, (uint64_t)(uintptr_t)p, len, mr, mw, 0 };

	return s;
}

/*
 * Copy @len bytes at offset @off of @seg to @dst. False if they could not
 * be read (another process's memory, and that process is gone): @dst then
 * holds no defined bytes, and the message they belong to never arrived.
 */
bool wire_pull(const struct wire_seg *seg, uint32_t off, void *dst, uint32_t len);
/* Copy @len bytes at offset @off of the message @segs[0..@nsegs) to @dst; false as above. */
bool wire_pull_msg(const struct wire_seg *segs, unsigned int nsegs, uint32_t off, void *dst,
		   uint32_t len);

#define WIRE_MAX_SEGS 33	/* max_sge, plus one for inline data */

struct wire_req {
	enum wire_op op;
	uint32_t src_qpn;
	uint32_t dst_qpn;
	union ibv_gid dgid;	/* the responder's node: local or, later, a remote process */
	bool solicited;
	uint32_t imm;		/* network byte order, as in the WR and the WC */
	uint32_t inv_rkey;
	uint32_t rkey;
	uint64_t raddr;
	uint32_t length;	/* payload bytes (SEND/WRITE) or bytes requested (READ) */
	uint64_t token;		/* which WQE of the requester (its posting sequence) */
	uint32_t psn;		/* PSN of its first packet */
	uint32_t npsn;		/* PSNs it takes: its packets (a READ: its response's) */
	uint32_t rd_depth;	/* READ: Reads the requester has in flight, this one included */
	bool last;		/* nothing is posted behind it on its QP (yet) */
	bool quiet;		/* no request of its QP awaits an answer from another process */
	/*
	 * Nobody waits for its answer if it succeeds: no completion (it is
	 * unsignaled), no WQE behind it (not a Read, which Reads, fences and
	 * the ORD wait for; fewer than half the window awaiting answers). The
	 * answer may wait for the requester's next look (wire_shm.c).
	 */
	bool lazy_answer;
	/*
	 * The requester may serve it itself, one-sidedly, should the
	 * responder's keys allow it (wire_shm_keys.h): nothing of this
	 * process must see it go (no capture). A WRITE or READ only.
	 */
	bool one_sided;
	/*
	 * At the responder, from shared memory: no request of its QP awaited
	 * an answer when it was sent, so the PSNs between the expected one
	 * and its own were taken by requests the requester served one-sidedly
	 * (wire_net_respond_locked()).
	 */
	bool psn_sync;
	unsigned int nsegs;
	struct wire_seg segs[WIRE_MAX_SEGS];
	/*
	 * At the responder, a request that came over shared memory (its
	 * record, wire_shm.c), whose requester may copy part of a large
	 * payload itself: wire_place(). NULL otherwise.
	 */
	const struct shm_serving *shm;
};

enum wire_status {
	WIRE_ACK,		/* executed */
	WIRE_NAK_RNR,		/* no receive posted: nothing consumed, retry later */
	WIRE_NAK_INV_REQ,	/* invalid request (length, opcode not enabled, bad invalidate) */
	WIRE_NAK_REM_ACCESS,	/* rkey, bounds or rights */
	WIRE_NAK_REM_OP,	/* the responder failed locally (its receive buffers) */
	WIRE_NO_ANSWER,		/* no responder in RTR/RTS: the requester times out */
	WIRE_PENDING,		/* sent to another process: the answer comes later */
	/*
	 * Not sent: the link has no room for it now (shared memory: every
	 * slot or the ring taken). Not a loss, so no retry is spent: the
	 * requester sends it again shortly. Never on the wire.
	 */
	WIRE_BUSY,
};

struct wire_resp {
	enum wire_status status;
	/*
	 * READ: the bytes read. At the responder they are its registered
	 * memory, named with their MR (a socket transport pins it until the
	 * answer is written); at a requester in another process, the receive
	 * buffer the answer came in. Valid until the fabric lock is released.
	 */
	struct wire_seg data;
	uint8_t rnr_timer;	/* RNR NAK: the responder's min_rnr_timer (IBA 9.7.5.2.8) */
	/* READ over shared memory: data.len bytes are already in the requester's buffers. */
	bool placed;
	/*
	 * WIRE_NO_ANSWER because the payload could not be read: the
	 * requester's process is gone (wire_pull()). Nothing was completed;
	 * the link it came on is closed, so that nothing the requester sent
	 * after it is delivered, as on an RC connection that broke.
	 */
	bool source_lost;
	/*
	 * WIRE_NO_ANSWER from a silenced responder (softrdma_qp_silence): it
	 * did not execute the request, so a transport between processes tells
	 * the requester, whose ACK timer then runs as in one process, and a
	 * retry cannot execute it twice. Other unanswered requests stay
	 * untold: their requester learns of a dead link or a DISCONNECTED.
	 */
	bool silenced;
};

struct net_link;

/*
 * What the wire knows of a CQ, embedded in the verbs' CQ (soft_cq.wire).
 * Lock held.
 */
struct wire_cq {
	unsigned int shm_links;		/* links whose peer may wake its channel */
};

/*
 * What the wire knows of a QP, embedded in the verbs' QP (soft_qp.wire).
 * The verbs set qpn, scq, rcq and cm_made; the rest is the wire's. Lock
 * held.
 */
struct wire_qp {
	uint32_t qpn;
	uint32_t dest_qpn;		/* the verbs' dest_qp_num (IBV_QP_DEST_QPN) */
	const struct wire_transport *transport;	/* attached at RTR (wire.c), or NULL */
	struct wire_qp *peer;		/* in this process: the responder, cached by number */
	struct net_link *remote;	/* link to a responder in another process (a reference) */
	struct wire_cq *scq;
	struct wire_cq *rcq;
	bool cm_made;			/* rdma_cm made it: its id finds its link */
	/*
	 * Responder, for requests that come over a link: the PSN it expects
	 * next (IBA, the responder's ePSN), from rq_psn at RTR. The verbs set it; the wire
	 * advances it (wire_net_respond_locked()).
	 */
	uint32_t epsn;
	unsigned long duplicates;	/* requests seen again and not executed again */
};

/*
 * What the wire asks of the layers above, registered once by the verbs
 * (wire_set_ops()) before the fabric starts. All are called with the lock
 * held. None may call back into the transport that called it, except as
 * said.
 */
struct wire_ops {
	/* The QP of this process numbered @qpn, or NULL. */
	struct wire_qp *(*qp_lookup)(uint32_t qpn);
	/*
	 * Execute @req on @qp, its responder, against its memory and receive
	 * queue, and answer in @resp (responder.c). May call the wire's
	 * wire_place() and the capture; transmits nothing.
	 */
	void (*receive)(struct wire_qp *qp, const struct wire_req *req, struct wire_resp *resp);
	/* The GID @qp's connection goes to (a request from a link names it: the capture). */
	void (*qp_dgid)(const struct wire_qp *qp, union ibv_gid *gid);
	/* An answer from another process to the awaiting WQE of @qp posted as @token. */
	void (*answer)(struct wire_qp *qp, uint64_t token, const struct wire_resp *resp);
	/* Does a requester await answers over @link? */
	bool (*link_awaited)(struct net_link *link);
	/* @link is dead: each requester's oldest request awaited over it gets no answer. */
	void (*link_lost)(struct net_link *link);
	/* Hold @mr (and @mw) registered while the wire reads their bytes unlocked. */
	void (*mem_pin)(struct soft_mr *mr, struct soft_mw *mw);
	void (*mem_unpin)(struct soft_mr *mr, struct soft_mw *mw);
	/* Is an arm waiting for a completion on @cq? (Any thread, any lock.) */
	bool (*cq_armed)(struct wire_cq *cq);
	/* The eventfd of @cq's completion channel, or -1 without one. */
	int (*cq_channel_fd)(struct wire_cq *cq);
	/* Queue @w behind what was posted before it (the scheduler's order). */
	void (*queue_work)(struct soft_work *w);
	/*
	 * rdma_cm's, called only while it is there (wire_set_cm_locked()):
	 * the link a QP the application made itself travels on, if any; a CM
	 * message from a link; a link lost (a unit, in order with its messages).
	 */
	struct net_link *(*qp_link)(struct wire_qp *qp);
	void (*link_message)(struct net_link *link, const void *msg, uint32_t len);
	void (*link_down)(struct net_link *link);
	/* A UD datagram came over @link (NET_MSG_UD): deliver it or drop it (the verbs' ud.c). */
	void (*datagram)(struct net_link *link, const void *msg, uint32_t len);
};

/* The verbs' operations, registered once, before the first fab_lock(). */
void wire_set_ops(const struct wire_ops *ops);
/* rdma_cm installed its operations (true) or not: the links are its to route. */
void wire_set_cm_locked(bool present);

/* For the wire's own files: the operations above, and whether rdma_cm is there. */
extern const struct wire_ops *wire_up;
extern bool wire_cm;

enum wire_fork_stage { WIRE_FORK_PREPARE, WIRE_FORK_PARENT, WIRE_FORK_CHILD };

/*
 * A transport: how a QP's requests reach its responder and the answers come
 * back. One is chosen when the QP is attached (at RTR, and again when
 * rdma_cm gives it a link to another process) and dropped when it is
 * detached (reset, destroy). In this process (wire.c) the responder runs
 * at once; over a socket (wire_net.c) the answer comes later. A
 * shared-memory transport plugs in as a third.
 *
 * Below transmit and detach, the backend's hooks for the verbs objects,
 * which name no backend: they call the wire_*() functions below, which call
 * every transport's hook in turn. Any hook may be NULL. A hook must not call
 * back into the verbs objects it was called from, except as said.
 */
struct wire_transport {
	const char *name;
	/* Carry @req: answer in @resp now, or WIRE_PENDING and later through wire_ops.answer. */
	void (*transmit)(struct wire_qp *qp, const struct wire_req *req, struct wire_resp *resp);
	/* @qp leaves the transport: forget what it holds of it. */
	void (*detach)(struct wire_qp *qp);

	/*
	 * Without the lock, on every poll that finds a CQ empty (one load): may
	 * something have come in that only a poller or a drain runs?
	 */
	bool (*pollable)(void);
	/*
	 * Lock held. A busy poller's pass: run what came in, push its
	 * completions. @armed: the CQ polled is armed (a thread's look after
	 * its arm, before it sleeps, or one that arms, then polls what woke it).
	 */
	void (*poll)(bool armed);
	/* Lock held. Run all that came in: a thread reads an event or is about to sleep. */
	void (*drain)(void);
	/*
	 * Lock held. A thread armed @cq to sleep on its channel and stops
	 * running the wire: the backend must signal the channel itself from now.
	 */
	void (*arm)(struct wire_cq *cq);
	/* Lock held. @cq's event is raised: true if the backend signalled its channel already. */
	bool (*raised)(struct wire_cq *cq);
	/*
	 * Lock held, may wait (fab_wait_locked()). @mr (or @mw) is being deregistered:
	 * what the backend still reads of its bytes is copied out, and unpinned.
	 */
	void (*mem_detach)(struct soft_mr *mr, struct soft_mw *mw);
	/* Without the lock: PREPARE before fork() takes it, PARENT and CHILD after its release. */
	void (*fork)(enum wire_fork_stage stage);
	/* Without the lock, at exit: stop the backend's threads; then free what it holds. */
	void (*stop)(void);
	void (*free)(void);
};

extern const struct wire_transport wire_local;
extern const struct wire_transport wire_socket;
extern const struct wire_transport wire_shm;

/*
 * Attach @qp to the transport that reaches its responder: over @link when
 * given (rdma_cm knows the connection), else over the link a QP the
 * application connected itself travels on, else in this process.
 */
void wire_attach_locked(struct wire_qp *qp, struct net_link *link);
void wire_detach_locked(struct wire_qp *qp);
/*
 * net_qpn.c: QP numbers unique on the machine. The numbers this process
 * gives its QPs: @*count of them from the one returned (from 0x11 in a
 * process that does not talk to others).
 */
uint32_t wire_qpn_range_locked(uint32_t *count);
/* Does QP number @qp_num belong to another process's block? */
bool wire_qpn_foreign_locked(uint32_t qp_num);

/* Does @qp's responder live in this process (attaching it first if need be)? */
bool wire_is_local_locked(struct wire_qp *qp);
/* wire_is_local_locked() would attach nothing and answer true (the fast path, fast.c). */
bool wire_stays_local_locked(const struct wire_qp *qp);

/*
 * Carry req to the responder named by (dgid, dst_qpn) and get its answer.
 * Called with the fabric lock held, from the progress unit that executes the
 * WQE; it must not call back into the requester QP. Goes through the QP's
 * transport (attaching it first if it never was), and the capture.
 */
void wire_transmit(struct wire_qp *requester, const struct wire_req *req,
		   struct wire_resp *resp);

/* The hooks of every transport (struct wire_transport), for the verbs objects. */
bool wire_pollable(void);
void wire_poll_locked(bool armed);
void wire_drain_locked(void);
void wire_arm_locked(struct wire_cq *cq);
bool wire_raised_locked(struct wire_cq *cq);
void wire_mem_detach_locked(struct soft_mr *mr, struct soft_mw *mw);
void wire_fork(enum wire_fork_stage stage);
void wire_stop(void);
void wire_free(void);

/*
 * Responder side: place a WRITE's whole payload at @dst, its validated
 * target, before anything else of the request is done (the receive a
 * WRITE_IMM consumes, the answer). False if the payload could not be read
 * whole (wire_pull()): the Write did not arrive.
 */
bool wire_place(const struct wire_req *req, void *dst);

/*
 * What this process's registrations and QPs allow a peer on a shared-memory
 * link, published for its requester to serve RDMA Writes and Reads
 * one-sidedly (wire_shm_keys.h). The verbs call these wherever a key or a
 * responder changes; they run under the fabric lock, or on the fast path
 * while no link exists.
 */
struct wire_key {
	uint32_t rkey;
	uint32_t access;	/* the IBV_ACCESS_REMOTE_* rights it grants */
	uint32_t qpn;		/* a window's QP; 0: an MR, any QP of its PD */
	uint64_t pd;		/* its protection domain, a number compared with a QP's */
	uint64_t va;		/* the range the key names */
	uint64_t len;
	uint64_t base;		/* where va lies in this process */
};
/* @k's rights are granted (it was not granted before under another key of its index). */
void wire_key_grant(const struct wire_key *k);
/*
 * @rkey's rights end: once this returns, no peer copies through it any
 * more (a copy in flight is waited for, up to a second for a stopped peer).
 */
void wire_key_revoke(uint32_t rkey);
/* A responder QP as a peer's one-sided request must find it. */
struct wire_qp_grant {
	uint32_t qpn;
	uint32_t dest_qpn;	/* the requester it is connected to */
	uint32_t access;	/* its qp_access_flags */
	uint64_t pd;
	bool ready;		/* RC, RTS, not silenced: it takes requests as they come */
	bool reads;		/* max_dest_rd_atomic > 0 */
};
void wire_qp_grant(const struct wire_qp_grant *g);
/* This process captures what it receives: peers send it everything. */
void wire_keys_capture(bool on);

#endif /* SOFT_WIRE_H */

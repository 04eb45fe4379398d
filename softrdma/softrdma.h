/* SPDX-License-Identifier: MIT */
/*
 * softrdma control API: progress modes, fault injection and introspection of
 * the software RDMA fabric. Production code never includes this header; it
 * only calls the verbs and rdma_cm API, which softrdma implements.
 *
 * All functions are thread-safe. Functions returning int return 0 (or a
 * count) on success and a negative errno on failure.
 */
#ifndef SOFTRDMA_H
#define SOFTRDMA_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Progress ---------------------------------------------------------- */

enum softrdma_mode {
	/*
	 * Work runs as soon as it is posted (default): in the posting call
	 * when nothing posted earlier is still queued, so that the posting
	 * order holds, otherwise on a background thread, which also runs what
	 * waits for a time (retries, delays). A post may return with its
	 * completion already queued.
	 */
	SOFTRDMA_MODE_THREAD = 0,
	/* Nothing happens until the test calls softrdma_progress(). */
	SOFTRDMA_MODE_STEP = 1,
	/*
	 * As THREAD, but all work runs on the background thread, after the
	 * post returned: a buffer changed before its completion goes out as
	 * it is when the fabric reads it, later, as on hardware.
	 */
	SOFTRDMA_MODE_ASYNC = 2,
};

/*
 * Select the progress mode. Allowed at any time; switching to STEP waits
 * until the progress thread is idle. The environment variable
 * SOFTRDMA_MODE=step|thread|async sets the initial mode.
 */
int softrdma_set_mode(enum softrdma_mode mode);
enum softrdma_mode softrdma_get_mode(void);

/*
 * STEP mode: perform up to max_steps units of work, in posting order. A unit
 * is the execution of one work request (generating its completions, possibly
 * on both sides) or the delivery of one CM event. Returns the number of units
 * performed (0 when idle). In THREAD mode, waits until the fabric is idle and
 * returns 0.
 */
int softrdma_progress(unsigned int max_steps);

/* Run until idle: softrdma_progress(UINT_MAX) in STEP mode. */
int softrdma_progress_all(void);

/*
 * STEP mode: as softrdma_progress(), but when there is nothing to run, wait
 * up to @timeout_ms for a unit to be posted first (by another thread, or
 * arriving from another process). Lets a stepping thread sleep while the
 * fabric is idle. Returns the units performed, 0 on timeout or in THREAD
 * mode (without waiting), or -EINVAL for a negative @timeout_ms.
 */
int softrdma_progress_wait(unsigned int max_steps, int timeout_ms);

/* ---- Fault injection ----------------------------------------------------- */

/* Which work requests a fault applies to. Zero fields match anything. */
struct softrdma_match {
	uint32_t qp_num;		/* requester QP, 0 = any */
	uint32_t opcode_mask;		/* bit (1 << enum ibv_wr_opcode); 0 = any send-queue WR */
	int recv;			/* 1: match receive WRs instead (opcode_mask ignored) */
	unsigned int nth;		/* fire on the nth matching WR (1-based); 0 = every match */
	unsigned int count;		/* how many times to fire; 0 = unlimited */
	/*
	 * Together: the fault fires on matching WRs number nth, nth + 1, ...
	 * until it has fired count times ({ .nth = 3, .count = 1 } is exactly
	 * the third). Faults are checked in the order they were added; the
	 * first that fires applies. A WR is checked once, not on RNR retries.
	 */
};

enum softrdma_fault_kind {
	/* Complete the WR with `status`; the QP then moves to ERR as hardware does. */
	SOFTRDMA_FAULT_STATUS,
	/* Make a SEND meet no posted receive (RNR), whatever the responder has posted. */
	SOFTRDMA_FAULT_RNR,
	/* Move the requester's QP to ERR just before executing the WR. */
	SOFTRDMA_FAULT_QP_ERROR,
	/* As QP_ERROR, also raising IBV_EVENT_QP_FATAL on the async fd. */
	SOFTRDMA_FAULT_QP_FATAL,
	/* Disconnect the connection carrying the QP (both sides get DISCONNECTED). */
	SOFTRDMA_FAULT_DISCONNECT,
	/* Hold the WR's completions back by delay_us microseconds (THREAD mode). */
	SOFTRDMA_FAULT_DELAY,
};

struct softrdma_fault {
	struct softrdma_match match;
	enum softrdma_fault_kind kind;
	enum ibv_wc_status status;	/* for SOFTRDMA_FAULT_STATUS */
	unsigned int delay_us;		/* for SOFTRDMA_FAULT_DELAY */
};

/* Install a fault. Returns its id (> 0) or a negative errno. */
int softrdma_fault_add(const struct softrdma_fault *fault);
/* Remove one fault, or every fault with id 0. */
int softrdma_fault_remove(int id);
/* How many times a fault has fired. */
int softrdma_fault_fired(int id);

/* Move a QP to ERR now (flushing it); with fatal, raise IBV_EVENT_QP_FATAL. */
int softrdma_qp_set_error(struct ibv_qp *qp, int fatal);

/* Disconnect the connection of an rdma_cm id as if the peer had left. */
int softrdma_cm_disconnect(struct rdma_cm_id *id);

/*
 * A silent peer: with @on 1, @qp stops answering. Requests that reach it
 * (Sends, Writes, Reads) are not executed and get no ACK, NAK or response,
 * while its connection stays up: no socket closes, no CM event is raised,
 * and @qp itself stays in its state, with its receives still posted. The
 * requester sees what a real RC QP sees when its peer hangs: it sends the
 * request again after each local ACK timeout (4.096 us * 2^timeout of its
 * QP, no cap; timeout 0 waits for good), retry_cnt times, then completes
 * it with IBV_WC_RETRY_EXC_ERR and moves to ERR, flushing the rest. In
 * STEP mode each try is one unit, at once. With @on 0 @qp answers again
 * from the next request or retry on (a requester that has not given up
 * then completes normally). Only answering stops: what @qp posts itself
 * still goes out; a test of a vanished node stops posting on it too.
 *
 * Between processes, call it in the process that owns @qp: the fabric
 * then tells the requester's process that the request went unanswered,
 * over the link, so that its retries follow its own clock exactly as in
 * one process (the capture shows no answer). Silence lasts until turned
 * off or @qp is destroyed; a reset keeps it.
 *
 * Returns 0, or -EINVAL if @qp is NULL or not a live QP of this process,
 * or @on is neither 0 nor 1.
 */
int softrdma_qp_silence(struct ibv_qp *qp, int on);
/* Requests @qp left unanswered while silenced, since it was created. */
unsigned long softrdma_qp_ignored(struct ibv_qp *qp);

/*
 * CM faults: drop the next `count` events of `type` before delivery (the
 * peer's state machine still advances), or reject the next `count`
 * connection requests at the fabric with a REJECTED event to the client.
 * softrdma_cm_drop_events(type, count) is softrdma_cm_fault_set() of
 * SOFTRDMA_CM_FAULT_DROP.
 */
int softrdma_cm_drop_events(enum rdma_cm_event_type type, unsigned int count);
int softrdma_cm_reject_connects(unsigned int count);

enum softrdma_cm_fault_kind {
	/* Swallow the event: the application never sees it. */
	SOFTRDMA_CM_FAULT_DROP,
	/*
	 * Hold the event back delay_ms milliseconds before it reaches its
	 * channel. The fabric's state machine has already moved on (as the
	 * kernel's has when its event waits to be read); only delivery is
	 * late. A channel keeps its order: events behind a held one on the
	 * same channel wait for it, whatever their type. In STEP mode the
	 * event arrives one unit later, in posting order, without waiting;
	 * in THREAD mode softrdma_progress() waits for it, as for any timed
	 * work. Destroying the id (or its channel) discards what is held.
	 */
	SOFTRDMA_CM_FAULT_DELAY,
	/*
	 * Deliver the event twice, the copy right behind the original on the
	 * same channel, as a retransmitting or buggy CM would: the same id,
	 * listen_id, event, status and param (for a connection event the
	 * same responder_resources, initiator_depth, retry counts, qp_num and
	 * private_data_len, with private_data a copy of the bytes in the
	 * copy's own memory). Each is a separate struct rdma_cm_event that the
	 * application must ack with rdma_ack_cm_event(); rdma_destroy_id()
	 * waits for both. No second id is made: a duplicated CONNECT_REQUEST
	 * names the same new id twice. A synchronous id reads the copy as the
	 * answer to its next call, as librdmacm would.
	 */
	SOFTRDMA_CM_FAULT_DUPLICATE,
};

/* The longest SOFTRDMA_CM_FAULT_DELAY: a minute. */
#define SOFTRDMA_CM_DELAY_MAX_MS	60000

struct softrdma_cm_fault {
	enum rdma_cm_event_type event;	/* the events it applies to */
	enum softrdma_cm_fault_kind kind;
	unsigned int count;		/* the next count such events; 0 disarms */
	unsigned int delay_ms;		/* DELAY: 1 .. SOFTRDMA_CM_DELAY_MAX_MS; others: 0 */
};

/*
 * Arm a CM event fault: the next @fault->count events of type
 * @fault->event, from now on, on any channel of this process. Setting a
 * kind again for the same type replaces its count (and delay). Kinds of
 * one type combine in this order: a dropped event is only dropped (and
 * consumes only the DROP count); an event may be both delayed and
 * duplicated (the copy is held with it). softrdma_fault_remove(0) disarms
 * every CM fault. Returns 0, or -EINVAL for a NULL @fault, an unknown
 * event type or kind, a DELAY of 0 or more than SOFTRDMA_CM_DELAY_MAX_MS
 * milliseconds (with a non-zero count), or a delay_ms on another kind.
 */
int softrdma_cm_fault_set(const struct softrdma_cm_fault *fault);
/* How many events of @type the armed fault of @kind has yet to hit, or -EINVAL. */
int softrdma_cm_fault_left(enum rdma_cm_event_type type, enum softrdma_cm_fault_kind kind);

/*
 * REJECTED events carry the IB CM reject reason in `status`, as on IB and
 * RoCE: no listener on the port (the fabric's answer to a connect nobody
 * listens for) or a consumer reject (rdma_reject, softrdma_cm_reject_connects).
 */
#define SOFTRDMA_REJ_INVALID_SERVICE_ID	8
#define SOFTRDMA_REJ_CONSUMER_DEFINED	28

/* ---- Capture ------------------------------------------------------------- */

/*
 * Write every packet the fabric carries to a pcap file as RoCEv2 frames
 * (Ethernet, IPv4 or IPv6, UDP 4791, BTH and the extended headers, payload,
 * ICRC), segmented at each QP's path MTU with consecutive PSNs, for
 * Wireshark and tshark. The environment variable SOFTRDMA_PCAP=<file> opens
 * one at start. The file is appended to (processes may share one); remove it
 * first to start afresh. Opening another file closes the current one.
 */
int softrdma_pcap_open(const char *path);
int softrdma_pcap_close(void);

/* ---- Introspection ------------------------------------------------------- */

struct softrdma_counts {
	unsigned int contexts, pds, mrs, mws, cqs, comp_channels, qps, srqs;
	unsigned int event_channels, cm_ids;
	unsigned int send_wrs;		/* posted and not yet completed, all QPs */
	unsigned int recv_wrs;		/* posted and not yet consumed, all QPs/SRQs */
	unsigned int unacked_events;	/* CM events delivered but not acked */
};

void softrdma_get_counts(struct softrdma_counts *counts);

enum softrdma_mw_state {
	SOFTRDMA_MW_NONE = 0,	/* no window has this index */
	SOFTRDMA_MW_FREE,	/* allocated, not bound */
	SOFTRDMA_MW_VALID,	/* bound; the rkey with the current key byte works */
};

/* State of the memory window whose index is rkey >> 8. */
enum softrdma_mw_state softrdma_mw_state(uint32_t rkey);

/*
 * What a remote peer could reach with rkey right now: address, length and
 * IBV_ACCESS_REMOTE_* flags. Returns 0, or -ENOENT if the rkey is dead (no
 * remote access possible).
 */
int softrdma_rkey_reach(uint32_t rkey, uint64_t *addr, uint64_t *length, int *access);

/* Bytes of memory registered under pd that some rkey could reach remotely now. */
size_t softrdma_pd_exposed_bytes(struct ibv_pd *pd);

/* Number of operations the fabric has executed (WRs) since start, per opcode. */
unsigned long softrdma_executed(enum ibv_wr_opcode opcode);
/*
 * Of those, how many ran at post time without the fabric lock (THREAD
 * mode, between two QPs of this process: the README's "fast path").
 */
unsigned long softrdma_fast_executed(enum ibv_wr_opcode opcode);

/*
 * The most send WRs @qp has had sent to another process with their answers
 * awaited at once, since it was created or last reset (up to 32).
 */
unsigned int softrdma_qp_max_inflight(struct ibv_qp *qp);
/*
 * Requests @qp sent again because an earlier one got an RNR NAK or its
 * answer was lost (go back N), since it was created or last reset.
 */
unsigned long softrdma_qp_resends(struct ibv_qp *qp);

/*
 * What the consumer asked of one QP since it was created: its doorbells
 * (ibv_post_send and ibv_post_recv calls, a chain counting once, refused or
 * not), the WRs they carried, and the send completions it got (signaled
 * WRs and errors; an unsignaled WR that succeeds has none). Receives posted
 * to an SRQ are not the QP's. recv_cq_arms: the ibv_req_notify_cq calls on
 * its receive CQ since that CQ was created (a CQ that QPs share counts for
 * each). A hot path is judged by these per RPC.
 */
struct softrdma_qp_stats {
	unsigned long send_posts;
	unsigned long recv_posts;
	unsigned long send_wrs;
	unsigned long recv_wrs;
	unsigned long send_cqes;
	unsigned long recv_cq_arms;
};

void softrdma_qp_stats(struct ibv_qp *qp, struct softrdma_qp_stats *stats);
/*
 * The sums over the QPs that exist now, by side: @active those of the ids
 * that connected (rdma_connect) and QPs made without rdma_cm, @passive those
 * of the ids a listener spawned. Either may be NULL.
 */
void softrdma_qp_stats_sum(struct softrdma_qp_stats *active, struct softrdma_qp_stats *passive);

/*
 * The provider softrdma0 plays, from SOFTRDMA_PROFILE: "softrdma" (its own,
 * the default), "mlx5" (a ConnectX-5/6 in RoCE mode), "rxe" (Soft-RoCE) or
 * "siw" (Soft-iWARP). It reports that provider's attributes and refuses
 * what that provider refuses (README.md, "Device profiles").
 */
const char *softrdma_profile(void);

/*
 * How @qp's requests reach its responder: "local" (this process), "shm"
 * (another process, through rings in shared memory), "socket" (another
 * process, through the connection's socket: SOFTRDMA_SHM=0, or the other
 * process's memory cannot be read), or NULL before it was connected.
 */
const char *softrdma_qp_transport(struct ibv_qp *qp);

/*
 * Cooperative copies over shared memory, since the process started
 * (README.md, "Shared memory"). As the responder of an RDMA Write or Read
 * of 256 KiB or more from another process, this process offers part of
 * the copy to the requester's process, whose poller takes chunks of it
 * while it waits: offers, their bytes, the bytes the requester copied,
 * and the times the requester claimed chunks it did not finish (it
 * failed, died or was stopped) and this process copied them again. As
 * the requester, the bytes this process copied of such offers, into the
 * responder's memory for its Writes and out of it for its Reads.
 */
struct softrdma_shm_stats {
	unsigned long coop_offers;
	uint64_t coop_offered_bytes;
	uint64_t coop_peer_bytes;
	unsigned long coop_takeovers;
	uint64_t coop_helped_write_bytes;
	uint64_t coop_helped_read_bytes;
	/* RDMA Writes and Reads this process served one-sidedly, as their requester. */
	unsigned long one_sided_writes;
	uint64_t one_sided_write_bytes;
	unsigned long one_sided_reads;
	uint64_t one_sided_read_bytes;
	/*
	 * Records this process wrote to a peer whose net thread slept while a
	 * thread of the peer polled its CQs: published without waking that
	 * thread (spared), and those the peer's poller left, for which the
	 * net thread was woken after all (late).
	 */
	unsigned long bells_spared;
	unsigned long bells_late;
};

void softrdma_shm_stats(struct softrdma_shm_stats *stats);

/*
 * Does the calling thread hold the fabric's lock? For tests of softrdma's
 * own rules (nothing allocates, writes or blocks under it): a wrapper of
 * malloc() or write() asks. Its answer is only ever true inside softrdma.
 */
bool softrdma_lock_held(void);

#ifdef __cplusplus
}
#endif

#endif /* SOFTRDMA_H */

/* SPDX-License-Identifier: MIT */
/*
 * The socket backend: links to softrdma in other processes. A link is one
 * stream socket per rdma_cm connection (Unix domain, found through the
 * rendezvous directory, cm_rdv.c); it carries the connection's CM messages
 * and then its QPs' wire requests and answers, framed as messages.
 *
 * One thread per process (the net thread) does the socket I/O: it accepts on
 * listening sockets, reads messages and dispatches them under the fabric
 * lock, and writes what others queued. Senders queue a buffer
 * (net_send_locked) and return, so nothing blocks on a socket with the
 * fabric lock held; the one other writer is an rdma_cm call that writes its
 * own message out before it returns (net_link_flush), unlocked and without
 * blocking, one writer at a time. Links are reference counted
 * under the lock; the net thread holds one while the socket is open.
 */
#ifndef SOFT_NET_H
#define SOFT_NET_H

#include <stdbool.h>
#include <stdint.h>

#include <sys/uio.h>

#include "list.h"
#include "wire.h"

struct soft_cm_id;

/* 'SRD' and the protocol version: both ends must be the same softrdma. */
#define NET_MAGIC	0x53524402u

enum net_msg_type {
	NET_MSG_CM = 1,		/* an rdma_cm message (cm_net.c) */
	NET_MSG_WIRE_REQ,	/* a wire request and its payload (wire_net.c) */
	NET_MSG_WIRE_RESP,	/* its answer, with the data of a READ */
	NET_MSG_SHM,		/* a shared-memory ring and doorbell, as descriptors (wire_shm.c) */
	NET_MSG_SHM_BELL,	/* a completion channel the peer may wake (wire_shm.c) */
	NET_MSG_UD,		/* a UD datagram and its payload (the verbs' ud.c) */
};

struct net_hdr {
	uint32_t magic;
	uint32_t type;
	uint32_t len;		/* bytes of body after the header */
};

/* The largest body: a message of max_msg_sz plus its request header. */
#define NET_MAX_BODY	((1u << 31) + 4096u)

/* The head of a message's body (its fixed part) and small payloads. */
#define NET_HEAD_MAX	2048
/* Pieces of payload one message carries: a WQE's SGEs, inline data. */
#define NET_MAX_IOV	WIRE_MAX_SEGS

struct soft_mr;
struct soft_mw;

/* Descriptors a message may carry: a ring, its doorbell, the key table (wire_shm.c). */
#define NET_MAX_FDS 3

/*
 * Registered memory a message reads when it goes out: the MR (and the
 * window it was reached through) hold a reference (refs) for it. Before
 * that memory is deregistered or the window invalidated, the bytes are
 * copied out (bounce) and the references dropped: net_detach_locked().
 */
struct net_pin {
	struct soft_mr *mr;
	struct soft_mw *mw;
	void *bounce;
};

/*
 * A message on its way out: its header, data[0, head_len) (the body's head)
 * and then the payload, iov by iov. Payload in registered memory is read
 * when the net thread writes it, as an HCA reads a WQE's buffers when it
 * transmits; small payloads without a registration are copied into data[]
 * past the head.
 */
struct net_buf {
	struct soft_list link;
	struct net_hdr hdr;
	uint32_t len;			/* header, head and payload */
	uint32_t head_len;		/* bytes of data[] before the payload */
	uint32_t copied;		/* bytes of data[] used: the head and small payloads */
	unsigned int niov;
	struct iovec iov[NET_MAX_IOV];
	struct net_pin pins[NET_MAX_IOV];
	/* Descriptors sent with the message (SCM_RIGHTS), closed once it is freed. */
	int fds[NET_MAX_FDS];
	unsigned int nfds;
	uint8_t data[NET_HEAD_MAX] __attribute__((aligned(8)));
};

struct net_link {
	int fd;			/* closed by the net thread; written by whoever set sending */
	unsigned int refs;	/* lock */
	bool dead;		/* lock: EOF or error seen; nothing more goes out */
	bool closing;		/* lock: its owners let go; close once the output is written */
	struct soft_list out;	/* lock: net_bufs waiting to be written */
	struct soft_list node;	/* lock: the net thread's links */
	struct soft_cm_id *id;	/* lock: the rdma_cm id on this side, if any */
	bool qpn;		/* to or from a process's block of QP numbers (net_qpn.c): no CM */
	struct net_buf *sending;	/* lock: a writer sends it now, unlocked (link_write) */
	uint32_t out_off;	/* lock: bytes of the head buffer written */
	struct shm_link *shm;	/* lock: its rings (wire_shm.c), or NULL */
	/* The net thread's own. */
	struct net_hdr in_hdr;
	uint32_t in_got;	/* bytes of header, then of body, read */
	uint8_t *in_body;
	int in_fds[NET_MAX_FDS];	/* descriptors that came with the message */
	unsigned int in_nfds;
};

/*
 * A new link over a connected socket (made non-blocking). The caller holds
 * one reference. The side @connecting offers its shared memory at once;
 * the accepting side once it has taken the connecting side's offer
 * (shm_link_accept_locked()).
 */
struct net_link *net_link_new_locked(int fd, bool connecting);
void net_link_get_locked(struct net_link *link);
void net_link_put_locked(struct net_link *link);
/* The owner lets go of its reference: the net thread closes once the output is written. */
void net_link_close_locked(struct net_link *link);
/*
 * The link can carry nothing more (EOF, an error, a peer that broke its
 * rules or died mid-request): nothing more goes out or is read from it,
 * and its owner and the requesters awaiting answers on it are told.
 */
void net_link_dead_locked(struct net_link *link);
/*
 * Has the peer's process gone (its end of the socket closed with it)? For
 * a thread that waits for the peer under the lock, when the net thread
 * cannot tell it: one poll(), no wait.
 */
bool net_link_gone_locked(const struct net_link *link);

/*
 * A buffer for a message of @type whose body starts with @head_len bytes
 * (at net_body(buf)), from the pool: NULL if it is too long or none is
 * left. The payload follows through net_buf_add_locked().
 */
struct net_buf *net_buf_new_locked(enum net_msg_type type, uint32_t head_len);
/*
 * Append @len bytes of the message @segs[0..@nsegs): registered memory is
 * pinned, other bytes copied. False if they do not fit (the buffer is
 * unchanged but for what was added; free it).
 */
bool net_buf_add_locked(struct net_buf *buf, const struct wire_seg *segs, unsigned int nsegs,
			uint32_t len);
/* Unpin and give back to the pool. */
void net_buf_free_locked(struct net_buf *buf);
void net_bufs_free_locked(struct soft_list *head);
/* The net thread, unlocked: top the pool up, so senders rarely allocate. */
void net_pool_fill(void);
/* Process exit: free the pool. */
void net_pool_free_locked(void);
/* Copy out what buf reads of @mr (or @mw, or both when NULL) and unpin it; false if out of memory. */
bool net_buf_detach_locked(struct net_buf *buf, const struct soft_mr *mr,
			   const struct soft_mw *mw);
/* Messages on their way out that still read @mr's memory (or @mw's): copy the bytes out. */
void net_detach_locked(struct soft_mr *mr, struct soft_mw *mw);

static inline void *net_body(struct net_buf *buf)
{
	return buf->data;
}

/* Queue buf on link (it takes buf); a dead link drops it. */
void net_send_locked(struct net_link *link, struct net_buf *buf);
/*
 * Unlocked, from an application thread: write what @link has queued now,
 * without blocking, rather than leave it to the net thread. What does not
 * fit the socket is left to the net thread. The caller holds a reference.
 */
void net_link_flush(struct net_link *link);

/* Is any link open? */
bool net_any_link_locked(void);

/*
 * Accept connections on a listening socket: each becomes a link with no id,
 * for rdma_cm, or with @qpn, a process's block of QP numbers (net_qpn.c).
 */
struct net_listener;
struct net_listener *net_listener_add_locked(int fd, bool qpn);
/* Stop accepting; the net thread closes the socket. */
void net_listener_close_locked(struct net_listener *l);

/*
 * net_qpn.c: the link to the process that owns QP number @dest_qpn, opened
 * if need be; NULL if it is this process's, or out of reach. Around fork()
 * and at exit: the child forgets the parent's block; exit gives ours back.
 */
struct net_link *net_qpn_route_locked(uint32_t dest_qpn);
void net_qpn_fork_child_locked(void);
void net_qpn_release_locked(void);

/* Wake the net thread, so that it builds its poll set again. */
void net_kick_locked(void);
/*
 * The socket transport's hooks (wire_socket, struct wire_transport). At
 * process exit: stop the net thread, then, once the units that will never
 * run are discarded, free every link and listener. Around fork(): PREPARE
 * waits for the net thread to be out of its unlocked heap work (before the
 * fabric lock is taken); the child forgets the parent's links and
 * listeners.
 */
void net_stop(void);
void net_free(void);
void net_fork(enum wire_fork_stage stage);

#endif /* SOFT_NET_H */

/* SPDX-License-Identifier: MIT */
/*
 * The socket backend: links to softrdma in other processes. A link is one
 * stream socket per rdma_cm connection (Unix domain, found through the
 * rendezvous directory, cm_rdv.c); it carries the connection's CM messages
 * and then its QPs' wire requests and answers, framed as messages.
 *
 * One thread per process (the net thread) does all socket I/O: it accepts on
 * listening sockets, reads messages and dispatches them under the fabric
 * lock, and writes what others queued. Nothing else reads or writes a link's
 * socket, so nothing blocks on a socket with the fabric lock held: senders
 * queue a buffer (net_send_locked) and return. Links are reference counted
 * under the lock; the net thread holds one while the socket is open.
 */
#ifndef SOFT_NET_H
#define SOFT_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "list.h"

struct soft_cm_id;

/* 'SRD' and the protocol version: both ends must be the same softrdma. */
#define NET_MAGIC	0x53524401u

enum net_msg_type {
	NET_MSG_CM = 1,		/* an rdma_cm message (cm_net.c) */
	NET_MSG_WIRE_REQ,	/* a wire request and its payload (wire_net.c) */
	NET_MSG_WIRE_RESP,	/* its answer, with the data of a READ */
};

struct net_hdr {
	uint32_t magic;
	uint32_t type;
	uint32_t len;		/* bytes of body after the header */
};

/* The largest body: a message of max_msg_sz plus its request header. */
#define NET_MAX_BODY	((1u << 31) + 4096u)

struct net_buf {
	struct list_node link;
	uint32_t len;		/* header plus body */
	uint8_t data[];		/* struct net_hdr, then the body */
};

struct net_link {
	int fd;			/* owned by the net thread */
	unsigned int refs;	/* lock */
	bool dead;		/* lock: EOF or error seen; nothing more goes out */
	bool closing;		/* lock: its owners let go; close once the output is written */
	struct list_node out;	/* lock: net_bufs waiting to be written */
	struct list_node node;	/* lock: the net thread's links */
	struct soft_cm_id *id;	/* lock: the rdma_cm id on this side, if any */
	/* The net thread's own. */
	uint32_t out_off;	/* bytes of the head buffer written */
	struct net_hdr in_hdr;
	uint32_t in_got;	/* bytes of header, then of body, read */
	uint8_t *in_body;
};

/* A new link over a connected socket (made non-blocking). The caller holds one reference. */
struct net_link *net_link_new_locked(int fd);
void net_link_get_locked(struct net_link *link);
void net_link_put_locked(struct net_link *link);
/* The owner lets go of its reference: the net thread closes once the output is written. */
void net_link_close_locked(struct net_link *link);

/* A buffer for a message of type with body_len bytes; the body is at net_body(buf). */
struct net_buf *net_buf_new(enum net_msg_type type, uint32_t body_len);

static inline void *net_body(struct net_buf *buf)
{
	return buf->data + sizeof(struct net_hdr);
}

/* Queue buf on link (it takes buf); a dead link drops it. */
void net_send_locked(struct net_link *link, struct net_buf *buf);

/* Is any link open? */
bool net_any_link_locked(void);

/* Accept connections on a listening socket: each becomes a link with no id. */
struct net_listener;
struct net_listener *net_listener_add_locked(int fd);
/* Stop accepting; the net thread closes the socket. */
void net_listener_close_locked(struct net_listener *l);

/*
 * Process exit (fab_exit): stop the net thread, then, once the units that
 * will never run are discarded, free every link and listener.
 */
void net_stop(void);
void net_free(void);

#endif /* SOFT_NET_H */

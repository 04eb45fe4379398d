/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm internals. A connection is a conversation of CM messages (REQ, REP,
 * RTU, REJ, DREQ) that travel through the fabric as progress units, so that
 * STEP mode can hold them back and THREAD mode delivers them asynchronously,
 * as the kernel's CM does. Each message ends in an event on a channel.
 *
 * The peer of a connection is an id in this process (peer) or, with the
 * socket backend, an id in another process reached over a link (link): the
 * messages then travel over the link (cm_net.c) and arrive as the same units.
 */
#ifndef SOFT_CM_H
#define SOFT_CM_H

#include <sys/socket.h>

#include "net.h"
#include "soft.h"

/* IB CM private data sizes less the rdma_cm header: what IB and RoCE deliver. */
#define CM_REQ_PDATA	56
#define CM_REP_PDATA	196
#define CM_REJ_PDATA	148
/* SIDR (IBA 12.11), for the UDP port space: REQ 216 less the header, REP 136. */
#define CM_SIDR_REQ_PDATA	180
#define CM_SIDR_REP_PDATA	136

enum cm_state {
	CM_IDLE,
	CM_BOUND,
	CM_ADDR_QUERY,
	CM_ADDR_RESOLVED,
	CM_ROUTE_QUERY,
	CM_ROUTE_RESOLVED,
	CM_LISTEN,
	CM_CONNECT,		/* active: REQ sent */
	CM_REQ_RCVD,		/* passive: CONNECT_REQUEST delivered */
	CM_ACCEPTED,		/* passive: REP sent, waiting for RTU */
	CM_REP_RCVD,		/* active without QP: CONNECT_RESPONSE, awaits rdma_establish */
	CM_ESTABLISHED,
	CM_DISCONNECTED,
	CM_UD_RESOLVED,		/* UD: SIDR answered; no connection, the link takes datagrams */
};

struct soft_cm_channel {
	struct rdma_event_channel ch;
	struct soft_evq q;
	struct soft_list held;			/* events held back (cm_fault.c), in order */
	unsigned int ids;
	bool closed;				/* destroyed: kept until exit, see cm_channel.c */
	struct soft_cm_channel *next_closed;
};

struct soft_cm_event {
	struct rdma_cm_event ev;
	struct soft_list link;			/* on its channel's q, or held */
	struct soft_cm_id *owner;
	struct soft_cm_channel *held_on;	/* held back on this channel's held list */
	struct soft_work release;		/* ... until this unit runs (cm_fault.c) */
	uint8_t pdata[CM_REP_PDATA];
};

/* What each side asked for in REQ / REP, from the sender's point of view. */
struct cm_params {
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t flow_control;
	uint8_t srq;
	uint32_t qp_num;
	uint32_t start_psn;		/* the sender's first send PSN */
	/* ECE (cm_ece.c): REQ, the sender's own; REP, the vendor answered and its options. */
	uint32_t ece_vendor_id;
	uint32_t ece_options;
	uint32_t qkey;			/* SIDR REP: the Q_Key of the QP it names */
};

struct rdv_claim;

/*
 * The rdma_cm half's own state (cm_device.c), under the fabric lock (and
 * cm_dev_mutex for ctx and pd, see there).
 */
struct soft_cm_state {
	struct soft_list ids;		/* every soft_cm_id */
	struct soft_context *ctx;	/* the device context rdma_cm ids share */
	struct ibv_pd *pd;		/* its default PD, while ctx_refs > 0 */
	unsigned int ctx_refs;		/* ids on ctx */
};

extern struct soft_cm_state cm_state;

struct soft_cm_id {
	struct rdma_cm_id id;
	struct soft_cm_channel *ch;
	enum cm_state state;
	struct soft_list link;		/* fab.cm_ids */
	struct soft_cm_id *peer;	/* the other side, in this process */
	struct net_link *conn;		/* the other side, in another process (a reference) */
	struct soft_cm_id *listener;	/* passive ids: the listener that spawned them */
	bool passive;			/* spawned by a listener (it may be gone) */
	/* A sync child's CONNECT_REQUEST waits on its listener's channel, not on ch. */
	struct soft_cm_channel *req_ch;
	struct rdv_claim *claim;	/* a listener published for other processes */
	struct net_listener *listen_sock;	/* ... and its socket, with the net thread */
	bool port_held;
	bool port_auto;			/* bound to port 0: the port was picked here */
	bool reuseaddr;
	bool afonly;
	bool tos_set;			/* RDMA_OPTION_ID_TOS: the path's traffic class */
	uint8_t tos;
	bool ack_timeout_set;		/* RDMA_OPTION_ID_ACK_TIMEOUT: the QP's timeout */
	uint8_t ack_timeout;
	bool disconnect_seen;		/* DISCONNECTED already queued for this id */
	bool destroying;
	bool sync;			/* no channel given: calls wait for their event */
	bool inherited;			/* the parent's, in a forked child (cm_ids_fork_child) */
	struct ibv_qp_init_attr *ep_qp_attr;	/* rdma_create_ep of a listener */
	/* IB CM identities, for the capture's CM messages (cm_tap.c). */
	uint32_t comm_id;		/* this side's Communication ID */
	uint32_t peer_comm_id;		/* the other side's */
	uint64_t tid;			/* Transaction ID of the connection's REQ/REP/RTU */
	unsigned int events_read;
	unsigned int events_acked;
	/* Negotiated, from this side's point of view, applied to its QP. */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint32_t peer_qpn;
	uint32_t peer_psn;		/* the peer's first send PSN: our QP's rq_psn */
	uint32_t peer_qkey;		/* UD: the Q_Key the peer's SIDR REP named */
	struct cm_params mine;		/* what this side sent in its REQ or REP */
	struct ibv_sa_path_rec path;
	struct ibv_ece local_ece;	/* rdma_set_local_ece(), sent in the REQ or REP */
	struct ibv_ece remote_ece;	/* as the peer's REQ or REP carried it */
};

enum cm_work_kind {
	CMW_ADDR,		/* address resolution done */
	CMW_ROUTE,		/* route resolution done */
	CMW_REQ,		/* client -> listener */
	CMW_REP,		/* server -> client */
	CMW_RTU,		/* client -> server */
	CMW_REJ,		/* -> the other side: REJECTED */
	CMW_DREQ,		/* -> target: DISCONNECTED */
	CMW_TIMEWAIT,		/* -> target: TIMEWAIT_EXIT */
};

/* Where a REQ comes from, as the active side sees it. */
struct cm_addressing {
	struct sockaddr_storage src;
	struct sockaddr_storage dst;
	union ibv_gid sgid;
	union ibv_gid dgid;
	__be16 pkey;
	uint32_t ps;		/* enum rdma_port_space */
	struct ibv_sa_path_rec path;
	uint8_t iwarp;		/* the active side's device is iWARP (its profile) */
};

/* Is @sid's device iWARP (the siw profile)? */
static inline bool cm_id_iwarp(const struct soft_cm_id *sid)
{
	return sid->id.verbs && sid->id.verbs->device->transport_type == IBV_TRANSPORT_IWARP;
}

/* A CM message to the peer (cm_send_locked). */
struct cm_msg {
	enum cm_work_kind kind;
	int status;			/* REJ: the reason */
	struct cm_params params;	/* REQ, REP */
	const void *pdata;
	uint8_t pdata_len;
	bool qp_error;			/* DREQ of a fault: the peer's QP goes to ERR too */
};

/* A message's sender, as the receiver learns it: Communication ID and Transaction ID. */
struct cm_sender {
	uint32_t comm_id;
	uint64_t tid;
};

struct soft_cm_work {
	struct soft_work work;
	enum cm_work_kind kind;
	struct soft_cm_id *target;
	struct soft_cm_id *from;
	struct net_link *conn;		/* it came over this link (a reference) */
	struct cm_addressing *addr;	/* a REQ that came over a link */
	int status;
	bool qp_error;
	bool from_peer;			/* sent by the other side (not queued for itself) */
	struct cm_sender sender;
	struct cm_params params;
	uint8_t pdata[CM_REP_PDATA];
	uint8_t pdata_len;
};

static inline struct soft_cm_id *to_scm(struct rdma_cm_id *id)
{
	return container_of(id, struct soft_cm_id, id);
}

/* An id of the UDP port space: its QP is UD and it resolves with SIDR (cm_ud.c). */
static inline bool cm_id_is_ud(const struct soft_cm_id *sid)
{
	return sid->id.qp_type == IBV_QPT_UD;
}

/* cm_channel.c */
struct soft_cm_channel *cm_channel_new_locked(void);
void cm_deliver_locked(struct soft_cm_id *id, enum rdma_cm_event_type type, int status,
		       const struct cm_params *params, const void *pdata, uint8_t pdata_len,
		       uint8_t padded_len, struct soft_cm_id *listen);
void cm_forget_events_locked(struct soft_cm_id *id);
struct soft_cm_work *cm_work_new_locked(enum cm_work_kind kind, struct soft_cm_id *target,
					struct soft_cm_id *from);
/* Is this unit a CM message (cm_work_run)? */
struct soft_cm_work *cm_work_of(struct soft_work *w);
void cm_work_free_locked(struct soft_cm_work *w);

/* cm_fault.c: CM event faults at delivery (DELAY, DUPLICATE) */
/*
 * Queue @e on @ch: at once, or held back for @delay_ns (and behind every
 * event the channel holds already, whatever @delay_ns).
 */
void cm_event_queue_locked(struct soft_cm_channel *ch, struct soft_cm_event *e,
			   uint64_t delay_ns);
/* A second event with @e's contents and its own copy of the private data, or NULL. */
struct soft_cm_event *cm_event_copy(const struct soft_cm_event *e);
/* Free the events @ch holds back for @id (NULL: all of them; the channel goes). */
void cm_held_forget_locked(struct soft_cm_channel *ch, const struct soft_cm_id *id);
/* Deliver now what @ch holds back for @id (it migrates to another channel). */
void cm_held_release_id_locked(struct soft_cm_channel *ch, const struct soft_cm_id *id);

/* cm_addr.c: socket addresses of loopback (the only ones softrdma0 has) */
bool cm_addr_is_loopback(const struct sockaddr *sa);
bool cm_addr_is_any(const struct sockaddr *sa);
socklen_t cm_addr_len(const struct sockaddr *sa);
uint16_t cm_addr_port(const struct sockaddr *sa);
void cm_addr_set_port(struct sockaddr *sa, uint16_t port);
void cm_addr_set_loopback(struct sockaddr *sa);
/* Does a bound address (with its AFONLY option) cover addr? */
bool cm_addr_covers(const struct sockaddr *bound, bool afonly, const struct sockaddr *addr);
/* The GID of an IP address: RoCEv2 uses the address itself (IPv4-mapped). */
void cm_addr_to_gid(const struct sockaddr *sa, union ibv_gid *gid);

/* cm_device.c */
/*
 * The device context rdma_cm ids share, open for the life of the process;
 * each id holds a reference on its default PD.
 */
int cm_device_get(void);
void cm_device_put(void);
void cm_set_device_locked(struct soft_cm_id *id);

/* cm_id.c */
struct soft_cm_id *cm_find_listener_locked(const struct sockaddr *dst, enum rdma_port_space ps);
void cm_addr_done_locked(struct soft_cm_id *sid, int status);
void cm_route_done_locked(struct soft_cm_id *sid);
struct soft_cm_id *cm_id_alloc(struct soft_cm_channel *ch, void *context,
			       enum rdma_port_space ps);
void cm_id_link_locked(struct soft_cm_id *sid);
/* fork(), in the child: forget the parent's ids (cm_device.c's handler). */
void cm_ids_fork_child(void);

/* cm_qp.c: the QP of an id */
int cm_qp_init_attr_locked(struct soft_cm_id *sid, struct ibv_qp_attr *attr, int *mask);
/* As librdmacm on REP / accept: INIT again, RTR, RTS with the negotiated values. */
int cm_qp_connect_locked(struct soft_cm_id *sid);
void cm_qp_destroyed_locked(struct soft_cm_id *sid);

/* cm_conn.c: the handshake */
bool cm_connected(const struct soft_cm_id *sid);
/* @sid's first send PSN: fixed from its creation on, as the REQ or REP will say. */
uint32_t cm_start_psn(const struct soft_cm_id *sid);
/* Send m to sid's peer, in this process or over its link. */
void cm_send_locked(struct soft_cm_id *sid, const struct cm_msg *m);
/* The connection attempt or the connection is over: forget the peer, close the link. */
void cm_unpeer_locked(struct soft_cm_id *sid);
void cm_work_run(struct soft_work *work);
void cm_req_arrived_locked(struct soft_cm_work *w);
void cm_rep_arrived_locked(struct soft_cm_work *w);
void cm_rtu_arrived_locked(struct soft_cm_work *w);
void cm_rej_arrived_locked(struct soft_cm_work *w);
extern const struct soft_cm_ops cm_ops;

/* cm_ud.c: the UDP port space (SIDR instead of a connection) */
int cm_ud_connect(struct soft_cm_id *sid, const struct rdma_conn_param *param);
int cm_ud_accept(struct soft_cm_id *sid, const struct rdma_conn_param *param);
void cm_ud_rep_arrived_locked(struct soft_cm_work *w);
/* A REJ reached an id; true if it is a UD id's (UNREACHABLE, as a SIDR REP refusing). */
bool cm_ud_rej_arrived_locked(struct soft_cm_work *w);
/* A UD id's event carries param.ud: its private data, and for ESTABLISHED the peer. */
void cm_ud_event_params_locked(const struct soft_cm_id *sid, struct rdma_cm_event *ev);
int cm_ud_init_attr_locked(struct soft_cm_id *sid, struct ibv_qp_attr *attr, int *mask);
/* rdma_create_qp() made @sid's UD QP: INIT with rdma_cm's Q_Key, RTR, RTS, as librdmacm. */
int cm_ud_qp_ready_locked(struct soft_cm_id *sid, struct soft_qp *qp);
struct net_link *cm_ud_id_link(struct soft_cm_id *sid);

/* cm_ece.c: Enhanced Connection Establishment, as librdmacm carries it */
/* What sid's REQ (or REP) says, into its params. */
void cm_ece_req_locked(const struct soft_cm_id *sid, struct cm_params *req);
void cm_ece_rep_locked(const struct soft_cm_id *sid, struct cm_params *rep);
/* The peer's REQ reached child; its REP reached client. */
void cm_ece_req_arrived_locked(struct soft_cm_id *child, const struct cm_params *req);
void cm_ece_rep_arrived_locked(struct soft_cm_id *client, const struct cm_params *rep);
/* rdma_create_qp made sid's QP, which has no ECE. */
void cm_ece_qp_created_locked(struct soft_cm_id *sid);

/* cm_disc.c: disconnection, teardown, a peer that died */
void cm_dreq_arrived_locked(struct soft_cm_work *w);
int cm_fault_disconnect_locked(struct soft_cm_id *sid);
void cm_id_teardown_locked(struct soft_cm_id *sid);
/* The link to sid's peer is gone without a goodbye: the peer process died. */
void cm_peer_lost_locked(struct soft_cm_id *sid);

/* cm_net.c: CM messages over links */
/* Connect to a listener in another process: 0, or -ECONNREFUSED if none. */
int cm_net_connect_locked(struct soft_cm_id *client, const struct cm_msg *req);
void cm_net_send_locked(struct soft_cm_id *sid, const struct cm_msg *m);
/* Answer a REQ that came over link with a REJ, and let the link go. */
void cm_net_refuse_locked(struct net_link *link, int reason);
void cm_net_link_message(struct net_link *link, const void *body, uint32_t len);
/*
 * An application call sent a CM message to sid's peer in another process:
 * take a reference on the link (NULL if there is none), and once the lock
 * is dropped write the message out before the call returns, as the kernel
 * CM has its MAD in hand when the call returns: a process that ends at once
 * (_exit, a crash) has still said it. cm_net_flush(NULL) does nothing.
 */
struct net_link *cm_net_hold_locked(struct soft_cm_id *sid);
void cm_net_flush(struct net_link *link);
void cm_net_link_down(struct net_link *link);
struct net_link *cm_net_qp_link(struct soft_qp *qp);

/* cm_rdv.c: the rendezvous directory of listeners (socket backend) */
/* The directory, or NULL when the socket backend is off. */
const char *rdv_dir(void);
/* Publish a listener on addr: 0, -EADDRINUSE, or another -errno. */
int rdv_listen(const struct sockaddr *addr, enum rdma_port_space ps, bool afonly,
	       struct rdv_claim **out);
/* The listening socket of claim, handed over to the caller (the net thread). */
int rdv_claim_take_fd(struct rdv_claim *claim);
void rdv_unlisten(struct rdv_claim *claim);
/* A socket connected to the listener that covers dst: fd, or -ECONNREFUSED. */
int rdv_connect(const struct sockaddr *dst, enum rdma_port_space ps);

/* cm_tap.c: the IB CM messages of the capture (REQ, REP, RTU, REJ, DREQ, DREP) */
/* sid sends m to its peer. */
void cm_tap_locked(const struct soft_cm_id *sid, const struct cm_msg *m);
/* The fabric rejects client's REQ in the listener's place (nobody listens, a fault). */
void cm_tap_fabric_rej_locked(const struct soft_cm_id *client, int reason);
/* sid answers a DREQ. */
void cm_tap_drep_locked(const struct soft_cm_id *sid);

/* cm_sync.c: ids without a channel */
/* A sync id waits for the event that ends its call; 0 or -1 with errno (as librdmacm). */
int cm_complete(struct soft_cm_id *sid);

#endif /* SOFT_CM_H */
